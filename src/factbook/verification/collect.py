"""An agent's output, read: its lines parsed, each result judged, a lost or stalled agent explained.

Shared by engine.py (one agent per target) and slurmrun.py (one agent per node of an srun
step), so neither needs the other's internals.
"""

from __future__ import annotations

import json
import math
import threading
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
        self._timer = threading.Timer(self.budget, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        self._expired.set()
        self._proc.kill()

    @property
    def fired(self) -> bool:
        return self._expired.is_set()

    def cancel(self) -> None:
        self._timer.cancel()

    def reason(self) -> str:
        return f"no result within the run's {self.budget:.0f}s bound; agent stopped"


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
