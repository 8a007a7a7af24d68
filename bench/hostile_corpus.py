"""The hostile corpus (issue 25's measure): every hostile case run, counted by file.

Runs the hostile test files with pytest (each table case under its own time limit, the
isolated ones under prlimit; see tests/test_hostile_kb.py) and prints, per file, the cases
tried, clean (passed), failed and skipped, the slowest case, and the totals. A case is
clean when its command ended with the expected exit code and message, within its time and
memory limits, touched no file outside the knowledge base and created no marker file.

    .venv/bin/python bench/hostile_corpus.py            # -n 2 workers
    .venv/bin/python bench/hostile_corpus.py --workers 4 --json

Exit 1 when any case is not clean.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FILES = [
    *sorted(p.name for p in (REPO / "tests").glob("test_hostile_*.py")),
    "test_redact_corpus.py",
    "test_mcp_redaction.py",
    "test_import_targets_bound.py",
    "test_proposals_decided_once.py",
    "test_writeback_still_loads.py",
    "test_runbook_destructive.py",
    "test_sshconfig_platform.py",
    "test_file_modes_writers.py",
    "test_import_item_bound.py",
    "test_import_unreadable_files.py",
    "test_import_secrets.py",
    "test_env_off_argv.py",
    "test_cache_seal.py",
    "test_template_nesting.py",
]


def run(workers: int) -> tuple[dict[str, dict[str, object]], float]:
    """Per file: counts and the slowest case; and pytest's own wall seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        argv += ["-n", str(workers)] if workers > 1 else []
        argv += [f"--junitxml={report}", *(f"tests/{name}" for name in FILES)]
        subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
        root = ET.parse(report).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    assert suite is not None, "pytest wrote no test suite"
    per: dict[str, dict[str, object]] = defaultdict(
        lambda: {
            "tried": 0, "clean": 0, "failed": 0, "skipped": 0, "slowest": ("", 0.0), "not_clean": []
        }
    )  # fmt: skip
    for case in suite.iter("testcase"):
        name = case.get("classname", "").rsplit(".", 1)[-1] + ".py"
        row = per[name]
        row["tried"] += 1  # type: ignore[operator]
        seconds = float(case.get("time", 0))
        if seconds > row["slowest"][1]:  # type: ignore[index]
            row["slowest"] = (case.get("name", ""), seconds)
        if case.find("failure") is not None or case.find("error") is not None:
            row["failed"] += 1  # type: ignore[operator]
            row["not_clean"].append(case.get("name", ""))  # type: ignore[union-attr]
        elif case.find("skipped") is not None:
            row["skipped"] += 1  # type: ignore[operator]
        else:
            row["clean"] += 1  # type: ignore[operator]
    return dict(per), float(suite.get("time", 0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    per, seconds = run(args.workers)
    total = {k: sum(int(row[k]) for row in per.values()) for k in ("tried", "clean", "failed")}
    total["skipped"] = sum(int(row["skipped"]) for row in per.values())
    if args.json:
        print(json.dumps({"files": per, "total": total, "seconds": seconds}, indent=1))
    else:
        print(f"{'file':34} {'tried':>6} {'clean':>6} {'failed':>6} {'skipped':>7}  slowest")
        for name in sorted(per):
            row = per[name]
            slow, took = row["slowest"]  # type: ignore[misc]
            print(
                f"{name:34} {row['tried']:>6} {row['clean']:>6} {row['failed']:>6} "
                f"{row['skipped']:>7}  {took:.1f} s {str(slow)[:60]}"
            )
        for name in sorted(per):
            for case in per[name]["not_clean"]:  # type: ignore[union-attr]
                print(f"not clean: {name}::{case}")
        print(
            f"{'total':34} {total['tried']:>6} {total['clean']:>6} {total['failed']:>6} "
            f"{total['skipped']:>7}  ({seconds:.0f} s with {args.workers} workers)"
        )
    return 1 if total["failed"] or not total["tried"] else 0


if __name__ == "__main__":
    sys.exit(main())
