"""Run planned checks: one agent per target per pass, targets in parallel, evaluation here.

Each target gets its own thread and transport. A pass ships one bundle and reads result lines
as they stream; each is evaluated at once (pass / drift / error / skipped) so progress is live.
Checks that drifted or errored are run again in a new pass, `retry` times, `retry_delay` apart.
A connection that drops keeps every result already received; the rest become errors.
"""

from __future__ import annotations

import json
import math
import os
import queue
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import TargetError
from ..expectations import UnboundVar, bind_vars, evaluate, var_refs
from ..kb import KnowledgeBase
from ..model import Fact, Target
from ..outcomes import DRIFT, ERROR, NOT_OK, PASS, SKIPPED
from ..results import ResultRecord
from ..stamps import now_iso
from ..transports.base import AgentProcess, Transport, TransportOptions, transport_for
from ..transports.diagnose import explain
from .bundle import DEFAULT_TIMEOUT, Call, agent_argv, build_script, merge_calls
from .targets import PlannedCheck

# Observed values bigger than this (as JSON) are stored as a preview, not whole.
STORED_OBSERVED_CAP = 64 * 1024


@dataclass
class VerifyOptions:
    """How to run: concurrency on the box, default timeout, retries, connection choices."""

    jobs: int = 16
    forks: int = field(default_factory=lambda: default_forks())  # targets at once
    timeout: float | None = None  # for checks that set none; default DEFAULT_TIMEOUT
    retry: int = 0
    retry_delay: float = 0.0
    stall_grace: float = 60.0  # beyond the calls' own timeouts, before a silent agent is stopped
    transport: TransportOptions = field(default_factory=TransportOptions)


def default_forks() -> int:
    """Targets worked on at once: the boxes do the work and the client mostly waits on the
    network, so several per core; bounded so a 500-node inventory does not open 500 sessions."""
    return max(8, min(64, 8 * (os.cpu_count() or 1)))


def _stored(value: Any) -> Any:
    if (
        value is None
        or isinstance(value, bool)
        or (isinstance(value, int) and -(2**53) < value < 2**53)
    ):
        return value
    if isinstance(value, str) and len(value) * 6 <= STORED_OBSERVED_CAP:  # \uXXXX at worst
        return value
    text = json.dumps(value, default=repr)
    if len(text) <= STORED_OBSERVED_CAP:
        return value
    return f"<{len(text)} bytes as JSON; first 4096:> {text[:4096]}"


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
        record.observed = _stored(raw.get("value"))
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
        record.observed = _stored(value)
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


