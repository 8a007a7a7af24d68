"""The OpenSSH transport: the system `ssh` binary is the pipe (`transport: openssh`).

Everything the user's OpenSSH supports then works as it does in their shell: Include, Match,
ProxyCommand (bastion wrappers, IAP, SSM, Teleport), ProxyJump, certificates and
@cert-authority/@revoked, ControlMaster multiplexing, agents and hardware keys. factbook adds
only what keeps a run safe and non-interactive, on the command line (which wins over any
config file): BatchMode=yes (never a prompt), StrictHostKeyChecking=yes (accept-new with
--accept-new-host-keys; a CHANGED key is refused either way, by OpenSSH itself), a connect
timeout and ServerAlive keepalives. The agent runs behind the same supervisor as with paramiko
(remote.py), and ssh's stdin is its lifeline (pipe.py).

Jumps named in targets.yaml become a nested ProxyCommand (`ssh -W %h:%p JUMP`), so each jump
keeps its own user, port and identity file; with no `jump:` the ssh config's ProxyJump applies.
ssh's own errors (exit 255) are mapped to the same error classes and wording as paramiko's.
"""

from __future__ import annotations

import os
import pwd
import re

from factbook.errors import AuthError, HostKeyError, TargetError, UnreachableError, UsageError
from factbook.knowledge.limits import JUMP_MAX_HOPS
from factbook.knowledge.model import Target
from factbook.verification.transports.base import AgentProcess, Transport, TransportOptions
from factbook.verification.transports.pipe import announce, start_marked
from factbook.verification.transports.remote import remote_command, shell_join
from factbook.verification.transports.sshconfig import DEFAULT_IDENTITIES, SSHConfigFile

# Host and user words are checked before they reach ssh: ssh substitutes %h/%r unquoted into
# a ProxyCommand, and a leading "-" would be read as an option.
_HOST = re.compile(r"[A-Za-z0-9_\[][A-Za-z0-9._:%\[\]-]{0,252}")
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")


def _checked(kind: str, pattern: re.Pattern[str], value: str, target: str) -> str:
    if not pattern.fullmatch(value):
        raise TargetError(f"target {target}: {kind} {value!r} is not a valid SSH {kind}")
    return value


def _escape(text: str) -> str:
    """A literal for a value ssh expands %-tokens in."""
    return text.replace("%", "%%")


def _option(key: str, value: str) -> list[str]:
    """`-o Key=value`, quoted as a config line (ssh parses -o like one)."""
    if '"' in value or "\n" in value:
        raise UsageError(f"ssh option {key}: a value with a double quote or newline: {value!r}")
    return ["-o", f'{key}="{value}"' if any(c.isspace() for c in value) else f"{key}={value}"]


def _home_files(options: TransportOptions) -> tuple[str | None, str | None, list[str]]:
    """The ssh config, known_hosts and default keys to name on the command line, if any.

    Explicit options win. Otherwise OpenSSH finds its files itself, from the passwd home
    directory; when $HOME points elsewhere (the paramiko transport reads $HOME), the files
    there are named, so both transports see the same setup.
    """
    config = os.path.expanduser(options.ssh_config) if options.ssh_config else None
    known = os.path.expanduser(options.known_hosts) if options.known_hosts else None
    home = os.path.expanduser("~")
    try:
        passwd_home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        passwd_home = home
    keys: list[str] = []
    if os.path.realpath(home) != os.path.realpath(passwd_home):
        if config is None and os.path.isfile(os.path.join(home, ".ssh", "config")):
            config = os.path.join(home, ".ssh", "config")
        if known is None:
            known = os.path.join(home, ".ssh", "known_hosts")
        defaults = (os.path.expanduser(p) for p in DEFAULT_IDENTITIES)
        keys = [p for p in defaults if os.path.isfile(p)]
    return config, known, keys


def _config_sets_identity(config: str | None, target: Target) -> bool:
    """Does the config give this host an IdentityFile (then $HOME's default keys stay out)?"""
    if not config:
        return False
    try:
        found = SSHConfigFile(config).lookup(target.host or target.name, user=target.user)
    except UsageError:
        return True  # a config we cannot evaluate here: leave the keys to it
    return found.identity_files_set


