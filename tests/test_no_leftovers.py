"""The suite leaves no process behind (issue 27): conftest.py marks every child with
FACTBOOK_TEST_SESSION and fails the session if one survives, a daemon that left our process
tree included. Checked here on a real nested pytest session that leaks one on purpose."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from helpers import REPO, pids_with_cmdline, wait_no_cmdline

LEAKY = """
import subprocess, sys

def test_leaks_a_daemon():
    # in its own session and never waited for: it outlives pytest, as a slurmstepd did
    subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "MARK"], start_new_session=True
    )
"""


def _session(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_inner.py").write_text(body, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "FACTBOOK_TEST_SESSION"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "tests"), str(REPO / "src")])
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider"]
    argv += ["--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_inner.py")]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def test_a_surviving_process_fails_the_session(tmp_path: Path) -> None:
    mark = f"fbleak-{uuid.uuid4().hex}"
    done = _session(tmp_path, LEAKY.replace("MARK", mark))
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "1 passed" in out  # the test itself passed: the session end failed it
    assert "process(es) the suite started survived it (now killed)" in out, out
    assert "time.sleep(60)" in out and mark in out  # which one, by its command line
    assert wait_no_cmdline(mark, 5.0) == [] and pids_with_cmdline(mark) == []


def test_a_clean_session_passes(tmp_path: Path) -> None:
    done = _session(tmp_path, "def test_nothing():\n    assert True\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "survived" not in done.stdout


SPAWNS = """
import multiprocessing

def test_spawns_a_process():
    # a spawn context starts multiprocessing's resource tracker, which lives until pytest ends
    proc = multiprocessing.get_context("spawn").Process(target=print)
    proc.start()
    proc.join()
    assert proc.exitcode == 0
"""


def test_the_resource_tracker_of_a_spawn_context_is_no_leftover(tmp_path: Path) -> None:
    """It exits with the pytest process, just after the check: FACTBOOK_TEST_WORKERS=0 (one
    process for the whole suite) failed on it, and waited 5 s for it first."""
    done = _session(tmp_path, SPAWNS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "survived" not in done.stdout and "1 passed" in done.stdout
