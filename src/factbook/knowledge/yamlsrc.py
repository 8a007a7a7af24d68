"""Load YAML keeping the line of every value, so every problem can name `file:line`.

PyYAML's composer gives nodes with marks; we build plain Python values from them and keep a
side table from each value's path (("facts", 3, "check")) to its 1-based line. Duplicate keys,
which PyYAML silently collapses, are reported.

Hostile input is bounded before anything is built: a file larger than MAX_BYTES, deeper than
MAX_DEPTH, with more than MAX_NODES values or more than one document is refused with its line.
Aliases are refused outright rather than bounded: no knowledge base uses them, a value reached
through an alias has no line of its own (messages and write-back would point at the anchor),
and refusing them removes the alias bomb (`&a [*a, *a, ...]`, 560 bytes -> gigabytes) and the
recursive alias (`&r [*r]`) as whole classes.

What the file may not hold raw, a string may still hold once decoded: `"\\x1b[31m"`,
`"\\u202e"`, `"\\r"` are escapes a double-quoted scalar turns into an ESC, a bidi override, a
carriage return. Every string (key or value) is checked after decoding, and each one holding
a control character other than tab and newline, a bidi control or a line separator is a
problem at its line: what a fact says must read the same on a terminal and in a document as
in its file.
"""

from __future__ import annotations

import contextvars
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import yaml

from factbook.errors import INVISIBLE_CHARS, Problem
from factbook.judging.sanitize import first_hidden
from factbook.knowledge.kbfiles import Refused, Swapped, open_checked, outside_problem
from factbook.knowledge.lasting import keep_for_exit
from factbook.knowledge.limits import YAML_MAX_BYTES, YAML_MAX_DEPTH, YAML_MAX_NODES

MAX_BYTES = YAML_MAX_BYTES  # the bounds live in limits.py, shared with every YAML writer
MAX_DEPTH = YAML_MAX_DEPTH
MAX_NODES = YAML_MAX_NODES
# Characters YAML forbids; PyYAML reports them without a line (a "reader error").
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")
_NAMES = {0: "NUL", 0x1B: "ESC", 0x7F: "DEL"}

# An integer beyond what a float holds (about 1.8e308) is refused: every number of the
# knowledge base is compared, charted or waited for as a float somewhere (a check's timeout,
# a benchmark's bar), and a 400-digit integer passed lint, then stopped `docs` and `verify`
# with an OverflowError. (0x/0o/0b forms get past the parser's own 4300-digit limit; a
# decimal form Python refuses to write crashed every reader before.)
MAX_INT_BITS = 1024  # below 2**1023 every integer is a float
BEYOND_FLOAT = "invalid value: Exceeds the limit of a number (1.8e308)"
# a run of digits as long as the shortest such integer (309 decimal, 256 hex digits; `_`
# and the base-60 `:` may sit between them): only a text holding one can hold such an
# integer, so only it is parsed by unreadable_if_written
_LONG_DIGITS = re.compile("[0-9a-fA-F_:]{256}")
_HALF_RUN = 128
_HALF_DIGITS = re.compile(f"[0-9a-fA-F_:]{{{_HALF_RUN}}}")


def _may_hold_long_digits(text: str) -> bool:
    """Whether `text` may hold a `_LONG_DIGITS` run: a run of 256 covers at least one whole
    window of 128 that starts at a multiple of 128, so only those windows are tried, one
    failing at its first other character (the search itself started at every digit and
    letter a-f: 8 ms a 770 KB fact file, against 0.9)."""
    whole, starts = _HALF_DIGITS.fullmatch, range(0, len(text) - _HALF_RUN + 1, _HALF_RUN)
    return any(whole(text, at, at + _HALF_RUN) for at in starts)


def _beyond_float(value: int) -> bool:
    """Whether float(value) overflows: only integers of 1,024 bits or more are tried."""
    if value.bit_length() < MAX_INT_BITS:
        return False
    try:
        float(value)
    except OverflowError:
        return True
    return False


_PLAIN_TAGS = frozenset({"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"})

# Plain scalars YAML 1.1 (PyYAML) reads as numbers that no YAML 1.2 reader, nor a person,
# reads so: `017` is 15 (octal), `1:30` is 90 and `12:30:00` 45000 (base 60). A fact's
# `value: 12:30`, a milestone `id: 017`, a regex `017` or a redact.yaml secret `01234567`
# became another number than the file shows, silently (round 24). Such a scalar is refused
# at its line: quote it, or write the number as it is meant.
_SURPRISING_NUMBER = re.compile(r"[-+]?(?:0[0-7_]+|[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?)")
_NUMBER_TAGS = frozenset({"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"})


