"""The SSH transport against a real sshd box reachable only through a real sshd jump host."""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import pids_with_cmdline, wait_no_cmdline
from sshd import Lab, port_refused

from factbook.errors import AuthError, HostKeyError, TargetError, UnreachableError, UsageError
from factbook.knowledge.model import Target
from factbook.verification.transports.base import TransportOptions
from factbook.verification.transports.ssh import SSHTransport, parse_target_url

pytestmark = pytest.mark.ssh


def run(transport: SSHTransport, script: str, env: dict[str, str] | None = None):
    proc = transport.start(["python3", "-"], script.encode(), env or {})
    lines = list(proc.lines())
    return lines, proc.wait(10), proc.stderr_text()


def forwards_to_box(lab: Lab) -> int:
    """direct-tcpip forwards the jump sshd logged towards the box's port."""
    needle = f"target {lab.box.host} port {lab.box.port}"
    return sum(needle in line for line in lab.jump.log_text().splitlines())


def logins(inst) -> int:
    return inst.log_text().count("Accepted publickey")


# --- target URLs -------------------------------------------------------------------------


def test_url_with_a_jump_chain() -> None:
    target, jumps = parse_target_url(
        "ssh://root@box.lan:2222?jump=admin@jh1:2200,jh2&python=~/ml-env/bin/python3&timeout=3"
    )
    assert (target.user, target.host, target.port) == ("root", "box.lan", 2222)
    assert target.jump == ("admin@jh1:2200", "jh2")
    assert [(j.user, j.host, j.port) for j in jumps] == [
        ("admin", "jh1", 2200),
        (None, "jh2", None),
    ]
    assert target.python == "~/ml-env/bin/python3"
    assert target.connect_timeout == 3.0
    assert target.name == "root@box.lan:2222"


def test_url_jump_naming_an_inventory_target_references_it() -> None:
    kpro6 = Target(name="kpro6", host="kpro6.invalid", user="root")
    target, jumps = parse_target_url("ssh://h?jump=kpro6", {"kpro6": kpro6})
    assert target.jump == ("kpro6",) and jumps == []


def test_url_ipv6_and_errors() -> None:
    target, _ = parse_target_url("ssh://u@[::1]:22")
    assert target.host == "::1" and target.name == "u@[::1]:22"
    for bad, why in [
        ("http://h", "ssh://"),
        ("ssh://h?jmp=x", "unknown key jmp"),
        ("ssh://h:99999", "is not a number from 1 to 65535"),
        ("ssh://h?timeout=soon", "timeout"),
    ]:
        with pytest.raises(UsageError, match=why):
            parse_target_url(bad)


# --- through the jump ----------------------------------------------------------------------


def test_box_is_reachable_only_through_the_jump(ssh_lab: Lab, ssh_home: Path) -> None:
    """Without this, a client that ignores ProxyJump would look as if it worked."""
    if not ssh_lab.isolated:
        pytest.skip("no network namespace here: the jump's log is the only proof (other tests)")
    assert port_refused(ssh_lab.box.host, ssh_lab.box.port)
    import testinfra

    host = testinfra.get_host(
        f"paramiko://{ssh_lab.user}@box", ssh_config=str(ssh_home / ".ssh" / "config")
    )
    with pytest.raises(Exception, match=r"(?i)refused|unable to connect|Errno"):
        host.run("true")


def test_runs_through_the_jump(ssh_lab: Lab, ssh_targets: dict, ssh_options) -> None:
    before_fwd, before_box = forwards_to_box(ssh_lab), logins(ssh_lab.box)
    transport = SSHTransport(ssh_targets["box"], ssh_targets, ssh_options)
    try:
        lines, status, err = run(
            transport,
            "import os, sys\nprint(os.environ['FB_X'])\nprint(sys.argv)\nsys.exit(7)\n",
            {"FB_X": "a b 'c' $HOME"},
        )
        assert lines == ["a b 'c' $HOME", "['-']"]
        assert status == 7 and err == ""
        assert [h.role for h in transport.hops] == ["jump host", "box"]
        # a second agent rides the same connection: one more channel, no new login
        assert run(transport, "print(1)\n")[0] == ["1"]
    finally:
        transport.close()
    assert forwards_to_box(ssh_lab) == before_fwd + 1
    assert logins(ssh_lab.box) == before_box + 1


