"""factbook's facts as pytest tests: one item per fact x target, one batched agent run per target.

    pytest --factbook                              # every fact with a check, on its own target
    pytest --factbook --factbook-target llm-two -k "hw. and not nccl" -m hardware
    pytest --factbook --factbook-root ../kb tests/ # the team's own tests run beside the facts

    pytest --factbook 'facts/hw.yaml::hw.gpu.count@h200'   # one item again, by its node id

Registered as the `factbook` pytest11 entry point, so it loads wherever factbook is installed
and stays inert without `--factbook`. Each fact file is a pytest File and each fact x target
an item in it (node id `facts/FILE.yaml::FACT_ID@TARGET`), placed on targets as
`verify-facts` places them: files pytest walks to (or is given, with or without `::item`)
are collected like test files, and when no argument points into facts/ every other fact file
is collected too, so `pytest --factbook tests/` runs the team's tests beside all facts. They
count in "collected N items" and `--collect-only`, and `-k`/`-m` filter them as usual.
The first item of a target runs every selected item of that target in one agent
(verify.run.run_verify), cached for the session; each item then reports its own record and
its own time (the check's duration on the box; the shared batch is no one item's setup):
a drift fails with expected vs observed and the fact's file:line, an error is a pytest
error, a skip a skip. Markers: `factbook`, the fact's category, and each of its tags.
Results are saved to results/ like any run unless `--factbook-no-save`.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest

_MARKER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("factbook", "factbook: verify facts as tests")
    group.addoption("--factbook", action="store_true", help="collect the knowledge base's facts")
    group.addoption(
        "--factbook-root",
        metavar="DIR",
        help="the knowledge base (holding facts/); default: $FACTBOOK_ROOT or the rootdir",
    )
    group.addoption(
        "--factbook-target",
        action="append",
        default=[],
        metavar="T",
        help="target name(s), 'all' or ssh:// URL, as verify-facts --target (repeatable)",
    )
    group.addoption("--factbook-no-save", action="store_true", help="do not write results/")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "factbook: a fact of the knowledge base (--factbook)")
    if not config.getoption("factbook", default=False):
        return
    session = FactbookSession(config)
    config.pluginmanager.register(session, "factbook-session")
    for name in session.marker_names():
        config.addinivalue_line("markers", f"{name}: factbook category or tag")


def marker_name(word: str) -> str | None:
    """A category or tag as a marker name, when it is one (`-m` reads identifiers)."""
    name = word.replace("-", "_").replace(".", "_")
    return name if _MARKER.fullmatch(name) else None


class FactbookSession:
    """The knowledge base, its plan and the cached run per target, for one pytest session."""

    def __init__(self, config: pytest.Config):
        from factbook.knowledge.kb import load_kb_with_problems
        from factbook.verification.run import Selection, refuse_broken, select_facts
        from factbook.verification.targets import plan_checks

        root = config.getoption("factbook_root") or os.environ.get("FACTBOOK_ROOT")
        self.config = config
        self.root = Path(root) if root else Path(config.rootpath)
        self.no_save = bool(config.getoption("factbook_no_save"))
        self.target_specs = list(config.getoption("factbook_target"))
        try:
            self.kb, self.problems = load_kb_with_problems(self.root)
            facts = select_facts(self.kb, Selection())
            refuse_broken(facts, self.problems)
            self.plan = plan_checks(self.kb, facts, self.target_specs)
        except Exception as exc:  # a FactbookError: one line, not a traceback
            raise pytest.UsageError(f"factbook: {exc}") from None
        self.by_file: dict[Path, list[Any]] = {}  # resolved fact file -> its planned checks
        for check in self.plan.checks:
            path = (self.root / check.fact.file).resolve()
            self.by_file.setdefault(path, []).append(check)
        self.collected: set[Path] = set()
        self.runs: dict[str, dict[str, Any]] = {}  # target -> {fact id: ResultRecord}
        self.selected: dict[str, list[FactItem]] = {}
        self.lock = threading.Lock()

    def marker_names(self) -> list[str]:
        words = {f.category for f in self.kb.facts.values()}
        words |= {t for f in self.kb.facts.values() for t in f.tags}
        return sorted({n for n in map(marker_name, words) if n})

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> Any:
        """A fact file pytest walks to or is given is collected like a test file."""
        resolved = file_path.resolve()
        if resolved not in self.by_file:
            return None
        self.collected.add(resolved)
        return FactFile.from_parent(parent, path=file_path, owner=self)

    def _args_name_facts(self) -> bool:
        """Does an argument point into the knowledge base's facts/ (then only those run)?"""
        facts = (self.root / "facts").resolve()
        base = Path(self.config.invocation_params.dir)
        for arg in self.config.args:
            path = (base / arg.split("::", 1)[0]).resolve()
            if path == facts or facts in path.parents:
                return True
        return False

    @pytest.hookimpl(tryfirst=True)  # before -k / -m deselect
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Fact files outside what pytest walked, when no argument chose fact files: collected
        through the session, so they are counted and reported like walked ones."""
        if self._args_name_facts():
            return
        for path in self.by_file:
            if path not in self.collected:
                self.collected.add(path)
                file = FactFile.from_parent(session, path=path, owner=self)
                items.extend(session.genitems(file))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            if isinstance(item, FactItem):
                self.selected.setdefault(item.check.target, []).append(item)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        """An errored check reads like a drift (pytest shows setup errors as tracebacks); each
        item's time is its own check's, not its target's batch."""
        report = yield
        if isinstance(item, FactItem):
            if call.excinfo and call.excinfo.errisinstance(FactError):
                report.longrepr = item.explain()
            record = getattr(item, "record", None)
            if record is not None and call.when in ("setup", "call"):
                # an error ends the item in setup, anything else in call: that phase
                # carries the check's own time, the other none
                ends_in_setup = record.outcome == "error"
                own = (call.when == "setup") == ends_in_setup
                report.duration = _seconds(record.duration_s) if own else 0.0
        return report

    def record_for(self, item: FactItem) -> Any:
        """The item's ResultRecord, running its target's batch on first use."""
        target = item.check.target
        with self.lock:
            if target not in self.runs:
                self.runs[target] = self._run(target)
        return self.runs[target][item.check.fact.id]

    def _run(self, target: str) -> dict[str, Any]:
        from factbook.verification.run import VerifySettings, run_verify
        from factbook.verification.targets import Plan

        checks = [i.check for i in self.selected.get(target, [])]
        plan = Plan(checks, self.plan.targets, [])
        run = run_verify(
            self.kb, plan, VerifySettings(save=not self.no_save, argv=["pytest", "--factbook"])
        )
        return {r.fact: r for r in run.records}


