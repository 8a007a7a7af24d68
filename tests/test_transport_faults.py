"""Faults per transport (issue 13.5): the same error class, wording and exit code whatever
carries the agent: paramiko, the system ssh, an exec prefix behind either, a local nsenter.

Each test runs `factbook verify` against the real sshd lab (tests/sshd.py) and real namespaces.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from helpers import cli, fact, free_port, make_kb, pids_with_cmdline
from sshd import Lab
from transport_lab import SSH_KINDS, inventory

pytestmark = pytest.mark.ssh
ALL_KINDS = (*SSH_KINDS, "exec")
OK = {"path": "exit_code", "eq": 0}


def _kb(root: Path, targets: dict, facts: list[dict] | None = None) -> Path:
    facts = facts or [
        fact("t.cmd", "cmd", {"path": "stdout", "eq": "hi\n"}, args={"argv": ["echo", "hi"]}),
        fact("t.pkg", "pkg.version", {"version": ">=1"}, args={"name": "pip"}),
    ]
    return make_kb(root, facts, targets=targets)


def _verify(root: Path, target: str, *extra: str) -> tuple[int, dict[str, dict]]:
    argv = ["verify", "--target", target, "--format", "json", "--no-save", *extra]
    code, out, err = cli(root, *argv)
    assert out, err
    return code, {r["fact"]: r for r in json.loads(out)["results"]}


def _wait_gone(marker: str, seconds: float = 10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := pids_with_cmdline(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _lab_or_container(kind: str, request: pytest.FixtureRequest) -> int | None:
    return request.getfixturevalue("container_pid") if kind == "exec" else None


@pytest.mark.parametrize("kind", SSH_KINDS)
def test_every_transport_passes(kind: str, ssh_lab: Lab, ssh_home: Path, tmp_path: Path) -> None:
    targets, name = inventory(kind, ssh_lab, ssh_home)
    code, got = _verify(_kb(tmp_path / "kb", targets), name)
    assert code == 0, got
    assert {r["outcome"] for r in got.values()} == {"pass"}


@pytest.mark.parametrize("kind", SSH_KINDS)
def test_unreachable_box(kind: str, ssh_lab: Lab, ssh_home: Path, tmp_path: Path) -> None:
    targets, name = inventory(kind, ssh_lab, ssh_home, port=free_port())
    code, got = _verify(_kb(tmp_path / "kb", targets), name)
    assert code == 3
    for record in got.values():
        assert record["outcome"] == "error"
        assert "box (" in record["reason"] and "is unreachable" in record["reason"]


def test_unreachable_container(ssh_home: Path, tmp_path: Path) -> None:
    """A container that is not there is unreachable, like a box that does not answer."""
    targets = {"targets": {"ct": {"transport": "exec", "exec": ["nsenter", "-t", "999999", "-a"]}}}
    code, got = _verify(_kb(tmp_path / "kb", targets), "ct")
    assert code == 3
    for record in got.values():
        assert "ct (nsenter -t 999999 -a) is unreachable" in record["reason"]
        assert "/proc/999999" in record["reason"]  # what nsenter said


@pytest.mark.parametrize("kind", SSH_KINDS)
def test_auth_failure(kind: str, ssh_lab: Lab, ssh_home: Path, tmp_path: Path) -> None:
    targets, name = inventory(kind, ssh_lab, ssh_home, user="nobody")
    code, got = _verify(_kb(tmp_path / "kb", targets), name)
    assert code == 3
    for record in got.values():
        assert "authentication failed for" in record["reason"]
        assert "nobody@" in record["reason"]


@pytest.mark.parametrize("accept_new", [False, True])
@pytest.mark.parametrize("kind", SSH_KINDS)
def test_changed_host_key_refused(
    kind: str, accept_new: bool, ssh_lab: Lab, ssh_home: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    key_type, blob = other.with_suffix(".pub").read_text().split()[:2]
    known = ssh_home / ".ssh" / "known_hosts"
    fake = f"{ssh_lab.box.known_hosts_name} {key_type} {blob}"
    before = f"{ssh_lab.jump.known_hosts_line()}\n{fake}\n"
    known.write_text(before)
    targets, name = inventory(kind, ssh_lab, ssh_home)
    extra = ["--accept-new-host-keys"] if accept_new else []
    code, got = _verify(_kb(tmp_path / "kb", targets), name, *extra)
    assert code == 3
    for record in got.values():
        assert "host key for" in record["reason"] and "CHANGED" in record["reason"]
        assert "Changed keys are never accepted" in record["reason"]
    assert known.read_text() == before


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_hung_check_killed_with_nothing_left(
    kind: str, ssh_lab: Lab, ssh_home: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    marker = f"fbmark-{uuid.uuid4().hex}"
    targets, name = inventory(kind, ssh_lab, ssh_home, _lab_or_container(kind, request))
    hang = ["sh", "-c", f"sleep 1000 & python3 -c 'import time; time.sleep(1000)' {marker}"]
    facts = [
        fact("t.hang", "cmd", OK, args={"argv": hang}, timeout=1),
        fact("t.quick", "cmd", OK, args={"argv": ["true"]}),
    ]
    started = time.monotonic()
    code, got = _verify(_kb(tmp_path / "kb", targets, facts), name)
    assert time.monotonic() - started < 20
    assert code == 3
    assert got["t.quick"]["outcome"] == "pass"
    assert got["t.hang"]["outcome"] == "error" and "timed out" in got["t.hang"]["reason"]
    assert _wait_gone(marker, 3) == []


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_pipe_dies_mid_run(
    kind: str, ssh_lab: Lab, ssh_home: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The connection (or the exec carrier) dies while a check runs: earlier results are kept,
    the rest error as a dropped connection, exit 3, and nothing is left on the box."""
    marker = f"fbmark-{uuid.uuid4().hex}"
    targets, name = inventory(kind, ssh_lab, ssh_home, _lab_or_container(kind, request))
    sleeper = ["python3", "-c", "import time; time.sleep(1000)", marker]
    facts = [
        fact("t.slow", "cmd", OK, args={"argv": sleeper}, timeout=60),
        fact("t.quick", "cmd", {"path": "stdout", "eq": "q\n"}, args={"argv": ["echo", "q"]}),
    ]
    root = _kb(tmp_path / "kb", targets, facts)
    argv = [
        sys.executable,
        "-c",
        "from factbook.commands.cli import main; main()",
        "--root",
        str(root),
    ]
    argv += ["verify", "--target", name, "--format", "json", "--no-save"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not pids_with_cmdline(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pids_with_cmdline(marker), "the slow check never started"
        time.sleep(0.3)  # let the quick result stream back first
        if kind == "exec":
            carriers = pids_with_cmdline("FB_CARRIER=1")
            assert carriers
            for pid in carriers:
                os.kill(pid, signal.SIGKILL)
        else:
            assert ssh_lab.box.kill_sessions()
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, err
    got = {r["fact"]: r for r in json.loads(out)["results"]}
    assert got["t.quick"]["outcome"] == "pass"
    assert got["t.slow"]["outcome"] == "error"
    assert "connection dropped after 1 of 2 results" in got["t.slow"]["reason"]
    assert _wait_gone(marker) == []


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_no_target_field_reaches_a_shell_unquoted(
    kind: str, ssh_lab: Lab, ssh_home: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Shell syntax in python, env values and exec words is passed on as data, never run."""
    canary = tmp_path / "canary"
    boom = f"$(touch {canary})`touch {canary}`;touch {canary}"
    targets, name = inventory(kind, ssh_lab, ssh_home, _lab_or_container(kind, request))
    target = targets["targets"][name]
    target["python"] = f"/nonexistent/{boom}/python3"
    target["env"] = {"FB_ODD": boom}
    if "exec" in target:
        target["exec"] = [*target["exec"], "env", f"FB_WORD={boom}"]
    check = ["sh", "-c", 'printf %s "$FB_ODD"']
    facts = [fact("t.env", "cmd", {"path": "stdout", "eq": boom}, args={"argv": check})]
    code, got = _verify(_kb(tmp_path / "kb", targets, facts), name)
    assert code == 0, got
    assert not canary.exists()
