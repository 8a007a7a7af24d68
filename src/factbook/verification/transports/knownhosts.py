"""known_hosts read as OpenSSH reads it (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT").

paramiko's HostKeys raises on a `@cert-authority` line (so one such line made every SSH check
an "internal error") and matches host names only literally. Here every line is understood:

- host patterns: comma lists with `*`, `?` and `!negation` (a matching negated pattern
  excludes the host), `[host]:port` for non-22 ports, hashed names (`|1|salt|hmac`);
- markers: `@revoked` keys are refused wherever offered; `@cert-authority` lines trust a CA
  for host certificates, which the paramiko transport cannot check: a host known ONLY through a
  CA is refused with the file and line and a pointer to `transport: openssh`;
- keys compare by their wire blob, so any key type (sk-*, certificates' CA keys) is read;
- a line that cannot be read is skipped, as OpenSSH skips it.
"""

from __future__ import annotations

import base64
import binascii
import errno
import hashlib
import hmac
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from factbook.knowledge.limits import KNOWN_HOSTS_MAX_BYTES
from factbook.verification.transports.sshwords import match_pattern_list

MARKERS = ("@cert-authority", "@revoked")
# ssh_config(5)'s defaults: UserKnownHostsFile ~/.ssh/known_hosts ~/.ssh/known_hosts2,
# GlobalKnownHostsFile /etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2
USER_KNOWN_HOSTS = ("~/.ssh/known_hosts", "~/.ssh/known_hosts2")
GLOBAL_KNOWN_HOSTS = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")


@dataclass(frozen=True)
class HostLine:
    """One usable known_hosts line."""

    marker: str | None
    patterns: tuple[str, ...]  # empty when the name is hashed
    hashed: tuple[bytes, bytes] | None  # (salt, hmac-sha1)
    key_type: str
    blob: bytes
    where: str  # file:line

    def matches(self, name: str) -> bool:
        """Does this line name host `name` (`host` or `[host]:port`)?"""
        if self.hashed is not None:
            salt, digest = self.hashed
            return hmac.compare_digest(hmac.new(salt, name.encode(), hashlib.sha1).digest(), digest)
        lowered = [pattern.lower() for pattern in self.patterns]
        return match_pattern_list(name.lower(), lowered) is True


class PlainIndex:
    """The unmarked lines by the host they name, so finding one host's keys among a fleet's
    thousand lines is a dictionary lookup, not a pattern match per line (a run over N boxes
    matched N x N lines). Lines with wildcards, negations or hashed names are still matched
    one by one; what `lookup` returns is in file order either way, as `matches` would find."""

    def __init__(self) -> None:
        self._literal: dict[str, list[tuple[int, HostLine]]] = {}
        self._other: list[tuple[int, HostLine]] = []
        self._count = 0

    def add(self, lines: list[HostLine]) -> None:
        for line in lines:
            order, self._count = self._count, self._count + 1
            if line.marker is not None:
                continue
            if line.hashed is None and all(_literal(p) for p in line.patterns):
                for name in dict.fromkeys(p.lower() for p in line.patterns):
                    self._literal.setdefault(name, []).append((order, line))
            else:
                self._other.append((order, line))

    def lookup(self, name: str) -> list[HostLine]:
        """Every unmarked line that names `name`, in file order."""
        found = list(self._literal.get(name.lower(), ()))
        found += [item for item in self._other if item[1].matches(name)]
        found.sort(key=lambda item: item[0])
        return [line for _, line in found]


def _literal(pattern: str) -> bool:
    """A pattern that matches only its own text (case aside)."""
    return not pattern.startswith("!") and "*" not in pattern and "?" not in pattern


def _hashed(field: str) -> tuple[bytes, bytes] | None:
    parts = field.split("|")
    if len(parts) != 4 or parts[1] != "1":
        return None
    try:
        return base64.b64decode(parts[2]), base64.b64decode(parts[3])
    except (binascii.Error, ValueError):
        return None


_FIELDS = re.compile("[ \t]+")
_C_SPACE = str.maketrans("", "", "\r\v\f")
_HOSTS_END = re.compile("[^ \t\0]*")


def _fields(line: str) -> tuple[str | None, str, str, str] | None:
    """(marker, host names, key type, base64 key) of a line as hostfile.c reads it, or None
    where OpenSSH skips the line. Fields end at a space or a tab only (str.split also cut at
    a vertical tab, a form feed, NEL...); the host names also at a NUL, which the reader then
    steps over (`*cp2++ = '\\0'`), while the marker and the key end at one (C strings)."""
    head = line.split("\0", 1)[0]  # the line as a C string sees it from the start
    at = len(line) - len(line.lstrip(" \t"))
    if at >= len(head) or line[at] == "#":
        return None
    marker = None
    while at < len(head) and line[at] == "@":
        space = head.find(" ", at)
        space = space if space >= 0 else head.find("\t", at)
        if marker is not None or space < 0 or head[at:space] not in MARKERS:
            return None  # a second marker, or one OpenSSH does not know: the line is skipped
        marker = head[at:space]
        at = space + len(line[space:]) - len(line[space:].lstrip(" \t"))
    hosts = _HOSTS_END.match(line, at)  # matches always, if only nothing
    end = hosts.end() if hosts else at
    if end >= len(line):
        return None
    key = [w for w in _FIELDS.split(line[end + 1 :].split("\0", 1)[0]) if w]
    return (marker, line[at:end], key[0], key[1]) if len(key) >= 2 else None


