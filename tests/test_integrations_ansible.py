"""`factbook export-ansible`: a facts.d file real Ansible reads (`ansible -m setup`), and the
documented gating playbook run by real ansible-playbook against localhost."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, cli, fact, make_kb

BIN = Path(sys.executable).parent
PLAYBOOK = REPO / "docs" / "examples" / "factbook-gate.yml"
needs_ansible = pytest.mark.skipif(
    not (BIN / "ansible").exists(), reason="ansible-core is not installed in this venv"
)


def _kb(root: Path, *, drift: bool) -> Path:
    facts = [
        fact("hw.cpu.threads", "cpu.threads", {"ge": 1}, target="local", unit="threads"),
        fact("hw.cpu.note", "cpu.threads", None, target="local", value="no check run"),
    ]
    facts[1].pop("check")
    if drift:
        facts.append(fact("hw.cpu.too_many", "cpu.threads", {"eq": 100000}, target="local"))
    kb = make_kb(root, facts)
    cli(kb, "verify", "-q")
    return kb


def _export(kb: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    code, _, err = cli(kb, "export-ansible", "--target", "local", "-o", str(dest))
    assert code == 0, err
    return dest / "factbook.fact"


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
        "ANSIBLE_LOCALHOST_WARNING": "False",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
        "ANSIBLE_NOCOLOR": "1",
    }


def test_document_shape(tmp_path: Path) -> None:
    kb = _kb(tmp_path / "kb", drift=True)
    path = _export(kb, tmp_path / "facts.d")
    assert not path.stat().st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    doc = json.loads(path.read_text())
    assert doc["target"] == "local" and doc["ok"] is False
    assert doc["summary"] == {
        "pass": 1, "drift": 1, "error": 0, "skipped": 0, "unverified": 1
    }  # fmt: skip
    threads = doc["facts"]["hw.cpu.threads"]
    assert threads["outcome"] == "pass" and threads["unit"] == "threads"
    assert threads["results"]["local"]["observed"] == os.cpu_count()
    assert threads["location"].startswith("facts/facts.yaml:")
    assert doc["facts"]["hw.cpu.note"] == {**doc["facts"]["hw.cpu.note"], "outcome": "unverified"}
    # another target's view holds no results
    code, out, _ = cli(kb, "export-ansible", "--target", "other")
    assert code == 0 and json.loads(out)["summary"]["unverified"] == 3
    code, _, err = cli(kb, "export-ansible", "--target", "nowhere")
    assert code == 2 and "unknown target 'nowhere'" in err


def test_output_folder_forms(tmp_path: Path) -> None:
    """-o DIR/ (missing: made) and -o EXISTING_DIR name a folder that gets factbook.fact; any
    other -o is the file itself, in a folder that must exist (issue 27.3)."""
    kb = _kb(tmp_path / "kb", drift=False)
    for arg, written in (
        (f"{tmp_path}/new/facts.d/", tmp_path / "new" / "facts.d" / "factbook.fact"),
        (str(tmp_path / "new"), tmp_path / "new" / "factbook.fact"),  # exists now
        (str(tmp_path / "mine.fact"), tmp_path / "mine.fact"),
    ):
        code, _, err = cli(kb, "export-ansible", "--target", "local", "-o", arg)
        assert code == 0, err
        assert written.is_file() and json.loads(written.read_text())["ok"] is True, arg
        assert f"wrote {written}" in err
    assert not (tmp_path / "new" / "facts.d").is_file()
    code, _, err = cli(kb, "export-ansible", "-o", str(tmp_path / "gone" / "x.fact"))
    assert code == 2 and "does not exist" in err and "Traceback" not in err
    assert not (tmp_path / "gone").exists()


@needs_ansible
def test_ansible_setup_reads_it_as_ansible_local(tmp_path: Path) -> None:
    kb = _kb(tmp_path / "kb", drift=False)
    fact_dir = _export(kb, tmp_path / "facts.d").parent
    proc = subprocess.run(
        [
            *(str(BIN / "ansible"), "localhost", "-i", "localhost,", "-c", "local", "-m", "setup"),
            *("-a", f"fact_path={fact_dir} filter=ansible_local"),
            *("-e", f"ansible_python_interpreter={sys.executable}"),
        ],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    answer = json.loads(proc.stdout[proc.stdout.index("{") :])
    local = answer["ansible_facts"]["ansible_local"]["factbook"]
    assert local["ok"] is True
    assert local["facts"]["hw.cpu.threads"]["results"]["local"]["observed"] == os.cpu_count()


@needs_ansible
@pytest.mark.parametrize("drift", [False, True])
def test_documented_playbook_gates_on_it(tmp_path: Path, drift: bool) -> None:
    kb = _kb(tmp_path / "kb", drift=drift)
    fact_dir = _export(kb, tmp_path / "facts.d").parent
    extra = {
        "factbook_hosts": "localhost",
        "factbook_fact_path": str(fact_dir),
        "factbook_required_facts": ["hw.cpu.threads"],
        "ansible_python_interpreter": sys.executable,
    }
    proc = subprocess.run(
        [
            *(str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local"),
            *("-e", json.dumps(extra), str(PLAYBOOK)),
        ],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=240,
    )
    if drift:
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "not ok: ['hw.cpu.too_many']" in proc.stdout
    else:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "failed=0" in proc.stdout


def test_playbook_in_the_docs_is_the_tested_file() -> None:
    page = (REPO / "docs" / "integrations.md").read_text()
    assert PLAYBOOK.read_text().strip() in page
    assert "factbook export-ansible --target" in page
