"""A local command that carries the agent somewhere else: `ssh`, `docker exec`, `srun`, ...

The command's stdin gets the payload and then stays OPEN: it is the lifeline of the supervisor
at the far end (see supervisor.py), which kills the agent's tree when it reads EOF. `kill()`
therefore closes stdin first (the far end cleans up), then, after a grace period, kills the
local command's process group. stdout streams as lines; stderr is drained by a thread so no
pipe can fill and deadlock.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator

from factbook.errors import TargetError, UnreachableError
from factbook.verification.transports.base import (
    AgentProcess,
    bounded_lines,
    bounded_stderr,
    popen_piped,
)

KILL_GRACE = 3.0  # seconds the far end gets to clean up after its lifeline closes
MARK = "factbook-pipe-connected"  # written to stderr by the far end's shell: we got there


def announce() -> str:
    """The shell words that tell start_marked() the far end's shell is running."""
    return f"echo {MARK} >&2"


class PipeProcess:
    """`argv` started here, fed `payload` on a stdin that stays open until kill() or exit."""

    def __init__(self, argv: list[str], payload: bytes, label: str, env: dict[str, str]):
        self.label = label
        try:
            self.proc = popen_piped(argv, env)
        except OSError as exc:
            raise UnreachableError(f"{label}: cannot start {argv[0]}: {exc}") from None
        self._stderr = bounded_stderr()
        self._stderr_lock = threading.Lock()
        self._stderr_done = threading.Event()
        self._watchers: list[Callable[[bytes, bool], None]] = []
        self._closed = threading.Lock()
        threading.Thread(target=self._feed, args=(payload,), daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()
        threading.Thread(target=self._reap, daemon=True).start()

    def _reap(self) -> None:
        """The carrier died (killed, crashed): close the lifeline, since a far end that is
        still attached to our stdin (nsenter's child, a container) must stop as well."""
        self.proc.wait()
        self._close_stdin()

    def _feed(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError, ValueError):
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        try:
            for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):  # type: ignore[union-attr]
                with self._stderr_lock:
                    self._stderr.add(chunk)
                    text = self._stderr.data()[0] if self._watchers else b""
                for watch in list(self._watchers):
                    watch(text, False)
        except (OSError, ValueError):
            pass
        finally:
            self._stderr_done.set()
            with self._stderr_lock:
                text = self._stderr.data()[0]
            for watch in list(self._watchers):
                watch(text, True)

    def watch_stderr(self, watcher: Callable[[bytes, bool], None]) -> None:
        """Call `watcher(stderr so far, ended)` now and on every chunk; ended once at EOF."""
        with self._stderr_lock:
            self._watchers.append(watcher)
            text = self._stderr.data()[0]
        watcher(text, self._stderr_done.is_set())

    def stderr_bytes(self, wait: float = 5.0) -> bytes:
        self._stderr_done.wait(wait)
        with self._stderr_lock:
            return self._stderr.data()[0]

    def lines(self) -> Iterator[str]:
        assert self.proc.stdout is not None
        stdout = self.proc.stdout
        yield from bounded_lines(iter(lambda: stdout.read1(65536), b""))  # type: ignore[attr-defined]

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            status = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self._close_stdin()
        return status

    def _close_stdin(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()

    def kill(self) -> None:
        """Close the lifeline, give the far end KILL_GRACE to clean up, then kill here."""
        if self.proc.poll() is not None:
            self._close_stdin()
            return
        self._close_stdin()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(KILL_GRACE)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.proc.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(1.0)


class MarkedProcess(AgentProcess):
    """A PipeProcess whose far end announces itself on stderr (see announce())."""

    def __init__(self, pipe: PipeProcess, dropped_status: int | None):
        self.pipe = pipe
        self.dropped_status = dropped_status
        self.killed = False
        self.connected = threading.Event()
        self.settled = threading.Event()  # connected, or stderr ended first
        pipe.watch_stderr(self._seen)

    def _seen(self, text: bytes, ended: bool) -> None:
        if MARK.encode() in text:
            self.connected.set()
        if ended or self.connected.is_set():
            self.settled.set()

    def lines(self) -> Iterator[str]:
        return self.pipe.lines()

    def stderr_text(self) -> str:
        text = self.pipe.stderr_bytes().decode("utf-8", "replace")
        return "".join(line for line in text.splitlines(True) if MARK not in line)

    def wait(self, timeout: float | None = None) -> int | None:
        """Exit status; None when the carrier itself failed or was killed (the pipe died)."""
        status = self.pipe.wait(timeout)
        if status is None or status < 0 or status == self.dropped_status or self.killed:
            return None
        return status

    def kill(self) -> None:
        self.killed = True
        self.pipe.kill()


def start_marked(
    argv: list[str],
    payload: bytes,
    label: str,
    *,
    limit: float,
    failure: Callable[[str], TargetError],
    dropped_status: int | None = None,
    env: dict[str, str] | None = None,
) -> MarkedProcess:
    """Start argv and return once the far end announced itself; else raise `failure(stderr)`
    (or UnreachableError after `limit` seconds), with nothing left running."""
    pipe = PipeProcess(argv, payload, label, dict(os.environ) if env is None else env)
    proc = MarkedProcess(pipe, dropped_status)
    if not proc.settled.wait(limit):
        proc.kill()
        raise UnreachableError(f"{label} is unreachable: no answer within {limit:g} s")
    if not proc.connected.is_set():
        proc.kill()
        raise failure(proc.stderr_text())
    return proc
