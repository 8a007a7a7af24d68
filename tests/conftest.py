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
    cluster      a real Slurm cluster (tests/slurm.py: munged, slurmctld, slurmd n1..n4), one per
                 test module that asks for it (about 3 s to start and stop).
    slurm_env    cluster, with SLURM_CONF naming it in this test's environment (srun, sinfo).

Plain helpers (a throwaway knowledge base, the CLI in-process, free ports, live pids) are in
tests/helpers.py; runbook and handbook helpers in tests/runbook_kit.py and handbook_support.py.

The lab starts once per session (about 0.3 s). Without /usr/sbin/sshd these fixtures skip,
except under CI (CI=true), where a missing sshd is a failure: scripts/test installs it. The
Slurm fixtures do the same without slurm-wlm and munge, or without root.

No process the suite starts may outlive it: the session puts FACTBOOK_TEST_SESSION=<uuid> in
the environment every child inherits, and at its end fails (and ends them) if any process
still carries it, a daemon that left our process tree included (a slurmstepd, an sshd).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from build_cache import cached_wheel
from helpers import REPO, pids_with_environ, require
from helpers import kb_copy as copy_shipped_kb
from precompile import precompile
from slurm import Cluster, slurm_missing_reason, start_cluster
from sshd import Lab, SSHDInstance, sshd_missing_reason, start_lab
from transport_lab import container_missing_reason, local_container

# The files that take longest, longest first: CPU seconds of each file run alone on the 2-core
# machine (`/usr/bin/time`, children included; docs/performance.md "The test suite"), files
# that mostly wait (servers, timeouts) placed by their wall time. Under pytest-xdist
# (scripts/test: --dist loadfile) they are handed out in this order before the short files,
# so none of them starts last and the two workers end close together.
SLOW_FILES = (
    "test_getting_started.py",  # a fresh venv with three extras, then the whole first day
    "test_runbook_executor.py",  # ~37 s: kernels, a managed server, a benchmark
    "test_handbook.py",  # ~30 s: the shipped knowledge base's site, built 3 times
    # ~15 s with sglang's answers kept (build_cache.cached_answer), ~65 s the first time
    "test_sglang_conformance.py",
    "test_init_ci.py",  # ~12 s: two fresh venvs (the generated CI's jobs)
    "test_wheel_path.py",  # ~20 s for new sources (deps venvs kept), ~12 s when cached
    "test_orphans.py",  # 14 s CPU, ~70 s wall: watchdogs and dead runs waited for
    "test_integrations_serve.py",  # 4 s CPU, ~60 s wall: slow clients and intervals
    "test_browser_handbook.py",  # ~21 s: Chromium
    "test_bench_client.py",  # ~20 s: a tiny Llama served and benchmarked
    "test_integrations_bench_import.py",  # ~20 s: sglang's bench_serving against it
    "test_handbook_trust.py",  # ~18 s
    "test_fleet_ansible_oracle.py",  # ~18 s: ansible-inventory per case
    "test_writeback.py",  # ~17 s: every shipped fact edited in place
    "test_measure.py",  # ~17 s: torch
    "test_schema_conformance.py",  # ~15 s
    "test_measure_agent.py",  # ~14 s
    "test_mcp_server.py",  # ~13 s
    "test_eagle3_align.py",  # ~10 s
    "test_fleet_ssh.py",
    "test_import_dumps.py",
    "test_runbook_ssh.py",
    "test_verify_agent.py",
    "test_transport_slurm.py",  # 3 s CPU, ~18 s wall: a Slurm cluster started and stopped
)

SESSION_VAR = "FACTBOOK_TEST_SESSION"
_OWN_SESSION: list[str] = []  # the mark this (outermost) session set, if it set one


def pytest_configure(config: pytest.Config) -> None:
    """One mark per session on every child (below), and the order above kept: pytest-xdist
    (3.6+) otherwise hands files out by their number of tests (--loadscope-reorder, on by
    default), which put the one-test first day, the longest file, last."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    if SESSION_VAR not in os.environ:  # a pytest run inside a test leaves it to the outer one
        os.environ[SESSION_VAR] = uuid.uuid4().hex
        _OWN_SESSION.append(f"{SESSION_VAR}={os.environ[SESSION_VAR]}")
    if not hasattr(config, "workerinput") and _OWN_SESSION:  # before any worker starts
        workers = config.getoption("numprocesses", None)
        precompile(config, REPO / "src", REPO / "tests", test_modules=bool(workers))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):  # not an xdist worker: the order as written
        return
    rank = {name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable within a file


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:160]


def _survivors(mark: str) -> list[int]:
    """Processes carrying the session's mark, less multiprocessing's resource tracker of this
    very process (a spawn context starts it): it ends when we do, after this check."""
    return [pid for pid in pids_with_environ(mark) if not _our_resource_tracker(pid)]


def _our_resource_tracker(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    ours = stat[1:2] == [str(os.getpid())]
    return ours and "from multiprocessing.resource_tracker import main" in _cmdline(pid)


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Iterator[None]:
    """After every fixture's teardown and every other sessionfinish (pytest-xdist stops its
    workers there, which carry the mark too): no process that inherited our mark is left."""
    yield
    if not _OWN_SESSION:
        return
    deadline = time.monotonic() + 5.0  # a grace for teardowns just signalled
    while (left := _survivors(_OWN_SESSION[0])) and time.monotonic() < deadline:
        time.sleep(0.05)
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


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require(slurm_missing_reason())
    c = start_cluster(tmp_path_factory.mktemp("slurm"))
    try:
        yield c
    finally:
        # jobs are cancelled before the daemons stop, so no slurmstepd is left to kill
        assert c.stop() == [], "slurmstepd survived its slurmd (tests/slurm.py: Cluster.stop)"


@pytest.fixture
def slurm_env(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> Cluster:
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    return cluster


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
