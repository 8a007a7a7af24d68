"""Benchmark: a new team's first day, as docs/getting-started.md writes it (issue 27).

Every `$` command of the page runs in one bash in an empty folder, exactly as the test
tests/test_getting_started.py runs it (tests/doc_script.py), from a wheel of this tree: a fresh
venv, the install, `init`, two facts, a verify with one drift, the handbook, a runbook,
`pytest --factbook`, `factbook serve` + /metrics, export-ansible and the generated CI's steps.
Prints wall and CPU seconds per step and in all, against the issue's 60 s.

    .venv/bin/python bench/first_day.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from doc_script import run_first_day  # noqa: E402
from helpers import build_wheel, free_port  # noqa: E402

BUDGET_S = 60.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    walls, cpus = [], []
    with tempfile.TemporaryDirectory(prefix="first-day-") as tmp:
        wheel = build_wheel(Path(tmp) / "wheel")
        for i in range(args.repeat):
            folder = Path(tmp) / f"day{i}"
            folder.mkdir()
            day = run_first_day(REPO / "docs" / "getting-started.md", folder, wheel, free_port())
            walls.append(day.wall)
            cpus.append(day.cpu)
            print(f"run {i + 1}: {day.wall:.1f} s wall, {day.cpu:.1f} s CPU")
            print(day.report())
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    load = os.getloadavg()[0]
    verdict = "ok" if wall <= BUDGET_S else "EXCEEDED"
    print(
        f"first day: median {wall:.1f} s wall, {cpu:.1f} s CPU (budget {BUDGET_S:.0f} s: "
        f"{verdict}; load average {load:.1f} on {os.cpu_count()} cores)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
