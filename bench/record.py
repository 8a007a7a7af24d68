"""Benchmark: `verify-facts --record` on a knowledge base of 1,000 passing facts.

Builds a synthetic knowledge base in a temporary folder (fact files with comments, block and
flow-style facts, every fact `assumed` with a cheap local check that passes), then times:

- the write-back alone (`record_verified` on 1,000 passing results: the step that was
  quadratic), and
- the whole `factbook verify --target local --record` in this process (load, run the checks
  through the local agent, save results, write back), after which every fact must be verified.

The budget is 2 s for recording 1,000 facts; the script exits 1 when the write-back exceeds it.

    .venv/bin/python bench/record.py [--facts 1000] [--files 4] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import yaml

from factbook.commands.cli import run
from factbook.judging.outcomes import PASS
from factbook.knowledge.kb import load_kb
from factbook.store.results import ResultRecord
from factbook.verification.run import record_verified

BUDGET_S = 2.0


def fact_text(i: int) -> str:
    """One fact as hand-written YAML; every tenth is flow style, like a quick one-liner."""
    fid = f"hw.bench.f{i:04d}"
    check = '{probe: file.exists, args: {path: "/"}, expect: {eq: true}}'
    if i % 10 == 9:
        return (
            f"  - {{id: {fid}, category: hardware, title: Fact {i}, "
            f"statement: Fact number {i} holds., status: assumed, "
            f"sources: [{{note: seed {i}}}], check: {check}}}\n"
        )
    return (
        f"  # fact {i}: a comment the write-back must keep\n"
        f"  - id: {fid}\n"
        f"    category: hardware\n"
        f"    title: Fact {i}\n"
        f"    statement: >-\n      Fact number {i} holds.\n"
        f"    status: assumed\n"
        f"    sources:\n      - {{note: seed {i}}}\n"
        f"    check: {check}\n"
    )


def build(root: Path, facts: int, files: int) -> None:
    (root / "facts").mkdir(parents=True)
    targets = {"targets": {"local": {"transport": "local"}}}
    (root / "targets.yaml").write_text(yaml.safe_dump(targets), encoding="utf-8")
    for f in range(files):
        body = "".join(fact_text(i) for i in range(f, facts, files))
        (root / "facts" / f"part{f}.yaml").write_text(f"# part {f}\nfacts:\n{body}", "utf-8")


def time_writeback(root: Path) -> tuple[float, int]:
    kb = load_kb(root)
    records = [ResultRecord(fact=i, target="local", outcome=PASS, reason="ok") for i in kb.facts]
    started = time.perf_counter()
    notes, problems = record_verified(kb, records, "bench-run")
    elapsed = time.perf_counter() - started
    if problems:
        raise SystemExit(f"write-back refused {len(problems)} fact(s): {problems[0]}")
    return elapsed, len(notes)


def time_cli(root: Path) -> tuple[float, int]:
    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    with redirect_stdout(out), redirect_stderr(err):
        code = run(["--root", str(root), "verify", "--target", "local", "--record", "-q"])
    elapsed = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"verify exited {code}: {err.getvalue()[-2000:]}")
    verified = sum(f.status == "verified" for f in load_kb(root).facts.values())
    return elapsed, verified


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="factbook-bench-record-") as tmp:
        build(Path(tmp) / "a", args.facts, args.files)
        writeback_s, recorded = time_writeback(Path(tmp) / "a")
        build(Path(tmp) / "b", args.facts, args.files)
        cli_s, verified = time_cli(Path(tmp) / "b")
    result = {
        "facts": args.facts,
        "files": args.files,
        "writeback_s": round(writeback_s, 3),
        "recorded": recorded,
        "verify_record_cli_s": round(cli_s, 3),
        "verified_after_cli": verified,
        "budget_s": BUDGET_S,
    }
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"write-back of {recorded} facts in {args.files} files: {writeback_s:.3f} s")
        print(f"verify --record, whole run, {verified} verified: {cli_s:.3f} s")
    ok = writeback_s <= BUDGET_S and recorded == verified == args.facts
    if not ok:
        print(f"over budget ({BUDGET_S} s) or not every fact recorded", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
