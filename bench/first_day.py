"""Benchmark: a new team's first day, as docs/getting-started.md writes it (issue 27).

Every `$` command of the page runs in one bash in an empty folder, exactly as the test
tests/test_getting_started.py runs it (tests/doc_script.py), from a wheel of this tree: a fresh
venv, the install, `init`, two facts, a verify with one drift, the handbook, a runbook,
`pytest --factbook`, `factbook serve` + /metrics, export-ansible and the generated CI's steps.
Prints wall and CPU seconds per step and in all, against the issue's 60 s.

`--compare DIR` is the A/B: another checkout's page run from that checkout's wheel (e.g. the
main branch before a change), alternated with this tree's run by run, so both see the same
load; medians of each are printed.

    .venv/bin/python bench/first_day.py [--repeat N] [--compare /path/to/other/checkout]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from doc_script import Day, run_first_day  # noqa: E402
from helpers import build_wheel, free_port  # noqa: E402

BUDGET_S = 60.0
PAGE = Path("docs") / "getting-started.md"


def _load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--compare", type=Path, metavar="DIR", help="another checkout to run alternately (A/B)"
    )
    args = parser.parse_args()
    trees = {"this tree": REPO}
    if args.compare is not None:
        trees[f"{args.compare}"] = args.compare.resolve()
    days: dict[str, list[Day]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="first-day-") as tmp:
        wheels = {}
        for i, (name, repo) in enumerate(trees.items()):
            started = time.monotonic()
            wheels[name] = build_wheel(Path(tmp) / f"wheel{i}", repo)
            print(f"{name}: wheel built in {time.monotonic() - started:.1f} s (not timed below)")
        for i in range(args.repeat):
            order = list(trees) if i % 2 == 0 else list(reversed(trees))
            for name in order:
                folder = Path(tmp) / f"day{i}-{list(trees).index(name)}"
                folder.mkdir()
                page = trees[name] / PAGE
                day = run_first_day(page, folder, wheels[name], free_port())
                days[name].append(day)
                what = f"{day.wall:.1f} s wall, {day.cpu:.1f} s CPU"
                print(f"run {i + 1}, {name}: {what} ({_load()})")
                print(day.report())
    for name, runs in days.items():
        wall = statistics.median(d.wall for d in runs)
        cpu = statistics.median(d.cpu for d in runs)
        verdict = "ok" if wall <= BUDGET_S else "EXCEEDED"
        print(
            f"first day, {name}: median {wall:.1f} s wall, {cpu:.1f} s CPU over {len(runs)} "
            f"run(s) (budget {BUDGET_S:.0f} s: {verdict}; {_load()})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
