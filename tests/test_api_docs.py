"""docs/api.md's examples run, in order, in a knowledge base made by `factbook init` (issue
14.5): the documented API is the one that works."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from helpers import REPO

from factbook.knowledge.starter import create_kb

API_DOC = REPO / "docs" / "api.md"


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line, code) of each ```python block."""
    out = []
    for match in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
        out.append((text[: match.start()].count("\n") + 2, match.group(1)))
    return out


def test_api_doc_examples_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = create_kb(tmp_path / "kb").root
    blocks = python_blocks(API_DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 5
    namespace: dict[str, object] = {}
    cwd = Path.cwd()
    os.chdir(root / "runbooks")  # load() searches upwards
    try:
        for line, code in blocks:
            exec(compile(code, f"{API_DOC}:{line}", "exec"), namespace)
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "refused: refusing to verify on local" in out
    assert "exit code 0" in out
    assert not (root / "results" / "runs").exists()  # every example ran with save=False


def test_public_names() -> None:
    import factbook
    from factbook import api

    for name in ("load", "verify", "status", "lint", "plan", "run_plan"):
        assert callable(getattr(factbook, name)), name
    assert factbook.load is api.load


def test_api_functions_are_not_shadowed_by_subpackages() -> None:
    """Importing every subpackage leaves `factbook.verify` and `factbook.status` the API's
    plain functions (no package shares their names)."""
    import importlib
    import inspect

    import factbook
    from factbook import api

    for path in sorted((REPO / "src" / "factbook").rglob("__init__.py")):
        parts = path.relative_to(REPO / "src").parent.parts
        importlib.import_module(".".join(parts))
    for name in factbook.__all__:
        if name != "__version__":
            assert getattr(factbook, name) is getattr(api, name)
            assert inspect.isfunction(getattr(factbook, name))


def test_api_doc_examples_type_check(tmp_path: Path) -> None:
    """docs/api.md's examples, as one module, pass mypy against the package as written."""
    import subprocess
    import sys

    pytest.importorskip("mypy")
    code = "\n".join(block for _, block in python_blocks(API_DOC.read_text(encoding="utf-8")))
    script = tmp_path / "api_examples.py"
    script.write_text(code, encoding="utf-8")
    argv = [sys.executable, "-m", "mypy", "--follow-imports=silent", "--ignore-missing-imports"]
    argv += ["--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(script)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    broken = tmp_path / "broken.py"
    broken.write_text("import factbook\nfactbook.verify(1, 2, 3).nothing\n", encoding="utf-8")
    done = subprocess.run([*argv[:-1], str(broken)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "broken.py:2" in done.stdout  # the check can fail
