"""The SSH transport: the agent runs as `python3 -` on a box, reached through any jump chain.

One connection per target per run (the box logged in once, reused for each start()); the
jump hosts' connections are shared by every target of the run (sshconnect.JumpPool). Each
start() opens one exec channel running the agent behind a small supervisor (see supervisor.py)
that kills the agent's whole process tree when the channel closes or the connection drops: sshd
without a pty would leave a hanging check running forever. The supervisor gets the agent script
as an N-byte prefix of stdin; the channel's stdin then stays open as its lifeline until the exit
status arrives. stdout is streamed line by line as it arrives; stderr is drained by a thread,
since paramiko stops the whole channel once its shared window fills (the classic deadlock past
~2 MiB when stderr is read after stdout or after recv_exit_status()).

Connecting, host keys and error mapping live in sshconnect.py; target URLs in this module:
`ssh://user@host:port?jump=user@jh:port,user@jh2&python=~/venv/bin/python3`.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Iterator

from factbook.errors import TargetError, UnreachableError, UsageError
from factbook.knowledge.model import Target
from factbook.knowledge.names import shown
from factbook.verification.transports.base import (
    AgentProcess,
    Transport,
    TransportOptions,
    bounded_lines,
    bounded_stderr,
)
from factbook.verification.transports.paramiko_lean import paramiko
from factbook.verification.transports.remote import remote_command
from factbook.verification.transports.sshconnect import (
    ChainResolver,
    Hop,
    connect_box,
    split_jump_spec,
    url_port,
)

URL_KEYS = ("jump", "python", "identity_file", "timeout")


def parse_target_url(
    url: str, targets: dict[str, Target] | None = None
) -> tuple[Target, list[Target]]:
    """`ssh://[user@]host[:port]?jump=SPEC[,SPEC...]` -> (target, jump targets, outermost first).

    A jump SPEC is `[user@]host[:port]`, or the name of a target in `targets` (then it is
    referenced, not returned). Merge the returned jumps into the targets you pass to
    transport_for(): `{**targets, **{j.name: j for j in jumps}}`. Other query keys:
    python (interpreter on the box), identity_file, timeout (connect timeout, seconds).
    """
    targets = targets or {}
    said = shown(url)  # a URL of kilobytes is quoted by its head
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "ssh":
        raise UsageError(f"{said}: a target URL starts with ssh://")
    try:
        port = url_port(parts)
    except ValueError as exc:
        raise UsageError(f"{said}: {exc}") from None
    if not parts.hostname:
        raise UsageError(f"{said}: no host")
    query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
    unknown = sorted(set(query) - set(URL_KEYS))
    if unknown:
        raise UsageError(f"{said}: unknown key {', '.join(unknown)} (known: {', '.join(URL_KEYS)})")
    jumps: list[Target] = []
    names: list[str] = []
    for value in query.get("jump", []):
        for spec in filter(None, (s.strip() for s in value.split(","))):
            if spec in targets:
                names.append(spec)
                continue
            user, host, jport = split_jump_spec(spec)
            jumps.append(Target(name=spec, host=host, port=jport, user=user))
            names.append(spec)
    timeout = query.get("timeout", [None])[-1]
    try:
        connect_timeout = float(timeout) if timeout else None
    except ValueError:
        raise UsageError(f"{said}: timeout must be a number of seconds") from None
    user = urllib.parse.unquote(parts.username) if parts.username else None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    name = f"{user + '@' if user else ''}{host}{f':{port}' if port else ''}"
    target = Target(
        name=name,
        transport="ssh",
        host=parts.hostname,
        port=port,
        user=user,
        jump=tuple(names),
        python=query.get("python", [None])[-1],
        identity_file=query.get("identity_file", [None])[-1],
        connect_timeout=connect_timeout,
    )
    return target, jumps


class SSHAgentProcess(AgentProcess):
    """One exec channel: stdout streamed as lines, stderr drained in the background."""

    def __init__(self, channel: paramiko.Channel, label: str):
        self._channel = channel
        self._label = label
        self._stderr = bounded_stderr()
        self._stderr_done = threading.Event()
        self._killed = False
        threading.Thread(target=self._drain_stderr, name="ssh-stderr", daemon=True).start()

    def _drain_stderr(self) -> None:
        try:
            while data := self._channel.recv_stderr(1 << 16):
                self._stderr.add(data)
        except (OSError, EOFError, paramiko.SSHException):
            pass
        finally:
            self._stderr_done.set()

    def lines(self) -> Iterator[str]:
        yield from bounded_lines(self._chunks())

    def _chunks(self) -> Iterator[bytes]:
        while True:
            try:
                data = self._channel.recv(1 << 16)
            except (OSError, EOFError, paramiko.SSHException):
                return
            if not data:
                return
            yield data

    def stderr_text(self) -> str:
        self._stderr_done.wait(5)
        return self._stderr.text()[0]

    def wait(self, timeout: float | None = None) -> int | None:
        """Exit status; None when the connection dropped first, it is still running, or we
        killed it (the supervisor's 143 may or may not beat the channel's close: either way it
        is not the process's own status)."""
        if self._killed or not self._channel.status_event.wait(timeout):
            return None
        self._stderr_done.wait(5)
        status = self._channel.exit_status if self._channel.exit_status_ready() else -1
        self._channel.close()  # ends the supervisor's lifeline (it has exited already)
        return None if status == -1 else status

    def kill(self) -> None:
        # Closing the channel closes the supervisor's stdin on the box: it kills the agent tree.
        self._killed = True
        self._channel.close()


class SSHTransport(Transport):
    """paramiko through a jump chain; the connection is opened on first start() and reused."""

    def __init__(self, target: Target, targets: dict[str, Target], options: TransportOptions):
        super().__init__(target)
        self.options = options
        try:
            self.hops: list[Hop] = ChainResolver(targets, options).resolve(target)
        except UsageError as exc:  # a target-level problem: report it on that target's checks
            raise TargetError(str(exc)) from None
        self._clients: list[paramiko.SSHClient] = []
        self._lock = threading.Lock()

    @property
    def label(self) -> str:
        box = self.hops[-1]
        via = f" via {', '.join(h.name for h in self.hops[:-1])}" if len(self.hops) > 1 else ""
        return f"{self.target.name} ({box.user}@{box.address}{via})"

    def connect(self) -> paramiko.Transport:
        """The box's SSH transport, connecting (every hop) if not connected or dropped."""
        with self._lock:
            transport = self._clients[-1].get_transport() if self._clients else None
            if transport is None or not transport.is_active():
                self._close_clients()
                self._clients = connect_box(self.hops, self.options)
                transport = self._clients[-1].get_transport()
            assert transport is not None
            return transport

    def start(self, argv: list[str], stdin: bytes, env: dict[str, str]) -> AgentProcess:
        return self.start_command(*remote_command(argv, stdin, env, self.target.python))

    def start_command(self, command: str, stdin: bytes) -> AgentProcess:
        """Run a shell line as it is (no supervisor): the channel's stdin stays open after
        `stdin`, so a supervisor further down (exec transport) still has its lifeline."""
        transport = self.connect()
        try:
            channel = transport.open_session(timeout=self.hops[-1].connect_timeout)
            channel.exec_command(command)
            channel.sendall(stdin)
        except (TimeoutError, paramiko.SSHException, EOFError, OSError) as exc:
            raise UnreachableError(f"{self.label}: could not start the agent: {exc}") from None
        return SSHAgentProcess(channel, self.label)

    def close(self) -> None:
        with self._lock:
            self._close_clients()

    def _close_clients(self) -> None:
        for client in reversed(self._clients):
            client.close()
        self._clients = []
