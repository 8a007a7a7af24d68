"""One fact as a status-document line: its text, verification mark, date and provenance.

A status document is read by people deciding what to trust, so every line says how it is
known: ✅ verified (when and where), ⚠️ drifted (expected vs observed), ❌ error, ◻ never
checked / assumed, ~~refuted~~. Live results count only for documents about *now*; a
document as of a past milestone shows what was known then, from the fact's own provenance.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from factbook.handbook.markup import expect_text
from factbook.judging.outcomes import DRIFT, ERROR, PASS
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.model import Fact, Milestone, Source

MARKS = {
    "verified": "✅",
    "drifted": "⚠️",
    "error": "❌",
    "assumed": "◻",
    "stale": "◻",
    "refuted": "~~refuted~~",
}
LEGEND = (
    "✅ verified (date, where) · ⚠️ drifted (expected vs observed) · ❌ check errored · "
    "◻ never checked / assumed · ~~refuted~~"
)
_SPACES = re.compile(r"\s+")


@dataclass
class Mark:
    """How an item is known: a kind (a key of MARKS), when, where and any detail."""

    kind: str
    when: str = ""
    where: str = ""
    detail: str = ""

    @property
    def symbol(self) -> str:
        return MARKS[self.kind]

    @property
    def text(self) -> str:
        """'✅ msg 3157' / '⚠️ 2026-11-29 llm-two: expected 8, observed 7'."""
        stamp = " ".join(p for p in (self.when, self.where) if p)
        if self.kind == "stale":
            stamp = ("stale " + stamp).strip()
        out = f"{self.symbol} {stamp}".rstrip()
        return f"{out}: {self.detail}" if self.detail else out


@dataclass
class Item:
    """A fact prepared for a template: plain strings, no knowledge base lookups needed."""

    id: str
    category: str
    title: str
    text: str
    status: str
    mark: Mark
    value: str = ""
    refuted: bool = False
    note: str = ""
    links: dict[str, list[str]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    fact: Fact | None = None

    def get(self, key: str, default: Any = None) -> Any:
        """A category key (symptom, fix, path, state, criterion, ...), as the fact has it."""
        return self.extra.get(key, default)


def one_line(text: Any) -> str:
    """Collapse YAML-folded whitespace so an item is one Markdown line."""
    return _SPACES.sub(" ", str(text)).strip()


def value_text(value: Any, unit: str | None = None) -> str:
    """A fact value for a table cell: numbers as written, mappings as `k=v, ...`."""
    if value is None:
        return ""
    if isinstance(value, bool):
        text = str(value).lower()
    elif isinstance(value, (int, float, str)):
        text = str(value)
    elif isinstance(value, dict):
        text = ", ".join(k if v is None else f"{k}={value_text(v)}" for k, v in value.items())
    else:
        text = json.dumps(value, default=str)
    return f"{text} {unit}" if unit else text


def expected_text(expected: Any) -> str:
    """What a check expected, in words: `version >=3.12`, `approx {...}`, `8` for `eq: 8`."""
    if isinstance(expected, dict):
        text = expect_text(expected)
        return text[3:] if text.startswith("eq ") else text
    return value_text(expected)


def milestone_label(milestone: Milestone) -> str:
    label = f"msg {milestone.message}" if milestone.message is not None else milestone.id
    return f"{label}, {milestone.date}" if milestone.date else label


def known_sources(kb: KnowledgeBase, fact: Fact, as_of: Milestone | None) -> list[Source]:
    """The sources that existed at `as_of` (KnowledgeBase.source_known)."""
    return [s for s in fact.sources if kb.source_known(s, as_of)]


def known(kb: KnowledgeBase, fact: Fact, as_of: Milestone | None) -> bool:
    """Whether the fact was known at `as_of` (KnowledgeBase.visible: `since`, or a source
    that existed then)."""
    return kb.visible(fact, as_of)


def _source_stamp(source: Source) -> tuple[str, str]:
    if source.seed:
        return (f"msg {source.message}" if source.message is not None else source.seed), ""
    return str(source.date or source.run or "run"), source.target or ""


def provenance_mark(kb: KnowledgeBase, fact: Fact, status: str, as_of: Milestone | None) -> Mark:
    """The mark from the fact's own record: its status then, dated by history or sources."""
    kind = status if status in MARKS else "assumed"
    entries = [
        h
        for h in fact.history
        if h.status == status
        and h.at in kb.milestones
        and (as_of is None or kb.milestones[h.at].index <= as_of.index)
    ]
    detail = ""
    if entries:
        last = max(entries, key=lambda h: kb.milestones[h.at].index)
        when, where = milestone_label(kb.milestones[last.at]), ""
        detail = one_line(last.note) if last.note and kind in ("refuted", "stale") else ""
    else:
        sources = known_sources(kb, fact, as_of)
        if sources:
            when, where = _source_stamp(sources[-1])
        elif fact.since in kb.milestones:  # told later, known since `since`
            when, where = milestone_label(kb.milestones[fact.since]), ""
        else:
            when, where = "", ""
    if kind == "verified" and not where and fact.target:
        where = fact.target
    return Mark(kind, when, where, detail)


