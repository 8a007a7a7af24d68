"""Find SGLang launch command lines in a runbook's cells and lint them (for `factbook lint`).

Cells are evaluated in order without running anything (CellEvaluator), so an argv a setup
cell builds from facts is linted with the facts' values; each launch goes to
launch.check_command.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from factbook.errors import Problem
from factbook.knowledge.limits import split_words
from factbook.knowledge.yamlsrc import read_text_bounded
from factbook.runbooks.format import parse_cell
from factbook.serving.sglang.flags import LAUNCH_MARKERS, UNKNOWN, launch_argv
from factbook.serving.sglang.launch import check_command, local_exists, read_local_config

_SHELL_LINE = re.compile(r"^\s*!(.*)$", re.MULTILINE)
# What the evaluator may build and do for one runbook: `a = a + a` forty times asked for a
# terabyte (a MemoryError out of lint), `[[y for y in a] for x in a]` for billions of steps.
MAX_BUILT = 1 << 16  # characters and items in one value, nested ones counted as often as used
MAX_STEPS = 200_000  # expressions evaluated; past either bound a value is UNKNOWN


class _Exhausted(Exception):
    """The runbook used up MAX_STEPS: what is evaluated from here on is UNKNOWN."""


def _too_big(value: Any) -> bool:
    """Whether `value` holds more than MAX_BUILT characters and items (walked with a stack,
    stopping as soon as it is over: a list holding itself 2**40 times costs MAX_BUILT)."""
    budget, stack = MAX_BUILT, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            budget -= len(item)
            stack.extend(item)
        else:
            budget -= len(item) if isinstance(item, str) else 1
        if budget < 0:
            return True
    return False


class CellEvaluator:
    """Constant propagation over a runbook's cells, in order, without running anything.

    Names assigned from literals, `fact(ID).get(KEY)`, `fact(ID).value`, `flags_from(ID)`,
    `env_from(ID)`, `str(...)`, `+` and simple list comprehensions keep their values from one
    cell to the next (a setup cell builds `argv`, a later one launches it); everything else
    (box.python, computed ports) is UNKNOWN, and checks that need it are skipped.
    """

    def __init__(self, kb: Any = None):
        self.kb = kb
        self.names: dict[str, Any] = {}
        self.steps = 0

    def _fact(self, node: ast.AST) -> Any:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "fact"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and self.kb is not None
        ):
            return self.kb.facts.get(node.args[0].value)
        return None

    def evaluated(self, node: ast.AST) -> Any:
        """`value(node)`, UNKNOWN past the evaluator's bounds or Python's recursion."""
        try:
            return self.value(node)
        except (_Exhausted, RecursionError):
            return UNKNOWN

    def value(self, node: ast.AST, local: dict[str, Any] | None = None) -> Any:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _Exhausted
        built = self._value(node, local)
        return UNKNOWN if isinstance(built, (str, list)) and _too_big(built) else built

    def _value(self, node: ast.AST, local: dict[str, Any] | None = None) -> Any:
        names = {**self.names, **(local or {})}
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return names.get(node.id, UNKNOWN)
        if isinstance(node, (ast.List, ast.Tuple)):
            items: list[Any] = []
            for elt in node.elts:
                if isinstance(elt, ast.Starred):
                    inner = self.value(elt.value, local)
                    items.extend(inner if isinstance(inner, list) else [UNKNOWN, UNKNOWN])
                else:
                    items.append(self.value(elt, local))
            return items
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left, local), self.value(node.right, local)
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            return UNKNOWN
        if isinstance(node, ast.IfExp):
            test = self.value(node.test, local)
            if test is UNKNOWN:
                return UNKNOWN
            return self.value(node.body if test else node.orelse, local)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = self.value(node.left, local), self.value(node.comparators[0], local)
            if UNKNOWN in (left, right) or not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
                return UNKNOWN
            return (left == right) == isinstance(node.ops[0], ast.Eq)
        if isinstance(node, ast.ListComp) and len(node.generators) == 1:
            gen = node.generators[0]
            seq = self.value(gen.iter, local)
            if not isinstance(seq, list) or not isinstance(gen.target, ast.Name) or gen.ifs:
                return UNKNOWN
            return [self.value(node.elt, {**(local or {}), gen.target.id: x}) for x in seq]
        if isinstance(node, ast.Attribute) and node.attr == "value":
            found = self._fact(node.value)
            return found.value if found is not None else UNKNOWN
        if isinstance(node, ast.Call):
            return self._call(node, local)
        return UNKNOWN

    def _call(self, node: ast.Call, local: dict[str, Any] | None) -> Any:
        func = node.func
        arg0 = node.args[0] if node.args else None
        if isinstance(func, ast.Name) and func.id == "str" and arg0 is not None:
            inner = self.value(arg0, local)
            return UNKNOWN if inner is UNKNOWN else str(inner)
        if isinstance(func, ast.Name) and func.id in ("flags_from", "env_from"):
            found = self._fact(ast.Call(ast.Name("fact"), node.args, []))
            if found is None:
                return UNKNOWN
            value = found.value
            if func.id == "env_from":
                env = value.get("env") if isinstance(value, dict) else None
                return dict(env) if isinstance(env, dict) else UNKNOWN
            flags = value.get("flags") if isinstance(value, dict) else value
            try:  # flags that cannot be split: `run` says so; here they are unknown
                if isinstance(flags, str):
                    return split_words(flags)
                if isinstance(flags, list):
                    return [part for item in flags for part in split_words(str(item))]
            except ValueError:
                return UNKNOWN
            return UNKNOWN
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "get"
            and isinstance(arg0, ast.Constant)
        ):
            found = self._fact(func.value)
            if found is not None:
                key = arg0.value
                return getattr(found, key) if key in ("value", "unit") else found.get(key)
        return UNKNOWN

    def run_cell(self, source: str) -> list[tuple[int, list[Any] | str]]:
        """Evaluate a cell's assignments; (line, command) for each SGLang launch it spells."""
        found: list[tuple[int, list[Any] | str]] = []
        for m in _SHELL_LINE.finditer(source):
            if any(k in m.group(1) for k in LAUNCH_MARKERS):
                found.append((source.count("\n", 0, m.start()) + 1, m.group(1)))
        if source.lstrip().startswith("%%"):
            body = source.split("\n", 1)[1] if "\n" in source else ""
            if any(k in body for k in LAUNCH_MARKERS):
                found.append((2, body))
            return found
        tree = parse_cell(_SHELL_LINE.sub("", source))
        if tree is None:
            return found
        seen: set[int] = set()
        for stmt in tree.body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.List) and id(node) not in seen:
                    items = self.evaluated(node)
                    if isinstance(items, list) and launch_argv(items) is not None:
                        found.append((node.lineno, items))
                        seen.update(id(n) for n in ast.walk(node))
                elif (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and id(node) not in seen
                    and any(k in node.value for k in LAUNCH_MARKERS)
                ):
                    found.append((node.lineno, node.value))
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name):
                    self.names[target.id] = self.evaluated(stmt.value)
        return sorted(found, key=lambda item: item[0])


