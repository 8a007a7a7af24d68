"""Opening one SSH connection through a chain of jump hosts, with known_hosts enforced.

A target resolves to hops (outermost jump first, the box last) the way OpenSSH would: the
target's host is looked up in ~/.ssh/config as an alias (HostName, User, Port, IdentityFile,
ProxyJump, UserKnownHostsFile, ConnectTimeout), the target's own fields win, and jumps come
from the target's `jump:` names (targets.yaml) or, failing that, the config's ProxyJump
(recursively, any length). The first hop is a TCP socket; every later hop rides a
`direct-tcpip` channel of the one before, so only the first hop needs to be routable from here.

paramiko exceptions never leave this module: they become HostKeyError, AuthError or
UnreachableError naming the hop (`jump host kpro6 (root@kpro6.invalid:22)`).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import os
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factbook.errors import AuthError, HostKeyError, UnreachableError, UsageError, visible
from factbook.knowledge.limits import JUMP_MAX_HOPS
from factbook.knowledge.model import Target
from factbook.knowledge.names import shown
from factbook.verification.transports import knownhosts
from factbook.verification.transports.base import TransportOptions
from factbook.verification.transports.paramiko_lean import paramiko
from factbook.verification.transports.sshconfig import (
    Resolved,
    SSHConfigFile,
    check_owner,
    flag,
)
from factbook.verification.transports.sshwords import convtime

READ_AHEAD = 1 << 16  # bytes a box connection takes from its jump channel at once
POLL_S = 1.0  # how often an idle transport thread checks for close, re-key and keepalive
AEAD_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")
_KNOWN_HOSTS_WRITE = threading.Lock()
# paramiko logs its transport threads' failures (a missing banner, a dropped hop) as ERROR
# tracebacks; with no handler configured, Python's last-resort handler prints them on stderr
# beside our own one-line message. Every such failure is mapped below, so the library's own
# account stays out of the terminal unless the application configures logging itself.
logging.getLogger("paramiko").addHandler(logging.NullHandler())


USER_KNOWN_HOSTS = knownhosts.USER_KNOWN_HOSTS
GLOBAL_KNOWN_HOSTS = knownhosts.GLOBAL_KNOWN_HOSTS


@dataclass
class Hop:
    """One SSH server on the way to the box, with everything needed to log in to it."""

    role: str  # "box" or "jump host"
    name: str  # target name or jump spec
    host: str
    port: int
    user: str
    identity_files: list[str] = field(default_factory=list)
    known_hosts: str = "~/.ssh/known_hosts"  # the first user file: where a new key is added
    known_hosts_also: tuple[str, ...] = GLOBAL_KNOWN_HOSTS  # read too: more user, the global
    connect_timeout: float = 10.0
    proxy_command: str | None = None  # ssh_config ProxyCommand, tokens expanded
    identities_only: bool = False  # IdentitiesOnly yes: only identity_files, no agent/defaults
    host_key_alias: str | None = None  # HostKeyAlias: the known_hosts name to use
    certificate_files: list[str] = field(default_factory=list)  # CertificateFile, present ones
    default_identities: list[str] = field(default_factory=list)  # ~/.ssh/id_* when none is set

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def known_hosts_name(self) -> str:
        """How known_hosts names this host: `host` on port 22, `[host]:port` otherwise; a
        HostKeyAlias as it is, whatever the port (as OpenSSH 9 looks it up)."""
        if self.host_key_alias:
            return self.host_key_alias
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"

    def describe(self) -> str:
        return f"{self.role} {self.name} ({self.user}@{self.address})"


def split_jump_spec(spec: str) -> tuple[str | None, str, int | None]:
    """`[ssh://][user@]host[:port]` (IPv6 in brackets) -> (user, host, port)."""
    text = spec.strip()
    parsed = urllib.parse.urlsplit(text if "://" in text else "ssh://" + text)
    try:
        port = url_port(parsed)
    except ValueError as exc:
        raise UsageError(f"bad jump host {spec!r}: {exc}") from None
    if not parsed.hostname:
        raise UsageError(f"bad jump host {spec!r}: no host")
    user = urllib.parse.unquote(parsed.username) if parsed.username else None
    return user, parsed.hostname, port


def url_port(parts: urllib.parse.SplitResult) -> int | None:
    """The port of an ssh:// URL, None when it names none; ValueError naming the value and
    the range otherwise (urllib's own "Port out of range 0-65535" named neither, and
    "Port could not be cast to integer value as '22;x'" was its internals' wording). Zero is
    left to the callers (urllib passes it; they say ssh never connects to it)."""
    try:
        return parts.port
    except ValueError:
        pass
    hostport = parts.netloc.rpartition("@")[2]
    text = hostport.rpartition("]")[2] if hostport.startswith("[") else hostport
    text = text.partition(":")[2]
    raise ValueError(f"port {shown(text)!r} is not a number from 1 to 65535") from None


class ConfigFiles:
    """Parsed ssh config files by path: one resolver's, or a whole run's (options.shared)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._files: dict[str, SSHConfigFile] = {}

    @classmethod
    def of(cls, options: TransportOptions) -> ConfigFiles:
        """The run's set, kept in `options.shared` (made on first use)."""
        return options.shared.setdefault("ssh-config-files", cls())  # type: ignore[no-any-return]

    def get(self, path: str) -> SSHConfigFile:
        with self._lock:
            if path not in self._files:
                self._files[path] = SSHConfigFile(path)
            return self._files[path]

    def close(self) -> None:
        """Nothing is open: the run forgets the files (close_shared calls every item's)."""
        with self._lock:
            self._files.clear()


class ChainResolver:
    """Turns a target into its hops using targets.yaml and the ssh config (sshconfig.py)."""

    def __init__(self, targets: dict[str, Target], options: TransportOptions):
        self.targets = targets
        self.options = options
        # while a run shares connections, it shares the parsed ssh configs too: each file is
        # read once per run, not once per target (~1 ms per box of a fleet)
        self._files = ConfigFiles.of(options) if options.sharing else ConfigFiles()
        path = Path(os.path.expanduser(options.ssh_config or "~/.ssh/config"))
        if options.ssh_config and not path.is_file():  # `ssh -F` refuses it too
            raise UsageError(f"ssh config {options.ssh_config}: cannot open it (no such file)")
        if not options.ssh_config and path.is_file():  # ssh checks ~/.ssh/config's owner
            check_owner(path, "ssh config")
        self.config = self._files.get(str(path)) if path.is_file() else SSHConfigFile(None)

    def resolve(self, target: Target) -> list[Hop]:
        return self._resolve(target, "box", 0)

    def _file(self, path: str) -> SSHConfigFile:
        return self._files.get(path)

    def _lookup(
        self, target: Target, config: SSHConfigFile | None
    ) -> tuple[SSHConfigFile, Resolved]:
        """The config entry for a hop: a target read from an ssh config is its alias there
        (its HostName never looked up again); a jump host named by a config's ProxyJump is
        looked up in that config, as `ssh -l USER -p PORT HOST` would; any other target is its
        host looked up in the user's ssh config, its own fields first."""
        if config is not None:
            alias = target.host or target.name
            return config, config.lookup(alias, user=target.user, port=target.port)
        if target.ssh_config:
            config = self._file(target.ssh_config)
            found = config.lookup(target.name)
            if (target.user and target.user != found.user) or (
                target.port and target.port != found.port
            ):  # set after reading (inventory variables): they come first, as -l/-p
                found = config.lookup(target.name, user=target.user, port=target.port)
            if target.host and target.host != found.hostname:
                found.hostname = target.host
            return config, found
        alias = target.host or target.name
        return self.config, self.config.lookup(alias, user=target.user, port=target.port)

    def _resolve(
        self,
        target: Target,
        role: str,
        depth: int,
        own_jumps: bool = True,
        config: SSHConfigFile | None = None,
    ) -> list[Hop]:
        """The hops to target, outermost first.

        As in OpenSSH's `-J a,b`: in a list of jumps only the first one's own jumps (its
        `jump:` or ProxyJump) are followed; each later one is reached through the one before.
        A single jump's own jumps are followed, so chains can also be nested one name deep.
        """
        if depth > JUMP_MAX_HOPS:
            raise UsageError(
                f"target {target.name}: jump chain longer than {JUMP_MAX_HOPS} (a loop?)"
            )
        config, cfg = self._lookup(target, config)
        hop = self._hop(target, cfg, role)
        jumps: list[tuple[Target, SSHConfigFile | None]] = []
        if not own_jumps:
            pass
        elif target.jump and not target.ssh_config:
            for name in target.jump:
                jt = self.targets.get(name)
                if jt is None and not _looks_like_spec(name):
                    raise UsageError(f"target {target.name}: jump {name!r} is not a known target")
                if jt is None:  # `user@host:port` from an inventory's ProxyJump / -J
                    juser, jhost, jport = split_jump_spec(name)
                    jt = Target(name=name, host=jhost, port=jport, user=juser)
                jumps.append((jt, None))
        elif cfg.proxy_jump:
            for jump in cfg.jumps():  # tokens expanded; a bare name is a host name
                jt = Target(name=jump.spec, host=jump.host, port=jump.port, user=jump.user)
                jumps.append((jt, config))
        elif cfg.proxy_command:
            hop.proxy_command = cfg.proxy_command_expanded()
        before: list[Hop] = []
        for i, (jt, where) in enumerate(jumps):
            before += self._resolve(jt, "jump host", depth + 1, own_jumps=i == 0, config=where)
        return [*before, hop]

    def _hop(self, target: Target, cfg: Resolved, role: str) -> Hop:
        """One hop's login: the target's own identity file first (it must exist, as an
        explicit choice), then the config's (ssh skips missing ones, and so do we)."""
        if target.identity_file and not os.path.isfile(os.path.expanduser(target.identity_file)):
            raise UsageError(
                f"target {target.name}: identity file {target.identity_file} does not exist"
            )
        idents = [os.path.expanduser(target.identity_file)] if target.identity_file else []
        present = [p for p in cfg.identity_paths() if os.path.isfile(p)]
        if cfg.identity_files_set:
            idents += present
        user_files = self._known_files(cfg, "userknownhostsfile", USER_KNOWN_HOSTS)
        known = self.options.known_hosts or (user_files[0] if user_files else os.devnull)
        also = self._known_files(cfg, "globalknownhostsfile", GLOBAL_KNOWN_HOSTS)
        if not self.options.known_hosts:
            also = (*user_files[1:], *also)
        timeout = target.connect_timeout or _seconds(cfg.get("connecttimeout"))
        return Hop(
            role=role,
            name=target.name,
            host=cfg.hostname,
            port=cfg.port,
            user=cfg.user,
            identity_files=list(dict.fromkeys(idents)),
            known_hosts=known,
            connect_timeout=timeout or self.options.connect_timeout,
            known_hosts_also=also,
            identities_only=flag(cfg.get("identitiesonly")),
            host_key_alias=cfg.get("hostkeyalias"),
            certificate_files=[p for p in cfg.certificate_paths() if os.path.isfile(p)],
            default_identities=[] if cfg.identity_files_set else present,
        )

    @staticmethod
    def _known_files(cfg: Resolved, keyword: str, default: tuple[str, ...]) -> tuple[str, ...]:
        """The files a known-hosts keyword names, every word, tokens expanded (`none`: no
        file); ssh's defaults when unset."""
        words = cfg.words.get(keyword) or default
        if [word.lower() for word in words] == ["none"]:
            return ()
        return tuple(cfg.expand(word, keyword) for word in words)


def _looks_like_spec(name: str) -> bool:
    return "@" in name or ":" in name or "." in name


def _seconds(value: str | None) -> float | None:
    """A time value of an ssh config as ssh reads it (convtime: `1m` is 60 s; `nan` or
    `1e400`, which float() took, are no time)."""
    seconds = convtime(value) if value is not None else None
    return float(seconds) if seconds is not None else None


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's `SHA256:...` fingerprint, so messages match `ssh-keygen -lf`."""
    return _fingerprint(key.asbytes())


class KnownHosts:
    """known_hosts checking like StrictHostKeyChecking=yes, or =accept-new when asked
    (knownhosts.py reads the files as OpenSSH does: patterns, hashes, markers)."""

    def __init__(
        self, path: str, accept_new: bool, also: tuple[str, ...] = GLOBAL_KNOWN_HOSTS
    ) -> None:
        self.path = Path(os.path.expanduser(path))
        self.accept_new = accept_new
        self.lines: list[knownhosts.HostLine] = []
        for source in (self.path, *(Path(os.path.expanduser(p)) for p in also)):
            try:
                self.lines += knownhosts.load(source)
            except OSError as exc:
                raise HostKeyError(f"known_hosts {source}: {exc.strerror or exc}") from None
        self._index = knownhosts.PlainIndex()
        self._index.add(self.lines)

    def _plain(self, name: str) -> list[knownhosts.HostLine]:
        return self._index.lookup(name)

    def known_types(self, hop: Hop) -> list[str]:
        return list(dict.fromkeys(e.key_type for e in self._plain(hop.known_hosts_name)))

    def check(self, hop: Hop, key: paramiko.PKey) -> None:
        """Accept a known key, refuse a changed or revoked one, add an unknown one if allowed."""
        name, offered = hop.known_hosts_name, f"{key.get_name()} {fingerprint(key)}"
        blob = key.asbytes()
        for entry in self.lines:
            if entry.marker == "@revoked" and entry.blob == blob:
                raise HostKeyError(
                    f"host key for {hop.address} ({hop.role} {hop.name}) is REVOKED by "
                    f"{entry.where}: {offered}. Revoked keys are never accepted."
                )
        entries = self._plain(name)
        if any(e.blob == blob for e in entries):
            return
        if entries:
            held = ", ".join(f"{e.key_type} {_fingerprint(e.blob)} ({e.where})" for e in entries)
            raise HostKeyError(
                f"host key for {hop.address} ({hop.role} {hop.name}) has CHANGED: "
                f"{self.path} holds {held}, the host offers {offered}. Someone may be "
                f"intercepting the connection, or the host was reinstalled: check, then remove "
                f"the old key (ssh-keygen -R '{name}'). Changed keys are never accepted."
            )
        authorities = [e for e in self.lines if e.marker == "@cert-authority" and e.matches(name)]
        if authorities:
            raise HostKeyError(
                f"{authorities[0].where}: @cert-authority vouches for {hop.address} "
                f"({hop.role} {hop.name}), but the paramiko transport cannot check host "
                f"certificates: use `transport: openssh` for {hop.name}, or add its host key "
                f"({offered})"
            )
        if not self.accept_new:
            raise HostKeyError(
                f"host key for {hop.address} ({hop.role} {hop.name}) is not in {self.path}; "
                f"verify it ({offered}) and add it (ssh-keyscan -p {hop.port} {hop.host}) or pass "
                f"--accept-new-host-keys"
            )
        line = f"{name} {key.get_name()} {key.get_base64()}\n"
        with _KNOWN_HOSTS_WRITE:
            try:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                # a last line without its line break would swallow this one (both lost)
                lead = "\n" if knownhosts.needs_newline(self.path) else ""
                fd = knownhosts.open_for_append(self.path)
            except OSError as exc:
                raise HostKeyError(
                    f"cannot add the host key of {hop.address} ({hop.role} {hop.name}) to "
                    f"{self.path}: {exc.strerror or exc}"
                ) from None
            try:
                os.write(fd, (lead + line).encode())
            finally:
                os.close(fd)
            added = knownhosts.parse(line, str(self.path))
            self.lines += added
            self._index.add(added)


def _fingerprint(blob: bytes) -> str:
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


class _Policy(paramiko.MissingHostKeyPolicy):
    """SSHClient is given no host keys, so every key comes here and KnownHosts decides."""

    def __init__(self, known: KnownHosts, hop: Hop):
        self.known, self.hop = known, hop

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey):
        self.known.check(self.hop, key)


