# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile input, round 16 (issue 25, "Hardening III"): verify over SSH against hostile
ports and sshds that never speak or hang up at once, and runbook runs under signals whose
cells detach processes. The table cases run through tests/test_hostile_kb.py's `run_case`;
the rest start real processes (a real socket that accepts and stays silent or closes, real
`factbook run` subprocesses signalled mid-step) and check that nothing is left behind.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import loopback_listener
from test_hostile_kb import RUNBOOK, Case, _in_process, make_outside, plant, run_case

PORT_BAD = "is not a number from 1 to 65535"


def url(spec: str) -> list[str]:
    return ["verify", "hw.gpu.count", "--target", spec, "--timeout", "2"]


def own(entry: str, more: str = "") -> dict[str, str]:
    """targets.yaml with target `box` written as `entry` (and `more` lines after it)."""
    return {"targets.yaml": "targets:\n  here: {transport: local}\n  box: " + entry + "\n" + more}


INV = "inventory: inv.ini\ntargets:\n  here: {transport: local}\n"

# fmt: off
CASES: list[Case] = [
    # --- 1. a port ssh never connects to: an ssh:// URL's `:0` passed urllib and connected to port 22 instead ---
    Case("ssh:// URL: port 0 went to port 22", {}, url("ssh://root@x.invalid:0"), 2, f"port '0' {PORT_BAD}"),
    Case("openssh:// URL: port 00", {}, url("openssh://root@x.invalid:00"), 2, f"port '0' {PORT_BAD}"),
    Case("ssh:// URL: port 0 with a jump", {}, url("ssh://root@x.invalid:0?jump=gw.invalid"), 2, f"port '0' {PORT_BAD}"),
    # ... held (guards): every other hostile port, from every source, refused before connecting
    Case("ssh:// URL: port 65536", {}, url("ssh://root@x.invalid:65536"), 2, f"port '65536' {PORT_BAD}"),
    Case("ssh:// URL: port '22;x'", {}, url("ssh://root@x.invalid:22;x"), 2, f"port '22;x' {PORT_BAD}"),
    Case("ssh:// URL: a 40-digit port", {}, url("ssh://root@x.invalid:" + "9" * 40), 2, f"port '{'9' * 40}' {PORT_BAD}"),
    Case("ssh:// URL: Arabic-Indic digits as a port", {}, url("ssh://root@x.invalid:\u0662\u0662"), 2, f"port '\u0662\u0662' {PORT_BAD}"),
    Case("ssh:// URL: jump port 0", {}, url("ssh://root@x.invalid?jump=gw.invalid:0"), 2, "bad port '0'"),
    Case("ssh:// URL: jump port of 30 digits", {}, url("ssh://root@x.invalid?jump=gw.invalid:" + "9" * 30), 2, f"port '{'9' * 30}' {PORT_BAD}"),
    Case("ssh:// URL: a port key in the query", {}, url("ssh://root@x.invalid?port=0"), 2, "unknown key port"),
    Case("targets.yaml: port 0", own("{host: box.invalid, port: 0}"), "lint", 2, "port: must be >= 1"),
    Case("targets.yaml: port 65536", own("{host: box.invalid, port: 65536}"), "lint", 2, "port: must be <= 65535"),
    Case("targets.yaml: port '22; x'", own("{host: box.invalid, port: '22; x'}"), "lint", 2, "expected integer, got string"),
    Case("targets.yaml: a 30-digit port", own("{host: box.invalid, port: " + "9" * 30 + "}"), "lint", 2, "port: must be <= 65535"),
    Case("targets.yaml: port 0 refused by verify too", own("{host: box.invalid, port: 0}"), ["verify", "--dry-run", "--target", "box"], 2, "port: must be >= 1"),
    Case("ini: ansible_port '22; x'", {"targets.yaml": INV, "inv.ini": "[g]\nn1 ansible_host=ok.invalid ansible_port='22; x'\n"}, "lint", 2, f"port '22; x' {PORT_BAD}"),
    Case("ini: -o Port=0", {"targets.yaml": INV, "inv.ini": "[g]\nn1 ansible_host=ok.invalid ansible_ssh_common_args='-o Port=0'\n"}, "lint", 2, "ssh refuses port '0'"),
    # ... held (guards): a jump host that is the box itself, a chain looping through targets.yaml
    Case("targets.yaml: the box its own jump", own("{host: box.invalid, jump: [box]}"), "lint", 2, "jump loop"),
    Case("targets.yaml: a jump chain looping through two hops", own("{host: box.invalid, jump: [j1]}", "  j1: {host: j1.invalid, jump: [j2]}\n  j2: {host: j2.invalid, jump: [j1]}\n"), "lint", 2, "jump loop"),
    Case("ssh:// URL whose jump names a looping target", own("{host: box.invalid}", "  j1: {host: j1.invalid, jump: [j2]}\n  j2: {host: j2.invalid, jump: [j1]}\n"), url("ssh://root@x.invalid?jump=j1"), 2, "jump loop"),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round16(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


# --- 1b. sshds that accept the TCP connection and then never speak, or hang up at once ---
@pytest.fixture
def bad_sshd(request: pytest.FixtureRequest) -> Iterator[int]:
    """A listener on 127.0.0.1: `silent` keeps each connection and sends nothing, `close`
    closes it at once, `banner` sends an SSH version line and then nothing."""
    mode = request.param

    def greet(conn: socket.socket) -> bool:
        if mode == "close":
            conn.close()
            return False
        if mode == "banner":
            conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
        return True

    with loopback_listener(greet) as port:
        yield port


@pytest.mark.parametrize(
    ("bad_sshd", "scheme", "said", "max_s"),
    [
        # a finding: paramiko's "sent no SSH banner within 2 s" for a close that took 1 ms
        ("close", "ssh", "closed it before any SSH banner", 1.5),
        # held (guards)
        ("silent", "ssh", "sent no SSH banner within 2 s", 8),
        (
            "banner",
            "ssh",
            "sent its SSH banner (SSH-2.0-OpenSSH_9.2) but the SSH handshake did not finish within 2 s",
            8,
        ),
        ("close", "openssh", "kex_exchange_identification", 5),
        ("silent", "openssh", "timed out during banner exchange", 8),
    ],
    indirect=["bad_sshd"],
)
def test_an_sshd_that_never_speaks_is_one_line_exit_3_and_results_read_back(
    bad_sshd: int, scheme: str, said: str, max_s: float, tmp_path: Path
) -> None:
    """One line naming host and port, exit 3 (unreachable), within the connect timeout; the
    run file and latest.json agree and `lint` and `status` read them back."""
    kb, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(kb, out, {})
    spec = f"{scheme}://root@127.0.0.1:{bad_sshd}?timeout=2"
    began = time.monotonic()
    code, output, _ = _in_process(["--root", str(kb), *url(spec), "--format", "json"], 30)
    took = time.monotonic() - began
    assert code == 3 and "Traceback" not in output, output[-2000:]
    got = json.JSONDecoder().raw_decode(output[output.index("{") :])[0]["results"]
    assert len(got) == 1 and got[0]["outcome"] == "error"
    reason = got[0]["reason"]
    assert said in reason and f"127.0.0.1:{bad_sshd}" in reason and "\n" not in reason, reason
    assert took < max_s, took
    latest = json.loads((kb / "results" / "latest.json").read_text())
    run_id = latest["hw.gpu.count"][got[0]["target"]]["run"]
    runs = list((kb / "results" / "runs").glob(f"{run_id}*"))
    assert len(runs) == 1 and reason in runs[0].read_text()
    for argv in (["lint"], ["status", "--out", "-"]):
        again, text, _ = _in_process(["--root", str(kb), *argv], 30)
        assert again == 0 and "Traceback" not in text, (argv, text[-2000:])


# --- 2. runbook runs whose cells detach processes, under SIGINT, SIGTERM and a clean end ---
DETACH = """\
import os, subprocess, sys, time
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', 'MARK-new-session'], start_new_session=True)
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', 'MARK-no-env'], start_new_session=True, env={})
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(300)', 'MARK-double-fork'])
    os._exit(0)
os.waitpid(pid, 0)
print('detached', flush=True)
SLEEP
"""


def marked(mark: str) -> list[int]:
    """Live processes whose command line holds `mark` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if mark.encode() in cmdline and state not in ("Z", "X"):
                found.append(int(entry))
    return found


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "clean end"])
def test_what_a_cell_detached_does_not_outlive_the_run(how: str, tmp_path: Path) -> None:
    """A cell that starts a process in a new session (with and without its environment) and
    a double-forked daemon: none survives `factbook run`, whether it is interrupted (130) or
    ends cleanly (0); the record reads back and facts/ lints clean."""
    mark = f"fb16-{uuid.uuid4().hex[:12]}"
    wait = "time.sleep(60)" if how != "clean end" else ""
    code = DETACH.replace("MARK", mark).replace("SLEEP", wait)
    kb, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(kb, out, {"runbooks/rb.md": RUNBOOK.replace("print('hi')", code)})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = [sys.executable, "-m", "factbook", "--root", str(kb), "run", "rb", "--yes"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    try:
        if how != "clean end":
            deadline = time.monotonic() + 60
            while len(marked(mark)) < 3 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert len(marked(mark)) == 3, "the cell never detached its processes"
            proc.send_signal(getattr(signal, how))
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        deadline = time.monotonic() + 3
        while marked(mark) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = marked(mark)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    text = output.decode(errors="replace")
    assert proc.returncode == (0 if how == "clean end" else 130), text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    assert left == [], f"{len(left)} detached process(es) outlived the run: {text[-1500:]}"
    records = list((kb / "results" / "runbooks" / "rb").glob("*/record.json"))
    assert len(records) == 1
    json.loads(records[0].read_text())
    for argv2 in (["lint"], ["status", "--out", "-"]):
        again, said, _ = _in_process(["--root", str(kb), *argv2], 60)
        assert again == 0 and "Traceback" not in said, (argv2, said[-2000:])
