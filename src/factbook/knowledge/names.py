"""Names people write (targets, env keys, fact ids, runbooks, steps) and paths built from them.

A name ends up in a shell command on a box, an HTML id and a folder under results/, so it is
checked once, at load time, against a strict pattern; `inside()` then proves that a path built
from a name stays in its folder, for names that came from somewhere the loader did not see
(a results file, a command line, a run id).

Host and group names read from an inventory (Ansible, ssh config) are what the fleet already
calls its machines, so they get a wider pattern that still holds no path separator, space,
quote, shell or pattern character (`,` `&` `!` `*` `?` `[` `~` `@`) and no leading `-` or `.`:
host names up to 253 characters (a full FQDN), IPv4 and IPv6 addresses (`2001:db8::10`,
`::1`), and a leading `_` (`_private`). Everywhere a name becomes a path, an HTML id or shell
text it is quoted or slugged (handbook `slug()`, `shlex.quote`, discover's file names), never
used raw; `--target` patterns keep an IPv6 address whole (fleet/patterns.py).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sized
from pathlib import Path

from factbook.errors import InputError

# An IPv6 address's characters in its text forms (`::`, an IPv4 tail): hex digits, `:`, `.`.
_IPV6 = re.compile(r"[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:(?:\.[0-9]{1,3}){3})?")
# fullmatch everywhere: `$` in re.match lets a trailing newline through
PATTERNS: dict[str, re.Pattern[str]] = {
    "target name": re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"),
    "inventory name": re.compile(rf"[A-Za-z0-9_][A-Za-z0-9._-]{{0,252}}|{_IPV6.pattern}"),
    "env key": re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}"),
    "fact id": re.compile(r"[a-z0-9_]+(\.[a-z0-9_-]+)*"),
    "runbook name": re.compile(r"[a-z0-9][a-z0-9._-]{0,99}"),
    "step name": re.compile(r"[a-z0-9][a-z0-9_-]*"),
    "server name": re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"),
}
# names whose pattern has no bound of its own: a 100,000-character fact id passed lint and
# became file names, HTML ids and metric labels
LONGEST = {"fact id": 200, "step name": 100}
HINTS = {
    "target name": "letters, digits, '.', '_', '-'; starting with a letter or digit",
    "inventory name": "letters, digits, '.', '_', '-', at most 253, not starting with '-' or "
    "'.'; or an IP address",
    "env key": "letters, digits and '_', not starting with a digit",
    "fact id": "dotted lower-case words: [a-z0-9_] then .[a-z0-9_-]",
    "runbook name": "lower-case letters, digits, '.', '_', '-'",
    "step name": "lower-case letters, digits, '_', '-'",
    "server name": "letters, digits, '.', '_', '-'; starting with a letter or digit",
}


def name_problem(kind: str, value: object) -> str | None:
    """Why `value` is not a valid name of `kind`, or None when it is."""
    longest = LONGEST.get(kind)
    if isinstance(value, str) and longest is not None and len(value) > longest:
        head = value[:SHOWN_AT_MOST]
        return f"bad {kind} {head!r}... ({len(value)} characters; at most {longest})"
    if isinstance(value, str) and PATTERNS[kind].fullmatch(value):
        return None
    return f"bad {kind} {str(value)[:SHOWN_AT_MOST]!r} (use {HINTS[kind]})"


SHOWN_AT_MOST = 80  # characters of a name quoted in a message


def shown(name: str) -> str:
    """A name as a message quotes it: its head when it is long (a 6 kB reference to a fact
    that does not exist was printed whole, once per line that named it)."""
    return name if len(name) <= SHOWN_AT_MOST else name[:SHOWN_AT_MOST] + "..."


KNOWN_SHOWN = 20  # names a message lists of what is known


def known_names(names: Iterable[object]) -> str:
    """What a message lists as known: at most KNOWN_SHOWN names and how many there are (a
    fleet's 5,000 targets made each `unknown target` line 40 kB)."""
    listed = [shown(str(name)) for name in itertools.islice(names, KNOWN_SHOWN + 1)]
    if len(listed) <= KNOWN_SHOWN:
        return ", ".join(listed) or "none"
    total = len(names) if isinstance(names, Sized) else None
    more = f"{total - KNOWN_SHOWN:,} more" if total is not None else "more"
    return ", ".join(listed[:KNOWN_SHOWN]) + f", … {more}"


def check_name(kind: str, value: object) -> str:
    """`value` when it is a valid name of `kind`; InputError otherwise."""
    problem = name_problem(kind, value)
    if problem:
        raise InputError(problem)
    return str(value)


def inside(base: Path, *parts: str) -> Path:
    """base/parts..., refused when the result would leave `base` (`..`, absolute parts, links)."""
    root = Path(base).resolve()
    resolved = root.joinpath(*parts).resolve()
    if not resolved.is_relative_to(root) or resolved == root:
        shown = "/".join(parts)
        if all(p and "/" not in p and p not in (".", "..") for p in parts):  # a link leads out
            raise InputError(f"path '{shown}' resolves to {resolved}, outside {base}")
        raise InputError(f"path '{shown}' leaves {base}: names may not hold '/' or '..'")
    return Path(base).joinpath(*parts)


# what Python makes of bytes that are not UTF-8 in a file name (surrogateescape): U+DC80-DCFF
_UNDECODABLE = re.compile("[\udc80-\udcff]")
NOT_UTF8 = "the file name is not UTF-8 (rename it)"


def undecodable(name: str) -> bool:
    """Whether a file name as Python read it holds bytes that were not UTF-8: such a name can
    be opened but not written into a page, a link, an index or a JSON answer as text (a
    `docs/status/` file named `\\xff.md` was a traceback from `docs` and `mkdocs build`, and
    made every `status --out docs/status/...` fail to write its index)."""
    return _UNDECODABLE.search(name) is not None