class KeyFiles:
    """Private key files read once per run, not once per login: paramiko reads a key file for
    every login and key class it tries (an ed25519 file is parsed as RSA and ECDSA first).
    An entry holds while the key file and its `-cert.pub` keep their size and mtime."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: dict[tuple[Any, ...], paramiko.PKey | paramiko.SSHException] = {}

    @classmethod
    def of(cls, options: TransportOptions) -> KeyFiles:
        """The run's set while transports share (options.shared), else a new one."""
        if not options.sharing:
            return cls()
        return options.shared.setdefault("ssh-key-files", cls())  # type: ignore[no-any-return]

    def load(self, read: Any, filename: str, klass: type, password: str | None) -> paramiko.PKey:
        """`read(filename, klass, password)` (paramiko's loader), remembered."""
        key = (filename, klass, password, _file_state(filename), _file_state(_cert(filename)))
        with self._lock:
            known = self._keys.get(key)
        if known is None:
            try:
                known = read(filename, klass, password)
            except paramiko.SSHException as exc:
                known = exc
            with self._lock:
                self._keys[key] = known
        if isinstance(known, paramiko.SSHException):
            raise known.with_traceback(None)
        return known

    def close(self) -> None:
        with self._lock:
            self._keys.clear()


def _cert(filename: str) -> str:
    """The certificate paramiko pairs with a key file (or the key of a `-cert.pub`)."""
    suffix = "-cert.pub"
    return filename[: -len(suffix)] if filename.endswith(suffix) else filename + suffix


