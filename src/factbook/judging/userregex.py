"""Regular expressions someone else wrote, run with a time limit that really stops them.

A `regex` expectation against a value from a box, `--target ~REGEX` and redact.yaml's
`patterns` are written by whoever edits the knowledge base; Python's `re` cannot be
interrupted, and `(a|aa)+$` against 60 characters backtracks for minutes. They run on the
`regex` module instead (the same syntax and semantics as `re` in its default V0 mode), whose
matcher checks a deadline as it backtracks: a match that takes longer than MATCH_TIMEOUT_S
raises `RegexTimeout`, whoever catches it says which pattern. Lint also flags the shapes that
backtrack catastrophically (`nested_quantifier`), so they are fixed before they run.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

# the stdlib's own pattern parser (sre_parse before 3.11): lint reads the pattern as `re` does
sre_parse: Any = getattr(re, "_parser", None) or __import__("sre_parse")

MATCH_TIMEOUT_S = 1.0  # one match; a sane pattern on 1 MiB of text takes milliseconds


def __getattr__(name: str) -> Any:
    """`userregex.error` is regex.error: the `regex` module (~10 ms) is imported on first use,
    not by every run that merely could judge a regex."""
    if name == "error":
        import regex

        return regex.error
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class RegexTimeout(Exception):
    """A match ran past MATCH_TIMEOUT_S and was stopped."""

    def __init__(self, pattern: str, length: int):
        self.pattern = pattern
        super().__init__(
            f"regex {pattern[:80]!r} stopped after {MATCH_TIMEOUT_S:g} s on {length} characters "
            "(catastrophic backtracking: see `factbook lint`)"
        )


@lru_cache(maxsize=512)
def compile_user(pattern: str, flags: int = 0) -> Any:
    """The compiled pattern (regex.error when it does not compile)."""
    import regex

    return regex.compile(pattern, flags | regex.VERSION0)


def search(pattern: str | Any, text: str, *, timeout: float | None = None) -> Any:
    """`re.search` with a deadline; RegexTimeout when it runs past it."""
    compiled = compile_user(pattern) if isinstance(pattern, str) else pattern
    try:
        return compiled.search(text, timeout=timeout or MATCH_TIMEOUT_S)
    except TimeoutError:
        raise RegexTimeout(compiled.pattern, len(text)) from None


def sub(compiled: Any, repl: Any, text: str, *, timeout: float | None = None) -> str:
    """`Pattern.sub` with one deadline for the whole substitution."""
    try:
        return str(compiled.sub(repl, text, timeout=timeout or MATCH_TIMEOUT_S))
    except TimeoutError:
        raise RegexTimeout(compiled.pattern, len(text)) from None


# --- lint: shapes that backtrack exponentially --------------------------------------------

_REPEATS = (
    sre_parse.MAX_REPEAT,
    sre_parse.MIN_REPEAT,
    getattr(sre_parse, "POSSESSIVE_REPEAT", None),
)
_ANY = object()
# what \d, \s, \w can match, ASCII part: enough to tell them from a delimiter like . , - :
_CATEGORIES = {
    sre_parse.CATEGORY_DIGIT: {ord(c) for c in "0123456789"},
    sre_parse.CATEGORY_SPACE: {ord(c) for c in " \t\n\r\f\v"},
    sre_parse.CATEGORY_WORD: {
        ord(c) for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
    }
    | set(range(0xC0, 0x2000)),
}


def nested_quantifier(pattern: str) -> str | None:
    """Why `pattern` can backtrack exponentially, or None.

    Flags a repeated group (`+`, `*`, `{n,}`, `{n,m}` with m > 1) whose body has a part of
    variable length (`a+`, `a?`, `(|a)`) and nothing fixed that tells one iteration from the
    next: `(a+)+`, `(\\w+\\s?)*`, `(.*a){12}`, `(a|aa)+` (which Python reads as `a(|a)`).
    `[a-z]+(\\.[a-z]+)*` passes: every iteration starts with a `.` its repeat cannot match.
    Each input can otherwise be split among the iterations in exponentially many ways, and a
    failing match tries them all.
    """
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None  # `regex` may still accept it; the match time limit covers it
    return _walk(list(parsed))


def _walk(items: list[Any]) -> str | None:
    for op, av in items:
        if op in _REPEATS and op is not None:
            high, body = av[1], _flatten(list(av[2]))
            if (high is sre_parse.MAXREPEAT or high > 1) and _ambiguous(body):
                return (
                    "nested quantifiers: a repeated group whose iterations can split the "
                    "same text in many ways (like (a+)+ or (a|aa)+); it can run for minutes"
                )
            found = _walk(list(av[2]))
        elif op is sre_parse.SUBPATTERN:
            found = _walk(list(av[-1]))
        elif op is sre_parse.BRANCH:
            found = next((f for alt in av[1] if (f := _walk(list(alt)))), None)
        elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT):
            found = _walk(list(av[1]))
        else:
            found = None
        if found:
            return found
    return None


def _flatten(items: list[Any]) -> list[Any]:
    """A group's items with plain (non-capturing or capturing) subgroups spliced in."""
    out: list[Any] = []
    for op, av in items:
        if op is sre_parse.SUBPATTERN:
            out += _flatten(list(av[-1]))
        else:
            out.append((op, av))
    return out


