"""Expectations: what an observed value must satisfy, checked structurally before any run.

An expectation is a mapping with an optional `path` into the observed value and exactly one
operator. `problems_in()` validates one (regexes compile, specifiers parse) for lint;
`evaluate()` returns whether it holds and a one-line reason showing expected vs observed.
Each operator is declared once, at the bottom, as an `Operator` with its argument check and
its evaluation: a new operator is one entry in `OPERATORS` (and a row in docs/fact-format.md,
which a test keeps complete).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from factbook.judging import userregex
from factbook.judging.versions import judge, parse_specifier
from factbook.knowledge.names import shown


@dataclass(frozen=True)
class Outcome:
    """Whether an expectation held, and why (expected vs observed)."""

    passed: bool
    reason: str


@dataclass(frozen=True)
class Judged:
    """An operator's verdict that also says how it judged (a version's scheme: PEP 440 or loose);
    the message names it beside the operator."""

    passed: bool
    how: str


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


# -- target variables: `{var: gpu_count}` in place of a value --------------------------------

VAR = "var"


class UnboundVar(LookupError):
    """An expectation refers to a variable the target does not set (lint and the engine say so)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def _is_ref(node: Any) -> bool:
    return isinstance(node, dict) and len(node) == 1 and VAR in node


def _raw_refs(expect: Any) -> list[Any]:
    if _is_ref(expect):
        return [expect[VAR]]
    if isinstance(expect, dict):
        return [r for sub in expect.values() for r in _raw_refs(sub)]
    if isinstance(expect, list):
        return [r for sub in expect for r in _raw_refs(sub)]
    return []


def var_refs(expect: Any) -> list[str]:
    """The variable names an expectation refers to (`{var: NAME}` anywhere in it), in order."""
    return list(dict.fromkeys(str(r) for r in _raw_refs(expect)))


def bind_vars(expect: Any, variables: dict[str, Any]) -> Any:
    """A copy of `expect` with every `{var: NAME}` replaced by the target's value; a dotted
    NAME reads into a structured variable (`{var: gpus.count}`). UnboundVar when one is unset."""
    if _is_ref(expect):
        name = str(expect[VAR])
        try:
            return get_path(variables, name) if "." in name else variables[name]
        except (KeyError, PathMissing):
            raise UnboundVar(name) from None
    if isinstance(expect, dict):
        return {k: bind_vars(v, variables) for k, v in expect.items()}
    if isinstance(expect, list):
        return [bind_vars(v, variables) for v in expect]
    return expect


def problems_in(expect: Any, where: str = "expect") -> list[str]:
    """Structural problems of an expectation, as messages (empty when valid).

    An expectation holding `{var: ...}` is checked here for its operators and variable names
    only; its arguments are checked once bound, per target (kb lint does both)."""
    refs = _raw_refs(expect)
    if any(not isinstance(r, str) or not r.strip(".") for r in refs):
        return [f"{where}: a variable reference is {{var: NAME}}, NAME a non-empty string"]
    shape = _operators_only(expect, where)
    if refs or shape:
        return shape
    if "path" in expect and not isinstance(expect["path"], str):
        return [f"{where}.path: expected a string"]
    (op,) = (k for k in expect if k != "path")
    return OPERATORS[op].check_args(expect[op], f"{where}.{op}")


def _operators_only(expect: Any, where: str) -> list[str]:
    """A mapping with exactly one known operator (and maybe `path`), arguments unchecked."""
    if not isinstance(expect, dict):
        return [f"{where}: expected a mapping with one operator, got {type(expect).__name__}"]
    ops = [k for k in expect if k != "path"]
    unknown = [k for k in ops if k not in OPERATORS]
    if unknown:
        return [f"{where}: unknown operator '{unknown[0]}' (known: {', '.join(OPERATORS)})"]
    if len(ops) != 1:
        return [f"{where}: needs exactly one operator, found {len(ops)}"]
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
    try:
        passed = OPERATORS[op].evaluate(arg, value)
    except (TypeError, ValueError) as exc:
        return Outcome(False, f"{op} {_short(arg)}: cannot compare {_short(value)}: {exc}")
    except userregex.RegexTimeout as exc:  # the value from the box made it backtrack
        return Outcome(False, str(exc))
    if isinstance(passed, Outcome):
        return passed
    scheme = ""
    if isinstance(passed, Judged):
        passed, scheme = passed.passed, f" ({passed.how})"
    verdict = "ok" if passed else "expected"
    return Outcome(passed, f"{verdict} {op} {_short(arg)}{scheme}, observed{where} {_short(value)}")