def _file_state(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


class _Client(paramiko.SSHClient):
    """SSHClient reading key files through the run's KeyFiles."""

    def __init__(self, keys: KeyFiles):
        super().__init__()
        self._keys = keys

    def _key_from_filepath(self, filename: str, klass: type, password: str | None) -> Any:
        return self._keys.load(super()._key_from_filepath, filename, klass, password)


class _Transport(paramiko.Transport):
    """A client transport that answers the server's global requests with an SSH_MSG_IGNORE.

    After authentication sshd sends `hostkeys-00@openssh.com` (no reply wanted). sshd sets no
    TCP_NODELAY on exec sessions, so Nagle then holds its next small packet, the confirmation
    of our first channel, until that notice is ACKed, and the jump (or our kernel) delays the
    ACK by 40 ms. An IGNORE sent back at once carries the ACK: the first agent starts ~40 ms
    sooner (measured through the jump here).

    Its thread waits for the next packet in slices of POLL_S (paramiko: 0.1 s), then checks
    whether the transport was closed, a re-key is due or a keepalive should go out. Data and
    EOF wake it at once whatever the slice; a fleet's 64 idle box transports polling ten times
    a second cost the client thousands of thread wake-ups a run for nothing.
    """

    _active_check_timeout = POLL_S

    def _parse_global_request(self, m: paramiko.Message) -> None:
        super()._parse_global_request(m)
        if not self.server_mode:
            ignore = paramiko.Message()
            ignore.add_byte(paramiko.common.cMSG_IGNORE)
            ignore.add_string(b"")
            with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
                self._send_message(ignore)


def _rsa(types: list[str]) -> list[str]:
    out = []
    for t in types:
        out += ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"] if t == "ssh-rsa" else [t]
    return out


def _tcp(hop: Hop, keepalive: float) -> socket.socket:
    try:
        infos = socket.getaddrinfo(hop.host, hop.port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise UnreachableError(f"{hop.describe()}: cannot resolve {hop.host}: {exc}") from None
    last: OSError | None = None
    for family, kind, proto, _, addr in infos:
        sock = socket.socket(family, kind, proto)
        sock.settimeout(hop.connect_timeout)
        try:
            sock.connect(addr)
        except OSError as exc:
            sock.close()
            last = exc
            continue
        # Without NODELAY, Nagle and delayed ACKs add ~40 ms to every small request/reply.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _tcp_keepalive(sock, keepalive)
        return sock
    if isinstance(last, ConnectionRefusedError):
        why = "connection refused"
    elif isinstance(last, socket.timeout):
        why = f"no answer within {hop.connect_timeout:g} s"
    else:
        why = str(last)
    raise UnreachableError(f"{hop.describe()} is unreachable: {why}")


def _proxy(hop: Hop) -> paramiko.ProxyCommand:
    """The first hop through ssh_config's ProxyCommand (bastion wrappers, IAP, SSM...)."""
    try:
        return paramiko.ProxyCommand(hop.proxy_command)
    except (paramiko.SSHException, OSError) as exc:
        raise UnreachableError(f"{hop.describe()}: ProxyCommand failed to start: {exc}") from None


def _tcp_keepalive(sock: socket.socket, keepalive: float) -> None:
    """Let the kernel notice a silently dead first hop (paramiko's keepalive only sends)."""
    if keepalive <= 0:
        return
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for opt, value in (
        ("TCP_KEEPIDLE", keepalive),
        ("TCP_KEEPINTVL", keepalive),
        ("TCP_KEEPCNT", 3),
        ("TCP_USER_TIMEOUT", int(keepalive * 4 * 1000)),
    ):
        if hasattr(socket, opt):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, opt), max(1, int(value)))


