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
import fnmatch
import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path

MARKERS = ("@cert-authority", "@revoked")


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
        name = name.lower()
        hit = False
        for pattern in self.patterns:
            negated = pattern.startswith("!")
            pattern = pattern[1:] if negated else pattern
            if fnmatch.fnmatchcase(name, _glob(pattern.lower())):
                if negated:
                    return False
                hit = True
        return hit


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


def _glob(pattern: str) -> str:
    """OpenSSH's `*`/`?` only: `[` in `[host]:port` is literal, not an fnmatch class."""
    return pattern.replace("[", "[[]")


def _hashed(field: str) -> tuple[bytes, bytes] | None:
    parts = field.split("|")
    if len(parts) != 4 or parts[1] != "1":
        return None
    try:
        return base64.b64decode(parts[2]), base64.b64decode(parts[3])
    except (binascii.Error, ValueError):
        return None


def parse(text: str, source: str) -> list[HostLine]:
    """Every usable line of a known_hosts file; unreadable lines are skipped."""
    out: list[HostLine] = []
    for number, raw in enumerate(text.splitlines(), 1):
        words = raw.split()
        if not words or words[0].startswith("#"):
            continue
        marker = words[0] if words[0] in MARKERS else None
        if marker:
            words = words[1:]
        elif words[0].startswith("@"):
            continue  # an unknown marker: OpenSSH skips the line
        if len(words) < 3:
            continue
        names, key_type, encoded = words[0], words[1], words[2]
        try:
            blob = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            continue
        hashed = _hashed(names) if names.startswith("|") else None
        if names.startswith("|") and hashed is None:
            continue
        patterns = () if hashed else tuple(p for p in names.split(",") if p)
        out.append(HostLine(marker, patterns, hashed, key_type, blob, f"{source}:{number}"))
    return out


def load(path: Path) -> list[HostLine]:
    """A file's lines ([] when it does not exist); OSError when it cannot be read."""
    if not path.is_file():
        return []
    return parse(path.read_text(encoding="utf-8", errors="replace"), str(path))
