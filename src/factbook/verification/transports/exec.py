"""The exec transport: any command that gives a stdin pipe to a shell on the box.

    transport: exec
    exec: [docker, exec, -i, trainer]          # or podman exec -i, kubectl exec -i POD -c C --,
                                               # pct exec 129 --, nsenter -t PID -a, lxc-attach -n
    via: kpro6                                 # optional: run that command on an SSH target

The argv prefix is followed by `sh -c SCRIPT` (remote.py), so inside the container the agent
runs behind the same supervisor as over SSH: same timeouts, same cleanup. The prefix's stdin
is the supervisor's lifeline: closing it (kill, Ctrl-C, a dropped SSH connection to `via`)
makes the supervisor kill the agent's tree inside the container. With `via`, the whole line
runs on that target through its own transport's raw channel (no second supervisor there, which
would close the lifeline early), e.g. `pct exec 129` on the Proxmox host reached over SSH.
"""

from __future__ import annotations

import os

from factbook.errors import TargetError, UnreachableError
from factbook.knowledge.model import Target
from factbook.verification.transports.base import AgentProcess, Transport, TransportOptions
from factbook.verification.transports.pipe import announce, start_marked
from factbook.verification.transports.remote import shell_join, supervised

START_LIMIT = 30.0  # seconds for the exec command to reach a shell in the container


class ExecTransport(Transport):
    """`PREFIX... sh -c SCRIPT`, here or on the `via` target."""

    def __init__(self, target: Target, targets: dict[str, Target], options: TransportOptions):
        super().__init__(target)
        if not target.exec:
            raise TargetError(f"target {target.name}: transport exec needs `exec:` (an argv)")
        self.prefix = list(target.exec)
        self.via: Transport | None = None
        if target.via:
            from factbook.verification.transports.base import transport_for

            outer = targets.get(target.via)
            if outer is None:
                raise TargetError(f"target {target.name}: via {target.via!r} is not a known target")
            if outer.transport not in ("ssh", "openssh"):
                raise TargetError(
                    f"target {target.name}: via {target.via!r} must be an ssh or openssh target"
                )
            self.via = transport_for(outer, targets, options)

    @property
    def label(self) -> str:
        via = f" via {self.via.label}" if self.via else ""
        return f"{self.target.name} ({shell_join(self.prefix)}{via})"

    def start(self, argv: list[str], stdin: bytes, env: dict[str, str]) -> AgentProcess:
        if self.via is not None:
            inner, payload = supervised(argv, stdin, env, self.target.python)
            return self.via.start_command(shell_join([*self.prefix, *inner]), payload)
        inner, payload = supervised(argv, stdin, env, self.target.python, preamble=announce())
        return start_marked(
            [*self.prefix, *inner],
            payload,
            self.label,
            limit=START_LIMIT,
            failure=self._failure,
            env={**os.environ, **self.target.env},
        )

    def _failure(self, stderr: str) -> TargetError:
        said = " | ".join(s.strip() for s in stderr.strip().splitlines()[-3:] if s.strip())
        return UnreachableError(
            f"{self.label} is unreachable: {self.prefix[0]} did not start a shell there"
            f"{': ' + said if said else ''}"
        )

    def close(self) -> None:
        if self.via is not None:
            self.via.close()