def _forward(prev: paramiko.SSHClient, prev_hop: Hop, hop: Hop) -> paramiko.Channel:
    transport = prev.get_transport()
    assert transport is not None
    try:
        channel = transport.open_channel(
            "direct-tcpip", (hop.host, hop.port), ("127.0.0.1", 0), timeout=hop.connect_timeout
        )
    except paramiko.ChannelException as exc:
        why = exc.text or f"code {exc.code}"
        raise UnreachableError(
            f"{hop.describe()} is unreachable from {prev_hop.describe()}: {why}"
        ) from None
    except (paramiko.SSHException, EOFError, OSError) as exc:
        raise UnreachableError(
            f"{hop.describe()}: {prev_hop.describe()} could not forward: {exc or 'timeout'}"
        ) from None
    return _GuardedChannel(channel)  # type: ignore[return-value]


class _GuardedChannel:
    """The direct-tcpip channel a box's own SSH connection rides on, as that connection's socket.

    paramiko's Channel.send checks "not closed" under its lock but transmits after releasing
    it, so a send racing close() can put a DATA message on the wire after our CLOSE. OpenSSH
    frees the channel once both CLOSEs are seen and answers late DATA by dropping the whole
    connection ("data packet referred to nonexistent channel"): with the jump shared by every
    box, one box finishing would cut off all the others (seen here at 48 boxes). Here a send
    and the close never overlap, and nothing is sent after the close.
    """

    def __init__(self, channel: paramiko.Channel):
        self._channel = channel
        self._lock = threading.Lock()
        self._done = False
        self._ahead = bytearray()  # read from the channel, not yet asked for (recv)

    def send(self, data: bytes) -> int:
        with self._lock:
            if self._done:
                raise OSError("forwarded channel closed")
            return self._channel.send(data)

    def recv(self, size: int) -> bytes:
        """Up to `size` bytes. The box's packetizer asks for each packet's header, then its
        body, so every channel read takes what has arrived (one or more packets) and serves
        the next asks from it: half the locked buffer reads. Only that thread reads here."""
        if not self._ahead:
            data = self._channel.recv(max(size, READ_AHEAD))
            if len(data) <= size:
                return data
            self._ahead += data
        out = bytes(self._ahead[:size])
        del self._ahead[:size]
        return out

    def settimeout(self, timeout: float | None) -> None:
        self._channel.settimeout(timeout)

    @property
    def _closed(self) -> bool:  # paramiko's Transport.stop_thread reads it
        return self._done or self._channel.closed

    def close(self) -> None:
        # A send blocked on a full window must not hold the close forever: after 5 s close
        # anyway (the box is then stuck, and the jump drops only what it must).
        got = self._lock.acquire(timeout=5)
        try:
            if self._done:
                return
            self._done = True
            # The next hop's transport thread closes this channel when it stops; when the
            # outer connection died first, paramiko would print an EOFError from that thread.
            with contextlib.suppress(EOFError, OSError, paramiko.SSHException):
                self._channel.close()
        finally:
            if got:
                self._lock.release()


