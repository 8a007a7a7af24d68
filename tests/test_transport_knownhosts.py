"""known_hosts as OpenSSH reads it, on the paramiko path and the openssh path alike (13.2).

Each case writes the lab client's known_hosts (and maybe its ssh config), then connects to the
box behind the jump with both transports: the system ssh is the reference.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import pytest
from sshd import Lab

from factbook.errors import HostKeyError
from factbook.knowledge.model import Target
from factbook.verification.transports.base import transport_for

pytestmark = pytest.mark.ssh
KINDS = ("ssh", "openssh")
OTHER_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"


def _targets(lab: Lab, home: Path, kind: str) -> dict[str, Target]:
    key = str(home / ".ssh" / "id_ed25519")
    jump = Target(
        name="jump", transport=kind, host=lab.jump.host, port=lab.jump.port, user=lab.user,
        identity_file=key,
    )  # fmt: skip
    box = Target(
        name="box", transport=kind, host=lab.box.host, port=lab.box.port, user=lab.user,
        identity_file=key, jump=("jump",),
    )  # fmt: skip
    return {"jump": jump, "box": box}


def _run(kind: str, lab: Lab, home: Path, options, target: Target | None = None) -> list[str]:
    targets = _targets(lab, home, kind)
    transport = transport_for(target or targets["box"], targets, options)
    try:
        proc = transport.start(["python3", "-"], b"print('in')", {})
        lines = list(proc.lines())
        proc.wait(10)
        return lines
    finally:
        transport.close()


def _key(inst) -> str:
    return " ".join(inst.known_hosts_line().split()[1:3])


def _wild(name: str) -> str:
    """The last character of the host replaced by `?`, the last octet's digits by `*`."""
    if name.startswith("["):
        host, port = name[1:].split("]:")
        return f"[{host[:-1]}?]:{port}"
    return name.rsplit(".", 1)[0] + ".*"


@pytest.fixture
def known(ssh_home: Path) -> Path:
    return ssh_home / ".ssh" / "known_hosts"


@pytest.mark.parametrize("kind", KINDS)
def test_wildcard_patterns_match(kind, ssh_lab: Lab, ssh_home: Path, ssh_options, known) -> None:
    known.write_text(
        f"{_wild(ssh_lab.jump.known_hosts_name)} {_key(ssh_lab.jump)}\n"
        f"{_wild(ssh_lab.box.known_hosts_name)} {_key(ssh_lab.box)}\n"
    )
    assert _run(kind, ssh_lab, ssh_home, ssh_options) == ["in"]


@pytest.mark.parametrize("kind", KINDS)
def test_negated_pattern_excludes(kind, ssh_lab: Lab, ssh_home: Path, ssh_options, known) -> None:
    known.write_text(
        f"*,!{ssh_lab.jump.known_hosts_name} {_key(ssh_lab.jump)}\n"
        f"{ssh_lab.box.known_hosts_line()}\n"
    )
    with pytest.raises(HostKeyError, match="is not in"):
        _run(kind, ssh_lab, ssh_home, ssh_options)


@pytest.mark.parametrize("kind", KINDS)
def test_unrelated_marker_lines_are_fine(kind, ssh_lab, ssh_home, ssh_options, known) -> None:
    """One @cert-authority line used to make every SSH check an internal error."""
    known.write_text(
        f"@cert-authority *.example.com {OTHER_KEY}\n@revoked old.example.com {OTHER_KEY}\n"
        f"@future-marker x {OTHER_KEY}\nnot a valid line\n"
        f"{ssh_lab.jump.known_hosts_line()}\n{ssh_lab.box.known_hosts_line()}\n"
    )
    assert _run(kind, ssh_lab, ssh_home, ssh_options) == ["in"]


@pytest.mark.parametrize("kind", KINDS)
def test_revoked_key_is_refused(kind, ssh_lab: Lab, ssh_home: Path, ssh_options, known) -> None:
    known.write_text(
        f"{ssh_lab.jump.known_hosts_line()}\n{ssh_lab.box.known_hosts_line()}\n"
        f"@revoked * {_key(ssh_lab.box)}\n"
    )
    with pytest.raises(HostKeyError, match="REVOKED"):
        _run(kind, ssh_lab, ssh_home, ssh_options)


def test_host_known_only_through_a_ca_names_the_line(ssh_lab, ssh_home, ssh_options, known):
    known.write_text(f"{ssh_lab.jump.known_hosts_line()}\n# CA\n@cert-authority * {OTHER_KEY}\n")
    with pytest.raises(HostKeyError) as info:
        _run("ssh", ssh_lab, ssh_home, ssh_options)
    message = str(info.value)
    assert f"{known}:3: @cert-authority" in message and "transport: openssh" in message


@pytest.mark.parametrize("kind", KINDS)
def test_host_key_alias(kind, ssh_lab: Lab, ssh_home: Path, ssh_options, known) -> None:
    """HostKeyAlias in ~/.ssh/config: the key is looked up under the alias, without the
    `[ ]:port` form even on another port (OpenSSH 9.2 does so)."""
    config = ssh_home / ".ssh" / "config"
    config.write_text(config.read_text().replace("Host box\n", "Host box\n  HostKeyAlias labbox\n"))
    known.write_text(f"{ssh_lab.jump.known_hosts_line()}\nlabbox {_key(ssh_lab.box)}\n")
    target = Target(name="box", transport=kind, host="box")
    assert _run(kind, ssh_lab, ssh_home, ssh_options, target) == ["in"]


def test_changed_key_lists_where_the_old_one_is(ssh_lab, ssh_home, ssh_options, known) -> None:
    known.write_text(
        f"{ssh_lab.jump.known_hosts_line()}\n{ssh_lab.box.known_hosts_name} {OTHER_KEY}\n"
    )
    blob = base64.b64decode(OTHER_KEY.split()[1])
    held = "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    with pytest.raises(HostKeyError, match="CHANGED.*" + re.escape(f"{held} ({known}:2)")):
        _run("ssh", ssh_lab, ssh_home, ssh_options)
