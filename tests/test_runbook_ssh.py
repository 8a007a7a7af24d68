"""Runbook steps over the loopback sshd lab: a box reachable only through a jump host.

The kernel reaches the box through factbook's SSH transport (ProxyJump through the jump
sshd); commands, a managed server and its teardown all happen on the box.
"""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import pytest
import yaml
from helpers import pids_with_cmdline, wait_no_cmdline
from runbook_kit import make_kb, run_cli, runs, steps_of, write_runbook
from sshd import Lab

from factbook.knowledge.kb import load_kb
from factbook.runbooks.executor import Executor, RunOptions
from factbook.runbooks.format import load_runbook

pytestmark = pytest.mark.ssh

SETUP = (
    {"name": "setup", "setup": True},
    "from factbook.runbooks.api import box, server, record, fact",
)


def lab_kb(tmp_path: Path, ssh_targets: dict) -> Path:
    targets = {}
    for name, target in ssh_targets.items():
        entry = {
            "host": target.host,
            "port": target.port,
            "user": target.user,
            "identity_file": target.identity_file,
        }
        if target.jump:
            entry["jump"] = list(target.jump)
        targets[name] = entry
    return make_kb(tmp_path, targets=targets)


def execute(root: Path, name: str, **options: object) -> tuple[int, dict]:
    kb = load_kb(root)
    runbook = load_runbook(root / "runbooks" / f"{name}.md", root)
    code = Executor(
        kb, runbook, RunOptions(live=False, **options), out=io.StringIO(), stdin_is_tty=False
    ).run()
    return code, runs(root, name)[-1]


def test_steps_run_on_the_box_through_the_jump(
    tmp_path: Path, ssh_lab: Lab, ssh_targets: dict
) -> None:
    root = lab_kb(tmp_path, ssh_targets)
    forwards_before = ssh_lab.jump.log_text().count(f"port {ssh_lab.box.port}")
    write_runbook(
        root,
        "remote",
        [
            SETUP,
            (
                {"name": "where"},
                """
r = box.run(["sh", "-c", "echo $SSH_CONNECTION; echo to-stderr >&2; exit 5"], timeout=20)
assert r.rc == 5 and r.stderr == "to-stderr\\n", r
conn = r.stdout.split()
print("box sees", conn)
r2 = box.run(["sleep", "31.7"], timeout=1)  # a duration no other test uses
assert r2.timed_out
""",
            ),
            ({"name": "local-too", "target": "local"}, "print(box.run(['true']).rc, box.name)"),
        ],
        target="box",
    )
    code, record = execute(root, "remote")
    assert code == 0, steps_of(record)
    where = steps_of(record)["where"]
    assert where["target"] == "box" and "box sees" in where["outputs"]
    assert steps_of(record)["local-too"]["outputs"] == "$ true\n0 local\n"
    assert ssh_lab.jump.log_text().count(f"port {ssh_lab.box.port}") > forwards_before
    assert not pids_with_cmdline("sleep 31.7")


def test_managed_server_on_the_box_is_probed_and_torn_down(
    tmp_path: Path, ssh_lab: Lab, ssh_targets: dict
) -> None:
    root = lab_kb(tmp_path, ssh_targets)
    marker = f"fbk-{uuid.uuid4().hex[:8]}"
    port = 18000 + int(uuid.uuid4().int % 2000)
    launch = f"""
import shlex
srv = server.start("web", ["python3", "-c", "import http.server, sys; sys.argv[0] = {marker!r}; "
                   "http.server.test(HandlerClass=http.server.SimpleHTTPRequestHandler, "
                   "port={port}, bind='127.0.0.1')", {marker!r}],
                   ready="http://127.0.0.1:{port}/", deadline=30)
print("pid", srv.pid, "log", srv.log)
"""
    use = f"""
r = box.run(["python3", "-c", "import urllib.request; "
             "print(len(urllib.request.urlopen('http://127.0.0.1:{port}/').read()))"],
            timeout=20, check=True)
print("fetched", r.stdout.strip())
"""
    write_runbook(
        root, "srv", [SETUP, ({"name": "launch"}, launch), ({"name": "use"}, use)], target="box"
    )
    code, record = execute(root, "srv")
    assert code == 0, steps_of(record)
    assert "fetched" in steps_of(record)["use"]["outputs"]
    server = record["servers"][0]
    assert server["state"].startswith("stopped") and server["target"] == "box"
    assert server["log"].startswith("/tmp/factbook-runs/srv/")
    assert not wait_no_cmdline(marker), "the server outlived its run on the box"
    copied = root / "results" / "runbooks" / "srv" / record["run_id"] / "servers" / "web.log"
    assert "GET / HTTP" in copied.read_text()


def test_kernel_death_tears_down_the_box_server(
    tmp_path: Path, ssh_lab: Lab, ssh_targets: dict
) -> None:
    root = lab_kb(tmp_path, ssh_targets)
    marker = f"fbk-{uuid.uuid4().hex[:8]}"
    launch = f"""
server.start("sleeper", ["sh", "-c", "sleep 300 # {marker}"], deadline=5)
"""
    write_runbook(
        root,
        "die",
        [SETUP, ({"name": "launch"}, launch), ({"name": "boom"}, "import os\nos._exit(1)")],
        target="box",
    )
    done = run_cli(root, "run", "die")
    assert done.returncode == 4, done.stderr
    assert not wait_no_cmdline(marker), "a box process outlived the dead kernel's run"
    assert runs(root, "die")[-1]["servers"][0]["state"].startswith("stopped")


def test_dry_run_names_the_jump_chain(tmp_path: Path, ssh_targets: dict) -> None:
    root = lab_kb(tmp_path, ssh_targets)
    write_runbook(root, "remote", [SETUP, ({"name": "where"}, "box.run(['true'])")], target="box")
    done = run_cli(root, "run", "remote", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert f"box (ssh {ssh_targets['box'].user}@{ssh_targets['box'].host} via jump" in done.stdout
    assert yaml.safe_load((root / "targets.yaml").read_text())["targets"]["box"]["jump"] == ["jump"]