def test_proxyjump_from_ssh_config(ssh_lab: Lab, ssh_options) -> None:
    """`box` is only an alias: HostName, Port, User, IdentityFile, ProxyJump come from config."""
    before = forwards_to_box(ssh_lab)
    transport = SSHTransport(Target(name="box"), {}, ssh_options)
    try:
        assert [h.address for h in transport.hops] == [
            f"{ssh_lab.jump.host}:{ssh_lab.jump.port}",
            f"{ssh_lab.box.host}:{ssh_lab.box.port}",
        ]
        assert run(transport, "print('via config')\n")[:2] == (["via config"], 0)
    finally:
        transport.close()
    assert forwards_to_box(ssh_lab) == before + 1


def test_chain_of_three_hops_from_a_url(ssh_lab: Lab, ssh_home: Path, ssh_options) -> None:
    """jump -> jump again -> box: every hop rides a direct-tcpip channel of the one before."""
    target, jumps = parse_target_url(
        f"ssh://{ssh_lab.user}@{ssh_lab.box.host}:{ssh_lab.box.port}"
        f"?jump={ssh_lab.jump_spec},{ssh_lab.jump_spec}"
    )
    before_jump = logins(ssh_lab.jump)
    transport = SSHTransport(target, {j.name: j for j in jumps}, ssh_options)
    try:
        assert len(transport.hops) == 3
        assert run(transport, "print(6*7)\n")[:2] == (["42"], 0)
    finally:
        transport.close()
    assert logins(ssh_lab.jump) == before_jump + 2


def test_lines_stream_as_they_arrive(ssh_targets: dict, ssh_options) -> None:
    transport = SSHTransport(ssh_targets["box"], ssh_targets, ssh_options)
    try:
        transport.connect()
        started = time.monotonic()
        proc = transport.start(
            ["python3", "-"],
            b"import time\nprint('first', flush=True)\ntime.sleep(2)\nprint('second')\n",
            {},
        )
        seen = [(line, time.monotonic() - started) for line in proc.lines()]
        assert [s[0] for s in seen] == ["first", "second"]
        assert seen[0][1] < 1.5 <= 2.0 <= seen[1][1]
        assert proc.wait(5) == 0
    finally:
        transport.close()


def test_output_over_4_mib_on_both_streams(ssh_targets: dict, ssh_options) -> None:
    """stdout and stderr both far beyond paramiko's 2 MiB window, written interleaved."""
    script = (
        "import sys, hashlib\n"
        "for i in range(6000):\n"
        "    sys.stdout.write(f'{i:05d}' + 'x' * 995 + '\\n')\n"
        "    if i % 2: sys.stderr.write('e' * 1000)\n"
        "sys.stdout.write('y' * (5 << 20))\n"  # one 5 MiB line, no newline at the end
    )
    transport = SSHTransport(ssh_targets["box"], ssh_targets, ssh_options)
    try:
        lines, status, err = run(transport, script)
    finally:
        transport.close()
    assert status == 0
    assert len(lines) == 6001
    assert lines[1234] == "01234" + "x" * 995
    assert (
        hashlib.sha256(lines[-1].encode()).hexdigest()
        == hashlib.sha256(b"y" * (5 << 20)).hexdigest()
    )
    # stderr is held as its head and tail (transports.base.bounded_stderr), all of it drained
    kept = 2 * 64 * 1024
    assert err == "e" * (
        kept // 2
    ) + f"\n[... {3_000_000 - kept} bytes of stderr dropped ...]\n" + "e" * (kept // 2)


# --- refusals ------------------------------------------------------------------------------


def _without_box_key(lab: Lab, home: Path) -> Path:
    known = home / ".ssh" / "known_hosts"
    known.write_text(lab.jump.known_hosts_line() + "\n")
    return known


def test_unknown_host_key_is_refused(ssh_lab: Lab, ssh_home: Path, ssh_targets, ssh_options):
    known = _without_box_key(ssh_lab, ssh_home)
    transport = SSHTransport(ssh_targets["box"], ssh_targets, ssh_options)
    with pytest.raises(HostKeyError) as info:
        transport.connect()
    message = str(info.value)
    assert f"{ssh_lab.box.host}:{ssh_lab.box.port}" in message
    assert str(known) in message and "--accept-new-host-keys" in message
    assert known.read_text().count("\n") == 1  # nothing was added


def test_accept_new_host_keys_records_the_key(ssh_lab, ssh_home, ssh_targets, ssh_options):
    known = _without_box_key(ssh_lab, ssh_home)
    accepting = replace(ssh_options, accept_new_host_keys=True)
    transport = SSHTransport(ssh_targets["box"], ssh_targets, accepting)
    try:
        assert run(transport, "print('ok')\n")[0] == ["ok"]
    finally:
        transport.close()
    assert ssh_lab.box.known_hosts_line() in known.read_text()
    # and from now on it is simply known
    strict = SSHTransport(ssh_targets["box"], ssh_targets, ssh_options)
    try:
        assert run(strict, "print('again')\n")[0] == ["again"]
    finally:
        strict.close()


@pytest.mark.parametrize("accept_new", [False, True])
def test_changed_host_key_is_refused_always(
    ssh_lab: Lab, ssh_home: Path, ssh_targets, ssh_options, tmp_path: Path, accept_new: bool
):
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True
    )
    kind, blob = (tmp_path / "other.pub").read_text().split()[:2]
    known = ssh_home / ".ssh" / "known_hosts"
    before = f"{ssh_lab.jump.known_hosts_line()}\n{ssh_lab.box.known_hosts_name} {kind} {blob}\n"
    known.write_text(before)
    options = replace(ssh_options, accept_new_host_keys=accept_new)
    transport = SSHTransport(ssh_targets["box"], ssh_targets, options)
    with pytest.raises(HostKeyError, match="CHANGED") as info:
        transport.connect()
    real = subprocess.run(
        ["ssh-keygen", "-lf", str(ssh_lab.box.host_key) + ".pub"], capture_output=True, text=True
    ).stdout.split()[1]
    fake = subprocess.run(
        ["ssh-keygen", "-lf", str(tmp_path / "other.pub")], capture_output=True, text=True
    ).stdout.split()[1]
    assert real in str(info.value) and fake in str(info.value)
    assert f"{ssh_lab.box.host}:{ssh_lab.box.port}" in str(info.value)
    assert known.read_text() == before


