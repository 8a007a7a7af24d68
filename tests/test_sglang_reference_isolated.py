"""Asking sglang never runs the knowledge base's code (serving/sglang/reference.py).

The harness ran as `python -c HARNESS` in the current folder, and `-c` puts that folder first
on sys.path: linting launch commands from a knowledge base holding a `json.py` imported and
ran it (the harness imports json before sglang). Here that file would leave a marker. The
interpreter is this one, which has no sglang: the answer is the one-line UsageError.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from factbook.errors import UsageError
from factbook.serving.sglang.reference import harness_argv, resolve_with_sglang

PLANTED = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\n"


def planted(folder: Path, name: str) -> Path:
    """A module `name` in `folder` that leaves a marker when imported; the marker's path."""
    marker = folder.parent / f"{name}-ran"
    (folder / f"{name}.py").write_text(PLANTED.format(marker=str(marker)))
    return marker


@pytest.mark.parametrize("name", ["json", "argparse", "warnings", "sglang"])
def test_asking_sglang_from_a_folder_holding_a_module_does_not_run_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    marker = planted(kb, name)
    monkeypatch.chdir(kb)
    monkeypatch.setenv("PYTHONPATH", str(kb))  # ignored too: -I
    monkeypatch.setenv("PYTHONSTARTUP", str(kb / f"{name}.py"))
    with pytest.raises(UsageError) as caught:
        resolve_with_sglang(sys.executable, [["--model-path", "m"]], timeout=60)
    assert not marker.exists()
    message = str(caught.value)
    assert "\n" not in message and message.startswith("cannot ask sglang in")
    assert "No module named 'sglang'" in message


def test_the_harness_itself_is_isolated_wherever_it_runs(tmp_path: Path) -> None:
    """Not only the folder it is run from: `-I` keeps any current folder off sys.path."""
    marker = planted(tmp_path, "json")
    proc = subprocess.run(
        harness_argv(sys.executable),
        input="{}",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode != 0 and "sglang" in proc.stderr
    assert not marker.exists()
