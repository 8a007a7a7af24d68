"""`factbook run RUNBOOK --dry-run`: every step with the facts it uses resolved, no kernel.

Cells read facts through the API (`fact("id").get("path")`, `env_from("id")`,
`flags_from("id")`), so the calls can be found statically (ast) and evaluated against the
knowledge base without executing anything: an operator sees the exact model path, flags and
environment a step will use, and which requirements are unmet, before touching the box.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from typing import Any, TextIO

from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.names import shown
from factbook.runbooks.api import FactView
from factbook.runbooks.format import Runbook, Step, cell_nodes
from factbook.store.results import latest_for

FACT_FUNCTIONS = ("fact", "env_from", "flags_from")


@dataclass
class FactUse:
    """One fact access found in a cell: `expression` and what it resolves to."""

    expression: str
    fact_id: str
    value: Any = None
    error: str | None = None


def fact_uses(source: str) -> list[FactUse]:
    """Fact accesses in a cell's source, in order, without duplicates (unresolved)."""
    nodes = cell_nodes(source)
    found: dict[str, FactUse] = {}
    where: dict[str, tuple[int, int]] = {}
    parents: dict[int, ast.AST] = {}  # made at the first `fact(...)`: most cells have none
    for node in nodes:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in FACT_FUNCTIONS
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            continue
        outer: ast.AST = node
        if node.func.id == "fact":
            if not parents:
                parents = {id(c): n for n in nodes for c in ast.iter_child_nodes(n)}
            outer = _climb(node, parents)
        try:
            expression = ast.unparse(outer)
        except RecursionError:  # a chain of thousands of `.value`: no constant to show
            continue
        if expression not in found:
            found[expression] = FactUse(expression, node.args[0].value)
            where[expression] = (node.lineno, node.col_offset)
    return sorted(found.values(), key=lambda use: where[use.expression])


VIEW_ATTRIBUTES = {"value", "unit", "status", "statement", "check_args"}


def _climb(node: ast.AST, parents: dict[int, ast.AST]) -> ast.AST:
    """The largest constant expression around `fact("id")`: .get("k"), .value, ["k"]."""
    outer = node
    while True:
        parent = parents.get(id(outer))
        if isinstance(parent, ast.Attribute) and parent.attr in VIEW_ATTRIBUTES:
            outer = parent
        elif isinstance(parent, ast.Attribute) and parent.attr == "get":
            call = parents.get(id(parent))
            if not (
                isinstance(call, ast.Call)
                and call.args
                and all(isinstance(a, ast.Constant) for a in call.args)
            ):
                return outer
            outer = call
        elif (
            isinstance(parent, ast.Subscript)
            and parent.value is outer
            and isinstance(parent.slice, ast.Constant)
        ):
            outer = parent
        else:
            return outer


def resolve(kb: KnowledgeBase, use: FactUse) -> FactUse:
    """Evaluate one fact access against the knowledge base (only constant arguments)."""
    from factbook.runbooks import api

    if use.fact_id not in kb.facts:
        use.error = f"no fact '{shown(use.fact_id)}'"
        return use
    view = FactView(kb.facts[use.fact_id])
    names = {
        "fact": lambda fid: FactView(kb.facts[fid]),
        "env_from": lambda fid: _with_kb(kb, api.env_from, fid),
        "flags_from": lambda fid: _with_kb(kb, api.flags_from, fid),
    }
    try:
        use.value = eval(compile(use.expression, "<fact>", "eval"), {"__builtins__": {}}, names)
    except Exception as exc:  # a key the fact lacks: shown, the dry run goes on
        use.error = f"{type(exc).__name__}: {exc}"
    if isinstance(use.value, FactView):
        use.value = view.value
    return use


def _with_kb(kb: KnowledgeBase, function: Any, fact_id: str) -> Any:
    from factbook.runbooks import api

    saved = api._STATE._kb, api._STATE._ctx
    api._STATE._kb = kb
    try:
        return function(fact_id)
    finally:
        api._STATE._kb, api._STATE._ctx = saved


def print_dry_run(
    kb: KnowledgeBase, runbook: Runbook, steps: list[Step], target: str | None, out: TextIO
) -> int:
    """Print the plan; return the number of unresolvable fact accesses (0 = clean)."""
    problems = 0
    write = lambda text="": out.write(text + "\n")  # noqa: E731
    write(f"runbook {runbook.name}: {runbook.title}")
    write(f"  file: {runbook.display}")
    write(f"  target: {_target_text(kb, target)}")
    if runbook.pitfalls:
        write(
            "  read first: "
            + ", ".join(
                f"{p} ({kb.facts[p].title})" if p in kb.facts else f"{p} (MISSING)"
                for p in runbook.pitfalls
            )
        )
    write(f"  steps: {len(steps)} of {len(runbook.steps)} (dry run: nothing is executed)")
    for number, step in enumerate(steps, 1):
        step_target = step.target or target
        flags = [f"timeout {step.timeout:.0f}s"]
        if step.destructive:
            flags.append("DESTRUCTIVE (asks, or --yes)")
        if step.setup:
            flags.append("setup")
        write()
        write(f"[{number}] {step.name}  on {step_target or '(no target)'}  " + ", ".join(flags))
        for fact_id in step.requires:
            write(f"    requires {fact_id}: {_requirement_text(kb, fact_id, step_target)}")
        for fact_id in step.records:
            write(f"    records  {fact_id}")
        for line in step.source.splitlines():
            write(f"    | {line}")
        uses = [resolve(kb, u) for u in fact_uses(step.source)]
        if uses:
            write("    facts resolved:")
        for use in uses:
            if use.error:
                problems += 1
                write(f"      {use.expression} -> ERROR {use.error}")
            else:
                write(f"      {use.expression} -> {_short(use.value)}")
    return problems


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 400 else text[:400] + " ..."


def _target_text(kb: KnowledgeBase, name: str | None) -> str:
    if name is None:
        return "(none)"
    target = kb.targets.get(name)
    if target is None:
        return f"{name} (UNKNOWN)"
    if target.transport == "local":
        return f"{name} (local)"
    where = f"{target.user + '@' if target.user else ''}{target.host}"
    via = f" via {' -> '.join(target.jump)}" if target.jump else ""
    return f"{name} (ssh {where}{via}, python {target.python or 'python3'})"


def _requirement_text(kb: KnowledgeBase, fact_id: str, target: str | None) -> str:
    fact = kb.facts.get(fact_id)
    if fact is None:
        return "MISSING FACT"
    how = f"check {fact.check.probe}" if fact.check else f"no check, status {fact.status}"
    latest = [r for r in latest_for(kb.root, fact_id) if r.target == target]
    last = (
        f"; last result {latest[0].outcome} at {latest[0].time}"
        if latest
        else "; never verified there"
    )
    return how + last
