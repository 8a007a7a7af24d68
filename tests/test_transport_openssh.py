"""transport: openssh against the real sshd lab: the system ssh binary carries the agent."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from sshd import Lab

from factbook.errors import AuthError, HostKeyError, TargetError
from factbook.knowledge.model import Target
from factbook.verification.transports.base import transport_for
from factbook.verification.transports.openssh import OpenSSHTransport

pytestmark = pytest.mark.ssh


def _run(transport, script: str) -> tuple[list[str], int | None]:
    proc = transport.start(["python3", "-"], script.encode(), {})
    try:
        return list(proc.lines()), proc.wait(10)
    finally:
        proc.kill()


def _targets(lab: Lab, key: str) -> dict[str, Target]:
    jump = Target(
        name="jump", transport="openssh", host=lab.jump.host, port=lab.jump.port, user=lab.user,
        identity_file=key,
    )  # fmt: skip
    box = Target(
        name="box", transport="openssh", host=lab.box.host, port=lab.box.port, user=lab.user,
        identity_file=key, jump=("jump",),
    )  # fmt: skip
    return {"jump": jump, "box": box}


def _forwards(lab: Lab) -> int:
    needle = f"target {lab.box.host} port {lab.box.port}"
    return sum(needle in line for line in lab.jump.log_text().splitlines())


def test_odd_paths_survive_the_nested_proxy_command(
    ssh_lab: Lab, ssh_home: Path, ssh_options, tmp_path: Path
) -> None:
    """A key path with a space, a quote-worthy `$`, and `%` (an ssh token) on every hop."""
    odd = tmp_path / "dir with space $HOME" / "k%h'ey"
    odd.parent.mkdir()
    shutil.copy(ssh_home / ".ssh" / "id_ed25519", odd)
    odd.chmod(0o600)
    targets = _targets(ssh_lab, str(odd))
    before = _forwards(ssh_lab)
    transport = OpenSSHTransport(targets["box"], targets, replace(ssh_options, ssh_config=None))
    assert _run(transport, "print('through')") == (["through"], 0)
    assert _forwards(ssh_lab) == before + 1


@pytest.mark.parametrize(
    "field", [{"host": "box;touch /tmp/x"}, {"host": "-oProxyCommand=x"}, {"user": "u$(id)"}]
)
def test_shell_words_in_target_fields_are_refused(ssh_lab: Lab, ssh_options, field) -> None:
    target = replace(Target(name="box", transport="openssh", host="h"), **field)
    with pytest.raises(TargetError, match="is not a valid SSH"):
        transport_for(target, {}, ssh_options)


@pytest.mark.parametrize("kind", ["ssh", "openssh"])
@pytest.mark.parametrize("route", ["ProxyCommand", "ProxyJump"])
def test_config_alone_reaches_the_box(
    ssh_lab: Lab, ssh_home: Path, ssh_options, kind: str, route: str
) -> None:
    """A host defined only in an Include'd file, reached by its ProxyCommand or ProxyJump, with
    user and key from a Match block: on paramiko (issue 13.2) as with the system ssh."""
    ssh = ssh_home / ".ssh"
    (ssh / "config.d").mkdir()
    via = (
        f"ProxyCommand ssh -F {ssh / 'config'} -W %h:%p jump"
        if route == "ProxyCommand"
        else "ProxyJump jump"
    )
    (ssh / "config.d" / "lab.conf").write_text(
        f"Host hidden-box\n  HostName {ssh_lab.box.host}\n  Port {ssh_lab.box.port}\n  {via}\n"
    )
    config = ssh / "config"
    config.write_text(f"Include {ssh / 'config.d'}/*.conf\n" + config.read_text())
    config.write_text(
        config.read_text() + "\nMatch originalhost hidden-box\n"
        f"  User {ssh_lab.user}\n  IdentityFile {ssh / 'id_ed25519'}\n"
        f"  UserKnownHostsFile {ssh / 'known_hosts'}\n"
    )
    before = _forwards(ssh_lab)
    target = Target(name="b", transport=kind, host="hidden-box")
    transport = transport_for(target, {}, replace(ssh_options, known_hosts=None))
    try:
        assert _run(transport, "print('via include')") == (["via include"], 0)
    finally:
        transport.close()
    assert _forwards(ssh_lab) == before + 1


@pytest.mark.parametrize("kind", ["ssh", "openssh"])
def test_identities_only_is_honoured(
    ssh_lab: Lab, ssh_home: Path, ssh_options, kind: str, tmp_path: Path
) -> None:
    """IdentitiesOnly yes + a key the box does not accept: the default key that WOULD work
    (~/.ssh/id_ed25519) must not be tried, so authentication fails."""
    import subprocess

    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    config = ssh_home / ".ssh" / "config"
    text = config.read_text().replace(str(ssh_home / ".ssh" / "id_ed25519"), str(other))
    config.write_text(text)
    assert "IdentitiesOnly yes" in text
    transport = transport_for(Target(name="box", transport=kind, host="box"), {}, ssh_options)
    with pytest.raises(AuthError, match="authentication failed"):
        transport.start(["python3", "-"], b"print(1)", {})
    transport.close()
    config.write_text(text.replace("IdentitiesOnly yes", "IdentitiesOnly no"))
    if kind == "ssh":  # paramiko then also tries ~/.ssh/id_ed25519, as ssh would
        transport = transport_for(Target(name="box", transport=kind, host="box"), {}, ssh_options)
        try:
            assert _run(transport, "print(2)") == (["2"], 0)
        finally:
            transport.close()


def test_unknown_key_refused_unless_accept_new(ssh_lab: Lab, ssh_home: Path, ssh_options) -> None:
    known = ssh_home / ".ssh" / "known_hosts"
    known.write_text(ssh_lab.jump.known_hosts_line() + "\n")
    targets = _targets(ssh_lab, str(ssh_home / ".ssh" / "id_ed25519"))
    with pytest.raises(HostKeyError, match=r"is not in known_hosts.*--accept-new-host-keys"):
        transport_for(targets["box"], targets, ssh_options).start(["python3", "-"], b"", {})
    assert ssh_lab.box.known_hosts_name not in known.read_text()
    accepting = replace(ssh_options, accept_new_host_keys=True)
    assert _run(transport_for(targets["box"], targets, accepting), "print(1)") == (["1"], 0)
    recorded = known.read_text()
    assert ssh_lab.box.known_hosts_line().split()[-1] in recorded


def test_control_master_from_the_user_config_is_reused(
    ssh_lab: Lab, ssh_home: Path, ssh_options, tmp_path: Path
) -> None:
    """ControlMaster/ControlPersist in ~/.ssh/config: the second start logs in no more."""
    config = ssh_home / ".ssh" / "config"
    sockets = Path("/tmp") / f"fbcm-{tmp_path.name[-12:]}"
    sockets.mkdir(exist_ok=True)
    config.write_text(
        f"Host box\n  ControlMaster auto\n  ControlPath {sockets}/%C\n  ControlPersist 20\n\n"
        + config.read_text()
    )
    transport = transport_for(Target(name="box", transport="openssh", host="box"), {}, ssh_options)
    logins = ssh_lab.box.log_text().count("Accepted publickey")
    try:
        assert _run(transport, "print(1)") == (["1"], 0)
        assert _run(transport, "print(2)") == (["2"], 0)
        assert ssh_lab.box.log_text().count("Accepted publickey") == logins + 1
    finally:
        import subprocess

        subprocess.run(["ssh", "-F", str(config), "-O", "exit", "box"], capture_output=True)
        shutil.rmtree(sockets, ignore_errors=True)


def test_openssh_url_target(ssh_lab: Lab, ssh_home: Path, tmp_path: Path) -> None:
    """`--target openssh://user@host:port?jump=...`: the URL form of transport: openssh."""
    from helpers import cli, fact, make_kb

    url = ssh_lab.box_url().replace("ssh://", "openssh://", 1)
    facts = [fact("t.cmd", "cmd", {"path": "stdout", "eq": "hi\n"}, args={"argv": ["echo", "hi"]})]
    root = make_kb(tmp_path / "kb", facts, targets={"targets": {}})
    before = _forwards(ssh_lab)
    code, out, err = cli(root, "verify", "--target", url, "--no-save")
    assert code == 0, out + err
    assert _forwards(ssh_lab) == before + 1
    code, out, err = cli(root, "verify", "--target", "ftp://x", "--no-save")
    assert code == 2 and "use ssh:// or openssh://" in err
