"""The runbook linter, one of `factbook lint`'s linters (factbook.knowledge.linters.LINTERS).

Checks every runbooks/*.md: closed metadata keys, unique step names, positive timeouts; that
every fact id in `requires`, `records`, `facts`, `pitfalls` and in `fact("...")`/`record("...")`
calls exists; that `record()` only names declared ids; that targets are known; and the
SGLang launch lines' problems (factbook.serving.sglang.runbook_lint).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from collections.abc import Callable

from factbook.errors import LintFailed, Problem, UsageError
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.names import known_names, shown
from factbook.runbooks.destructive import destructive_command
from factbook.runbooks.dryrun import fact_uses
from factbook.runbooks.format import (
    Runbook,
    cell_nodes,
    load_runbook,
    runbook_paths,
    shared_cells,
)


def runbooks_unchecked(kb: KnowledgeBase) -> int:
    """How many runbooks lint cannot parse here: jupytext (extra 'runbooks' or 'handbook')
    is not installed. `factbook lint` warns about them; the core install lints the rest."""
    if importlib.util.find_spec("jupytext") is not None:
        return 0
    return len(runbook_paths(kb.root))


def lint_runbooks(kb: KnowledgeBase) -> list[Problem]:
    """Problems of every runbook in the knowledge base (none checked without jupytext)."""
    problems: list[Problem] = []
    if runbooks_unchecked(kb):
        return problems
    launch = _launch_linter()
    for path in runbook_paths(kb.root):
        try:
            runbook = load_runbook(path, kb.root)
        except UsageError as exc:
            problems.append(Problem(path.relative_to(kb.root).as_posix(), 1, str(exc)))
            continue
        except LintFailed as exc:  # unreadable or unsafe: located problems, no Runbook
            problems += exc.problems
            continue
        with shared_cells():  # one runbook's cells at a time, let go after it
            problems += lint_runbook(kb, runbook)
            if launch is not None:
                problems += launch(kb, runbook)
    return problems


def lint_runbook(kb: KnowledgeBase, runbook: Runbook) -> list[Problem]:
    """One runbook's problems (its structural ones plus references into the KB)."""
    out = list(runbook.problems)
    where = runbook.display

    def need_fact(fact_id: str, line: int, what: str, category: str | None = None) -> None:
        fact = kb.facts.get(fact_id)
        if fact is None:
            close = [i for i in kb.facts if fact_id.split(".")[-1] in i][:3]
            hint = f" (did you mean: {', '.join(close)})" if close else ""
            out.append(Problem(where, line, f"{what}: no fact '{shown(fact_id)}'{hint}"))
        elif category and fact.category != category:
            named = shown(fact_id)
            message = f"{what}: '{named}' is a {fact.category} fact, not {category}"
            out.append(Problem(where, line, message))

    def need_target(name: str | None, line: int, what: str) -> None:
        if name is not None and name not in kb.targets:
            out.append(
                Problem(
                    where,
                    line,
                    f"{what}: unknown target '{shown(name)}' (known: {known_names(kb.targets)})",
                )
            )

    need_target(runbook.target, 1, "runbook target")
    for fact_id in runbook.facts:
        need_fact(fact_id, 1, "factbook.facts")
    for fact_id in runbook.pitfalls:
        need_fact(fact_id, 1, "factbook.pitfalls", "pitfalls")
    for step in runbook.steps:
        label = f"step '{step.name}'"
        need_target(step.target, step.line, label)
        if step.target is None and runbook.target is None and _reaches_box(step.source):
            out.append(
                Problem(
                    where,
                    step.line,
                    f"{label}: uses box/server but neither the step nor the runbook names a target",
                )
            )
        for fact_id in step.requires:
            need_fact(fact_id, step.line, f"{label} requires")
            fact = kb.facts.get(fact_id)
            if fact is not None and fact.check is None and fact.status != "verified":
                out.append(
                    Problem(
                        where,
                        step.line,
                        f"{label} requires '{fact_id}', which has "
                        f"no check and status {fact.status}: the step can never run",
                    )
                )
        for fact_id in step.records:
            need_fact(fact_id, step.line, f"{label} records")
        for use in fact_uses(step.source):
            need_fact(use.fact_id, step.line, f"{label}: {use.expression}")
        for fact_id in _recorded_ids(step.source):
            if fact_id not in step.records:
                out.append(
                    Problem(
                        where,
                        step.line,
                        f"{label}: record('{fact_id}') is not declared in `records:`",
                    )
                )
        undeclared = None if step.destructive else destructive_command(step.source)
        if undeclared is not None:
            out.append(
                Problem(
                    where,
                    step.line,
                    f"{label}: runs `{shown(undeclared)}` but is not marked `destructive: "
                    "true` (factbook run would not ask before it)",
                )
            )
        try:
            compile(step.source, f"{where}:{step.name}", "exec")
        except SyntaxError as exc:
            if not step.source.lstrip().startswith(("%", "!")):
                out.append(
                    Problem(
                        where,
                        step.line,
                        f"{label}: syntax error at line {exc.lineno} of the cell: {exc.msg}",
                    )
                )
        except (ValueError, RecursionError, MemoryError) as exc:  # a NUL, deep nesting
            why = "nested too deeply to compile" if not isinstance(exc, ValueError) else exc
            out.append(Problem(where, step.line, f"{label}: {why}"))
    return out


def _recorded_ids(source: str) -> list[str]:
    return [
        node.args[0].value
        for node in cell_nodes(source)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "record"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ]


def _reaches_box(source: str) -> bool:
    return "box." in source or "server." in source


def _launch_linter() -> Callable[[KnowledgeBase, Runbook], list[Problem]] | None:
    try:
        module = importlib.import_module("factbook.serving.sglang.runbook_lint")
    except ModuleNotFoundError as exc:
        if exc.name == "factbook.serving.sglang.runbook_lint":
            return None
        raise
    return getattr(module, "lint_runbook", None)
