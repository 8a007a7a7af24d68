"""Reach a box through the verify engine's transports: commands, servers, probes.

Every operation ships `box_helper.py` with one job to `PYTHON -` on the target (local
subprocess, SSH, SSH through jumps: whatever `transport_for` gives), so the same code path
runs a command on this machine and on llm-two behind kpro6, and process-group handling
happens on the box itself, where the processes are.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factbook.errors import CommandFailed, TargetError
from factbook.knowledge.model import Target
from factbook.verification.transports.base import Transport, transport_for
from factbook.verification.transports.diagnose import explain
from factbook.verification.bundle import agent_argv

HELPER = Path(__file__).with_name("box_helper.py")
_HELPER_TEXT: str | None = None


@dataclass
class CommandResult:
    """The outcome of a bounded command on a box."""

    argv: list[str]
    rc: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    target: str = ""

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out

    def check(self) -> CommandResult:
        """Raise CommandFailed unless rc is 0 (cells call `box.run(...).check()` or check=True)."""
        if not self.ok:
            raise CommandFailed(self)
        return self


@dataclass
class BoxClient:
    """Operations on one target through one reused transport connection."""

    target: Target
    targets: dict[str, Target]
    _transport: Transport | None = field(default=None, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.target.name

    def argv(self) -> list[str]:
        """How the helper starts: the target's `python` (`~` expanded on the box), else python3.

        A local target without `python` uses this interpreter, which is known to exist.
        """
        if self.target.transport == "local" and not self.target.python:
            return [sys.executable, "-"]
        return agent_argv(self.target.python)

    def _stop_quietly(self, spawned: dict[str, Any]) -> None:
        # the helper watches its parent too; this is only the fast path
        with contextlib.suppress(Exception):
            self.job(
                {
                    "op": "stop",
                    "pid": spawned["pid"],
                    "started": spawned.get("started"),
                    "grace": 2,
                },
                wait_s=15,
            )

    def transport(self) -> Transport:
        if self._transport is None:
            self._transport = transport_for(self.target, self.targets)
        return self._transport

    def job(
        self,
        job: dict[str, Any],
        *,
        on_line: Callable[[dict[str, Any]], None] | None = None,
        wait_s: float | None = None,
    ) -> dict[str, Any]:
        """Run one helper job; stream its lines to `on_line`; return its result."""
        script = f"JOB = __import__('json').loads({json.dumps(job)!r})\n" + _helper_text()
        env = {str(k): str(v) for k, v in self.target.env.items()}
        process = self.transport().start(self.argv(), script.encode(), env)
        result: dict[str, Any] | None = None
        spawned: dict[str, Any] = {}
        done = threading.Event()
        failure: list[BaseException] = []

        def read() -> None:
            nonlocal result
            try:
                for line in process.lines():
                    try:
                        message = json.loads(line)
                    except json.JSONDecodeError:
                        continue
                    if "result" in message:
                        result = message["result"]
                    elif "spawned" in message:
                        spawned.update(pid=message["spawned"], started=message.get("started"))
                    elif on_line is not None:
                        on_line(message)
            except BaseException as exc:  # mapped below, in the caller's thread
                failure.append(exc)
            finally:
                done.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            while not done.wait(0.05):
                pass
        except BaseException:
            # Ctrl-C or a step timeout in the kernel: stop the command's process group first
            # (killing the helper alone would orphan it), then the helper.
            if spawned:
                self._stop_quietly(spawned)
            process.kill()
            raise
        process.wait(timeout=wait_s or 30)
        if failure:
            raise failure[0]
        if result is None:
            stderr = process.stderr_text().strip()
            status = process.wait(timeout=1)
            label = self.transport().label
            explained = explain(label, self.target.python, status, stderr) if status else None
            raise TargetError(
                explained
                or f"{self.name}: box helper gave no result"
                + (f": {stderr[-2000:]}" if stderr else "")
            )
        return result

    def run(
        self,
        argv: list[str],
        *,
        timeout: float = 600,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stdin: str | None = None,
        on_output: Callable[[str, str], None] | None = None,
    ) -> CommandResult:
        """A bounded command; its whole process group dies on timeout."""
        out: list[str] = []
        err: list[str] = []

        def on_line(message: dict[str, Any]) -> None:
            (out if message.get("stream") == "stdout" else err).append(message["text"])
            if on_output is not None:
                on_output(message.get("stream", "stdout"), message["text"])

        started = time.monotonic()
        res = self.job(
            {
                "op": "run",
                "argv": [str(a) for a in argv],
                "timeout": timeout,
                "env": env or {},
                "cwd": cwd,
                "stdin": stdin,
            },
            on_line=on_line,
        )
        if res.get("error"):
            err.append(res["error"] + "\n")
        return CommandResult(
            argv=[str(a) for a in argv],
            rc=int(res["rc"]),
            stdout="".join(out),
            stderr="".join(err),
            duration_s=round(time.monotonic() - started, 4),
            timed_out=bool(res.get("timed_out")),
            target=self.name,
        )

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None


def _helper_text() -> str:
    global _HELPER_TEXT
    if _HELPER_TEXT is None:
        _HELPER_TEXT = HELPER.read_text(encoding="utf-8")
    return _HELPER_TEXT