def _surprising_number(node: yaml.Node, value: Any) -> str | None:
    """Why a plain `node` (its style None, or libyaml's "") read as the number `value` reads
    as another than it shows."""
    text = node.value
    if node.style or node.tag not in _NUMBER_TAGS or not _SURPRISING_NUMBER.fullmatch(text):
        return None
    kind = "base 60" if ":" in text else "octal"
    written = value if isinstance(value, int) else repr(value)
    return (
        f"invalid value: {text} is read as the number {written} (YAML 1.1 {kind}); "
        f"quote it ('{text}') or write {written}"
    )


PathKey = tuple[Any, ...]
T = TypeVar("T")
_STR_TAG = "tag:yaml.org,2002:str"
# the safe constructors that build a scalar in one call (the others are generators, or
# refuse a scalar node: construct_object runs them)
_SCALAR_CONSTRUCTORS = {
    f"tag:yaml.org,2002:{name}": yaml.SafeLoader.yaml_constructors[f"tag:yaml.org,2002:{name}"]
    for name in ("null", "bool", "int", "float", "binary", "timestamp")
}


_SCALAR_NODE = yaml.ScalarNode


class MemoResolver:
    """A mix-in for PyYAML loaders and dumpers: a plain scalar's implicit tag (`1` is an int,
    `yes` a bool, `x` a string) remembered per text. libyaml calls `resolve` back into Python
    for every scalar it reads or writes (twice when writing), each a few regex matches; fact
    files repeat the same keys and values thousands of times. Safe classes have no path
    resolvers, so the answer depends on the text alone."""

    _tags: ClassVar[dict[tuple[str, Any], str]] = {}
    MEMO_MAX = 50_000  # entries; a long value is never remembered
    MEMO_TEXT_MAX = 256

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is not _SCALAR_NODE or self.yaml_path_resolvers:  # type: ignore[attr-defined]
            return super().resolve(kind, value, implicit)  # type: ignore[misc]
        key = (value, implicit)
        tag = self._tags.get(key)
        if tag is None:
            tag = super().resolve(kind, value, implicit)  # type: ignore[misc]
            if len(value) <= self.MEMO_TEXT_MAX:
                if len(self._tags) >= self.MEMO_MAX:
                    self._tags.clear()
                self._tags[key] = tag
        return tag

    # libyaml calls these for every node it reads or writes; without path resolvers (safe
    # classes have none) PyYAML's own return at once, after two attribute lookups
    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        if self.yaml_path_resolvers:  # type: ignore[attr-defined]
            super().descend_resolver(current_node, current_index)  # type: ignore[misc]

    def ascend_resolver(self) -> None:
        if self.yaml_path_resolvers:  # type: ignore[attr-defined]
            super().ascend_resolver()  # type: ignore[misc]


_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FastSafeLoader(MemoResolver, _BASE_LOADER):  # type: ignore[valid-type,misc]
    """libyaml's safe loader (marks kept, ~10x the pure-Python one) with remembered tags."""

    _tags: ClassVar[dict[tuple[str, Any], str]] = {}


_COMPOSER = FastSafeLoader
_RESOLVER = FastSafeLoader("")  # its `resolve` alone (no stream is read)


@dataclass
class LocatedDoc:
    """A parsed YAML document with the line of every path in it.

    A document sent between processes (`portable`) keeps the lines of its first
    `PORTABLE_DEPTH` levels only (a fact file's facts), and its `source`: a deeper line, asked
    for when a problem is reported, is read from the text again then."""

    file: str
    data: Any
    lines: dict[PathKey, int] = field(default_factory=dict)
    key_lines: dict[PathKey, int] = field(default_factory=dict)
    source: str | None = field(default=None, repr=False, compare=False)

    def line(self, path: PathKey) -> int:
        """The line of the value at `path`, or of its closest ancestor."""
        if self.source is not None and len(path) > PORTABLE_DEPTH:
            whole, _, _ = _located(self.source, self.file)
            self.lines, self.key_lines, self.source = whole.lines, whole.key_lines, None
        for n in range(len(path), -1, -1):
            sub = path[:n]
            if sub in self.key_lines:
                return self.key_lines[sub]
            if sub in self.lines:
                return self.lines[sub]
        return 1

    def problem(self, path: PathKey, message: str) -> Problem:
        return Problem(self.file, self.line(path), message)


