"""The shipped seed runbooks executed for real, on this machine (`--target local`), against a
copy of the shipped knowledge base: their cells import the API, resolve the facts in the
kernel, verify their requirements through the verify engine and reach the box through the
local transport. Only read-only steps run here; this machine has no GPU, no systemd unit."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers import kb_copy
from runbook_kit import run_cli, runs, steps_of

REPO = Path(__file__).resolve().parents[1]


def test_gpu_cleanup_read_only_steps_run_for_real(tmp_path: Path) -> None:
    root = kb_copy(tmp_path / "kb")
    done = run_cli(
        root,
        "run",
        "gpu-cleanup",
        "--target",
        "local",
        "--step",
        "inspect",
        "--step",
        "verify",
        timeout=180,
    )
    record = runs(root, "gpu-cleanup")[-1]
    by_name = steps_of(record)
    assert record["target"] == "local"
    assert by_name["setup"]["status"] == "ok"
    assert "8 GPUs expected; vLLM unit vllm-kimi-k25-int4.service" in by_name["setup"]["outputs"]
    assert by_name["inspect"]["status"] == "ok"
    assert (
        "$ nvidia-smi --query-compute-apps=pid,process_name,used_memory"
        in (by_name["inspect"]["outputs"])
    )
    assert by_name["kill-engines"]["status"] == by_name["kill-gpu-holders"]["status"] == "skipped"
    # `requires` ran process.gpu_holders here (no holders: met); then nvidia-smi is missing
    assert "requires instr.zombie-gpu-cleanup: ok" in done.stdout
    if shutil.which("nvidia-smi") is None:
        assert done.returncode == 1
        assert by_name["verify"]["status"] == "failed"
        assert "nvidia-smi on local: exit 127" in by_name["verify"]["error"]


def test_vllm_stop_status_step_runs_for_real(tmp_path: Path) -> None:
    root = kb_copy(tmp_path / "kb")
    done = run_cli(root, "run", "vllm-stop", "--target", "local", "--step", "status", timeout=120)
    assert done.returncode == 0, done.stderr
    outputs = steps_of(runs(root, "vllm-stop")[-1])["status"]["outputs"]
    assert "$ systemctl status vllm-kimi-k25-int4.service --no-pager --lines 5" in outputs
    assert "vllm-kimi-k25-int4.service is " in outputs


def test_destructive_seed_steps_are_refused_without_yes(tmp_path: Path) -> None:
    root = kb_copy(tmp_path / "kb")
    done = run_cli(root, "run", "gpu-cleanup", "--target", "local")
    assert done.returncode == 2
    assert "destructive step(s) kill-engines, kill-gpu-holders need confirmation" in done.stderr
    assert runs(root, "gpu-cleanup") == []
