"""A status dump that fits a token budget: the document, its token count, what was left out.

Tokens are counted with one rule, `ceil(characters / 4)` over the whole document (front
matter included), the rule of thumb for English and code under BPE tokenizers; the count is
written into the front matter. No tokenizer is loaded: the count must not depend on what is
installed, and a dump must cost the same on every machine.

selection.py ranks the facts and chooses which to show and how fully; this module lays the
chosen lines out in the seeds' section order (compact.py), measures the exact document, and
corrects the room it reserved for the list of facts left out until the document fits. Facts
left out are counted per category, with the handbook page they are on, and named by id, most
important first, while the names take at most NAMES_SHARE of the budget; the rest are counted.
Escaping and redaction run before measuring, so the budget holds for what is written.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factbook.dumps.status.compact import (
    COMPACT_MARKS,
    SECTIONS,
    Line,
    legend,
    place,
    render_group_line,
)
from factbook.dumps.status.context import StatusContext
from factbook.dumps.status.grouping import assign_topics
from factbook.dumps.status.quotes import use_quotes
from factbook.dumps.status.redact import document_redactor
from factbook.dumps.status.render import StatusOptions, prepare
from factbook.dumps.status.selection import RANKS, choose, line_information, rank_lines
from factbook.errors import UsageError
from factbook.handbook.safehtml import safe_markdown
from factbook.judging.sanitize import each_string, for_document
from factbook.knowledge.categories import CATEGORIES
from factbook.knowledge.kb import KnowledgeBase

TOKEN_RULE = "ceil(characters / 4)"
CHARS_PER_TOKEN = 4
NAMES_SHARE = 0.015  # of the budget, at most, for naming the facts left out
_CATEGORY_ORDER = {c.name: n for n, c in enumerate(CATEGORIES)}


def count_tokens(text: str) -> int:
    """The token rule: ceil(characters / 4), characters as Unicode code points."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass
class BudgetedDump:
    """A budgeted dump: its Markdown, the same selection as data, and its token count."""

    text: str
    data: dict[str, Any]
    tokens: int
    shown: list[Line] = field(default_factory=list)
    left_out: list[Line] = field(default_factory=list)

    def json(self) -> str:
        return json.dumps(self.data, indent=1, ensure_ascii=False) + "\n"


# --- the document ---------------------------------------------------------------------------


def _group_heading(section: str, group: str) -> str:
    return f"### {group}\n" if group and section in ("instructions", "discoveries", "files") else ""


def _section_heading(title: str) -> str:
    return f"\n## {title}\n"


def _rows(lines: list[Line], numbered: bool) -> list[str]:
    """A group's lines in document order: a fact of its own on its bullet, facts sharing a
    topic on one line where the first of them stands (grouping.py)."""
    topics: dict[str, list[Line]] = {}
    for ln in lines:
        if ln.topic:
            topics.setdefault(ln.topic, []).append(ln)
    rows: list[str] = []
    done: set[str] = set()
    for n, ln in enumerate(lines, start=1):
        if not ln.topic:
            rows.append(ln.render(n if numbered else None))
        elif ln.topic not in done:
            done.add(ln.topic)
            rows.append(render_group_line(topics[ln.topic]))
    return rows


def body_text(shown: list[Line]) -> str:
    """The sections and groups of the chosen lines, in the seeds' order."""
    parts: list[str] = []
    for key, title in SECTIONS:
        in_section = [ln for ln in shown if ln.section == key]
        if not in_section:
            continue
        parts.append(_section_heading(title))
        groups: dict[str, list[Line]] = {}
        for ln in in_section:
            groups.setdefault(ln.group, []).append(ln)
        for group, members in groups.items():
            parts.append("\n" + _group_heading(key, group))
            parts.append("\n".join(_rows(members, numbered=key == "next")) + "\n")
    return "".join(parts)


def _compress(ids: list[str]) -> list[str]:
    """`inv.log.{inference,training}` for ids sharing everything up to their last dot."""
    by_prefix: dict[str, list[str]] = {}
    for fid in ids:
        prefix, _, last = fid.rpartition(".")
        by_prefix.setdefault(prefix, []).append(last if prefix else fid)
    out = []
    for prefix, rest in by_prefix.items():
        if not prefix:
            out += rest
        elif len(rest) == 1:
            out.append(f"{prefix}.{rest[0]}")
        else:
            out.append(f"{prefix}.{{{','.join(rest)}}}")
    return out


