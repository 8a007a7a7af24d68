"""Measure `factbook import` on dumps of other bring-ups, against each dump's checklist.

For every tests/data/dumps/*.checklist.yaml: a knowledge base made by the real `factbook init`
(this machine discovered into facts/discovered-local.yaml), the dump imported with --write,
the result loaded strictly (it lints clean), then scored by tests/dump_checklist.py:

- items: checklist items; proposed: those proposed with the expected category, value, id,
  status, target, check (or none) and flagged missing keys;
- checks: checks proposed; valid: those a reviewer accepts (lint clean, a real distribution,
  a path the dump writes, a version that parses, a target named);
- box-bound: facts with a check, hardware, inventory or version facts; targeted: those naming
  a target of targets.yaml; wrong file: facts in a file of another category or another
  command's (`discovered-*.yaml`); targets: the dump's boxes proposed as the checklist says;
  local: imported checks `verify-facts --target local` would run (the bug this fixes: 0).

    .venv/bin/python bench/import_dumps.py [--json] [--markdown] [--verbose]

Exits 1 when a dump misses the issue's bar (90% proposed, every check valid, nothing in a
wrong file, every box-bound fact targeted, nothing run on local).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from dump_checklist import checklists, import_dump, load_checklist, score  # noqa: E402


def passes(row: dict) -> bool:
    return (
        row["proposed"] >= 0.9 * row["items"]
        and row["valid_checks"] == row["checks"]
        and row["wrong_file"] == 0
        and row["targeted"] == row["box_bound"]
        and row["local_runs"] == 0
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--markdown", action="store_true", help="the table for docs/import.md")
    parser.add_argument("--verbose", action="store_true", help="every problem found")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, path in enumerate(checklists()):
            checklist = load_checklist(path)
            started = time.perf_counter()
            result, kb = import_dump(checklist, Path(tmp) / f"kb{i}")
            found = score(checklist, result, kb)
            row = found.row()
            row["shape"] = checklist.get("shape", "")
            row["seconds"] = round(result.seconds, 3)
            row["whole_s"] = round(time.perf_counter() - started, 2)
            rows.append(row)
            if args.verbose:
                for problem in found.problems:
                    print(f"  {checklist['dump']}: {problem}", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        if not args.markdown:
            print(
                "| dump | items | proposed | checks valid | box-bound targeted | wrong file "
                "| targets | run on local | import s |"
            )
            print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            pct = 100 * r["proposed"] / r["items"] if r["items"] else 0.0
            cells = [
                f"`{r['dump']}`",
                *([r["shape"]] if args.markdown else []),
                str(r["items"]),
                f"{r['proposed']} ({pct:.0f}%)",
                f"{r['valid_checks']}/{r['checks']}",
                f"{r['targeted']}/{r['box_bound']}",
                str(r["wrong_file"]),
                r["targets"],
                str(r["local_runs"]),
                *([] if args.markdown else [f"{r['seconds']:.2f}"]),
            ]
            print("| " + " | ".join(cells) + " |")
    return 0 if all(passes(r) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
