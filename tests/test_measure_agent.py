"""Measurements through the real agent: `measure.*` calls run after the quick checks, one at a
time, alone, on one reused worker; the engine's stall budget counts them serially; the
bench script runs its CPU batch end to end."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from factbook.knowledge.model import Target
from factbook.verification.bundle import Call, agent_argv, build_script, merge_calls
from factbook.verification.collect import pass_budget
from factbook.verification.transports.local import LocalTransport

ROOT = Path(__file__).resolve().parents[1]
LOCAL = Target(name="local", transport="local")

SPANS = """
import os, time
def span(seconds, tag=""):
    start = time.time()
    time.sleep(float(seconds))
    return {"pid": os.getpid(), "span": [start, time.time()], "tag": tag}
PROBES = {"t.span": span, "measure.span": span}
"""


def _run(calls: list[Call], checks_dir: Path | None = None, jobs: int = 8) -> dict[str, dict]:
    script = build_script(calls, jobs=jobs, checks_dir=checks_dir)
    proc = LocalTransport(LOCAL).start(agent_argv(sys.executable), script.encode(), {})
    lines = [json.loads(line) for line in proc.lines()]
    assert proc.wait(30) == 0, proc.stderr_text()
    by_id = {c.id: c for c in calls}
    return {by_id[m["id"]].keys[0]: m for m in lines if m.get("id") in by_id}


def test_measurements_run_after_the_quick_checks_one_at_a_time(tmp_path: Path) -> None:
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "spans.py").write_text(SPANS)
    # measurements listed first: the agent still runs them last
    wanted = [(f"m{i}", "measure.span", {"seconds": 0.3, "tag": f"m{i}"}, 10) for i in range(3)]
    wanted += [(f"q{i}", "t.span", {"seconds": 0.4, "tag": f"q{i}"}, 10) for i in range(4)]
    calls = merge_calls(wanted)
    assert [c.exclusive for c in calls] == [True] * 3 + [False] * 4
    results = _run(calls, checks)
    spans = {key: r["value"]["span"] for key, r in results.items()}
    quick_end = max(spans[f"q{i}"][1] for i in range(4))
    quick_start = min(spans[f"q{i}"][0] for i in range(4))
    measured = sorted(spans[f"m{i}"] for i in range(3))
    assert quick_end - quick_start < 0.4 * 2, "quick checks still run concurrently"
    assert measured[0][0] >= quick_end, "a measurement started beside a quick check"
    for before, after in itertools.pairwise(measured):
        assert after[0] >= before[1], "two measurements overlapped"
    # one worker keeps torch and CUDA warm for every measurement
    assert len({results[f"m{i}"]["value"]["pid"] for i in range(3)}) == 1


def test_wire_marks_only_measurements_exclusive() -> None:
    calls = merge_calls([("a", "gpu.names", {}, 5), ("b", "measure.matmul", {}, 5)])
    wires = {c.probe: c.to_wire() for c in calls}
    assert "exclusive" not in wires["gpu.names"]
    assert wires["measure.matmul"]["exclusive"] is True
    # the script lists them last whatever the order asked
    script = build_script(list(reversed(calls)))
    assert script.index("gpu.names") < script.index("measure.matmul")


def test_stall_budget_counts_measurements_serially() -> None:
    calls = merge_calls(
        [(f"q{i}", "env.var", {"name": f"X{i}"}, 10) for i in range(4)]
        + [("m1", "measure.matmul", {}, 100), ("m2", "measure.pcie", {}, 50)]
    )
    assert pass_budget(calls, jobs=16, grace=5) == 10 + 100 + 50 + 5


def test_builtin_measure_probes_answer_through_the_agent_on_cpu(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    shard = tmp_path / "shard.bin"
    shard.write_bytes(b"\0" * 2**20)
    calls = merge_calls(
        [
            (
                "mm",
                "measure.matmul",
                {"dtype": "fp32", "size": 32, "repeats": 2, "device": "cpu"},
                60,
            ),
            ("read", "measure.read", {"path": str(shard)}, 60),
        ]
    )
    results = _run(calls)
    assert results["mm"]["ok"] and results["mm"]["value"]["unit"] == "TFLOP/s"
    assert results["read"]["ok"] and results["read"]["value"]["bytes"] == 2**20


def test_bench_cpu_batch_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gpu_measured.py"), "--out", str(tmp_path), "--cpu"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "gpu_measured.json").read_text())
    assert all(m.get("ok") for m in summary["results"].values()), summary["results"]
    figures = {row["figure"] for row in summary["table"]}
    assert {"matmul_bf16 cpu", "memory copy cpu", "read cold", "read warm"} <= figures
    assert any(f.startswith("allreduce") and "busbw (2 ranks)" in f for f in figures)
    assert "whole batch:" in proc.stdout
    assert list(tmp_path.iterdir()) == [tmp_path / "gpu_measured.json"]  # read file removed
