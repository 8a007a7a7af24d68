"""A knowledge base's files are read only inside its root, after resolving symlinks.

A shared knowledge base is written by many people; one of them can plant
`facts/x.yaml -> /etc/shadow`, `results -> /home/ci`, an `inventory: /proc/self/environ` or an
`Include /etc/shadow` in a repository ssh_config, and every reader would echo the first line of
what it found ("unknown key 'root:*:...'"). The rule, in one place: while a knowledge base is
read (`confined(root)`), every bounded read (`yamlsrc.read_text_bounded`, which all readers of
KB files use) first resolves the path and refuses one that leaves the root, with one line that
names the path and never shows its content. The same check guards the folders factbook writes
into (`results/`, the lock folder): `require_inside`.

A path the user gave on the command line (`--inventory FILE`, `import DUMP`) is the user's
choice and is read where it is; errors about such files quote none of their content
(`scrub`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from factbook.errors import InputError, Problem
from factbook.knowledge.limits import KB_FILE_MAX_BYTES

_ROOT: ContextVar[Path | None] = ContextVar("factbook_kb_root", default=None)


@contextmanager
def confined(root: Path | str | None) -> Iterator[None]:
    """Reads in this block stay inside `root` (None: the user's own paths, unconfined)."""
    token = _ROOT.set(Path(os.path.realpath(root)) if root is not None else None)
    try:
        yield
    finally:
        _ROOT.reset(token)


def current_root() -> Path | None:
    """The root reads are confined to right now, if any."""
    return _ROOT.get()


def escapes(path: Path | str, root: Path | str | None = None) -> Path | None:
    """Where `path` really is, when that is outside `root` (default: the confining root)."""
    base = Path(os.path.realpath(root)) if root is not None else _ROOT.get()
    if base is None:
        return None
    real = Path(os.path.realpath(path))
    if real == base or base in real.parents:
        return None
    return real


def outside_problem(
    path: Path | str, display: str, root: Path | str | None = None
) -> Problem | None:
    """The one-line refusal for a path that leaves the knowledge base, if it does."""
    real = escapes(path, root)
    if real is None:
        return None
    return Problem(
        display, 1, f"resolves to {real}, outside the knowledge base; refusing to read it"
    )


def require_inside(path: Path | str, display: str, root: Path | str) -> None:
    """Raise InputError when a folder factbook reads or writes leaves the knowledge base."""
    real = escapes(path, root)
    if real is not None:
        raise InputError(
            f"{display}: resolves to {real}, outside the knowledge base; refusing to use it"
        )


class Refused(OSError):
    """A knowledge base file that is not read: outside the root, not a regular file, too
    large. An OSError, so readers that skip an unreadable file skip this one too."""


MAX_FILE_BYTES = KB_FILE_MAX_BYTES  # limits.py: shared with the writers


def named_inside(path: Path | str, root: Path | str) -> bool:
    """Whether `path` is named inside `root` before links are resolved (`root/build/x`, not
    `../x`): a folder the knowledge base controls, which must then also resolve inside it."""
    base = os.path.abspath(root)
    return os.path.commonpath([base, os.path.abspath(path)]) == base


def check_readable(path: Path | str, *, root: Path | str | None = None) -> None:
    """Raise `Refused` for a file that would not be read: outside the root, or not a regular
    file (a FIFO would block, a device never end, a folder cannot be read)."""
    real = escapes(path, root)
    if real is not None:
        raise Refused(f"{path}: resolves to {real}, outside the knowledge base; not read")
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise Refused(f"{path}: not a regular file; not read")


class Swapped(Refused):
    """The file opened is not the one the path leads to now: replaced, by a link or another
    file, between the check and the open (or right after it)."""


_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)


