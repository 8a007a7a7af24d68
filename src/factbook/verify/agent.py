"""The agent: runs ON the box as `python3 -`, shipped with its probes and checks in one script.

Stdlib only, Python 3.8+. Every call runs in a forked child that leads its own process group,
so a timeout kills the probe and everything it started (`os.killpg`), and a probe that hangs or
crashes cannot take the agent down. At most `jobs` children run at once; results stream to
stdout as one JSON line each, flushed at once, so a dropped connection keeps what arrived.

Lines written:  {"agent": {...}}  then per call  {"id", "ok": true, "value", "duration_s"}
                | {"id", "error"} | {"id", "skipped"}  and finally  {"done": n}.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import threading
import time
import traceback
from typing import Any

# A result bigger than this is replaced by an error rather than flooding the connection.
RESULT_CAP = 16 * 1024 * 1024
MAX_JOBS = 256
# Probe modules that failed to load, by file name: named in the errors of their probes.
BROKEN: dict[str, str] = {}


def load_probes(sources: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Execute each probe module in its own namespace; collect its PROBES."""
    probes: dict[str, Any] = {}
    broken: dict[str, str] = {}
    for filename, text in sources.items():
        scope: dict[str, Any] = {"__name__": "factbook_probe_" + filename.replace("/", "_")}
        try:
            exec(compile(text, filename, "exec"), scope)
        except BaseException as exc:
            broken[filename] = f"{filename} failed to load: {type(exc).__name__}: {exc}"
            continue
        probes.update(scope.get("PROBES") or {})
    return probes, broken


def describe(exc: BaseException) -> dict[str, str]:
    """A probe's exception as a result: missing modules are skips, clean errors stay short."""
    if isinstance(exc, ModuleNotFoundError):
        return {"skipped": f"module missing on target: {exc.name or exc}"}
    if type(exc) is RuntimeError or isinstance(exc, OSError):
        return {"error": str(exc)}
    tb = traceback.extract_tb(exc.__traceback__)[-1:]
    where = f" ({tb[0].filename}:{tb[0].lineno})" if tb else ""
    return {"error": f"{type(exc).__name__}: {exc}{where}"}


def run_call(probes: dict[str, Any], call: dict[str, Any]) -> dict[str, Any]:
    func = probes.get(call["probe"])
    if func is None:
        why = "; ".join(BROKEN.values())
        return {"error": f"probe {call['probe']!r} is not available on the target. {why}".strip()}
    try:
        return {"ok": True, "value": func(**call.get("args", {}))}
    except BaseException as exc:
        return describe(exc)


class Child:
    """One forked call: its pid (= process group), pipe, buffer and deadline."""

    def __init__(self, call: dict[str, Any], pid: int, fd: int, started: float):
        self.call, self.pid, self.fd, self.started = call, pid, fd, started
        self.deadline = started + float(call.get("timeout") or 60)
        self.chunks: list[bytes] = []
        self.size = 0


def _prctl() -> Any:
    """libc's prctl on Linux (for PR_SET_PDEATHSIG), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except Exception:
        return None


PRCTL: list[Any] = []  # filled once by main(), before the first fork
PR_SET_PDEATHSIG = 1


def watch_parent(agent_pid: int) -> None:
    """If the agent dies (connection dropped, agent killed), kill this call's whole group.

    On Linux the kernel signals us (PR_SET_PDEATHSIG, no cost per call); elsewhere a thread
    polls the parent pid.
    """
    signal.signal(signal.SIGTERM, lambda *_: os.killpg(0, signal.SIGKILL))
    prctl = PRCTL[0] if PRCTL else None
    if prctl is not None and prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM)) == 0:
        if os.getppid() != agent_pid:  # it died before the request took effect
            os.killpg(0, signal.SIGKILL)
        return

    def watch() -> None:
        while True:
            time.sleep(0.2)
            if os.getppid() != agent_pid:
                os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, daemon=True).start()


def spawn(probes: dict[str, Any], call: dict[str, Any]) -> Child:
    read_fd, write_fd = os.pipe()
    agent_pid = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        raise
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.setsid()
            for sig in (signal.SIGHUP, signal.SIGINT):
                signal.signal(sig, signal.SIG_DFL)
            watch_parent(agent_pid)
            os.close(read_fd)
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(null, 1)  # a probe that prints must not corrupt the result stream
            result = run_call(probes, call)
            try:
                data = json.dumps(result, default=repr).encode("utf-8")
            except (TypeError, ValueError) as exc:
                data = json.dumps({"error": f"result is not JSON: {exc}"}).encode("utf-8")
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view) :]
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    return Child(call, pid, read_fd, time.monotonic())


def reap(child: Child) -> None:
    """Kill whatever the call left in its process group, then collect the child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(child.pid, 0)
    os.close(child.fd)


