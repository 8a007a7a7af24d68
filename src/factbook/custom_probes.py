"""Find a knowledge base's own probes in checks/*.py without importing them.

A custom probe module declares `PROBES = {"name": function, ...}` at module level; each
function takes keyword arguments (those without defaults are required). The probes run on the
box, so here we only read names and signatures with `ast`: lint never executes user code.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .errors import Problem
from .probes.catalog import ProbeSpec
from .yamlsrc import read_text_bounded


def find_custom_probes(checks_dir: Path, root: Path) -> tuple[dict[str, ProbeSpec], list[Problem]]:
    """Probe specs from every checks/*.py, and the problems found reading them."""
    specs: dict[str, ProbeSpec] = {}
    problems: list[Problem] = []
    if not checks_dir.is_dir():
        return specs, problems
    for path in sorted(checks_dir.glob("*.py")):
        display = path.relative_to(root).as_posix()
        text, unreadable = read_text_bounded(path, display)
        if unreadable is not None:
            problems.append(unreadable)
            continue
        try:
            tree = ast.parse(text, filename=display)
        except SyntaxError as exc:
            problems.append(Problem(display, exc.lineno or 1, f"Python syntax error: {exc.msg}"))
            continue
        except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, deep nesting
            problems.append(Problem(display, 1, f"cannot parse: {exc}"))
            continue
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        for node in tree.body:
            if not (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "PROBES" for t in node.targets)
            ):
                continue
            if not isinstance(node.value, ast.Dict):
                problems.append(Problem(display, node.lineno, "PROBES must be a dict literal"))
                continue
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                    problems.append(Problem(display, node.lineno, "PROBES keys must be strings"))
                    continue
                func = functions.get(value.id) if isinstance(value, ast.Name) else None
                if func is None:
                    problems.append(
                        Problem(display, key.lineno, f"probe {key.value!r}: no function in file")
                    )
                    continue
                params = [a.arg for a in func.args.args + func.args.kwonlyargs]
                n_defaults = len(func.args.defaults)
                positional = [a.arg for a in func.args.args]
                required = positional[: len(positional) - n_defaults] + [
                    a.arg
                    for a, d in zip(func.args.kwonlyargs, func.args.kw_defaults, strict=True)
                    if d is None
                ]
                optional = tuple(p for p in params if p not in required)
                doc = ast.get_docstring(func) or "custom probe"
                if key.value in specs:
                    problems.append(Problem(display, key.lineno, f"duplicate probe {key.value!r}"))
                specs[key.value] = ProbeSpec(
                    key.value, doc.splitlines()[0], tuple(required), optional
                )
    return specs, problems
