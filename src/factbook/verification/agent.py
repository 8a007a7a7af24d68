"""The agent: runs ON the box as `python3 -`, shipped with its probes and checks in one script.

Stdlib only, Python 3.7+. Calls run in a pool of at most `jobs` forked workers; each worker
leads its own process group and has one call in flight at a time, so a call past its timeout is
killed with everything it started (`os.killpg` of that worker's group) and the worker replaced.
Workers are reused for the next call (a fork per call costs more than most probes), and their
groups are killed when the batch ends, so nothing a probe started outlives the run. If the agent
itself dies, every worker's group is killed too (Linux PR_SET_PDEATHSIG, else a watcher thread).
Results stream to stdout as one JSON line each, flushed before another call starts (a burst
of results read together leaves in one write): a dropped connection, or a call that kills the
agent, keeps what arrived. A call
marked `exclusive` (a measurement) starts only when every other call has finished and nothing
else starts while it runs; exclusive calls reuse one worker, so torch and CUDA are initialised
once for all of them.
Descendants:    a call that runs `setsid` (or double-forks) leaves its worker's group, so on
                Linux the agent makes itself a child subreaper (PR_SET_CHILD_SUBREAPER): what
                a call detached is re-parented to the agent instead of init. Processes a call
                left under its worker are killed when its result arrives, a timed-out worker
                is killed with its whole tree, orphans re-parented to the agent are killed
                whenever no call is in flight, and everything is killed at the end. The agent
                also stops when its parent goes (a killed `verify-facts`, a closed channel).

Lines written:  {"agent": {...}}  then per call  {"id", "ok": true, "value", "duration_s"}
                | {"id", "error"} | {"id", "skipped"}  and finally  {"done": n}; each line
                carries the batch's "nonce".
Result channel: the agent keeps a private copy of fd 1 for its lines and points fd 1 (and
                sys.stdout) at stderr before any probe module loads, so a probe that prints at
                import time, or a process it starts, cannot write a line the client would take
                for a result; the client also drops every line without the run's nonce.
Worker pipes:   parent -> worker: one JSON call per line; worker -> parent: 8-byte little-endian
                length, then the JSON result.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import struct
import sys
import threading
import time

# typing costs ~10 ms to import on a box and annotations here are never evaluated
# (`from __future__ import annotations`): type checkers see it, the box does not import it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# A result bigger than this is replaced by an error rather than flooding the connection.
RESULT_CAP = 16 * 1024 * 1024
# select() handles fds below 1024: far more than useful concurrency on one box.
MAX_JOBS = 256
# The pool starts with one worker per CPU (at least 2) and adds one for every call that has
# run longer than this: quick checks (a file hash, a version) then share a few warm workers,
# and calls that wait (a command, the network, a sleep) still get up to `jobs` at once. A
# fork plus the caches a fresh worker builds again costs more than most quick checks.
GROW_AFTER = 0.01
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
# Probe modules that failed to load, by file name: named in the errors of their probes.
BROKEN: dict[str, str] = {}
PRCTL: list[Any] = []  # libc prctl (or None), looked up once before the first fork
RESULT_FD: list[int] = []  # the private copy of the original stdout: results only


def claim_stdout() -> Any:
    """A text stream on a private duplicate of fd 1; fd 1 itself now writes to stderr."""
    sys.stdout.flush()
    private = os.dup(1)
    os.dup2(2, 1)
    RESULT_FD.append(private)
    return os.fdopen(private, "w", encoding="utf-8", closefd=False)


def install_shared(shared: dict[str, str]) -> None:
    """Register the helper modules probes import (`factbook.probes.common`) in sys.modules,
    with empty parent packages, so their imports resolve where factbook is not installed."""
    import types

    for name, text in shared.items():
        parts = name.split(".")
        for i in range(1, len(parts)):
            package = ".".join(parts[:i])
            if package not in sys.modules:
                stub = types.ModuleType(package)
                stub.__path__ = []
                sys.modules[package] = stub
        module = types.ModuleType(name)
        module.__package__ = ".".join(parts[:-1])
        sys.modules[name] = module
        exec(compile(text, name.replace(".", "/") + ".py", "exec"), module.__dict__)


def load_probes(sources: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Execute each probe module in its own namespace; collect its PROBES."""
    probes: dict[str, Any] = {}
    broken: dict[str, str] = {}
    for filename, text in sources.items():
        scope: dict[str, Any] = {
            "__name__": "factbook_probe_" + filename.replace("/", "_"),
            # built-in probes import their helpers relatively (`from .common import ...`)
            "__package__": "factbook.probes" if filename.startswith("factbook/probes/") else None,
        }
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
    import traceback  # ~10 ms on a box: only an unexpected error needs it

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


