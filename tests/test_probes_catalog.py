"""The shipped probe implementations agree with the catalog lint uses: names and arguments."""

from __future__ import annotations

import importlib
import inspect

from factbook.probes.catalog import BUILTIN_PROBES
from factbook.verify.bundle import PROBE_MODULES, builtin_index


def _implementations() -> dict:
    found = {}
    for module in PROBE_MODULES:
        for name, func in importlib.import_module(f"factbook.probes.{module}").PROBES.items():
            assert name not in found, f"{name} implemented twice"
            found[name] = func
    return found


def test_every_catalog_probe_is_implemented_and_nothing_else() -> None:
    assert set(_implementations()) == set(BUILTIN_PROBES)


def test_argument_names_match_the_catalog() -> None:
    for name, func in _implementations().items():
        spec = BUILTIN_PROBES[name]
        params = inspect.signature(func).parameters.values()
        required = tuple(p.name for p in params if p.default is inspect.Parameter.empty)
        optional = tuple(p.name for p in params if p.default is not inspect.Parameter.empty)
        assert required == spec.required, name
        assert optional == spec.optional, name


def test_probe_modules_import_only_the_stdlib() -> None:
    import ast
    import sys
    from pathlib import Path

    import factbook.probes

    folder = Path(factbook.probes.__file__).parent
    for module in (*PROBE_MODULES, "common"):
        tree = ast.parse((folder / f"{module}.py").read_text())
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


def test_index_maps_every_probe_to_its_module() -> None:
    assert set(builtin_index()) == set(BUILTIN_PROBES)
