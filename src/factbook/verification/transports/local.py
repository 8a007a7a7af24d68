"""The local transport: the agent runs as a subprocess of factbook on this machine.

The agent leads its own session (`start_new_session`), so `kill()` takes down its process
group, and stdin is fed and stderr drained by threads so no pipe can fill and deadlock.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator

from factbook.errors import UnreachableError
from factbook.knowledge.model import Target
from factbook.verification.transports.base import (
    AgentProcess,
    Transport,
    TransportOptions,
    bounded_lines,
    bounded_stderr,
    popen_piped,
)
from factbook.verification.transports.diagnose import explain


class LocalProcess(AgentProcess):
    """A `python3 -` child of this process."""

    def __init__(self, proc: subprocess.Popen[bytes], stdin: bytes):
        self.proc = proc
        self._stderr = bounded_stderr()
        self._feeder = threading.Thread(target=self._feed, args=(stdin,), daemon=True)
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._feeder.start()
        self._drainer.start()

    def _feed(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read(65536), b""):  # type: ignore[union-attr]
            self._stderr.add(chunk)

    def lines(self) -> Iterator[str]:
        stdout = self.proc.stdout
        assert stdout is not None
        yield from bounded_lines(iter(lambda: stdout.read1(65536), b""))  # type: ignore[union-attr]

    def stderr_text(self) -> str:
        self._drainer.join(timeout=5)
        return self._stderr.text()[0]

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


class LocalTransport(Transport):
    """Runs commands on this machine."""

    def __init__(
        self,
        target: Target,
        targets: dict[str, Target] | None = None,
        options: TransportOptions | None = None,
    ):
        super().__init__(target)  # nothing to resolve or connect: same call as every transport

    def start(self, argv: list[str], stdin: bytes, env: dict[str, str]) -> AgentProcess:
        full_env = {**os.environ, **self.target.env, **env}
        try:
            proc = popen_piped(argv, full_env)
        except OSError as exc:
            why = explain(self.label, argv[0], None, str(exc))
            raise UnreachableError(why or f"{self.label}: cannot start {argv[0]}: {exc}") from None
        return LocalProcess(proc, stdin)
