"""Oracle (issue 26), real runs: the same config through `ssh` and through factbook's paramiko
path, each hop traced from the sshds' own logs (which user logged in with which key, and which
forward the jump opened), for a handful of representative configs over the lab (a box reachable
only through a jump, tests/sshd.py), plus a CertificateFile login on an sshd that trusts only
certificates.

Keys are chosen per hop by tokens (`IdentityFile KEYS/%r@%h`, after a missing file that both
skip), so the fingerprint in each log says which identity that hop was given.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import cli, fact, free_port, make_kb
from sshd import Lab, SSHDInstance, _keygen, _start_sshd, _write_sshd_config

from factbook.knowledge.fleet.sshconfig import read_ssh_config
from factbook.knowledge.model import Target
from factbook.verification.transports.base import TransportOptions
from factbook.verification.transports.sshconnect import ChainResolver, connect_chain

pytestmark = pytest.mark.ssh

ACCEPTED = re.compile(r"Accepted publickey for (\S+) from \S+ port \d+ ssh2: (\S+) (SHA256:\S+)")
FORWARD = re.compile(r"server_request_direct_tcpip: originator .*, target (\S+) port (\d+)")


def _fingerprint(pub: Path) -> str:
    out = subprocess.run(["ssh-keygen", "-lf", str(pub)], capture_output=True, text=True)
    return out.stdout.split()[1]


@pytest.fixture
def keys(ssh_lab: Lab, ssh_home: Path) -> Iterator[Path]:
    """KEYS/USER@HOST for the jump and the box (distinct keys), authorized for this test."""
    folder = ssh_home / "keys"
    folder.mkdir()
    authorized = ssh_lab.workdir / "authorized_keys"
    before = authorized.read_text()
    lines = []
    for host in (ssh_lab.jump.host, ssh_lab.box.host):
        key = folder / f"{ssh_lab.user}@{host}"  # (a name with dots: not sshd._keygen)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        lines.append(Path(f"{key}.pub").read_text().strip())
    authorized.write_text(before + "\n".join(lines) + "\n")
    try:
        yield folder
    finally:
        authorized.write_text(before)


def _defaults(lab: Lab, home: Path, keys: Path) -> str:
    return (
        "Host *\n"
        f"  UserKnownHostsFile {home / '.ssh' / 'known_hosts'}\n"
        "  StrictHostKeyChecking yes\n  BatchMode yes\n  IdentitiesOnly yes\n"
        "  ConnectTimeout 5\n"
        f"  IdentityFile {keys}/missing-%n\n"
        f"  IdentityFile {keys}/%r@%h\n"
    )


def _jump_port(lab: Lab) -> str:
    return "ssh" if lab.jump.port == 22 else str(lab.jump.port)  # a service name where it can


def _configs(lab: Lab, home: Path, keys: Path) -> dict[str, tuple[str, str]]:
    """name -> (config text, host to reach)."""
    j, jp, b, bp = lab.jump.host, _jump_port(lab), lab.box.host, lab.box.port
    defaults = _defaults(lab, home, keys)
    bare = j if jp == "ssh" else f"{j}:{jp}"
    return {
        # quoted, case-sensitive alias; ProxyJump built from %h; Port by service name
        "tokens": (
            f'Host "Box"\n  HostName {b}\n  Port {bp}\n  ProxyJump %h-gw\n'
            f"Host {b}-gw\n  HostName {j}\n  Port {jp}\n" + defaults,
            "Box",
        ),
        # a bare ProxyJump name with no Host block is a host name
        "bare-jump": (
            f"Host box\n  HostName {b}\n  Port {bp}\n  ProxyJump {bare}\n" + defaults,
            "box",
        ),
        # the jump's HostName matches the pattern that sends hosts through it: not re-matched
        "gw0": (
            f"Host {'.'.join(j.split('.')[:3])}.* 127.0.0.*\n  ProxyJump gw0\n"
            f"Host gw0\n  HostName {j}\n  Port {jp}\n"
            f"Host box\n  HostName {b}\n  Port {bp}\n  ProxyJump gw0\n" + defaults,
            "box",
        ),
        # `Match final`: the second pass matches the resolved name (and keeps the first values)
        "final": (
            f"Host box\n  HostName {b}\n  Port {bp}\nMatch final host {b}\n  ProxyJump gw0\n"
            f"Host gw0\n  HostName {j}\n  Port {jp}\n" + defaults,
            "box",
        ),
    }


def _trace(lab: Lab, jump_at: int, box_at: int) -> dict[str, list[tuple[str, ...]]]:
    time.sleep(0.2)  # the sshds' last log lines
    jump, box = lab.jump.log_text()[jump_at:], lab.box.log_text()[box_at:]
    return {
        "jump logins": [m.groups() for m in ACCEPTED.finditer(jump)],
        "forwards": [m.groups() for m in FORWARD.finditer(jump)],
        "box logins": [m.groups() for m in ACCEPTED.finditer(box)],
    }


def _by_ssh(lab: Lab, config: Path, host: str) -> dict[str, list[tuple[str, ...]]]:
    jump_at, box_at = len(lab.jump.log_text()), len(lab.box.log_text())
    done = subprocess.run(
        ["ssh", "-F", str(config), host, "true"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return _trace(lab, jump_at, box_at)


def _by_factbook(lab: Lab, target: Target, targets: dict[str, Target], config: Path | None):
    jump_at, box_at = len(lab.jump.log_text()), len(lab.box.log_text())
    options = TransportOptions(ssh_config=str(config) if config else None, connect_timeout=5)
    clients = connect_chain(ChainResolver(targets, options).resolve(target), options)
    for client in reversed(clients):
        client.close()
    return _trace(lab, jump_at, box_at)


@pytest.mark.parametrize("name", ["tokens", "bare-jump", "gw0", "final"])
def test_each_hop_as_a_real_ssh_run(
    ssh_lab: Lab, ssh_home: Path, keys: Path, tmp_path: Path, name: str
) -> None:
    text, host = _configs(ssh_lab, ssh_home, keys)[name]
    config = tmp_path / "config"
    config.write_text(text)
    want = _by_ssh(ssh_lab, config, host)
    jump_key = _fingerprint(Path(f"{keys}/{ssh_lab.user}@{ssh_lab.jump.host}.pub"))
    box_key = _fingerprint(Path(f"{keys}/{ssh_lab.user}@{ssh_lab.box.host}.pub"))
    assert want == {
        "jump logins": [(ssh_lab.user, "ED25519", jump_key)],
        "forwards": [(ssh_lab.box.host, str(ssh_lab.box.port))],
        "box logins": [(ssh_lab.user, "ED25519", box_key)],
    }
    # as a targets.yaml host looked up in the user's config, and as an --inventory target
    assert _by_factbook(ssh_lab, Target(name="t", host=host), {}, config) == want
    inventory = read_ssh_config(config).targets
    if host in inventory:
        assert _by_factbook(ssh_lab, inventory[host], inventory, None) == want


def test_the_jump_itself_is_reached_directly(ssh_lab: Lab, ssh_home: Path, keys: Path, tmp_path):
    """`Host 10.213.*` / ProxyJump gw0 with gw0's HostName in that range: `ssh gw0` connects
    straight to it, and so does the --inventory target gw0 (it once jumped through itself)."""
    text, _ = _configs(ssh_lab, ssh_home, keys)["gw0"]
    config = tmp_path / "config"
    config.write_text(text)
    want = _by_ssh(ssh_lab, config, "gw0")
    assert want["jump logins"] and not want["forwards"] and not want["box logins"]
    inventory = read_ssh_config(config).targets
    assert inventory["gw0"].jump == () and inventory["box"].jump == ("gw0",)
    assert _by_factbook(ssh_lab, inventory["gw0"], inventory, None) == want


def test_inventory_config_verifies_through_the_cli(
    ssh_lab: Lab, ssh_home: Path, keys: Path, tmp_path: Path
) -> None:
    """`verify --inventory CONFIG`: the box through the %h jump; a host whose settings hang on
    a `Match exec` fails alone, naming file:line; its command never runs."""
    text, _ = _configs(ssh_lab, ssh_home, keys)["tokens"]
    marker = tmp_path / "exec-ran"
    config = tmp_path / "config"
    odd = f'Host odd\n  HostName {ssh_lab.box.host}\nMatch originalhost odd exec "touch {marker}"\n'
    config.write_text(odd + "  Port 2\n" + text)
    check = fact("os.ok", "cmd", {"path": "exit_code", "eq": 0}, args={"argv": "true"})
    root = make_kb(tmp_path / "kb", [check])
    (root / "targets.yaml").write_text("targets: {}\n")
    argv = ["--inventory", str(config), "--target", "Box,odd", "--format", "json", "--no-save"]
    code, out, _ = cli(root, "verify", *argv)
    results = {r["target"]: r for r in json.loads(out)["results"]}
    assert results["Box"]["outcome"] == "pass", results
    assert results["odd"]["outcome"] == "error"
    assert f"{config}:3: Match exec touch" in results["odd"]["reason"]
    assert code == 3 and not marker.exists()


@pytest.fixture
def cert_box(ssh_lab: Lab, tmp_path: Path) -> Iterator[SSHDInstance]:
    """An sshd on loopback that accepts only certificates signed by its CA (no authorized keys)."""
    work = tmp_path / "certbox"
    work.mkdir()
    _keygen(work / "ca", "factbook-test-ca")
    empty = work / "authorized_keys"
    empty.write_text("")
    inst = SSHDInstance("certbox", "127.0.0.1", free_port(), work, "")
    inst.host_key_pub = _keygen(inst.host_key, "factbook-test-certbox")
    extra = [
        f"TrustedUserCAKeys {work / 'ca.pub'}",
        "LogLevel VERBOSE",
        f"AllowUsers {ssh_lab.user}",
    ]
    _write_sshd_config(inst, empty, extra=extra)
    _start_sshd(inst, None)
    try:
        yield inst
    finally:
        inst.stop()


def test_certificate_file_is_offered(
    ssh_lab: Lab, ssh_home: Path, cert_box: SSHDInstance, tmp_path: Path
) -> None:
    keys = tmp_path / "k"
    (keys / "certs").mkdir(parents=True)
    _keygen(keys / "id", "cert-user")
    subprocess.run(
        ["ssh-keygen", "-q", "-s", str(cert_box.workdir / "ca"), "-I", "factbook-test",
         "-n", ssh_lab.user, "-V", "+1h", str(keys / "id.pub")],
        check=True, capture_output=True,
    )  # fmt: skip
    (keys / "id-cert.pub").rename(keys / "certs" / "certbox.crt")  # not beside the key
    known = tmp_path / "known_hosts"
    known.write_text(cert_box.known_hosts_line() + "\n")
    config = tmp_path / "config"
    config.write_text(
        f"Host certbox\n  HostName {cert_box.host}\n  Port {cert_box.port}\n"
        f"  IdentityFile {keys}/id\n  CertificateFile {keys}/certs/%n.crt\n"
        f"  IdentitiesOnly yes\n  UserKnownHostsFile {known}\n  BatchMode yes\n"
    )
    at = len(cert_box.log_text())
    done = subprocess.run(["ssh", "-F", str(config), "certbox", "true"], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=30)  # fmt: skip
    assert done.returncode == 0, done.stderr
    time.sleep(0.2)
    by_ssh = ACCEPTED.findall(cert_box.log_text()[at:])
    assert [kind for _, kind, _ in by_ssh] == ["ED25519-CERT"]
    at = len(cert_box.log_text())
    for target, targets, cfg in (
        (Target(name="c", host="certbox"), {}, config),
        (read_ssh_config(config).targets["certbox"], {}, None),
    ):
        options = TransportOptions(ssh_config=str(cfg) if cfg else None, connect_timeout=5)
        (client,) = connect_chain(ChainResolver(targets, options).resolve(target), options)
        client.close()
    time.sleep(0.2)
    assert ACCEPTED.findall(cert_box.log_text()[at:]) == by_ssh * 2
