"""A fact as the block YAML libyaml writes for it, written here directly where libyaml's
choices are certain: every string printable and on one line.

An import writes thousands of facts; handing libyaml one event per value (yamlevents.py)
and then indenting its lists (writeback._indent_sequences) was the largest part of writing
them. For such facts libyaml's choices follow from a few rules of its emitter (emitter.c):

- a string is written plain where its text reads back as a string and no indicator forbids
  it (`yaml_emitter_analyze_scalar`: `: ` and ` #` anywhere, `- ` or `?` at the start, in a
  flow collection any of `,?[]{}:`), else single-quoted, `'` doubled;
- a mapping or list whose members are all scalars is written in flow style, the others in
  block style, a list under a key at the key's own column;
- past the width (column 100) a plain or quoted value breaks at its next single space,
  onto a line indented two past its key, dash or flow collection, and a flow collection
  breaks before its next member (`..._write_plain_scalar`, `..._emit_flow_mapping_key`).

Anything else (a character libyaml escapes, a list inside a list, a key over 128 bytes, a
value of another type, a collection reached twice, a broken line `_indent_sequences` would
read as a key or an item) gives None, and the caller has libyaml write that fact. The lists
come out indented under their key as `_indent_sequences` makes libyaml's text.
tests/test_blockyaml.py holds libyaml's text for random facts as the oracle.

    block = fact_block(fact)  # ("- id: x\\n  title: ...\\n", values, depth, exact) or None
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from factbook.store.yamlevents import float_text, implied_tag

_STR, _INT, _FLOAT, _BOOL, _NULL = (
    "tag:yaml.org,2002:" + t for t in ("str", "int", "float", "bool", "null")
)
WIDTH = 100  # the writers' width: libyaml breaks a line only past this column
_SIMPLE_KEY_MAX = 128  # a longer key is written as a complex key (`? key`)
_INT_BITS_EXACT = 64  # as yamlevents: past it the reader may refuse an integer
# libyaml's printable characters (IS_PRINTABLE) that are not line breaks (IS_BREAK), named by
# those they are not: C0 and C1 controls (NEL, a tab), LS, PS, surrogates, the BOM, U+FFFE,
# U+FFFF and all from U+10000, which it escapes or breaks (a negated class: the ranges it
# leaves compiled ten times slower, 9 ms of each run's start)
_NOT_ONE_LINE = "\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff\U00010000-\U0010ffff"


def _printable_but(excluded: str) -> str:
    """A pattern's class of the printable one-line characters but `excluded`."""
    return "[^" + _NOT_ONE_LINE + "".join(re.escape(c) for c in excluded) + "]"


_ONE_LINE = re.compile(_printable_but("") + "*+")
# libyaml's analysis (yaml_emitter_analyze_scalar) of a text that may be written plain, as
# one pattern: no document marker; a first character that is no indicator (`?`, `:` and
# `-` only followed by a non-space); then no `:` followed by a space or the end, no ` #`,
# no trailing space; in a flow collection no `,?[]{}:` at all
_FIRST = _printable_but(" #,[]{}&*!|>'\"%@`?:-")
_BLOCK_PLAIN = re.compile(
    rf"(?!---|\.\.\.)(?:{_FIRST}|[?:\-](?=[^ ]))"
    rf"(?:{_printable_but(' :#')}++|:(?=[^ ])|#| ++(?=[^ #]))*+"
)
_FLOW_PLAIN = re.compile(
    rf"(?!---|\.\.\.)(?:{_FIRST}|-(?=[^ ]))(?:{_printable_but(' :#,?[]{}')}++|#| ++(?=[^ #]))*+"
)
_MEMO_UP_TO = 64  # characters: a status, a category, a key, a short value
_MEMO_MAX = 20_000
# text -> as written: a value in a block collection, in a flow one, a key in each
_BLOCK_VALUE: dict[str, str] = {}
_FLOW_VALUE: dict[str, str] = {}
_BLOCK_KEY: dict[str, str] = {}
_FLOW_KEY: dict[str, str] = {}
_SCALARS = (str, int, float, bool, type(None))


class Block(NamedTuple):
    """A fact's block: its text and what the reader will count in it."""

    text: str  # `- key: value` lines, each ended with a newline
    nodes: int  # values, keys and collections, the fact's mapping among them
    depth: int  # the deepest collection's nesting, the fact's mapping being 1
    exact: bool  # read back, equal to the fact: no NaN, no integer past 64 bits


class _Unsure(Exception):
    """Something libyaml may write otherwise than these rules say."""


def fact_block(fact: dict[str, Any]) -> Block | None:
    """`fact` as one item of a block list: libyaml's text for `[fact]`, lists indented under
    their key; None where the rules above do not decide it."""
    writer = _Writer()
    try:
        writer.item(fact, 0, 1, 0)
    except _Unsure:
        return None
    writer.lines.append("")
    return Block("\n".join(writer.lines), writer.nodes, writer.depth, writer.exact)


