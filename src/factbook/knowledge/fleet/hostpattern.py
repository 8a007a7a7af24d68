"""Host patterns of Ansible inventories: `name[:port]` with `[x:y(:step)]` ranges anywhere.

    www[01:50].example.com     cpu-[a:f].lab     node-[0:10:2]     db[1:2]-[a:b]:2222

Read by the rules ansible-core documents (and `ansible.parsing.utils.addresses` applies): a
trailing `:NN` is a port only when what precedes it is an IPv4 address, a bracketed IPv6
address or a host name (each possibly holding ranges); otherwise the whole text is the
pattern. A range is `[begin:end]` or `[begin:end:step]`, numeric (a leading zero pads every
value to the width of `begin`, which must then equal `end`'s) or one letter to one letter;
several ranges multiply. How many names a pattern expands to is computed before any is made,
so a typo like `n[1:99999999]` is refused at once instead of filling memory.
"""

from __future__ import annotations

import itertools
import re
import string
from collections.abc import Iterator, Sequence

from factbook.knowledge.limits import NUMBER_MAX_DIGITS, PORT_MAX_DIGITS
from factbook.knowledge.names import shown

# What may stand where Ansible's host grammar allows a range (alphanumeric: one letter to one
# letter, or digits to digits, with an optional numeric step).
_ALNUM_RANGE = r"\[(?:[a-z]:[a-z]|[0-9]+:[0-9]+)(?::[0-9]+)?\]"
_NUM_RANGE = r"\[[0-9]+:[0-9]+(?::[0-9]+)?\]"
_HEX_RANGE = r"\[[0-9a-f]+:[0-9a-f]+(?::[0-9]+)?\]"
_LABEL = rf"(?:\w|{_ALNUM_RANGE})(?:[\w-]|{_ALNUM_RANGE})*(?<![_-])"
_HOSTNAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*", re.I)
_V4 = rf"(?:[01]?[0-9]{{1,2}}|2[0-4][0-9]|25[0-5]|{_NUM_RANGE})"
_IPV4 = re.compile(rf"(?:{_V4}\.){{3}}{_V4}", re.I)
_V6 = rf"(?:[0-9a-f]{{1,4}}|{_HEX_RANGE})"
_IPV6 = re.compile(
    rf"(?:{_V6}:){{7}}{_V6}|(?:{_V6}:){{1,6}}:|(?:{_V6}:)(?::{_V6}){{1,6}}|"
    rf"(?:{_V6}:){{2}}(?::{_V6}){{1,5}}|(?:{_V6}:){{3}}(?::{_V6}){{1,4}}|"
    rf"(?:{_V6}:){{4}}(?::{_V6}){{1,3}}|(?:{_V6}:){{5}}(?::{_V6}){{1,2}}|"
    rf"(?:{_V6}:){{6}}(?::{_V6})|:(?::{_V6}){{1,6}}|{_V6}?::|"
    rf"(?:0:){{6}}(?:{_V6}\.){{3}}{_V6}|::(?:ffff:)?(?:{_V6}\.){{3}}{_V6}|"
    rf"(?:0:){{5}}ffff:(?:{_V6}\.){{3}}{_V6}",
    re.I,
)
_BRACKETED_PORT = re.compile(r"\[(.+)\]:([0-9]+)")
_HOST_PORT = re.compile(r"((?:[^:\[\]]|\[[^\]]*\])*):([0-9]+)")

MAX_RANGE_HOSTS = 100_000  # one pattern's expansion; `n[1:99999999]` is a typo, not a fleet


class PatternError(ValueError):
    """A host pattern Ansible would refuse too (bad range, empty name, `---`)."""


def is_ipv6(text: str) -> bool:
    """Whether `text` is an IPv6 address by Ansible's address grammar (`2001:db8::10`)."""
    return _IPV6.fullmatch(text) is not None


def split_port(spec: str) -> tuple[str, int | None]:
    """`name:port` -> (name, port) where Ansible reads a port; else (spec, None)."""
    if ":" not in spec:  # no port to read, whatever else the text is (most hosts)
        return spec, None
    address, port = spec, None
    for pattern in (_BRACKETED_PORT, _HOST_PORT):  # both in turn, as Ansible applies them
        found = pattern.fullmatch(address)
        if found:
            if len(found.group(2)) > PORT_MAX_DIGITS:  # Ansible's int() fails on 4,300 digits
                raise PatternError(
                    f"host pattern {shown(spec)!r}: port {shown(found.group(2))} is not a "
                    "number from 1 to 65535"
                )
            address, port = found.group(1), int(found.group(2))
    if any(p.fullmatch(address) for p in (_IPV4, _IPV6, _HOSTNAME)):
        return address, port
    return spec, None  # not a host Ansible recognises: the whole text is the pattern


