"""Parse an SGLang launch command line exactly as sglang's own argparse parser does.

sglang builds its server parser with argparse's defaults, so `--speculative-algo EAGLE` is
`--speculative-algorithm EAGLE` (a unique prefix), `--x=v` is `--x v`, a repeated flag keeps
its last value, an ambiguous prefix or an unknown flag stops the server before it starts.
`parse_flags` replays that parser (Python 3.11's argparse, the version sglang's tests run on)
over the table of every option sglang 0.5.23 declares (options-0.5.23.json, written by
scripts/sglang-options from the real parser), so the linter sees what sglang will see on a
machine without sglang. `launch_argv` finds the flags after `-m sglang.launch_server` /
`sglang serve`. A value a runbook only knows at run time is UNKNOWN.
"""

from __future__ import annotations

import bisect
import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from factbook.knowledge.limits import split_words

OPTIONS_VERSION = "0.5.23"
LAUNCH_MARKERS = ("sglang.launch_server", "sglang serve")
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
_TYPES: dict[str, Any] = {"int": int, "float": float}


class _Unknown:
    """A flag value a runbook computes at run time: checks that need it are skipped."""

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN: Any = _Unknown()


@dataclass
class Finding:
    """One thing wrong (or worth knowing) about a launch command."""

    severity: str  # "error" | "warning"
    message: str
    pitfall: str | None = None

    def __str__(self) -> str:
        see = f" (see {self.pitfall})" if self.pitfall else ""
        return f"{self.severity}: {self.message}{see}"


@dataclass
class ParsedFlags:
    """What sglang's parser makes of the flags: values by field, or why it stops."""

    values: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # argparse would exit: ambiguous prefix, bad or missing value
    unknown: list[str] = field(default_factory=list)  # "unrecognized arguments" (also exits)

    @property
    def refusal(self) -> str | None:
        """argparse's message when sglang would not start; None when it parses."""
        if self.error:
            return self.error
        if self.unknown:
            return "unrecognized arguments: " + " ".join(self.unknown)
        return None


@cache
def option_table(version: str = OPTIONS_VERSION) -> dict[str, dict[str, Any]]:
    """Option string -> {dest, action, nargs, type, choices, const} of sglang `version`."""
    path = Path(__file__).with_name(f"options-{version}.json")
    return json.loads(path.read_text(encoding="utf-8"))["options"]


def launch_argv(cmdline: str | Sequence[str]) -> list[str] | None:
    """The flags after `-m sglang.launch_server` / `sglang serve`; None if not a launch."""
    if isinstance(cmdline, str):
        try:
            tokens = split_words(cmdline.replace("\\\n", " "), comments=True)
        except ValueError:
            return None
    else:  # a value other than a string (`"--tp", 8` in a cell) is unknown to the linter
        tokens = [tok if isinstance(tok, str) else UNKNOWN for tok in cmdline]
    for i, tok in enumerate(tokens):
        if tok is UNKNOWN:
            continue
        if tok in ("sglang.launch_server", "sglang.launch_server.py") or tok.endswith(
            "/sglang/launch_server.py"
        ):
            return tokens[i + 1 :]
        if Path(str(tok)).name == "sglang" and i + 1 < len(tokens) and tokens[i + 1] == "serve":
            return tokens[i + 2 :]
    return None


class _Refused(Exception):
    """argparse's `parser.error(...)`: sglang prints it and exits 2."""


def _classify(
    arg: Any, table: dict[str, dict[str, Any]], lookup: _Lookup
) -> tuple[str | None, Any] | None:
    """argparse's `_parse_optional`: None for a value, else (option or None if unknown,
    explicit `=` argument)."""
    if arg is UNKNOWN or not arg or arg[0] != "-":
        return None
    if arg in table:
        return arg, None
    if len(arg) == 1:
        return None
    if "=" in arg:
        name, explicit = arg.split("=", 1)
        if name in table:
            return name, explicit
    matches = _prefix_matches(arg, table, lookup)
    if len(matches) > 1:
        names = ", ".join(name for name, _ in matches)
        raise _Refused(f"ambiguous option: {arg} could match {names}")
    if len(matches) == 1:
        return matches[0]
    if _NEGATIVE_NUMBER.match(arg) or " " in arg:
        return None
    return None, None


def _prefix_matches(
    arg: str, table: dict[str, dict[str, Any]], lookup: _Lookup
) -> list[tuple[str, Any]]:
    if arg[1] == "-":  # --long: split at "=", then every option the prefix starts
        prefix, eq, explicit = arg.partition("=")
        value = explicit if eq else None
        return [(name, value) for name in lookup.starting(prefix)]
    short = [(arg[:2], arg[2:])] if arg[:2] in table else []  # -xVALUE
    return short + [(name, None) for name in lookup.starting(arg) if name != arg[:2]]


@dataclass(frozen=True)
class _Lookup:
    """What parse_flags asks of an option table for every argument, worked out once a table:
    the names in sorted order (those a prefix starts are one run of them, found by bisect),
    each name's place in the table (argparse names the matches in that order) and the
    required options. Scanning all ~560 options for each argument and each launch made a
    runbook of 15,000 launches lint in 4.3 s."""

    ordered: list[str]
    place: dict[str, int]
    required: list[tuple[str, str]]  # (option, dest)

    def starting(self, prefix: str) -> list[str]:
        """The options `prefix` starts, in the table's order."""
        at = bisect.bisect_left(self.ordered, prefix)
        found = []
        while at < len(self.ordered) and self.ordered[at].startswith(prefix):
            found.append(self.ordered[at])
            at += 1
        return sorted(found, key=self.place.__getitem__) if len(found) > 1 else found