def _construct(
    node: yaml.Node, path: PathKey, doc: LocatedDoc, problems: list[Problem], ctor: yaml.SafeLoader
) -> Any:
    doc.lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.CollectionNode) and node.tag not in _PLAIN_TAGS:
        # `!!python/object/apply:os.system [cmd]` on a list or mapping: refused like the
        # scalar forms, never silently built as a plain list or mapping
        problems.append(
            Problem(
                doc.file,
                node.start_mark.line + 1,
                f"invalid value: could not determine a constructor for the tag {node.tag!r}",
            )
        )
        return None
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                problems.append(
                    Problem(doc.file, key_node.start_mark.line + 1, "mapping keys must be scalars")
                )
                continue
            key = _scalar(key_node, doc, problems, ctor)
            if key in result:
                problems.append(
                    Problem(doc.file, key_node.start_mark.line + 1, f"duplicate key {key!r}")
                )
            doc.key_lines[(*path, key)] = key_node.start_mark.line + 1
            result[key] = _construct(value_node, (*path, key), doc, problems, ctor)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [
            _construct(item, (*path, i), doc, problems, ctor) for i, item in enumerate(node.value)
        ]
    return _scalar(node, doc, problems, ctor)


def _scalar(
    node: yaml.Node, doc: LocatedDoc, problems: list[Problem], ctor: yaml.SafeLoader
) -> Any:
    line = node.start_mark.line + 1
    if node.tag == _STR_TAG and isinstance(node, yaml.ScalarNode):
        return node.value  # what SafeConstructor builds for a string, without its bookkeeping
    try:
        known = _SCALAR_CONSTRUCTORS.get(node.tag) if isinstance(node, yaml.ScalarNode) else None
        # a plain scalar's constructor called directly: construct_object would also record it
        # in tables kept for aliases, which are refused before this point
        value = known(ctor, node) if known is not None else ctor.construct_object(node, deep=True)
        if isinstance(value, int) and _beyond_float(value):  # 400 digits, 0x + 4000
            problems.append(Problem(doc.file, line, BEYOND_FLOAT))
            return None
        surprising = _surprising_number(node, value) if known is not None else None
        if surprising is not None:
            problems.append(Problem(doc.file, line, surprising))
            return None
        return value
    except yaml.MarkedYAMLError as exc:
        problems.append(Problem(doc.file, line, f"invalid value: {exc.problem or exc}"))
    except yaml.YAMLError as exc:
        problems.append(Problem(doc.file, line, f"invalid value: {exc}"))
    except ValueError as exc:  # e.g. an integer beyond Python's 4300-digit conversion limit
        problems.append(Problem(doc.file, line, f"invalid value: {str(exc).split(';')[0]}"))
    except (IndexError, KeyError, AttributeError, TypeError):  # `!!int` or `!!bool` of nothing
        kind = str(node.tag).rsplit(":", 1)[-1]
        message = f"invalid value: {str(node.value)[:40]!r} is not a valid {kind}"
        problems.append(Problem(doc.file, line, message))
    return None


def refusal(
    text: str, display: str, *, first_line: int = 1, aliases: bool = False
) -> Problem | None:
    """The first bound the text breaks (characters, aliases, depth, size, documents), if any.

    Runs on libyaml's event stream, which is flat: nothing here recurses or builds values, so
    it is safe on any input and costs a fraction of building the document. Inside `sharing()`
    the text is parsed (`parse_located`) in the same pass and both answers remembered.
    """
    shared = _SHARED.get() if first_line == 1 and not aliases else None
    if shared is None:
        return _refusal(text, display, first_line, aliases)
    found = shared.get("located", text, lambda: _located(text, ""))[2]
    return None if found is None else Problem(display, found.line, found.message)


def _refusal(text: str, display: str, first_line: int, aliases: bool = False) -> Problem | None:
    found = _forbidden(text, display, first_line)
    if found is not None:
        return found
    refused: list[Problem] = []
    for _ in _bounded_events(text, display, first_line, refused, aliases=aliases):
        pass
    return refused[0] if refused else None