def _login(
    hop: Hop, sock: Any, known: KnownHosts, keepalive: float, keys: KeyFiles
) -> paramiko.SSHClient:
    client = _Client(keys)
    client.set_missing_host_key_policy(_Policy(known, hop))
    preferred = _rsa(known.known_types(hop))
    made: list[paramiko.Transport] = []

    def factory(sock: Any, **kw: Any) -> paramiko.Transport:
        # Offer the key types known_hosts holds first, as OpenSSH does, so a host that also has
        # a newer key type is not mistaken for a changed key.
        t = _Transport(sock, **kw)
        made.append(t)
        opts = t.get_security_options()
        ours = [k for k in preferred if k in opts.key_types]
        opts.key_types = ours + [k for k in opts.key_types if k not in ours]
        # AES-GCM first: its tag is checked in C, where paramiko compares a CTR mode's HMAC
        # byte by byte in Python (~0.2 ms a packet: 11 ms of client CPU per box of 100 checks).
        aead = [c for c in AEAD_CIPHERS if c in opts.ciphers]
        opts.ciphers = aead + [c for c in opts.ciphers if c not in aead]
        return t

    began = time.monotonic()
    try:
        client.connect(
            hop.host,
            hop.port,
            username=hop.user,
            pkey=_certified_key(hop),
            key_filename=hop.identity_files or None,
            timeout=hop.connect_timeout,
            banner_timeout=hop.connect_timeout,
            auth_timeout=hop.connect_timeout,
            # IdentitiesOnly yes: the configured files only (OpenSSH would still take an agent
            # key matching one of them; the file itself is enough here)
            allow_agent=not hop.identities_only,
            look_for_keys=not hop.identities_only,
            sock=sock,
            transport_factory=factory,
        )
    except HostKeyError:
        client.close()
        raise
    except paramiko.AuthenticationException as exc:
        client.close()
        raise AuthError(_auth_message(hop, exc)) from None
    except paramiko.SSHException as exc:
        client.close()
        if "authentication methods" in str(exc):
            raise AuthError(_auth_message(hop, exc)) from None
        said = _no_banner(hop, made, began) or _stalled(hop, made, began, exc)
        raise UnreachableError(said or _handshake(hop, exc)) from None
    except (EOFError, OSError) as exc:
        client.close()
        said = _no_banner(hop, made, began) or _stalled(hop, made, began, exc)
        raise UnreachableError(
            said or f"{hop.describe()}: connection lost: {exc or 'EOF'}"
        ) from None
    transport = client.get_transport()
    if transport is not None and keepalive > 0:
        transport.set_keepalive(max(1, int(keepalive)))
    return client


