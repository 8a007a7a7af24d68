"""Inventories that reach the sshd lab's box (tests/sshd.py) through each transport.

    ssh               paramiko, box behind the jump (targets.yaml `jump:`)
    openssh           the system ssh binary, the same inventory
    exec-via-ssh      `unshare --pid ...` (a fresh PID + mount namespace: a container) run on
                      the box reached with paramiko, as `pct exec` runs on a Proxmox host
    exec-via-openssh  the same through the system ssh
    exec              `nsenter` into a local namespace container (container_pid) on this machine

`inventory(kind, lab, home)` returns (targets.yaml dict, the target to verify).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sshd import Lab

SSH_KINDS = ("ssh", "openssh", "exec-via-ssh", "exec-via-openssh")
CONTAINER = ["unshare", "--fork", "--pid", "--mount-proc", "--kill-child", "--"]


def inventory(
    kind: str, lab: Lab, home: Path, container_pid: int | None = None, **box: Any
) -> tuple[dict[str, Any], str]:
    """targets.yaml content reaching the box with `kind`; `box` overrides the box's fields."""
    key = str(home / ".ssh" / "id_ed25519")
    transport = "openssh" if kind in ("openssh", "exec-via-openssh") else "ssh"
    jump = {"host": lab.jump.host, "port": lab.jump.port, "user": lab.user, "identity_file": key}
    box_fields = {
        "transport": transport,
        "host": lab.box.host,
        "port": lab.box.port,
        "user": lab.user,
        "identity_file": key,
        "jump": ["jump"],
        **box,
    }
    targets: dict[str, Any] = {"jump": {**jump, "transport": transport}, "box": box_fields}
    if kind.startswith("exec-via"):
        targets["ct"] = {"transport": "exec", "exec": CONTAINER, "via": "box"}
        return {"targets": targets}, "ct"
    if kind == "exec":
        assert container_pid is not None
        prefix = ["nsenter", "-t", str(container_pid), "-a", "--", "env", "FB_CARRIER=1"]
        return {"targets": {"ct": {"transport": "exec", "exec": prefix}}}, "ct"
    return {"targets": targets}, "box"


def container_missing_reason() -> str | None:
    """Why namespaces cannot stand in for a container here, or None."""
    if os.geteuid() != 0:
        return "namespace containers need root (unshare --pid, nsenter)"
    probe = subprocess.run([*CONTAINER, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare does not work here: {probe.stderr.strip()}"
    return None


@contextlib.contextmanager
def local_container() -> Iterator[int]:
    """A PID + mount namespace with a sleeping init; yields the host pid of that init."""
    proc = subprocess.Popen([*CONTAINER, "sleep", "1000"], start_new_session=True)
    try:
        deadline = time.monotonic() + 5
        kids: list[str] = []
        while not kids and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            time.sleep(0.02)
        assert kids, "the namespace container did not start"
        yield int(kids[0])
    finally:
        proc.kill()
        proc.wait()