def open_checked(path: Path | str, root: Path | str | None = None) -> tuple[int, os.stat_result]:
    """A descriptor on `path` and its fstat, where what was opened lies inside the root.
    Checking where a path leads, then opening it, left a window: a fact file swapped for a
    link to /etc/shadow in between was read, and its first line echoed by lint (round 24: 7
    of 288 runs under a swapping loop). Here the open comes first, then where the file
    opened is: the kernel's own name for the descriptor (/proc/self/fd), else where the path
    leads now and that this is the file opened (lstat: a link swapped back in is not
    followed). Outside: `Refused`; another file: `Swapped`. Opened without blocking, so a
    FIFO swapped in is found by the caller's mode check, not waited on. Raises OSError."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        st = os.fstat(fd)
        base = Path(os.path.realpath(root)) if root is not None else _ROOT.get()
        if base is not None:
            _check_opened(fd, st, path, base)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _check_opened(fd: int, st: os.stat_result, path: Path | str, base: Path) -> None:
    """Refused or Swapped unless the file open on `fd` lies inside `base`."""
    try:
        named = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        named = None
    if named is not None and named.startswith("/"):
        real = Path(named.removesuffix(" (deleted)"))
        if real != base and base not in real.parents:
            raise Refused(f"{path}: resolves to {real}, outside the knowledge base; not read")
        return
    real = Path(os.path.realpath(path))
    if real != base and base not in real.parents:
        raise Refused(f"{path}: resolves to {real}, outside the knowledge base; not read")
    try:
        now = os.lstat(real)
    except OSError:
        now = None
    if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        raise Swapped(f"{path}: replaced while being opened; not read")


def _read_checked(path: Path | str, root: Path | str | None, size: int) -> bytes:
    """At most `size` bytes of a regular file inside the root (open_checked)."""
    check_readable(path, root=root)  # the common refusals, with their messages, first
    fd, st = open_checked(path, root)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{path}: not a regular file; not read")
        return handle.read(size)


def read_head(path: Path | str, size: int, *, root: Path | str | None = None) -> bytes:
    """The first `size` bytes of a knowledge base file (a title, a header): `check_readable`,
    then a bounded read whatever the file's length."""
    return _read_checked(path, root, size)


def read_bytes(
    path: Path | str, *, root: Path | str | None = None, limit: int = MAX_FILE_BYTES
) -> bytes:
    """A knowledge base file's bytes: inside the root, a regular file (never a FIFO or a
    device: they would block or never end), at most `limit` bytes; else `Refused`."""
    data = _read_checked(path, root, limit + 1)
    if len(data) > limit:
        raise Refused(f"{path}: larger than {limit} bytes; not read")
    return data


def read_text(
    path: Path | str,
    *,
    root: Path | str | None = None,
    limit: int = MAX_FILE_BYTES,
    errors: str = "strict",
) -> str:
    """`read_bytes` decoded as UTF-8 (a bad byte raises UnicodeDecodeError unless `errors`)."""
    return read_bytes(path, root=root, limit=limit).decode("utf-8", errors)


_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|\[[^\]\n]*\]|\{[^}\n]*\}")
_WINDOW = 8


def scrub(message: str, path: Path | str) -> str:
    """`message` about the user's file at `path` with none of that file's content in it.

    Quoted spans are elided; if a run of 8 characters of what is left still occurs in the
    file (an unquoted word taken from it), only the location is kept.
    """
    where = str(path)
    head, sep, rest = message.partition(where)
    prefix = head + sep
    if sep and rest.startswith(":"):  # path:line:
        m = re.match(r":\d+", rest)
        if m:
            prefix += m.group()
            rest = rest[m.end() :]
    rest = _QUOTED.sub("'…'", rest if sep else message)
    prefix = prefix if sep else ""
    content = ""
    try:
        if stat.S_ISREG(os.stat(path).st_mode):  # never open a FIFO or a device here
            with open(path, "rb") as handle:
                content = handle.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        pass
    body = rest.strip(": ")
    for i in range(max(0, len(body) - _WINDOW + 1)):
        if body[i : i + _WINDOW] in content:
            body = "not usable here (its content is not shown)"
            break
    return f"{prefix}: {body}" if prefix else body
