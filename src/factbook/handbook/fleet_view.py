"""The handbook's fleet page: facts x groups, the outliers named, each target's last run.

Written for 64 targets read on a phone: the facts x groups matrix scrolls sideways inside
its own box, cells are short (`8/8`, or `7/8 !` with `!` in an orange disc), outliers are a
plain list (one line per fact: "3 targets 4, 1 target 3 (node-05)"), and the per-target table
has four narrow columns. The page exists only for a fleet: a knowledge base with groups, or a
fact last checked on two or more targets.
"""

from __future__ import annotations

from typing import Any

from factbook.handbook.marks import flag
from factbook.handbook.markup import md, rel_link, scroll_table, time_text
from factbook.handbook.views import ViewBuilder
from factbook.judging.outcomes import DRIFT, ERROR, PASS
from factbook.knowledge.fleet.outliers import summary, value_groups
from factbook.knowledge.kb import KnowledgeBase
from factbook.store.results import ResultRecord

FLEET = "fleet.md"
MAX_GROUP_COLUMNS = 12  # past this, the smallest groups are left to the per-target table


def has_fleet(kb: KnowledgeBase, latest: dict[str, dict[str, dict[str, Any]]]) -> bool:
    return bool(_groups(kb)) or any(len(by_target) > 1 for by_target in latest.values())


def _groups(kb: KnowledgeBase) -> list[str]:
    return [g for g in kb.groups if g not in ("all", "ungrouped") and kb.covered(g)]


def _records(latest: dict[str, dict[str, dict[str, Any]]]) -> list[ResultRecord]:
    out = []
    for by_target in latest.values():
        for data in by_target.values():
            if isinstance(data, dict) and "fact" in data and "target" in data:
                out.append(ResultRecord.from_dict({"reason": "", "time": "", "run": "", **data}))
    return out


def fleet_context(kb: KnowledgeBase, views: ViewBuilder) -> dict[str, Any]:
    records = _records(views.latest)
    fleet_facts = value_groups(records)
    groups = sorted(_groups(kb), key=lambda g: -len(kb.covered(g)))[:MAX_GROUP_COLUMNS]
    members = {g: set(kb.covered(g)) for g in groups}
    by_fact: dict[str, list[ResultRecord]] = {}
    for r in records:
        by_fact.setdefault(r.fact, []).append(r)
    matrix_rows = []
    for fact_id in sorted(fleet_facts):
        row = [views.link(FLEET, fact_id)]
        for group in groups:
            mine = [r for r in by_fact[fact_id] if r.target in members[group]]
            row.append(_cell(mine))
        matrix_rows.append(row)
    outliers = [
        (views.link(FLEET, fact_id), md(summary(found, clip=40)))
        for fact_id, found in sorted(fleet_facts.items())
        if len(found) > 1
    ]
    by_target: dict[str, list[ResultRecord]] = {}
    for r in records:
        by_target.setdefault(r.target, []).append(r)
    names = list(dict.fromkeys([*kb.targets, *sorted(by_target)]))
    target_rows = []
    for name in names:
        mine = by_target.get(name, [])
        target = kb.targets.get(name)
        bad = sum(r.outcome in (DRIFT, ERROR) for r in mine)
        target_rows.append(
            [
                md(name),
                md(", ".join(target.groups)) if target else "",
                f"{sum(r.outcome == PASS for r in mine)} ok"
                + (f", **{bad} not ok**" if bad else ""),
                time_text(max((r.time for r in mine if r.time), default=None)),
            ]
        )
    headers = ["Fact", *(md(g) for g in groups)]
    return {
        "matrix": scroll_table(headers, matrix_rows) if groups else "",
        "outliers": outliers,
        "targets": scroll_table(["Target", "Groups", "Checks", "Last verified"], target_rows),
        "group_count": len(_groups(kb)),
        "shown_groups": len(groups),
        "target_count": len(names),
        "all_facts": rel_link(FLEET, "facts/index.md"),
    }


def _cell(records: list[ResultRecord]) -> str:
    """`8/8` all passing, `7/8 !` with drift or errors, `–` when none of the group ran it."""
    if not records:
        return "–"
    ok = sum(r.outcome == PASS for r in records)
    bad = sum(r.outcome in (DRIFT, ERROR) for r in records)
    return f"{ok}/{len(records)}" + (" " + flag(f"{bad} drifted or erroring") if bad else "")