def _variable(op: Any, av: Any) -> bool:
    if op in _REPEATS and op is not None:
        return bool(av[0] != av[1])
    if op is sre_parse.BRANCH:
        return any(not alt for alt in av[1]) or len({_width(list(a)) for a in av[1]}) > 1
    return False


def _width(items: list[Any]) -> int | None:
    lo, hi = sre_parse.SubPattern(sre_parse.State(), items).getwidth()
    return lo if lo == hi else None


def _ambiguous(body: list[Any]) -> bool:
    """Alternatives that can match the same text, or a variable-length part and no fixed
    part whose characters it cannot match."""
    if any(op is sre_parse.BRANCH and _overlapping(av[1]) for op, av in body):
        return True
    variable = [(op, av) for op, av in body if _variable(op, av)]
    if not variable:
        return False
    moving: Any = set()
    for op, av in variable:
        chars = _chars(op, av)
        if chars is _ANY:
            moving = _ANY
            break
        moving |= chars
    for op, av in body:
        if _variable(op, av) or op in (sre_parse.AT,):
            continue
        chars = _chars(op, av)
        if moving is not _ANY and chars is not _ANY and not (chars & moving):
            return False  # a delimiter: each iteration starts or ends at one
    return True


def _overlapping(alternatives: list[Any]) -> bool:
    """Two alternatives that can begin alike (both empty, or a shared first character)."""
    firsts = [_chars(*next(iter(alt))) if len(alt) else None for alt in alternatives]
    for i, a in enumerate(firsts):
        for b in firsts[i + 1 :]:
            if a is None or b is None:
                if a is None and b is None:
                    return True
                continue
            if a is _ANY or b is _ANY or (a & b):
                return True
    return False


def _chars(op: Any, av: Any) -> Any:
    """The characters an item can match: a set of code points, or _ANY."""
    if op is sre_parse.LITERAL:
        return {av}
    if op is sre_parse.IN:
        chars: set[int] = set()
        for kind, value in av:
            if kind is sre_parse.LITERAL:
                chars.add(value)
            elif kind is sre_parse.RANGE and value[1] - value[0] < 4096:
                chars.update(range(value[0], value[1] + 1))
            elif kind is sre_parse.CATEGORY and value in _CATEGORIES:
                chars |= _CATEGORIES[value]
            else:
                return _ANY  # a category, a negation, a wide range: assume overlap
        return chars
    if op in _REPEATS and op is not None:
        return _union(list(av[2]))
    if op is sre_parse.SUBPATTERN:
        return _union(list(av[-1]))
    if op is sre_parse.BRANCH:
        out: Any = set()
        for alt in av[1]:
            found = _union(list(alt))
            if found is _ANY:
                return _ANY
            out |= found
        return out
    return _ANY


def _union(items: list[Any]) -> Any:
    out: Any = set()
    for op, av in items:
        found = _chars(op, av)
        if found is _ANY:
            return _ANY
        out |= found
    return out
