"""transport: slurm against a real slurmctld + four slurmd (n1..n4) + munged on this machine
(conftest.py's `slurm_env`)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from helpers import cli, fact, make_kb, pids_with_cmdline
from slurm import Cluster

ROOT = Path(__file__).resolve().parents[1]
OK = {"path": "exit_code", "eq": 0}


def _ppid(pid: int) -> int | None:
    """The parent of `pid` (from /proc; None once it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _verify(root: Path, target: str) -> tuple[int, list[dict]]:
    code, out, err = cli(root, "verify", "--target", target, "--format", "json", "--no-save")
    assert out, err
    return code, json.loads(out)["results"]


@pytest.mark.parametrize("where", [{"nodes": "n[1-4]"}, {"partition": "gpu"}])
def test_one_step_checks_every_node(slurm_env: Cluster, tmp_path: Path, where: dict) -> None:
    """Each node answers for itself: SLURMD_NODENAME matches on n2 only, the rest drift."""
    facts = [
        fact("t.cmd", "cmd", {"path": "stdout", "eq": "hi\n"}, args={"argv": ["echo", "hi"]}),
        fact("t.node", "env.var", {"eq": "n2"}, args={"name": "SLURMD_NODENAME"}),
    ]
    targets = {"targets": {"cluster": {"transport": "slurm", **where}}}
    root = make_kb(tmp_path / "kb", facts, targets=targets)
    jobs = slurm_env.jobs_started()
    code, results = _verify(root, "cluster")
    assert code == 1
    got = {(r["fact"], r["target"]): r["outcome"] for r in results}
    nodes = [f"cluster.n{i}" for i in range(1, 5)]
    assert got == {
        **{("t.cmd", n): "pass" for n in nodes},
        **{("t.node", n): "pass" if n == "cluster.n2" else "drift" for n in nodes},
    }
    observed = {r["target"]: r["observed"] for r in results if r["fact"] == "t.node"}
    assert observed == {n: n.split(".")[1] for n in nodes}
    assert slurm_env.jobs_started() == jobs + 1  # one srun step, not one per node


def test_hung_check_is_killed_on_every_node(slurm_env: Cluster, tmp_path: Path) -> None:
    marker = f"fbmark-{uuid.uuid4().hex}"
    hang = ["python3", "-c", "import time; time.sleep(1000)", marker]
    facts = [
        fact("t.hang", "cmd", OK, args={"argv": hang}, timeout=1),
        fact("t.quick", "cmd", OK, args={"argv": ["true"]}),
    ]
    targets = {"targets": {"cluster": {"transport": "slurm", "nodes": "n[1-2]"}}}
    started = time.monotonic()
    code, results = _verify(make_kb(tmp_path / "kb", facts, targets=targets), "cluster")
    assert time.monotonic() - started < 20
    assert code == 3
    outcomes = {(r["fact"], r["target"]): (r["outcome"], r["reason"]) for r in results}
    for node in ("cluster.n1", "cluster.n2"):
        assert outcomes[("t.quick", node)][0] == "pass"
        assert outcomes[("t.hang", node)][0] == "error"
        assert "timed out" in outcomes[("t.hang", node)][1]
    deadline = time.monotonic() + 5
    while pids_with_cmdline(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pids_with_cmdline(marker) == []


def test_unknown_node_is_unreachable(slurm_env: Cluster, tmp_path: Path) -> None:
    facts = [fact("t.quick", "cmd", OK, args={"argv": ["true"]})]
    targets = {"targets": {"cluster": {"transport": "slurm", "nodes": "zz[1-2]"}}}
    code, results = _verify(make_kb(tmp_path / "kb", facts, targets=targets), "cluster")
    assert code == 3
    assert sorted(r["target"] for r in results) == ["cluster.zz1", "cluster.zz2"]
    for record in results:
        assert "cluster (slurm zz[1-2]) is unreachable" in record["reason"]
        assert "Invalid node name" in record["reason"]  # what srun said


def test_healthcheck_drains_a_node_whose_facts_drift(slurm_env: Cluster, tmp_path: Path) -> None:
    """scripts/slurm-healthcheck as slurmd would run it: drift drains, a pass leaves it be."""
    marker = tmp_path / "gpu-ok"
    facts = [
        fact(
            "node.gpu_marker", "file.exists", {"eq": True}, args={"path": str(marker)},
            tags=["node-health"],
        ),
    ]  # fmt: skip
    root = make_kb(tmp_path / "kb", facts, targets={"targets": {}})
    factbook = str(Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "factbook")
    env = {**slurm_env.env, "FACTBOOK_ROOT": str(root), "SLURMD_NODENAME": "n3"}
    env["FACTBOOK"] = factbook if os.path.exists(factbook) else "factbook"
    script = str(ROOT / "scripts" / "slurm-healthcheck")
    try:
        marker.write_text("ok")
        good = subprocess.run([script], env=env, capture_output=True, text=True, timeout=60)
        assert good.returncode == 0, good.stderr
        assert slurm_env.node_state("n3").startswith("idle")
        marker.unlink()
        bad = subprocess.run([script], env=env, capture_output=True, text=True, timeout=60)
        assert bad.returncode == 1
        assert "facts drifted" in bad.stderr and "node.gpu_marker" in bad.stderr
        assert slurm_env.node_state("n3") == "drained"
        reason = slurm_env.run("sinfo", "-h", "-R", "-n", "n3", "-o", "%E").stdout
        assert "factbook: facts drifted" in reason and "node.gpu_marker" in reason
        assert slurm_env.node_state("n4").startswith("idle")
    finally:
        slurm_env.resume("n3")
    assert slurm_env.node_state("n3").startswith("idle")  # `idle*` until slurmd answers again


def test_no_target_field_reaches_a_shell_unquoted(slurm_env: Cluster, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    boom = f"$(touch {canary})`touch {canary}`;touch {canary}"
    target = {
        "transport": "slurm",
        "nodes": "n[1-2]",
        "python": f"/nonexistent/{boom}/python3",
        "env": {"FB_ODD": boom},
        "srun_args": [f"--comment={boom}"],
    }
    check = ["sh", "-c", 'printf %s "$FB_ODD"']
    facts = [fact("t.env", "cmd", {"path": "stdout", "eq": boom}, args={"argv": check})]
    root = make_kb(tmp_path / "kb", facts, targets={"targets": {"cluster": target}})
    code, results = _verify(root, "cluster")
    assert code == 0, results
    assert len(results) == 2 and not canary.exists()


def test_srun_dying_mid_run_keeps_results_and_leaves_nothing(
    slurm_env: Cluster, tmp_path: Path
) -> None:
    """srun killed while a check runs: the quick results stay, the slow one errors as a
    dropped connection on every node, and no agent survives on any node."""
    marker = f"fbmark-{uuid.uuid4().hex}"
    sleeper = ["python3", "-c", "import time; time.sleep(1000)", marker]
    facts = [
        fact("t.slow", "cmd", OK, args={"argv": sleeper}, timeout=60),
        fact("t.quick", "cmd", OK, args={"argv": ["true"]}),
    ]
    targets = {"targets": {"cluster": {"transport": "slurm", "nodes": "n[1-2]"}}}
    root = make_kb(tmp_path / "kb", facts, targets=targets)
    argv = [
        sys.executable,
        "-c",
        "from factbook.commands.cli import main; main()",
        "--root",
        str(root),
    ]
    argv += ["verify", "--target", "cluster", "--format", "json", "--no-save"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while len(pids_with_cmdline(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(pids_with_cmdline(marker)) == 2, "the slow check did not start on both nodes"
        time.sleep(0.3)
        # only our verify's srun (its child): under pytest-xdist another worker's tests run
        # sruns of the same job name at the same time, and killing those failed them
        sruns = [p for p in pids_with_cmdline("--job-name=factbook-verify") if _ppid(p) == proc.pid]
        assert sruns
        for pid in sruns:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, err
    got = {(r["fact"], r["target"]): r for r in json.loads(out)["results"]}
    for node in ("cluster.n1", "cluster.n2"):
        assert got[("t.quick", node)]["outcome"] == "pass"
        assert "connection dropped after 1 of 2 results" in got[("t.slow", node)]["reason"]
    deadline = time.monotonic() + 10
    while pids_with_cmdline(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pids_with_cmdline(marker) == []