def _forbidden(text: str, display: str, first_line: int) -> Problem | None:
    bad = _FORBIDDEN.search(text)
    if not bad:
        return None
    code = ord(bad.group())
    name = _NAMES.get(code, "control character")
    line = text.count("\n", 0, bad.start()) + first_line
    return Problem(display, line, f"forbidden character U+{code:04X} ({name}) in YAML")


def _bounded_events(
    text: str, display: str, first_line: int, refused: list[Problem], *, aliases: bool = False
) -> Iterator[tuple[str, yaml.Event]]:
    """libyaml's events of `text`, each with the kind `refusal` counts it as; at the first
    bound broken (or a syntax error) the problem goes to `refused` and the stream ends.
    `aliases`: an alias is one more value, not a refusal (another tool's file, such as an
    Ansible inventory; its reader bounds what the aliases expand to)."""
    depth = nodes = documents = 0
    kinds = _EVENT_KINDS
    try:
        for event in yaml.parse(text, Loader=_COMPOSER):
            # one dict lookup per event (this loop sees every value of every file read)
            kind = kinds.get(type(event)) or _event_kind(event)
            if kind is _SCALAR:
                nodes += 1
            elif kind is _START:
                depth += 1
                nodes += 1
                if depth > MAX_DEPTH:
                    line = event.start_mark.line + first_line
                    refused.append(Problem(display, line, f"nested deeper than {MAX_DEPTH} levels"))
                    return
            elif kind is _END:
                depth -= 1
                yield kind, event
                continue
            elif kind is _ALIAS and aliases:
                nodes += 1
            elif kind is _ALIAS:
                message = f"YAML alias '*{event.anchor}' is not allowed here (write the value out)"
                refused.append(Problem(display, event.start_mark.line + first_line, message))
                return
            elif kind is _DOCUMENT:
                documents += 1
                if documents > 1:
                    line = event.start_mark.line + first_line
                    message = "more than one YAML document in this file"
                    refused.append(Problem(display, line, message))
                    return
            if nodes > MAX_NODES:
                line = event.start_mark.line + first_line
                message = f"more than {MAX_NODES} values in one file"
                refused.append(Problem(display, line, message))
                return
            yield kind, event
    except yaml.YAMLError:
        found = _syntax_problem(text, display)
        refused.append(Problem(display, found.line + first_line - 1, found.message))


_SCALAR, _START, _END, _ALIAS, _DOCUMENT, _OTHER = "scalar", "start", "end", "alias", "doc", "-"
_EVENT_KINDS: dict[type, str] = {
    yaml.ScalarEvent: _SCALAR,
    yaml.SequenceStartEvent: _START,
    yaml.MappingStartEvent: _START,
    yaml.SequenceEndEvent: _END,
    yaml.MappingEndEvent: _END,
    yaml.AliasEvent: _ALIAS,
    yaml.DocumentStartEvent: _DOCUMENT,
}


def _event_kind(event: yaml.Event) -> str:
    """What `refusal` counts an event as, for a class not in _EVENT_KINDS (a subclass)."""
    for cls, kind in _EVENT_KINDS.items():
        if isinstance(event, cls):
            return kind
    return _OTHER