def _named_type(blob: bytes) -> str | None:
    """The key type a public key blob names first (an SSH string: a 4-byte length, then it)."""
    size = int.from_bytes(blob[:4], "big")
    if len(blob) < 4 + size:
        return None
    return blob[4 : 4 + size].decode("ascii", errors="replace")


def parse(text: str, source: str) -> list[HostLine]:
    """Every usable line of a known_hosts file (cut at newlines only, as getline reads it);
    unreadable lines are skipped."""
    out: list[HostLine] = []
    for number, raw in enumerate(text.split("\n"), 1):
        fields = _fields(raw)
        if fields is None:
            continue
        marker, names, key_type, encoded = fields
        try:  # b64_pton passes over C whitespace: the \r of a CRLF file, a \v or \f
            blob = base64.b64decode(encoded.translate(_C_SPACE), validate=True)
        except (binascii.Error, ValueError):
            continue
        if _named_type(blob) != key_type:  # sshkey_read: the key must be of the type written
            continue
        hashed = _hashed(names) if names.startswith("|") else None
        if names.startswith("|") and hashed is None:
            continue
        patterns = () if hashed else tuple(p for p in names.split(",") if p)
        out.append(HostLine(marker, patterns, hashed, key_type, blob, f"{source}:{number}"))
    return out


def load(path: Path) -> list[HostLine]:
    """A file's lines ([] when it does not exist, or is /dev/null as `UserKnownHostsFile
    /dev/null` names it); OSError when it cannot be read, is not a regular file, or is larger
    than KNOWN_HOSTS_MAX_BYTES (any file may be named as one: it is sized before it is read).

    OpenSSH reads a folder named as known_hosts as an empty file and waits forever on a FIFO;
    here both are refused with the file named (a `--known-hosts ~/.ssh` typo would otherwise
    say the host is "not in ~/.ssh", and a FIFO would hang the run)."""
    fd = _opened(path)
    if fd is None:
        return []
    try:  # bytes, not read_text: its universal newlines would make a lone \r a line break
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(KNOWN_HOSTS_MAX_BYTES + 1)  # it may have grown since fstat
    finally:
        os.close(fd)
    if len(data) > KNOWN_HOSTS_MAX_BYTES:
        raise OSError(errno.EFBIG, f"larger than {KNOWN_HOSTS_MAX_BYTES} bytes; not read")
    return parse(data.decode("utf-8", errors="replace"), str(path))


def check(path: Path) -> None:
    """OSError where `load` would refuse `path` (its kind, its size), found without reading
    it: a command line's `--known-hosts` is judged once, before any box is tried."""
    fd = _opened(path)
    if fd is not None:
        os.close(fd)


def _opened(path: Path) -> int | None:
    """A read descriptor of known_hosts `path`, its kind and size checked; None for no file
    or /dev/null (no known hosts, as ssh reads them)."""
    try:  # O_NONBLOCK: opening a FIFO returns at once, to be refused below, never waited on
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):  # as ssh: no file, no known hosts
        return None
    except OSError as exc:  # a socket cannot be opened (ENXIO): say what it is
        raise _by_kind(path, exc) from None
    try:
        st = os.fstat(fd)
        if _is_null(st):
            os.close(fd)
            return None
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, not_regular(path, st.st_mode))
        if st.st_size > KNOWN_HOSTS_MAX_BYTES:
            raise OSError(errno.EFBIG, f"larger than {KNOWN_HOSTS_MAX_BYTES} bytes; not read")
    except OSError:
        os.close(fd)
        raise
    return fd


_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def not_regular(path: Path | str, mode: int = stat.S_IFDIR) -> str:
    """Why a known_hosts path that is not a regular file is not used (its kind, never its
    content)."""
    kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
    return f"{kind}, not a regular file; not read"


def _by_kind(path: Path | str, exc: OSError) -> OSError:
    """`exc` of opening `path`, told as the kind of file it is where that is the reason."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return exc
    return exc if stat.S_ISREG(mode) else OSError(exc.errno, not_regular(path, mode))


def _is_null(st: os.stat_result) -> bool:
    """Whether `st` is /dev/null's (`UserKnownHostsFile /dev/null`: no known hosts)."""
    try:
        null = os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == null.st_rdev


def open_for_append(path: Path) -> int:
    """A write descriptor at the end of known_hosts `path` (made 0600 when new): refused,
    never waited on, when it is not a regular file (a FIFO without a reader would block the
    open for ever) or /dev/null. The caller closes it."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:  # a folder; a FIFO no one reads (O_NONBLOCK: ENXIO, no wait)
        raise _by_kind(path, exc) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) and not _is_null(st):
        os.close(fd)
        raise OSError(errno.EINVAL, not_regular(path, st.st_mode))
    return fd


def needs_newline(path: Path) -> bool:
    """Whether `path` ends without a line break, so a line appended would join its last
    line (and both be lost to a reader)."""
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            if st.st_size == 0 or not stat.S_ISREG(st.st_mode):
                return False
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"
    except OSError:
        return False
