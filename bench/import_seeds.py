"""Measure `factbook import` on the three seeds and on factbook's own status documents.

1. The seeds in milestone order (milestones.yaml's `seed:`), imported one by one into one
   knowledge base that starts empty (milestones.yaml and targets.yaml only) and keeps what
   each import wrote: items read, proposals, how many lint clean without edits (and why the
   others cannot), items outside any known section, seconds per document; the changes each
   import detects against the knowledge base built from the earlier seeds.
2. Each seed against the hand-written facts: how many proposals share a quote with a
   hand-written fact of the same seed (either quote inside the other), and how many of those
   facts' quotes a proposal covers; and the verdicts when the seed is imported into the
   hand-written knowledge base as it stood at the previous milestone (facts with a later
   `since` left out).
3. The round trip: `factbook status --as-of M`, then import into the same knowledge base
   (proposals other than unchanged: target 0) and into an empty one (facts recovered with
   the same statement, category, value and `since`).

    .venv/bin/python bench/import_seeds.py [--root .] [--json] [--repeat 3]

Timings are medians of --repeat runs. Exits 1 when a document takes 1 s or more, or a
proposal that lints clean breaks lint.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from factbook.dumps.capture import plan_import, write
from factbook.dumps.capture.match import norm
from factbook.dumps.status import StatusOptions, render_status
from factbook.dumps.status.items import one_line
from factbook.knowledge.kb import load_kb, load_kb_with_problems

BUDGET_S = 1.0
KB_FILES = ("milestones.yaml", "targets.yaml")


def empty_kb(root: Path, into: Path) -> Path:
    (into / "facts").mkdir(parents=True)
    for name in KB_FILES:
        shutil.copy(root / name, into / name)
    return into


def kb_before(root: Path, milestone: str, into: Path) -> Path:
    """The hand-written knowledge base as it stood before `milestone`: facts that began then
    or later left out, and what the others learned then (a refutation, an end) forgotten."""
    kb = load_kb(root, strict=False)
    order = {m: kb.milestones[m].index for m in kb.milestones}
    earlier = [m for m in kb.milestones.values() if m.index < order[milestone]]
    previous = max(earlier, key=lambda m: m.index) if earlier else None
    empty_kb(root, into)
    for path in sorted((root / "facts").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        kept = [
            f
            for f in data.get("facts") or []
            if f.get("since") is None or order.get(str(f["since"]), 0) < order[milestone]
        ]
        for fact in kept:
            fact.pop("links", None)  # links to the left-out facts would dangle
            known = kb.facts.get(fact["id"])
            if known is not None and previous is not None:
                fact["status"] = kb.status_as_of(known, previous)
            fact["history"] = [
                h
                for h in fact.get("history") or []
                if order.get(str(h["at"]), 0) < order[milestone]
            ]
            if not fact["history"]:
                del fact["history"]
            if (
                fact.get("until") is not None
                and order.get(str(fact["until"]), 0) >= order[milestone]
            ):
                del fact["until"]
        text = yaml.safe_dump({"facts": kept}, sort_keys=False, allow_unicode=True)
        (into / "facts" / path.name).write_text(text, encoding="utf-8")
    return into


def quote_match(root: Path, seed: str, quotes: list[str]) -> dict[str, int]:
    kb = load_kb(root, strict=False)
    hand = [
        (norm(s.quote), f.id)
        for f in kb.facts.values()
        for s in f.sources
        if s.seed == seed and s.quote
    ]
    mine = [norm(q) for q in quotes]
    matched = sum(1 for q in mine if any(h in q or q in h for h, _ in hand))
    covered = {fid for h, fid in hand if any(h in q or q in h for q in mine)}
    facts = {fid for _, fid in hand}
    return {
        "proposals_matched": matched,
        "facts_with_seed_quote": len(facts),
        "facts_covered": len(covered),
    }


def timed(run: Any, repeat: int) -> Any:
    """The last of `repeat` runs, its `seconds` the median (the machine is shared)."""
    results = [run() for _ in range(repeat)]
    results[-1].seconds = statistics.median(r.seconds for r in results)
    return results[-1]


def seeds(root: Path, tmp: Path, repeat: int) -> dict[str, Any]:
    kb = load_kb(root, strict=False)
    ordered = sorted(kb.milestones.values(), key=lambda m: m.index)
    target = empty_kb(root, tmp / "seeds")
    rows = []
    previous = None
    for milestone in ordered:
        if not milestone.seed:
            continue
        dump = root / "seeds" / milestone.seed
        result = timed(lambda d=dump, m=milestone.id: plan_import(target, d, m), repeat)
        write(result.applied)
        _, problems = load_kb_with_problems(target)
        proposals = result.actionable
        reasons: dict[str, int] = {}
        for p in proposals:
            for why in p.problems:
                reasons[why] = reasons.get(why, 0) + 1
        row: dict[str, Any] = {
            "seed": milestone.seed,
            "milestone": milestone.id,
            "items": len(result.document.entries),
            "proposals": len(proposals),
            "lint_clean": sum(1 for p in proposals if p.clean),
            "not_clean_reasons": reasons,
            "outside_sections": len(result.unplaced),
            "verdicts_vs_earlier_seeds": {
                v: result.count(v) for v in ("new", "changed", "contradicted", "unchanged")
            },
            "changes": [
                f"{p.verdict} {', '.join(p.ids)}: {p.entry.quote[:70]}"
                for p in proposals
                if p.verdict in ("changed", "contradicted")
            ],
            "kb_lint_problems_after_write": len(problems),
            "seconds": round(result.seconds, 3),
        }
        row.update(quote_match(root, milestone.seed, [p.entry.quote for p in proposals]))
        if previous is not None:
            before = kb_before(root, milestone.id, tmp / f"hand-{milestone.id}")
            against = plan_import(before, dump, milestone.id)
            row["verdicts_vs_hand_written_before"] = {
                v: against.count(v) for v in ("new", "changed", "contradicted", "unchanged")
            }
            row["hand_written_changes"] = [
                f"{p.verdict} {', '.join(p.ids)}: {p.entry.quote[:70]}"
                for p in against.actionable
                if p.verdict in ("changed", "contradicted")
            ]
        previous = milestone
        rows.append(row)
    return {"seeds": rows}


def round_trip(root: Path, tmp: Path, repeat: int) -> list[dict[str, Any]]:
    kb = load_kb(root, strict=False)
    out = []
    ordered = sorted(kb.milestones.values(), key=lambda m: m.index)
    for milestone in ordered:
        doc = tmp / f"status-{milestone.id}.md"
        doc.write_text(render_status(kb, StatusOptions(as_of=milestone.id)), encoding="utf-8")
        same = timed(lambda d=doc, m=milestone.id: plan_import(root, d, m), repeat)
        before: dict[str, int] | None = None
        if milestone.index > ordered[0].index:
            earlier = kb_before(root, milestone.id, tmp / f"before-{milestone.id}")
            against = plan_import(earlier, doc, milestone.id)
            before = {v: against.count(v) for v in ("new", "changed", "contradicted", "unchanged")}
        fresh_root = empty_kb(root, tmp / f"empty-{milestone.id}")
        fresh = timed(lambda d=doc, m=milestone.id, r=fresh_root: plan_import(r, d, m), repeat)
        write(fresh.applied)
        new = load_kb(fresh_root)
        visible = [f for f in kb.facts.values() if kb.visible(f, milestone)]
        same_fields = 0
        for fact in visible:
            got = new.facts.get(fact.id)
            if (
                got is not None
                and one_line(got.statement) == one_line(fact.statement)
                and got.category == fact.category
                and got.value == fact.value
                and got.unit == fact.unit
                and got.since == (fact.since or milestone.id)
            ):
                same_fields += 1
        out.append(
            {
                "milestone": milestone.id,
                "facts": len(visible),
                "same_kb_proposals": len(same.actionable),
                "into_kb_before": before,
                "same_kb_seconds": round(same.seconds, 3),
                "empty_kb_recovered": same_fields,
                "empty_kb_seconds": round(fresh.seconds, 3),
            }
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=".", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing (median)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        report = seeds(args.root.resolve(), tmp, args.repeat)
        report["round_trip"] = round_trip(args.root.resolve(), tmp, args.repeat)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for row in report["seeds"]:
            print(
                f"{row['seed']} (msg {row['milestone']}): {row['items']} items, "
                f"{row['proposals']} proposals, {row['lint_clean']} lint clean "
                f"{row['not_clean_reasons'] or ''}, {row['outside_sections']} outside sections, "
                f"{row['seconds']:.2f} s"
            )
            print(
                f"  by quote: {row['proposals_matched']} proposals match a hand-written fact; "
                f"{row['facts_covered']}/{row['facts_with_seed_quote']} hand-written facts "
                "quoting this seed covered"
            )
            print(f"  vs earlier seeds: {row['verdicts_vs_earlier_seeds']}")
            if "verdicts_vs_hand_written_before" in row:
                print(f"  vs hand-written facts before: {row['verdicts_vs_hand_written_before']}")
            for line in row["changes"] + row.get("hand_written_changes", []):
                print(f"    {line}")
            print(f"  lint problems after --write: {row['kb_lint_problems_after_write']}")
        for row in report["round_trip"]:
            print(
                f"round trip {row['milestone']}: same KB {row['same_kb_proposals']} proposals "
                f"({row['same_kb_seconds']:.2f} s); empty KB {row['empty_kb_recovered']}/"
                f"{row['facts']} facts recovered ({row['empty_kb_seconds']:.2f} s)"
            )
            if row["into_kb_before"]:
                print(
                    f"  into the hand-written KB before {row['milestone']}: {row['into_kb_before']}"
                )
    slow = [r for r in report["seeds"] if r["seconds"] >= BUDGET_S]
    slow += [
        r
        for r in report["round_trip"]
        if max(r["same_kb_seconds"], r["empty_kb_seconds"]) >= BUDGET_S
    ]
    broken = [r for r in report["seeds"] if r["kb_lint_problems_after_write"]]
    return 1 if slow or broken else 0


if __name__ == "__main__":
    sys.exit(main())
