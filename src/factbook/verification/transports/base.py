"""The transport interface: start `PYTHON -` on a box, feed it a script, stream its stdout.

Like testinfra's backends, each transport overrides one thing (`start`); like httpx, errors of
the underlying library (paramiko, OSError) are mapped at this boundary to TargetError subclasses
that name the host.
"""

from __future__ import annotations

import importlib
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from factbook.errors import TargetError
from factbook.knowledge.model import TRANSPORTS, Target
from factbook.probes.common import Capped

# What a box may make us hold. The agent caps one result at 16 MiB; a line longer than this
# is no result of ours (a probe flooding stdout) and is dropped as it streams.
MAX_LINE_BYTES = 17 * 1024 * 1024
# stderr is only read for notes and the reason a run was lost: its head and tail suffice.
STDERR_HEAD_BYTES = 64 * 1024
STDERR_TAIL_BYTES = 64 * 1024


def popen_piped(argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`argv` with stdin, stdout and stderr piped, leading its own session so that a kill of
    its process group takes everything it started. OSError propagates (callers name the host)."""
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )


def bounded_stderr() -> Capped:
    """A box's stderr as its first and last 64 KiB, however much it writes (1 GB -> 128 KiB):
    the probes' own Capped, which the agent uses on the box for a command's output."""
    return Capped(STDERR_HEAD_BYTES + STDERR_TAIL_BYTES, "\n[... {} bytes of stderr dropped ...]\n")


def bounded_lines(chunks: Iterator[bytes], limit: int = MAX_LINE_BYTES) -> Iterator[str]:
    """Split a byte stream into lines, dropping any line longer than `limit` as it arrives."""
    buf = bytearray()
    scanned = 0
    skipping = False
    for data in chunks:
        buf += data
        while (i := buf.find(b"\n", scanned)) >= 0:
            if not skipping:
                yield buf[:i].decode("utf-8", "replace")
            skipping = False
            del buf[: i + 1]
            scanned = 0
        scanned = len(buf)
        if len(buf) > limit:  # no newline in sight: forget it, and the rest of that line
            buf.clear()
            scanned = 0
            skipping = True
    if buf and not skipping:
        yield buf.decode("utf-8", "replace")


class AgentProcess(ABC):
    """A running `python3 -` on a box."""

    @abstractmethod
    def lines(self) -> Iterator[str]:
        """Stdout lines as they arrive (without newline), until the process ends or drops."""

    @abstractmethod
    def stderr_text(self) -> str:
        """What the process wrote to stderr (call after `lines()` is exhausted)."""

    @abstractmethod
    def wait(self, timeout: float | None = None) -> int | None:
        """The exit status, or None when the connection dropped before one arrived."""

    @abstractmethod
    def kill(self) -> None:
        """Stop the process (and for SSH, close the channel); idempotent."""


class Transport(ABC):
    """One connection to one target, reused for every agent start in a run."""

    def __init__(self, target: Target):
        self.target = target

    @property
    def label(self) -> str:
        """How messages name this box: target name and host."""
        host = self.target.host or "localhost"
        return f"{self.target.name} ({host})" if self.target.host else self.target.name

    @abstractmethod
    def start(self, argv: list[str], stdin: bytes, env: dict[str, str]) -> AgentProcess:
        """Run argv (already quoted per element) with stdin, extra env; stream its output."""

    def start_command(self, command: str, stdin: bytes) -> AgentProcess:
        """Run a shell line on the box as it is (no supervisor), `stdin` fed and then kept
        open; transports that reach a remote shell (ssh, openssh) implement it, for `via`."""
        raise TargetError(f"{self.label}: transport {self.target.transport} cannot carry `via`")

    def close(self) -> None:  # noqa: B027 - optional for transports holding no connection
        """Release the connection."""


@dataclass
class TransportOptions:
    """User choices that affect how connections are made."""

    accept_new_host_keys: bool = False
    known_hosts: str | None = None  # default ~/.ssh/known_hosts
    ssh_config: str | None = None  # default ~/.ssh/config
    connect_timeout: float = 10.0
    keepalive: float = 15.0
    extra: dict[str, str] = field(default_factory=dict)
    # While `sharing` is set (the verify engine sets it for a run and calls close_shared()
    # after), transports share connections here: the SSH jump pool. Otherwise each transport
    # opens and closes all of its own.
    sharing: bool = False
    shared: dict[str, Any] = field(default_factory=dict)

    def close_shared(self) -> None:
        """Close what the run's transports shared (call once every transport is closed)."""
        for item in self.shared.values():
            item.close()
        self.shared.clear()
        self.sharing = False


# Every transport, declared once: its name in targets.yaml -> the module and class that
# implement it (imported only when a target uses it: paramiko stays unloaded for local runs).
# schema.py's `transport` enum is this mapping's keys.


def transport_for(
    target: Target, targets: dict[str, Target], options: TransportOptions | None = None
) -> Transport:
    """The transport a target asks for; jump and `via` names are resolved against `targets`."""
    module_name, class_name = TRANSPORTS[target.transport]
    module = importlib.import_module(f"{__package__}.{module_name}")
    return getattr(module, class_name)(target, targets, options or TransportOptions())
