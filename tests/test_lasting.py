"""lasting.keep_for_exit: under the command line (cli.main, which leaves by os._exit) an
import's result and its remembered parses are kept for the exit to drop, not freed one
object at a time; a command run in-process (cli.run) keeps nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import kb_copy

from factbook.commands.cli import run
from factbook.knowledge import lasting

REPO = Path(__file__).resolve().parents[1]
DUMP = REPO / "tests" / "data" / "dumps" / "llamacpp-qwen72b-a100.md"
WATCH = (
    "import atexit, sys\n"
    "from factbook.knowledge import lasting\n"
    "atexit.register(lambda: print('kept', sorted(type(o).__name__ for o in lasting._KEPT),"
    " file=sys.stderr))\n"
    "from factbook.commands.cli import main\n"
    "main()\n"
)


def _kb(tmp_path: Path) -> Path:
    kb = kb_copy(tmp_path / "kb", ())
    (kb / "facts").mkdir()
    return kb


def test_the_command_line_keeps_an_imports_result_for_its_exit(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    argv = ["--root", str(kb), "import", str(DUMP), "--milestone", "4504", "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [sys.executable, "-c", WATCH, *argv], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert " new, " in proc.stdout
    assert "kept ['ImportResult', '_Memo']" in proc.stderr


def test_a_command_run_in_process_keeps_nothing(tmp_path: Path, capsys) -> None:
    kb = _kb(tmp_path)
    before = len(lasting._KEPT)
    assert run(["--root", str(kb), "import", str(DUMP), "--milestone", "4504", "--quiet"]) == 0
    assert " new, " in capsys.readouterr().out
    assert len(lasting._KEPT) == before == 0


def test_the_servers_keep_nothing(monkeypatch, tmp_path: Path) -> None:
    """`serve` and `mcp` answer many requests in one process: each turns keeping off first
    (here each stops at its first refusal, after that)."""
    monkeypatch.setattr(lasting, "_ON", [True])
    assert run(["--root", str(tmp_path), "mcp"]) == 2  # not a knowledge base
    assert lasting._ON == [False]
    lasting.turn_on()
    assert run(["--root", str(tmp_path), "serve", "--interval", "abc"]) == 2  # a bad interval
    assert lasting._ON == [False]
