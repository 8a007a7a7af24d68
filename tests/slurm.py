"""A real Slurm cluster on this machine for tests: munged, slurmctld and four slurmd.

Debian's slurm-wlm is built with multiple-slurmd support, so four node names (n1..n4) run as
four slurmd processes on this one host (`slurmd -N n1`), each on its own port; srun reaches
them as it reaches the nodes of a real cluster. Everything (munge key and socket, state, spool,
logs, ports) lives in a temporary directory; the daemons run in the foreground as our children
and are stopped by pid. Needs root (slurmd, munged as root) and `apt-get install slurm-wlm
munge` (scripts/test installs them when root).

Usable without pytest: `python tests/slurm.py` starts a cluster and prints SLURM_CONF.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from helpers import free_port, pids_with_environ, wait_no_environ

NODES = ("n1", "n2", "n3", "n4")
BINARIES = ("munged", "slurmctld", "slurmd", "srun", "scontrol", "sinfo")


def slurm_missing_reason() -> str | None:
    """Why the cluster cannot start here, or None when it can."""
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        return f"{', '.join(missing)} not installed (apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "the Slurm fixture runs slurmd and munged as root"
    return None


@dataclass
class Cluster:
    """A running test cluster: `env` (SLURM_CONF) for srun/sinfo/scontrol, `nodes` n1..n4."""

    workdir: Path
    nodes: tuple[str, ...] = NODES
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        return self.workdir / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=60)

    def node_state(self, node: str) -> str:
        out = self.run("sinfo", "-h", "-N", "-n", node, "-o", "%T").stdout.strip()
        return out.splitlines()[0] if out else ""

    def jobs_started(self) -> int:
        """How many jobs (one per srun) slurmctld has allocated so far."""
        log = (self.workdir / "log" / "slurmctld.log").read_text()
        return log.count("sched: _slurm_rpc_allocate_resources JobId=")

    def resume(self, node: str) -> None:
        self.run("scontrol", "update", f"nodename={node}", "state=resume")

    def stop(self) -> list[int]:
        """Cancel every job, stop the daemons, then end what they left: a slurmstepd is not
        our child (slurmd daemonizes it) and outlives a stopped slurmd, e.g. the step of an
        srun killed mid-run. Each carries our SLURM_CONF in its environment, which finds it.
        Returns the pids that had to be killed after the daemons stopped."""
        mark = f"SLURM_CONF={self.conf}"
        if self.procs and all(p.poll() is None for p in self.procs):
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                self.run("scancel", "--quiet", "--full", "--user", "root")
                deadline = time.monotonic() + 10
                while (
                    time.monotonic() < deadline
                    and self.run("squeue", "-h", "-o", "%A").stdout.strip()
                ):
                    time.sleep(0.1)
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        left = wait_no_environ(mark, 2.0)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if wait_no_environ(mark, 5.0):
            raise RuntimeError(f"test Slurm cluster: processes survive: {pids_with_environ(mark)}")
        return left


def _write_conf(d: Path, ports: list[int], extra: tuple[str, ...] = ()) -> None:
    lines = [
        "ClusterName=fbtest",
        "SlurmctldHost=localhost",
        f"SlurmctldPort={ports[0]}",
        f"SlurmdPort={ports[1]}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={d / 'munge' / 'munge.sock'}",
        f"StateSaveLocation={d / 'state'}",
        f"SlurmdSpoolDir={d / 'spool'}/%n",
        f"SlurmctldPidFile={d / 'slurmctld.pid'}",
        f"SlurmdPidFile={d / 'spool'}/slurmd-%n.pid",
        f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={d / 'log'}/slurmd-%n.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "MpiDefault=none",
        "ReturnToService=2",
        "SlurmdTimeout=30",
        "KillWait=2",
    ]
    for node, port in zip(NODES, ports[2:], strict=True):
        lines.append(
            f"NodeName={node} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} CPUs=1 "
            "State=UNKNOWN"
        )
    lines.append(f"PartitionName=gpu Nodes={','.join(NODES)} Default=YES MaxTime=INFINITE State=UP")
    lines += extra
    (d / "slurm.conf").write_text("\n".join(lines) + "\n")


def start_cluster(workdir: Path, timeout: float = 30.0, extra: tuple[str, ...] = ()) -> Cluster:
    """munged, slurmctld and one slurmd per node name, all ready (sinfo: idle) on return;
    `extra` lines are added to slurm.conf (e.g. a TaskProlog)."""
    cluster = Cluster(workdir)
    for sub in ("munge", "state", "log", *(f"spool/{n}" for n in NODES)):
        (workdir / sub).mkdir(parents=True, exist_ok=True)
    munge = workdir / "munge"
    # munged wants every directory above its socket executable by all (pytest's are 0700)
    for parent in (munge, *munge.parents):
        if not parent.stat().st_mode & 0o001:
            parent.chmod(parent.stat().st_mode | 0o011)
    key = munge / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    _write_conf(workdir, [free_port() for _ in range(2 + len(NODES))], extra)
    log = (workdir / "log" / "daemons.out").open("wb")
    try:
        cluster.procs.append(
            subprocess.Popen(
                [
                    "munged",
                    "--foreground",
                    f"--key-file={key}",
                    f"--socket={munge / 'munge.sock'}",
                    f"--pid-file={munge / 'munged.pid'}",
                    f"--log-file={munge / 'munged.log'}",
                    f"--seed-file={munge / 'seed'}",
                ],
                stdout=log,
                stderr=log,
            )
        )
        _wait(lambda: (munge / "munge.sock").exists(), timeout, "munged")
        conf = str(cluster.conf)
        daemons = [["slurmctld", "-D", "-f", conf]]
        daemons += [["slurmd", "-D", "-N", node, "-f", conf] for node in NODES]
        for argv in daemons:
            cluster.procs.append(subprocess.Popen(argv, stdout=log, stderr=log, env=cluster.env))
            if argv[0] == "slurmctld":
                _wait(lambda: cluster.run("scontrol", "ping").returncode == 0, timeout, "slurmctld")

        def ready() -> bool:
            states = cluster.run("sinfo", "-h", "-N", "-o", "%N %T").stdout.split("\n")
            return sum(line.endswith(" idle") for line in states) == len(NODES)

        _wait(ready, timeout, "four idle slurmd nodes")
    except BaseException:
        cluster.stop()
        raise
    finally:
        log.close()
    return cluster


def _wait(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            if predicate():
                return
        time.sleep(0.1)
    raise RuntimeError(f"test Slurm cluster: {what} not ready within {timeout:g} s")


if __name__ == "__main__":
    import tempfile

    c = start_cluster(Path(tempfile.mkdtemp(prefix="factbook-slurm-")))
    print(f"export SLURM_CONF={c.conf}   # Ctrl-C stops the cluster")
    try:
        signal.pause()
    finally:
        c.stop()
