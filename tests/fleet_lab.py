"""More boxes behind the lab's one jump: N extra sshds beside the lab's box (same network
namespace when there is one, so the client reaches them only through the jump).

    boxes = add_boxes(lab, 8)          # SSHDInstance each, host keys in lab.known_hosts
    fleet_targets_yaml(lab, boxes)     # targets.yaml text: jump + box-01.. in group `fleet`
    stop_boxes(boxes)

Used by tests/test_fleet_ssh.py and bench/fleet.py.
"""

from __future__ import annotations

import socket
from pathlib import Path

from sshd import (
    Lab,
    SSHDInstance,
    _keygen,
    _start_sshd,
    _write_sshd_config,
    port_refused,
)


def _free_port_in(lab: Lab) -> int:
    """A loopback port free here; in a netns it is the namespace's own loopback, which the
    client cannot reach, so only the client-side check (refused) is possible, as for lab.box."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port_refused("127.0.0.1", port, 0.5):
            return port


def add_boxes(lab: Lab, count: int, *, prefix: str = "fleetbox") -> list[SSHDInstance]:
    """Start `count` box sshds reachable from the lab's jump; their host keys are added to
    the lab's known_hosts (copied by the ssh_home fixture after this)."""
    boxes = []
    authorized = lab.workdir / "authorized_keys"
    used = {lab.box.port}
    try:
        for i in range(count):
            port = _free_port_in(lab)
            while port in used:
                port = _free_port_in(lab)
            used.add(port)
            inst = SSHDInstance(f"{prefix}{i:03d}", "127.0.0.1", port, lab.workdir, "")
            inst.host_key_pub = _keygen(inst.host_key, f"factbook-test-{inst.name}")
            _write_sshd_config(inst, authorized, extra=["LogLevel VERBOSE", "SetEnv SHLVL=1"])
            _start_sshd(inst, lab.netns)
            boxes.append(inst)
            lab._extra.append(inst)
    except BaseException:
        stop_boxes(boxes)
        raise
    with lab.known_hosts.open("a") as fh:
        for inst in boxes:
            fh.write(inst.known_hosts_line() + "\n")
    return boxes


def stop_boxes(boxes: list[SSHDInstance]) -> None:
    for inst in boxes:
        inst.stop()


def fleet_targets_yaml(
    lab: Lab, boxes: list[SSHDInstance], home: Path, *, names: list[str] | None = None
) -> str:
    """targets.yaml naming the jump and every box (box-001...) in group `fleet`."""
    key = home / ".ssh" / "id_ed25519"
    names = names or [f"box-{i + 1:03d}" for i in range(len(boxes))]
    lines = [
        "targets:",
        f"  jump: {{host: {lab.jump.host}, port: {lab.jump.port}, user: {lab.user}, "
        f"identity_file: {key}}}",
    ]
    for name, inst in zip(names, boxes, strict=True):
        lines.append(
            f"  {name}: {{host: {inst.host}, port: {inst.port}, user: {lab.user}, "
            f"identity_file: {key}, jump: jump}}"
        )
    lines += ["groups:", "  fleet:", f"    targets: [{', '.join(names)}]"]
    return "\n".join(lines) + "\n"


def jump_logins(lab: Lab, since: int = 0) -> int:
    """Successful logins the jump logged after byte offset `since` of its log."""
    return lab.jump.log_text()[since:].count("Accepted publickey")


def jump_forwards(lab: Lab, since: int = 0) -> int:
    """direct-tcpip channels the jump opened after byte offset `since`."""
    return lab.jump.log_text()[since:].count("direct-tcpip")


def log_size(inst: SSHDInstance) -> int:
    return len(inst.log_text())
