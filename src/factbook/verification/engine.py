"""Run planned checks: one agent per target per pass, targets in parallel, evaluation here.

Each target gets its own thread and transport. A pass ships one bundle and reads result lines
as they stream; each is evaluated at once (pass / drift / error / skipped) so progress is live.
Checks that drifted or errored are run again in a new pass, `retry` times, `retry_delay` apart.
A connection that drops keeps every result already received; the rest become errors.
"""

from __future__ import annotations

import os
import queue
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factbook.errors import TargetError
from factbook.judging.expectations import var_refs
from factbook.judging.outcomes import ERROR, NOT_OK, PASS, SKIPPED
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.model import Target
from factbook.store.results import ResultRecord
from factbook.store.stamps import now_iso
from factbook.verification.bundle import (
    DEFAULT_TIMEOUT,
    agent_argv,
    build_script,
    merge_calls,
)
from factbook.verification.collect import (
    StallWatchdog,
    evaluate_result,
    lost_reason,
    parse_line,
)
from factbook.verification.targets import PlannedCheck
from factbook.verification.transports.base import (
    AgentProcess,
    Transport,
    TransportOptions,
    transport_for,
)
from factbook.verification.transports.diagnose import explain

# Observed values bigger than this (as JSON) are stored as a preview, not whole.


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
    # ship the knowledge base's checks/*.py to the boxes; serve and mcp turn it off unless
    # started with --run-kb-probes (integrations/kb_probes.py), so a file added to checks/
    # after their plan was vetted is never sent either
    kb_probes: bool = True

    def checks_dir(self, root: Path) -> Path | None:
        """Where the knowledge base's own probes are taken from, if at all."""
        return root / "checks" if self.kb_probes else None


def check_record(
    check: PlannedCheck, outcome: str, reason: str, run_id: str, attempts: int = 1
) -> ResultRecord:
    """The record of a planned check that did not run its probe (an error, or skipped)."""
    return ResultRecord(
        fact=check.fact.id,
        target=check.target,
        outcome=outcome,
        reason=reason,
        time=now_iso(),
        run=run_id,
        probe=check.fact.check.probe if check.fact.check else "",
        attempts=attempts,
        extra={"location": check.fact.location},
    )


def error_record(check: PlannedCheck, message: str, run_id: str, attempts: int = 1) -> ResultRecord:
    """The error a check that could not run is recorded as, naming the fact's line."""
    return check_record(check, ERROR, f"{message} [{check.fact.location}]", run_id, attempts)


def default_forks() -> int:
    """Targets worked on at once: the boxes do the work and the client mostly waits on the
    network, so several per core; bounded so a 500-node inventory does not open 500 sessions."""
    return max(8, min(64, 8 * (os.cpu_count() or 1)))


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
        self._signatures: dict[int, tuple[Any, str, str]] = {}  # merge_calls' memo, per run

    def run(self, plan: list[PlannedCheck]) -> list[ResultRecord]:
        """Every planned check's final record, in plan order."""
        by_target: dict[str, list[PlannedCheck]] = {}
        for check in plan:
            by_target.setdefault(check.target, []).append(check)
        found = self._found = {}
        facts = {c.fact.id: c.fact for c in plan}  # once per fact, not per fact x target
        self._var_facts = {
            i for i, f in facts.items() if f.check is not None and var_refs(f.check.expect)
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
        keys = [c.key for c in plan]
        planned = set(keys)
        # a slurm target's checks fan out to one record per node (slurmrun.py)
        fanned = [r for key, r in found.items() if key not in planned]
        return [found[key] for key in keys if key in found] + fanned

    def track(self, proc: AgentProcess) -> None:
        """An agent that stop() must kill while it runs."""
        with self._lock:
            self._procs.add(proc)

    def untrack(self, proc: AgentProcess) -> None:
        with self._lock:
            self._procs.discard(proc)

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
                    self.finish(check, self.error_record(check, message), found)

    def finish(
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
            from factbook.verification.slurmrun import run_slurm

            return run_slurm(self, name, checks, found)
        try:
            transport = self.connect(target)
        except TargetError as exc:
            self.unreachable[name] = str(exc)
            for check in checks:
                self.finish(check, self.error_record(check, str(exc)), found)
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
                        self.finish(check, records[check.key], found)
                    break
                if not last:
                    self.on_note(f"{name}: retrying {len(todo)} check(s) (attempt {attempt + 1})")
                    time.sleep(self.options.retry_delay)
        finally:
            transport.close()

    def connect(self, target: Target) -> Transport:
        try:
            return transport_for(target, self.targets, self.options.transport)
        except ModuleNotFoundError as exc:
            raise TargetError(
                f"{target.name}: transport {target.transport!r} unavailable: {exc}"
            ) from exc

    def error_record(self, check: PlannedCheck, message: str, attempts: int = 1) -> ResultRecord:
        return error_record(check, message, self.run_id, attempts)

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
            ],
            self._signatures,
        )
        records: dict[str, ResultRecord] = {}

        def settle(check: PlannedCheck, record: ResultRecord) -> None:
            record.attempts = attempt
            records[check.key] = record
            if last or record.outcome in (PASS, SKIPPED):
                self.finish(check, record, found)

        nonce = secrets.token_hex(16)  # a line without it did not come from this agent
        script = build_script(
            calls,
            jobs=self.options.jobs,
            checks_dir=self.options.checks_dir(self.kb.root),
            nonce=nonce,
        )
        try:
            proc = transport.start(agent_argv(target.python), script.encode(), dict(target.env))
        except TargetError as exc:
            with self._lock:
                self.unreachable[target.name] = str(exc)
            for check in checks:
                settle(check, self.error_record(check, str(exc)))
            return records
        self.track(proc)
        watchdog = StallWatchdog(
            proc, calls, jobs=self.options.jobs, grace=self.options.stall_grace
        )
        by_call = {c.id: c for c in calls}
        done = started = False
        try:
            for line in proc.lines():
                message = parse_line(line)
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
        self.untrack(proc)
        stderr = proc.stderr_text()
        for note in stderr.splitlines():
            if note.startswith("factbook:"):
                self.on_note(f"{target.name}: {note[len('factbook:') :].strip()}")
        lost = [c for c in checks if c.key not in records]
        if lost:
            why = lost_reason(stderr, status, done, len(records), len(checks))
            if not started and status is not None:  # the interpreter itself failed
                why = explain(transport.label, target.python, status, stderr) or why
            if watchdog.fired:
                why = watchdog.reason()
            for check in lost:
                settle(check, self.error_record(check, why))
        return records
