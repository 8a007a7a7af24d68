"""A verify on the wrong box says so: a target's declared identity is checked before the run,
a mismatch refuses it (exit 3) and nothing is written to results/ (issue 14.6)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import REPO, cli, fact, kb_copy, make_kb

import factbook
from factbook.errors import WrongTarget

HOSTNAME = Path("/proc/sys/kernel/hostname").read_text().strip()
MACHINE_ID = Path("/etc/machine-id").read_text().strip() if Path("/etc/machine-id").exists() else ""


def _kb(tmp_path: Path, identity: dict, extra_facts: list[dict] | None = None) -> Path:
    targets = {"targets": {"box": {"transport": "local", "identity": identity}}}
    facts = [fact("t.python", "python.version", {"exists": True}, target="box")]
    return make_kb(tmp_path / "kb", facts + (extra_facts or []), targets=targets)


def _digest(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_wrong_hostname_is_refused_and_nothing_written(tmp_path: Path) -> None:
    root = _kb(tmp_path, {"hostname": HOSTNAME + "-not"})
    code, out, err = cli(root, "verify", "--target", "box")
    assert code == 3
    assert "refusing to verify on box" in err and "hostname" in err
    assert HOSTNAME in err  # what was observed
    assert "Traceback" not in err and out == ""
    assert not (root / "results").exists()


def test_matching_identity_runs(tmp_path: Path) -> None:
    identity = {"hostname": HOSTNAME, **({"machine_id": MACHINE_ID} if MACHINE_ID else {})}
    root = _kb(tmp_path, identity)
    code, out, err = cli(root, "verify", "--target", "box")
    assert code == 0, err
    assert "1 passed" in out
    assert (root / "results" / "latest.json").exists()


def test_identity_facts_must_pass(tmp_path: Path) -> None:
    never = fact("id.never", "python.version", {"eq": "0.0.0-never"}, target="box")
    root = _kb(tmp_path, {"facts": ["id.never"]}, [never])
    code, _out, err = cli(root, "verify", "--target", "box", "t.python")
    assert code == 3
    assert "id.never: drift" in err
    assert not (root / "results").exists()
    # --skip-identity is the explicit way past it
    code, _out, err = cli(root, "verify", "--target", "box", "t.python", "--skip-identity")
    assert code == 0, err


def test_absent_gpu_uuid_is_refused(tmp_path: Path) -> None:
    root = _kb(tmp_path, {"gpu_uuids": ["GPU-00000000-0000-0000-0000-factbooktest"]})
    code, _out, err = cli(root, "verify", "--target", "box")
    assert code == 3
    assert "gpu_uuids" in err


def test_unknown_identity_fact_is_a_usage_error(tmp_path: Path) -> None:
    root = _kb(tmp_path, {"facts": ["no.such.fact"]})
    code, _out, err = cli(root, "verify", "--target", "box")
    assert code == 2
    assert "identity fact 'no.such.fact' is not a known fact" in err


def test_identity_keys_are_linted(tmp_path: Path) -> None:
    root = _kb(tmp_path, {"hostnme": "x"})
    code, out, _err = cli(root, "lint")
    assert code == 2
    assert "targets.yaml:" in out and "unknown key 'hostnme'" in out


def test_api_raises_wrong_target(tmp_path: Path) -> None:
    kb = factbook.load(_kb(tmp_path, {"hostname": HOSTNAME + "-not"}))
    with pytest.raises(WrongTarget):
        factbook.verify(kb, ["box"])


def _is_h200() -> bool:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    out = subprocess.run([smi, "-L"], capture_output=True, text=True, check=False).stdout
    return "H200" in out


def test_shipped_h200_target_refuses_other_boxes(tmp_path: Path) -> None:
    """Issue 14.6 as reported: `verify-facts --target h200` on a CPU laptop rewrote
    results/latest.json. On a copy of the shipped knowledge base (results included)."""
    root = kb_copy(tmp_path / "kb")
    shutil.copytree(REPO / "results", root / "results")
    before = _digest(root / "results")
    code, _out, err = cli(root, "verify", "--target", "h200")
    if _is_h200():  # the box it names: the run goes ahead
        assert code in (0, 1), err
        return
    assert code == 3, err
    assert "refusing to verify on h200" in err
    assert _digest(root / "results") == before