def encode(result: dict[str, Any]) -> bytes:
    try:
        data = json.dumps(result, default=repr).encode("utf-8")
    except (TypeError, ValueError) as exc:
        data = json.dumps({"error": f"result is not JSON: {exc}"}).encode("utf-8")
    if len(data) > RESULT_CAP:
        data = json.dumps(
            {"error": f"result of {len(data)} bytes exceeds the {RESULT_CAP} byte cap"}
        ).encode("utf-8")
    return data


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _prctl() -> Any:
    """libc's prctl on Linux (for PR_SET_PDEATHSIG), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except Exception:
        return None


def children(pid: int) -> list[int]:
    """Direct children of `pid` (every thread's), from /proc/PID/task/*/children."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                out.extend(int(p) for p in handle.read().split())
        except (OSError, ValueError):
            continue
    return out


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (a /proc scan: only on the paths that kill something). The
    supervisor's walk, shipped beside the agent as a shared module: one copy for both."""
    from factbook.verification.transports.supervisor import descendants as below

    return below(pid)


def kill_trees(pids: list[int]) -> None:
    """SIGKILL each pid and everything below it (whatever session or group it moved to)."""
    for pid in pids:
        for victim in [pid, *descendants(pid)]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(victim, signal.SIGKILL)


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux >= 3.4), so a `setsid` in a probe cannot escape."""
    prctl = PRCTL[0] if PRCTL else None
    return prctl is not None and prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def watch_own_parent(on_gone: Any) -> None:
    """Call `on_gone` when the agent's parent dies (a killed `verify-facts` or supervisor)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        on_gone()

    threading.Thread(target=watch, daemon=True).start()


def watch_parent(agent_pid: int) -> None:
    """If the agent dies (connection dropped, agent killed), kill this worker's whole group."""
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


def worker_loop(probes: dict[str, Any], calls_fd: int, results_fd: int) -> None:
    """In the worker: read calls one per line, answer each with a length-prefixed result."""
    pending = b""
    while True:
        chunk = os.read(calls_fd, 65536)
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            data = encode(run_call(probes, json.loads(line.decode("utf-8"))))
            write_all(results_fd, struct.pack("<Q", len(data)) + data)


class Worker:
    """A forked worker: its pid (= process group), pipes, and the call in flight."""

    def __init__(self, pid: int, calls_fd: int, results_fd: int):
        self.pid, self.calls_fd, self.results_fd = pid, calls_fd, results_fd
        self.buffer = bytearray()
        self.call: dict[str, Any] | None = None
        self.measured = False  # has run an exclusive call (its torch is warm)
        self.started = 0.0
        self.deadline = 0.0


def start_worker(probes: dict[str, Any], others: list[Worker]) -> Worker:
    calls_r, calls_w = os.pipe()
    try:
        results_r, results_w = os.pipe()
    except OSError:
        os.close(calls_r)
        os.close(calls_w)
        raise
    agent_pid = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        pid = os.fork()
    except OSError:
        for fd in (calls_r, calls_w, results_r, results_w):
            os.close(fd)
        raise
    if pid == 0:  # the worker: never returns
        code = 0
        try:
            os.setsid()
            for sig in (signal.SIGHUP, signal.SIGINT):
                signal.signal(sig, signal.SIG_DFL)
            watch_parent(agent_pid)
            for fd in [calls_w, results_r, *RESULT_FD] + [
                f for w in others for f in (w.calls_fd, w.results_fd)
            ]:
                os.close(fd)
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(null, 1)  # a probe that prints must not corrupt the result stream
            worker_loop(probes, calls_r, results_w)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(calls_r)
    os.close(results_w)
    return Worker(pid, calls_w, results_r)


def stop_worker(worker: Worker) -> None:
    """Kill the worker's whole group and tree (whatever its calls left behind), collect it."""
    below = descendants(worker.pid)  # before the kill: afterwards they are re-parented
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(worker.pid, signal.SIGKILL)
    kill_trees(below)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(worker.pid, 0)
    for fd in (worker.calls_fd, worker.results_fd):
        with contextlib.suppress(OSError):
            os.close(fd)


