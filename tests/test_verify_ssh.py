"""verify through the real loopback sshd lab: a box reachable only through a jump host."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from tests.helpers import cli, fact, make_kb, pids_with_cmdline, target_entries

pytestmark = pytest.mark.ssh


def _facts() -> list[dict]:
    return [
        fact("box.threads", "cpu.threads", {"ge": 1}),
        fact("box.hostname", "cmd", {"path": "exit_code", "eq": 0}, args={"argv": ["hostname"]}),
        fact("box.wrong", "cpu.threads", {"eq": 100000}),
        fact("box.hang", "cmd", None, args={"argv": ["sleep", "765.4321"]}, timeout=1),
    ]


def test_verify_a_url_target_through_the_jump(ssh_lab, ssh_home: Path, tmp_path: Path) -> None:
    root = make_kb(tmp_path / "kb", _facts())
    started = time.monotonic()
    code, out, err = cli(
        root,
        "verify",
        "--target",
        ssh_lab.box_url(),
        "--known-hosts",
        str(ssh_home / ".ssh" / "known_hosts"),
        "--format",
        "json",
    )
    elapsed = time.monotonic() - started
    data = json.loads(out)
    outcomes = {r["fact"]: r["outcome"] for r in data["results"]}
    assert outcomes == {
        "box.threads": "pass",
        "box.hostname": "pass",
        "box.wrong": "drift",
        "box.hang": "error",
    }, err
    assert code == 3
    hang = next(r for r in data["results"] if r["fact"] == "box.hang")
    assert "timed out after 1.0s" in hang["reason"]
    assert pids_with_cmdline("sleep 765.4321") == []  # the lab's box is this machine
    print(f"4 checks through a jump: {elapsed:.2f}s")


def test_verify_named_targets_from_targets_yaml(ssh_lab, ssh_targets, tmp_path: Path) -> None:
    targets = {"targets": target_entries(ssh_targets)}
    facts = [
        fact("box.threads", "cpu.threads", {"ge": 1}, target="box"),
        fact("jump.threads", "cpu.threads", {"ge": 1}, target="jump"),
    ]
    root = make_kb(tmp_path / "kb", facts, targets=targets)
    (root / "targets.yaml").write_text(yaml.safe_dump(targets))
    code, out, err = cli(root, "verify", "--target", "all", "--format", "json", "--no-save")
    assert code == 0, out + err
    assert {(r["fact"], r["target"]) for r in json.loads(out)["results"]} == {
        ("box.threads", "box"),
        ("jump.threads", "jump"),
    }


def test_unknown_host_key_errors_every_check(ssh_lab, ssh_home: Path, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    root = make_kb(tmp_path / "kb", _facts()[:2])
    code, out, _ = cli(
        root, "verify", "--target", ssh_lab.box_url(), "--known-hosts", str(empty), "--no-save"
    )
    assert code == 3
    assert out.count("ERROR") == 2


def test_dropped_connection_keeps_received_results(ssh_lab, ssh_home: Path, tmp_path: Path) -> None:
    """sshd sessions killed mid-run: the quick result stays, the hanging check errors, and
    nothing is left running on the box."""
    import threading

    marker = "654.3219"
    facts = [
        fact("box.quick", "cpu.threads", {"ge": 1}),
        fact("box.slow", "cmd", None, args={"argv": ["sleep", marker]}, timeout=120),
    ]
    root = make_kb(tmp_path / "kb", facts)
    result: dict = {}

    def run() -> None:
        result["out"] = cli(
            root, "verify", "--target", ssh_lab.box_url(), "--format", "json", "--no-save"
        )

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 20
    while not pids_with_cmdline(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_with_cmdline(f"sleep {marker}"), "the slow check never started"
    time.sleep(0.3)  # let the quick result travel
    ssh_lab.box.kill_sessions()
    thread.join(60)
    assert not thread.is_alive()
    code, out, _ = result["out"]
    outcomes = {r["fact"]: r for r in json.loads(out)["results"]}
    assert outcomes["box.quick"]["outcome"] == "pass"
    assert outcomes["box.slow"]["outcome"] == "error"
    assert "after 1 of 2 results" in outcomes["box.slow"]["reason"]
    assert code == 3
    deadline = time.monotonic() + 5
    while pids_with_cmdline(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_with_cmdline(f"sleep {marker}") == []
