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
    .venv/bin/python bench/import_dumps.py --round-trip [--budgets 2300,8000]

--round-trip: the shipped knowledge base's budgeted dumps (`factbook status --as-of M --budget
B`) imported back into it (proposals: 0 is the bar) and into a new knowledge base (facts made,
against the facts shown; ids kept / named: of the ids the dump writes (group heads, pitfalls),
those a fact of the new knowledge base has;
category wrong: facts whose category differs from the shipped fact's).

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


def round_trip(budgets: list[int]) -> list[dict]:
    """The budgeted dumps of the shipped knowledge base, imported back (see the docstring)."""
    import re
    import shutil

    from dump_checklist import fresh_kb

    from factbook.dumps.capture import plan_import, write
    from factbook.dumps.status import StatusOptions
    from factbook.dumps.status.budget import render_budgeted
    from factbook.knowledge.kb import load_kb

    shipped = load_kb(ROOT, strict=False)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for milestone in ("3157", "3478", "4504"):
            for budget in budgets:
                dump = render_budgeted(shipped, StatusOptions(as_of=milestone), budget)
                doc = Path(tmp) / f"brief-{milestone}-{budget}.md"
                doc.write_text(dump.text, encoding="utf-8")
                started = time.perf_counter()
                same = plan_import(ROOT, doc, milestone)
                seconds = time.perf_counter() - started
                root = fresh_kb(Path(tmp) / f"kb-{milestone}-{budget}", milestone)
                shutil.copy(ROOT / "targets.yaml", root / "targets.yaml")
                write(plan_import(root, doc, milestone).applied)
                back = load_kb(root)
                made = [f for f in back.facts.values() if f.sources[0].seed == doc.name]
                named = set(re.findall(r"`([a-z0-9_]+(?:\.[\w{},-]+)+)`", dump.text))
                named_ids = {ln.id for ln in dump.shown} & _expand(named)
                kept = [f for f in made if f.id in named_ids]
                rows.append(
                    {
                        "milestone": milestone,
                        "budget": budget,
                        "shown": len(dump.shown),
                        "proposals": len(same.actionable),
                        "unchanged": same.count("unchanged"),
                        "made": len(made),
                        "ids_kept": len(kept),
                        "ids_named": len(named_ids),
                        "category_wrong": sum(
                            f.category != shipped.facts[f.id].category for f in kept
                        ),
                        "import_s": round(seconds, 2),
                    }
                )
    return rows


def _expand(specs: set[str]) -> set[str]:
    out = set()
    for spec in specs:
        if spec.endswith("}") and ".{" in spec:
            prefix, _, rest = spec[:-1].partition(".{")
            out |= {f"{prefix}.{last}" for last in rest.split(",")}
        else:
            out.add(spec)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--round-trip", action="store_true", help="budgeted dumps, read back")
    parser.add_argument("--budgets", default="2300,8000")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--markdown", action="store_true", help="the table for docs/import.md")
    parser.add_argument("--verbose", action="store_true", help="every problem found")
    args = parser.parse_args()
    if args.round_trip:
        trips = round_trip([int(b) for b in args.budgets.split(",")])
        if args.json:
            print(json.dumps(trips, indent=2))
            return 0
        print(
            "| milestone | budget | facts shown | proposed back into the same KB | facts made in "
            "a new KB | ids kept / named | category wrong | import s |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for t in trips:
            print(
                f"| {t['milestone']} | {t['budget']:,} | {t['shown']} | {t['proposals']} | "
                f"{t['made']} | {t['ids_kept']} / {t['ids_named']} | {t['category_wrong']} | "
                f"{t['import_s']:.2f} |"
            )
        return 0 if all(t["proposals"] == 0 and t["made"] == t["shown"] for t in trips) else 1
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
