"""Shared fixtures: a real OpenSSH box reachable only through a real OpenSSH jump host.

Use them in any test that needs a remote target (mark it `@pytest.mark.ssh`):

    ssh_lab      session-wide tests.sshd.Lab: .box and .jump (SSHDInstance: host, port, log_text(),
                 kill_sessions()), .box_url() -> "ssh://root@127.0.0.1:P?jump=root@10.213.N.2:22",
                 .isolated (True: the box is unreachable except through the jump), .ssh_argv().
    sshd_box     ssh_lab.box
    sshd_jump    ssh_lab.jump
    ssh_home     a per-test copy of the lab's client home (.ssh/config naming `box` and `jump`,
                 known_hosts with both host keys, id_ed25519), with $HOME pointing at it, so
                 code that reads ~/.ssh (paramiko, factbook's SSH transport, a CLI subprocess
                 inheriting os.environ) sees the lab and nothing of the real user.
    ssh_options  factbook TransportOptions using ssh_home's known_hosts and config.
    ssh_targets  {"jump": Target, "box": Target(jump=("jump",))} for transport_for().
    kb_copy      a per-test copy of the shipped knowledge base (facts, checks, targets, milestones).

Plain helpers (a throwaway knowledge base, the CLI in-process, free ports, live pids) are in
tests/helpers.py; runbook and handbook helpers in tests/runbook_kit.py and handbook_support.py.

The lab starts once per session (about 0.3 s). Without /usr/sbin/sshd these fixtures skip,
except under CI (CI=true), where a missing sshd is a failure: scripts/test installs it.

No process the suite starts may outlive it: the session puts FACTBOOK_TEST_SESSION=<uuid> in
the environment every child inherits, and at its end fails (and ends them) if any process
still carries it, a daemon that left our process tree included (a slurmstepd, an sshd).
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from build_cache import cached_wheel
from helpers import kb_copy as copy_shipped_kb
from helpers import require, wait_no_environ
from sshd import Lab, SSHDInstance, sshd_missing_reason, start_lab
from transport_lab import container_missing_reason, local_container

# The files that take longest (`--durations`, docs/performance.md "The test suite"), longest
# first. Under pytest-xdist (scripts/test: --dist loadfile) they are collected first, so they
# are handed out before the short files and none of them starts last on an idle machine.
SLOW_FILES = (
    "test_getting_started.py",  # a fresh venv with three extras, then the whole first day
    "test_wheel_path.py",
    "test_init_ci.py",  # two fresh venvs (the generated CI's jobs)
    "test_sglang_conformance.py",
    "test_runbook_executor.py",
    "test_handbook.py",
    "test_browser_handbook.py",
    "test_measure_agent.py",
    "test_orphans.py",
    "test_transport_slurm.py",
    "test_verify_agent.py",
    "test_runbook_ssh.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):  # not an xdist worker: the order as written
        return
    rank = {name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable within a file


SESSION_VAR = "FACTBOOK_TEST_SESSION"
_OWN_SESSION: list[str] = []  # the mark this (outermost) session set, if it set one


def pytest_configure(config: pytest.Config) -> None:
    if SESSION_VAR not in os.environ:  # a pytest run inside a test leaves it to the outer one
        os.environ[SESSION_VAR] = uuid.uuid4().hex
        _OWN_SESSION.append(f"{SESSION_VAR}={os.environ[SESSION_VAR]}")


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:160]


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Iterator[None]:
    """After every fixture's teardown and every other sessionfinish (pytest-xdist stops its
    workers there, which carry the mark too): no process that inherited our mark is left."""
    yield
    if not _OWN_SESSION:
        return
    left = wait_no_environ(_OWN_SESSION[0], 5.0)  # a grace for teardowns just signalled
    if not left:
        return
    lines = [f"  {pid}: {_cmdline(pid)}" for pid in left]
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    text = f"{len(left)} process(es) the suite started survived it (now killed):\n" + "\n".join(
        lines
    )
    if reporter is not None:
        reporter.write_line(text, red=True)
    else:
        print(text)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def ssh_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    require(sshd_missing_reason())
    lab = start_lab(tmp_path_factory.mktemp("sshd-lab"))
    try:
        yield lab
    finally:
        lab.stop()


@pytest.fixture
def sshd_box(ssh_lab: Lab) -> SSHDInstance:
    return ssh_lab.box


@pytest.fixture
def sshd_jump(ssh_lab: Lab) -> SSHDInstance:
    return ssh_lab.jump


@pytest.fixture
def ssh_home(ssh_lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = ssh_lab.copy_home(tmp_path / "home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)  # only the lab's key, never the user's
    return home


@pytest.fixture
def ssh_options(ssh_home: Path):  # -> TransportOptions (imported lazily: other tests skip it)
    from factbook.verification.transports.base import TransportOptions

    return TransportOptions(
        known_hosts=str(ssh_home / ".ssh" / "known_hosts"),
        ssh_config=str(ssh_home / ".ssh" / "config"),
        connect_timeout=5.0,
        keepalive=2.0,
    )


@pytest.fixture
def ssh_targets(ssh_lab: Lab, ssh_home: Path) -> dict:
    from factbook.knowledge.model import Target

    key = str(ssh_home / ".ssh" / "id_ed25519")
    jump = Target(
        name="jump", host=ssh_lab.jump.host, port=ssh_lab.jump.port, user=ssh_lab.user,
        identity_file=key,
    )  # fmt: skip
    box = Target(
        name="box", host=ssh_lab.box.host, port=ssh_lab.box.port, user=ssh_lab.user,
        identity_file=key, jump=("jump",),
    )  # fmt: skip
    return {"jump": jump, "box": box}


@pytest.fixture
def kb_copy(tmp_path: Path) -> Path:
    """A copy of the shipped knowledge base's facts, checks, targets and milestones."""
    return copy_shipped_kb(tmp_path / "kb", ("facts", "checks"))


@pytest.fixture
def container_pid() -> Iterator[int]:
    """A process in its own namespaces (unshare), standing in for a container: its pid."""
    reason = container_missing_reason()
    if reason:
        pytest.skip(reason)
    with local_container() as pid:
        yield pid


@pytest.fixture(scope="session")
def factbook_wheel() -> Path:
    """factbook's wheel (helpers.build_wheel), built once per machine for each content of the
    tree (tests/build_cache.py): tests read it, never write beside it."""
    return cached_wheel()
