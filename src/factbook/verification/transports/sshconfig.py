"""ssh_config evaluated the way OpenSSH 9 does it, for the paramiko transport.

paramiko's SSHConfig ignores `Include` (a host defined in an included file resolves to a direct
connection and loses its ProxyJump) and differs from OpenSSH on Match. This module follows
ssh_config(5) and readconf.c:

- one pass over the file, `Include` expanded in place (globs; relative paths are relative to
  ~/.ssh); an Include inside a non-matching Host/Match block includes nothing that matches;
- the FIRST value obtained for a keyword wins, except IdentityFile and CertificateFile, which
  accumulate; ProxyJump and ProxyCommand compete (whichever comes first); `none` is a value;
- `Host` patterns (`*`, `?`, `!negated`) match the host as typed; `Match host` matches the
  HostName already set (else the host as typed), `Match user` the User already set (else the
  local user), plus originalhost, localuser, all;
- command-line user and port (the target's fields) come first, as `ssh -l/-p` do.

What the paramiko transport cannot do (`Match exec`, `Match canonical/final`) is refused with
the file and line; `transport: openssh` handles those. tests/test_transport_sshconfig.py checks
the result against `ssh -G` for a corpus of configs.
"""

from __future__ import annotations

import fnmatch
import getpass
import glob
import os
import shlex
import socket
from dataclasses import dataclass, field
from pathlib import Path

from factbook.errors import UsageError

MULTI = frozenset({"identityfile", "certificatefile"})
DEFAULT_IDENTITIES = (
    "~/.ssh/id_rsa",
    "~/.ssh/id_ecdsa",
    "~/.ssh/id_ecdsa_sk",
    "~/.ssh/id_ed25519",
    "~/.ssh/id_ed25519_sk",
    "~/.ssh/id_xmss",
    "~/.ssh/id_dsa",
)
MAX_INCLUDE_DEPTH = 16


@dataclass(frozen=True)
class Line:
    keyword: str  # lower case
    args: tuple[str, ...]
    where: str  # file:line
    raw: str = ""  # the value as written (ProxyCommand keeps its quotes)


RAW = frozenset({"proxycommand", "localcommand", "remotecommand", "knownhostscommand"})


@dataclass
class Resolved:
    """What OpenSSH would use for one host (the fields `ssh -G` prints, raw)."""

    host: str  # as typed
    hostname: str
    port: int
    user: str
    identity_files: list[str]  # raw (tokens and ~ unexpanded); the defaults when none is set
    identity_files_set: bool
    options: dict[str, str] = field(default_factory=dict)  # other keywords, first value
    where: dict[str, str] = field(default_factory=dict)  # keyword -> file:line

    def get(self, keyword: str) -> str | None:
        return self.options.get(keyword.lower())

    @property
    def proxy_jump(self) -> str | None:
        value = self.get("proxyjump")
        return None if value is None or value.lower() == "none" else value

    @property
    def proxy_command(self) -> str | None:
        value = self.get("proxycommand")
        return None if value is None or value.lower() == "none" else value

    def expand(self, text: str) -> str:
        """OpenSSH's tokens and `~` in a path-like value (IdentityFile, UserKnownHostsFile)."""
        tokens = {
            "%": "%",
            "d": os.path.expanduser("~"),
            "h": self.hostname,
            "n": self.host,
            "p": str(self.port),
            "r": self.user,
            "u": getpass.getuser(),
            "l": socket.gethostname().split(".")[0],
            "L": socket.gethostname().split(".")[0],
            "i": str(os.getuid()),
        }
        out, i = [], 0
        while i < len(text):
            c = text[i]
            if c == "%" and i + 1 < len(text) and text[i + 1] in tokens:
                out.append(tokens[text[i + 1]])
                i += 2
                continue
            out.append(c)
            i += 1
        return os.path.expanduser("".join(out))


def _split(text: str, where: str) -> tuple[str, tuple[str, ...], str] | None:
    text = text.strip()
    if not text or text.startswith("#"):
        return None
    key, _, rest = text.replace("\t", " ").partition(" ")
    if "=" in key:
        key, _, more = key.partition("=")
        rest = f"{more} {rest}".strip()
    rest = rest.strip()
    if rest.startswith("="):
        rest = rest[1:].strip()
    if key.lower() in RAW:
        return key.lower(), tuple(rest.split()), rest
    try:
        args = shlex.split(rest, comments=True, posix=True)
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None
    return key.lower(), tuple(args), rest


def _pattern_list(patterns: list[str], value: str) -> bool:
    """OpenSSH's match_pattern_list: a matching negated pattern wins over any positive one."""
    value = value.lower()
    hit = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        pattern = pattern[1:] if negated else pattern
        if fnmatch.fnmatchcase(value, pattern.lower()):
            if negated:
                return False
            hit = True
    return hit