def _certified_key(hop: Hop) -> paramiko.PKey | None:
    """The private key a CertificateFile belongs to, with the certificate loaded: paramiko
    offers it first (as OpenSSH offers a configured certificate with its key)."""
    for cert in hop.certificate_files:
        for path in [*hop.identity_files, *hop.default_identities]:
            try:
                key = paramiko.PKey.from_path(path)
                key.load_certificate(cert)
            except (paramiko.SSHException, OSError, ValueError):
                continue  # encrypted, unreadable, or not this certificate's key
            return key
    return None


def _no_banner(hop: Hop, made: list[paramiko.Transport], began: float) -> str | None:
    """The message for a host that took the TCP connection but never spoke SSH, else None.

    paramiko reports it as "No existing session" or "Error reading SSH protocol banner"; the
    telling fact is that no version line (`SSH-2.0-...`) ever arrived. A peer that closed
    the connection long before the timeout is said to have closed it: "sent no banner within
    10 s" for a refusal that took 5 ms sent users after a firewall (hostile round 16).
    """
    if not made or made[-1].remote_version:
        return None
    waited = time.monotonic() - began
    if hop.connect_timeout and waited < 0.5 * hop.connect_timeout:
        return (
            f"{hop.describe()}: {hop.address} accepted the connection and closed it before "
            f"any SSH banner ({waited:.2f} s): an sshd refusing this client (MaxStartups, "
            f"tcp wrappers, a ban) or another service; check the host and port, e.g. "
            f"`ssh -v -p {hop.port} {hop.host}`"
        )
    return (
        f"{hop.describe()}: {hop.address} accepted the connection but sent no SSH banner "
        f"within {hop.connect_timeout:g} s: no sshd answers on that port (another service, a "
        f"hung sshd or a firewall holding the connection); check the host and port, e.g. "
        f"`ssh -v -p {hop.port} {hop.host}`"
    )


