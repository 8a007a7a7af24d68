"""Tool calls run in threads; every module a tool imports when first called is imported by
the Toolbox before any call (mcp/tools.py `_IMPORTED_BY_TOOLS`). Two pipelined writes, each
importing factbook.dumps.capture.propose for the first time in its own thread, met Python's
import deadlock detection in CI (`_DeadlockError`, an internal error for one of them)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from helpers import REPO

from factbook.integrations.mcp import tools

TOOLS_FILE = Path(tools.__file__)


def _imported_inside_functions() -> set[str]:
    """The factbook modules tools.py imports inside its functions."""
    tree = ast.parse(TOOLS_FILE.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.ImportFrom) and inner.module:
                if inner.module == "factbook":  # `from factbook import api`
                    found |= {f"factbook.{alias.name}" for alias in inner.names}
                elif inner.module.startswith("factbook."):
                    found.add(inner.module)
            elif isinstance(inner, ast.Import):
                found |= {a.name for a in inner.names if a.name.startswith("factbook.")}
    return found


def test_every_module_a_tool_imports_late_is_imported_first() -> None:
    late = _imported_inside_functions()
    assert late, "tools.py imports nothing inside its functions: the test reads the wrong file"
    missing = late - set(tools._IMPORTED_BY_TOOLS)
    assert not missing, f"add to _IMPORTED_BY_TOOLS: {sorted(missing)}"


def test_a_new_toolbox_has_imported_them_all(tmp_path: Path) -> None:
    """In a fresh interpreter (this one has imported most of factbook already)."""
    root = tmp_path / "kb"
    (root / "facts").mkdir(parents=True)
    code = (
        "import sys\n"
        "from factbook.integrations.mcp.tools import Toolbox, _IMPORTED_BY_TOOLS\n"
        f"Toolbox({str(root)!r})\n"
        "print(sorted(m for m in _IMPORTED_BY_TOOLS if m not in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", done.stdout
