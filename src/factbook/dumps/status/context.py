"""The template context: the knowledge base as of a moment, sorted into the seeds' sections.

Templates get plain data (dataclasses of strings), never the knowledge base, so a knowledge
base's own template cannot accidentally show facts from after the moment it documents. The
full shape is documented in docs/status-documents.md.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from factbook.dumps.status.changes import Changes, compute_changes
from factbook.dumps.status.items import LEGEND, Item, known, make_item, milestone_label, value_text
from factbook.dumps.status.kinds import KIND_TITLES
from factbook.knowledge.categories import CATEGORIES
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.model import Milestone

INSTRUCTION_GROUPS = (
    ("access", "Access", {"access", "ssh"}),
    ("constraints", "User constraints", {"user-constraint", "user-constraints", "constraint"}),
)
DONE_STATES = ("done", "failed")
ACTIVE_STATES = ("in_progress", "blocked")


@dataclass
class Group:
    """A titled list of items (a subsection)."""

    key: str
    title: str
    items: list[Item] = field(default_factory=list)


@dataclass
class TrainingTable:
    """Per-epoch training metrics of one run: rows are epochs, columns the metric's keys."""

    title: str
    columns: list[str]
    rows: list[tuple[Any, list[str], Item]]


@dataclass
class MachineFiles:
    """Inventory of one machine, grouped by kind (scripts, checkpoints, logs, ...)."""

    machine: str
    description: str
    groups: list[Group]


