"""The quick scans a writer runs over every text it is about to write (yamlsrc): each is
compared with the pattern it replaces on random texts, and the long-number scan with what
the reader itself refuses.

`may_hide` (may a string of this text hold a hidden character?) was one pattern searched
from every character; `_may_hold_long_digits` (may it hold an integer no float holds?) a
pattern tried at every digit and letter a-f. At an import's 10 MB of fact files the two
were 0.2 s of its wall time.
"""

from __future__ import annotations

import random
import re

import pytest

from factbook.errors import INVISIBLE_CHARS
from factbook.knowledge.yamlsrc import (
    _LONG_DIGITS,
    _may_hold_long_digits,
    may_hide,
    parse_located,
    unreadable_if_written,
)

# the pattern may_hide searched with before, and the invisible characters (round 21): the oracle
MAY_HIDE = re.compile(
    r"\\[0abvfreNLPxuU]|[\r\x85\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    + INVISIBLE_CHARS
    + "]"
)
HIDING = (
    "\r\x85\u061c\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    "\u200b\u200d\u2060\ufeff\u00ad\U000e0041"
)
PIECES = ["a", "b", " ", "\n", "\\", "\\n", "\\d", "\\x", "é", "—", "\u200a", "\u202f", "\u2070"]


def test_may_hide_answers_as_the_one_pattern_did() -> None:
    rng = random.Random(25)
    for _ in range(20_000):
        parts = rng.choices(PIECES + list(HIDING) + ["\\" + c for c in "0abvfreNLPxuUtz"], k=8)
        text = "".join(rng.choice((parts, parts[:3], ["plain text", *parts[:1]])))
        start = rng.randrange(len(text) + 1)
        assert may_hide(text, start) == (MAY_HIDE.search(text, start) is not None), (text, start)


@pytest.mark.parametrize("character", list(HIDING))
def test_each_hiding_character_is_found_in_long_texts(character: str) -> None:
    plain = "x: a plain line of a fact file\n" * 1000
    assert not may_hide(plain)
    assert may_hide(plain + character)
    assert not may_hide(character + plain, 1)  # only what follows `start`
    assert may_hide("é" + plain + character)


def test_long_digit_scan_answers_as_the_pattern_does() -> None:
    rng = random.Random(7)
    runs = ["0" * 255, "f" * 256, "9_" * 128, ":5" * 130, "1" * 127, "a" * 129, "x", " ", "\n"]
    for _ in range(5_000):
        text = "".join(rng.choices(runs, k=rng.randrange(1, 6)))[rng.randrange(200) :]
        found = _LONG_DIGITS.search(text) is not None
        assert not found or _may_hold_long_digits(text), text  # never misses one
        if found:
            continue
        # without a run of 256, a hit must at least be a whole window of 128
        assert not _may_hold_long_digits(text) or re.search("[0-9a-fA-F_:]{128}", text)


@pytest.mark.parametrize(
    "number",
    ["9" * 400, "0x" + "f" * 300, "0x" + "f_" * 300 + "f", "0" + "7" * 400, "1" + ":59" * 200],
    ids=["decimal", "hex", "hex with underscores", "octal (YAML 1.1: a leading 0)", "base 60"],
)
def test_a_writer_refuses_every_integer_form_the_reader_refuses(number: str) -> None:
    text = "# a fact file\nfacts:\n  - id: x\n    value: " + number + "\n"
    _, problems = parse_located(text, "facts/x.yaml")
    assert any("limit of a number" in p.message for p in problems)  # what the reader says
    refused = unreadable_if_written(text, "facts/x.yaml")
    assert refused is not None and "limit of a number" in refused.message
    assert refused.line == 4
    quoted = text.replace(number, f"'{number}'")  # a string of digits is no number
    assert unreadable_if_written(quoted, "facts/x.yaml") is None
