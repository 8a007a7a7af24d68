"""A slurm target's passes: one srun step per pass over its nodes, results per node.

The plan holds a slurm target's checks once (`fact@cluster`); here they fan out to one record
per node, named `cluster.NODE` (so a cluster reads like a fleet in reports and latest.json).
Every pass ships one script to all the nodes still to check, demultiplexes the result lines by
node (SlurmStep.by_node), and retries only the nodes that drifted or errored.
"""

from __future__ import annotations

import secrets
import time
from typing import TYPE_CHECKING

from ..errors import TargetError
from ..outcomes import NOT_OK, PASS, SKIPPED
from ..results import ResultRecord
from ..transports.slurm import SlurmTransport
from .bundle import DEFAULT_TIMEOUT, agent_argv, build_script, merge_calls
from .targets import PlannedCheck

if TYPE_CHECKING:
    from .engine import Engine


def node_target(cluster: str, node: str) -> str:
    """The result target of one node of a slurm target."""
    return f"{cluster}.{node}"


def run_slurm(
    engine: Engine, name: str, checks: list[PlannedCheck], found: dict[str, ResultRecord]
) -> None:
    """Every check of `checks` on every node of slurm target `name`, finals to `found`."""
    target = engine.targets[name]
    try:
        transport = engine._connect(target)
        assert isinstance(transport, SlurmTransport)
        nodes = transport.node_names()
    except TargetError as exc:
        for check in checks:
            engine._final(check, engine._error(check, str(exc)), found)
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
    engine: Engine,
    transport: SlurmTransport,
    name: str,
    todo: dict[str, list[PlannedCheck]],
    attempt: int,
    last: bool,
    found: dict[str, ResultRecord],
) -> dict[tuple[str, str], ResultRecord]:
    """One srun step over the nodes in `todo`; a record for each (node, check key)."""
    from .engine import StallWatchdog, _lost_reason, _parse, evaluate_result

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
            engine._final(PlannedCheck(check.fact, node_target(name, node)), record, found)

    def error(node: str, check: PlannedCheck, why: str) -> ResultRecord:
        return engine._error(PlannedCheck(check.fact, node_target(name, node)), why)

    nonce = secrets.token_hex(16)
    script = build_script(
        calls, jobs=engine.options.jobs, checks_dir=engine.kb.root / "checks", nonce=nonce
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
    with engine._lock:
        engine._procs.add(step)
    watchdog = StallWatchdog(step, calls, engine.options)
    by_call = {c.id: c for c in calls}
    done: set[str] = set()
    try:
        for node, line in step.by_node():
            message = _parse(line)
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
    with engine._lock:
        engine._procs.discard(step)
    stderr = step.stderr_text()
    started = set(step.task_node.values())
    for node, checks in todo.items():
        lost = [c for c in checks if (node, c.key) not in records]
        if not lost:
            continue
        got = len(checks) - len(lost)
        if node not in started:
            why = f"node {node}: the agent never started (srun exit {status}): {stderr.strip()}"
        else:
            why = _lost_reason(stderr, status, node in done, got, len(checks))
        if watchdog.fired:
            why = watchdog.reason()
        for check in lost:
            settle(node, check, error(node, check, why))
    return records