class OpenSSHTransport(Transport):
    """`ssh -T [options] HOST 'sh -c ...'` per agent start; the config decides the rest."""

    def __init__(self, target: Target, targets: dict[str, Target], options: TransportOptions):
        super().__init__(target)
        self.options = options
        self.targets = targets
        chain = self._chain(target, 0)
        proxy: str | None = None
        for jump in chain:
            proxy = self._proxy_command(jump, proxy)
        self.argv = self._hop_argv(target, proxy)

    @property
    def label(self) -> str:
        t = self.target
        who = f"{t.user}@" if t.user else ""
        port = f":{t.port}" if t.port else ""
        via = f" via {', '.join(t.jump)}" if t.jump else ""
        return f"{t.name} ({who}{t.host or t.name}{port}{via})"

    def _chain(self, target: Target, depth: int) -> list[Target]:
        """Jump targets, outermost first (as ChainResolver: a list's first one's own jumps)."""
        if depth > JUMP_MAX_HOPS:
            raise TargetError(
                f"target {target.name}: jump chain longer than {JUMP_MAX_HOPS} (a loop?)"
            )
        out: list[Target] = []
        for i, name in enumerate(target.jump):
            jump = self.targets.get(name)
            if jump is None:
                raise TargetError(f"target {target.name}: jump {name!r} is not a known target")
            if i == 0:
                out += self._chain(jump, depth + 1)
            out.append(jump)
        return out

    def _common(self, target: Target) -> list[str]:
        o = self.options
        strict = "accept-new" if o.accept_new_host_keys else "yes"
        timeout = target.connect_timeout or o.connect_timeout
        words = ["-o", "BatchMode=yes", "-o", f"StrictHostKeyChecking={strict}"]
        words += ["-o", f"ConnectTimeout={max(1, round(timeout))}"]
        if o.keepalive > 0:
            words += ["-o", f"ServerAliveInterval={max(1, round(o.keepalive))}"]
            words += ["-o", "ServerAliveCountMax=3"]
        config, known, keys = _home_files(o)
        config = target.ssh_config or config  # a target read from an ssh config: `ssh -F` it
        if config:
            words += ["-F", config]
        if known:
            words += _option("UserKnownHostsFile", _escape(known))
        if keys and not target.identity_file and not _config_sets_identity(config, target):
            for key in keys:
                words += _option("IdentityFile", _escape(key))
        if target.port:
            words += ["-p", str(int(target.port))]
        if target.user:
            words += ["-l", _checked("user", _USER, target.user, target.name)]
        if target.identity_file:
            path = os.path.expanduser(target.identity_file)
            if not os.path.isfile(path):
                raise TargetError(
                    f"target {target.name}: identity file {target.identity_file} does not exist"
                )
            # -o, not -i: ssh stat()s an -i path before expanding %% in it
            words += _option("IdentityFile", _escape(path))
        return words

    def _destination(self, target: Target) -> str:
        return _checked("host", _HOST, target.host or target.name, target.name)

    def _proxy_command(self, jump: Target, inner: str | None) -> str:
        """The ProxyCommand value that reaches the next hop through `jump`."""
        words = ["ssh", *self._common(jump)]
        if inner is not None:
            words += ["-o", f"ProxyCommand={inner}"]
        head = _escape(shell_join(words))
        return f"{head} -W %h:%p -- {_escape(shell_join([self._destination(jump)]))}"

    def _hop_argv(self, target: Target, proxy: str | None) -> list[str]:
        words = ["ssh", "-T", *self._common(target)]
        if proxy is None and target.proxy_command:
            proxy = target.proxy_command  # the user's own, %-tokens for ssh to expand
        if proxy is not None:
            words += ["-o", f"ProxyCommand={proxy}"]
        return [*words, "--", self._destination(target)]

    def start(self, argv: list[str], stdin: bytes, env: dict[str, str]) -> AgentProcess:
        return self.start_command(*remote_command(argv, stdin, env, self.target.python))

    def start_command(self, command: str, stdin: bytes) -> AgentProcess:
        """Run a shell line on the box; returns once ssh is logged in (else raises)."""
        hops = 1 + len(self.target.jump)
        limit = (self.target.connect_timeout or self.options.connect_timeout) * hops + 5
        return start_marked(
            [*self.argv, f"{announce()}; {command}"],
            stdin,
            self.label,
            limit=limit,
            failure=lambda stderr: ssh_error(self.label, stderr),
            dropped_status=255,  # ssh's own failure: the connection dropped
        )


_CHANGED = ("REMOTE HOST IDENTIFICATION HAS CHANGED", "HOST KEY HAS CHANGED", "has changed")
_UNKNOWN = ("No ED25519 host key is known", "host key is known", "Host key verification failed")
_AUTH = ("Permission denied", "Too many authentication failures", "no matching key")


def ssh_error(label: str, stderr: str) -> TargetError:
    """ssh's stderr after a failed login -> the error class and wording paramiko's path uses."""
    lines = [s.strip() for s in stderr.splitlines() if s.strip() and not s.startswith("@@@")]
    detail = " | ".join(lines[-3:]) or "ssh exited before logging in"
    said = f"(OpenSSH: {detail})"
    if "REVOKED" in stderr or "has been revoked" in stderr:
        return HostKeyError(
            f"host key for {label} is REVOKED {said}. Revoked keys are never accepted."
        )
    if any(p in stderr for p in _CHANGED):
        return HostKeyError(
            f"host key for {label} has CHANGED {said}. Someone may be intercepting the "
            f"connection, or the host was reinstalled: check, then remove the old key "
            f"(ssh-keygen -R HOST). Changed keys are never accepted."
        )
    if any(p in stderr for p in _UNKNOWN):
        return HostKeyError(
            f"host key for {label} is not in known_hosts {said}; verify it and add it "
            f"(ssh-keyscan) or pass --accept-new-host-keys"
        )
    if any(p in stderr for p in _AUTH):
        return AuthError(f"authentication failed for {label} {said}")
    return UnreachableError(f"{label} is unreachable {said}")
