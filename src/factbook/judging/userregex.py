"""Regular expressions someone else wrote, run with a time limit that really stops them.

A `regex` expectation against a value from a box, `--target ~REGEX` and redact.yaml's
`patterns` are written by whoever edits the knowledge base; Python's `re` cannot be
interrupted, and `(a|aa)+$` against 60 characters backtracks for minutes. They run on the
`regex` module instead (the same syntax and semantics as `re` in its default V0 mode), whose
matcher checks a deadline as it backtracks: a match that takes longer than MATCH_TIMEOUT_S
raises `RegexTimeout`, whoever catches it says which pattern. Lint also flags the shapes that
backtrack catastrophically (`nested_quantifier`), so they are fixed before they run.

The deadline covers matching only. Compiling is bounded before the `regex` module sees a
pattern (`check`, round 21): it unrolls every fixed repeat into its program (`a{10**8}` or
`(?:(?:a{1000}){1000}){1000}` took gigabytes and ended in a MemoryError or the OOM killer
during `factbook lint`), its parser and `re`'s recurse once per group (400 nested groups were
a RecursionError), and it reads syntax `re` does not: `{e}` after an item is fuzzy matching
there (`a{e}` matched any one character) while `re` and lint read a literal. A pattern is
therefore refused, with one line, unless Python's `re` compiles it, it is at most
PATTERN_MAX_CHARS long, nests at most GROUPS_MAX_DEPTH groups, unrolls to at most
UNROLLED_MAX items and holds no fuzzy constraint: what lint judges is what runs.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

# the stdlib's own pattern parser (sre_parse before 3.11): lint reads the pattern as `re` does
sre_parse: Any = getattr(re, "_parser", None) or __import__("sre_parse")

MATCH_TIMEOUT_S = 1.0  # one match; a sane pattern on 1 MiB of text takes milliseconds
PATTERN_MAX_CHARS = 10_000  # a hand-written pattern; the redaction of a fleet joins many
GROUPS_MAX_DEPTH = 50  # nested groups; `re` and `regex` recurse once per level
UNROLLED_MAX = 100_000  # items once repeats are unrolled: ~26 MB in the `regex` module


class PatternError(re.error):
    """A pattern that does not compile or is refused before compiling (`check`). An
    `re.error`, so callers that catch what `re.compile` raises catch this too."""


def __getattr__(name: str) -> Any:
    """`userregex.error`: what `compile_user` raises (kept for its callers' except clauses)."""
    if name == "error":
        return PatternError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class RegexTimeout(Exception):
    """A match ran past MATCH_TIMEOUT_S and was stopped."""

    def __init__(self, pattern: str, length: int):
        self.pattern = pattern
        super().__init__(
            f"regex {pattern[:80]!r} stopped after {MATCH_TIMEOUT_S:g} s on {length} characters "
            "(catastrophic backtracking: see `factbook lint`)"
        )


# a `{...}` that `re` reads as a literal but `regex` as a fuzzy constraint: `{e}`, `{e<=2}`,
# `{i<=1,d<=1}`, `{2i+2d+1s<=4}`, `{e<=1:[a-z]}`
_FUZZY = re.compile(r"[\s\d<>=+,]*[eisd][\s\deisd<>=+,]*(?::.*)?", re.S)
_QUANTIFIER = re.compile(r"\d*(?:,\d*)?")


def _scan(pattern: str) -> str | None:
    """Why the text of `pattern` is refused before any parser recurses into it: groups nested
    too deep, or a fuzzy constraint. Escapes and character classes are stepped over."""
    depth, i, n = 0, 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i += 2 if pattern.startswith("[^", i) else 1
            i += 1 if pattern.startswith("]", i) else 0  # a leading ] is a member
            while i < n and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
        elif char == "(":
            depth += 1
            if depth > GROUPS_MAX_DEPTH:
                return f"groups nested deeper than {GROUPS_MAX_DEPTH}"
        elif char == ")":
            depth = max(0, depth - 1)
        elif char == "{":
            end = pattern.find("}", i, i + 200)  # a fuzzy constraint is short
            body = pattern[i + 1 : end] if end > i else ""
            if body and not _QUANTIFIER.fullmatch(body) and _FUZZY.fullmatch(body):
                shown = body if len(body) <= 20 else body[:20] + "..."
                return (
                    f"{{{shown}}} is fuzzy matching to the regex engine that runs it, a literal "
                    "to Python's re; write a literal brace as \\{"
                )
        i += 1
    return None


def _unrolled(items: Any, budget: int) -> int:
    """How many items `items` becomes with every repeat's minimum count written out (the
    `regex` module's program size), counted until it passes `budget`."""
    total = 0
    for op, av in items:
        if op in _REPEATS and op is not None:
            total += max(1, av[0]) * _unrolled(av[2], budget)
        elif op is sre_parse.SUBPATTERN:
            total += _unrolled(av[-1], budget)
        elif op is sre_parse.BRANCH:
            total += sum(_unrolled(alt, budget) for alt in av[1])
        elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT):
            total += _unrolled(av[1], budget)
        elif op is getattr(sre_parse, "ATOMIC_GROUP", None):
            total += _unrolled(av, budget)
        elif op is sre_parse.GROUPREF_EXISTS:
            total += _unrolled(av[1], budget) + (_unrolled(av[2], budget) if av[2] else 0)
        else:
            total += 1
        if total > budget:
            return total
    return total


def check(pattern: str) -> None:
    """Raise PatternError when `pattern` is not compiled for a knowledge base: not one `re`
    compiles, or one whose compiling alone is unbounded (see the module's docstring)."""
    if len(pattern) > PATTERN_MAX_CHARS:
        raise PatternError(f"longer than {PATTERN_MAX_CHARS} characters ({len(pattern)})")
    why = _scan(pattern)
    if why:
        raise PatternError(why)
    try:
        re.compile(pattern)  # `re`'s syntax and its messages, the ones people know
        parsed = sre_parse.parse(pattern)
    except re.error as exc:
        raise PatternError(str(exc)) from None
    except (RecursionError, OverflowError, ValueError) as exc:
        raise PatternError(f"not compiled: {type(exc).__name__}") from None
    if _unrolled(parsed, UNROLLED_MAX) > UNROLLED_MAX:
        raise PatternError(
            f"its repeats unroll to more than {UNROLLED_MAX} items (a{{100000000}}, nested "
            "counts); the regex engine writes each one out in memory"
        )


@lru_cache(maxsize=512)
def compile_user(pattern: str, flags: int = 0) -> Any:
    """The compiled pattern, after `check` (PatternError when refused or not compiling)."""
    check(pattern)
    return compile_checked(pattern, flags)


def compile_checked(pattern: str, flags: int = 0) -> Any:
    """`pattern` compiled by the `regex` module as it is: only for one whose user-written
    parts each passed `check` (redaction joins them with escaped names of its own)."""
    import regex

    try:
        return regex.compile(pattern, flags | regex.VERSION0)
    except (regex.error, ValueError, RecursionError, MemoryError) as exc:
        raise PatternError(str(exc) or type(exc).__name__) from None


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
