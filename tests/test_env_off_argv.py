"""A target's `env:` values never reach a command line (issue 25.1).

They travel in the supervisor's stdin payload (remote.py, supervisor.py), so a token in
`env: {HF_TOKEN: ...}` is not in `ps` on the box, on this machine (ssh, docker exec, srun
argv), in sshd's logs, or in Slurm's record of the job. Each test runs a real `verify` whose
one check sleeps, reads every /proc/*/cmdline while it runs (the box's sshd session, srun,
slurmstepd's tasks and the ssh client all live in this pid namespace), and then checks that the
probe still saw the value in its environment.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from helpers import cli, fact, make_kb, pids_with_cmdline
from slurm import Cluster
from sshd import Lab, start_extra_box
from transport_lab import container_missing_reason, inventory

from factbook.verification.transports.remote import SUPERVISOR, env_block

SLEEP_S = 3.0
OLD_PYTHON = Path("/root/.pyenv/versions/3.6.15/bin/python3")


def _secret() -> str:
    return f"sekrit-{uuid.uuid4().hex}"


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:12]


def _facts(secret: str, marker: str) -> list[dict]:
    sleeper = ["python3", "-c", f"import time; time.sleep({SLEEP_S})", marker]
    return [
        # env.var masks a credential on the box: its value is compared by its sha256 prefix
        fact(
            "t.token", "env.var", {"path": "sha256", "eq": _sha(secret)}, args={"name": "HF_TOKEN"}
        ),
        fact("t.sleep", "cmd", {"path": "exit_code", "eq": 0}, args={"argv": sleeper}),
    ]


def _argv_holding(needle: str) -> list[str]:
    """Command lines of live processes (not this one) that contain `needle`."""
    return [
        Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        for pid in pids_with_cmdline(needle)
    ]


def _ancestors(pid: int) -> list[int]:
    out = []
    while pid > 1:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
        out.append(pid)
    return out


def _verify_watching(
    root: Path, target: str, secret: str, marker: str, during=None
) -> tuple[list[dict], list[str], dict[int, list[int]]]:
    """`factbook verify` in a subprocess; while the sleeping check runs, every command line
    holding `secret`. Returns (results, those command lines, the sleeping check's ancestors)."""
    argv = [sys.executable, "-c", "from factbook.commands.cli import main; main()"]
    argv += ["--root", str(root), "verify", "--target", target, "--format", "json", "--no-save"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    leaked: list[str] = []
    sleepers: list[int] = []
    lineage: dict[int, list[int]] = {}
    try:
        deadline = time.monotonic() + 30
        while not (sleepers := pids_with_cmdline(marker)) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        assert sleepers, "the sleeping check never started"
        lineage = {p: _ancestors(p) for p in sleepers}
        while pids_with_cmdline(marker):  # the whole time the check runs
            leaked += _argv_holding(secret)
            if during is not None:
                leaked += during()
            time.sleep(0.2)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert out, err
    return json.loads(out)["results"], leaked, lineage


def _assert_clean_and_seen(results: list[dict], leaked: list[str], secret: str) -> None:
    assert leaked == [], f"env value on a command line: {sorted(set(leaked))[:3]}"
    assert results, "no results"
    for record in results:
        assert record["outcome"] == "pass", record
    tokens = [r for r in results if r["fact"] == "t.token"]
    assert tokens and all(r["observed"]["sha256"] == _sha(secret) for r in tokens)


KINDS = ("local", "ssh", "openssh", "exec-via-ssh", "exec-via-openssh", "exec")


@pytest.mark.parametrize("kind", KINDS)
def test_env_value_on_no_command_line(kind: str, request, tmp_path: Path) -> None:
    secret, marker = _secret(), f"fbmark-{uuid.uuid4().hex}"
    lab: Lab | None = None
    if kind == "local":
        targets, name = {"targets": {"here": {"transport": "local"}}}, "here"
    elif kind == "exec":
        if container_missing_reason():
            pytest.skip(container_missing_reason() or "")
        pid = request.getfixturevalue("container_pid")
        prefix = ["nsenter", "-t", str(pid), "-a", "--"]
        targets, name = {"targets": {"ct": {"transport": "exec", "exec": prefix}}}, "ct"
    else:
        if kind.startswith("exec") and container_missing_reason():
            pytest.skip(container_missing_reason() or "")
        lab = request.getfixturevalue("ssh_lab")
        targets, name = inventory(kind, lab, request.getfixturevalue("ssh_home"))
    targets["targets"][name]["env"] = {"HF_TOKEN": secret}
    root = make_kb(tmp_path / "kb", _facts(secret, marker), targets=targets)
    results, leaked, lineage = _verify_watching(root, name, secret, marker)
    if lab is not None:  # what was read ran on the box, under its sshd
        assert lab.box.proc is not None
        assert lineage and all(lab.box.proc.pid in up for up in lineage.values())
        assert secret not in lab.box.log_text() + lab.jump.log_text()
    _assert_clean_and_seen(results, leaked, secret)


def test_env_value_not_in_slurm_step_or_job(slurm_env: Cluster, tmp_path: Path) -> None:
    """srun here, slurmstepd's tasks on the nodes, and what slurmctld recorded of the job and
    step (`scontrol show job/step`; the fixture runs no accounting, so no sacct)."""
    secret, marker = _secret(), f"fbmark-{uuid.uuid4().hex}"
    target = {"transport": "slurm", "nodes": "n[1-2]", "env": {"HF_TOKEN": secret}}
    root = make_kb(
        tmp_path / "kb", _facts(secret, marker), targets={"targets": {"cluster": target}}
    )
    recorded: list[str] = []

    def slurm_records() -> list[str]:
        jobs = slurm_env.run("squeue", "-h", "-o", "%A").stdout.split()
        texts = [slurm_env.run("scontrol", "show", "job", "-d", j).stdout for j in jobs]
        texts += [slurm_env.run("scontrol", "show", "step", j).stdout for j in jobs]
        recorded.extend(texts)
        return [t for t in texts if secret in t]

    results, leaked, _ = _verify_watching(root, "cluster", secret, marker, slurm_records)
    assert any("factbook-verify" in t for t in recorded), "no job of ours was seen"
    log = "".join(p.read_text(errors="replace") for p in (slurm_env.workdir / "log").iterdir())
    assert secret not in log
    assert {r["target"] for r in results} == {"cluster.n1", "cluster.n2"}
    _assert_clean_and_seen(results, leaked, secret)


RECORDER = 'cat /proc/$$/cmdline >> "{log}"; echo >> "{log}"\n'


@pytest.mark.parametrize("kind", ["ssh", "openssh"])
def test_env_value_not_in_the_command_sshd_runs(
    kind: str, ssh_lab: Lab, ssh_home: Path, tmp_path: Path
) -> None:
    """The command line sshd hands the login shell (`bash -c COMMAND`), recorded as an exec
    audit would record it: the shell reads BASH_ENV first (`SetEnv` of a box of this test's
    own; SHLVL=1 so bash does not read ~/.bashrc instead), which copies its cmdline to a
    file. paramiko's line is on no command line for long (bash, sh and env exec one another),
    so only a record like this catches it."""
    log = tmp_path / "argv.log"
    recorder = tmp_path / "record.sh"
    recorder.write_text(RECORDER.format(log=log))
    box = start_extra_box(ssh_lab, "rec", [f"SetEnv SHLVL=1 BASH_ENV={recorder}"])
    try:
        with (ssh_home / ".ssh" / "known_hosts").open("a") as known:
            known.write(box.known_hosts_line() + "\n")
        secret = _secret()
        target = {
            "transport": kind, "host": box.host, "port": box.port, "user": ssh_lab.user,
            "identity_file": str(ssh_home / ".ssh" / "id_ed25519"), "env": {"HF_TOKEN": secret},
        }  # fmt: skip
        check = fact("t.token", "env.var", {"path": "sha256", "eq": _sha(secret)},
                     args={"name": "HF_TOKEN"})  # fmt: skip
        root = make_kb(tmp_path / "kb", [check], targets={"targets": {"rec": target}})
        code, out, err = cli(root, "verify", "--target", "rec", "--format", "json", "--no-save")
    finally:
        box.stop()
    assert code == 0, out + err
    assert [r["outcome"] for r in json.loads(out)["results"]] == ["pass"]
    recorded = log.read_bytes().decode(errors="replace")
    assert "no python3 on the box" in recorded  # the supervisor's line was recorded
    assert secret not in recorded
    assert secret not in box.log_text()


def _supervise(python: str, block: bytes, script: bytes) -> tuple[int, bytes, bytes]:
    """The supervisor fed block + script, its stdin (the lifeline) held open until it ends."""
    argv = [python, "-c", SUPERVISOR, str(len(block)), str(len(script)), python, "-"]
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin and proc.stdout and proc.stderr
    try:
        proc.stdin.write(block + script)
        proc.stdin.flush()
        out, err = proc.stdout.read(), proc.stderr.read()
        return proc.wait(30), out, err
    finally:
        proc.stdin.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("python", [sys.executable, str(OLD_PYTHON)])
def test_supervisor_sets_env_from_stdin_and_refuses_bad_blocks(python: str) -> None:
    """The supervisor as the box runs it, on today's Python and on 3.6 (its floor)."""
    if not Path(python).exists():
        pytest.skip(f"{python} not installed")
    secret = _secret()
    script = b"import os; print(os.environ['HF_TOKEN'], os.environ['FB_X'])"
    block = env_block({"HF_TOKEN": secret, "FB_X": "a b;$(x) \u00e9"})
    status, out, err = _supervise(python, block, script)
    assert status == 0, err
    assert out.decode() == f"{secret} a b;$(x) \u00e9\n"
    for bad, said in [
        (b'{"-S x": "1"}', b"bad env key '-S x'"),
        (b'{"A": 1}', b"bad env key 'A'"),
        (b"[1]", b"not an object"),
        (b'{"A": "' + secret.encode(), b"not JSON"),  # cut short
    ]:
        status, out, err = _supervise(python, bad, script)
        assert status == 127 and said in err, err
        assert secret.encode() not in err + out
