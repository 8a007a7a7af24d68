"""Which targets differ: one fact's results over many targets, grouped by observed value.

    hw.gpu.count: 62 targets 8, 2 targets 7 (node-17, node-40)

The largest group comes first and is not listed by name (it is the fleet's norm); every
smaller group names its targets (up to NAMED, then "+N more"). A target that errored or
skipped counts under `(error)` / `(skipped)`, so an unreachable node is an outlier too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from factbook.judging.outcomes import ERROR, SKIPPED
from factbook.judging.sanitize import json_safe
from factbook.store.results import ResultRecord

NAMED = 8
_CONSTANTS = {None: "null", True: "true", False: "false"}


@dataclass
class ValueGroup:
    """Targets that observed the same value for one fact (and their outcomes)."""

    value: Any
    label: str
    targets: list[str] = field(default_factory=list)
    outcomes: set[str] = field(default_factory=set)


def _label(record: ResultRecord) -> tuple[str, Any]:
    if record.outcome == ERROR and record.observed is None:
        return "(error)", None
    if record.outcome == SKIPPED:
        return "(skipped)", None
    value = record.observed
    if isinstance(value, str):
        return value, value
    if type(value) is int and -(2**53) < value < 2**53:  # json.dumps's text, without it
        return int.__repr__(value), value
    if value is None or type(value) is bool:
        return _CONSTANTS[value], value
    if not (isinstance(value, int) and -(2**53) < value < 2**53):  # NaN, huge ints: json_safe
        value = json_safe(value)
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text, value


def value_groups(records: list[ResultRecord]) -> dict[str, list[ValueGroup]]:
    """fact id -> its value groups, largest first, for facts checked on two or more targets."""
    by_fact: dict[str, dict[str, ValueGroup]] = {}
    for r in records:
        label, value = _label(r)
        groups = by_fact.setdefault(r.fact, {})
        group = groups.setdefault(label, ValueGroup(value, label))
        if r.target not in group.targets:
            group.targets.append(r.target)
        group.outcomes.add(r.outcome)
    out = {}
    for fact, groups in by_fact.items():
        if sum(len(g.targets) for g in groups.values()) < 2:
            continue
        order = list(groups)
        out[fact] = sorted(groups.values(), key=lambda g: (-len(g.targets), order.index(g.label)))
    return out


def summary(groups: list[ValueGroup], *, clip: int = 60) -> str:
    """`3 targets 4, 2 targets 8, 1 target 3 (node-05)` (values clipped to `clip` chars)."""
    parts = []
    for i, group in enumerate(groups):
        n = len(group.targets)
        label = group.label if len(group.label) <= clip else group.label[: clip - 3] + "..."
        text = f"{n} target{'s' if n != 1 else ''} {label}"
        if i > 0:
            names = group.targets[:NAMED]
            more = f", +{n - NAMED} more" if n > NAMED else ""
            text += f" ({', '.join(names)}{more})"
        parts.append(text)
    return ", ".join(parts)


def to_json(records: list[ResultRecord]) -> dict[str, Any]:
    """The value groups as JSON: fact -> {values: [{value, count, targets}], targets: N}."""
    return {
        fact: {
            "targets": sum(len(g.targets) for g in groups),
            "values": [
                {
                    "value": g.value if g.value is not None else g.label,
                    "count": len(g.targets),
                    "targets": g.targets,
                }
                for g in groups
            ],
        }
        for fact, groups in value_groups(records).items()
    }