@cache
def option_lookup(version: str = OPTIONS_VERSION) -> _Lookup:
    """The lookup of `option_table(version)`, made once a version as the table is."""
    table = option_table(version)
    return _Lookup(
        sorted(table),
        {name: i for i, name in enumerate(table)},
        [(name, spec["dest"]) for name, spec in table.items() if spec.get("required")],
    )


def _convert(option: str, spec: dict[str, Any], raw: Any) -> Any:
    if raw is UNKNOWN:
        return UNKNOWN
    kind = _TYPES.get(spec["type"])
    value = raw
    if kind is not None:
        try:
            value = kind(raw)
        except ValueError:
            raise _Refused(
                f"argument {_display(option, spec)}: invalid {spec['type']} value: {raw!r}"
            ) from None
    if spec["choices"] is not None and value not in spec["choices"]:
        choices = ", ".join(repr(c) for c in spec["choices"])
        raise _Refused(
            f"argument {_display(option, spec)}: invalid choice: {value!r} (choose from {choices})"
        )
    return value


def _display(option: str, spec: dict[str, Any]) -> str:
    """argparse names an action by all its option strings: `--model-path/--model`."""
    names = [name for name, s in option_table().items() if s["dest"] == spec["dest"]]
    return "/".join(names) or option


def _take(option: str, spec: dict[str, Any], args: list[Any], values: dict[str, Any]) -> None:
    action, nargs = spec["action"], spec["nargs"]
    if action == "help":
        raise _Refused(f"{option}: sglang prints its help and exits without serving")
    if action == "boolean_optional":
        values[spec["dest"]] = not option.startswith("--no-")
    elif action == "const":
        values[spec["dest"]] = spec["const"]
    elif nargs is None:
        values[spec["dest"]] = _convert(option, spec, args[0])
    elif nargs == "?":
        values[spec["dest"]] = _convert(option, spec, args[0]) if args else spec["const"]
    else:  # "+" or "*"
        values[spec["dest"]] = [_convert(option, spec, a) for a in args]


def _count(spec: dict[str, Any], option: str, following: int) -> int:
    """How many of the `following` values an option consumes (argparse's _match_argument)."""
    nargs = 0 if spec["action"] in ("const", "boolean_optional", "help") else spec["nargs"]
    if nargs == 0:
        return 0
    if nargs is None:
        if following < 1:
            raise _Refused(f"argument {_display(option, spec)}: expected one argument")
        return 1
    if nargs == "+" and following < 1:
        raise _Refused(f"argument {_display(option, spec)}: expected at least one argument")
    if nargs == "?":
        return min(following, 1)
    return following


def parse_flags(argv: Sequence[Any], version: str = OPTIONS_VERSION) -> ParsedFlags:
    """Every flag to its field (`dest`) as sglang's parser sets it, or why it would exit."""
    table = option_table(version)
    parsed = ParsedFlags()
    args = list(argv)
    if "--" in args:  # argparse: everything after "--" is a value (sglang takes none)
        cut = args.index("--")
        parsed.unknown = [str(a) for a in args[cut + 1 :] if a is not UNKNOWN]
        args = args[:cut]
    try:
        lookup = option_lookup(version)
        kinds = [_classify(a, table, lookup) for a in args]
        i = 0
        while i < len(args):
            kind = kinds[i]
            if kind is None:  # a value no option consumed: sglang has no positionals
                if args[i] is not UNKNOWN:
                    parsed.unknown.append(str(args[i]))
                i += 1
                continue
            option, explicit = kind
            if option is None:
                parsed.unknown.append(str(args[i]))
                i += 1
                continue
            spec = table[option]
            if explicit is not None:
                if _count(spec, option, 1) != 1:
                    raise _Refused(
                        f"argument {_display(option, spec)}: ignored explicit argument {explicit!r}"
                    )
                _take(option, spec, [explicit], parsed.values)
                i += 1
                continue
            following = 0
            while i + 1 + following < len(args) and kinds[i + 1 + following] is None:
                following += 1
            used = _count(spec, option, following)
            _take(option, spec, args[i + 1 : i + 1 + used], parsed.values)
            i += 1 + used
        if UNKNOWN not in args:  # a value known only at run time may be the flag itself
            _check_required(lookup, parsed.values)
    except _Refused as exc:
        parsed.error = str(exc)
    return parsed


def _check_required(lookup: _Lookup, values: dict[str, Any]) -> None:
    missing: dict[str, list[str]] = {}
    for name, dest in lookup.required:
        if dest not in values:
            missing.setdefault(dest, []).append(name)
    if missing:
        names = ", ".join("/".join(group) for group in missing.values())
        raise _Refused(f"the following arguments are required: {names}")


def similar_flags(flag: str, version: str = OPTIONS_VERSION) -> list[str]:
    """Known flags close to a misspelt one, for the message."""
    name = flag.split("=", 1)[0]
    return difflib.get_close_matches(name, list(option_table(version)), n=3, cutoff=0.75)
