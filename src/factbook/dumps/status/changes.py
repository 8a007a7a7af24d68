"""What changed between two moments: the "changed since the previous status" section.

Between a previous milestone P and the document's moment M: facts known at M but not at P
(new), facts that held at P but no longer do (gone), facts whose status became refuted,
other status changes (assumed → verified), benchmark figures that moved (same metric and
configuration, or linked by replaces/replaced_by, with a different value), and — for a
document about now — checks that drifted or errored in results/latest.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from factbook.dumps.status.items import Item, effective_status, known, make_item, value_text
from factbook.judging.outcomes import NOT_OK
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.model import Fact, Milestone


@dataclass
class Move:
    """A benchmark figure that moved: the figure before and after."""

    before: Item
    after: Item
    metric: str
    config: str


@dataclass
class Changes:
    """The change section's lists; `previous` is None when there is nothing to compare."""

    previous: Milestone | None
    new: list[Item] = field(default_factory=list)
    gone: list[Item] = field(default_factory=list)
    refuted: list[Item] = field(default_factory=list)
    status_changed: list[tuple[Item, str]] = field(default_factory=list)
    moved: list[Move] = field(default_factory=list)
    drifted: list[Item] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (
            self.new
            or self.gone
            or self.refuted
            or self.status_changed
            or self.moved
            or self.drifted
        )


def bench_key(fact: Fact) -> tuple[str, str] | None:
    """Benchmarks compare on (metric, configuration); None when the fact has no metric."""
    metric = fact.get("metric")
    if not metric:
        return None
    return str(metric), json.dumps(fact.get("config") or {}, sort_keys=True, default=str)


def compute_changes(
    kb: KnowledgeBase,
    facts: list[Fact],
    current: Milestone | None,
    previous: Milestone | None,
    results: dict[str, dict[str, dict[str, Any]]] | None,
    items: dict[str, Item],
) -> Changes:
    """Changes from `previous` to `current` over `facts` (all facts, visible or not)."""
    changes = Changes(previous=previous)
    drifted_ids = set()
    if results is not None:
        for fact_id, records in results.items():
            if any(r.get("outcome") in NOT_OK for r in records.values()):
                drifted_ids.add(fact_id)
    if previous is None:
        changes.drifted = [items[i] for i in items if i in drifted_ids]
        return changes

    def item(fact: Fact, moment: Milestone | None) -> Item:
        if moment is current and fact.id in items:
            return items[fact.id]
        return make_item(kb, fact, moment, None)

    before_bench: dict[tuple[str, str], Fact] = {}
    for fact in facts:
        now_seen = known(kb, fact, current)
        then_seen = known(kb, fact, previous)
        if fact.category == "benchmarks" and then_seen:
            key = bench_key(fact)
            if key:
                before_bench[key] = fact
        if now_seen and not then_seen:
            changes.new.append(item(fact, current))
        elif then_seen and not now_seen:
            changes.gone.append(item(fact, previous))
        if not now_seen:
            continue
        now_status = effective_status(kb, fact, current)
        then_status = effective_status(kb, fact, previous) if then_seen else None
        if now_status == "refuted" and then_status != "refuted":
            changes.refuted.append(item(fact, current))
        elif then_status is not None and then_status != now_status:
            changes.status_changed.append((item(fact, current), then_status))
        if fact.id in drifted_ids:
            changes.drifted.append(item(fact, current))
    by_id = {f.id: f for f in facts}
    for fact in facts:
        if fact.category != "benchmarks" or not known(kb, fact, current):
            continue
        if known(kb, fact, previous):
            continue
        old = _predecessor(kb, fact, by_id, before_bench, previous)
        if old is not None and value_text(old.value, old.unit) != value_text(fact.value, fact.unit):
            key = bench_key(fact) or ("", "")
            config = value_text(fact.get("config") or {})
            changes.moved.append(Move(item(old, previous), item(fact, current), key[0], config))
    return changes


def _predecessor(
    kb: KnowledgeBase,
    fact: Fact,
    by_id: dict[str, Fact],
    before_bench: dict[tuple[str, str], Fact],
    previous: Milestone,
) -> Fact | None:
    """The figure this one superseded: linked by replaces, or same metric and config before."""
    for old_id in fact.links.get("replaces", []):
        old = by_id.get(old_id)
        if old is not None and old.category == "benchmarks" and known(kb, old, previous):
            return old
    for old in by_id.values():
        if fact.id in old.links.get("replaced_by", []) and known(kb, old, previous):
            return old
    key = bench_key(fact)
    return before_bench.get(key) if key else None
