"""The transport interface: start `PYTHON -` on a box, feed it a script, stream its stdout.

Like testinfra's backends, each transport overrides one thing (`start`); like httpx, errors of
the underlying library (paramiko, OSError) are mapped at this boundary to TargetError subclasses
that name the host.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..model import Target


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


def transport_for(
    target: Target, targets: dict[str, Target], options: TransportOptions | None = None
) -> Transport:
    """The transport a target asks for; jump names are resolved against `targets`."""
    options = options or TransportOptions()
    if target.transport == "local":
        from .local import LocalTransport

        return LocalTransport(target)
    from .ssh import SSHTransport

    return SSHTransport(target, targets, options)