def _stalled(hop: Hop, made: list[paramiko.Transport], began: float, exc: Exception) -> str | None:
    """The message for a host that sent its SSH banner and then never finished the key
    exchange (went silent, or hung up), else None. paramiko says "No existing session" (or
    raises EOFError) for both, which named neither the banner that did arrive nor the wait
    (hostile round 17). A key exchange that failed with a reason of its own (no common
    algorithm) keeps paramiko's reason."""
    if not made or not made[-1].remote_version or made[-1].session_id is not None:
        return None
    banner = shown(visible(made[-1].remote_version))
    waited = time.monotonic() - began
    if hop.connect_timeout and waited >= 0.5 * hop.connect_timeout:
        return (
            f"{hop.describe()}: {hop.address} sent its SSH banner ({banner}) but the SSH "
            f"handshake did not finish within {hop.connect_timeout:g} s: a hung sshd, or a "
            f"proxy or tarpit that only answers the banner; check the host, e.g. "
            f"`ssh -v -p {hop.port} {hop.host}`"
        )
    if isinstance(exc, EOFError) or "No existing session" in str(exc):
        return (
            f"{hop.describe()}: {hop.address} sent its SSH banner ({banner}) and closed the "
            f"connection during the SSH handshake ({waited:.2f} s): an sshd refusing this "
            f"client or a broken one; check the host, e.g. `ssh -v -p {hop.port} {hop.host}`"
        )
    return None


def _handshake(hop: Hop, exc: Exception) -> str:
    return f"{hop.describe()}: SSH handshake failed: {exc}"


