"""What a run's cells left running on this machine, found and ended when the run ends.

Shutting the kernel down kills its process group, but a cell can leave that group: a
`subprocess.Popen(..., start_new_session=True)`, `os.setsid()`, a double fork, a daemon.
Those outlived every `factbook run`, on success and on Ctrl-C or SIGTERM alike (hostile
round 16). Two marks find them, whatever group or parent they ended up with:

- the run's folder in their environment (`FACTBOOK_RUN_DIR`, which the kernel has and every
  process it starts inherits unless a cell scrubs its environment);
- the executor is a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`) while the kernel runs,
  as verify's agent is: what a cell detached, even with an empty environment, is re-parented
  to the executor instead of init, so it is found below it (started after the kernel).

Servers that `server.start(keep=True)` left running on purpose after a successful run are
spared (their session is the server's pid), and so is the watchdog.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

from factbook.runbooks.api import CONTEXT_ENV

PR_SET_CHILD_SUBREAPER = 36


def set_subreaper(on: bool) -> bool:
    """Make this process adopt its orphaned descendants (Linux); False where it cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def proc_stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the name (state first), or None."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return data[data.rfind(")") + 2 :].split()


def _table() -> dict[int, list[str]]:
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = proc_stat(int(entry))
            if fields and len(fields) > 19 and fields[0] not in ("Z", "X"):
                out[int(entry)] = fields
    return out


def _marked(pid: int, name: bytes, folder: str) -> bool:
    """Whether the process's environment names this run's folder (the same folder however
    it was spelt: the executor's and the watchdog's paths may differ)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read(1 << 20)
    except OSError:
        return False
    for entry in environ.split(b"\0"):
        if entry.startswith(name):
            value = os.fsdecode(entry[len(name) :])
            return value == folder or os.path.realpath(value) == os.path.realpath(folder)
    return False


def left_behind(
    folder: str | os.PathLike[str],
    since_ticks: int,
    spare_pids: Iterable[int],
    spare_sessions: Iterable[int],
) -> list[int]:
    """Live processes of this run: naming its `folder` in FACTBOOK_RUN_DIR, or below this
    process and started at or after `since_ticks` (clock ticks after boot)."""
    table = _table()
    me = os.getpid()
    spared = set(spare_pids) | {me}
    sessions = set(spare_sessions)
    kids: dict[int, list[int]] = {}
    for pid, fields in table.items():
        kids.setdefault(int(fields[1]), []).append(pid)
    below, todo = set(), [me]
    while todo:
        for pid in kids.get(todo.pop(), []):
            if pid not in spared:  # a spared process's own tree is spared too (the watchdog)
                below.add(pid)
                todo.append(pid)
    name, where = f"{CONTEXT_ENV}=".encode(), os.fspath(folder)
    out = []
    for pid, fields in table.items():
        if pid in spared or int(fields[3]) in sessions:  # stat field 6: the session id
            continue
        young = pid in below and int(fields[19]) >= since_ticks
        if young or _marked(pid, name, where):
            out.append(pid)
    return sorted(out)


def end(pids: list[int], grace: float = 2.0) -> list[int]:
    """SIGTERM, then SIGKILL after `grace` s to what is left; children of ours are reaped.
    The pids still alive afterwards (none, unless another user's)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    alive = list(pids)
    while alive:
        _reap(alive)
        alive = [p for p in alive if (proc_stat(p) or ["X"])[0] not in ("Z", "X")]
        if not alive or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    for pid in alive:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    time.sleep(0.05 if alive else 0)
    _reap(pids)
    return [p for p in pids if (proc_stat(p) or ["X"])[0] not in ("Z", "X")]


def _reap(pids: Iterable[int]) -> None:
    """Collect the exit status of those that became our children (the subreaper adopted them),
    so none stays a zombie of a long-lived caller."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def boot_ticks_now() -> int:
    """This moment in /proc/PID/stat's start-time unit (clock ticks after boot)."""
    fields = proc_stat(os.getpid())
    own = int(fields[19]) if fields and len(fields) > 19 else 0
    try:
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return own
    return max(own, int(uptime * os.sysconf("SC_CLK_TCK")) - 1)