class SSHConfigFile:
    """One ssh_config file (and what it includes), evaluated per host like OpenSSH."""

    def __init__(self, path: str | os.PathLike[str] | None, *, ssh_dir: str = "~/.ssh"):
        self.path = Path(os.path.expanduser(str(path))) if path else None
        self.ssh_dir = Path(os.path.expanduser(ssh_dir))
        self._cache: dict[Path, list[Line]] = {}

    def _lines(self, path: Path) -> list[Line]:
        if path not in self._cache:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                raise UsageError(f"{path}: cannot read ssh config: {exc}") from None
            lines = []
            for number, raw in enumerate(text.splitlines(), 1):
                where = f"{path}:{number}"
                parsed = _split(raw, where)
                if parsed:
                    lines.append(Line(parsed[0], parsed[1], where, parsed[2]))
            self._cache[path] = lines
        return self._cache[path]

    def lookup(self, host: str, *, user: str | None = None, port: int | None = None) -> Resolved:
        """What `ssh [-l user] [-p port] host` would use."""
        state = _State(host.lower() if host else host, user, port)
        if self.path is not None and self.path.is_file():
            self._evaluate(self.path, state, True, 0)
        return state.result()

    def _evaluate(self, path: Path, state: _State, enabled: bool, depth: int) -> None:
        """`enabled` False: the Include sat in a non-matching block, so nothing here matches."""
        active = enabled
        for line in self._lines(path):
            if line.keyword == "host":
                active = enabled and _pattern_list(list(line.args), state.original)
            elif line.keyword == "match":
                active = enabled and self._match(line, state)
            elif line.keyword == "include":
                if depth >= MAX_INCLUDE_DEPTH:
                    raise UsageError(f"{line.where}: Include nested deeper than {depth}")
                for pattern in line.args:
                    full = os.path.expanduser(pattern)
                    if not os.path.isabs(full):
                        full = str(self.ssh_dir / full)
                    for found in sorted(glob.glob(full)):
                        self._evaluate(Path(found), state, active, depth + 1)
            elif active:
                state.set(line)

    def _match(self, line: Line, state: _State) -> bool:
        args = list(line.args)
        if not args:
            raise UsageError(f"{line.where}: Match needs criteria")
        result = True
        i = 0
        while i < len(args):
            criterion = args[i].lower()
            negate = criterion.startswith("!")
            criterion = criterion.lstrip("!")
            if criterion == "all":
                hit = True
                i += 1
            elif criterion in ("exec", "canonical", "final", "localnetwork", "tagged"):
                raise UsageError(
                    f"{line.where}: Match {criterion} is not supported by the paramiko transport;"
                    f" use transport: openssh for this host"
                )
            else:
                if i + 1 >= len(args):
                    raise UsageError(f"{line.where}: Match {criterion} needs an argument")
                patterns = args[i + 1].split(",")
                i += 2
                if criterion == "host":
                    hit = _pattern_list(patterns, state.current_hostname())
                elif criterion == "originalhost":
                    hit = _pattern_list(patterns, state.original)
                elif criterion == "user":
                    hit = _pattern_list(patterns, state.current_user())
                elif criterion == "localuser":
                    hit = _pattern_list(patterns, getpass.getuser())
                else:
                    raise UsageError(f"{line.where}: unknown Match criterion {criterion!r}")
            result = result and (hit != negate)
        return result


class _State:
    """The options collected so far for one lookup (first value wins)."""

    def __init__(self, original: str, user: str | None, port: int | None):
        self.original = original
        self.options: dict[str, str] = {}
        self.multi: dict[str, list[str]] = {}
        self.where: dict[str, str] = {}
        if user:
            self.options["user"] = user
            self.where["user"] = "target"
        if port:
            self.options["port"] = str(port)
            self.where["port"] = "target"

    def set(self, line: Line) -> None:
        key = line.keyword
        if key in MULTI:
            self.multi.setdefault(key, []).extend(line.args[:1])
            self.where.setdefault(key, line.where)
            return
        if not line.args:
            raise UsageError(f"{line.where}: {key} needs a value")
        if key in ("proxyjump", "proxycommand") and (
            "proxyjump" in self.options or "proxycommand" in self.options
        ):
            return  # they compete: the first one given wins
        if key in self.options:
            return
        value = line.raw if key in RAW else line.args[0]
        if key == "port" and not value.isdigit():
            raise UsageError(f"{line.where}: Port {value!r} is not a number")
        self.options[key] = value
        self.where[key] = line.where

    def current_hostname(self) -> str:
        name = self.options.get("hostname")
        return _expand_host(name, self.original) if name else self.original

    def current_user(self) -> str:
        return self.options.get("user") or getpass.getuser()

    def result(self) -> Resolved:
        idents = self.multi.get("identityfile", [])
        return Resolved(
            host=self.original,
            hostname=self.current_hostname(),
            port=int(self.options.get("port", 22)),
            user=self.current_user(),
            identity_files=list(idents) if idents else list(DEFAULT_IDENTITIES),
            identity_files_set=bool(idents),
            options=dict(self.options),
            where=dict(self.where),
        )


def _expand_host(value: str, original: str) -> str:
    """HostName accepts %h (the host as typed) and %%."""
    return value.replace("%%", "\0").replace("%h", original).replace("\0", "%").lower()