def left_out_text(left_out: list[Line], cap: int) -> str:
    """The count of facts left out, per category with its handbook page, named by id while
    the names fit in `cap` characters (most important first), the rest counted."""
    if not left_out:
        return ""
    by_cat: dict[str, list[Line]] = {}
    for ln in left_out:
        by_cat.setdefault(ln.item.category, []).append(ln)
    lines = [f"{len(left_out)} more facts: handbook facts/CATEGORY.md#ID, `factbook show ID`:"]
    spent = 0
    unnamed: list[str] = []
    for category in sorted(by_cat, key=lambda c: _CATEGORY_ORDER.get(c, 99)):
        members = by_cat[category]
        names: list[str] = []
        for ln in members:  # what a name costs before compression: an upper bound
            if spent + len(ln.id) + 2 > cap:
                break
            names.append(ln.id)
            spent += len(ln.id) + 2
        if not names:  # counted only: all such categories share one line
            unnamed.append(f"{category} {len(members)}")
            continue
        more = len(members) - len(names)
        tail = f", +{more}" if more else ""
        lines.append(f"- {category} {len(members)}: {', '.join(_compress(names))}{tail}")
    if unnamed:
        lines.append(f"- unnamed: {', '.join(unnamed)}")
    return _section_heading("Not in this dump") + "\n".join(lines) + "\n"


def _front_matter(meta: dict[str, Any]) -> str:
    rows = [f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in meta.items()]
    return "---\n" + "\n".join(rows) + "\n---\n"


@dataclass
class _Frame:
    """What every rendering of one dump shares: the header's fields and the lines."""

    ctx: StatusContext
    budget: int
    lines: list[Line]  # most important first
    parents: dict[str, str]
    position: dict[str, int]  # document order
    finish: Callable[[str], str]  # escaping and redaction: the budget holds for the result

    def document(self, shown: list[Line], left_out: list[Line], cap: int) -> str:
        ctx = self.ctx
        title = ctx.title
        since = ctx.previous.id if ctx.previous else None
        moment = f"milestone {ctx.as_of.id}" if ctx.as_of else "now"
        meta: dict[str, Any] = {
            "title": title,
            "as_of": ctx.as_of.id if ctx.as_of else "now",
            "since": since,
            "budget_tokens": self.budget,
            "tokens": 0,
            "token_rule": TOKEN_RULE,
            "facts": {"known": len(self.lines), "shown": len(shown), "left_out": len(left_out)},
        }
        if ctx.as_of is None:
            meta["generated"] = ctx.generated
        used = {ln.item.mark.kind for ln in shown}
        intro = (
            f"# {title}\n\n> Made by `factbook status` for {moment}; nothing learned later. Marks: "
            f"{legend(since if any(ln.new for ln in shown) else None, used)}.\n"
        )
        body = body_text(shown) + left_out_text(left_out, cap)
        for _ in range(3):  # the count is part of what it counts
            text = self.finish(_front_matter(meta) + intro + body)
            tokens = count_tokens(text)
            if tokens == meta["tokens"]:
                break
            meta["tokens"] = tokens
        return text