# -- the operators: each declared once, with its argument check and its evaluation ------------


@dataclass(frozen=True)
class Operator:
    """One expectation operator. `check_args(arg, where)` returns lint messages for a bad
    argument; `evaluate(arg, observed)` returns whether it holds (or an Outcome with its own
    reason) and may raise TypeError/ValueError when the observed value cannot be compared."""

    name: str
    check_args: Callable[[Any, str], list[str]]
    evaluate: Callable[[Any, Any], bool | Outcome]


def _quoted(arg: Any) -> str:
    """An argument as a message quotes it: its head when long (a 6,000-character pattern or a
    megabyte string was echoed whole in its lint line)."""
    return shown(repr(arg))


def _any_arg(arg: Any, where: str) -> list[str]:
    return []


def _number_arg(arg: Any, where: str) -> list[str]:
    return [] if _is_number(arg) else [f"{where}: expected a number, got {_quoted(arg)}"]


def _between_arg(arg: Any, where: str) -> list[str]:
    if isinstance(arg, list) and len(arg) == 2 and all(_is_number(a) for a in arg):
        return []
    return [f"{where}: expected [low, high] numbers"]


def _approx_arg(arg: Any, where: str) -> list[str]:
    if not isinstance(arg, dict) or not _is_number(arg.get("value")):
        return [f"{where}: expected {{value: number, rel: number}} or {{value, abs}}"]
    extra = set(arg) - {"value", "rel", "abs"}
    if extra or not any(k in arg for k in ("rel", "abs")):
        return [f"{where}: keys are value and rel or abs"]
    return []


def _text_arg(arg: Any, where: str) -> list[str]:
    """A regex or a version specifier is text: YAML reads `version: 2.10` as the float 2.1
    and `regex: yes` as True, which `str()` then made `2.1` and `True`, silently another
    pattern than the file shows (round 24)."""
    if isinstance(arg, str):
        return []
    return [f"{where}: expected a string, got {_quoted(arg)} (quote it)"]


def _regex_arg(arg: Any, where: str) -> list[str]:
    if not isinstance(arg, str):
        return _text_arg(arg, where)
    try:
        userregex.compile_user(str(arg))  # `re`'s syntax and messages, bounded, then `regex`
    except userregex.PatternError as exc:
        return [f"{where}: invalid regex {_quoted(arg)}: {exc}"]
    slow = userregex.nested_quantifier(str(arg))
    return [f"{where}: regex {_quoted(arg)}: {slow}"] if slow else []


def _list_arg(arg: Any, where: str) -> list[str]:
    return [] if isinstance(arg, list) else [f"{where}: expected a list"]


def _bool_arg(arg: Any, where: str) -> list[str]:
    return [] if isinstance(arg, bool) else [f"{where}: expected true or false"]


def _version_arg(arg: Any, where: str) -> list[str]:
    if not isinstance(arg, str):
        return _text_arg(arg, where)
    try:
        parse_specifier(str(arg))
    except ValueError as exc:
        return [f"{where}: {exc}"]
    return []


def _version(arg: Any, value: Any) -> Judged:
    verdict = judge(str(value), str(arg))
    return Judged(verdict.passed, verdict.scheme)


def _length_arg(arg: Any, where: str) -> list[str]:
    if isinstance(arg, int) and not isinstance(arg, bool):
        return []
    return problems_in(arg, where)


def _expectations_arg(arg: Any, where: str) -> list[str]:
    if not isinstance(arg, list) or not arg:
        return [f"{where}: expected a non-empty list of expectations"]
    return [m for i, e in enumerate(arg) for m in problems_in(e, f"{where}[{i}]")]


def _approx(arg: Any, value: Any) -> bool:
    v, want = _num(value), float(arg["value"])
    return math.isclose(v, want, rel_tol=arg.get("rel", 0.0), abs_tol=arg.get("abs", 0.0))


def _contains(arg: Any, value: Any) -> bool:
    if isinstance(value, str):
        return str(arg) in value
    if isinstance(value, dict):
        return arg in value
    return any(_equal(v, arg) for v in value)


def _length(arg: Any, value: Any) -> bool | Outcome:
    size = len(value)
    if isinstance(arg, int):
        return size == arg
    inner = evaluate(arg, size)
    return Outcome(inner.passed, f"length: {inner.reason}")


def _each(arg: Any, value: Any) -> Outcome:
    for i, item in enumerate(value):
        inner = evaluate(arg, item)
        if not inner.passed:
            return Outcome(False, f"element [{i}]: {inner.reason}")
    return Outcome(True, f"all {len(value)} elements ok")