def commands_in_source(source: str, kb: Any = None) -> list[tuple[int, list[Any] | str]]:
    """(line in the cell, command) for every SGLang launch one cell spells out on its own."""
    return CellEvaluator(kb).run_cell(source)


def lint_runbook(kb: Any, runbook: Any) -> list[Problem]:
    """Problems of every SGLang launch in a runbook (called by factbook.runbooks.lint).

    Cells are evaluated in order (see CellEvaluator), so an argv built in a setup cell from
    facts is linted with the facts' values. Paths are checked on this machine only when the
    step's target is a local one; for a remote box the flags alone are linted (the executor
    can check again before the launch with `check_command(argv, ...)`).
    """
    problems: list[Problem] = []
    evaluator = CellEvaluator(kb)
    file_lines: list[str] | None = None  # read once, when a launch first needs a line
    for step in runbook.steps:
        target_name = runbook.step_target(step)
        target = kb.targets.get(target_name) if target_name else None
        local = target is not None and target.transport == "local"
        start: int | None = -1  # where the cell's source begins in the file (-1: not yet)
        for offset, command in evaluator.run_cell(step.source):
            report = check_command(
                command,
                read_config=read_local_config if local else (lambda _p: None),
                exists=local_exists if local else (lambda _p: None),
            )
            if report is None:
                continue
            if file_lines is None:
                file_lines = _runbook_lines(runbook)
            if start == -1:
                start = _source_start(file_lines, step)
            line = step.line if start is None else start + offset
            for finding in report.findings:
                problems.append(
                    Problem(runbook.display, line, f"step '{step.name}': sglang launch {finding}")
                )
    return problems


def _runbook_lines(runbook: Any) -> list[str]:
    """The runbook file's lines, read once per runbook (bounded as load_runbook reads it):
    each launch read and split the whole file again, so 15,000 launches in one 870 kB
    runbook kept `lint` busy 32 s."""
    text, problem = read_text_bounded(Path(runbook.path), str(runbook.display))
    return [] if problem is not None else text.splitlines()


def _source_start(lines: list[str], step: Any) -> int | None:
    """The file line (0-based) where a cell's source begins (after the fence and metadata),
    or None when it cannot be found."""
    first = step.source.splitlines()[0] if step.source.strip() else ""
    for number in range(step.line, len(lines)):
        if lines[number] == first:
            return number
    return None
