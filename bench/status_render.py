"""Benchmark: render a status document for a knowledge base of 1,000 facts.

Builds a synthetic knowledge base (every category, three milestones, histories, refuted
assumptions, benchmarks with configurations, inventory on three machines, progress with
priorities, 300 verification results) in a temporary folder, then times, separately:
loading it, rendering as of the last milestone, rendering now (with results), rendering
now redacted, and a budgeted dump (`--budget 2300`) as of the last milestone and now. The
budget is 0.5 s per document; the script exits 1 when the median of any render exceeds it,
or when the whole `factbook status --budget 2300` command takes more than 1 s (median).

    .venv/bin/python bench/status_render.py [--facts 1000] [--repeat 7] [--json]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from factbook.dumps.status import StatusOptions, render_status
from factbook.dumps.status.budget import render_budgeted
from factbook.dumps.status.render import environment
from factbook.knowledge.kb import load_kb
from factbook.knowledge.schema import CATEGORIES
from factbook.store.results import ResultRecord, write_run

BUDGET_S = 0.5
CLI_BUDGETED_S = 1.0  # the whole budgeted command, start-up included
TOKENS = 2300
MILESTONES = ["3157", "3478", "4504"]


def synthetic_fact(i: int) -> dict[str, Any]:
    """One plausible fact; categories, milestones and states rotate with `i`."""
    category = CATEGORIES[i % len(CATEGORIES)]
    since = MILESTONES[i % 3]
    fact: dict[str, Any] = {
        "id": f"{category[:5]}.item{i:04d}",
        "category": category,
        "title": f"{category} item {i}",
        "statement": (
            f"Fact {i}: the box at 10.1.{i % 250}.{(i * 7) % 250} (user theuser) reports "
            f"value {i * 1.5:.1f} for {category}; see /home/theuser/notes/{i}.md for details."
        ),
        "status": "verified",
        "target": "llm-two",
        "tags": [category, f"t{i % 7}"],
        "since": since,
        "sources": [{"seed": "seed.txt", "message": int(since), "quote": f"quote {i}"}],
    }
    if i % 17 == 0:
        fact["status"] = "refuted"
        fact["history"] = [{"at": since, "status": "assumed"}]
        if since != "4504":
            fact["history"].append({"at": "4504", "status": "refuted", "note": "it did not"})
    if i % 23 == 0 and since != "4504":
        fact["until"] = "4504"
    if category == "pitfalls":
        fact |= {"symptom": f"symptom {i}", "cause": f"cause {i}", "fix": f"fix {i}"}
    elif category == "benchmarks":
        fact |= {
            "metric": ["single_stream", "throughput"][i % 2],
            "value": round(50 + (i % 40) * 1.3, 1),
            "unit": "tok/s",
            "config": {"engine": "sglang", "variant": i % 5, "concurrency": [1, 128][i % 2]},
            "accept_len": round(1 + (i % 20) / 10, 1),
        }
        if i % 3:
            fact["tags"].append("baseline")
    elif category == "training":
        fact |= {"metric": "validation", "epoch": i % 5, "value": {"loss": 6 + i % 3 / 10}}
    elif category == "inventory":
        fact |= {
            "path": f"/data/eagle3/run{i}/file{i}.bin",
            "kind": ["file", "dir", "log", "checkpoint", "script"][i % 5],
            "machine": ["llm-two", "workstation", "kpro6"][i % 3],
            "purpose": f"purpose {i % 9}",
            "size": f"{i} MB",
        }
    elif category == "decisions":
        fact["rationale"] = f"because {i}"
    elif category == "progress":
        fact |= {
            "state": ["done", "in_progress", "todo", "failed", "blocked"][i % 5],
            "priority": i % 11 + 1,
            "criterion": f"criterion {i}",
        }
    elif category == "hardware":
        fact["check"] = {"probe": "gpu.count", "args": {}, "expect": {"eq": 8}}
    return fact


def build_kb(root: Path, n: int) -> Path:
    (root / "facts").mkdir(parents=True)
    facts = [synthetic_fact(i) for i in range(n)]
    for k in range(0, n, 100):  # ten files, like a real knowledge base
        chunk = {"facts": facts[k : k + 100]}
        (root / "facts" / f"part{k // 100:02d}.yaml").write_text(yaml.safe_dump(chunk))
    (root / "milestones.yaml").write_text(
        yaml.safe_dump(
            {"milestones": [{"id": m, "title": f"m{m}", "message": int(m)} for m in MILESTONES]}
        )
    )
    targets = {
        "kpro6": {"host": "kpro6.invalid", "user": "root"},
        "llm-two": {"host": "llm-two.invalid", "user": "root", "jump": "kpro6"},
        "workstation": {"host": "workstation.invalid", "user": "theuser"},
    }
    (root / "targets.yaml").write_text(yaml.safe_dump({"targets": targets}))
    records = [
        ResultRecord(
            fact=f["id"],
            target="llm-two",
            outcome=["pass", "drift", "error"][i % 3],
            reason="synthetic",
            observed=7,
            time="2026-11-29T12:00:00Z",
            run="bench",
        )
        for i, f in enumerate(facts[:300])
    ]
    write_run(root, "bench", {"started": "2026-11-29T12:00:00Z"}, records)
    return root


CPU_TIMES: list[float] = []  # CPU seconds (user + system) of each budgeted command


def _cli(root: Path, *extra: str) -> None:
    """The whole command in a fresh interpreter: start-up, load, render, write. Its CPU time
    is recorded too: on a loaded machine the wall time says more about the neighbours."""
    out = root / "cli.md"
    cmd = [sys.executable, "-m", "factbook.commands.cli", "--root", str(root), "status", "--as-of"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([*cmd, "4504", "--out", str(out), *extra], check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if extra:
        CPU_TIMES.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)


def timed(fn: Any, repeat: int) -> tuple[list[float], Any]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return times, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = build_kb(Path(tmp) / "kb", args.facts)
        load_times, kb = timed(lambda: load_kb(root), 3)
        cli_times, _ = timed(lambda: _cli(root), 3)
        budgeted_times, _ = timed(lambda: _cli(root, "--budget", str(TOKENS)), 5)
        report: dict[str, Any] = {
            "facts": len(kb.facts),
            "load_median_s": statistics.median(load_times),
            "cli_median_s": statistics.median(cli_times),
            "cli_budgeted_median_s": statistics.median(budgeted_times),
            "cli_budgeted_max_s": max(budgeted_times),
            "cli_budgeted_cpu_median_s": statistics.median(CPU_TIMES),
        }
        cases = {
            "as_of_4504": StatusOptions(as_of="4504"),
            "now_with_results": StatusOptions(),
            "now_redacted": StatusOptions(redact=True),
        }
        budgeted = {
            f"budget_{TOKENS}_as_of_4504": StatusOptions(as_of="4504"),
            f"budget_{TOKENS}_now": StatusOptions(),
        }
        ok = report["cli_budgeted_median_s"] <= CLI_BUDGETED_S
        for name, options in {**cases, **budgeted}.items():
            environment.cache_clear()  # the first render compiles the templates: count it
            if name in budgeted:
                times, text = timed(
                    lambda o=options: render_budgeted(kb, o, TOKENS).text, args.repeat
                )
            else:
                times, text = timed(lambda o=options: render_status(kb, o), args.repeat)
            median = statistics.median(times)
            ok &= median <= BUDGET_S
            report[name] = {
                "first_s": round(times[0], 4),
                "median_s": round(median, 4),
                "max_s": round(max(times), 4),
                "lines": text.count("\n"),
            }
    report["budget_s"] = BUDGET_S
    report["cli_budgeted_limit_s"] = CLI_BUDGETED_S
    report["ok"] = ok
    if args.json:
        print(json.dumps(report))
    else:
        print(
            f"{report['facts']} facts: load {report['load_median_s']:.3f} s, whole CLI run "
            f"{report['cli_median_s']:.3f} s (medians of 3)"
        )
        print(
            f"  whole `status --budget {TOKENS}` command: median "
            f"{report['cli_budgeted_median_s']:.3f} s, max {report['cli_budgeted_max_s']:.3f} s "
            f"(limit {CLI_BUDGETED_S} s, medians of 5); CPU (user + system) median "
            f"{report['cli_budgeted_cpu_median_s']:.3f} s"
        )
        for name in [*cases, *budgeted]:
            r = report[name]
            print(
                f"  {name:<18} first {r['first_s']:.3f} s  median {r['median_s']:.3f} s  "
                f"max {r['max_s']:.3f} s  ({r['lines']} lines)"
            )
        print(f"budget {BUDGET_S} s per document: {'ok' if ok else 'EXCEEDED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
