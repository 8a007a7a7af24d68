"""Runs whose executor died: find them, stop the servers they left, and say so in their record.

An executor killed hard (SIGKILL, the OOM killer, a closed laptop) cannot tear its servers
down; its record still says `running`. Two things clean up after it: its watchdog
(watchdog.py, which notices at once) and, should the watchdog have died too, the next
`factbook run` or `--resume` of any runbook in the knowledge base, which calls
`reclaim_dead_runs`. A run is dead when its record says `running` and the process named in
`record.executor` (pid + /proc start time + host) no longer exists on this host: a reused pid
has another start time, and a run recorded on another host is never judged from here.
Servers are stopped by `servers.stop`, which checks on the box that the pid still has the
start time it had when it was spawned before signalling it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from factbook.errors import FactbookError
from factbook.judging.outcomes import INTERRUPTED, RUNNING
from factbook.knowledge.kb import KnowledgeBase
from factbook.runbooks import record as rec
from factbook.runbooks import leftovers, servers
from factbook.runbooks.api import CONTEXT_ENV
from factbook.runbooks.remote import BoxClient
from factbook.runbooks.runlog import server_entry


def start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (clock ticks after boot): a pid plus this is one process."""
    fields = leftovers.proc_stat(pid)
    if fields is None or len(fields) < 20 or fields[0] in ("Z", "X"):  # a zombie has ended
        return None
    return fields[19]


def identity(pid: int | None = None) -> dict[str, Any]:
    """What a record stores to find its executor again (this process by default)."""
    pid = os.getpid() if pid is None else pid
    return {"pid": pid, "started": start_time(pid), "host": socket.gethostname()}


def is_alive(ident: dict[str, Any] | None) -> bool | None:
    """True/False for a process of this host; None when it cannot be judged from here."""
    if not isinstance(ident, dict) or ident.get("host") != socket.gethostname():
        return None
    try:
        pid = int(ident["pid"])
    except (KeyError, TypeError, ValueError):
        return None
    now = start_time(pid)
    return now is not None and now == ident.get("started")


def kill_local(ident: dict[str, Any] | None, sig: int = signal.SIGKILL) -> bool:
    """Signal a process of this host if it is still the one `ident` names (never a reused pid)."""
    if is_alive(ident) is not True:
        return False
    assert ident is not None
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(int(ident["pid"]), sig)
        return True
    return False


def _started_for(folder: Path, ident: Any) -> bool:
    """Whether the process `ident` names was started for the run in `folder`: the executor
    gives its kernel the run folder in FACTBOOK_RUN_DIR. A record is a file of the knowledge
    base; without this, a planted `running` record naming any process of this host by pid
    and start time (a daemon started at boot has a guessable one) had it SIGKILLed by the
    next `factbook run` of any runbook."""
    try:
        environ = Path(f"/proc/{int(ident['pid'])}/environ").read_bytes()
    except (KeyError, TypeError, ValueError, OSError):
        return False
    prefix = f"{CONTEXT_ENV}=".encode()
    for entry in environ.split(b"\0"):
        if entry.startswith(prefix):
            named = Path(os.fsdecode(entry[len(prefix) :]))
            return named.resolve() == Path(folder).resolve()
    return False


def dead_runs(root: Path) -> list[Path]:
    """Run folders (any runbook) whose record says running while their executor is gone."""
    out = []
    for path in sorted(rec.runs_root(root).glob(f"*/*/{rec.RECORD_FILE}")):
        try:
            record = rec.load(path.parent)
        except (FactbookError, OSError, ValueError, TypeError, KeyError, AttributeError):
            # an unreadable record is lint's business, not a reason to stop a run: load
            # raises InputError for one, so a merge conflict in any record.json (or one
            # planted) stopped every `factbook run` of the knowledge base
            continue
        if record.status == RUNNING and is_alive(record.executor) is False:
            out.append(path.parent)
    return out


def reclaim_run(kb: KnowledgeBase, folder: Path, why: str) -> list[str]:
    """Stop what the run in `folder` left running; mark it interrupted. Lines to report."""
    record = rec.load(folder)
    said: list[str] = []
    kernel = record.executor.get("kernel") if isinstance(record.executor, dict) else None
    if _started_for(folder, kernel) and kill_local(kernel):
        said.append(f"killed its kernel (pid {kernel['pid']})")  # type: ignore[index]
    boxes: dict[str, BoxClient] = {}
    try:
        for info in servers.registered(folder):
            entry = server_entry(info)
            target = kb.targets.get(info.target)
            if target is None:
                entry["state"] = f"unknown target {info.target}: not stopped"
            elif info.started is None:  # the box would signal whatever process has the pid
                entry["state"] = "no start time recorded: not stopped"
            else:
                box = boxes.setdefault(info.target, BoxClient(target, kb.targets))
                try:
                    result = servers.stop(box, info, run_dir=folder, grace=5)
                    entry["state"] = _state(result)
                except Exception as exc:  # one unreachable box must not stop the others
                    entry["state"] = f"teardown failed: {exc}"
            said.append(f"server {info.name} on {info.target} (pid {info.pid}): {entry['state']}")
            record.servers = [s for s in record.servers if s.get("name") != info.name]
            record.servers.append(entry)
    finally:
        for box in boxes.values():
            box.close()
    # what its cells detached (a new session, a double fork) carries the run's folder in its
    # environment: ended after its servers are stopped, or it outlived a killed executor (leftovers.py)
    detached = leftovers.left_behind(folder, 1 << 62, (), ())
    if detached:
        leftovers.end(detached)
        said.append(f"ended {len(detached)} process(es) its cells left running")
    fresh = rec.load(folder)  # the executor may have finished after all: never undo its record
    if fresh.status == RUNNING:
        record.status, record.error = INTERRUPTED, why
        record.finished = record.finished or rec.now_iso()
        for step in record.steps:
            if step.status == RUNNING:
                step.status, step.error = INTERRUPTED, why
        rec.save(record, folder)
    return said


def reclaim_dead_runs(kb: KnowledgeBase, say: Callable[[str], None]) -> int:
    """Clean every dead run of the knowledge base; report each on `say`. How many there were."""
    folders = dead_runs(kb.root)
    for folder in folders:
        record = rec.load(folder)
        pid = (record.executor or {}).get("pid")
        why = f"its executor (pid {pid}) died while the run was {RUNNING}"
        lines = reclaim_run(kb, folder, why)
        say(
            f"factbook: run {record.run_id} of {record.runbook}: {why}; cleaned up"
            + "".join(f"\n  {line}" for line in lines)
        )
    return len(folders)


def _state(result: dict[str, Any]) -> str:
    if result.get("pid_reused"):
        return "gone (its pid now belongs to another process: left alone)"
    if not result.get("was_running"):
        return "already gone"
    return "stopped" + (" (SIGKILL)" if result.get("killed") else "")