def flow_member(value: Any) -> str | None:
    """`value` as the emitter writes it as one member of a flow list on a line with no
    width (`[value]` less its brackets): a scalar, or a list of scalars in flow style; None
    where these rules do not decide it (a mapping: `safe_dump` sorts its keys).
    targets.yaml's entries are written so, one `key: value` a line: handing the emitter
    each value cost 6 s for 36,000 boxes."""
    writer = _Writer()
    try:
        kind = type(value)
        if kind in _SCALARS:
            return writer.scalar(value, True)
        if kind is list and all(type(v) in _SCALARS for v in value):
            return "[" + ", ".join([writer.scalar(v, True) for v in value]) + "]"
    except _Unsure:
        return None
    return None


def _string(text: str, flow: bool, key: bool) -> str:
    """A string as libyaml writes it here: plain where allowed and read back as a string,
    else single-quoted; _Unsure for what it escapes, breaks or writes as a complex key."""
    memo = (_FLOW_KEY if key else _FLOW_VALUE) if flow else (_BLOCK_KEY if key else _BLOCK_VALUE)
    written = memo.get(text)
    if written is not None:
        return written
    if key and (len(text) > _SIMPLE_KEY_MAX or len(text.encode("utf-8")) > _SIMPLE_KEY_MAX):
        raise _Unsure
    plain = (_FLOW_PLAIN if flow else _BLOCK_PLAIN).fullmatch(text)
    if plain is not None and implied_tag(text) == _STR:
        written = text
    elif _ONE_LINE.fullmatch(text):
        written = "'" + text.replace("'", "''") + "'"
    else:
        raise _Unsure
    if len(text) <= _MEMO_UP_TO:
        if len(memo) >= _MEMO_MAX:
            memo.clear()
        memo[text] = written
    return written


_BREAKABLE = re.compile(r"(?<! ) (?! )")  # a single space: where libyaml may break a line


def _folded(line: str, lead: str, written: str, indent: str, shift: int) -> list[str]:
    """`line` + `lead` + `written` (a scalar as written) as libyaml writes it: broken at each
    single space it reaches past the width, onto lines starting with `indent`. Columns are
    libyaml's own, before `_indent_sequences` moved these lines by `shift`. A quoted scalar
    never breaks at its first or last character."""
    column = len(line) + len(lead) - shift  # where `written` starts
    if column + len(written) <= WIDTH:  # no space past the width: the common case
        return [line + lead + written]
    quoted = written.startswith("'")
    last = len(written) - 2  # a quoted scalar's last character
    out: list[str] = []
    start = 0  # where the current line's part of `written` starts
    for found in _BREAKABLE.finditer(written):
        at = found.start()
        if quoted and (at == 1 or at == last):
            continue
        if column + at - start <= WIDTH:
            continue
        out.append(line + lead + written[start:at])
        line, lead, start = indent, "", at + 1
        column = len(indent) - shift
    out.append(line + lead + written[start:])
    return out


def _check_broken(lines: list[str]) -> None:
    """Lines a broken value or flow collection spans must read to `_indent_sequences` as
    what they are: none ends like a key (`x:`), none goes on like an item (`- x`)."""
    if len(lines) > 1:
        for n, line in enumerate(lines):
            if line.endswith(":") or (n and line.lstrip(" ").startswith("- ")):
                raise _Unsure


