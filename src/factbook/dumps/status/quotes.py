"""A fact's brief line in the words of the dump it came from, where those are denser.

A fact's title paraphrases what a status dump said (`Experts per token: 8`); its sources quote
the dump's own words (`384 routed experts top-8`, `2 sockets, 32 cores each`,
`draft_vocab_size=32000`), which is what a reader at the next hand-over searches for and what
the hand-written dumps fit into a few thousand tokens. So a budgeted dump's brief line is the
quote that carries the most names and numbers per character (the shorter on a tie),
provided it states the value, is not a
table row cut from its header, and was known at the dump's moment (a quote from a later
message would leak what was learned after it). Facts without quotes keep their titles.
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


def _clean(quote: str) -> str:
    text = one_line(quote).strip(_TRIM)
    while len(text) > 2 and text[0] + text[-1] in ("()", "[]", '""', "''"):
        text = text[1:-1].strip(_TRIM)
    for left, right in ("()", "[]", "{}"):
        if text.count(left) != text.count(right):
            return ""  # a fragment cut inside brackets reads as a broken line
    return text


def _states(value: Any, text: str) -> bool:
    """Whether `text` states a scalar value (numbers with or without thousands commas)."""
    if value is None or isinstance(value, (bool, dict, list)):
        return True
    plain = _DIGITS.sub("", text).lower()
    forms = {str(value).lower()}
    if isinstance(value, float) and value.is_integer():
        forms.add(str(int(value)))
    return any(f in plain for f in forms)


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
        for source in fact.sources:
            if not source.quote or not kb.source_known(source, as_of):
                continue
            quote = md(_clean(source.quote))
            if not 4 <= len(quote) <= MAX_QUOTE or not _states(fact.value, quote):
                continue
            if _TABLE_ROW.match(quote):
                continue  # a table's row without its header says nothing on its own
            if _preference(quote) > key:
                best, key = quote, _preference(quote)
        ln.brief = best


def _preference(text: str) -> tuple[float, int]:
    """Which wording a brief line takes: the most names and numbers per character, then the
    shorter."""
    return (_worth(text), -len(text))
