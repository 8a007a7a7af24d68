"""A proposal is decided once, however many people accept or reject it at the same moment.

`proposals accept` read the proposal, applied it, wrote the facts, then filed it: two at
once could both read it before either filed it, write its facts twice, and the second
stopped at the file already moved. Decisions now take one lock from reading to filing, so
every other process finds it decided (no pending proposal) and the facts hold it once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers import REPO

from factbook.api import lint
from factbook.dumps.capture.review import NewFact, submit

PROCESSES = 6


def _kb(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    shutil.copytree(REPO / "facts", kb / "facts")
    shutil.copytree(REPO / "checks", kb / "checks")
    for name in ("milestones.yaml", "targets.yaml"):
        shutil.copy(REPO / name, kb / name)
    return kb


def _at_once(kb: Path, *argv: str) -> list[subprocess.CompletedProcess[str]]:
    """PROCESSES runs of `factbook ARGV`, started together (each waits on one pipe)."""
    read, write = os.pipe()
    script = (
        "import os, sys; os.read(int(sys.argv[1]), 1); sys.argv[1:2] = []\n"
        "from factbook.commands.cli import main; main()"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(read), "--root", str(kb), *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            pass_fds=(read,),
        )
        for _ in range(PROCESSES)
    ]
    os.write(write, b"x" * PROCESSES)  # all start
    os.close(write)
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=120)
        out.append(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr))
    os.close(read)
    return out


def _pending(kb: Path, fact_id: str) -> str:
    """A proposal of a new hardware fact `fact_id`, waiting for review; its id."""
    fact = {
        "id": fact_id,
        "category": "hardware",
        "title": f"CPU threads ({fact_id})",
        "statement": "The box showed its CPU threads.",
        "status": "assumed",
        "sources": [{"seed": "review.txt"}],
    }
    return submit(kb, NewFact(fact), origin="test", reason="seen").pid


def test_accepting_one_proposal_at_once_from_many_processes_applies_it_once(tmp_path) -> None:
    kb = _kb(tmp_path)
    pid = _pending(kb, "hw.cpu.threads_seen")
    runs = _at_once(kb, "proposals", "accept", pid)
    codes = sorted(run.returncode for run in runs)
    assert codes == [0] + [2] * (PROCESSES - 1), [(r.returncode, r.stderr) for r in runs]
    for run in runs:
        assert "Traceback" not in run.stderr
        if run.returncode:
            assert f"no pending proposal '{pid}'" in run.stderr, run.stderr
    text = (kb / "facts" / "hardware.yaml").read_text()
    assert text.count("id: hw.cpu.threads_seen") == 1
    assert (kb / "proposals" / "accepted" / f"{pid}.yaml").is_file()
    assert not (kb / "proposals" / f"{pid}.yaml").exists()
    assert lint(kb) == []


def test_rejecting_one_proposal_at_once_from_many_processes_files_it_once(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    pid = _pending(kb, "hw.cpu.threads_other")
    runs = _at_once(kb, "proposals", "reject", pid, "--why", "no")
    assert sorted(run.returncode for run in runs) == [0] + [2] * (PROCESSES - 1)
    decided = [p.name for p in (kb / "proposals").rglob(f"{pid}.yaml")]
    assert decided == [f"{pid}.yaml"] and (kb / "proposals" / "rejected" / f"{pid}.yaml").is_file()


def test_a_proposal_that_cannot_be_filed_is_not_applied_through_the_api(tmp_path: Path) -> None:
    """review.accept (what MCP and the Python API call) refuses before writing a fact when
    the decided proposal could not be filed: it stays pending and facts/ is untouched."""
    import pytest

    from factbook.dumps.capture.review import accept, reject
    from factbook.errors import InputError

    kb = _kb(tmp_path)
    pid = _pending(kb, "hw.cpu.threads_unfiled")
    before = (kb / "facts" / "hardware.yaml").read_bytes()
    (kb / "proposals" / "accepted").write_text("a file where the folder goes\n")
    (kb / "proposals" / "rejected" / f"{pid}.yaml").mkdir(parents=True)
    for decide, folder in ((accept, "accepted"), (reject, "rejected")):
        with pytest.raises(InputError, match=f"proposals/{folder}"):
            decide(kb, pid)
        assert (kb / "facts" / "hardware.yaml").read_bytes() == before
        assert (kb / "proposals" / f"{pid}.yaml").is_file()  # still pending
