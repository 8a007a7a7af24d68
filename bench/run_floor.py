"""Where the fixed cost of one `factbook verify` goes: start-up, imports, load, plan, agent, report.

    .venv/bin/python bench/run_floor.py                 # 300 local checks, 7 runs, medians
    .venv/bin/python bench/run_floor.py --checks 1000 --repeat 11 --json OUT.json

It writes the knowledge base of bench/verify_ssh.py (a quarter each: file sha256, commands,
pip versions, JSON values) for `--target local`, then, `--repeat` times in fresh interpreters,
times each phase of what the CLI does, in the order it does it, plus the whole CLI process:

  python start     `python -c pass` (the interpreter alone)
  import           factbook.commands.cli and its parser (every subcommand registered)
  load             api.load: YAML read, validated, cross-checked (a warm cache when present)
  plan             api.plan: selection and placement
  bundle           the agent script (agent + probe modules + calls)
  agent start      from starting the agent to its first line (interpreter + payload compile)
  checks           from the agent's first line to its last (the checks themselves)
  judge            the agent's lines parsed and judged (inside `checks`: the client's share)
  report          the JSON report rendered
  CLI total        `factbook verify --target local --format json --no-save -q`, a new process

Each run of the CLI total is interleaved with a run of the phases, so both see the same load.
`--cold` removes the knowledge base's cache before every run (what a first run pays).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from verify_ssh import build_checks, write_kb  # noqa: E402

PHASES = r"""
import json, sys, time
t = [("start", time.perf_counter())]
def mark(name):
    t.append((name, time.perf_counter()))
from factbook.commands.cli import build_parser
build_parser(only="verify")
mark("import")
from factbook import api
kb = api.load(sys.argv[1])
mark("load")
planned = api.plan(kb, ["local"])
mark("plan")
from factbook.verification.bundle import build_script, merge_calls, agent_argv
from factbook.verification.collect import evaluate_result, parse_line
from factbook.verification.transports.base import transport_for, TransportOptions
checks = planned.plan.checks
calls = merge_calls([(c.key, c.fact.check.probe, c.fact.check.args, 60.0) for c in checks])
script = build_script(calls, jobs=16, checks_dir=kb.root / "checks", nonce="n")
mark("bundle")
target = kb.targets["local"]
transport = transport_for(target, kb.targets, TransportOptions())
proc = transport.start(agent_argv(target.python), script.encode(), dict(target.env))
by_call = {c.id: c for c in calls}
by_key = {c.key: c for c in checks}
judge = 0.0
records = []
first = True
for line in proc.lines():
    if first:
        mark("agent start")
        first = False
    message = parse_line(line)
    if message is None or message.get("id") not in by_call:
        continue
    j0 = time.perf_counter()
    for key in by_call[message["id"]].keys:
        records.append(evaluate_result(by_key[key].fact, "local", message, "run", {}))
    judge += time.perf_counter() - j0
proc.wait()
mark("checks")
from factbook.verification.report import render
text = render("json", records, {"id": "run"}, 1.0, categories={})
mark("report")
spans = {b[0]: b[1] - a[1] for a, b in zip(t, t[1:])}
spans["judge"] = judge
assert sum(r.outcome == "pass" for r in records) == len(checks), "not all checks passed"
print(json.dumps(spans))
"""


def compile_sources(folders: list[Path]) -> None:
    """Bytecode for every module, as an installed package has (PYTHONDONTWRITEBYTECODE, set in
    some shells, would otherwise make every run compile factbook from source)."""
    for folder in folders:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(folder)], check=True,
                       capture_output=True)  # fmt: skip


def cli_argv(kb: Path) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from factbook.commands.cli import main; main()",
        "--root",
        str(kb),
        "verify",
        "--target",
        "local",
        "--format",
        "json",
        "--no-save",
        "-q",
    ]


CPU: dict[str, list[float]] = {}  # CPU seconds (user + system, children included) per argv


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall seconds and stdout of a command; its CPU seconds go to CPU[its PYTHONPATH]."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    CPU.setdefault(env.get("PYTHONPATH", "") + " ".join(argv[:3]), []).append(cpu)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return seconds, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--checks", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--cold", action="store_true", help="no knowledge-base cache")
    parser.add_argument("--json", metavar="FILE", help="also write the figures here")
    parser.add_argument(
        "--against",
        metavar="SRC",
        help="also time the CLI of another source tree (e.g. a `git worktree` of main's src/), "
        "interleaved with this one",
    )
    args = parser.parse_args()
    compile_sources([ROOT / "src", *([Path(args.against)] if args.against else [])])
    work = Path(tempfile.mkdtemp(prefix="factbook-floor-"))
    try:
        packages = {d.metadata["Name"]: d.version for d in importlib.metadata.distributions()}
        checks = build_checks(work / "data", args.checks, packages)
        kb = work / "kb"
        write_kb(kb, checks, sys.executable)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *sys.path[1:]])}
        phases: list[dict[str, float]] = []
        totals: list[float] = []
        bare: list[float] = []
        other: list[float] = []
        other_env = {**env, "PYTHONPATH": os.pathsep.join([args.against or "", *sys.path[1:]])}
        for _ in range(args.repeat):
            if args.cold:
                shutil.rmtree(kb / ".factbook-cache", ignore_errors=True)
            bare.append(timed([sys.executable, "-c", "pass"], env)[0])
            seconds, out = timed([sys.executable, "-c", PHASES, str(kb)], env)
            phases.append(json.loads(out))
            if args.cold:
                shutil.rmtree(kb / ".factbook-cache", ignore_errors=True)
            seconds, out = timed(cli_argv(kb), env)
            summary = json.loads(out)["summary"]
            if summary["pass"] != args.checks:
                raise SystemExit(f"CLI: not every check passed: {summary}")
            totals.append(seconds)
            if args.against:
                other.append(timed(cli_argv(kb), other_env)[0])
        rows = {"python start": statistics.median(bare)}
        for name in phases[0]:
            rows[name] = statistics.median(p[name] for p in phases)
        rows["CLI total"] = statistics.median(totals)
        rows["CLI total CPU"] = statistics.median(
            CPU[env["PYTHONPATH"] + " ".join(cli_argv(kb)[:3])]
        )
        if other:
            rows[f"CLI total, {args.against}"] = statistics.median(other)
            key = other_env["PYTHONPATH"] + " ".join(cli_argv(kb)[:3])
            rows[f"CLI total CPU, {args.against}"] = statistics.median(CPU[key])
        load = os.getloadavg()[0]
        print(f"{args.checks} checks, --target local, median of {args.repeat}; load {load:.1f}")
        for name, value in rows.items():
            print(f"  {name:12} {value * 1000:8.1f} ms")
        if other:
            print(
                f"  this tree / {args.against}: {rows['CLI total'] / statistics.median(other):.2f}"
            )
        print(f"  (CLI total samples: {', '.join(f'{s:.2f}' for s in totals)} s)")
        if args.json:
            blob = {"checks": args.checks, "rows": rows, "totals": totals, "load": load}
            Path(args.json).write_text(json.dumps(blob, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