def test_unknown_jump_host_key_names_the_jump(ssh_lab: Lab, ssh_home, ssh_targets, ssh_options):
    (ssh_home / ".ssh" / "known_hosts").write_text(ssh_lab.box.known_hosts_line() + "\n")
    with pytest.raises(HostKeyError, match=r"\(jump host jump\) is not in"):
        SSHTransport(ssh_targets["box"], ssh_targets, ssh_options).connect()


def test_auth_failure_names_user_and_host(
    ssh_lab: Lab, ssh_home: Path, ssh_targets: dict, ssh_options, tmp_path: Path
):
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    lab_key = tmp_path / "lab_key"
    (ssh_home / ".ssh" / "id_ed25519").rename(lab_key)  # no default key: only the stranger's
    (ssh_home / ".ssh" / "id_ed25519.pub").unlink()
    jump = replace(ssh_targets["jump"], identity_file=str(lab_key))
    box = replace(ssh_targets["box"], identity_file=str(stranger))
    targets = {"jump": jump, "box": box}
    with pytest.raises(AuthError) as info:
        SSHTransport(box, targets, ssh_options).connect()
    # the jump still used the lab key (its own identity_file); the box refused the stranger
    assert f"{ssh_lab.user}@{ssh_lab.box.host}:{ssh_lab.box.port}" in str(info.value)
    assert "box box" in str(info.value)


def test_unreachable_first_hop(ssh_targets: dict, ssh_options) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]  # bound, not listening: refused
        target = Target(name="dead", host="127.0.0.1", port=dead, user="root")
        with pytest.raises(UnreachableError, match=rf"dead .*127.0.0.1:{dead}.*refused"):
            SSHTransport(target, {}, ssh_options).connect()


def test_unresolvable_host(ssh_options) -> None:
    target = Target(name="nowhere", host="nowhere.invalid", user="root")
    with pytest.raises(UnreachableError, match=r"cannot resolve nowhere\.invalid"):
        SSHTransport(target, {}, ssh_options).connect()


def test_box_unreachable_from_the_jump_names_both(ssh_lab: Lab, ssh_targets, ssh_options):
    box = replace(ssh_targets["box"], port=1)  # nothing listens there, seen from the jump
    with pytest.raises(UnreachableError) as info:
        SSHTransport(box, {**ssh_targets, "box": box}, ssh_options).connect()
    text = str(info.value)
    assert f"{ssh_lab.box.host}:1" in text and "unreachable from jump host jump" in text


def test_unknown_jump_name_is_a_target_error(ssh_targets, ssh_options) -> None:
    box = replace(ssh_targets["box"], jump=("nope",))
    with pytest.raises(TargetError, match="jump 'nope'"):
        SSHTransport(box, ssh_targets, ssh_options)


# --- killing and dropping ------------------------------------------------------------------

