"""No orphans: a `factbook run` ended by any signal leaves no server, kernel or helper behind.

Real processes, real signals: a real `factbook run` subprocess runs a real runbook whose first
step starts a managed HTTP server; while the next step sleeps, the test sends SIGTERM, SIGHUP
or SIGKILL to the executor and then looks in /proc for anything the run started. SIGTERM and
SIGHUP end the run like Ctrl-C (record interrupted, exit 130); SIGKILL is cleaned up by the
run's watchdog; with the watchdog killed too, the next run finds the dead run and cleans it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import fact, free_port, pid_alive, pids_with_cmdline, target_entries, wait_no_cmdline
from helpers import make_kb as make_verify_kb
from runbook_kit import (
    FACTBOOK,
    make_kb,
    run_cli,
    runs,
    start_run_until,
    steps_of,
    write_runbook,
)

from factbook.knowledge.model import Target
from factbook.verification.agent import descendants
from factbook.verification.bundle import agent_argv, build_script, merge_calls
from factbook.verification.transports.local import LocalTransport

LOCAL = Target(name="local", transport="local")

SERVE = """
import sys
from factbook.runbooks.api import server
srv = server.start("web", [sys.executable, "-m", "http.server", "{port}", "--bind", "127.0.0.1",
                           "--directory", {marker!r}], ready={port}, deadline=30)
