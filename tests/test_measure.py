"""Measurement probes on the CPU: the arithmetic, the timing loops on real CPU tensors, the
rank launcher with gloo, sequential reads, and nvidia-smi parsing (busy GPUs, PCIe links)
against a stand-in nvidia-smi script, since CI has no GPU."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import module_or_skip

from factbook.probes import measure

torch = module_or_skip("torch")


def test_spread_is_min_median_max_of_the_samples() -> None:
    assert measure.spread([3.0, 1.0, 2.0]) == {"min": 1.0, "median": 2.0, "max": 3.0, "n": 3}
    assert measure.spread([4.0, 1.0, 2.0, 3.0])["median"] == 2.5
    with pytest.raises(RuntimeError, match="no samples"):
        measure.spread([])


def test_bus_bandwidth_follows_nccl_tests() -> None:
    # nccl-tests PERFORMANCE.md: all-reduce busbw = algbw * 2 (n-1) / n
    assert measure.bus_bandwidth(100.0, 2) == 100.0
    assert measure.bus_bandwidth(100.0, 8) == 175.0
    assert measure.bus_bandwidth(100.0, 1) == 0.0


def test_rates() -> None:
    assert measure.bandwidth_gbs(4e9, 2.0) == 2.0
    assert measure.matmul_tflops(1000, 2e-3) == pytest.approx(1.0)
    with pytest.raises(RuntimeError):
        measure.bandwidth_gbs(1, 0)
    # the fastest sample is the highest rate
    rates = measure.rate_spread([1.0, 2.0, 4.0], lambda s: measure.bandwidth_gbs(8e9, s))
    assert (rates["min"], rates["median"], rates["max"]) == (2.0, 4.0, 8.0)


def test_time_op_warms_up_then_times_each_sample() -> None:
    calls = []

    def op() -> None:
        calls.append(time.perf_counter())
        time.sleep(0.01)

    samples = measure.time_op(torch, "cpu", op, warmup=2, repeats=3, inner=2)
    assert len(calls) == 2 + 3 * 2
    assert len(samples) == 3
    assert all(0.009 < s < 0.2 for s in samples)  # seconds per single call
    with pytest.raises(RuntimeError):
        measure.time_op(torch, "cpu", op, warmup=0, repeats=0)


def test_matmul_op_computes_the_product_and_refuses_fp8_on_cpu() -> None:
    op = measure.matmul_op(torch, "cpu", "fp32", 16)
    out = op()
    assert out.shape == (16, 16) and out.dtype == torch.float32
    with pytest.raises(RuntimeError, match="fp8 matmul needs compute capability"):
        measure.matmul_op(torch, "cpu", "fp8", 16)
    with pytest.raises(RuntimeError, match="dtype must be one of"):
        measure.matmul_op(torch, "cpu", "int4", 16)


def test_matmul_probe_on_cpu_reports_figure_spread_and_conditions() -> None:
    result = measure.measure_matmul(
        dtype="fp32", size=64, warmup=1, repeats=4, inner=2, device="cpu"
    )
    assert result["unit"] == "TFLOP/s"
    assert set(result["values"]) == {"cpu"}
    spread = result["spread"]["cpu"]
    assert spread["min"] <= spread["median"] <= spread["max"] and spread["n"] == 4
    assert result["worst"] == result["values"]["cpu"] > 0
    assert result["conditions"]["dtype"] == "fp32" and result["conditions"]["size"] == 64
    assert "64x64x64 fp32" in result["method"]


def test_memory_pcie_and_p2p_probes_on_cpu() -> None:
    mem = measure.measure_memory_bandwidth(size_mib=2, warmup=1, repeats=3, device="cpu")
    assert mem["conditions"]["bytes"] == 2 * 2**20 and mem["worst"] > 0
    pcie = measure.measure_pcie(size_mib=2, warmup=1, repeats=3, device="cpu")
    assert pcie["h2d"]["worst"] > 0 and pcie["d2h"]["worst"] > 0
    assert pcie["worst"] == min(pcie["h2d"]["worst"], pcie["d2h"]["worst"])
    assert pcie["conditions"]["pinned"] is False  # pinning needs CUDA; the result says so
    p2p = measure.measure_p2p(size_mib=1, device="cpu")
    assert p2p["values"] == {} and p2p["worst"] is None and "one device" in p2p["note"]


def test_device_must_be_cuda_or_cpu() -> None:
    with pytest.raises(RuntimeError, match="device must be"):
        measure.measure_matmul(device="tpu")


@pytest.mark.skipif("torch.cuda.is_available()", reason="checks the no-GPU message")
def test_cuda_without_a_gpu_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="torch sees no CUDA device"):
        measure.measure_memory_bandwidth()
    with pytest.raises(RuntimeError, match="needs 2 or more GPUs"):
        measure.measure_allreduce()


def test_allreduce_with_gloo_three_ranks_reports_algbw_and_busbw() -> None:
    result = measure.measure_allreduce(
        sizes_mib=[0.5, 2], backend="gloo", world=3, warmup=1, repeats=3, inner=2
    )
    assert result["ranks"] == 3
    assert [row["bytes"] for row in result["sweep"]] == [2**19, 2 * 2**20]
    for row in result["sweep"]:
        spread = row["time_spread_us"]
        assert spread["min"] <= spread["median"] <= spread["max"]
        assert row["algbw"] == pytest.approx(row["bytes"] / (row["time_us"] * 1e-6) / 1e9, rel=0.01)
        assert row["busbw"] == pytest.approx(row["algbw"] * 4 / 3, rel=0.01)
    assert result["busbw"] == result["sweep"][-1]["busbw"]
    assert result["busbw_peak"] == max(r["busbw"] for r in result["sweep"])
    assert "slowest_link" not in result  # gloo on CPU: no GPU pairs to copy between
    # CUDA graphs are for NCCL on GPUs: gloo times eager calls, and the method says which
    assert result["conditions"]["cuda_graphs"] is False
    assert "eager calls" in result["method"]


def _children_running(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if marker in line and "ps -eo" not in line]


def test_launcher_kills_every_rank_on_timeout() -> None:
    config = {"backend": "gloo", "sizes": [2**20], "warmup": 1, "repeats": 1, "inner": 1}
    config["timeout"] = 30
    world = 2
    began = time.monotonic()
    with pytest.raises(RuntimeError, match="did not finish within"):
        measure.launch_ranks(world, config, timeout=0.3)  # torch alone takes longer to import
    assert time.monotonic() - began < 10
    time.sleep(0.2)
    assert _children_running("init_process_group") == []


def test_a_failing_rank_is_named_with_its_error() -> None:
    config = {"backend": "nope", "sizes": [1024], "warmup": 0, "repeats": 1, "inner": 1}
    config["timeout"] = 20
    with pytest.raises(RuntimeError, match=r"all-reduce rank 0 exited 1: .*Error"):
        measure.launch_ranks(2, config, timeout=60)


def test_free_port_is_bindable() -> None:
    import socket

    port = measure.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_read_cold_and_warm_of_a_file_and_a_directory(tmp_path: Path) -> None:
    shard = tmp_path / "model-00001.safetensors"
    shard.write_bytes(os.urandom(3 * 2**20))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "model-00002.safetensors").write_bytes(os.urandom(2**20))
    one = measure.measure_read(str(shard), cache="both", block_mib=1)
    assert one["bytes"] == 3 * 2**20 and one["files"] == 1
    assert one["cold"] > 0 and one["warm"] > 0 and one["worst"] == one["cold"]
    assert "cold then warm" in one["method"]
    both = measure.measure_read(str(tmp_path), cache="warm")
    assert both["files"] == 2 and both["bytes"] == 4 * 2**20 and "cold" not in both
    assert "measured: warm" in both["method"]
    with pytest.raises(RuntimeError, match="no such file or directory"):
        measure.measure_read(str(tmp_path / "missing"))
    with pytest.raises(RuntimeError, match="cache must be"):
        measure.measure_read(str(shard), cache="tepid")


def test_drop_cache_on_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 4096)
    assert measure.drop_cache(str(path)) is hasattr(os, "posix_fadvise")
    assert measure.drop_cache(str(tmp_path / "missing")) is False


FAKE_SMI = """#!{python}
import sys
args = " ".join(sys.argv[1:])
if "--query-compute-apps" in args:
    print("{own}, GPU-a, 900")
    print("1, GPU-b, 20000")
