"""docs/api.md's examples run, in order, in a knowledge base made by `factbook init` (issue
14.5): the documented API is the one that works."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from helpers import REPO

from factbook.starter import create_kb

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