def _all(arg: Any, value: Any) -> Outcome:
    for inner_expect in arg:
        inner = evaluate(inner_expect, value)
        if not inner.passed:
            return inner
    return Outcome(True, f"all {len(arg)} expectations ok")


def _any(arg: Any, value: Any) -> Outcome:
    reasons = []
    for inner_expect in arg:
        inner = evaluate(inner_expect, value)
        if inner.passed:
            return inner
        reasons.append(inner.reason)
    return Outcome(False, "none held: " + "; ".join(reasons))


def _not(arg: Any, value: Any) -> Outcome:
    inner = evaluate(arg, value)
    return Outcome(not inner.passed, f"not ({inner.reason})")


# -- measured figures: against a stated limit, and against their peers ------------------------


def _share_arg(arg: Any, where: str) -> list[str]:
    if not isinstance(arg, dict) or not _is_number(arg.get("of")) or arg["of"] <= 0:
        return [f"{where}: expected {{of: limit > 0, ge: fraction}} (and/or le)"]
    bounds = set(arg) - {"of"}
    if not bounds or bounds - {"ge", "le"} or not all(_is_number(arg[b]) for b in bounds):
        return [f"{where}: keys are of and ge and/or le (fractions of the limit)"]
    return []


def _share(arg: Any, value: Any) -> Outcome:
    """A measured figure against a physical or vendor limit, as a fraction of it."""
    share = _num(value) / float(arg["of"])
    wanted = " and ".join(
        f"{'>=' if b == 'ge' else '<='} {arg[b]:.0%}" for b in ("ge", "le") if b in arg
    )
    held = share >= arg.get("ge", -math.inf) and share <= arg.get("le", math.inf)
    verdict = "ok" if held else "expected"
    return Outcome(
        held, f"{verdict} share {wanted} of {arg['of']:g}, observed {_num(value):g} = {share:.1%}"
    )


def _fraction_arg(arg: Any, where: str) -> list[str]:
    if _is_number(arg) and 0 <= arg < 1:
        return []
    return [f"{where}: expected a fraction between 0 and 1, got {_quoted(arg)}"]


def _near_median(arg: Any, value: Any) -> Outcome:
    """Every figure (per GPU, per link) within `arg` of their median: a drift names its GPU."""
    named = value.items() if isinstance(value, dict) else enumerate(value)
    figures = [(str(name), _num(v)) for name, v in named if v is not None]
    if not figures:
        return Outcome(False, "near_median: no figures observed")
    ordered = sorted(v for _, v in figures)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    drifts = [
        (name, v, (v - median) / median)
        for name, v in figures
        if median and abs(v - median) > arg * abs(median)
    ]
    if not drifts:
        return Outcome(True, f"ok all {len(figures)} within {arg:.0%} of the median {median:g}")
    name, v, off = max(drifts, key=lambda d: abs(d[2]))
    side = "below" if off < 0 else "above"
    more = f" (and {len(drifts) - 1} more)" if len(drifts) > 1 else ""
    return Outcome(
        False,
        f"{name} {v:g} is {abs(off):.0%} {side} the median {median:g}, allowed {arg:.0%}{more}",
    )


OPERATORS: dict[str, Operator] = {
    op.name: op
    for op in (
        Operator("eq", _any_arg, lambda arg, v: _equal(v, arg)),
        Operator("ne", _any_arg, lambda arg, v: not _equal(v, arg)),
        Operator("gt", _number_arg, lambda arg, v: _num(v) > arg),
        Operator("ge", _number_arg, lambda arg, v: _num(v) >= arg),
        Operator("lt", _number_arg, lambda arg, v: _num(v) < arg),
        Operator("le", _number_arg, lambda arg, v: _num(v) <= arg),
        Operator("between", _between_arg, lambda arg, v: arg[0] <= _num(v) <= arg[1]),
        Operator("approx", _approx_arg, _approx),
        Operator("contains", _any_arg, _contains),
        Operator(
            "regex", _regex_arg, lambda arg, v: userregex.search(str(arg), str(v)) is not None
        ),
        Operator("one_of", _list_arg, lambda arg, v: any(_equal(v, a) for a in arg)),
        Operator("exists", _bool_arg, lambda arg, v: (v is not None) == arg),
        Operator("length", _length_arg, _length),
        Operator("version", _version_arg, _version),
        Operator("each", problems_in, _each),
        Operator("all", _expectations_arg, _all),
        Operator("any", _expectations_arg, _any),
        Operator("not", problems_in, _not),
        Operator("share", _share_arg, _share),
        Operator("near_median", _fraction_arg, _near_median),
    )
}
