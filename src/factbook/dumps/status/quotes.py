"""A fact's brief line in the words of the dump it came from, where those are denser.

A fact's title paraphrases what a status dump said (`Experts per token: 8`); its sources quote
the dump's own words (`384 routed experts top-8`, `2 sockets, 32 cores each`,
`draft_vocab_size=32000`), which is what a reader at the next hand-over searches for and what
the hand-written dumps fit into a few thousand tokens. So a budgeted dump's brief line is the
quote that carries the most names and numbers per character (the shorter on a tie),
provided it states the value (half the numbers and words of a mapping or list), is not a
table row cut from its header nor a clause cut from its subject (`vs 25 min in vLLM!`), and
was known at the dump's moment (a quote from a later
message would leak what was learned after it). Facts without quotes keep their titles. Where
the title's form cannot say the fact, a quote that can wins whatever its density: a
comparison that would give one side only (`Kimi-K2.5 vs DeepSeek V3 vocab: 163840`; the quote
must compare too), a mapping or list that would read as `total_m=2594.7, trainable_m=...`.
"""

from __future__ import annotations

import re
from typing import Any

from factbook.dumps.status.compact import Line
from factbook.dumps.status.items import one_line
from factbook.dumps.status.render import md
from factbook.dumps.status.selection import information
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.model import Milestone

MAX_QUOTE = 140  # characters: longer quotes are sentences, the full line's job
QUOTED_KINDS = ("hardware", "software", "model", "tokenizer", "benchmarks", "training")
_TRIM = " \t.,;:-—–"
_DIGITS = re.compile(r"(?<=\d),(?=\d{3})")
_TABLE_ROW = re.compile(r"^\|.*\|$")
_CONNECTIVE = re.compile(
    r"(?:vs\.?|versus|than|compared|and|or|but|with|which|while|so|because|plus)\b", re.I
)
_COMPARISON = re.compile(r"\b(?:vs\.?|versus|compared (?:to|with))(?=\s)", re.I)


def _clean(quote: str) -> str:
    text = one_line(quote).strip(_TRIM)
    while len(text) > 2 and text[0] + text[-1] in ("()", "[]", '""', "''"):
        text = text[1:-1].strip(_TRIM)
    for left, right in ("()", "[]", "{}"):
        if text.count(left) != text.count(right):
            return ""  # a fragment cut inside brackets reads as a broken line
    return text


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _scalars(v)]
    if isinstance(value, list):
        return [x for v in value for x in _scalars(v)]
    return [] if value is None or isinstance(value, bool) else [value]


def _says(value: Any, plain: str) -> bool:
    forms = {str(value).lower()}
    if isinstance(value, float) and value.is_integer():
        forms.add(str(int(value)))
    return any(f in plain for f in forms)


def _states(value: Any, text: str) -> bool:
    """Whether `text` states the value (numbers with or without thousands commas); a mapping
    or list: at least half of its numbers and words."""
    plain = _DIGITS.sub("", text).lower()
    if isinstance(value, (dict, list)):
        parts = _scalars(value)
        return not parts or 2 * sum(_says(p, plain) for p in parts) >= len(parts)
    if value is None or isinstance(value, bool):
        return True
    return _says(value, plain)


def _fragment(quote: str) -> bool:
    """A quote that starts mid-sentence (`vs 25 min in vLLM!`) lost its subject: it reads
    as a fragment on a line of its own."""
    return bool(_CONNECTIVE.match(quote))


def _compares(text: str) -> bool:
    return bool(_COMPARISON.search(text))


def _worth(text: str) -> float:
    found = information(text)
    return sum(found.values()) / max(len(text), 1)


def use_quotes(kb: KnowledgeBase, lines: list[Line], as_of: Milestone | None) -> None:
    """Give each line of a fact in QUOTED_KINDS the denser brief form described above."""
    for ln in lines:
        fact = ln.item.fact
        if fact is None or ln.item.category not in QUOTED_KINDS or ln.item.refuted:
            continue
        best, key = ln.brief, _preference(ln.brief)
        # Where the title's own form cannot say the fact, any quote that can goes first:
        # a comparison with one side (`A vs B vocab: 163840`), or a mapping or list written
        # as `total_m=2594.7, ...` when the dump's own words state it.
        one_sided = _compares(ln.item.title) and not isinstance(fact.value, (dict, list))
        structured = isinstance(fact.value, (dict, list)) and bool(_scalars(fact.value))
        if one_sided or structured:
            key = (-1.0, 0)
        for source in fact.sources:
            if not source.quote or not kb.source_known(source, as_of):
                continue
            quote = md(_clean(source.quote))
            if not 4 <= len(quote) <= MAX_QUOTE or not _states(fact.value, quote):
                continue
            if _TABLE_ROW.match(quote) or quote.count(" | ") >= 2 or _fragment(quote):
                continue  # a table's row without its header, a clause without its subject
            if one_sided and not _compares(quote):
                continue
            if _preference(quote) > key:
                best, key = quote, _preference(quote)
        ln.brief = best


def _preference(text: str) -> tuple[float, int]:
    """Which wording a brief line takes: the most names and numbers per character, then the
    shorter."""
    return (_worth(text), -len(text))