def _auth_message(hop: Hop, exc: Exception) -> str:
    tried = ", ".join(hop.identity_files) or "no identity file"
    return (
        f"authentication failed for {hop.user}@{hop.address} ({hop.role} {hop.name}): "
        f"{exc}; tried {tried}, ~/.ssh/id_* and the ssh agent"
    )


def _hop_key(hop: Hop) -> tuple[Any, ...]:
    return (
        hop.host,
        hop.port,
        hop.user,
        tuple(hop.identity_files),
        tuple(hop.certificate_files),
        hop.known_hosts,
        hop.known_hosts_also,
    )


class JumpPool:
    """Jump-host connections shared by every target of one run: one TCP connection and one
    login per jump chain, each box reached through its own direct-tcpip channel on it.

    Sixty-four boxes behind one bastion cost the bastion one handshake instead of sixty-four.
    A chain that failed to connect is remembered for the run, so the targets behind a dead
    jump fail at once with its error instead of each waiting out the connect timeout.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._chains: dict[tuple[Any, ...], list[paramiko.SSHClient]] = {}
        self._failed: dict[tuple[Any, ...], Exception] = {}
        self._locks: dict[tuple[Any, ...], threading.Lock] = {}
        self._known: dict[tuple[str, bool], KnownHosts] = {}
        self.logins = 0  # jump logins made (tests and the benchmark read it)

    @classmethod
    def of(cls, options: TransportOptions) -> JumpPool:
        """The pool kept in `options.shared` (made on first use)."""
        return options.shared.setdefault("ssh-jumps", cls())  # type: ignore[no-any-return]

    def jumps(self, hops: list[Hop], options: TransportOptions) -> list[paramiko.SSHClient]:
        """Logged-in clients for `hops` (jump hosts, outermost first), shared and reused."""
        key = tuple(_hop_key(h) for h in hops)
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key in self._failed:
                raise self._failed[key]
            clients = self._chains.get(key)
            transport = clients[-1].get_transport() if clients else None
            if clients and transport is not None and transport.is_active():
                return clients
            try:
                clients = connect_chain(hops, options)
            except (UnreachableError, AuthError, HostKeyError) as exc:
                self._failed[key] = exc
                raise
            self.logins += len(hops)
            self._chains[key] = clients
            return clients

    def known_hosts(self, hop: Hop, accept_new: bool) -> KnownHosts:
        """known_hosts read once per run and files (parsing 64 keys took ~13 ms per box)."""
        with self._lock:
            key = (hop.known_hosts, hop.known_hosts_also, accept_new)
            if key not in self._known:
                self._known[key] = KnownHosts(hop.known_hosts, accept_new, hop.known_hosts_also)
            return self._known[key]

    def close(self) -> None:
        with self._lock:
            chains, self._chains = list(self._chains.values()), {}
        for clients in chains:
            for client in reversed(clients):
                client.close()


def connect_box(hops: list[Hop], options: TransportOptions) -> list[paramiko.SSHClient]:
    """Log in to the box (`hops[-1]`) and return the clients the caller owns and closes.

    While options.sharing, the jumps come from the run's JumpPool and only the box's client
    is returned; otherwise every hop is logged in for this caller alone (connect_chain)."""
    if len(hops) == 1 or not options.sharing:
        return connect_chain(hops, options)
    pool = JumpPool.of(options)
    jumps = pool.jumps(hops[:-1], options)
    box = hops[-1]
    sock = _forward(jumps[-1], hops[-2], box)
    try:
        known = pool.known_hosts(box, options.accept_new_host_keys)
        return [_login(box, sock, known, options.keepalive, KeyFiles.of(options))]
    except BaseException:
        sock.close()
        raise


def connect_chain(hops: list[Hop], options: TransportOptions) -> list[paramiko.SSHClient]:
    """Log in to every hop in order; the last client reaches the box. Closes all on failure."""
    clients: list[paramiko.SSHClient] = []
    keys = KeyFiles.of(options)
    try:
        for i, hop in enumerate(hops):
            known = KnownHosts(hop.known_hosts, options.accept_new_host_keys, hop.known_hosts_also)
            if i > 0:
                sock = _forward(clients[-1], hops[i - 1], hop)
            elif hop.proxy_command:
                sock = _proxy(hop)
            else:
                sock = _tcp(hop, options.keepalive)
            clients.append(_login(hop, sock, known, options.keepalive, keys))
    except BaseException:
        for client in reversed(clients):
            client.close()
        raise
    return clients