def fit(frame: _Frame) -> tuple[str, list[Line], list[Line]]:
    """The fullest document within the budget: choose with room reserved for the list of
    facts left out (at first its upper bound: every fact left out), render exactly, then
    correct the room by what the document really took (a few rounds at most)."""
    chars = frame.budget * CHARS_PER_TOKEN
    cap = int(chars * NAMES_SHARE)
    fixed = len(frame.document([], [], 0))
    room = chars - fixed - len(left_out_text(frame.lines, cap))
    info = line_information(frame.lines)
    best: tuple[str, dict[str, bool]] | None = None
    empty = 0  # the document showing nothing, measured once it is needed
    for attempt in range(8):
        picked = choose(frame.lines, room, info)
        text = frame.document(*_apply(frame, picked), cap)
        slack = chars - len(text)
        if slack >= 0 and (best is None or len(text) > len(best[0])):
            best = (text, picked)
        if 0 <= slack <= max(16, chars // 100) or (best is not None and attempt >= 3):
            break
        if room <= 0:
            break
        # over: give back the excess and a margin that grows, since a new choice of lines
        # may overshoot again; under: take most of what is left
        if not empty:
            empty = len(frame.document([], frame.lines, cap))
        growth = _growth(len(text) - empty, room)
        room += int((slack - attempt * chars // 100 if slack < 0 else slack * 9 // 10) / growth)
        room = max(room, 0)
    if best is None:
        minimum = count_tokens(frame.document([], frame.lines, cap))
        raise UsageError(
            f"--budget {frame.budget} is too small for this dump: its header and the list of "
            f"facts left out alone take about {minimum} tokens"
        )
    text, picked = best
    shown, left = _apply(frame, picked)
    return text, shown, left


def _growth(grew: int, room: int) -> float:
    """How many characters of the document each character of `room` became, at least 1.
    Redaction can make text longer (a one-letter host becomes `host-1`): correcting the room
    one for one then overshot by that factor each round, diverged, and a 800-token budget
    showed no fact at all where 20 fitted."""
    return max(1.0, grew / room) if room > 0 else 1.0


def _apply(frame: _Frame, picked: dict[str, bool]) -> tuple[list[Line], list[Line]]:
    """Mark the picked lines shown (full or brief); (shown in document order, left out in
    rank order)."""
    for ln in frame.lines:
        ln.shown = ln.id in picked
        ln.use_full = picked.get(ln.id, False)
    shown = sorted((ln for ln in frame.lines if ln.shown), key=lambda ln: frame.position[ln.id])
    return shown, [ln for ln in frame.lines if not ln.shown]


# --- entry point ----------------------------------------------------------------------------


def _data(frame: _Frame, text: str, shown: list[Line], left: list[Line]) -> dict[str, Any]:
    """The same selection as data: every shown line with its rank, every left-out id."""
    ctx = frame.ctx
    sections = []
    for key, title in SECTIONS:
        members = [ln for ln in shown if ln.section == key]
        if not members:
            continue
        groups: dict[str, list[dict[str, Any]]] = {}
        for ln in members:
            groups.setdefault(ln.group, []).append(
                {
                    "id": ln.id,
                    "category": ln.item.category,
                    "mark": ln.mark,
                    "status": ln.item.mark.kind,
                    "new": ln.new,
                    "text": ln.text,
                    "size": "full" if ln.use_full else "brief",
                    "line": ln.topic,
                    "rank": ln.rank,
                    "reason": ln.reason,
                    **({"under": frame.parents[ln.id]} if ln.id in frame.parents else {}),
                }
            )
        sections.append(
            {
                "key": key,
                "title": title,
                "groups": [{"title": g, "lines": rows} for g, rows in groups.items()],
            }
        )
    by_cat: dict[str, list[str]] = {}
    for ln in left:
        by_cat.setdefault(ln.item.category, []).append(ln.id)
    return {
        "title": ctx.title,
        "as_of": ctx.as_of.id if ctx.as_of else None,
        "since": ctx.previous.id if ctx.previous else None,
        "budget_tokens": frame.budget,
        "tokens": count_tokens(text),
        "token_rule": TOKEN_RULE,
        "legend": {mark: kind for kind, mark in COMPACT_MARKS.items()},
        "ranks": {str(k): v for k, v in RANKS.items()},
        "sections": sections,
        "left_out": {
            "count": len(left),
            "by_category": [
                {"category": c, "count": len(ids), "page": f"facts/{c}.md", "ids": ids}
                for c, ids in sorted(by_cat.items(), key=lambda p: _CATEGORY_ORDER.get(p[0], 99))
            ],
        },
    }


def budget_path(path: Path, budget: int) -> Path:
    """docs/status/status-4504.md → status-4504-budget-2300.md (`-redacted` stays last)."""
    stem = path.stem
    suffix = "-redacted" if stem.endswith("-redacted") else ""
    stem = stem[: len(stem) - len(suffix)]
    return path.with_name(f"{stem}-budget-{budget}{suffix}{path.suffix}")


def render_budgeted(
    kb: KnowledgeBase, options: StatusOptions, budget: int, *, now: dt.datetime | None = None
) -> BudgetedDump:
    """The dump for `options` within `budget` tokens (redacted when asked: the budget holds
    for the redacted text)."""
    if budget < 1:
        raise UsageError(f"--budget must be a positive number of tokens, not {budget}")
    ctx = prepare(kb, options, now=now)
    placed = place(ctx, live=ctx.uses_results)
    use_quotes(kb, placed.lines, ctx.as_of)
    assign_topics(placed.lines, placed.parents, ids=options.ids)
    position = {ln.id: n for n, ln in enumerate(placed.lines)}
    ranked = rank_lines(kb, placed.lines, ctx)
    redact = document_redactor(kb, redact=options.redact, hide_secrets=options.hide_secrets)

    def finish(text: str) -> str:
        text = safe_markdown(for_document(text))
        return redact(text) if redact is not None else text

    frame = _Frame(ctx, budget, ranked, placed.parents, position, finish)
    text, shown, left = fit(frame)
    data = each_string(_data(frame, text, shown, left), for_document)
    if redact is not None:
        data = each_string(data, redact)
    return BudgetedDump(text, data, count_tokens(text), shown, left)