HANGING = """
import subprocess, sys, time
marker = {marker!r}
sleeper = [sys.executable, "-c", "import time; time.sleep(1000)", marker]
# a grandchild in its own session (like a check that started a server) and one in ours
subprocess.Popen(sleeper, start_new_session=True)
subprocess.Popen(sleeper)
print("started", flush=True)
time.sleep(1000)
"""


def _start_hanging(transport: SSHTransport, marker: str):
    proc = transport.start(["python3", "-"], HANGING.format(marker=marker).encode(), {})
    lines = proc.lines()
    assert next(lines) == "started"
    deadline = time.monotonic() + 5  # Popen returns before the children have exec'd
    while len(pids_with_cmdline(marker)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(pids_with_cmdline(marker)) == 2
    return proc, lines


def test_kill_leaves_no_process_on_the_box(ssh_targets: dict, ssh_options) -> None:
    marker = f"fbmark-{uuid.uuid4().hex}"
    transport = SSHTransport(ssh_targets["box"], ssh_targets, ssh_options)
    try:
        proc, lines = _start_hanging(transport, marker)
        started = time.monotonic()
        proc.kill()
        assert list(lines) == []
        assert proc.wait(5) is None
        assert wait_no_cmdline(marker) == []
        assert time.monotonic() - started < 5
        # the connection itself survives a killed agent
        assert run(transport, "print('still here')\n")[0] == ["still here"]
    finally:
        transport.close()


@pytest.mark.parametrize("where", ["jump", "box"])
def test_connection_killed_mid_run(ssh_lab: Lab, ssh_targets, ssh_options, where: str) -> None:
    """The sshd serving us dies: lines() ends, wait() says None, nothing stays on the box."""
    marker = f"fbmark-{uuid.uuid4().hex}"
    transport = SSHTransport(ssh_targets["box"], ssh_targets, ssh_options)
    try:
        proc, lines = _start_hanging(transport, marker)
        inst = ssh_lab.jump if where == "jump" else ssh_lab.box
        assert inst.kill_sessions()
        started = time.monotonic()
        assert list(lines) == []
        assert proc.wait(10) is None
        assert time.monotonic() - started < 10
        assert wait_no_cmdline(marker) == []
        # the next start reconnects
        assert run(transport, "print('reconnected')\n")[0] == ["reconnected"]
    finally:
        transport.close()


def test_keepalive_is_set_on_every_hop(ssh_targets: dict, ssh_options) -> None:
    transport = SSHTransport(ssh_targets["box"], ssh_targets, replace(ssh_options, keepalive=3))
    try:
        transport.connect()
        for client in transport._clients:
            packetizer = client.get_transport().packetizer
            assert packetizer._Packetizer__keepalive_interval == 3
    finally:
        transport.close()


def test_options_default_to_home_ssh(ssh_lab: Lab, ssh_home: Path) -> None:
    """No options at all: ~/.ssh/config and ~/.ssh/known_hosts of $HOME are used."""
    transport = SSHTransport(Target(name="box"), {}, TransportOptions(connect_timeout=5))
    try:
        assert run(transport, "print('home')\n")[0] == ["home"]
    finally:
        transport.close()


# --- keys: agent, hashed known_hosts ---------------------------------------------------------


def test_key_from_a_running_ssh_agent(
    ssh_lab: Lab, ssh_home: Path, ssh_targets, ssh_options, tmp_path: Path, monkeypatch
) -> None:
    """No identity file anywhere: the only way in is the key held by a real ssh-agent."""
    sock = tmp_path / "agent.sock"
    agent = subprocess.run(
        ["ssh-agent", "-a", str(sock), "-s"], capture_output=True, text=True, check=True
    )
    pid = int(agent.stdout.split("SSH_AGENT_PID=")[1].split(";")[0])
    try:
        env = {"SSH_AUTH_SOCK": str(sock), "PATH": "/usr/bin:/bin"}
        subprocess.run(["ssh-add", "-q", str(ssh_lab.client_key)], env=env, check=True)
        for leftover in (ssh_home / ".ssh").glob("id_*"):
            leftover.unlink()
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        targets = {k: replace(t, identity_file=None) for k, t in ssh_targets.items()}
        transport = SSHTransport(targets["box"], targets, ssh_options)
        try:
            assert run(transport, "print('agent')\n")[0] == ["agent"]
        finally:
            transport.close()
    finally:
        os.kill(pid, signal.SIGTERM)


def test_hashed_known_hosts(ssh_lab: Lab, ssh_home: Path, ssh_targets, ssh_options) -> None:
    known = ssh_home / ".ssh" / "known_hosts"
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(known)], check=True, capture_output=True)
    assert ssh_lab.box.host not in known.read_text()  # really hashed
    transport = SSHTransport(ssh_targets["box"], ssh_targets, ssh_options)
    try:
        assert run(transport, "print('hashed')\n")[0] == ["hashed"]
    finally:
        transport.close()