@dataclass
class StatusContext:
    """Everything a status template may use (see docs/status-documents.md)."""

    title: str
    as_of: Milestone | None
    as_of_label: str
    previous: Milestone | None
    generated: str
    uses_results: bool
    legend: str
    goal: list[Item]
    instructions: list[Group]
    discoveries: list[Group]
    pitfalls: list[Item]
    benchmarks: list[Item]
    training_tables: list[TrainingTable]
    training: list[Item]
    accomplished: list[Item]
    in_progress: list[Item]
    next_steps: list[Item]
    files: list[MachineFiles]
    changes: Changes
    counts: dict[str, int]
    redacted: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The Jinja2 variables: every field by name, plus `ctx` for the whole object."""
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["ctx"] = self
        return data


def build_context(
    kb: KnowledgeBase,
    *,
    as_of: Milestone | None,
    previous: Milestone | None,
    results: dict[str, dict[str, dict[str, Any]]] | None,
    now: dt.datetime | None = None,
    redacted: bool = False,
) -> StatusContext:
    """Sort the facts visible at `as_of` into sections; results apply only when given."""
    all_facts = list(kb.facts.values())
    facts = [f for f in all_facts if known(kb, f, as_of)]
    items = {f.id: make_item(kb, f, as_of, results) for f in facts}
    by_cat: dict[str, list[Item]] = {}
    for fact in facts:
        by_cat.setdefault(fact.category, []).append(items[fact.id])
    moment = now or dt.datetime.now(dt.timezone.utc)
    label = (
        f"milestone {as_of.id} ({milestone_label(as_of)})" if as_of else moment.strftime("%Y-%m-%d")
    )
    progress = by_cat.get("progress", [])
    return StatusContext(
        title=f"Status as of {label}",
        as_of=as_of,
        as_of_label=label,
        previous=previous,
        generated=moment.strftime("%Y-%m-%d %H:%M UTC"),
        uses_results=results is not None,
        legend=LEGEND,
        goal=by_cat.get("goal", []),
        instructions=_instruction_groups(by_cat.get("instructions", [])),
        discoveries=_discovery_groups(by_cat),
        pitfalls=by_cat.get("pitfalls", []),
        benchmarks=by_cat.get("benchmarks", []),
        training_tables=_training_tables(by_cat.get("training", [])),
        training=[i for i in by_cat.get("training", []) if not _tabulated(i)],
        accomplished=[i for i in progress if i.get("state") in DONE_STATES],
        in_progress=[i for i in progress if i.get("state") in ACTIVE_STATES],
        next_steps=_next_steps(progress),
        files=_files(kb, by_cat.get("inventory", [])),
        changes=compute_changes(kb, all_facts, as_of, previous, results, items),
        counts={cat: len(v) for cat, v in by_cat.items()} | {"total": len(facts)},
        redacted=redacted,
    )


def _instruction_groups(items: list[Item]) -> list[Group]:
    groups = {key: Group(key, title) for key, title, _ in INSTRUCTION_GROUPS}
    groups["environment"] = Group("environment", "Environment rules")
    for item in items:
        tags = set(item.fact.tags if item.fact else ())
        key = next((k for k, _, wanted in INSTRUCTION_GROUPS if tags & wanted), "environment")
        groups[key].items.append(item)
    order = ("access", "environment", "constraints")
    return [groups[k] for k in order if groups[k].items]


def _tags(item: Item) -> set[str]:
    return set(item.fact.tags) if item.fact else set()


def _discovery_groups(by_cat: dict[str, list[Item]]) -> list[Group]:
    """The Discoveries groups each category declares (categories.py), in their order."""
    declared = sorted(
        ((g, c.name) for c in CATEGORIES for g in c.status_groups), key=lambda p: p[0].order
    )
    groups = [
        Group(
            g.key,
            g.title,
            [i for i in by_cat.get(name, []) if g.tag is None or (g.tag in _tags(i)) == g.has_tag],
        )
        for g, name in declared
    ]
    return [g for g in groups if g.items]


def _tabulated(item: Item) -> bool:
    return (
        item.get("epoch") is not None
        and isinstance(item.fact.value if item.fact else None, (dict, int, float))
        and not isinstance(item.fact.value if item.fact else None, bool)
    )


def _training_tables(items: list[Item]) -> list[TrainingTable]:
    """Epoch metrics side by side, one table per run (id prefix) and metric."""
    runs: dict[tuple[str, str], list[Item]] = {}
    for item in items:
        if _tabulated(item):
            prefix = item.id.rsplit(".", 1)[0]
            runs.setdefault((prefix, str(item.get("metric") or "value")), []).append(item)
    tables = []
    for (prefix, metric), rows in runs.items():
        columns: list[str] = []
        for item in rows:
            value = item.fact.value if item.fact else None
            for key in value if isinstance(value, dict) else [metric]:
                if key not in columns:
                    columns.append(key)
        table_rows = []
        for item in sorted(rows, key=lambda i: (str(type(i.get("epoch"))), i.get("epoch"))):
            value = item.fact.value if item.fact else None
            cells = value if isinstance(value, dict) else {metric: value}
            table_rows.append(
                (item.get("epoch"), [value_text(cells.get(c)) for c in columns], item)
            )
        tables.append(TrainingTable(f"{prefix} — {metric}", columns, table_rows))
    return tables


def _next_steps(progress: list[Item]) -> list[Item]:
    """todo items in priority order (1 first; unprioritised last, in file order)."""
    todo = [i for i in progress if i.get("state") == "todo"]
    return sorted(todo, key=lambda i: (i.get("priority") is None, i.get("priority") or 0))


def _files(kb: KnowledgeBase, items: list[Item]) -> list[MachineFiles]:
    machines: dict[str, dict[str, list[Item]]] = {}
    for item in items:
        machine = str(item.get("machine") or (item.fact.target if item.fact else None) or "?")
        kind = str(item.get("kind") or "file")
        machines.setdefault(machine, {}).setdefault(kind, []).append(item)
    out = []
    for machine, kinds in machines.items():
        target = kb.targets.get(machine)
        description = (target.description or "") if target else ""
        order = [k for k in KIND_TITLES if k in kinds] + [k for k in kinds if k not in KIND_TITLES]
        groups = [Group(k, KIND_TITLES.get(k, k.title()), kinds[k]) for k in order]
        out.append(MachineFiles(machine, description, groups))
    return out


def default_previous(kb: KnowledgeBase, as_of: Milestone | None) -> Milestone | None:
    """The milestone before `as_of`; for 'now', the latest milestone."""
    ordered = sorted(kb.milestones.values(), key=lambda m: m.index)
    if as_of is None:
        return ordered[-1] if ordered else None
    earlier = [m for m in ordered if m.index < as_of.index]
    return earlier[-1] if earlier else None
