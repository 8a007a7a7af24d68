"""A slurm target's passes: one srun step per pass over its nodes, results per node.

The plan holds a slurm target's checks once (`fact@cluster`); here they fan out to one record
per node, named `cluster.NODE` (so a cluster reads like a fleet in reports and latest.json).
Every pass ships one script to all the nodes still to check, demultiplexes the result lines by
node (SlurmStep.by_node), and retries only the nodes that drifted or errored.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any, Protocol

from factbook.errors import TargetError
from factbook.judging.outcomes import NOT_OK, PASS, SKIPPED
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.model import Target
from factbook.store.results import ResultRecord
from factbook.verification.bundle import DEFAULT_TIMEOUT, agent_argv, build_script, merge_calls
from factbook.verification.collect import (
    StallWatchdog,
    evaluate_result,
    lost_reason,
    parse_line,
)
from factbook.verification.targets import PlannedCheck
from factbook.verification.transports.base import AgentProcess, Transport
from factbook.verification.transports.slurm import SlurmTransport


class EngineSide(Protocol):
    """What a slurm pass needs of the engine that runs it (engine.Engine provides it)."""

    targets: dict[str, Target]
    options: Any  # engine.VerifyOptions: retry, retry_delay, timeout, jobs, stall_grace
    kb: KnowledgeBase
    run_id: str
    agents: dict[str, Any]
    on_note: Callable[[str], None]

    def connect(self, target: Target) -> Transport: ...
    def finish(
        self, check: PlannedCheck, record: ResultRecord, found: dict[str, ResultRecord]
    ) -> None: ...
    def error_record(
        self, check: PlannedCheck, message: str, attempts: int = 1
    ) -> ResultRecord: ...
    def track(self, proc: AgentProcess) -> None: ...
    def untrack(self, proc: AgentProcess) -> None: ...


def node_target(cluster: str, node: str) -> str:
    """The result target of one node of a slurm target."""
    return f"{cluster}.{node}"


def run_slurm(
    engine: EngineSide, name: str, checks: list[PlannedCheck], found: dict[str, ResultRecord]
) -> None:
    """Every check of `checks` on every node of slurm target `name`, finals to `found`."""
    target = engine.targets[name]
    try:
        transport = engine.connect(target)
        assert isinstance(transport, SlurmTransport)
        nodes = transport.node_names()
    except TargetError as exc:
        for check in checks:
            engine.finish(check, engine.error_record(check, str(exc)), found)
        return
    try:
        todo = {node: list(checks) for node in nodes}
        for attempt in range(1, engine.options.retry + 2):
            last = attempt == engine.options.retry + 1
            records = _pass(engine, transport, name, todo, attempt, last, found)
            todo = {
                node: [c for c in todo[node] if records[(node, c.key)].outcome in NOT_OK]
                for node in todo
            }
            todo = {node: left for node, left in todo.items() if left}
            if not todo:
                break
            if not last:
                engine.on_note(f"{name}: retrying on {len(todo)} node(s) (attempt {attempt + 1})")
                time.sleep(engine.options.retry_delay)
    finally:
        transport.close()


def _pass(
    engine: EngineSide,
    transport: SlurmTransport,
    name: str,
    todo: dict[str, list[PlannedCheck]],
    attempt: int,
    last: bool,
    found: dict[str, ResultRecord],
) -> dict[tuple[str, str], ResultRecord]:
    """One srun step over the nodes in `todo`; a record for each (node, check key)."""
    target = engine.targets[name]
    union = {c.key: c for checks in todo.values() for c in checks}
    default = engine.options.timeout or DEFAULT_TIMEOUT
    calls = merge_calls(
        [
            (key, c.fact.check.probe, c.fact.check.args, c.fact.check.timeout or default)
            for key, c in union.items()
            if c.fact.check is not None
        ]
    )
    records: dict[tuple[str, str], ResultRecord] = {}

    def settle(node: str, check: PlannedCheck, record: ResultRecord) -> None:
        if (node, check.key) in records or check not in todo.get(node, []):
            return
        record.attempts = attempt
        records[(node, check.key)] = record
        if last or record.outcome in (PASS, SKIPPED):
            engine.finish(PlannedCheck(check.fact, node_target(name, node)), record, found)

    def error(node: str, check: PlannedCheck, why: str) -> ResultRecord:
        return engine.error_record(PlannedCheck(check.fact, node_target(name, node)), why)

    nonce = secrets.token_hex(16)
    script = build_script(
        calls,
        jobs=engine.options.jobs,
        checks_dir=engine.options.checks_dir(engine.kb.root),
        nonce=nonce,
    )
    try:
        step = transport.start_step(
            list(todo), agent_argv(target.python), script.encode(), dict(target.env)
        )
    except TargetError as exc:
        for node, checks in todo.items():
            for check in checks:
                settle(node, check, error(node, check, str(exc)))
        return records
    engine.track(step)
    watchdog = StallWatchdog(
        step, calls, jobs=engine.options.jobs, grace=engine.options.stall_grace
    )
    by_call = {c.id: c for c in calls}
    done: set[str] = set()
    try:
        for node, line in step.by_node():
            message = parse_line(line)
            if message is None or message.get("nonce") != nonce:
                continue
            if "agent" in message:
                engine.agents[node_target(name, node)] = message["agent"]
            elif "done" in message:
                done.add(node)
            elif message.get("id") in by_call:
                for key in by_call[message["id"]].keys:
                    check = union[key]
                    record = evaluate_result(
                        check.fact, node_target(name, node), message, engine.run_id
                    )
                    settle(node, check, record)
    finally:
        watchdog.cancel()
    status = step.wait(timeout=10)
    engine.untrack(step)
    stderr = step.stderr_text()
    started = set(step.task_node.values())
    for node, checks in todo.items():
        lost = [c for c in checks if (node, c.key) not in records]
        if not lost:
            continue
        got = len(checks) - len(lost)
        if node not in started:  # one line, as lost_reason's: srun's last three lines
            said = " | ".join(s.strip() for s in stderr.strip().splitlines()[-3:] if s.strip())
            why = f"node {node}: the agent never started (srun exit {status}): {said}"
        else:
            why = lost_reason(stderr, status, node in done, got, len(checks))
        if watchdog.fired:
            why = watchdog.reason()
        for check in lost:
            settle(node, check, error(node, check, why))
    return records
