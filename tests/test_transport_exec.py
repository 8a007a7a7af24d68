"""transport: exec with real namespaces standing in for a container (issue 13.3).

Locally `nsenter -t PID -a` enters a PID + mount namespace made by `unshare`; behind SSH,
`unshare --pid ...` runs on the lab's box reached through its jump, as `pct exec 129 --` runs on
a Proxmox host. The agent must see the container's PID namespace (few processes, its own
low pids), get the target's env, and leave nothing behind when killed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from helpers import cli, fact, make_kb, pids_with_cmdline
from sshd import Lab
from transport_lab import container_missing_reason, inventory

from factbook.errors import TargetError
from factbook.knowledge.model import Target
from factbook.verification.transports.base import TransportOptions, transport_for

PIDS = "print(json.dumps([os.getpid(), len([p for p in os.listdir('/proc') if p.isdigit()])]))"


def _run(transport, script: str, env: dict[str, str] | None = None) -> tuple[list[str], int | None]:
    proc = transport.start(["python3", "-"], script.encode(), env or {})
    try:
        return list(proc.lines()), proc.wait(10)
    finally:
        proc.kill()


def test_agent_runs_inside_the_local_container(container_pid: int) -> None:
    target = Target(
        name="ct", transport="exec", exec=("nsenter", "-t", str(container_pid), "-a"),
        env={"FROM_TARGET": "a b;$(x)"},
    )  # fmt: skip
    transport = transport_for(target, {}, TransportOptions())
    script = f"import json, os\n{PIDS}\nprint(os.environ['FROM_TARGET'], os.environ['EXTRA'])"
    lines, status = _run(transport, script, {"EXTRA": "'quoted'"})
    assert status == 0
    pid, visible = json.loads(lines[0])
    # sleep is pid 1; then sh -> supervisor (exec'd, one pid), the agent: a handful, not the host's
    assert pid < 10 and visible < 10
    assert lines[1] == "a b;$(x) 'quoted'"


def test_verify_through_exec_behind_ssh(ssh_lab: Lab, ssh_home: Path, tmp_path: Path) -> None:
    """`pct exec` on a Proxmox host over SSH, with unshare as the container, end to end."""
    if container_missing_reason():
        pytest.skip(container_missing_reason() or "")
    targets, name = inventory("exec-via-ssh", ssh_lab, ssh_home)
    pid_check = ["python3", "-c", "import os; print(os.getpid())"]
    facts = [
        fact("t.pid", "cmd", {"path": "stdout", "regex": r"^\d\n$"}, args={"argv": pid_check}),
        fact("t.pkg", "pkg.version", {"version": ">=1"}, args={"name": "pip"}),
    ]
    root = make_kb(tmp_path / "kb", facts, targets=targets)
    forwards = ssh_lab.jump.log_text().count(f"port {ssh_lab.box.port}")
    code, out, err = cli(root, "verify", "--target", name, "--format", "json", "--no-save")
    assert code == 0, out + err
    assert {r["outcome"] for r in json.loads(out)["results"]} == {"pass"}
    assert ssh_lab.jump.log_text().count(f"port {ssh_lab.box.port}") > forwards  # via the jump


def test_kill_stops_the_agent_inside_the_container(container_pid: int) -> None:
    marker = f"fbmark-{uuid.uuid4().hex}"
    target = Target(name="ct", transport="exec", exec=("nsenter", "-t", str(container_pid), "-a"))
    transport = transport_for(target, {}, TransportOptions())
    script = (
        "import subprocess, time\n"
        f"subprocess.Popen(['sh', '-c', 'sleep 1000; true', '{marker}'])\n"
        "print('started', flush=True)\ntime.sleep(1000)\n"
    )
    proc = transport.start(["python3", "-"], script.encode(), {})
    lines = proc.lines()
    assert next(lines) == "started"
    deadline = time.monotonic() + 10  # the child is up; /proc may lag on a loaded machine
    while not pids_with_cmdline(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_with_cmdline(marker)
    proc.kill()
    deadline = time.monotonic() + 8
    while pids_with_cmdline(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pids_with_cmdline(marker) == []
    assert proc.wait(5) is None  # killed: reported like a dropped connection


def test_missing_exec_and_bad_via_are_target_errors(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="needs `exec:`"):
        transport_for(Target(name="ct", transport="exec"), {}, TransportOptions())
    target = Target(name="ct", transport="exec", exec=("pct", "exec", "129", "--"), via="nope")
    with pytest.raises(TargetError, match="via 'nope' is not a known target"):
        transport_for(target, {}, TransportOptions())
    local = Target(name="here", transport="local")
    target = Target(name="ct", transport="exec", exec=("pct", "exec", "129", "--"), via="here")
    with pytest.raises(TargetError, match="must be an ssh or openssh target"):
        transport_for(target, {"here": local}, TransportOptions())


def test_lint_names_missing_exec_and_unknown_via(tmp_path: Path) -> None:
    targets = {
        "targets": {
            "ct": {"transport": "exec"},
            "ct2": {"transport": "exec", "exec": ["pct", "exec", "129", "--"], "via": "kpro6"},
        }
    }
    root = make_kb(tmp_path / "kb", [fact("t.x", "cmd", args={"argv": ["true"]})], targets=targets)
    code, out, err = cli(root, "lint")
    assert code != 0
    text = out + err
    assert "targets.yaml:2" in text and "exec needs 'exec'" in text
    assert "unknown via 'kpro6'" in text


def test_a_container_runtime_if_one_runs_here() -> None:
    """docker/podman: used when a daemon answers; the client alone is not enough."""
    for runtime in ("podman", "docker"):
        if shutil.which(runtime) is None:
            continue
        info = subprocess.run([runtime, "info"], capture_output=True, text=True)
        if info.returncode != 0:
            continue
        name = f"fbtest-{uuid.uuid4().hex[:8]}"
        image = "python:3-slim"
        started = subprocess.run(
            [runtime, "run", "-d", "--rm", "--name", name, image, "sleep", "300"],
            capture_output=True,
            text=True,
        )
        if started.returncode != 0:
            pytest.skip(f"{runtime} cannot start {image}: {started.stderr.strip()[-200:]}")
        try:
            target = Target(name="c", transport="exec", exec=(runtime, "exec", "-i", name))
            lines, status = _run(transport_for(target, {}, TransportOptions()), "print('in')")
            assert (lines, status) == (["in"], 0)
        finally:
            subprocess.run([runtime, "rm", "-f", name], capture_output=True)
        return
    pytest.skip("no container runtime with a running daemon here (docker client only)")