def finish(child: Child) -> dict[str, Any]:
    data = b"".join(child.chunks)
    if not data:
        return {"error": "the probe process died without a result"}
    if len(data) > RESULT_CAP:
        return {"error": f"result of {len(data)} bytes exceeds the {RESULT_CAP} byte cap"}
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError as exc:
        return {"error": f"unreadable result: {exc}"}


class Agent:
    """The parent: a bounded pool of forked calls, one select loop, one output stream."""

    def __init__(self, probes: dict[str, Any], batch: dict[str, Any]):
        self.probes = probes
        self.pending = list(batch.get("calls", []))
        # select() handles fds below 1024: far more than useful concurrency on one box.
        self.jobs = min(MAX_JOBS, max(1, int(batch.get("jobs") or 16)))
        self.running: dict[int, Child] = {}
        self.emitted = 0

    def emit(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, default=repr)
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        self.emitted += 1

    def kill_all(self, *_: Any) -> None:
        for child in list(self.running.values()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)
        os._exit(143)

    def run(self) -> None:
        while self.pending or self.running:
            while self.pending and len(self.running) < self.jobs:
                call = self.pending.pop(0)
                try:
                    child = spawn(self.probes, call)
                except OSError as exc:  # out of processes or fds
                    if self.running:  # wait for a running call to free its slot
                        self.pending.insert(0, call)
                        break
                    self.emit({"id": call["id"], "error": f"cannot start the probe: {exc}"})
                    continue
                self.running[child.fd] = child
            if not self.running:
                continue
            now = time.monotonic()
            wait = max(0.0, min(c.deadline for c in self.running.values()) - now)
            ready, _, _ = select.select(list(self.running), [], [], min(wait, 1.0))
            for fd in ready:
                child = self.running[fd]
                chunk = os.read(fd, 1 << 20)
                if chunk:
                    child.size += len(chunk)
                    if child.size <= RESULT_CAP + 1:
                        child.chunks.append(chunk)
                    continue
                del self.running[fd]
                reap(child)
                self.report(child, finish(child))
            now = time.monotonic()
            for fd, child in list(self.running.items()):
                if now >= child.deadline:
                    del self.running[fd]
                    reap(child)
                    limit = child.call.get("timeout") or 60
                    self.report(
                        child, {"error": f"timed out after {limit}s (process group killed)"}
                    )

    def report(self, child: Child, result: dict[str, Any]) -> None:
        result["id"] = child.call["id"]
        result["duration_s"] = round(time.monotonic() - child.started, 4)
        self.emit(result)


def main(sources: dict[str, str], batch: dict[str, Any]) -> None:
    started = time.monotonic()
    probes, broken = load_probes(sources)
    BROKEN.update(broken)
    PRCTL.append(_prctl())
    agent = Agent(probes, batch)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, agent.kill_all)
    agent.emit(
        {
            "agent": {
                "python": sys.executable,
                "version": sys.version.split()[0],
                "pid": os.getpid(),
                "host": os.uname().nodename,
                "broken": broken,
                "load_s": round(time.monotonic() - started, 4),
            }
        }
    )
    try:
        agent.run()
    except BrokenPipeError:
        agent.kill_all()
    agent.emit({"done": agent.emitted - 1, "elapsed_s": round(time.monotonic() - started, 4)})
