"""Layering rules of the source tree, checked by reading it (ast), not by convention."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "factbook"


def _module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_statements(path: Path, src: Path = SRC) -> list[tuple[str, list[str]]]:
    """(module, names) for each import in `path` (a module under `src`), relative imports
    resolved; a plain `import a.b` is ("a.b", [])."""
    name = _module_name(path, src)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.append((module, [alias.name for alias in node.names]))
    return out


def imported_modules(path: Path, src: Path = SRC) -> set[str]:
    """Every module an import statement in `path` names (and each `module.name` it imports)."""
    found: set[str] = set()
    for module, names in import_statements(path, src):
        found.add(module)
        found.update(f"{module}.{name}" for name in names)
    return found


def _offenders(allowed: set[str], src: Path = SRC) -> list[str]:
    out = []
    for path in sorted((src / "factbook").rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel in allowed:
            continue
        bad = sorted(
            m
            for m in imported_modules(path, src)
            if m == "factbook.commands" or m.startswith("factbook.commands.")
        )
        if bad:
            out.append(f"{rel}: {', '.join(bad)}")
    return out


def _cli_side() -> set[str]:
    """commands/ and `python -m factbook`: the only modules that may import the command line
    (shell completion gets the CLI's parser handed in)."""
    allowed = {p.relative_to(SRC).as_posix() for p in (PACKAGE / "commands").glob("*.py")}
    return allowed | {"factbook/__main__.py"}


def test_only_cli_imports_commands() -> None:
    assert _offenders(_cli_side()) == []


def test_scanner_sees_relative_and_absolute_imports(tmp_path: Path) -> None:
    """The rule above can fail: the scanner resolves the import forms a module could use. On a
    copy of the tree (writing into src/ would show the probes to a wheel built meanwhile by
    another xdist worker), all four forms in one scan."""
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src / "factbook", ignore=shutil.ignore_patterns("__pycache__"))
    forms = [
        ("from ..commands.verify import handle\n", "factbook.commands.verify"),
        ("from .. import commands\n", "factbook.commands"),
        ("import factbook.commands.lint\n", "factbook.commands.lint"),
        ("from factbook.commands import lint\n", "factbook.commands"),
    ]
    for n, (source, expected) in enumerate(forms):
        fake = src / "factbook" / "runbooks" / f"_scan_probe{n}.py"
        fake.write_text(source, encoding="utf-8")
        assert expected in imported_modules(fake, src)
    offenders = _offenders(_cli_side(), src)
    assert len(offenders) == len(forms), offenders
    for n, found in enumerate(offenders):
        assert found.startswith(f"factbook/runbooks/_scan_probe{n}.py: factbook.commands")


@pytest.mark.parametrize("path", sorted((PACKAGE / "commands").glob("*.py")), ids=lambda p: p.name)
def test_commands_do_not_import_each_other(path: Path) -> None:
    """A command imports the shared helpers of commands/, never another command."""
    shared = {"__init__", "cli_options", "lint_output", "extras", "streams"}
    if path.stem == "cli":
        return  # the dispatcher imports every command by name, lazily
    siblings = {
        f"factbook.commands.{p.stem}"
        for p in (PACKAGE / "commands").glob("*.py")
        if p.stem not in shared
    }
    assert not (imported_modules(path) & siblings)


def test_linters_are_listed_not_registered() -> None:
    from factbook.knowledge.linters import LINTERS
    from factbook.runbooks.lint import lint_runbooks

    assert lint_runbooks in LINTERS
    source = (PACKAGE / "runbooks" / "lint.py").read_text(encoding="utf-8")
    names = {
        getattr(node, "id", None) or getattr(node, "attr", None)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.Name, ast.Attribute))
    }
    assert not {"LINTERS", "EXTRA_LINTERS"} & names  # the runbook linter registers nothing


def module_graph() -> dict[str, set[str]]:
    """Module -> the factbook modules it imports (a `from pkg import name` edge goes to
    pkg.name when that is a module, else to the package)."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        graph[name] = {m for m in _direct_imports(path, set(paths)) if m in paths and m != name}
    return graph


def _direct_imports(path: Path, modules: set[str]) -> set[str]:
    """The modules `path` imports: `from a import b` names a.b if that is a module, else a."""
    found: set[str] = set()
    for module, names in import_statements(path):
        found.update(f"{module}.{n}" if f"{module}.{n}" in modules else module for n in names)
        if not names:
            found.add(module)
    return found


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), as sorted lists."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_no_import_cycles() -> None:
    assert find_cycles(module_graph()) == []


def test_cycle_finder_can_fail() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c"]]


def private_imports(path: Path, src: Path = SRC) -> list[str]:
    """`from other import _name` (or a module whose own name starts with `_`) in `path`."""
    bad = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            module, names = "", [alias.name for alias in node.names]
        else:
            continue
        for part in [*module.split("."), *(n for a in names for n in a.split("."))]:
            if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
                bad.append(f"{path.relative_to(src).as_posix()}:{node.lineno}: {part}")
    return bad


def test_no_private_names_imported_across_modules() -> None:
    assert [line for p in sorted(PACKAGE.rglob("*.py")) for line in private_imports(p)] == []


def test_private_import_rule_can_fail(tmp_path: Path) -> None:
    src = tmp_path / "src"  # not in src/: a wheel built meanwhile would take the probe along
    fake = src / "factbook" / "runbooks" / "_private_probe.py"
    fake.parent.mkdir(parents=True)
    fake.write_text(
        "from factbook.verification.engine import _connect\nimport factbook.x._y\n",
        encoding="utf-8",
    )
    assert private_imports(fake, src) == [
        "factbook/runbooks/_private_probe.py:1: _connect",
        "factbook/runbooks/_private_probe.py:2: _y",
    ]


def test_top_level_shows_the_layers() -> None:
    entries = [p.name for p in PACKAGE.iterdir() if p.name != "__pycache__"]
    assert len(entries) <= 16, sorted(entries)
    for package in (p for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()):
        tree = ast.parse((package / "__init__.py").read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{package.name}/__init__.py says its one job"