elif "index,uuid" in args:
    print("0, GPU-a")
    print("1, GPU-b")
    print("2, GPU-c")
elif "memory.used" in args:
    print("0, 1200")
    print("1, 20500")
    print("2, 9000")
elif "pcie.link" in args:
    print("0, 5, 5, 16, 16")
    print("1, 4, 5, 8, 16")
else:
    sys.exit(9)
"""


@pytest.fixture
def fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An nvidia-smi answering the queries the probes make, in nvidia-smi's CSV format."""
    script = tmp_path / "bin" / "nvidia-smi"
    script.parent.mkdir()
    script.write_text(FAKE_SMI.format(python=sys.executable, own=os.getpid()))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")
    return script


def test_busy_gpus_names_foreign_processes_and_unexplained_memory(fake_smi: Path) -> None:
    busy = measure.busy_gpus([0, 1, 2])
    # GPU0: only our own process holds memory; GPU1: pid 1 is not ours; GPU2: 9000 MiB that
    # no listed process accounts for (another container's, say)
    assert set(busy) == {"GPU1", "GPU2"}
    assert busy["GPU1"] == "pid 1 holds 20000 MiB"
    assert busy["GPU2"] == "9000 MiB held by processes nvidia-smi does not name"
    assert measure.busy_gpus([0]) == {}


def test_pcie_links_reads_current_and_max_while_loaded(fake_smi: Path) -> None:
    loads = []
    links = measure.pcie_links(lambda: loads.append(1))
    assert links["GPU1"] == {"gen": 4, "gen_max": 5, "width": 8, "width_max": 16}
    assert links["GPU0"]["gen"] == 5
    assert loads, "copies kept running while nvidia-smi answered"


def test_without_nvidia_smi_nothing_is_busy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert measure.busy_gpus([0]) == {}
    assert measure.pcie_links() == {}
