"""The home page's numbers: status at a glance per target, and verify runs."""

from __future__ import annotations

from typing import Any

from factbook.handbook.markup import md, time_text
from factbook.judging.outcomes import ERROR, OUTCOMES
from factbook.knowledge.kb import KnowledgeBase


def glance_rows(kb: KnowledgeBase, latest: dict[str, dict[str, dict[str, Any]]]) -> list[dict]:
    """Per target: facts verified, drifted, erroring, skipped, never checked; last check time."""
    rows: dict[str, dict[str, Any]] = {}

    def row(target: str) -> dict[str, Any]:
        return rows.setdefault(
            target,
            {
                "target": target,
                **dict.fromkeys(OUTCOMES, 0),
                "never": 0,
                "last": "",
            },
        )

    for fact in kb.facts.values():
        if fact.until is not None:
            continue
        records = latest.get(fact.id, {})
        for target, record in records.items():
            r = row(target)
            outcome = str(record.get("outcome"))
            r[outcome if outcome in OUTCOMES else ERROR] += 1
            r["last"] = max(r["last"], str(record.get("time") or ""))
        if fact.check is not None:
            target = fact.check_target() or "(no target)"
            if target not in records:
                row(target)["never"] += 1
    out = sorted(rows.values(), key=lambda r: r["target"])
    for r in out:
        r["last"] = time_text(r["last"]) if r["last"] else "never"
        r["target"] = md(r["target"])  # target names come from results/, written on any box
    return out


def run_header(run: dict[str, Any]) -> dict[str, str]:
    """A verify run header, whatever keys the writer put in it."""
    when = run.get("finished") or run.get("started") or run.get("time") or ""
    targets = run.get("targets") or run.get("target") or ""
    if isinstance(targets, list):
        targets = ", ".join(map(str, targets))
    counts = run.get("counts") or run.get("summary") or ""
    if isinstance(counts, dict):
        counts = ", ".join(f"{k} {v}" for k, v in counts.items())
    return {
        "id": md(run.get("id", "")),
        "when": time_text(str(when)) if when else "",
        "targets": md(targets),
        "counts": md(counts),
    }
