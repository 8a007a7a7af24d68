"""The knowledge base's value types: facts, checks, milestones, targets.

They are plain frozen-ish dataclasses built by the loader after validation, so code that uses
them never re-checks types. A fact keeps its file and line for every message about it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Source:
    """Where a fact came from: a seed message, or a run (runbook step, verify run)."""

    seed: str | None = None
    message: int | None = None
    quote: str | None = None
    run: str | None = None
    runbook: str | None = None
    step: str | None = None
    target: str | None = None
    date: str | None = None
    note: str | None = None

    def label(self) -> str:
        if self.seed:
            return f"msg {self.message} ({self.seed})" if self.message else self.seed
        # str(): an unquoted YAML date arrives as datetime.date (lint flags it, show must not crash)
        parts = [str(p) for p in (self.runbook, self.step, self.run, self.date) if p]
        return "run " + " / ".join(parts) if parts else "unknown"


@dataclass(frozen=True)
class Check:
    """How to verify a fact live: a probe, its arguments, and what it must return."""

    probe: str
    args: dict[str, Any] = field(default_factory=dict)
    expect: dict[str, Any] | None = None
    timeout: float | None = None
    target: str | None = None


@dataclass(frozen=True)
class HistoryEntry:
    """A status change at a milestone."""

    at: str
    status: str
    note: str | None = None


@dataclass(frozen=True)
class Milestone:
    """A point in the project's time, in file order."""

    id: str
    title: str
    index: int
    seed: str | None = None
    message: int | None = None
    date: str | None = None


# transport name -> (module under verification/transports, class): the schema's choices, and
# what transport_for imports (the names here, so reading a knowledge base imports no transport)
TRANSPORTS: dict[str, tuple[str, str]] = {
    "ssh": ("ssh", "SSHTransport"),
    "openssh": ("openssh", "OpenSSHTransport"),
    "local": ("local", "LocalTransport"),
    "exec": ("exec", "ExecTransport"),
    "slurm": ("slurm", "SlurmTransport"),
}


@dataclass(frozen=True)
class Target:
    """A box facts live on and checks run against."""

    name: str
    transport: str = "ssh"
    host: str | None = None
    port: int | None = None
    user: str | None = None
    jump: tuple[str, ...] = ()
    # an ssh ProxyCommand (from an Ansible inventory's ssh args): the openssh transport runs it
    proxy_command: str | None = None
    python: str | None = None
    identity_file: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    description: str | None = None
    tags: tuple[str, ...] = ()
    connect_timeout: float | None = None
    # transport: exec -- the argv prefix that reaches a Python on the box (`docker exec -i c`)
    exec: tuple[str, ...] = ()
    # transport: exec / slurm -- the target (ssh/openssh) on which that command runs
    via: str | None = None
    # transport: slurm -- the nodes (a Slurm node list) or partition to check, srun options
    nodes: str | None = None
    partition: str | None = None
    srun_args: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()  # every group it belongs to, directly or through children
    vars: dict[str, Any] = field(default_factory=dict)  # merged: all < groups < the target's own
    # what makes this box this box (hostname, machine_id, gpu_uuids, facts): checked before
    # a run, which is refused on any other machine (verify/identity.py)
    identity: dict[str, Any] = field(default_factory=dict)
    # read from an ssh config (`--inventory CONFIG`): connect as `ssh -F FILE NAME` resolves
    # NAME, every hop from that file, never looked up a second time by its HostName
    ssh_config: str | None = None


@dataclass
class Fact:
    """One thing the team knows, with where it came from and how to check it."""

    id: str
    category: str
    title: str
    statement: str
    status: str
    sources: list[Source]
    file: str
    line: int
    value: Any = None
    unit: str | None = None
    target: str | None = None
    tags: list[str] = field(default_factory=list)
    since: str | None = None
    until: str | None = None
    history: list[HistoryEntry] = field(default_factory=list)
    check: Check | None = None
    links: dict[str, list[str]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"

    def get(self, key: str, default: Any = None) -> Any:
        """A category-specific key (symptom, rationale, path, state, ...)."""
        return self.extra.get(key, default)

    def check_target(self) -> str | None:
        return (self.check.target if self.check else None) or self.target