def unreadable_if_written(text: str, display: str, *, limit: int = MAX_BYTES) -> Problem | None:
    """Why `text`, once written to `display`, would be refused by the reader (this module):
    over `limit` bytes, too deep, too many values. Writers call it and refuse before writing."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:  # a lone surrogate, from JSON's \ud800
        line = text.count("\n", 0, exc.start) + 1
        code = ord(text[exc.start])
        return Problem(display, line, f"U+{code:04X} cannot be written as UTF-8")
    if size > limit:
        return Problem(display, 1, f"would be {size} bytes, over the {limit} bytes factbook reads")
    found = refusal(text, display) or _beyond_float_in(text, display)
    if found is None:
        return None
    return Problem(found.file, found.line, f"would be refused when read back: {found.message}")


def _beyond_float_in(text: str, display: str) -> Problem | None:
    """The first integer of `text` that no float holds, which the reader reports at its
    line: a writer refuses it too (an import hint, a box or a benchmark file can hand over a
    400-digit integer, which lint would then refuse in the fact file written)."""
    if not _may_hold_long_digits(text) or not _LONG_DIGITS.search(text):
        return None
    _, problems, _ = located_answer(text)
    found = next((p for p in problems if p.message == BEYOND_FLOAT), None)
    return None if found is None else Problem(display, found.line, found.message)


def load_located(path: Path, display: str) -> tuple[LocatedDoc, list[Problem]]:
    """Parse one YAML file; syntax errors come back as problems, never as exceptions."""
    text, problem = read_text_bounded(path, display)
    if problem is not None:
        return LocatedDoc(display, None), [problem]
    return parse_located(text, display)


def parse_located(text: str, display: str) -> tuple[LocatedDoc, list[Problem]]:
    """Parse the text of one YAML file (read_text_bounded's) as load_located does. Inside
    `sharing()` a text is parsed once: its values are then shared by every caller, who must
    not change them."""
    shared = _SHARED.get()
    if shared is None:
        doc, problems, _ = _located(text, display)
        return doc, problems
    doc, problems, _ = shared.get("located", text, lambda: _located(text, ""))
    mine = LocatedDoc(display, doc.data, doc.lines, doc.key_lines, doc.source)
    return mine, [Problem(display, p.line, p.message) for p in problems]


def _located(text: str, display: str) -> tuple[LocatedDoc, list[Problem], Problem | None]:
    """The located document, its problems, and the bound it breaks (`refusal`) if any: one
    pass over the events checks the bounds and builds the values; the strings built are
    then checked for hidden characters."""
    doc, problems, refused = _located_values(text, display)
    if refused is None:
        problems += _hidden_problems(text, doc)
    return doc, problems, refused


# What can put a hidden character into a decoded string: an escape that decodes to one (only
# double-quoted scalars have escapes; `\t`, `\n`, `\\` and a regex's `\d` do not), a raw line
# break YAML folds (CR, NEL) or a raw reordering character (_FORBIDDEN refuses the rest). A
# text without any is not walked: most fact files hold a backslash, few hold one of these.
_ESCAPE_MAY_HIDE = re.compile(r"\\[0abvfreNLPxuU]")
_RAW_MAY_HIDE = (  # CR, NEL, the Arabic letter mark, LRM, RLM, LS, PS and the bidi controls
    "\r\x85\u061c\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
# zero-width characters, the BOM, tags (errors.INVISIBLE_CHARS): ranges, so one class search
# of a text that is not ASCII (round 21: they were never looked for)
_INVISIBLE = re.compile(f"[{INVISIBLE_CHARS}]")
_HIDDEN_NAMES = {0x07: "BEL", 0x08: "BS", 0x0D: "CR", 0x1B: "ESC", 0x85: "NEL"}


def may_hide(text: str, start: int = 0) -> bool:
    """Whether `text[start:]` may decode to a string holding a hidden character: the cheap
    test before `hides` (a walk of the values). A scan for each character (an ASCII text
    can only hold CR), then the escapes' search, which starts only at a backslash: one
    pattern for both tried every character of the text (7 ms a 770 KB fact file, against
    0.02)."""
    tail = text[start:] if start else text
    raw = _RAW_MAY_HIDE[:1] if tail.isascii() else _RAW_MAY_HIDE  # ASCII: CR alone
    if any(character in tail for character in raw):
        return True
    if not tail.isascii() and _INVISIBLE.search(tail):
        return True
    return "\\" in tail and _ESCAPE_MAY_HIDE.search(tail) is not None


def hides(data: Any) -> bool:
    """Whether a string in `data` (a key or a value) holds a hidden character: the loader
    reports each, so a fast path that builds values without it must leave such data alone."""
    return any(first_hidden(value) is not None for _, value in _strings(data))


def _hidden_problems(text: str, doc: LocatedDoc) -> list[Problem]:
    """One problem per string (key or value) holding a hidden character, at its line."""
    if doc.data is None or not may_hide(text):
        return []
    out = []
    for path, value in _strings(doc.data):
        found = first_hidden(value)
        if found is not None:
            out.append(doc.problem(path, _hidden_message(found.group())))
    return out


def _strings(data: Any, path: PathKey = ()) -> Iterator[tuple[PathKey, str]]:
    """Every string in `data` with its path, in document order, keys included (a key's path
    is its value's). Recursion is bounded: a document deeper than MAX_DEPTH was refused."""
    if isinstance(data, str):
        yield path, data
    elif isinstance(data, dict):
        for key, item in data.items():
            if isinstance(key, str):
                yield (*path, key), key
            yield from _strings(item, (*path, key))
    elif isinstance(data, list):
        for i, item in enumerate(data):
            yield from _strings(item, (*path, i))


def _hidden_message(char: str) -> str:
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        name = "lone surrogate"
    else:
        name = _NAMES.get(code) or _HIDDEN_NAMES.get(code) or unicodedata.name(char, "control")
    return f"hidden character U+{code:04X} ({name}) in a string: readers cannot see it; remove it"


def _located_values(text: str, display: str) -> tuple[LocatedDoc, list[Problem], Problem | None]:
    """_located without the check of the strings."""
    doc = LocatedDoc(display, None)
    refused = _forbidden(text, display, 1)
    if refused is not None:
        return doc, [refused], refused
    problems: list[Problem] = []
    ctor = yaml.SafeLoader("")
    try:
        found: list[Problem] = []
        if _build_from_events(text, doc, problems, ctor, found):
            if found:
                return LocatedDoc(display, None), found, found[0]
            return doc, problems, None
        refused = _refusal(text, display, 1)  # the composer's way, from the start
        if refused is not None:
            return LocatedDoc(display, None), [refused], refused
        doc, problems = LocatedDoc(display, None), []
        try:
            node = yaml.compose(text, Loader=_COMPOSER)
        except (yaml.YAMLError, RecursionError):
            return doc, [_syntax_problem(text, display)], None
        if node is not None:
            doc.data = _construct(node, (), doc, problems, ctor)
    finally:
        ctor.dispose()
    return doc, problems, None


class _Fallback(Exception):
    """The event stream holds what only the composer handles (anchors, a collection as a
    key, a tagged collection): `_build_from_events` leaves the text to it."""


def _build_from_events(
    text: str,
    doc: LocatedDoc,
    problems: list[Problem],
    ctor: yaml.SafeLoader,
    refused: list[Problem],
) -> bool:
    """`_construct(yaml.compose(text))` in one pass over libyaml's events, without building
    the node tree (half the cost of a parse): the same values, lines and problems, in the
    same order, with `refusal`'s bounds checked on the way (a broken one lands in
    `refused`). False (nothing kept) where the text needs the composer.

    `_bounded_events`' checks are made here inline, on events read straight from the
    parser: every value of every file an import reads and writes passes this loop, and the
    two generators in between were a fifth of its cost. `_refusal` keeps the generator;
    tests/test_yaml_one_parse.py holds both to the same answers."""
    # the open collection (None before the root), its path, the key awaiting its value (a
    # mapping's), whether it is a mapping; those of the collections around it on `stack`
    cont: Any = None
    cpath: PathKey = ()
    ckey: Any = _NO_KEY
    cdict = False
    stack: list[tuple[Any, PathKey, Any, bool]] = []
    plain_tags = _PLAIN_SCALAR_TAGS
    kinds = _EVENT_KINDS
    lines, key_lines, file = doc.lines, doc.key_lines, doc.file
    depth = nodes = documents = 0
    parser = _COMPOSER(text)
    get_event = parser.get_event
    try:
        while True:
            try:
                event = get_event()
            except yaml.YAMLError:
                found = _syntax_problem(text, file)
                refused.append(Problem(file, found.line, found.message))
                return True
            if event is None:
                return True
            kind = kinds.get(type(event)) or _event_kind(event)
            if kind is _END:
                depth -= 1
                cont, cpath, ckey, cdict = stack.pop()
                continue
            if kind is _SCALAR or kind is _START:
                nodes += 1
                line = event.start_mark.line + 1
                if kind is _START:
                    depth += 1
                    if depth > MAX_DEPTH:
                        refused.append(
                            Problem(file, line, f"nested deeper than {MAX_DEPTH} levels")
                        )
                        return True
                if nodes > MAX_NODES:
                    refused.append(Problem(file, line, f"more than {MAX_NODES} values in one file"))
                    return True
                if event.anchor is not None:
                    raise _Fallback
                awaiting_key = cdict and ckey is _NO_KEY
                if kind is _SCALAR:
                    tag = event.tag
                    value: Any = event.value
                    if tag is None or tag == "!":
                        # the resolver's answer: a quoted scalar is a string, a plain one is
                        # what its text implies (remembered per text)
                        if not event.implicit[0]:
                            tag = _STR_TAG
                        else:
                            tag = plain_tags.get(value) or _plain_tag(value)
                    if tag != _STR_TAG:
                        node = yaml.ScalarNode(
                            tag, value, event.start_mark, event.end_mark, style=event.style
                        )
                        value = _scalar(node, doc, problems, ctor)
                    if awaiting_key:
                        if value in cont:
                            problems.append(Problem(file, line, f"duplicate key {value!r}"))
                        key_lines[(*cpath, value)] = line
                        ckey = value
                        continue
                else:
                    tagged = event.tag not in (None, "!") and event.tag not in _PLAIN_TAGS
                    if awaiting_key or tagged:
                        raise _Fallback
                    value = {} if type(event) is yaml.MappingStartEvent else []
                if cont is None:
                    path: PathKey = ()
                    doc.data = value
                elif cdict:
                    path = (*cpath, ckey)
                    cont[ckey] = value
                    ckey = _NO_KEY
                else:
                    path = (*cpath, len(cont))
                    cont.append(value)
                lines[path] = line
                if kind is _START:
                    stack.append((cont, cpath, ckey, cdict))
                    cont, cpath, ckey, cdict = value, path, _NO_KEY, type(value) is dict
            elif kind is _ALIAS:
                message = f"YAML alias '*{event.anchor}' is not allowed here (write the value out)"
                refused.append(Problem(file, event.start_mark.line + 1, message))
                return True
            elif kind is _DOCUMENT:
                documents += 1
                if documents > 1:
                    message = "more than one YAML document in this file"
                    refused.append(Problem(file, event.start_mark.line + 1, message))
                    return True
    except _Fallback:
        doc.data = None
        doc.lines.clear()
        doc.key_lines.clear()
        problems.clear()
        refused.clear()
        return False
    finally:
        parser.dispose()


_NO_KEY: Any = object()  # a mapping awaiting its next key


_PLAIN_SCALAR_TAGS: dict[str, str] = {}  # a plain scalar's text -> the tag it implies


def _plain_tag(value: str) -> str:
    """The tag a plain scalar's text implies (`1` int, `yes` bool, `x` str), as the safe
    resolver says (a quoted one is always a string), remembered for short texts."""
    tag = _RESOLVER.resolve(yaml.ScalarNode, value, (True, False))
    if len(value) <= MemoResolver.MEMO_TEXT_MAX:
        if len(_PLAIN_SCALAR_TAGS) >= MemoResolver.MEMO_MAX:
            _PLAIN_SCALAR_TAGS.clear()
        _PLAIN_SCALAR_TAGS[value] = tag
    return tag


@dataclass
class _Memo:
    """What `sharing()` remembers: ("refusal" | "located", text) -> the answer for that text."""

    answers: dict[tuple[str, str], Any] = field(default_factory=dict)
    size: int = 0  # characters of the texts remembered

    def get(self, kind: str, text: str, compute: Callable[[], Any]) -> Any:
        key = (kind, text)
        if key not in self.answers:
            value = compute()
            if self.size + len(text) > SHARED_MAX_CHARS:
                self.answers.clear()
                self.size = 0
            self.answers[key] = value
            self.size += len(text)
        return self.answers[key]


_SHARED: contextvars.ContextVar[_Memo | None] = contextvars.ContextVar("shared", default=None)
SHARED_MAX_CHARS = 256 << 20  # of remembered texts; past it, the memo starts over


def remembered(kind: str, text: str, compute: Callable[[], T]) -> T:
    """`compute()`, made once per (kind, text) inside `sharing()` (every time outside it):
    for a reader whose answer depends only on a text, and whose callers do not change it."""
    shared = _SHARED.get()
    return compute() if shared is None else shared.get(kind, text, compute)


def located_answer(text: str) -> tuple[LocatedDoc, list[Problem], Problem | None]:
    """What `sharing()` remembers for `text` (its parse, problems and broken bound), made
    where it is asked for: a helper process hands it back to `remember_located`."""
    return _located(text, "")


PORTABLE_DEPTH = 2  # path length whose lines a portable document keeps: ("facts", 12)


def portable(
    answer: tuple[LocatedDoc, list[Problem], Problem | None], text: str
) -> tuple[LocatedDoc, list[Problem], Problem | None]:
    """`located_answer(text)` lighter to pickle: the values, problems and the lines of the
    top levels (each fact's own line), not the line of every value under them, which were
    three quarters of the bytes and the time of sending a fact file's parse to another
    process. `LocatedDoc.line` reads the rest from `text` again if it is ever asked."""
    doc, problems, refused = answer
    if doc.source is not None:
        return answer
    lines = {path: n for path, n in doc.lines.items() if len(path) <= PORTABLE_DEPTH}
    keys = {path: n for path, n in doc.key_lines.items() if len(path) <= PORTABLE_DEPTH}
    return LocatedDoc(doc.file, doc.data, lines, keys, text), problems, refused


def remember_located(text: str, answer: tuple[LocatedDoc, list[Problem], Problem | None]) -> None:
    """Keep `located_answer(text)`, made elsewhere, as this `sharing()` block's parse of
    `text` (nothing outside such a block)."""
    shared = _SHARED.get()
    if shared is not None:
        shared.get("located", text, lambda: answer)


def shared_parses() -> bool:
    """Whether a `sharing()` block is open (parses made now are remembered)."""
    return _SHARED.get() is not None


@contextmanager
def sharing() -> Iterator[None]:
    """Within the block, each distinct text is checked (`refusal`) and parsed (`located`)
    once. An import writes fact files into a scratch copy, reads each back to check the
    write, and lints the copy: the same texts, parsed up to seven times without this."""
    if _SHARED.get() is not None:  # already sharing: the outer block owns the memo
        yield
        return
    memo = _Memo()
    token = _SHARED.set(memo)
    try:
        yield
    finally:
        keep_for_exit(memo)  # millions of parsed values: the process's exit drops them
        _SHARED.reset(token)


# the files read_text_bounded was asked for, while recording_reads() is open
_READS: contextvars.ContextVar[list[Path] | None] = contextvars.ContextVar("reads", default=None)


@contextmanager
def recording_reads() -> Iterator[list[Path]]:
    """Every path read_text_bounded is asked for inside the block (the cache's inputs)."""
    reads: list[Path] = []
    token = _READS.set(reads)
    try:
        yield reads
    finally:
        _READS.reset(token)


def read_text_bounded(
    path: Path, display: str, *, limit: int = MAX_BYTES
) -> tuple[str, Problem | None]:
    """A user file's text, or why it cannot be used: missing, a folder, too large, not UTF-8.

    Reads at most `limit` + 1 bytes, so a huge file costs nothing; a non-UTF-8 byte is
    reported at its line. While a knowledge base is read (`kbfiles.confined`), a path that
    resolves outside it is refused before it is opened.
    """
    try:
        escaped = outside_problem(path, display)
    except OSError as exc:  # realpath's readlink of a link swapped for a file: EINVAL
        return "", Problem(display, 1, f"cannot read file: {exc.strerror or exc}")
    if escaped is not None:
        return "", escaped
    reads = _READS.get()
    if reads is not None:
        reads.append(Path(path))
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            return "", Problem(display, 1, "is a folder, not a file")
        if not stat.S_ISREG(mode):  # a FIFO would block forever, /dev/zero never end
            return "", Problem(display, 1, "not a regular file; refusing to read it")
        # what is opened is checked again once open: the path may have been swapped for a
        # link out, a FIFO or a folder since the checks above (kbfiles.open_checked)
        fd, st = open_checked(path)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(st.st_mode):
                return "", Problem(display, 1, "not a regular file; refusing to read it")
            data = handle.read(limit + 1)
    except Swapped:
        return "", Problem(display, 1, "replaced while being opened; refusing to read it")
    except Refused as exc:
        where = str(exc).partition(": ")[2].split(", outside")[0]  # "resolves to REAL"
        return "", Problem(display, 1, f"{where}, outside the knowledge base; refusing to read it")
    except OSError as exc:
        return "", Problem(display, 1, f"cannot read file: {exc.strerror or exc}")
    if len(data) > limit:
        return "", Problem(display, 1, f"file larger than {limit} bytes; refusing to read it")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return "", Problem(display, line, f"not UTF-8 (byte 0x{data[exc.start]:02x})")
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n"), None


def _syntax_problem(text: str, display: str) -> Problem:
    """Re-parse with the pure-Python parser: its messages name the offending character."""
    try:
        yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        return Problem(display, line, f"YAML syntax error: {exc.problem or exc}")
    except yaml.YAMLError as exc:
        return Problem(display, 1, f"YAML syntax error: {exc}")
    except RecursionError:
        return Problem(display, 1, f"nested deeper than {MAX_DEPTH} levels")
    return Problem(display, 1, "YAML syntax error")
