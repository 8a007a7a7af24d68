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

LEAD = "(?=["  # how every pattern made here starts: the test finds them by it


def starting_with(first: str, pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`pattern` compiled behind `(?=[first])`: `first` is a class body (`abc\\d<`) holding
    every character a match of `pattern` can begin with."""
    return re.compile(f"{LEAD}{first}])(?:{pattern})", flags)
