"""Read probe declarations from source with `ast`: one scanner for built-in and custom probes.

A probe module declares `PROBES = {"name": function, ...}` at module level. Each function is
the whole declaration: its keyword arguments (those without defaults are required) and the
first paragraph of its docstring (what it returns). Built-in modules in this package and a
knowledge base's checks/*.py are read the same way. Probes run on the box, so nothing here
imports them: lint never executes probe code, and the CLI does not pay for their imports.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from factbook.errors import Problem
from factbook.knowledge.yamlsrc import read_text_bounded


@dataclass(frozen=True)
class ProbeSpec:
    """A probe's name, required and optional arguments, and what it returns."""

    name: str
    returns: str
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = field(default=())


@dataclass
class ModuleScan:
    """What one probe module declares: every name in PROBES, the specs that read cleanly."""

    declared: list[str] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)  # name -> line of its PROBES key
    specs: dict[str, ProbeSpec] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def scan_source(text: str, display: str, *, default_doc: str = "custom probe") -> ModuleScan:
    """The PROBES declaration of one module's source (`display` names it in problems)."""
    scan = ModuleScan()
    try:
        tree = ast.parse(text, filename=display)
    except SyntaxError as exc:
        scan.problems.append(Problem(display, exc.lineno or 1, f"Python syntax error: {exc.msg}"))
        return scan
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, deep nesting
        scan.problems.append(Problem(display, 1, f"cannot parse: {exc}"))
        return scan
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "PROBES" for t in node.targets)
        ):
            continue
        if not isinstance(node.value, ast.Dict):
            scan.problems.append(Problem(display, node.lineno, "PROBES must be a dict literal"))
            continue
        for key, value in zip(node.value.keys, node.value.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                scan.problems.append(Problem(display, node.lineno, "PROBES keys must be strings"))
                continue
            scan.declared.append(key.value)
            scan.lines.setdefault(key.value, key.lineno)
            func = functions.get(value.id) if isinstance(value, ast.Name) else None
            if func is None:
                scan.problems.append(
                    Problem(display, key.lineno, f"probe {key.value!r}: no function in file")
                )
                continue
            if key.value in scan.specs:
                scan.problems.append(Problem(display, key.lineno, f"duplicate probe {key.value!r}"))
            scan.specs[key.value] = _spec(key.value, func, default_doc)
    return scan


def _spec(name: str, func: ast.FunctionDef, default_doc: str) -> ProbeSpec:
    positional = [a.arg for a in func.args.args]
    required = positional[: len(positional) - len(func.args.defaults)] + [
        a.arg for a, d in zip(func.args.kwonlyargs, func.args.kw_defaults, strict=True) if d is None
    ]
    params = positional + [a.arg for a in func.args.kwonlyargs]
    optional = tuple(p for p in params if p not in required)
    doc = ast.get_docstring(func) or default_doc
    returns = " ".join(doc.split("\n\n")[0].split())
    return ProbeSpec(name, returns, tuple(required), optional)


def scan_file(path: Path, display: str, *, default_doc: str = "custom probe") -> ModuleScan:
    """`scan_source` of a file, read bounded (size, UTF-8, no FIFOs: a shared repository's
    checks/ may hold anything)."""
    text, unreadable = read_text_bounded(path, display)
    if unreadable is not None:
        return ModuleScan(problems=[unreadable])
    return scan_source(text, display, default_doc=default_doc)


def find_custom_probes(checks_dir: Path, root: Path) -> tuple[dict[str, ProbeSpec], list[Problem]]:
    """Probe specs from every checks/*.py, and the problems found reading them."""
    specs: dict[str, ProbeSpec] = {}
    problems: list[Problem] = []
    for path in custom_modules(checks_dir):
        display = path.relative_to(root).as_posix()
        scan = scan_file(path, display)
        problems += scan.problems
        for name, spec in scan.specs.items():
            if name in specs:
                problems.append(Problem(display, scan.lines[name], f"duplicate probe {name!r}"))
            specs[name] = spec
    return specs, problems


def custom_modules(checks_dir: Path) -> list[Path]:
    """A knowledge base's probe modules, in the order later declarations win."""
    return sorted(checks_dir.glob("*.py")) if checks_dir.is_dir() else []
