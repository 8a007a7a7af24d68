"""Benchmark: `factbook mcp` as an assistant meets it, through the official SDK's stdio client.

Measures, each over the wire (a real `python -m factbook mcp` subprocess):

- server start: spawn to the `initialize` answer, median of --starts runs, beside the same
  for a minimal server of the SDK alone (one tool, nothing loaded): the SDK's own floor;
- search_facts per call on a knowledge base of --facts facts (the shipped ones plus
  synthetic facts written in the shipped facts' words, so postings are realistic): every
  question of both sets, --repeat times, after one warm-up call (the first call's own time,
  which may wait for the background load, is reported apart);
- the question sets (bench/mcp_questions.yaml, 30, and the held-out 20): answered when one
  of search_facts' top 3 is an expected fact (with the expected value where given), on the
  shipped knowledge base and on the --facts one (distractors added).

Budgets: search_facts at most 50 ms per call (p95), start at most 1 s (median); exit 1
when one is missed.

    .venv/bin/python bench/mcp_server.py [--facts 1000] [--starts 5] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import yaml
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[1]
SEARCH_BUDGET_S = 0.050
START_BUDGET_S = 1.0
QUESTION_SETS = {
    "questions": REPO / "bench" / "mcp_questions.yaml",
    "heldout": REPO / "bench" / "mcp_questions_heldout.yaml",
}
FLOOR_SERVER = """
from mcp.server.mcpserver import MCPServer
server = MCPServer("floor", log_level="WARNING")
@server.tool()
def echo(text: str) -> str:
    \"\"\"Echo.\"\"\"
    return text
server.run("stdio")
"""
SRC = [REPO / "src"]  # --src: another checkout's factbook, to compare
SYNTHETIC_CATEGORIES = ["hardware", "software", "model", "benchmarks", "training", "inventory"]


def shipped_copy(dest: Path) -> Path:
    dest.mkdir(parents=True)
    for name in ("facts", "checks"):
        shutil.copytree(REPO / name, dest / name)
    for name in ("milestones.yaml", "targets.yaml"):
        shutil.copy(REPO / name, dest / name)
    return dest


def add_synthetic(root: Path, total: int, seed: int = 7) -> int:
    """Facts up to `total`, in the shipped facts' own words (random sentences of them)."""
    from factbook.knowledge.kb import load_kb

    kb = load_kb(root, strict=False)
    vocabulary = sorted({w for f in kb.facts.values() for w in f.statement.split() if w.isalpha()})
    rng = random.Random(seed)
    facts = []
    for i in range(max(0, total - len(kb.facts))):
        category = SYNTHETIC_CATEGORIES[i % len(SYNTHETIC_CATEGORIES)]
        words = rng.sample(vocabulary, 24)
        facts.append(
            {
                "id": f"syn.{category}.item{i:04d}",
                "category": category,
                "title": " ".join(words[:5]),
                "statement": " ".join(words[5:]) + ".",
                "value": round(rng.uniform(0, 10000), 1),
                "status": rng.choice(["verified", "assumed", "stale"]),
                "tags": rng.sample(["gpu", "sglang", "eagle3", "cpu", "disk", "nccl"], 2),
                "sources": [{"note": "synthetic, bench/mcp_server.py"}],
            }
        )
    text = yaml.safe_dump({"facts": facts}, sort_keys=False, width=100)
    (root / "facts" / "synthetic.yaml").write_text(text)
    return len(kb.facts) + len(facts)


def params(argv: list[str], root: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=argv,
        env={"PYTHONPATH": str(SRC[0])},
        cwd=str(root),
    )


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def time_start(server: StdioServerParameters) -> tuple[float, float]:
    """(seconds from spawn to the initialize answer, CPU seconds the server used in all).

    The CPU time (the reaped child's, start to exit) barely depends on how loaded the
    machine is, where the wall time does: both are reported."""
    cpu = children_cpu()
    started = time.perf_counter()
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        wall = time.perf_counter() - started
    return wall, children_cpu() - cpu


def load_questions() -> dict[str, list[dict[str, Any]]]:
    return {k: yaml.safe_load(p.read_text())["questions"] for k, p in QUESTION_SETS.items()}


def answered(question: dict[str, Any], results: list[dict[str, Any]]) -> bool:
    for result in results[:3]:
        if result["id"] not in question["expect"]:
            continue
        if "value" not in question or str(result.get("value")) == str(question["value"]):
            return True
        if isinstance(result.get("value"), (int, float)) and result["value"] == question["value"]:
            return True
    return False


async def session_run(root: Path, questions: dict[str, list[dict]], repeat: int) -> dict:
    """One server on `root`: the first call, then every question `repeat` times, timed."""
    out: dict[str, Any] = {"times": [], "scores": {}, "misses": {}}
    server = params(["-m", "factbook", "mcp", "--root", str(root)], root)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        started = time.perf_counter()
        await session.call_tool("search_facts", {"query": "gpu", "limit": 3})
        out["first_call_s"] = time.perf_counter() - started
        for name, items in questions.items():
            score, misses = 0, []
            for question in items:
                result = await session.call_tool(
                    "search_facts", {"query": question["ask"], "limit": 3}
                )
                assert not result.is_error, result.content[0].text
                results = result.structured_content["results"]
                if answered(question, results):
                    score += 1
                else:
                    misses.append({"ask": question["ask"], "got": [r["id"] for r in results]})
            out["scores"][name] = score
            out["misses"][name] = misses
        asks = [q["ask"] for items in questions.values() for q in items]
        for _ in range(repeat):
            for ask in asks:
                started = time.perf_counter()
                await session.call_tool("search_facts", {"query": ask, "limit": 10})
                out["times"].append(time.perf_counter() - started)
    return out


