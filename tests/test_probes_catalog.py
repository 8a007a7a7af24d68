"""The built-in catalog is derived from the probe functions: names, arguments, docs, the cache."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import shutil
import sys
from pathlib import Path

import pytest

from factbook.probes import catalog
from factbook.probes.catalog import builtin_catalog, probe_table, scan_builtins
from factbook.probes.scan import scan_source

ROOT = Path(__file__).resolve().parent.parent


def _implementations() -> dict:
    """Imported for real: every module of the package that has a PROBES mapping."""
    found = {}
    for path in sorted(catalog.FOLDER.glob("*.py")):
        module = importlib.import_module(f"factbook.probes.{path.stem}")
        for name, func in getattr(module, "PROBES", {}).items():
            assert name not in found, f"{name} implemented twice"
            found[name] = (path.stem, func)
    return found


def test_scan_reads_every_implemented_probe_and_nothing_else() -> None:
    scanned = scan_builtins()
    assert scanned.problems == []
    implemented = _implementations()
    assert list(scanned.specs) == list(implemented)
    assert scanned.modules == {name: module for name, (module, _) in implemented.items()}
    assert len(scanned.specs) >= 40


def test_arguments_and_returns_match_the_imported_functions() -> None:
    specs = scan_builtins().specs
    for name, (_, func) in _implementations().items():
        params = inspect.signature(func).parameters.values()
        required = tuple(p.name for p in params if p.default is inspect.Parameter.empty)
        optional = tuple(p.name for p in params if p.default is not inspect.Parameter.empty)
        assert (specs[name].required, specs[name].optional) == (required, optional), name
        first_paragraph = " ".join(inspect.getdoc(func).split("\n\n")[0].split())
        assert specs[name].returns == first_paragraph, name


def test_a_probe_without_docstring_is_a_problem(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "probes"
    folder.mkdir()
    (folder / "extra.py").write_text(
        'def a(path):\n    """Size."""\n\n\ndef b(x, y=1):\n    return x\n\n\n'
        'PROBES = {"x.a": a, "x.b": b}\n'
    )
    monkeypatch.setattr(catalog, "FOLDER", folder)
    found = scan_builtins()
    assert [(p.file, p.line, p.message) for p in found.problems] == [
        ("factbook/probes/extra.py", 9, "probe 'x.b': no docstring")
    ]
    assert found.specs["x.b"].required == ("x",) and found.specs["x.b"].optional == ("y",)


def test_a_new_module_needs_no_registration(tmp_path: Path, monkeypatch) -> None:
    """Copy the package's probe folder, add a module: catalog and bundle index pick it up."""
    folder = tmp_path / "probes"
    shutil.copytree(catalog.FOLDER, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "zfs.py").write_text(
        'def zfs_pools(pool=None):\n    """Names of the ZFS pools."""\n    return []\n\n\n'
        'PROBES = {"zfs.pools": zfs_pools}\n'
    )
    monkeypatch.setattr(catalog, "FOLDER", folder)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    builtin_catalog.cache_clear()
    try:
        found = builtin_catalog()
        assert found.modules["zfs.pools"] == "zfs"
        assert found.specs["zfs.pools"].optional == ("pool",)
        assert "| `zfs.pools([pool])` | Names of the ZFS pools. |" in probe_table()
    finally:
        builtin_catalog.cache_clear()


def test_the_disk_cache_is_used_and_invalidated_by_a_change(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "probes"
    shutil.copytree(catalog.FOLDER, folder, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(catalog, "FOLDER", folder)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    builtin_catalog.cache_clear()
    try:
        fresh = builtin_catalog()
        files = list((tmp_path / "cache" / "factbook").glob("probes-*.json"))
        assert len(files) == 1
        builtin_catalog.cache_clear()
        assert builtin_catalog().specs == fresh.specs  # read back from the file
        gpu = folder / "gpu.py"
        gpu.write_text(gpu.read_text().replace("Number of GPUs nvidia-smi lists.", "GPUs."))
        os.utime(gpu, ns=(1, 1))
        builtin_catalog.cache_clear()
        assert builtin_catalog().specs["gpu.count"].returns == "GPUs."
        assert len(list((tmp_path / "cache" / "factbook").glob("probes-*.json"))) == 2
    finally:
        builtin_catalog.cache_clear()


def test_docs_table_is_in_sync_with_the_declarations() -> None:
    text = (ROOT / "docs" / "verify.md").read_text()
    start = text.index("<!-- probe-table:start")
    start = text.index("\n", start) + 1
    end = text.index("<!-- probe-table:end -->")
    assert text[start:end] == probe_table(), "run: python scripts/probe_table.py"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("PROBES = dict(a=1)\n", "PROBES must be a dict literal"),
        ("PROBES = {1: len}\n", "PROBES keys must be strings"),
        ("PROBES = {'a.b': len}\n", "probe 'a.b': no function in file"),
        ("def f():\n    pass\n\n\nPROBES = {'a': f, 'a': f}\n", "duplicate probe 'a'"),
        ("def f(:\n", "Python syntax error: invalid syntax"),
    ],
)
def test_scanner_reports_malformed_declarations(source: str, message: str) -> None:
    scan = scan_source(source, "checks/x.py")
    assert [p.message for p in scan.problems] == [message]


def test_probe_modules_import_only_the_stdlib() -> None:
    for path in sorted(catalog.FOLDER.glob("*.py")):
        module = path.stem
        if module not in _shipped():
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif isinstance(node, ast.ImportFrom) and node.module != "common":
                # only the shared helpers travel beside the probes (agent.install_shared)
                raise AssertionError(f"{module}.py imports .{node.module}, which the box lacks")
            for name in names:
                top = name.split(".")[0]
                # imported inside functions, optional: a missing one makes the check skipped
                lazy = top in ("yaml", "tomli", "torch", "importlib_metadata")
                assert top in sys.stdlib_module_names or top == "__future__" or lazy, (module, name)


def _shipped() -> set[str]:
    return {*scan_builtins().modules.values(), "common"}