class Engine:
    """Runs a plan; `on_result` sees every final record as soon as it is known (any thread)."""

    def __init__(
        self,
        kb: KnowledgeBase,
        targets: dict[str, Target],
        options: VerifyOptions,
        *,
        run_id: str,
        on_result: Callable[[ResultRecord], None] | None = None,
        on_note: Callable[[str], None] | None = None,
    ):
        self.kb, self.targets, self.options = kb, targets, options
        self.run_id = run_id
        self.on_result = on_result or (lambda record: None)
        self.on_note = on_note or (lambda text: None)
        self.agents: dict[str, dict[str, Any]] = {}  # target -> the agent's header line
        self._lock = threading.Lock()
        self._procs: set[AgentProcess] = set()
        self._found: dict[str, ResultRecord] = {}
        self.unreachable: dict[str, str] = {}  # target -> why it could not be reached
        self._stopping = threading.Event()
        self._var_facts: set[str] = set()  # facts whose expectation reads target variables

    def run(self, plan: list[PlannedCheck]) -> list[ResultRecord]:
        """Every planned check's final record, in plan order."""
        by_target: dict[str, list[PlannedCheck]] = {}
        for check in plan:
            by_target.setdefault(check.target, []).append(check)
        found = self._found = {}
        self._var_facts = {
            c.fact.id for c in plan if c.fact.check is not None and var_refs(c.fact.check.expect)
        }
        todo: queue.SimpleQueue[tuple[str, list[PlannedCheck]]] = queue.SimpleQueue()
        for item in by_target.items():
            todo.put(item)

        def worker() -> None:
            while not self._stopping.is_set():
                try:
                    name, checks = todo.get_nowait()
                except queue.Empty:
                    return
                self._guarded(name, checks, found)

        forks = max(1, min(self.options.forks, len(by_target)))
        self.options.transport.sharing = True  # jump connections shared until the run ends
        threads = [
            threading.Thread(target=worker, name=f"verify-fork-{i}", daemon=True)
            for i in range(forks)
        ]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                thread.join()
        except BaseException:  # Ctrl-C: stop every agent (and so every check) before leaving
            self.stop()
            raise
        finally:
            self.options.transport.close_shared()
        return self.received(plan)

    def received(self, plan: list[PlannedCheck]) -> list[ResultRecord]:
        """The final records known so far, in plan order (after Ctrl-C: what arrived)."""
        with self._lock:
            found = dict(self._found)
        planned = {c.key for c in plan}
        # a slurm target's checks fan out to one record per node (slurmrun.py)
        fanned = [r for key, r in found.items() if key not in planned]
        return [found[c.key] for c in plan if c.key in found] + fanned

    def stop(self) -> None:
        """Kill every agent still running; targets not started yet are not started."""
        self._stopping.set()
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            proc.kill()

    def _guarded(
        self, name: str, checks: list[PlannedCheck], found: dict[str, ResultRecord]
    ) -> None:
        """A bug or an unmapped library error must not lose checks silently: they error."""
        try:
            self._run_target(name, checks, found)
        except Exception as exc:
            for check in checks:
                if check.key not in found:
                    message = f"{name}: internal error: {type(exc).__name__}: {exc}"
                    self._final(check, self._error(check, message), found)

    def _final(
        self, check: PlannedCheck, record: ResultRecord, found: dict[str, ResultRecord]
    ) -> None:
        with self._lock:
            found[check.key] = record
        self.on_result(record)

    def _run_target(
        self, name: str, checks: list[PlannedCheck], found: dict[str, ResultRecord]
    ) -> None:
        target = self.targets[name]
        if target.transport == "slurm":
            from .slurmrun import run_slurm

            return run_slurm(self, name, checks, found)
        try:
            transport = self._connect(target)
        except TargetError as exc:
            self.unreachable[name] = str(exc)
            for check in checks:
                self._final(check, self._error(check, str(exc)), found)
            return
        try:
            todo = checks
            for attempt in range(1, self.options.retry + 2):
                last = attempt == self.options.retry + 1
                records = self._pass(transport, target, todo, attempt, last, found)
                todo = [c for c in todo if records[c.key].outcome in NOT_OK]
                if not todo:
                    break
                if name in self.unreachable:  # a down box costs its connect timeout once
                    for check in todo:
                        self._final(check, records[check.key], found)
                    break
                if not last:
                    self.on_note(f"{name}: retrying {len(todo)} check(s) (attempt {attempt + 1})")
                    time.sleep(self.options.retry_delay)
        finally:
            transport.close()

    def _connect(self, target: Target) -> Transport:
        try:
            return transport_for(target, self.targets, self.options.transport)
        except ModuleNotFoundError as exc:
            raise TargetError(
                f"{target.name}: transport {target.transport!r} unavailable: {exc}"
            ) from exc

    def _error(self, check: PlannedCheck, message: str, attempts: int = 1) -> ResultRecord:
        assert check.fact.check is not None
        return ResultRecord(
            fact=check.fact.id,
            target=check.target,
            outcome=ERROR,
            reason=f"{message} [{check.fact.location}]",
            time=now_iso(),
            run=self.run_id,
            probe=check.fact.check.probe,
            attempts=attempts,
            extra={"location": check.fact.location},
        )

    def _pass(
        self,
        transport: Transport,
        target: Target,
        checks: list[PlannedCheck],
        attempt: int,
        last: bool,
        found: dict[str, ResultRecord],
    ) -> dict[str, ResultRecord]:
        """One agent run over `checks`; returns a record for each (errors for lost ones)."""
        by_key = {c.key: c for c in checks}
        default = self.options.timeout or DEFAULT_TIMEOUT
        calls = merge_calls(
            [
                (c.key, c.fact.check.probe, c.fact.check.args, c.fact.check.timeout or default)
                for c in checks
                if c.fact.check is not None
            ]
        )
        records: dict[str, ResultRecord] = {}

        def settle(check: PlannedCheck, record: ResultRecord) -> None:
            record.attempts = attempt
            records[check.key] = record
            if last or record.outcome in (PASS, SKIPPED):
                self._final(check, record, found)

        nonce = secrets.token_hex(16)  # a line without it did not come from this agent
        script = build_script(
            calls, jobs=self.options.jobs, checks_dir=self.kb.root / "checks", nonce=nonce
        )
        try:
            proc = transport.start(agent_argv(target.python), script.encode(), dict(target.env))
        except TargetError as exc:
            with self._lock:
                self.unreachable[target.name] = str(exc)
            for check in checks:
                settle(check, self._error(check, str(exc)))
            return records
        with self._lock:
            self._procs.add(proc)
        watchdog = StallWatchdog(proc, calls, self.options)
        by_call = {c.id: c for c in calls}
        done = started = False
        try:
            for line in proc.lines():
                message = _parse(line)
                if message is None or message.get("nonce") != nonce:
                    continue
                if "agent" in message:
                    self.agents[target.name] = message["agent"]
                    started = True
                elif "done" in message:
                    done = True
                elif message.get("id") in by_call:
                    for key in by_call[message["id"]].keys:
                        check = by_key[key]
                        record = evaluate_result(
                            check.fact,
                            target.name,
                            message,
                            self.run_id,
                            target.vars,
                            uses_vars=check.fact.id in self._var_facts,
                        )
                        settle(check, record)
        except TargetError as exc:
            self.on_note(f"{target.name}: {exc}")
        finally:
            watchdog.cancel()
        status = proc.wait(timeout=10)
        with self._lock:
            self._procs.discard(proc)
        stderr = proc.stderr_text()
        for note in stderr.splitlines():
            if note.startswith("factbook:"):
                self.on_note(f"{target.name}: {note[len('factbook:') :].strip()}")
        lost = [c for c in checks if c.key not in records]
        if lost:
            why = _lost_reason(stderr, status, done, len(records), len(checks))
            if not started and status is not None:  # the interpreter itself failed
                why = explain(transport.label, target.python, status, stderr) or why
            if watchdog.fired:
                why = watchdog.reason()
            for check in lost:
                settle(check, self._error(check, why))
        return records


def _parse(line: str) -> dict[str, Any] | None:
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

    def __init__(self, proc: AgentProcess, calls: list[Call], options: VerifyOptions):
        self.budget = _budget(calls, options.jobs, options.stall_grace)
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


def _budget(calls: list[Call], jobs: int, grace: float) -> float:
    """A generous bound on a pass: the agent enforces per-call timeouts; this catches stalls
    (a frozen box, a connection that neither delivers nor drops)."""
    if not calls:
        return grace
    quick = [c.timeout for c in calls if not c.exclusive]
    waves = math.ceil(len(quick) / max(1, jobs))
    serial = sum(c.timeout for c in calls if c.exclusive)  # measurements run one at a time
    return max(quick, default=0.0) * waves + serial + grace


def _lost_reason(stderr: str, status: int | None, done: bool, got: int, total: int) -> str:
    tail = " | ".join(stderr.strip().splitlines()[-3:])
    if status is None:
        head = f"connection dropped after {got} of {total} results"
    elif done:
        head = "agent finished without this result"
    else:
        head = f"agent exited with status {status} after {got} of {total} results"
    return f"{head}{': ' + tail if tail else ''}"