PRINT_PYTHONS = b"""import os, sys
print(sys.executable)
print(open(f"/proc/{os.getppid()}/cmdline").read().split(chr(0))[0])  # the supervisor's
"""


def test_agent_runs_on_its_python_the_supervisor_on_a_fast_one(
    ssh_targets: dict, ssh_options, tmp_path: Path
) -> None:
    """argv is `sh -c ...` (the engine's python chooser): the agent gets target.python, the
    supervisor the system python3 (a pyenv shim would cost ~0.27 s per run)."""
    link = tmp_path / "python3-custom"
    link.symlink_to("/usr/bin/python3")
    box = replace(ssh_targets["box"], python=str(link))
    transport = SSHTransport(box, {**ssh_targets, "box": box}, ssh_options)
    try:
        proc = transport.start(
            ["sh", "-c", 'exec "$0" -', str(link)],
            PRINT_PYTHONS,
            {},
        )
        lines = list(proc.lines())
        assert proc.wait(5) == 0
    finally:
        transport.close()
    assert lines == [str(link), "/usr/bin/python3"]


# --- hop resolution (no network) -----------------------------------------------------------


def _hops(target: Target, targets: dict, config: str, tmp_path: Path) -> list[tuple[str, str]]:
    path = tmp_path / "config"
    path.write_text(config)
    options = TransportOptions(ssh_config=str(path), known_hosts=str(tmp_path / "kh"))
    return [(h.role, f"{h.user}@{h.address}") for h in SSHTransport(target, targets, options).hops]


def test_proxyjump_lists_follow_openssh(tmp_path: Path) -> None:
    """`ProxyJump a,b`: b is reached through a even if b's own config names another jump."""
    config = """
Host a
  HostName 10.0.0.1
  User ua
Host b
  HostName 10.0.0.2
  Port 2200
  ProxyJump a
Host box
  HostName 10.0.0.3
  User root
  ProxyJump a,b
Host *
  User fallback
"""
    assert _hops(Target(name="box"), {}, config, tmp_path) == [
        ("jump host", "ua@10.0.0.1:22"),
        ("jump host", "fallback@10.0.0.2:2200"),
        ("box", "root@10.0.0.3:22"),
    ]
    # a single jump's own ProxyJump is followed: box2 -> b -> (b's ProxyJump) a
    config += "Host box2\n  HostName 10.0.0.4\n  ProxyJump b\n"
    assert [a for _, a in _hops(Target(name="box2"), {}, config, tmp_path)] == [
        "ua@10.0.0.1:22",
        "fallback@10.0.0.2:2200",
        "fallback@10.0.0.4:22",
    ]


def test_inventory_jumps_nested_and_listed(tmp_path: Path) -> None:
    j1 = Target(name="j1", host="10.1.0.1", user="u")
    j2 = Target(name="j2", host="10.1.0.2", user="u", jump=("j1",))
    nested = Target(name="box", host="10.1.0.3", user="u", jump=("j2",))
    listed = Target(name="box", host="10.1.0.3", user="u", jump=("j1", "j2"))
    targets = {"j1": j1, "j2": j2}
    want = ["u@10.1.0.1:22", "u@10.1.0.2:22", "u@10.1.0.3:22"]
    assert [a for _, a in _hops(nested, targets, "", tmp_path)] == want
    assert [a for _, a in _hops(listed, targets, "", tmp_path)] == want
    # the target's own fields win over the config
    config = "Host 10.1.0.3\n  Port 2222\n  User cfg\n"
    own = Target(name="box", host="10.1.0.3", port=2200, user="me")
    assert _hops(own, {}, config, tmp_path) == [("box", "me@10.1.0.3:2200")]
    assert _hops(replace(own, port=None, user=None), {}, config, tmp_path) == [
        ("box", "cfg@10.1.0.3:2222")
    ]


def test_jump_loop_is_reported(tmp_path: Path) -> None:
    config = "Host a\n  ProxyJump b\nHost b\n  ProxyJump a\n"
    with pytest.raises(TargetError, match="longer than"):
        _hops(Target(name="a"), {}, config, tmp_path)