def parse_host(spec: str) -> tuple[list[str], int | None]:
    """A host entry of an inventory -> (the names it expands to, the port it sets or None)."""
    if not isinstance(spec, str):
        raise PatternError(
            f"host pattern {spec!r} must be a string (quote numbers in YAML inventories)"
        )
    name, port = split_port(spec)
    if spec.strip().endswith(":") and port is None:
        raise PatternError(f"host pattern {spec!r} ends in ':' (reserved for a port)")
    names = expand_range(name)
    if not names or any(not n for n in names):
        raise PatternError(f"host pattern {spec!r}: empty host name")
    if "---" in (n.strip() for n in names):
        raise PatternError(f"host pattern {spec!r}: '---' starts a YAML file, not a host")
    return names, port


def expand_range(pattern: str, limit: int = MAX_RANGE_HOSTS) -> list[str]:
    """`node-[01:03]` -> node-01, node-02, node-03; `[a:c]` letters; `[0:10:5]` a stride;
    several ranges multiply. PatternError beyond `limit` names, before any is made."""
    if "[" not in pattern:  # no range: the name itself (most hosts)
        return [pattern]
    parts = _segments(pattern)
    total = 1
    for part in parts:
        total *= len(part)
        if total > limit:
            raise PatternError(f"{pattern!r} expands to more than {limit} hosts")
    return ["".join(words) for words in itertools.product(*parts)]


def _segments(pattern: str) -> list[Sequence[str]]:
    """The pattern cut into literal text and range values, left to right (as Ansible cuts at
    the first `[` and the first `]` after it, then goes on with the rest)."""
    parts: list[Sequence[str]] = []
    rest = pattern
    while "[" in rest:
        head, _, after = rest.partition("[")
        body, closed, tail = after.partition("]")
        if not closed:
            raise PatternError(f"{pattern!r}: '[' without ']'")
        parts += [(head,), _values(pattern, body)]
        rest = tail
    parts.append((rest,))
    return parts


class _Padded(Sequence[str]):
    """range() values as text, zero-padded to a width, without building the list."""

    def __init__(self, values: range, width: int):
        self.values, self.width = values, width

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return str(self.values[index]).zfill(self.width)

    def __iter__(self) -> Iterator[str]:
        return (str(v).zfill(self.width) for v in self.values)


def _values(pattern: str, body: str) -> Sequence[str]:
    bounds = body.split(":")
    if len(bounds) not in (2, 3):
        raise PatternError(f"{pattern!r}: a host range is [begin:end] or [begin:end:step]")
    begin, end = bounds[0] or "0", bounds[1]
    if not end:
        raise PatternError(f"{pattern!r}: a host range needs an end value")
    try:
        step = int(bounds[2]) if len(bounds) == 3 else 1
    except ValueError:
        raise PatternError(f"{pattern!r}: the step of a host range is a number") from None
    if step <= 0:
        raise PatternError(f"{pattern!r}: the step of a host range is a positive number")
    width = 0
    if begin[0] == "0" and len(begin) > 1:
        if len(begin) != len(end):
            raise PatternError(f"{pattern!r}: a zero-padded range needs equal-length bounds")
        width = len(begin)
    letters = string.ascii_letters
    if begin in letters and end in letters:  # substrings, as Ansible's str.index() finds them
        first, last = letters.index(begin), letters.index(end)
        if first > last:
            raise PatternError(f"{pattern!r}: a host range needs begin <= end")
        return [v.zfill(width) if width else v for v in letters[first : last + 1 : step]]
    if not (begin.isdigit() and end.isdigit() and begin.isascii() and end.isascii()):
        raise PatternError(f"{pattern!r}: bad host range [{body}]")
    if max(len(begin), len(end)) > NUMBER_MAX_DIGITS:  # int() refuses 4,300 digits
        raise PatternError(f"{shown(pattern)!r}: a host range's bounds have at most 18 digits")
    return _Padded(range(int(begin), int(end) + 1, step), width)
