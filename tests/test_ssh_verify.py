"""`factbook verify` end to end over SSH: a real box behind a real jump host (tests/sshd.py)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml
from helpers import cli, fact, make_kb, pids_with_cmdline, target_entries, wait_no_cmdline
from sshd import Lab

pytestmark = pytest.mark.ssh
OK = {"path": "exit_code", "eq": 0}

BIG_PROBE = """
def big(size):
    return "z" * size

PROBES = {"test.big": big}
"""


def forwards_to_box(lab: Lab) -> int:
    needle = f"target {lab.box.host} port {lab.box.port}"
    return sum(needle in line for line in lab.jump.log_text().splitlines())


def results(out: str) -> dict[str, dict]:
    return {r["fact"]: r for r in json.loads(out)["results"]}


def mixed_kb(root: Path, targets: dict | None = None, target: str | None = None) -> Path:
    """One fact of each kind the benchmark mixes: file hash, command, package, JSON value."""
    data = root / "data"
    data.mkdir(parents=True)
    (data / "blob.bin").write_bytes(b"factbook" * 1000)
    (data / "conf.json").write_text(json.dumps({"model": {"tp": 8, "name": "Kimi-K2.5"}}))
    where = {"target": target} if target else {}
    facts = [
        fact(
            "t.hash",
            "file.sha256",
            {"eq": hashlib.sha256(b"factbook" * 1000).hexdigest()},
            args={"path": str(data / "blob.bin")},
            **where,
        ),
        fact(
            "t.cmd", "cmd", {"path": "stdout", "eq": "hi\n"}, args={"argv": ["echo", "hi"]}, **where
        ),
        fact("t.pkg", "pkg.version", {"version": ">=1"}, args={"name": "pip"}, **where),
        fact(
            "t.json",
            "config.value",
            {"eq": 8},
            args={"path": str(data / "conf.json"), "key": "model.tp"},
            **where,
        ),
    ]
    return make_kb(root, facts, targets=targets or {"targets": {}})


def test_verify_url_through_the_jump(ssh_lab: Lab, ssh_home: Path, tmp_path: Path) -> None:
    root = mixed_kb(tmp_path / "kb")
    fwd, box_logins = forwards_to_box(ssh_lab), ssh_lab.box.log_text().count("Accepted publickey")
    code, out, err = cli(root, "verify", "--target", ssh_lab.box_url(), "--format", "json")
    assert code == 0, err
    got = results(out)
    assert {k: r["outcome"] for k, r in got.items()} == dict.fromkeys(
        ["t.hash", "t.cmd", "t.pkg", "t.json"], "pass"
    )
    # one connection (one login on the box), through the jump, for the whole run
    assert forwards_to_box(ssh_lab) == fwd + 1
    assert ssh_lab.box.log_text().count("Accepted publickey") == box_logins + 1
    assert list((root / "results").rglob("*.json")) or list((root / "results").rglob("*"))


def test_verify_inventory_target_with_a_jump_name(
    ssh_lab: Lab, ssh_targets: dict, tmp_path: Path
) -> None:
    inventory = target_entries(ssh_targets)
    root = mixed_kb(tmp_path / "kb", {"targets": inventory}, target="box")
    fwd = forwards_to_box(ssh_lab)
    code, out, err = cli(root, "verify", "--target", "box", "--format", "json", "--no-save")
    assert code == 0, err
    assert {r["outcome"] for r in results(out).values()} == {"pass"}
    assert forwards_to_box(ssh_lab) == fwd + 1


def test_hanging_check_is_killed_on_the_box(ssh_lab: Lab, ssh_home: Path, tmp_path: Path) -> None:
    marker = f"fbmark-{uuid.uuid4().hex}"
    sleeper = ["python3", "-c", "import time; time.sleep(1000)", marker]
    root = make_kb(
        tmp_path / "kb",
        [
            fact(
                "t.hang", "cmd", {"path": "exit_code", "eq": 0}, args={"argv": sleeper}, timeout=1
            ),
            fact("t.quick", "cmd", {"path": "exit_code", "eq": 0}, args={"argv": ["true"]}),
        ],
        targets={"targets": {}},
    )
    started = time.monotonic()
    code, out, _ = cli(root, "verify", "--target", ssh_lab.box_url(), "--format", "json")
    assert time.monotonic() - started < 15
    got = results(out)
    assert code == 3
    assert got["t.quick"]["outcome"] == "pass"
    assert got["t.hang"]["outcome"] == "error" and "timed out" in got["t.hang"]["reason"]
    assert wait_no_cmdline(marker, 3) == []


def test_output_over_4_mib_through_the_jump(ssh_lab: Lab, ssh_home: Path, tmp_path: Path):
    size = 5 << 20
    root = make_kb(
        tmp_path / "kb",
        [
            fact("t.big", "test.big", {"length": size}, args={"size": size}),
            fact(
                "t.flood",
                "cmd",
                {"path": "exit_code", "eq": 0},
                args={"argv": ["python3", "-c", "print('f' * (6 << 20))"]},
            ),
        ],
        targets={"targets": {}},
        checks={"big.py": BIG_PROBE},
    )
    code, out, err = cli(root, "verify", "--target", ssh_lab.box_url(), "--format", "json")
    assert code == 0, err
    assert {r["outcome"] for r in results(out).values()} == {"pass"}


def test_unknown_host_key_refused_then_accepted(ssh_lab: Lab, ssh_home: Path, tmp_path: Path):
    root = mixed_kb(tmp_path / "kb")
    known = ssh_home / ".ssh" / "known_hosts"
    known.write_text(ssh_lab.jump.known_hosts_line() + "\n")
    code, out, err = cli(root, "verify", "--target", ssh_lab.box_url(), "--format", "json")
    assert code == 3
    reasons = {r["reason"].rsplit(" [", 1)[0] for r in results(out).values()}
    assert len(reasons) == 1  # one connection attempt, its message on every fact
    reason = reasons.pop()
    assert f"host key for {ssh_lab.box.host}:{ssh_lab.box.port}" in reason
    assert "--accept-new-host-keys" in reason
    code, out, err = cli(
        root, "verify", "--target", ssh_lab.box_url(), "--accept-new-host-keys", "--no-save"
    )
    assert code == 0, err
    assert ssh_lab.box.known_hosts_line() in known.read_text()


def test_changed_host_key_refused_even_with_accept_new(
    ssh_lab: Lab, ssh_home: Path, tmp_path: Path
) -> None:
    root = mixed_kb(tmp_path / "kb")
    known = ssh_home / ".ssh" / "known_hosts"
    # the jump's key recorded for the box: a different, valid ed25519 key
    wrong = ssh_lab.jump.host_key_pub.split()[:2]
    known.write_text(
        f"{ssh_lab.jump.known_hosts_line()}\n{ssh_lab.box.known_hosts_name} {' '.join(wrong)}\n"
    )
    argv = ["verify", "--target", ssh_lab.box_url(), "--accept-new-host-keys", "--format", "json"]
    code, out, _ = cli(root, *argv, "--no-save")
    assert code == 3
    assert all("CHANGED" in r["reason"] for r in results(out).values())


def test_unreachable_and_auth_failure_exit_3(ssh_lab: Lab, ssh_home: Path, tmp_path: Path):
    root = mixed_kb(tmp_path / "kb")
    url = f"ssh://{ssh_lab.user}@{ssh_lab.box.host}:1?jump={ssh_lab.jump_spec}"
    code, out, _ = cli(root, "verify", "--target", url, "--format", "json", "--no-save")
    assert code == 3
    assert all("unreachable from jump host" in r["reason"] for r in results(out).values())
    url = ssh_lab.box_url().replace(f"{ssh_lab.user}@", "nobody@", 1)
    code, out, _ = cli(root, "verify", "--target", url, "--format", "json", "--no-save")
    assert code == 3
    reason = next(iter(results(out).values()))["reason"]
    assert f"authentication failed for nobody@{ssh_lab.box.host}:{ssh_lab.box.port}" in reason


def test_connection_killed_mid_run(ssh_lab: Lab, ssh_home: Path, tmp_path: Path) -> None:
    """The jump dies while a check runs: results so far are kept, the rest error, exit 3."""
    marker = f"fbmark-{uuid.uuid4().hex}"
    sleeper = ["python3", "-c", "import time; time.sleep(1000)", marker]
    root = make_kb(
        tmp_path / "kb",
        [
            fact(
                "t.slow", "cmd", {"path": "exit_code", "eq": 0}, args={"argv": sleeper}, timeout=60
            ),
            fact("t.quick", "cmd", {"path": "stdout", "eq": "q\n"}, args={"argv": ["echo", "q"]}),
        ],
        targets={"targets": {}},
    )
    argv = [
        sys.executable,
        "-c",
        "from factbook.commands.cli import main; main()",
        "--root",
        str(root),
    ]
    argv += ["verify", "--target", ssh_lab.box_url(), "--format", "json", "--no-save"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 15
        while not pids_with_cmdline(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pids_with_cmdline(marker), "the slow check never started on the box"
        time.sleep(0.3)  # let the quick result stream back first
        assert ssh_lab.jump.kill_sessions()
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, err
    got = results(out)
    assert got["t.quick"]["outcome"] == "pass"
    assert got["t.slow"]["outcome"] == "error"
    assert "connection dropped" in got["t.slow"]["reason"]
    assert wait_no_cmdline(marker) == []


def test_targets_yaml_written_by_hand_round_trips(ssh_targets: dict, tmp_path: Path) -> None:
    """The inventory keys used above are the documented ones (lint accepts them)."""
    inventory = {"box": {"host": "h", "port": 2222, "user": "u", "jump": ["jump"]}, "jump": {}}
    inventory["jump"] = {"host": "j", "identity_file": str(tmp_path / "k")}
    root = make_kb(tmp_path / "kb", [fact("t.x", "cmd", args={"argv": ["true"]})])
    (root / "targets.yaml").write_text(yaml.safe_dump({"targets": inventory}))
    code, out, err = cli(root, "lint")
    assert code == 0, out + err


def test_fleet_of_two_targets_in_parallel(ssh_lab: Lab, ssh_targets: dict, tmp_path: Path) -> None:
    """`--target box,jump`: each target gets its own connection and agent, at the same time."""
    inventory = target_entries(ssh_targets)
    root = mixed_kb(tmp_path / "kb", {"targets": inventory})
    code, out, err = cli(root, "verify", "--target", "box,jump", "--format", "json", "--no-save")
    assert code == 0, err
    got = json.loads(out)["results"]
    assert sorted({r["target"] for r in got}) == ["box", "jump"]
    assert len(got) == 8 and {r["outcome"] for r in got} == {"pass"}