def search_in_process(root: Path, questions: dict[str, list[dict]], repeat: int) -> list[float]:
    """The same searches without the protocol: Toolbox.search_facts in this process."""
    from factbook.integrations.mcp.tools import Toolbox

    box = Toolbox(root)
    box.kb()
    times = []
    for _ in range(repeat):
        for items in questions.values():
            for question in items:
                started = time.perf_counter()
                box.search_facts(question["ask"], limit=10)
                times.append(time.perf_counter() - started)
    return times


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    questions = load_questions()
    with tempfile.TemporaryDirectory(prefix="factbook-mcp-bench-") as tmp:
        shipped = shipped_copy(Path(tmp) / "shipped")
        big = shipped_copy(Path(tmp) / "big")
        count = add_synthetic(big, args.facts)
        floor_script = Path(tmp) / "floor.py"
        floor_script.write_text(FLOOR_SERVER)
        starts, floors, start_cpu, floor_cpu = [], [], [], []
        for _ in range(args.starts):
            wall, cpu = await time_start(params(["-m", "factbook", "mcp", "--root", str(big)], big))
            starts.append(wall)
            start_cpu.append(cpu)
            wall, cpu = await time_start(params([str(floor_script)], Path(tmp)))
            floors.append(wall)
            floor_cpu.append(cpu)
        if args.starts_only:
            return {
                "start_s": _spread(starts, start_cpu),
                "sdk_floor_start_s": _spread(floors, floor_cpu),
                "load_average": os.getloadavg()[0],
            }
        in_process = search_in_process(big, questions, args.repeat)
        on_shipped = await session_run(shipped, questions, 0)
        on_big = await session_run(big, questions, args.repeat)
    times = on_big["times"]
    return {
        "facts": count,
        "start_s": {
            "median": statistics.median(starts),
            "min": min(starts),
            "max": max(starts),
            "cpu_median": statistics.median(start_cpu),
        },
        "sdk_floor_start_s": {
            "median": statistics.median(floors),
            "min": min(floors),
            "cpu_median": statistics.median(floor_cpu),
        },
        "first_call_s": on_big["first_call_s"],
        "search_s": {
            "calls": len(times),
            "median": statistics.median(times),
            "p95": percentile(times, 0.95),
            "max": max(times),
        },
        "search_in_process_s": {
            "median": statistics.median(in_process),
            "p95": percentile(in_process, 0.95),
        },
        "answered": {
            "shipped": {k: f"{v}/{len(questions[k])}" for k, v in on_shipped["scores"].items()},
            f"{count} facts": {k: f"{v}/{len(questions[k])}" for k, v in on_big["scores"].items()},
        },
        "misses": {"shipped": on_shipped["misses"], "big": on_big["misses"]},
        "load_average": os.getloadavg()[0],
    }


def _spread(walls: list[float], cpus: list[float]) -> dict[str, float]:
    return {
        "median": statistics.median(walls),
        "min": min(walls),
        "max": max(walls),
        "cpu_median": statistics.median(cpus),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--src", type=Path, help="the src/ folder of the factbook to time")
    parser.add_argument(
        "--starts-only", action="store_true", help="time the server start only (no searches)"
    )
    args = parser.parse_args()
    if args.src:
        SRC[0] = args.src.resolve()
    report = anyio.run(main_async, args)
    if args.json or args.starts_only:
        print(json.dumps(report, indent=1))
        if args.starts_only:
            return 0 if report["start_s"]["median"] <= START_BUDGET_S else 1
    else:
        s, f, q = report["start_s"], report["sdk_floor_start_s"], report["search_s"]
        print(
            f"knowledge base: {report['facts']} facts (load average {report['load_average']:.1f})"
        )
        print(
            f"server start (spawn -> initialize): median {s['median']:.3f} s "
            f"(min {s['min']:.3f}, max {s['max']:.3f}), CPU {s['cpu_median']:.3f} s; "
            f"the SDK alone: median {f['median']:.3f} s (min {f['min']:.3f}), "
            f"CPU {f['cpu_median']:.3f} s"
        )
        print(f"first search_facts call: {report['first_call_s'] * 1000:.1f} ms")
        print(
            f"search_facts over stdio, {q['calls']} calls: median {q['median'] * 1000:.1f} ms, "
            f"p95 {q['p95'] * 1000:.1f} ms, max {q['max'] * 1000:.1f} ms"
        )
        p = report["search_in_process_s"]
        print(
            f"the same searches in process (no protocol): median {p['median'] * 1000:.1f} ms, "
            f"p95 {p['p95'] * 1000:.1f} ms"
        )
        for where, scores in report["answered"].items():
            print(
                f"answered from the top 3 ({where}): "
                + ", ".join(f"{k} {v}" for k, v in scores.items())
            )
        for where, sets in report["misses"].items():
            for name, misses in sets.items():
                for miss in misses:
                    print(f"  missed ({where}, {name}): {miss['ask']} -> {miss['got']}")
    ok = report["search_s"]["p95"] <= SEARCH_BUDGET_S and (
        report["start_s"]["median"] <= START_BUDGET_S
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