class Agent:
    """The parent: a bounded pool of workers, one select loop, one output stream."""

    def __init__(self, probes: dict[str, Any], batch: dict[str, Any], out: Any = None):
        self.probes = probes
        self.out = out or sys.stdout
        self.nonce = str(batch.get("nonce") or "")
        # exclusive calls (measurements) after all others, each group in the order given
        self.pending = sorted(batch.get("calls", []), key=lambda c: bool(c.get("exclusive")))
        self.jobs = min(MAX_JOBS, max(1, int(batch.get("jobs") or 16)))
        self.base = min(self.jobs, max(2, os.cpu_count() or 1))
        self.workers: list[Worker] = []
        self.emitted = 0
        self.unflushed = False  # results written but not yet flushed (see _loop)

    def emit(self, record: dict[str, Any], *, flush: bool = True) -> None:
        record["nonce"] = self.nonce
        self.out.write(json.dumps(record, default=repr) + "\n")
        if flush:
            self.out.flush()
        else:
            self.unflushed = True
        self.emitted += 1

    def flush(self) -> None:
        if self.unflushed:
            self.unflushed = False
            self.out.flush()

    def kill_all(self, *_: Any) -> None:
        with contextlib.suppress(OSError, ValueError, RuntimeError):  # RuntimeError: reentrant
            self.flush()
        below = descendants(os.getpid())
        for worker in self.workers:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(worker.pid, signal.SIGKILL)
        kill_trees(below)
        os._exit(143)

    def sweep_leftovers(self, worker: Worker) -> None:
        """Kill what the worker's finished call left running below it (its probe returned)."""
        left = children(worker.pid)
        if left:
            kill_trees(left)

    def sweep_orphans(self) -> None:
        """Kill processes re-parented to the agent (a call's detached daemons), reap them."""
        mine = {w.pid for w in self.workers}
        orphans = [pid for pid in children(os.getpid()) if pid not in mine]
        if not orphans:
            return
        kill_trees(orphans)
        for pid in orphans:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)

    def _retire(self, worker: Worker) -> None:
        self.workers.remove(worker)
        stop_worker(worker)

    def _assign(self, worker: Worker, call: dict[str, Any]) -> bool:
        try:
            write_all(worker.calls_fd, json.dumps(call).encode("utf-8") + b"\n")
        except OSError:  # the idle worker died: retire it, the call goes to another
            self._retire(worker)
            return False
        worker.call, worker.started = call, time.monotonic()
        worker.deadline = worker.started + float(call.get("timeout") or 60)
        return True

    def _next_exclusive(self) -> bool:
        """Whether the next pending call is exclusive (it may start only on an idle pool)."""
        return bool(self.pending and self.pending[0].get("exclusive"))

    def _fill(self) -> None:
        """Give pending calls to idle workers, starting workers up to `jobs`; an exclusive
        call waits for an idle pool and holds it until it ends."""
        if any(w.call is not None and w.call.get("exclusive") for w in self.workers):
            return
        while self.pending:
            if self._next_exclusive():
                if any(w.call is not None for w in self.workers):
                    return
                self._fill_exclusive()
                return
            idle = next((w for w in self.workers if w.call is None), None)
            if idle is None:
                if len(self.workers) >= self._wanted(time.monotonic()):
                    return
                try:
                    idle = start_worker(self.probes, self.workers)
                except OSError as exc:  # out of processes or fds
                    if any(w.call for w in self.workers):
                        return  # wait for a running call to free its slot
                    call = self.pending.pop(0)
                    self.emit({"id": call["id"], "error": f"cannot start the probe: {exc}"})
                    continue
                self.workers.append(idle)
            call = self.pending.pop(0)
            if not self._assign(idle, call):
                self.pending.insert(0, call)

    def _wanted(self, now: float) -> int:
        """Workers wanted now: `base` for quick calls, plus one per call past GROW_AFTER."""
        slow = sum(1 for w in self.workers if w.call is not None and now - w.started >= GROW_AFTER)
        return min(self.jobs, self.base + slow)

    def _grow_wait(self, busy: list[Worker], now: float) -> float:
        """Seconds until a busy call turns slow and the pool may grow (inf: it cannot)."""
        if not self.pending or self._next_exclusive() or len(self.workers) >= self.jobs:
            return float("inf")
        young = [w.started + GROW_AFTER - now for w in busy if now - w.started < GROW_AFTER]
        return max(0.0, min(young)) if young else float("inf")

    def _fill_exclusive(self) -> None:
        """Start the next exclusive call on the worker that measured before, or any idle one."""
        idle = sorted(self.workers, key=lambda w: not w.measured)
        worker = idle[0] if idle else None
        if worker is None:
            try:
                worker = start_worker(self.probes, self.workers)
            except OSError as exc:
                call = self.pending.pop(0)
                self.emit({"id": call["id"], "error": f"cannot start the probe: {exc}"})
                return
            self.workers.append(worker)
        call = self.pending.pop(0)
        if self._assign(worker, call):
            worker.measured = True
        else:
            self.pending.insert(0, call)

    def run(self) -> None:
        try:
            self._loop()
        finally:
            self._retire_all()
            kill_trees(descendants(os.getpid()))  # no worker left: everything is a leftover
            self.sweep_orphans()  # reaps the ones that were our direct children

    def _retire_all(self) -> None:
        """stop_worker for every worker with one /proc scan, not one per worker and process."""
        below = descendants(os.getpid())  # before the kill: afterwards they are re-parented
        for worker in self.workers:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(worker.pid, signal.SIGKILL)
        for pid in below:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for worker in self.workers:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(worker.pid, 0)
            for fd in (worker.calls_fd, worker.results_fd):
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.workers.clear()

    def _drain(self) -> None:
        """Read every result already waiting, starting nothing meanwhile."""
        while True:
            fds = [w.results_fd for w in self.workers if w.call is not None]
            ready, _, _ = select.select(fds, [], [], 0) if fds else ([], [], [])
            if not ready:
                return
            for worker in [w for w in self.workers if w.call is not None]:
                if worker.results_fd in ready:
                    self._read(worker)

    def _loop(self) -> None:
        while True:
            # Results that arrive together leave in one write (one SSH packet, not one per
            # line: through a jump each costs the client CPU twice), and every result read goes
            # out before another call starts: a call may kill the agent (SIGKILL, the OOM
            # killer), and what it had received must not die with it.
            self._drain()
            self.flush()
            self._fill()
            busy = [w for w in self.workers if w.call is not None]
            if not busy:
                self.sweep_orphans()  # no call in flight: every orphan is a leftover
                if not self.pending:
                    return
                continue
            now = time.monotonic()
            wait = max(0.0, min(min(w.deadline for w in busy) - now, self._grow_wait(busy, now)))
            fds = [w.results_fd for w in busy]
            ready, _, _ = select.select(fds, [], [], min(wait, 1.0))
            for worker in [w for w in busy if w.results_fd in ready]:
                self._read(worker)
            now = time.monotonic()
            for worker in [w for w in busy if w.call is not None and now >= w.deadline]:
                limit = worker.call.get("timeout") or 60
                self._report(worker, {"error": f"timed out after {limit}s (process group killed)"})
                self._retire(worker)

    def _read(self, worker: Worker) -> None:
        chunk = os.read(worker.results_fd, 1 << 20)
        if not chunk:
            self._report(worker, {"error": "the probe process died without a result"})
            self._retire(worker)
            return
        worker.buffer += chunk
        if len(worker.buffer) >= 8:
            (size,) = struct.unpack("<Q", bytes(worker.buffer[:8]))
            if len(worker.buffer) >= 8 + size:
                data = bytes(worker.buffer[8 : 8 + size])
                del worker.buffer[: 8 + size]
                try:
                    result = json.loads(data.decode("utf-8"))
                except ValueError as exc:
                    result = {"error": f"unreadable result: {exc}"}
                self._report(worker, result)

    def _report(self, worker: Worker, result: dict[str, Any]) -> None:
        assert worker.call is not None
        result["id"] = worker.call["id"]
        result["duration_s"] = round(time.monotonic() - worker.started, 4)
        worker.call = None
        self.emit(result, flush=False)  # _loop flushes before it waits
        self.sweep_leftovers(worker)


def main(
    sources: dict[str, str], batch: dict[str, Any], shared: dict[str, str] | None = None
) -> None:
    started = time.monotonic()
    out = claim_stdout()  # before any probe code runs
    install_shared(shared or {})
    probes, broken = load_probes(sources)
    BROKEN.update(broken)
    PRCTL.append(_prctl())
    become_subreaper()
    os.environ["FACTBOOK_AGENT_PID"] = str(os.getpid())  # probes tell our processes apart
    agent = Agent(probes, batch, out)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, agent.kill_all)
    watch_own_parent(agent.kill_all)
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