def _seconds(value: Any) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return 0.0
    return seconds if seconds >= 0 else 0.0


class FactFile(pytest.File):
    """A fact file: its items are its facts' checks, one per target they run on."""

    def __init__(self, *, owner: FactbookSession, **kwargs: Any):
        super().__init__(**kwargs)
        self.owner = owner

    def collect(self) -> list[pytest.Item]:
        checks = self.owner.by_file.get(self.path.resolve(), [])
        return [FactItem.from_parent(self, name=c.key, check=c, owner=self.owner) for c in checks]


class FactDrift(Exception):
    """The box disagrees with the fact (a pytest failure)."""


class FactError(Exception):
    """No verdict: unreachable box, probe crashed, timeout (a pytest error)."""


class FactItem(pytest.Item):
    """One fact's check on one target."""

    def __init__(self, *, check: Any, owner: FactbookSession, **kwargs: Any):
        super().__init__(**kwargs)
        self.check = check
        self.owner = owner
        self.add_marker("factbook")
        for word in (check.fact.category, *check.fact.tags):
            name = marker_name(word)
            if name:
                self.add_marker(name)

    def setup(self) -> None:
        from factbook.judging.outcomes import ERROR

        self.record = self.owner.record_for(self)
        if self.record.outcome == ERROR:
            raise FactError(self.record.reason)

    def runtest(self) -> None:
        from factbook.judging.outcomes import DRIFT, SKIPPED

        if self.record.outcome == SKIPPED:
            pytest.skip(self.record.reason)
        if self.record.outcome == DRIFT:
            raise FactDrift(self.record.reason)

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, (FactDrift, FactError)):
            return self.explain()
        return str(super().repr_failure(excinfo))

    def explain(self) -> str:
        import json

        from factbook.judging.sanitize import for_terminal, json_safe

        r = self.record
        fact = self.check.fact
        expect = r.extra.get("expect", fact.check.expect if fact.check else None)
        return "\n".join(
            [
                f"{r.outcome}: {for_terminal(r.reason)}",
                f"  fact:     {fact.id}  ({fact.title})",
                f"  target:   {for_terminal(r.target)}",
                f"  expected: {for_terminal(json.dumps(json_safe(expect)))}",
                f"  observed: {for_terminal(json.dumps(json_safe(r.observed)))}",
                f"  at:       {fact.location}",
            ]
        )

    def reportinfo(self) -> tuple[Path, int, str]:
        fact = self.check.fact
        return self.path, fact.line - 1, f"{fact.id} @ {self.check.target}"
