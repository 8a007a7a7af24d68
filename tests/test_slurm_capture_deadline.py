"""scontrol/sinfo get CAPTURE_LIMIT to answer on a `via` login node too (issue 25.2).

The login node is an sshd of the test's own (tests/sshd.py start_extra_box) whose sessions get
`SetEnv PATH=FAKEBIN:...`, where `scontrol` hangs: nothing machine-wide is touched, and no
Slurm cluster is needed (the run never gets past the node list).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import uuid
from pathlib import Path

import pytest
from helpers import cli, fact, make_kb, pids_with_cmdline, wait_no_cmdline
from sshd import Lab, start_extra_box

from factbook.verification.transports import slurm

pytestmark = pytest.mark.ssh

LIMIT = 1.5


def _fake_scontrol(folder: Path, marker: str) -> Path:
    """`scontrol` that hangs (a slurmctld that does not answer), by absolute paths."""
    folder.mkdir()
    fake = folder / "scontrol"
    fake.write_text(f'#!/bin/sh\nexec /usr/bin/python3 -c "import time; time.sleep(60)" {marker}\n')
    fake.chmod(0o755)
    return folder


@pytest.mark.parametrize(
    ("kind", "box_has_timeout"), [("ssh", True), ("openssh", True), ("ssh", False)]
)
def test_hung_scontrol_over_via_times_out(
    kind: str,
    box_has_timeout: bool,
    ssh_lab: Lab,
    ssh_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With timeout(1) on the login node it ends scontrol there at the limit; without it (a
    PATH of the fake alone) the timer here closes the channel CAPTURE_GRACE later. Either way
    one line naming the target and the command, and exit 3."""
    monkeypatch.setattr(slurm, "CAPTURE_LIMIT", LIMIT)
    monkeypatch.setattr(slurm, "CAPTURE_GRACE", 1.0)
    marker = f"fbmark-{uuid.uuid4().hex}"
    fakebin = _fake_scontrol(tmp_path / "fakebin", marker)
    path = f"{fakebin}:/usr/bin:/bin" if box_has_timeout else str(fakebin)
    login = start_extra_box(ssh_lab, "login", [f"SetEnv SHLVL=1 PATH={path}"])
    try:
        with (ssh_home / ".ssh" / "known_hosts").open("a") as known:
            known.write(login.known_hosts_line() + "\n")
        key = str(ssh_home / ".ssh" / "id_ed25519")
        targets = {
            "login": {"transport": kind, "host": login.host, "port": login.port,
                      "user": ssh_lab.user, "identity_file": key},
            "cluster": {"transport": "slurm", "nodes": "n[1-2]", "via": "login"},
        }  # fmt: skip
        check = fact("t.quick", "cmd", {"path": "exit_code", "eq": 0}, args={"argv": ["true"]})
        root = make_kb(tmp_path / "kb", [check], targets={"targets": targets})
        started = time.monotonic()
        code, out, err = cli(root, "verify", "--target", "cluster", "--format", "json", "--no-save")
        took = time.monotonic() - started
        left = wait_no_cmdline(marker, 5.0 if box_has_timeout else 0.0)
    finally:
        for pid in pids_with_cmdline(marker):  # without timeout(1), sshd leaves it running
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        login.stop()
    assert code == 3, out + err
    results = json.loads(out)["results"]
    assert [r["target"] for r in results] == ["cluster"]  # its nodes are not known
    said = f"is unreachable: scontrol show hostnames gave no answer within {LIMIT:g} s"
    for record in results:
        assert record["outcome"] == "error"
        reason = record["reason"]
        assert reason.startswith("cluster (slurm n[1-2] via login (") and said in reason
        assert "\n" not in reason
    assert took < LIMIT + 1.0 + 5  # the fake sleeps 60 s
    if box_has_timeout:
        assert left == [], "timeout(1) did not end scontrol on the login node"
