"""discover on this machine: proposals against facts/, and --write keeping hand-written text."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import yaml

from factbook.knowledge.kb import load_kb
from tests.helpers import cli

FACTS = """\
# Hand-written facts about this box.
facts:
  - id: hw.threads
    category: hardware
    title: CPU threads
    statement: The box has a hundred thousand threads (it does not).   # hand-written
    value: 100000
    status: verified
    target: local
    sources:
      - {note: hand-written}
    check:
      probe: cpu.threads
      args: {}
      expect: {eq: 100000}

  - id: hw.sockets
    category: hardware
    title: CPU sockets
    statement: At least one socket.
    status: verified
    target: local
    sources:
      - {note: hand-written}
    check: {probe: cpu.sockets, expect: {ge: 1}}

  - id: sw.os
    category: software
    title: OS
    statement: Some Linux.
    status: verified
    target: local
    sources:
      - {note: hand-written}
    check:
      probe: os.release
      expect: {all: [{path: pretty_name, exists: true}, {path: id, exists: true}]}
"""


def _kb(tmp_path: Path) -> Path:
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "box.yaml").write_text(FACTS)
    (tmp_path / "targets.yaml").write_text("targets:\n  local: {transport: local}\n")
    return tmp_path


def _proposals(root: Path) -> dict[str, dict]:
    code, out, _ = cli(root, "discover", "--target", "local", "--format", "json")
    assert code == 0
    return {p["key"]: p for p in json.loads(out)}


def test_proposals_against_existing_facts(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    found = _proposals(root)
    assert found["cpu.threads"]["kind"] == "changed"
    assert found["cpu.threads"]["fact_id"] == "hw.threads"
    assert found["cpu.threads"]["observed"] == os.cpu_count()
    assert found["cpu.threads"]["location"] == "facts/box.yaml:3"
    assert found["cpu.sockets"]["kind"] == "same"
    # A fact whose expectation reads the path inside all: [...] covers that observation.
    assert (found["os.release"]["kind"], found["os.release"]["fact_id"]) == ("same", "sw.os")
    new = found["mem.total_gib"]
    assert new["kind"] == "new" and new["fact_id"] == "discovered.local.mem.total_gib"
    assert new["new_fact"]["check"]["expect"]["approx"]["value"] == new["observed"]
    if not shutil.which("nvidia-smi"):
        assert found["gpu.count"]["kind"] == "error"
        assert found["gpu.count"]["reason"] == "nvidia-smi not found on target"
    _, out, err = cli(root, "discover", "--target", "local")
    assert "~ hw.threads (facts/box.yaml:3): value -> " in out
    assert "+ discovered.local.cpu.model = " in out and "--write applies" in err
    assert cli(root, "discover")[0] == 2
    assert cli(root, "discover", "--target", "nowhere")[0] == 2


def test_write_applies_without_touching_statements(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    code, _, err = cli(root, "discover", "--target", "local", "--write")
    assert code == 0 and "added" in err and "updated hw.threads" in err
    text = (root / "facts" / "box.yaml").read_text()
    assert "# Hand-written facts about this box." in text
    assert "(it does not).   # hand-written" in text
    kb = load_kb(root)  # strict: everything written is valid
    threads = kb.get("hw.threads")
    assert threads.value == os.cpu_count() and threads.status == "stale"
    assert threads.statement.startswith("The box has a hundred thousand threads")
    assert threads.sources[-1].run and "discover" in threads.sources[-1].run
    written = yaml.safe_load((root / "facts" / "discovered-local.yaml").read_text())["facts"]
    assert {f["id"] for f in written} >= {
        "discovered.local.cpu.model",
        "discovered.local.os.kernel",
    }
    # Discovered facts verify on the box they came from; a second discover proposes nothing.
    code, out, _ = cli(root, "verify", "discovered.*", "--target", "local", "--no-save")
    assert code == 0, out
    again = _proposals(root)
    assert not [p for p in again.values() if p["kind"] in ("new", "changed")]


LXC_MOUNTS = """\
/dev/mapper/pve-vm--129--disk--0 / ext4 rw,relatime 0 0
none /dev tmpfs rw,relatime,size=492k 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
/dev/mapper/pve-root /shared ext4 rw,relatime 0 0
tank/data /data zfs rw,xattr,posixacl 0 0
/dev/mapper/pve-root /etc/hostname ext4 rw,relatime 0 0
10.0.0.2:/export /mnt/nfs\\040share nfs4 rw,relatime 0 0
/dev/mapper/pve-root /shared ext4 rw,relatime 0 0
"""


def test_parse_mounts_keeps_real_disks_only() -> None:
    from factbook.verification.discover import _mount_observation, parse_mounts

    assert parse_mounts(LXC_MOUNTS) == ["/shared", "/data", "/mnt/nfs share"]
    obs = _mount_observation("/mnt/nfs share")
    assert obs.key == "disk.mnt_nfs_share.total_gib" and obs.args == {"path": "/mnt/nfs share"}
