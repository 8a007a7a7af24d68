"""Benchmark: seed items kept by budgeted dumps of the shipped knowledge base, per budget.

For each seed milestone (3157, 3478, 4504), renders `factbook status --as-of M --budget B` for
each budget and counts the seed items it keeps (tests/data/seed_items.yaml: what each seed
says its hand-written dump held), next to the unbudgeted document's size and coverage.

    .venv/bin/python bench/status_budget.py [--budgets 1000,2000,2300,4000,8000] [--json]
        [--missing]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers import items_missing, seed_items  # noqa: E402

from factbook.dumps.status import StatusOptions, render_status  # noqa: E402
from factbook.dumps.status.budget import count_tokens, render_budgeted  # noqa: E402
from factbook.knowledge.kb import load_kb  # noqa: E402

MILESTONES = ("3157", "3478", "4504")


def measure(budgets: list[int]) -> dict[str, Any]:
    kb = load_kb(ROOT, strict=False)
    checklists = seed_items()
    out: dict[str, Any] = {}
    for milestone in MILESTONES:
        items = checklists[milestone]
        full = render_status(kb, StatusOptions(as_of=milestone))
        row: dict[str, Any] = {
            "items": len(items),
            "unbudgeted": {
                "chars": len(full),
                "tokens": count_tokens(full),
                "kept": len(items) - len(items_missing(full, items)),
            },
        }
        for budget in budgets:
            start = time.perf_counter()
            dump = render_budgeted(kb, StatusOptions(as_of=milestone), budget)
            seconds = time.perf_counter() - start
            missing = items_missing(dump.text, items)
            row[str(budget)] = {
                "tokens": dump.tokens,
                "facts_shown": len(dump.shown),
                "facts_left_out": len(dump.left_out),
                "kept": len(items) - len(missing),
                "share": round(1 - len(missing) / len(items), 3),
                "missing": missing,
                "render_s": round(seconds, 3),
            }
        out[milestone] = row
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="1000,2000,2300,4000,8000")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--missing", action="store_true", help="list the items each dump misses")
    args = parser.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    report = measure(budgets)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    head = "| milestone | seed items | " + " | ".join(f"{b:,} tokens" for b in budgets)
    print(head + " | unbudgeted document |")
    print("|---|---:|" + "---:|" * (len(budgets) + 1))
    for milestone, row in report.items():
        cells = []
        for b in budgets:
            cell = row[str(b)]
            cells.append(f"{cell['kept']} ({cell['share']:.0%}), {cell['facts_shown']} facts")
        full = row["unbudgeted"]
        print(
            f"| {milestone} | {row['items']} | " + " | ".join(cells) + f" | {full['kept']} in "
            f"{full['chars']:,} chars ({full['tokens']:,} tokens) |"
        )
    if args.missing:
        for milestone, row in report.items():
            for b in budgets:
                print(f"{milestone} @ {b}: missing {', '.join(row[str(b)]['missing']) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