def results_mark(records: dict[str, dict[str, Any]], fact: Fact) -> Mark | None:
    """The mark from live results (latest.json records of one fact), worst outcome first."""
    by_outcome: dict[str, list[dict[str, Any]]] = {}
    for target, record in sorted(records.items()):
        by_outcome.setdefault(str(record.get("outcome")), []).append({"target": target, **record})
    for outcome, kind in ((DRIFT, "drifted"), (ERROR, "error"), (PASS, "verified")):
        found = by_outcome.get(outcome)
        if not found:
            continue
        record = found[-1]
        when = str(record.get("time") or "")[:10]
        where = ", ".join(r["target"] for r in found)
        detail = ""
        if kind == "drifted":
            expected = fact.check.expect if fact.check and fact.check.expect else fact.value
            detail = (
                f"expected {expected_text(expected)}, observed {value_text(record.get('observed'))}"
            )
        elif kind == "error":
            detail = one_line(record.get("reason") or "")
        return Mark(kind, when, where, detail)
    return None


def effective_status(kb: KnowledgeBase, fact: Fact, as_of: Milestone | None) -> str:
    """The status at `as_of`; a fact marked stale because it ended (`until`) was current
    before then, so as of an earlier milestone it reads as its author stated it: verified."""
    status = kb.status_as_of(fact, as_of)
    if status != "stale" or as_of is None or fact.until not in kb.milestones:
        return status
    if kb.milestones[fact.until].index <= as_of.index:
        return status
    said_stale = any(
        h.status == "stale" and h.at in kb.milestones and kb.milestones[h.at].index <= as_of.index
        for h in fact.history
    )
    return status if said_stale else "verified"


def figure_text(value: Any, unit: str | None) -> str:
    """A benchmark figure as the seeds print it: thousands grouped (1,536 tok/s)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) >= 1000:
        text = (
            f"{value:,}" if isinstance(value, int) or not value.is_integer() else f"{int(value):,}"
        )
        return f"{text} {unit}" if unit else text
    return value_text(value, unit)


def make_item(
    kb: KnowledgeBase,
    fact: Fact,
    as_of: Milestone | None,
    results: dict[str, dict[str, dict[str, Any]]] | None,
) -> Item:
    """The template's view of one fact as of a milestone (results: latest.json, or None)."""
    status = effective_status(kb, fact, as_of)
    mark = None
    if results is not None and status != "refuted" and fact.id in results:
        mark = results_mark(results[fact.id], fact)
    if mark is None:
        mark = provenance_mark(kb, fact, status, as_of)
    note = ""
    if status == "refuted":
        replaced = fact.links.get("replaced_by") or []
        note = f"replaced by {', '.join(replaced)}" if replaced else ""
    return Item(
        id=fact.id,
        category=fact.category,
        title=one_line(fact.title),
        text=one_line(fact.statement),
        status=status,
        mark=mark,
        value=(figure_text if fact.category == "benchmarks" else value_text)(fact.value, fact.unit),
        refuted=status == "refuted",
        note=note,
        links=fact.links,
        extra=fact.extra,
        fact=fact,
    )
