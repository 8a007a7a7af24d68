"""Layering rules of the source tree, checked by reading it (ast), not by convention."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "factbook"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path) -> set[str]:
    """Every module an import statement in `path` names, relative imports resolved."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _offenders(allowed: set[str]) -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel in allowed:
            continue
        bad = sorted(
            m
            for m in imported_modules(path)
            if m == "factbook.commands" or m.startswith("factbook.commands.")
        )
        if bad:
            out.append(f"{rel}: {', '.join(bad)}")
    return out


def test_only_cli_imports_commands() -> None:
    assert _offenders({"factbook/cli.py"}) == []


def test_scanner_sees_relative_and_absolute_imports(tmp_path: Path) -> None:
    """The rule above can fail: the scanner resolves the import forms a module could use."""
    for source, expected in [
        ("from ..commands.verify import handle\n", "factbook.commands.verify"),
        ("from .. import commands\n", "factbook.commands"),
        ("import factbook.commands.lint\n", "factbook.commands.lint"),
        ("from factbook.commands import lint\n", "factbook.commands"),
    ]:
        fake = SRC / "factbook" / "runbooks" / "_scan_probe.py"
        try:
            fake.write_text(source, encoding="utf-8")
            assert expected in imported_modules(fake)
            offenders = _offenders({"factbook/cli.py"})
            assert len(offenders) == 1
            assert offenders[0].startswith("factbook/runbooks/_scan_probe.py: factbook.commands")
        finally:
            fake.unlink()


@pytest.mark.parametrize("path", sorted((PACKAGE / "commands").glob("*.py")), ids=lambda p: p.name)
def test_commands_do_not_import_each_other(path: Path) -> None:
    siblings = {f"factbook.commands.{p.stem}" for p in (PACKAGE / "commands").glob("*.py")}
    assert not (imported_modules(path) & (siblings - {"factbook.commands.__init__"}))


def test_linters_are_listed_not_registered() -> None:
    from factbook.linters import LINTERS
    from factbook.runbooks.lint import lint_runbooks

    assert lint_runbooks in LINTERS
    source = (PACKAGE / "runbooks" / "lint.py").read_text(encoding="utf-8")
    names = {
        getattr(node, "id", None) or getattr(node, "attr", None)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.Name, ast.Attribute))
    }
    assert not {"LINTERS", "EXTRA_LINTERS"} & names  # the runbook linter registers nothing
