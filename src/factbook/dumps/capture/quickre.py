"""Word patterns that skip, in C, the places of a line where no match can begin.

Python's `re` tries every alternative of a pattern like `\\b(?:crash|hangs?|...)\\b` at every
position of the text (a leading `\\b`, or IGNORECASE, keeps it from scanning for a first
character), and an import asks a dozen such patterns of every item: 5-40 us each on a dump's
line, a fifth of the import of a dump of short items. `starting_with` puts a lookahead of the
characters a match can begin with in front, so the engine skips the other positions in one
class test each: the same matches, in 0.3-0.7 of the time. Under IGNORECASE the class folds
case as the pattern does (`[s]` also matches `S` and `ſ`), so it is never narrower than the
pattern; tests/test_capture_patterns.py derives each pattern's first characters from its
parse and compares the matches on the seeds and the bench dumps.
"""

from __future__ import annotations

import re
from typing import Any

LEAD = "(?=["  # how every pattern made here starts: the test finds them by it


def starting_with(first: str, pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`pattern` compiled behind `(?=[first])`: `first` is a class body (`abc\\d<`) holding
    every character a match of `pattern` can begin with."""
    return re.compile(f"{LEAD}{first}])(?:{pattern})", flags)


# the stdlib's own pattern parser (sre_parse before 3.11): the words are read as `re` reads them
_sre: Any = getattr(re, "_parser", None) or __import__("sre_parse")
_MIN_WORD = 2  # a shorter ASCII word passes most texts: no use as a filter (`✅` is one)


def needed_words(pattern: str) -> frozenset[str] | None:
    """Words of which every match of `pattern` (without flags) holds one, read from its
    parse: a run of literal characters the match cannot skip, or for a choice the words of
    each of its branches. None where it has none worth searching for (a branch with no
    such word, a class where a word would be)."""
    parsed = _sre.parse(pattern)
    return None if parsed.state.flags & re.IGNORECASE else _needed(parsed)


def any_word(patterns: list[str]) -> re.Pattern[str] | None:
    """One search for the needed words of all `patterns`: where it finds none, none of them
    matches (a literal alternation `re` scans far faster than the patterns' own). None when
    a pattern has no needed words."""
    words: set[str] = set()
    for pattern in patterns:
        found = needed_words(pattern)
        if found is None:
            return None
        words |= found
    return re.compile("|".join(re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w))))


def _needed(items: Any) -> frozenset[str] | None:
    """The best choice of needed words of a sequence: its longest run of literals, or a
    required group's words when their shortest is longer."""
    best: frozenset[str] | None = None
    run: list[str] = []

    def better(words: frozenset[str] | None) -> None:
        nonlocal best
        worth = min(map(_worth, words)) if words else 0
        if worth >= _MIN_WORD and (best is None or worth > min(map(_worth, best))):
            best = words

    for op, av in items:
        if op is _sre.LITERAL:
            run.append(chr(av))
            continue
        better(frozenset(["".join(run)]) if run else None)
        run = []
        if op in (_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT):
            continue  # no characters: `\\b`, `^`, a lookaround (outside the match)
        if op is _sre.SUBPATTERN:
            if not av[1] & re.IGNORECASE:  # `(?i:...)`: its literals match other cases too
                better(_needed(av[-1]))
        elif op is _sre.BRANCH:
            branches = [_needed(branch) for branch in av[1]]
            if all(branches):
                better(frozenset().union(*branches))  # type: ignore[arg-type]
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and av[0] >= 1:
            better(_needed(av[2]))
    better(frozenset(["".join(run)]) if run else None)
    return best


def _worth(word: str) -> int:
    """How well a needed word filters: its length, a character outside ASCII counting as two."""
    return len(word) + sum(1 for c in word if ord(c) > 127)
