"""Expectations: what an observed value must satisfy, checked structurally before any run.

An expectation is a mapping with an optional `path` into the observed value and exactly one
operator. `problems_in()` validates one (regexes compile, specifiers parse) for lint;
`evaluate()` returns whether it holds and a one-line reason showing expected vs observed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from .versions import judge, parse_specifier

OPERATORS = [
    *("eq", "ne", "gt", "ge", "lt", "le", "between", "approx", "contains", "regex"),
    *("one_of", "exists", "length", "version", "each", "all", "any", "not"),
]


@dataclass(frozen=True)
class Outcome:
    """Whether an expectation held, and why (expected vs observed)."""

    passed: bool
    reason: str


class PathMissing(LookupError):
    """The `path` does not exist in the observed value."""


_PATH_PART = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")


def get_path(value: Any, path: str) -> Any:
    """Follow `a.b[0].c` into nested dicts and lists."""
    current = value
    for name, index in _PATH_PART.findall(path):
        try:
            if index:
                current = current[int(index)]
            elif isinstance(current, dict):
                current = current[name]
            elif isinstance(current, list) and name.lstrip("-").isdigit():
                current = current[int(name)]
            else:
                raise PathMissing(f"path {path!r}: no key {name!r} in {_short(current)}")
        except (KeyError, IndexError, TypeError) as exc:
            raise PathMissing(f"path {path!r}: {name or index!r} not found") from exc
    return current


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def problems_in(expect: Any, where: str = "expect") -> list[str]:
    """Structural problems of an expectation, as messages (empty when valid)."""
    if not isinstance(expect, dict):
        return [f"{where}: expected a mapping with one operator, got {type(expect).__name__}"]
    ops = [k for k in expect if k != "path"]
    unknown = [k for k in ops if k not in OPERATORS]
    if unknown:
        return [f"{where}: unknown operator '{unknown[0]}' (known: {', '.join(OPERATORS)})"]
    if len(ops) != 1:
        return [f"{where}: needs exactly one operator, found {len(ops)}"]
    if "path" in expect and not isinstance(expect["path"], str):
        return [f"{where}.path: expected a string"]
    op = ops[0]
    arg = expect[op]
    sub = f"{where}.{op}"
    if op in ("gt", "ge", "lt", "le") and not _is_number(arg):
        return [f"{sub}: expected a number, got {arg!r}"]
    if op == "between" and not (
        isinstance(arg, list) and len(arg) == 2 and all(_is_number(a) for a in arg)
    ):
        return [f"{sub}: expected [low, high] numbers"]
    if op == "approx":
        if not isinstance(arg, dict) or not _is_number(arg.get("value")):
            return [f"{sub}: expected {{value: number, rel: number}} or {{value, abs}}"]
        extra = set(arg) - {"value", "rel", "abs"}
        if extra or not any(k in arg for k in ("rel", "abs")):
            return [f"{sub}: keys are value and rel or abs"]
    if op == "regex":
        try:
            re.compile(str(arg))
        except re.error as exc:
            return [f"{sub}: invalid regex {arg!r}: {exc}"]
    if op == "one_of" and not isinstance(arg, list):
        return [f"{sub}: expected a list"]
    if op == "exists" and not isinstance(arg, bool):
        return [f"{sub}: expected true or false"]
    if op == "version":
        try:
            parse_specifier(str(arg))
        except ValueError as exc:
            return [f"{sub}: {exc}"]
    if op == "length":
        if isinstance(arg, int) and not isinstance(arg, bool):
            return []
        return problems_in(arg, sub)
    if op in ("each", "not"):
        return problems_in(arg, sub)
    if op in ("all", "any"):
        if not isinstance(arg, list) or not arg:
            return [f"{sub}: expected a non-empty list of expectations"]
        return [m for i, e in enumerate(arg) for m in problems_in(e, f"{sub}[{i}]")]
    return []


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _num(value: Any) -> float:
    if _is_number(value):
        return float(value)
    return float(str(value).strip())


def _equal(observed: Any, expected: Any) -> bool:
    if _is_number(expected) and not _is_number(observed):
        try:
            return math.isclose(_num(observed), expected, rel_tol=0, abs_tol=0)
        except (TypeError, ValueError):
            return False
    if isinstance(expected, str) and _is_number(observed):
        return str(observed) == expected
    return observed == expected


def evaluate(expect: dict[str, Any], observed: Any) -> Outcome:
    """Check `observed` against an expectation already validated by `problems_in`."""
    try:
        value = get_path(observed, expect["path"]) if "path" in expect else observed
    except PathMissing as exc:
        return Outcome(False, str(exc))
    op = next(k for k in expect if k != "path")
    arg = expect[op]
    where = f" at {expect['path']}" if "path" in expect else ""
    if op == "version":
        return _version_outcome(str(arg), value, where)
    try:
        passed = _apply(op, arg, value)
    except (TypeError, ValueError) as exc:
        return Outcome(False, f"{op} {_short(arg)}: cannot compare {_short(value)}: {exc}")
    if isinstance(passed, Outcome):
        return passed
    verdict = "ok" if passed else "expected"
    return Outcome(passed, f"{verdict} {op} {_short(arg)}, observed{where} {_short(value)}")


def _version_outcome(spec: str, value: Any, where: str) -> Outcome:
    """A version verdict names the scheme that judged it (PEP 440 or loose)."""
    try:
        verdict = judge(str(value), spec)
    except ValueError as exc:
        return Outcome(False, f"version {_short(spec)}: cannot compare {_short(value)}: {exc}")
    word = "ok" if verdict.passed else "expected"
    return Outcome(
        verdict.passed,
        f"{word} version {_short(spec)} ({verdict.scheme}), observed{where} {_short(value)}",
    )


def _apply(op: str, arg: Any, value: Any) -> bool | Outcome:
    if op == "eq":
        return _equal(value, arg)
    if op == "ne":
        return not _equal(value, arg)
    if op in ("gt", "ge", "lt", "le"):
        v = _num(value)
        return {"gt": v > arg, "ge": v >= arg, "lt": v < arg, "le": v <= arg}[op]
    if op == "between":
        return arg[0] <= _num(value) <= arg[1]
    if op == "approx":
        v, want = _num(value), float(arg["value"])
        return math.isclose(v, want, rel_tol=arg.get("rel", 0.0), abs_tol=arg.get("abs", 0.0))
    if op == "contains":
        if isinstance(value, str):
            return str(arg) in value
        if isinstance(value, dict):
            return arg in value
        return any(_equal(v, arg) for v in value)
    if op == "regex":
        return re.search(str(arg), str(value)) is not None
    if op == "one_of":
        return any(_equal(value, a) for a in arg)
    if op == "exists":
        return (value is not None) == arg
    if op == "length":
        size = len(value)
        if isinstance(arg, int):
            return size == arg
        inner = evaluate(arg, size)
        return Outcome(inner.passed, f"length: {inner.reason}")
    if op == "each":
        for i, item in enumerate(value):
            inner = evaluate(arg, item)
            if not inner.passed:
                return Outcome(False, f"element [{i}]: {inner.reason}")
        return Outcome(True, f"all {len(value)} elements ok")
    if op == "all":
        for inner_expect in arg:
            inner = evaluate(inner_expect, value)
            if not inner.passed:
                return inner
        return Outcome(True, f"all {len(arg)} expectations ok")
    if op == "any":
        reasons = []
        for inner_expect in arg:
            inner = evaluate(inner_expect, value)
            if inner.passed:
                return inner
            reasons.append(inner.reason)
        return Outcome(False, "none held: " + "; ".join(reasons))
    if op == "not":
        inner = evaluate(arg, value)
        return Outcome(not inner.passed, f"not ({inner.reason})")
    raise ValueError(f"unknown operator {op}")
