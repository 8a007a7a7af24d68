"""The Python API: what the CLI does, as calls a script or notebook can make.

    import factbook
    kb = factbook.load("path/to/kb")                 # or load() to search upwards from cwd
    gpus = kb.facts(category="hardware", tag="gpu")  # kb.facts["hw.gpu.count"] by id
    run = factbook.verify(kb, ["local"], "hw.*", save=False)
    run.records, run.exit_code()
    text = factbook.status(kb, as_of="4504")
    problems = factbook.lint(kb.root)

The commands in factbook.commands parse arguments, call these and render; nothing here
prints. Errors are FactbookError subclasses (factbook.errors), never SystemExit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from factbook.errors import Problem, UsageError
from factbook.knowledge.fleet.load import add_inventories
from factbook.knowledge.kb import KnowledgeBase, load_kb_with_problems
from factbook.knowledge.locate import find_root
from factbook.knowledge.model import Fact
from factbook.store.results import ResultRecord
from factbook.verification.engine import VerifyOptions
from factbook.verification.run import (
    Selection,
    VerifyRun,
    VerifySettings,
    refuse_broken,
    run_verify,
    select_facts,
)
from factbook.verification.targets import Plan, plan_checks

__all__ = [
    "VerifyPlan",
    "lint",
    "load",
    "plan",
    "run_plan",
    "status",
    "verify",
]


def load(root: Path | str | None = None, *, strict: bool = False) -> KnowledgeBase:
    """The knowledge base at `root`, or the nearest one at or above the current directory.

    strict=True raises LintFailed when the loader finds problems; otherwise they are kept
    in `kb.problems` (a list of Problem) and the loadable facts are returned.
    """
    if root is None:
        found = find_root()
        if found is None:
            raise UsageError(
                f"{Path.cwd()}: no knowledge base here or above (a folder holding facts/)"
            )
        root = found
    kb, problems = load_kb_with_problems(Path(root))
    if strict and problems:
        from factbook.errors import LintFailed

        raise LintFailed(problems)
    kb.problems = problems
    return kb


def lint(root: Path | str | None = None) -> list[Problem]:
    """Every problem `factbook lint` reports, sorted; [] for a clean knowledge base."""
    from factbook.knowledge.linters import collect_problems

    return collect_problems(Path(root) if root is not None else (find_root() or Path(".")))[1]


class VerifyPlan:
    """What a verify would run (plan.checks: fact x target) and lint problems elsewhere."""

    def __init__(self, plan: Plan, facts: list[Fact], problems_elsewhere: int):
        self.plan = plan
        self.facts = facts
        self.problems_elsewhere = problems_elsewhere

    @property
    def checks(self) -> list:
        return self.plan.checks


def plan(
    kb: KnowledgeBase,
    targets: Iterable[str] = (),
    *patterns: str,
    categories: Sequence[str] = (),
    tags: Sequence[str] = (),
    statuses: Sequence[str] = (),
    failed_only: bool = False,
    inventories: Sequence[str] = (),
    limit: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> VerifyPlan:
    """Select facts and place their checks on targets; lint problems in them refuse (exit 2).

    `inventories` (Ansible inventories, ssh configs) add targets and groups first; `limit`
    and `exclude` narrow the targets with host patterns, as Ansible's options do.
    """
    problems = getattr(kb, "problems", None)
    if problems is None:
        problems = load_kb_with_problems(kb.root)[1]
    kb.targets, kb.groups = add_inventories(kb.targets, kb.groups, inventories)
    selection = Selection(patterns, categories, tags, statuses, failed_only)
    facts = select_facts(kb, selection)
    elsewhere = refuse_broken(facts, problems)
    placed = plan_checks(kb, facts, list(targets), limit=limit, exclude=exclude)
    if placed.empty_selection is not None and patterns and not placed.checks:
        raise UsageError(
            f"--target {placed.empty_selection!r} selects no target (an empty group), so the "
            f"checks asked for ({', '.join(patterns)}) have nowhere to run"
        )
    return VerifyPlan(placed, facts, elsewhere)


def run_plan(
    kb: KnowledgeBase,
    planned: VerifyPlan,
    settings: VerifySettings | None = None,
    *,
    check_identity: bool = True,
    skip_elsewhere: bool = False,
    on_result: Callable[[ResultRecord], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> VerifyRun:
    """Run a plan: confirm each target's identity first (WrongTarget, nothing written, if a
    box is not what it is named), then check, save and record as `settings` say.

    `skip_elsewhere`: a target whose identity fails is left out instead, each of its checks
    reported `skipped` with the reason (not saved: they say nothing about the box)."""
    settings = settings or VerifySettings()
    skipped: list[ResultRecord] = []
    plan_ = planned.plan
    if check_identity and planned.checks:
        from factbook.verification import identity

        if skip_elsewhere:
            plan_, skipped = identity.skip_elsewhere(kb, plan_, settings.options)
        else:
            identity.confirm_identities(kb, plan_, settings.options)
    run = run_verify(kb, plan_, settings, on_result=on_result, on_note=on_note)
    for record in skipped:
        record.run = run.id
        if on_result is not None:
            on_result(record)
    run.records += skipped
    return run


def verify(
    kb: KnowledgeBase,
    targets: Iterable[str] = (),
    *patterns: str,
    categories: Sequence[str] = (),
    tags: Sequence[str] = (),
    save: bool = True,
    record: bool = False,
    jobs: int = 16,
    timeout: float | None = None,
    on_result: Callable[[ResultRecord], None] | None = None,
) -> VerifyRun:
    """`verify-facts`: run the selected facts' checks on `targets` and return the run.

    `targets` are names from targets.yaml, 'all', or ssh:// URLs; run.records holds one
    ResultRecord per check, run.exit_code() is the CLI's exit code, run.saved the history file.
    """
    planned = plan(kb, targets, *patterns, categories=categories, tags=tags)
    settings = VerifySettings(
        options=VerifyOptions(jobs=jobs, timeout=timeout), save=save, record=record
    )
    return run_plan(kb, planned, settings, on_result=on_result)


def status(
    kb: KnowledgeBase,
    *,
    as_of: str | None = None,
    since: str | None = None,
    redact: bool = False,
    results: bool | None = None,
    budget: int | None = None,
    hide_secrets: bool = False,
    format: str = "markdown",
    ids: bool = False,
) -> str:
    """The status document as of a milestone (None: now), redacted if asked.

    `budget`: a dense dump within that many tokens (characters / 4), facts chosen by
    priority, the rest named by id; `format="json"` returns its selection as JSON text
    (needs `budget`); `ids`: every fact's id in its group line (a budgeted dump that
    `factbook import` reads into another knowledge base with the same ids). Without a budget:
    the full document in the seeds' structure. `hide_secrets`: its secrets redacted, hosts
    and users kept (`redact` hides those too).
    """
    from factbook.dumps.status import StatusOptions, render_status
    from factbook.dumps.status.budget import render_budgeted
    from factbook.errors import UsageError

    if format not in ("markdown", "json"):
        raise UsageError(f"format must be 'markdown' or 'json', not {format!r}")
    options = StatusOptions(
        as_of=as_of,
        since=since,
        redact=redact,
        hide_secrets=hide_secrets,
        results=results,
        ids=ids,
    )
    if budget is None:
        if format == "json":
            raise UsageError("format='json' needs a budget (the selection it describes)")
        if ids:
            raise UsageError("ids=True needs a budget (the full document names every id)")
        return render_status(kb, options)
    dump = render_budgeted(kb, options, budget)
    return dump.json() if format == "json" else dump.text


def nothing_selected(kb: KnowledgeBase, targets: Iterable[str] = ()) -> str:
    """Why a verify selected no checks, and what can be run instead (for the CLI's message)."""
    counts: dict[str, int] = {}
    untargeted = 0
    for fact in kb.facts.values():
        if fact.check is None:
            continue
        own = fact.check_target()
        if own is None:
            untargeted += 1
        else:
            counts[own] = counts.get(own, 0) + 1
    asked = [t for spec in targets for t in spec.split(",") if t.strip()]
    lines = ["no checks selected"]
    if asked and not untargeted:
        lines[0] += f" for {', '.join(asked)}: every fact with a check names its own target"
    if counts:
        listed = ", ".join(f"{name} ({n})" for name, n in sorted(counts.items()))
        lines.append(f"targets with checks: {listed}; run `verify-facts --target NAME`")
    local = [n for n, t in kb.targets.items() if t.transport == "local"]
    if local:
        lines.append(
            f"for this machine: `factbook discover --target {local[0]}` proposes facts, or add "
            f"`target: {local[0]}` (or no target) to a fact's check"
        )
    return "\n".join(lines)
