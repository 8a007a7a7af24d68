"""An agent's output, read: its lines parsed, each result judged, a lost or stalled agent explained.

Shared by engine.py (one agent per target) and slurmrun.py (one agent per node of an srun
step), so neither needs the other's internals.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import os
import threading
import time
from typing import Any

from factbook.judging.expectations import UnboundVar, bind_vars, evaluate, var_refs
from factbook.judging.outcomes import DRIFT, ERROR, PASS, SKIPPED
from factbook.knowledge.limits import OBSERVED_MAX_BYTES, preview
from factbook.knowledge.model import Fact
from factbook.store.results import ResultRecord
from factbook.store.stamps import now_iso
from factbook.verification.bundle import Call
from factbook.verification.transports.base import AgentProcess

STORED_OBSERVED_CAP = OBSERVED_MAX_BYTES  # limits.py, shared with the results' readers


def stored_value(value: Any) -> Any:
    """An observed value as stored: small values as they are, big ones as a bounded preview."""
    return preview(value, STORED_OBSERVED_CAP)


def evaluate_result(
    fact: Fact,
    target: str,
    raw: dict[str, Any],
    run: str,
    variables: dict[str, Any] | None = None,
    *,
    uses_vars: bool | None = None,
) -> ResultRecord:
    """Turn one agent result into an outcome, with expected vs observed and file:line.

    `{var: NAME}` in the expectation takes the target's value of NAME (`variables`);
    `uses_vars` says whether it has any (the engine knows it once per fact, not per result)."""
    check = fact.check
    assert check is not None
    expect = check.expect
    unbound = None
    if uses_vars is None:
        uses_vars = expect is not None and bool(var_refs(expect))
    if uses_vars:
        try:
            expect = bind_vars(expect, variables or {})
        except UnboundVar as exc:
            unbound = exc.name
    record = ResultRecord(
        fact=fact.id,
        target=target,
        outcome=ERROR,
        reason="",
        time=now_iso(),
        run=run,
        duration_s=float(raw.get("duration_s") or 0.0),
        probe=check.probe,
        extra={"location": fact.location, "args": check.args, "expect": expect},
    )
    if unbound is not None:
        record.observed = stored_value(raw.get("value"))
        record.reason = (
            f"expect refers to var '{unbound}', which target {target} does not set "
            f"[{fact.location}]"
        )
    elif "skipped" in raw:
        record.outcome, record.reason = SKIPPED, str(raw["skipped"])
    elif not raw.get("ok"):
        record.reason = f"{raw.get('error', 'no result')} [{fact.location}]"
    else:
        value = raw.get("value")
        record.observed = stored_value(value)
        if expect is None:
            record.outcome, record.reason = PASS, "probe ran (no expectation)"
        else:
            try:
                outcome = evaluate(expect, value)
            except Exception as exc:  # an expectation that cannot apply to this value
                record.outcome = DRIFT
                record.reason = f"cannot evaluate {expect}: {exc} [{fact.location}]"
                return record
            record.outcome = PASS if outcome.passed else DRIFT
            record.reason = (
                outcome.reason if outcome.passed else f"{outcome.reason} [{fact.location}]"
            )
    return record


def parse_line(line: str) -> dict[str, Any] | None:
    """One line of agent output as a message, or None for anything that is not one."""
    if not line.startswith("{"):
        return None
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


class StallWatchdog:
    """Kills a batch's agent once the whole batch has outlived its budget (a box that stalls
    without closing the channel); `fired` tells the reader that the watchdog ended it, not the
    box. The caller cancels it when the batch ends."""

    def __init__(self, proc: AgentProcess, calls: list[Call], *, jobs: int, grace: float):
        self.budget = pass_budget(calls, jobs, grace)
        self._expired = threading.Event()
        self._proc = proc
        self._entry = _DEADLINES.add(time.monotonic() + self.budget, self)

    def expire(self) -> None:
        """The budget is spent: stop the agent (the deadline thread calls this)."""
        self._expired.set()
        self._proc.kill()

    @property
    def fired(self) -> bool:
        return self._expired.is_set()

    def cancel(self) -> None:
        _DEADLINES.remove(self._entry)

    def reason(self) -> str:
        return f"no result within the run's {self.budget:.0f}s bound; agent stopped"


class _Deadlines:
    """One thread waits for every watchdog of the process, soonest deadline first: a fleet run
    of N targets started N timer threads (a thread start costs the client ~0.2-0.3 ms of CPU
    here). A deadline that passes kills its agent from a thread of its own, so a kill held up
    by a stuck connection never holds up another target's watchdog. The thread leaves after
    IDLE_S without deadlines and comes back with the next one."""

    IDLE_S = 30.0

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, StallWatchdog]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, when: float, dog: StallWatchdog) -> tuple[float, int, StallWatchdog]:
        entry = (when, next(self._order), dog)
        with self._cond:
            heapq.heappush(self._heap, entry)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="verify-watchdog", daemon=True
                )
                self._thread.start()
            self._cond.notify()
        return entry

    def remove(self, entry: tuple[float, int, StallWatchdog]) -> None:
        with self._cond:
            if entry in self._heap:
                self._heap.remove(entry)
                heapq.heapify(self._heap)

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._heap:
                    self._cond.wait(self.IDLE_S)
                    if not self._heap:
                        self._thread = None
                        return
                    continue
                when = self._heap[0][0]
                wait = when - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                _, _, dog = heapq.heappop(self._heap)
            threading.Thread(target=dog.expire, name="verify-watchdog-kill", daemon=True).start()

    def forget(self) -> None:
        """In a forked child: the parent's thread and deadlines are not this process's."""
        self._cond = threading.Condition()
        self._heap, self._thread = [], None


_DEADLINES = _Deadlines()
os.register_at_fork(after_in_child=_DEADLINES.forget)


def pass_budget(calls: list[Call], jobs: int, grace: float) -> float:
    """A generous bound on a pass: the agent enforces per-call timeouts; this catches stalls
    (a frozen box, a connection that neither delivers nor drops)."""
    if not calls:
        return grace
    quick = [c.timeout for c in calls if not c.exclusive]
    waves = math.ceil(len(quick) / max(1, jobs))
    serial = sum(c.timeout for c in calls if c.exclusive)  # measurements run one at a time
    return max(quick, default=0.0) * waves + serial + grace


def lost_reason(stderr: str, status: int | None, done: bool, got: int, total: int) -> str:
    """Why results never came: the connection dropped, or how the agent ended, and its stderr."""
    tail = " | ".join(stderr.strip().splitlines()[-3:])
    if status is None:
        head = f"connection dropped after {got} of {total} results"
    elif done:
        head = "agent finished without this result"
    else:
        head = f"agent exited with status {status} after {got} of {total} results"
    return f"{head}{': ' + tail if tail else ''}"