class _Writer:
    """Lines of one fact's block, with the reader's counts. `indent` is a final column, and
    `shift` how far `_indent_sequences` moved that part from libyaml's own columns."""

    __slots__ = ("depth", "exact", "lines", "nodes", "seen")

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.nodes = 0
        self.depth = 0
        self.exact = True
        self.seen: set[int] = set()

    def scalar(self, value: Any, flow: bool, key: bool = False) -> str:
        """A scalar as written (str by `_string`, the others plain)."""
        kind = type(value)
        if kind is str:
            return _string(value, flow, key)
        if kind is bool:
            text, tag = ("true" if value else "false"), _BOOL
        elif kind is int:
            text, tag = str(value), _INT
            self.exact = self.exact and value.bit_length() <= _INT_BITS_EXACT
        elif kind is float:
            text, tag = float_text(value), _FLOAT
            self.exact = self.exact and value == value
        elif value is None:
            text, tag = "null", _NULL
        else:
            raise _Unsure  # another type, a subclass: the representer's
        if implied_tag(text) != tag or not (_FLOW_PLAIN if flow else _BLOCK_PLAIN).fullmatch(text):
            raise _Unsure
        if key and len(text) > _SIMPLE_KEY_MAX:
            raise _Unsure
        return text

    def enter(self, value: Any, level: int, members: int) -> None:
        """A collection and its `members` (keys and scalar values) counted; one reached
        twice is refused (the representer would write an anchor)."""
        if id(value) in self.seen:
            raise _Unsure
        self.seen.add(id(value))
        self.nodes += 1 + members
        if level > self.depth:
            self.depth = level

    def value(self, line: str, written: str, indent: int, shift: int) -> None:
        """A scalar as written after `line` (a key's `key:` or an item's `-`), its broken
        lines indented two past `indent`, the key's or the dash's column."""
        whole = line + " " + written
        if len(whole) - shift <= WIDTH:  # the common case: nothing to break
            self.lines.append(whole)
            return
        lines = _folded(line, " ", written, " " * (indent + 2), shift)
        _check_broken(lines)
        self.lines += lines

    def flow(self, line: str, value: Any, indent: int, level: int, shift: int) -> bool:
        """`value` after `line` in flow style, when it is a collection of scalars only (an
        empty one too): its members past the width start lines two past `indent` (the key's
        or the dash's column), their broken values four past it. False for a block one."""
        kind = type(value)
        members: list[tuple[str, str]] = []  # (key and colon, or "" in a list; value)
        if kind is dict:
            # a block one is known before any member is written (a fact's own mapping:
            # its scalars were written here, then again as block lines)
            for v in value.values():
                if type(v) not in _SCALARS:
                    return False
            for k, v in value.items():
                if type(k) is str:
                    written_key = _FLOW_KEY.get(k) or _string(k, True, True)
                elif type(k) in _SCALARS:
                    written_key = self.scalar(k, True, True)
                else:
                    return False
                written = (
                    (_FLOW_VALUE.get(v) or _string(v, True, False))
                    if type(v) is str
                    else self.scalar(v, True)  # a scalar: checked above
                )
                members.append((written_key + ":", written))
            opening, closing, count = " {", "}", 2 * len(value)
        elif kind is list:
            for item in value:
                if type(item) is str:
                    members.append(("", _FLOW_VALUE.get(item) or _string(item, True, False)))
                elif type(item) in _SCALARS:
                    members.append(("", self.scalar(item, True)))
                else:
                    return False
            opening, closing, count = " [", "]", len(value)
        else:
            raise _Unsure
        self.enter(value, level, count)
        joined = ", ".join([f"{k} {v}" if k else v for k, v in members])
        whole = line + opening + joined + closing
        if len(whole) - shift <= WIDTH:  # the common case: one line
            self.lines.append(whole)
            return True
        self.lines += self.broken_flow(line + opening, members, closing, indent, shift)
        return True

    @staticmethod
    def broken_flow(
        line: str, members: list[tuple[str, str]], closing: str, indent: int, shift: int
    ) -> list[str]:
        """A flow collection's lines past the width: a member starts a new line two past
        `indent` once the line is past it, a value breaks onto lines four past it."""
        member_indent = " " * (indent + 2)
        value_indent = " " * (indent + 4)
        out: list[str] = []
        lead = ""  # after `{`, `[` or a break: no space before a member
        for key_part, value_part in members:
            if len(line) - shift > WIDTH:
                out.append(line)
                line, lead = member_indent, ""
            if key_part:
                line += lead + key_part
                lead = " "
            *done, line = _folded(line, lead, value_part, value_indent, shift)
            out += done
            line += ","
            lead = " "
        if members:
            line = line[:-1]  # the last member's comma
        out.append(line + closing)
        _check_broken(out)
        return out

    def mapping(
        self, value: dict[Any, Any], indent: int, level: int, head: str, shift: int
    ) -> None:
        """A block mapping's lines, its keys at `indent`; the first key after `head`."""
        self.enter(value, level, len(value))
        pad = " " * indent
        for key, item in value.items():
            written_key = (
                (_BLOCK_KEY.get(key) or _string(key, False, True))
                if type(key) is str
                else self.scalar(key, False, True)
            )
            start = head + written_key + ":"
            kind = type(item)
            if kind is str:
                self.nodes += 1
                written = _BLOCK_VALUE.get(item) or _string(item, False, False)
                whole = start + " " + written
                if len(whole) - shift <= WIDTH:  # `value`'s common case, inline
                    self.lines.append(whole)
                else:
                    self.value(start, written, indent, shift)
            elif kind in _SCALARS:
                self.nodes += 1
                self.value(start, self.scalar(item, False), indent, shift)
            elif not self.flow(start, item, indent, level + 1, shift):
                self.lines.append(start)
                if kind is dict:
                    self.mapping(item, indent + 2, level + 1, pad + "  ", shift)
                # `_indent_sequences` indents a list under a key only when the key starts
                # its line unquoted: under an item's first key (`- name:`) or a quoted key
                # the list stays at the key's own column, as libyaml wrote it
                elif head == pad and not written_key.startswith("'"):
                    self.sequence(item, indent + 2, level + 1, shift + 2)
                else:
                    self.sequence(item, indent, level + 1, shift)
            head = pad

    def sequence(self, value: list[Any], indent: int, level: int, shift: int) -> None:
        """A block list's lines, its dashes at `indent`."""
        self.enter(value, level, 0)
        for item in value:
            self.item(item, indent, level + 1, shift)

    def item(self, item: Any, indent: int, level: int, shift: int) -> None:
        """One item of a block list, its dash at `indent`."""
        dash = " " * indent + "-"
        if type(item) in _SCALARS:
            self.nodes += 1
            self.value(dash, self.scalar(item, False), indent, shift)
        elif not self.flow(dash, item, indent, level, shift):
            if type(item) is not dict:
                raise _Unsure  # a list in a list: libyaml writes `- - a`
            self.mapping(item, indent + 2, level, dash + " ", shift)
