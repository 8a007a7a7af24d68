"""One verification run as a library call: select, plan, run, save, record; the CLI only renders.

    run = run_verify(kb, plan, VerifySettings(...), on_result=..., on_note=...)
    run.records, run.header, run.saved, run.recorded, run.interrupted, run.exit_code()

The run header (id, times, host, factbook version, agents, summary) is the first line of the
run's history file; `record_verified` turns passing facts into `verified` ones in facts/.
Ctrl-C stops every agent and still saves the results received so far (the header says so).
"""

from __future__ import annotations

import fnmatch
import re
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factbook.errors import EXIT_INTERRUPTED, EXIT_OK, LintFailed, Problem, UsageError
from factbook.judging.outcomes import NOT_OK, OUTCOMES, PASS, SKIPPED
from factbook.judging.sanitize import hide_url_passwords
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.model import Fact
from factbook.store.results import ResultRecord, load_latest, write_run
from factbook.store.stamps import FACTBOOK_VERSION as __version__
from factbook.store.stamps import new_run_id, now_iso
from factbook.verification.engine import Engine, VerifyOptions
from factbook.verification.report import exit_code
from factbook.verification.targets import Plan


@dataclass
class Selection:
    """Which facts to verify: ids or globs, and filters that combine with AND."""

    patterns: Sequence[str] = ()
    categories: Sequence[str] = ()
    tags: Sequence[str] = ()
    statuses: Sequence[str] = ()
    failed_only: bool = False  # only facts whose latest result drifted or errored


@dataclass
class VerifyRun:
    """What one run did: its records, header, where it was saved and what it recorded."""

    id: str
    header: dict[str, Any]
    records: list[ResultRecord]
    elapsed: float
    saved: Path | None = None
    recorded: list[str] = field(default_factory=list)  # "recorded ID: assumed -> verified"
    record_problems: list[str] = field(default_factory=list)  # facts that could not be recorded
    interrupted: bool = False

    def exit_code(self) -> int:
        """130 when interrupted, else 3 errored, 1 drifted, 0 passed (or nothing ran)."""
        if self.interrupted:
            return EXIT_INTERRUPTED
        return exit_code(self.records) if self.records else EXIT_OK


def select_facts(kb: KnowledgeBase, selection: Selection) -> list[Fact]:
    """The facts with checks that the selection names; a pattern naming nothing is an error."""
    for pattern in selection.patterns:
        if any(ch in pattern for ch in "*?["):
            if not any(fnmatch.fnmatchcase(i, pattern) for i in kb.facts):
                raise UsageError(f"no fact matches '{pattern}'")
        else:
            fact = kb.get(pattern)
            if fact.check is None:
                raise UsageError(f"fact '{pattern}' has no check to run ({fact.location})")
    facts = kb.select(
        patterns=list(selection.patterns),
        categories=list(selection.categories),
        tags=list(selection.tags),
        statuses=list(selection.statuses),
    )
    if selection.failed_only:
        latest = load_latest(kb.root)
        bad = {
            fact_id
            for fact_id, by_target in latest.items()
            if any(r.get("outcome") in NOT_OK for r in by_target.values())
        }
        facts = [f for f in facts if f.id in bad]
    return [f for f in facts if f.check is not None]


def refuse_broken(facts: list[Fact], problems: list[Problem]) -> int:
    """Lint problems in the selected facts stop the run (LintFailed, exit 2); return how many
    problems elsewhere (the caller warns about them)."""
    selected = {f.id for f in facts}
    mine = [p for p in problems if _problem_fact(p) in selected or _problem_fact(p) is None]
    if mine:
        raise LintFailed(mine)
    return len(problems)


def _problem_fact(problem: Problem) -> str | None:
    match = re.match(r"fact '([^']+)'", problem.message)
    return match.group(1) if match else None


@dataclass
class VerifySettings:
    """How to run and what to keep: engine options, saving, write-back, the command line."""

    options: VerifyOptions = field(default_factory=VerifyOptions)
    save: bool = True
    record: bool = False
    argv: Sequence[str] = ()


def run_verify(
    kb: KnowledgeBase,
    plan: Plan,
    settings: VerifySettings,
    *,
    on_result: Callable[[ResultRecord], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> VerifyRun:
    """Run the plan's checks, save the results and (with `record`) mark passing facts verified.

    Ctrl-C stops the agents; the results already received are saved and the run comes back
    with `interrupted` set (exit 130) instead of being lost.
    """
    if settings.save:
        load_latest(kb.root)  # an unreadable latest.json stops the run before any check
    started = time.monotonic()
    run_id = new_run_id([c.target for c in plan.checks])
    engine = Engine(
        kb, plan.targets, settings.options, run_id=run_id, on_result=on_result, on_note=on_note
    )
    header: dict[str, Any] = {
        "id": run_id,
        "started": now_iso(),
        "factbook": __version__,
        "host": socket.gethostname(),
        "argv": [hide_url_passwords(a) for a in settings.argv],
        "targets": sorted({c.target for c in plan.checks}),
    }
    interrupted = False
    try:
        records = engine.run(plan.checks)
    except KeyboardInterrupt:
        interrupted = True
        records = engine.received(plan.checks)
    records += [_unplaced(f, run_id) for f in plan.unplaced]
    elapsed = time.monotonic() - started
    header.update(
        finished=now_iso(),
        elapsed_s=round(elapsed, 3),
        agents=engine.agents,
        summary={k: sum(r.outcome == k for r in records) for k in OUTCOMES},
    )
    if interrupted:
        header["interrupted"] = True
    run = VerifyRun(run_id, header, records, elapsed, interrupted=interrupted)
    if settings.save and records:
        run.saved = write_run(kb.root, run_id, header, records)
    if settings.record and not interrupted:
        run.recorded, run.record_problems = record_verified(kb, records, run_id)
    return run


def record_verified(
    kb: KnowledgeBase, records: list[ResultRecord], run_id: str
) -> tuple[list[str], list[str]]:
    """Set status `verified` (and add this run as a source) on facts that passed everywhere
    they ran and were not verified yet; comments and order of the fact files are kept.

    Returns (notes on what was recorded, one line per fact that could not be written back):
    a fact the write-back cannot edit is reported and the others are still recorded.
    """
    from factbook.store.writeback import FactUpdate, update_facts

    outcomes: dict[str, set[str]] = {}
    targets: dict[str, list[str]] = {}
    for r in records:
        outcomes.setdefault(r.fact, set()).add(r.outcome)
        targets.setdefault(r.fact, []).append(r.target)
    updates = []
    for fact_id, seen in outcomes.items():
        fact = kb.facts.get(fact_id)
        if fact is None or seen != {PASS} or fact.status == "verified":
            continue
        where = ", ".join(sorted(set(targets[fact_id])))
        source = {"run": run_id, "date": now_iso()[:10], "note": f"verify-facts passed on {where}"}
        if len(set(targets[fact_id])) == 1:
            source["target"] = targets[fact_id][0]
        updates.append(FactUpdate(fact_id, status="verified", add_source=source))
    done, problems = update_facts(kb.root, updates)
    notes = [f"recorded {u.fact_id}: {kb.facts[u.fact_id].status} -> verified" for u in done]
    return notes, problems


def _unplaced(fact: Fact, run_id: str) -> ResultRecord:
    return ResultRecord(
        fact=fact.id,
        target="-",
        outcome=SKIPPED,
        reason="no target: the fact names none; pass --target",
        time=now_iso(),
        run=run_id,
        probe=fact.check.probe if fact.check else "",
        extra={"location": fact.location},
    )