print("server up", srv.pid, flush=True)
"""
NAP = "print('napping', flush=True)\nimport time\ntime.sleep(120)"


def start_run(root: Path, marker: Path) -> tuple[subprocess.Popen[str], int]:
    """`factbook run nap` until its second step sleeps; the process and the server's pid."""
    marker.mkdir(exist_ok=True)
    write_runbook(
        root,
        "nap",
        [
            ({"name": "serve"}, SERVE.format(port=free_port(), marker=str(marker))),
            ({"name": "nap", "timeout": 300}, NAP),
            ({"name": "after"}, "print('after')"),
        ],
    )
    proc = subprocess.Popen(
        [FACTBOOK, "--root", str(root), "run", "nap"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    server_pid = None
    for line in proc.stdout:
        if line.startswith("server up"):
            server_pid = int(line.split()[2])
        if line.strip() == "napping":
            break
    else:
        pytest.fail(f"the run ended early: {proc.wait()} {proc.stderr.read()}")  # type: ignore[union-attr]
    assert server_pid is not None and pid_alive(server_pid)
    return proc, server_pid


def executor_info(root: Path) -> dict:
    record = runs(root, "nap")[-1]
    assert record["executor"]["pid"] > 0 and record["executor"]["started"]
    return record


def wait_gone(pids: list[int], seconds: float = 30) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if pid_alive(p)]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_end_the_run_like_ctrl_c(tmp_path: Path, sig: signal.Signals) -> None:
    root = make_kb(tmp_path)
    marker = tmp_path / f"served-{sig.name}"
    proc, server_pid = start_run(root, marker)
    record = executor_info(root)
    kernel_pid = record["executor"]["kernel"]["pid"]
    watchdog_pid = record["executor"]["watchdog"]
    # the running record already names the server with its start time
    assert record["servers"][0]["pid"] == server_pid and record["servers"][0]["started"]
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    record = runs(root, "nap")[-1]
    assert record["status"] == "interrupted"
    assert steps_of(record)["nap"]["status"] == "interrupted"
    assert steps_of(record)["nap"]["error"] == sig.name
    assert steps_of(record)["after"]["status"] == "pending"
    assert record["servers"][0]["state"].startswith("stopped")
    assert wait_gone([server_pid, kernel_pid, watchdog_pid], 10) == []
    assert pids_with_cmdline(str(marker)) == []
    assert "Traceback" not in err


def test_sigkill_of_the_executor_is_cleaned_up_by_its_watchdog(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    marker = tmp_path / "served-kill"
    proc, server_pid = start_run(root, marker)
    record = executor_info(root)
    kernel_pid = record["executor"]["kernel"]["pid"]
    watchdog_pid = record["executor"]["watchdog"]
    proc.kill()
    proc.communicate(timeout=30)
    assert wait_gone([server_pid, kernel_pid, watchdog_pid]) == [], "something outlived the run"
    assert pids_with_cmdline(str(marker)) == []
    record = runs(root, "nap")[-1]
    assert record["status"] == "interrupted"
    assert "died" in record["error"] and str(record["executor"]["pid"]) in record["error"]
    assert steps_of(record)["nap"]["status"] == "interrupted"
    assert record["servers"][0]["pid"] == server_pid
    assert record["servers"][0]["state"].startswith("stopped")
    log = (Path(runs_dir(root, record)) / "watchdog.log").read_text()
    assert f"server web on local (pid {server_pid}): stopped" in log


def runs_dir(root: Path, record: dict) -> Path:
    return root / "results" / "runbooks" / record["runbook"] / record["run_id"]


def test_resume_reports_and_cleans_a_dead_run_whose_watchdog_died_too(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    marker = tmp_path / "served-dead"
    proc, server_pid = start_run(root, marker)
    record = executor_info(root)
    kernel_pid = record["executor"]["kernel"]["pid"]
    os.kill(record["executor"]["watchdog"], signal.SIGKILL)  # the safety net gone as well
    proc.kill()
    proc.communicate(timeout=30)
    time.sleep(0.5)
    assert pid_alive(server_pid), "nothing should have stopped the server yet"
    assert runs(root, "nap")[-1]["status"] == "running"
    write_runbook(  # the same steps, now quick
        root,
        "nap",
        [({"name": "serve"}, "print('serving again')"), ({"name": "nap"}, "print('short nap')"),
         ({"name": "after"}, "print('after')")],
    )  # fmt: skip
    done = run_cli(root, "run", "nap", "--resume")
    assert done.returncode == 0, done.stderr
    executor = record["executor"]["pid"]
    assert f"run {record['run_id']} of nap: its executor (pid {executor}) died" in done.stderr
    assert f"server web on local (pid {server_pid}): stopped" in done.stderr
    assert "short nap" in done.stdout and "serving again" not in done.stdout
    assert wait_gone([server_pid, kernel_pid], 10) == []
    assert pids_with_cmdline(str(marker)) == []
    dead, resumed = runs(root, "nap")[-2:]
    assert dead["status"] == "interrupted" and dead["servers"][0]["state"].startswith("stopped")
    assert resumed["resumed_from"] == dead["run_id"] and resumed["status"] == "ok"
    # reported once: the next run has nothing left to clean
    write_runbook(root, "other", [({"name": "one"}, "print('one')")])
    again = run_cli(root, "run", "other")
    assert again.returncode == 0 and "died" not in again.stderr


def test_a_reused_pid_is_never_killed(tmp_path: Path) -> None:
    """A dead run whose server pid now names another process: that process is left alone."""
    root = make_kb(tmp_path)
    folder = root / "results" / "runbooks" / "old" / "20260101T000000000000Z-local-1"
    folder.mkdir(parents=True)
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        stat = Path(f"/proc/{bystander.pid}/stat").read_text()
        real_start = stat[stat.rfind(")") + 2 :].split()[19]
        server = {
            "event": "start",
            "name": "web",
            "target": "local",
            "pid": bystander.pid,
            "started": str(int(real_start) + 1),  # the server we started was another process
            "log": str(folder / "servers" / "web.log"),  # where the runner writes it
            "pidfile": None,
            "step": "serve",
        }
        (folder / "servers.jsonl").write_text(json.dumps(server) + "\n")
        dead_executor = {"pid": 999999999, "started": "1", "host": os.uname().nodename}
        (folder / "record.json").write_text(
            json.dumps(
                {
                    "runbook": "old",
                    "run_id": folder.name,
                    "target": "local",
                    "status": "running",
                    "steps": [],
                    "executor": dead_executor,
                }
            )
        )
        write_runbook(root, "other", [({"name": "one"}, "print('one')")])
        done = run_cli(root, "run", "other")
        assert done.returncode == 0, done.stderr
        assert "its pid now belongs to another process: left alone" in done.stderr
        assert bystander.poll() is None
        assert json.loads((folder / "record.json").read_text())["status"] == "interrupted"
    finally:
        bystander.kill()
        bystander.wait()


@pytest.mark.ssh
def test_sigkill_tears_down_a_server_on_a_box_behind_a_jump(
    tmp_path: Path, ssh_lab, ssh_targets: dict
) -> None:
    """The watchdog reaches the box through the same jump chain as the run did."""
    targets = target_entries(ssh_targets)
    root = make_kb(tmp_path, targets=targets)
    marker = f"fbk-orphan-{os.getpid()}-{time.monotonic_ns()}"
    serve = (
        "from factbook.runbooks.api import server\n"
        f"srv = server.start('sleeper', ['sh', '-c', 'sleep 300 # {marker}'], deadline=5)\n"
        "print('server up', srv.pid, flush=True)"
    )
    write_runbook(root, "nap", [({"name": "serve"}, serve), ({"name": "nap"}, NAP)], target="box")
    proc = start_run_until(root, "nap", "napping")
    assert pids_with_cmdline(marker), "the server never started on the box"
    watchdog = executor_info(root)["executor"]["watchdog"]
    proc.kill()
    proc.communicate(timeout=30)
    assert wait_no_cmdline(marker, 30) == [], "the box server outlived its executor"
    assert wait_gone([watchdog], 30) == []  # done: the box's log copied, the record saved
    record = runs(root, "nap")[-1]
    assert record["status"] == "interrupted"
    assert record["servers"][0]["target"] == "box"
    assert record["servers"][0]["state"].startswith("stopped")


# --- the agent: a check's descendants never outlive it ------------------------------------


def run_agent(calls: list[tuple[str, str, dict, float]]) -> list[dict]:
    """One real agent batch through the local transport; its JSON lines."""
    script = build_script(merge_calls(calls), jobs=4)
    proc = LocalTransport(LOCAL).start(agent_argv(sys.executable), script.encode(), {})
    lines = [json.loads(line) for line in proc.lines()]
    assert proc.wait(30) == 0, proc.stderr_text()
    return lines


def test_setsid_daemon_started_by_a_check_does_not_outlive_it() -> None:
    marker = f"sleep 654.{os.getpid()}1"
    detach = f"setsid {marker} </dev/null >/dev/null 2>&1 &"
    lines = run_agent([("detach", "cmd", {"argv": ["sh", "-c", detach], "shell": False}, 30)])
    assert lines[1]["value"]["exit_code"] == 0  # the check itself finished at once
    assert wait_no_cmdline(marker) == [], "a setsid daemon escaped the agent"


def test_setsid_daemon_of_a_timed_out_check_dies_with_it() -> None:
    marker = f"sleep 543.{os.getpid()}2"
    script = f"setsid {marker} </dev/null >/dev/null 2>&1 & sleep 300"
    started = time.monotonic()
    lines = run_agent([("hang", "cmd", {"argv": ["sh", "-c", script]}, 1)])
    assert "timed out after 1.0s" in lines[1]["error"]
    assert time.monotonic() - started < 10
    assert wait_no_cmdline(marker) == [], "a setsid daemon outlived its timed-out check"


def test_killed_local_verify_stops_its_agent_at_once(tmp_path: Path) -> None:
    marker = f"sleep 432.{os.getpid()}3"
    slow = fact("x.slow", "cmd", {"path": "exit_code", "eq": 0}, args={"argv": marker.split()})
    slow["check"]["timeout"] = 600
    slow["target"] = "local"
    root = make_verify_kb(tmp_path, [slow])
    proc = subprocess.Popen(
        [FACTBOOK, "--root", str(root), "verify", "x.slow"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not pids_with_cmdline(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_with_cmdline(marker), "the check never started"
    agents = [p for p in descendants(proc.pid) if "python" in Path(f"/proc/{p}/comm").read_text()]
    assert agents, "no agent under verify-facts"
    proc.kill()
    proc.wait()
    killed = time.monotonic()
    assert wait_gone(agents, 5) == [] and wait_no_cmdline(marker, 5) == []
    assert time.monotonic() - killed < 5  # not the check's 600 s timeout
