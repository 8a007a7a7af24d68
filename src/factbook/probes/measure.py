"""Measurement probes: what the GPUs, their links and the disks actually deliver.

Every other probe reads state; these time work. Each returns one figure per GPU (or per link)
under `values`, the slowest under `worst`, the `unit`, the `method` in words and the
`conditions` (dtype, sizes, warm-up, repeats, device names, clocks), with the spread of every
figure (min/median/max over the repeats), so a result can be judged and reproduced.

Torch is imported lazily (a box without it skips). The agent runs every `measure.*` probe on
its own, after the quick checks (bundle.py marks them exclusive), and each probe first refuses
a GPU another process already holds (`busy`): a shared GPU would be measured silently wrong.

Units: GB/s is 1e9 bytes per second and TFLOP/s 1e12, as nccl-tests and vendors count them.
The pure arithmetic (`spread`, `bandwidth_gbs`, `bus_bandwidth`, ...) and the timing loops take
the torch module and a device, so CI exercises them on CPU tensors.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from typing import Any

from .common import communicate_capped, run_capped

GB = 1e9

# -- the arithmetic --------------------------------------------------------------------------


def spread(samples: list[float]) -> dict[str, Any]:
    """min/median/max of a list of samples (the median of an even count is the mean of the
    middle two), and their count."""
    if not samples:
        raise RuntimeError("no samples to summarise")
    ordered = sorted(samples)
    n = len(ordered)
    mid = n // 2
    median = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return {"min": ordered[0], "median": median, "max": ordered[-1], "n": n}


def bandwidth_gbs(nbytes: float, seconds: float) -> float:
    """Bytes moved per second, in GB/s (1e9)."""
    if seconds <= 0:
        raise RuntimeError(f"non-positive duration {seconds!r}")
    return nbytes / seconds / GB


def bus_bandwidth(algbw: float, ranks: int) -> float:
    """nccl-tests' all-reduce bus bandwidth: algbw x 2(n-1)/n (what each link carries)."""
    return algbw * 2 * (ranks - 1) / ranks


def matmul_tflops(size: int, seconds: float) -> float:
    """TFLOP/s of one size x size x size matmul (2 n^3 flops) taking `seconds`."""
    return 2.0 * size**3 / seconds / 1e12


def rate_spread(seconds: list[float], rate: Any) -> dict[str, Any]:
    """Per-sample durations -> the spread of the rate (`rate(seconds)`): the fastest sample
    gives the max."""
    return spread([rate(s) for s in seconds])


def significant(value: float, digits: int = 4) -> float:
    """`value` to `digits` significant digits (figures span 0.001 to 1000s)."""
    return float(f"{value:.{digits}g}")


def _rounded(figures: dict[str, Any]) -> dict[str, Any]:
    return {k: significant(v) if isinstance(v, float) else v for k, v in figures.items()}


# -- timing ---------------------------------------------------------------------------------


def _sync(torch: Any, device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def time_op(
    torch: Any, device: str, op: Any, *, warmup: int, repeats: int, inner: int = 1
) -> list[float]:
    """Seconds per call of `op()`: `warmup` untimed calls, then `repeats` samples of `inner`
    calls each (CUDA events on a GPU, perf_counter on the CPU)."""
    if repeats < 1 or inner < 1 or warmup < 0:
        raise RuntimeError("repeats and inner must be >= 1, warmup >= 0")
    if device.startswith("cuda"):
        # events record on the current device's stream: make it the measured one
        with torch.cuda.device(device):
            return _time_loop(torch, device, op, warmup, repeats, inner)
    return _time_loop(torch, device, op, warmup, repeats, inner)


def _time_loop(torch: Any, device: str, op: Any, warmup: int, repeats: int, inner: int) -> list:
    for _ in range(warmup):
        op()
    _sync(torch, device)
    samples = []
    cuda = device.startswith("cuda")
    for _ in range(repeats):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                op()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1000.0 / inner)
        else:
            begin = time.perf_counter()
            for _ in range(inner):
                op()
            samples.append((time.perf_counter() - begin) / inner)
    return samples


# -- devices, busy GPUs, nvidia-smi ---------------------------------------------------------


def _torch() -> Any:
    import torch  # lazily: a box without torch reports the probe skipped

    return torch


def _smi_rows(*args: str) -> list[list[str]]:
    """nvidia-smi CSV rows (no header, no units); [] where nvidia-smi is missing or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    status, out, _ = run_capped([exe, *args, "--format=csv,noheader,nounits"])
    if status != 0:
        return []
    text = out.text()[0]
    return [[c.strip() for c in line.split(",")] for line in text.splitlines() if line.strip()]


def _num(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def gpu_state(fields: str) -> list[dict[str, Any]]:
    """One dict per GPU of the named nvidia-smi fields ([] without nvidia-smi)."""
    names = fields.split(",")
    rows = _smi_rows(f"--query-gpu={fields}")
    return [dict(zip(names, (_num(c) for c in row))) for row in rows]  # noqa: B905 - 3.7+


def _ancestors(pid: int) -> list[int]:
    chain = []
    for _ in range(64):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if pid <= 1:
            break
        chain.append(pid)
    return chain


def _ours(pid: int) -> bool:
    """This process, a child of it, or a process of the same agent run."""
    mine = {os.getpid(), int(os.environ.get("FACTBOOK_AGENT_PID") or 0)}
    return pid in mine or bool(mine & set(_ancestors(pid)))


def busy_gpus(indices: list[int]) -> dict[str, str]:
    """GPU name -> why it is busy: a foreign compute process holds it, or memory is held
    that neither the listed processes nor this one account for (nvidia-smi in a container
    often cannot name other containers' processes). Utilisation is not asked: our own
    previous measurement keeps it high for a second."""
    uuids = {r.get("uuid"): r.get("index") for r in gpu_state("index,uuid")}
    busy: dict[str, list[str]] = {}
    listed: dict[Any, float] = {}
    for row in _smi_rows("--query-compute-apps=pid,gpu_uuid,used_memory"):
        if len(row) < 3 or not row[0].isdigit():
            continue
        index = uuids.get(row[1])
        used = _num(row[2])
        listed[index] = listed.get(index, 0) + (used if isinstance(used, (int, float)) else 0)
        if index in indices and not _ours(int(row[0])):
            busy.setdefault(f"GPU{index}", []).append(f"pid {row[0]} holds {row[2]} MiB")
    for row in gpu_state("index,memory.used"):
        index, used = row.get("index"), row.get("memory.used")
        if index not in indices or not isinstance(used, (int, float)):
            continue
        unexplained = used - listed.get(index, 0) - _own_mib(index)
        if unexplained > UNEXPLAINED_MIB:
            busy.setdefault(f"GPU{index}", []).append(
                f"{int(unexplained)} MiB held by processes nvidia-smi does not name"
            )
    return {gpu: "; ".join(why) for gpu, why in busy.items()}


# Memory on a GPU nobody accounts for before it counts as another's: a few CUDA contexts of
# this agent's own workers (~0.5 GiB each) stay below it.
UNEXPLAINED_MIB = 4096


def _own_mib(index: int) -> float:
    """MiB this process's torch holds on GPU `index` (0 where torch has not touched it)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return 0.0
    return float(torch.cuda.memory_reserved(index)) / 2**20


def devices(torch: Any, device: str, allow_busy: bool) -> list[str]:
    """The devices to measure ("cuda:0", ...; or "cpu"), refusing busy GPUs unless allowed."""
    if device == "cpu":
        return ["cpu"]
    if device != "cuda":
        raise RuntimeError(f"device must be 'cuda' or 'cpu', got {device!r}")
    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
    count = torch.cuda.device_count()
    busy = busy_gpus(list(range(count)))
    if busy and not allow_busy:
        listed = ", ".join(f"{gpu} ({why})" for gpu, why in sorted(busy.items()))
        raise RuntimeError(f"busy, not measured: {listed} (allow_busy: true measures anyway)")
    return [f"cuda:{i}" for i in range(count)]


def _label(device: str) -> str:
    return "cpu" if device == "cpu" else "GPU" + device.split(":")[1]


def _describe(torch: Any, names: list[str]) -> dict[str, Any]:
    """Device names and clocks (SM, memory; current and max where nvidia-smi reads them)."""
    info: dict[str, Any] = {}
    for dev in names:
        if dev == "cpu":
            info["cpu"] = {"name": "cpu", "threads": torch.get_num_threads()}
        else:
            info[_label(dev)] = {"name": torch.cuda.get_device_name(dev)}
    fields = "index,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.draw,temperature.gpu"
    for row in gpu_state(fields):
        entry = info.get(f"GPU{row.get('index')}")
        if entry is not None:
            entry["clocks"] = {k: v for k, v in row.items() if k != "index"}
    return info


def _conditions(
    torch: Any,
    names: list[str],
    what: dict[str, Any],
    warmup: int,
    repeats: int,
    inner: int | None = None,
) -> dict[str, Any]:
    """What a timed measurement ran under, in one order for every figure: what it timed, the
    timing loop (warmup, repeats, inner where the loop has one) and the devices' state."""
    loop = {"warmup": warmup, "repeats": repeats}
    if inner is not None:
        loop["inner"] = inner
    return {**what, **loop, "devices": _describe(torch, names)}


def _result(
    unit: str,
    method: str,
    figures: dict[str, dict[str, Any]],
    conditions: dict[str, Any],
    **extra: Any,
) -> dict[str, Any]:
    """The common shape: the median of each figure under `values`, the slowest as `worst`."""
    values = {name: significant(f["median"]) for name, f in figures.items()}
    return {
        "unit": unit,
        "values": values,
        "worst": min(values.values()) if values else None,
        "best": max(values.values()) if values else None,
        "spread": {name: _rounded(f) for name, f in figures.items()},
        "method": method,
        "conditions": conditions,
        **extra,
    }


def _release(torch: Any, device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


# -- matmul ---------------------------------------------------------------------------------

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp8": "float8_e4m3fn"}


def matmul_op(torch: Any, device: str, dtype: str, size: int) -> Any:
    """A zero-argument function doing one size^3 matmul in `dtype` on `device`; fp8 goes
    through torch._scaled_mm (per-tensor scales, bf16 output), as inference kernels use it."""
    if dtype not in DTYPES:
        raise RuntimeError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if dtype == "fp8":
        if device == "cpu" or torch.cuda.get_device_capability(device) < (8, 9):
            raise RuntimeError(f"fp8 matmul needs compute capability 8.9+ ({device})")
        a = torch.randn(size, size, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(size, size, device=device).to(torch.float8_e4m3fn).t()
        one = torch.ones((), device=device, dtype=torch.float32)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    kind = getattr(torch, DTYPES[dtype])
    a = torch.randn(size, size, device=device, dtype=kind)
    b = torch.randn(size, size, device=device, dtype=kind)
    out = torch.empty(size, size, device=device, dtype=kind)
    return lambda: torch.matmul(a, b, out=out)


def measure_matmul(
    dtype: str = "bf16",
    size: int = 8192,
    warmup: int = 25,
    repeats: int = 20,
    inner: int = 5,
    device: str = "cuda",
    allow_busy: bool = False,
) -> dict[str, Any]:
    """Dense matmul TFLOP/s per GPU (`values`, `worst`, `spread`, `conditions`): size^3
    matmuls in bf16 (fp16, fp32, fp8 via _scaled_mm), timed with CUDA events."""
    torch = _torch()
    names = devices(torch, device, allow_busy)
    figures = {}
    for dev in names:
        op = matmul_op(torch, dev, dtype, int(size))
        seconds = time_op(torch, dev, op, warmup=warmup, repeats=repeats, inner=inner)
        figures[_label(dev)] = rate_spread(seconds, lambda s: matmul_tflops(int(size), s))
        del op
        _release(torch, dev)
    method = f"{size}x{size}x{size} {dtype} matmul, 2*n^3 flops / time per matmul"
    conditions = _conditions(torch, names, {"dtype": dtype, "size": size}, warmup, repeats, inner)
    return _result("TFLOP/s", method, figures, conditions)


def _copier(dst: Any, src: Any) -> Any:
    """A zero-argument op copying src into dst (asynchronously where the devices allow)."""
    return lambda: dst.copy_(src, non_blocking=True)


# -- device memory --------------------------------------------------------------------------


def measure_memory_bandwidth(
    size_mib: int = 1024,
    warmup: int = 10,
    repeats: int = 20,
    inner: int = 5,
    device: str = "cuda",
    allow_busy: bool = False,
) -> dict[str, Any]:
    """Device memory bandwidth per GPU in GB/s (`values`, `worst`, `spread`): a
    device-to-device copy of size_mib, counting read + write bytes (2 x size)."""
    torch = _torch()
    names = devices(torch, device, allow_busy)
    nbytes = int(size_mib) * 2**20
    figures = {}
    for dev in names:
        src = torch.empty(nbytes, dtype=torch.uint8, device=dev).fill_(1)
        dst = torch.empty_like(src)
        op = _copier(dst, src)
        seconds = time_op(torch, dev, op, warmup=warmup, repeats=repeats, inner=inner)
        figures[_label(dev)] = rate_spread(seconds, lambda s: bandwidth_gbs(2 * nbytes, s))
        del src, dst, op
        _release(torch, dev)
    conditions = _conditions(torch, names, {"bytes": nbytes}, warmup, repeats, inner)
    method = "dst.copy_(src) on one device; (read + write bytes) / time"
    return _result("GB/s", method, figures, conditions)


# -- host <-> device over PCIe --------------------------------------------------------------

PCIE_FIELDS = (
    "index,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max"
)


def pcie_links(under_load: Any = None) -> dict[str, dict[str, Any]]:
    """GPU name -> negotiated PCIe generation and width (current and max). Idle GPUs train
    their link down to save power, so `under_load()` (if given) keeps copies running until
    nvidia-smi has answered."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {}
    proc = subprocess.Popen(
        [exe, f"--query-gpu={PCIE_FIELDS}", "--format=csv,noheader,nounits"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    while under_load is not None and proc.poll() is None:
        under_load()
    out = communicate_capped(proc)[0].text()[0]
    links = {}
    for line in out.splitlines():
        cells = [_num(c.strip()) for c in line.split(",")]
        if len(cells) == 5:
            gen, gen_max, width, width_max = cells[1:]
            links[f"GPU{cells[0]}"] = {
                "gen": gen,
                "gen_max": gen_max,
                "width": width,
                "width_max": width_max,
            }
    return links


def measure_pcie(
    size_mib: int = 256,
    warmup: int = 3,
    repeats: int = 10,
    device: str = "cuda",
    allow_busy: bool = False,
) -> dict[str, Any]:
    """Host<->device copy GB/s per GPU from pinned memory (`h2d`, `d2h`: values, worst,
    spread) with each GPU's negotiated PCIe link (`links`: gen, width; current and max,
    read while copying)."""
    torch = _torch()
    names = devices(torch, device, allow_busy)
    nbytes = int(size_mib) * 2**20
    pinned = device != "cpu"
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned).fill_(1)
    back = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
    h2d, d2h = {}, {}
    links: dict[str, Any] = {}
    for dev in names:
        buf = torch.empty(nbytes, dtype=torch.uint8, device=dev)

        def up(buf: Any = buf) -> Any:
            return buf.copy_(host, non_blocking=True)

        def down(buf: Any = buf) -> Any:
            return back.copy_(buf, non_blocking=True)

        seconds = time_op(torch, dev, up, warmup=warmup, repeats=repeats)
        h2d[_label(dev)] = rate_spread(seconds, lambda s: bandwidth_gbs(nbytes, s))
        seconds = time_op(torch, dev, down, warmup=warmup, repeats=repeats)
        d2h[_label(dev)] = rate_spread(seconds, lambda s: bandwidth_gbs(nbytes, s))
        if dev != "cpu":

            def load(dev: str = dev, up: Any = up) -> None:
                up()
                _sync(torch, dev)

            link = pcie_links(load).get(_label(dev))
            if link is not None:
                links[_label(dev)] = link
        del buf
        _release(torch, dev)
    conditions = _conditions(torch, names, {"bytes": nbytes, "pinned": pinned}, warmup, repeats)
    method = "pinned host buffer <-> device copy_ (non_blocking), bytes / time per direction"
    up_result = _result("GB/s", method, h2d, conditions)
    down_result = _result("GB/s", method, d2h, conditions)
    gens = [v["gen"] for v in links.values() if isinstance(v["gen"], int)]
    widths = [v["width"] for v in links.values() if isinstance(v["width"], int)]
    return {
        "unit": "GB/s",
        "h2d": {k: up_result[k] for k in ("values", "worst", "spread")},
        "d2h": {k: down_result[k] for k in ("values", "worst", "spread")},
        "worst": min(up_result["worst"], down_result["worst"]),
        "links": links,
        "link_gen_min": min(gens) if gens else None,
        "link_width_min": min(widths) if widths else None,
        "method": method,
        "conditions": conditions,
    }


# -- GPU to GPU -----------------------------------------------------------------------------


def measure_p2p(
    size_mib: int = 256,
    warmup: int = 3,
    repeats: int = 5,
    device: str = "cuda",
    allow_busy: bool = False,
) -> dict[str, Any]:
    """GPU-to-GPU copy GB/s for every ordered pair (`values` keyed "GPU0->GPU1", `worst`,
    `peer_access`); NVLink pairs show several times the PCIe figure."""
    torch = _torch()
    names = devices(torch, device, allow_busy)
    nbytes = int(size_mib) * 2**20
    figures, peer = {}, {}
    for src_dev in names:
        src = torch.empty(nbytes, dtype=torch.uint8, device=src_dev).fill_(1)
        for dst_dev in names:
            if dst_dev == src_dev:
                continue
            dst = torch.empty(nbytes, dtype=torch.uint8, device=dst_dev)
            pair = f"{_label(src_dev)}->{_label(dst_dev)}"
            peer[pair] = bool(torch.cuda.can_device_access_peer(src_dev, dst_dev))
            copy = _copier(dst, src)
            seconds = _pair_time(torch, src_dev, dst_dev, copy, warmup, repeats)
            figures[pair] = rate_spread(seconds, lambda s: bandwidth_gbs(nbytes, s))
            del dst, copy
        del src
    for dev in names:
        _release(torch, dev)
    conditions = _conditions(torch, names, {"bytes": nbytes}, warmup, repeats)
    method = "dst.copy_(src) between two GPUs (peer copy where enabled), bytes / time"
    result = _result("GB/s", method, figures, conditions, peer_access=peer)
    if not figures:
        result["note"] = "one device: no GPU pair to measure"
    return result


def _pair_time(torch: Any, src: str, dst: str, op: Any, warmup: int, repeats: int) -> list[float]:
    """Seconds per copy between two devices: both synchronised around each sample."""
    for _ in range(warmup):
        op()
    samples = []
    for _ in range(repeats):
        _sync(torch, src)
        _sync(torch, dst)
        begin = time.perf_counter()
        op()
        _sync(torch, src)
        _sync(torch, dst)
        samples.append(time.perf_counter() - begin)
    return samples


# -- NCCL all-reduce ------------------------------------------------------------------------

# One process per rank, run as `python -c ALLREDUCE_RANK rank world port config` (fresh
# interpreters: a fork of a process with CUDA initialised cannot use CUDA).
ALLREDUCE_RANK = r"""
import datetime, json, sys, time
import torch
import torch.distributed as dist

rank, world, port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cfg = json.loads(sys.argv[4])
device = "cpu" if cfg["backend"] == "gloo" else "cuda:%d" % rank
if device != "cpu":
    torch.cuda.set_device(rank)
dist.init_process_group(cfg["backend"], init_method="tcp://127.0.0.1:%d" % port,
                        rank=rank, world_size=world,
                        timeout=datetime.timedelta(seconds=cfg["timeout"]))

def sync():
    if device != "cpu":
        torch.cuda.synchronize()

def graph_of(x):
    # `inner` all-reduces captured in one CUDA graph (nccl-tests -G): a replay launches them
    # all at once, so small sizes time the link, not ~50 us of Python per eager call
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        dist.all_reduce(x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(cfg["inner"]):
            dist.all_reduce(x)
    return graph

# every rank must agree: one rank timing eager calls against another's graph would hang
graphs, graph_error = cfg.get("graphs", False) and device != "cpu", None
if graphs:
    probe = torch.ones(1, device=device)
    try:
        trial = graph_of(probe)  # capturing communicates nothing: a failure here is local
    except Exception as exc:
        graphs, graph_error = False, "%s: %s" % (type(exc).__name__, exc)
    agreed = torch.tensor([1.0 if graphs else 0.0], device=device)
    dist.all_reduce(agreed, op=dist.ReduceOp.MIN)
    graphs = bool(agreed.item() == 1.0)
    if graphs:
        trial.replay()
        sync()
        del trial
    del probe

rows = []
for nbytes in cfg["sizes"]:
    count = max(1, nbytes // 4)
    x = torch.full((count,), float(rank + 1), dtype=torch.float32, device=device)
    dist.all_reduce(x)
    sync()
    want = world * (world + 1) / 2.0
    if float(x[0]) != want or float(x[-1]) != want:
        raise SystemExit("rank %d: all-reduce gave %r, expected %r" % (rank, float(x[0]), want))
    for _ in range(cfg["warmup"]):
        dist.all_reduce(x)
    launch = graph_of(x) if graphs else None
    samples = []
    for _ in range(cfg["repeats"]):
        sync()
        dist.barrier()
        sync()
        begin = time.perf_counter()
        if launch is not None:
            launch.replay()
        else:
            for _ in range(cfg["inner"]):
                dist.all_reduce(x)
        sync()
        samples.append((time.perf_counter() - begin) / cfg["inner"])
    rows.append({"bytes": count * 4, "seconds": samples})
    del launch, x
info = {"rows": rows, "rank": rank, "graphs": graphs, "graph_error": graph_error}
if device != "cpu":
    info["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
dist.destroy_process_group()
if rank == 0:
    print(json.dumps(info))
"""


def free_port() -> int:
    """A free TCP port on the loopback interface (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def launch_ranks(world: int, config: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Start one process per rank, wait for all, kill all on failure or timeout; rank 0's
    JSON report."""
    port = free_port()
    settings = json.dumps(config)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", ALLREDUCE_RANK, str(rank), str(world), str(port), settings],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for rank in range(world)
    ]
    deadline = time.monotonic() + timeout
    outputs: list[tuple[bytes, bytes]] = []
    try:
        for proc in procs:
            left = max(0.1, deadline - time.monotonic())
            outputs.append(proc.communicate(timeout=left))
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"all-reduce ranks did not finish within {timeout:.0f}s") from None
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    failed = [(rank, p.returncode) for rank, p in enumerate(procs) if p.returncode != 0]
    if failed:
        rank, code = failed[0]
        tail = outputs[rank][1].decode("utf-8", "replace").strip().splitlines()[-2:]
        raise RuntimeError(f"all-reduce rank {rank} exited {code}: {' | '.join(tail)}")
    lines = outputs[0][0].decode("utf-8", "replace").strip().splitlines()
    if not lines:
        raise RuntimeError("all-reduce rank 0 printed no report")
    return json.loads(lines[-1])


def sweep_figures(rows: list[dict[str, Any]], world: int) -> list[dict[str, Any]]:
    """Per size: time spread, algbw (bytes / time) and busbw (algbw x 2(n-1)/n), in GB/s, from
    the median time, as nccl-tests reports them."""
    table = []
    for row in rows:
        times = spread(row["seconds"])
        algbw = bandwidth_gbs(row["bytes"], times["median"])
        table.append(
            {
                "bytes": row["bytes"],
                "time_us": significant(times["median"] * 1e6),
                "time_spread_us": {
                    k: significant(times[k] * 1e6) for k in ("min", "median", "max")
                },
                "algbw": significant(algbw),
                "busbw": significant(bus_bandwidth(algbw, world)),
            }
        )
    return table


def measure_allreduce(
    sizes_mib: Any = (1, 16, 64, 256),
    warmup: int = 5,
    repeats: int = 10,
    inner: int = 20,
    backend: str = "nccl",
    world: int = 0,
    timeout: float = 120.0,
    links: bool = True,
    graphs: bool = True,
) -> dict[str, Any]:
    """All-reduce over all GPUs, one process per GPU (float32 sum, size sweep): per size the
    `sweep` of algbw and busbw in GB/s as nccl-tests defines them, `busbw` at the largest,
    and (nccl, `links`) the slowest GPU pair's copy GB/s and the peak busbw's share of it.
    With `graphs` (NCCL) each sample replays `inner` calls captured as one CUDA graph."""
    if backend not in ("nccl", "gloo"):
        raise RuntimeError(f"backend must be nccl or gloo, got {backend!r}")
    torch = _torch()  # here too, so a box without torch skips instead of failing in the ranks
    if backend == "nccl":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        world = world or count
        if world < 2 or world > count:
            raise RuntimeError(f"all-reduce needs 2 or more GPUs; torch sees {count}")
        busy = busy_gpus(list(range(world)))
        if busy:
            listed = ", ".join(f"{gpu} ({why})" for gpu, why in sorted(busy.items()))
            raise RuntimeError(f"busy, not measured: {listed}")
    world = world or 2
    sizes = [int(float(s) * 2**20) for s in sizes_mib]
    config = {
        "backend": backend,
        "sizes": sizes,
        "warmup": warmup,
        "repeats": repeats,
        "inner": inner,
        "timeout": timeout,
        "graphs": bool(graphs) and backend == "nccl",
    }
    report = launch_ranks(world, config, timeout)
    table = sweep_figures(report["rows"], world)
    peak = max(table, key=lambda r: r["busbw"])
    slowest: dict[str, Any] = {}
    if backend == "nccl" and links:  # after the ranks have exited: the GPUs are ours again
        pairs = measure_p2p(size_mib=64, warmup=2, repeats=3, allow_busy=True)["values"]
        pair = min(pairs, key=pairs.get)
        slowest = {
            "slowest_link": {"pair": pair, "gbs": pairs[pair]},
            "busbw_share_of_slowest_link": round(peak["busbw"] / pairs[pair], 3),
        }
    return {
        **slowest,
        "unit": "GB/s",
        "ranks": world,
        "busbw": table[-1]["busbw"],
        "algbw": table[-1]["algbw"],
        "busbw_peak": peak["busbw"],
        "sweep": table,
        "method": "torch.distributed all_reduce (sum, float32), one process per rank, "
        + ("`inner` calls replayed as one CUDA graph" if report.get("graphs") else "eager calls")
        + "; algbw = bytes / median time, busbw = algbw x 2(n-1)/n",
        "conditions": {
            "backend": backend,
            "nccl": report.get("nccl"),
            "cuda_graphs": bool(report.get("graphs")),
            **({"graph_error": report["graph_error"]} if report.get("graph_error") else {}),
            "warmup": warmup,
            "repeats": repeats,
            "inner": inner,
            "sizes_bytes": sizes,
        },
    }


# -- sequential reads -----------------------------------------------------------------------


def _files(path: str) -> list[str]:
    path = os.path.expanduser(path)
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise RuntimeError(f"{path}: no such file or directory")
    found = []
    for root, dirs, names in os.walk(path):
        dirs.sort()
        found += [os.path.join(root, n) for n in sorted(names)]
    return [f for f in found if os.path.isfile(f)]


def drop_cache(path: str) -> bool:
    """Ask the kernel to drop a file's cached pages (POSIX_FADV_DONTNEED); False where not
    possible (no fadvise, or the call refused)."""
    if not hasattr(os, "posix_fadvise"):
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def read_pass(files: list[str], block: int) -> tuple[int, float]:
    """(bytes, seconds) of reading every file once, sequentially, in `block`-byte reads."""
    total = 0
    buffer = bytearray(block)
    view = memoryview(buffer)
    begin = time.perf_counter()
    for name in files:
        with open(name, "rb", buffering=0) as handle:
            while True:
                got = handle.readinto(view)
                if not got:
                    break
                total += got
    return total, time.perf_counter() - begin


def measure_read(path: str, cache: str = "both", block_mib: int = 16) -> dict[str, Any]:
    """Sequential read GB/s of a file or a directory's files (a checkpoint's shards):
    `cold` (page cache dropped with posix_fadvise first; says if it could not be) and/or
    `warm` (read again at once)."""
    if cache not in ("cold", "warm", "both"):
        raise RuntimeError(f"cache must be cold, warm or both, got {cache!r}")
    files = _files(path)
    if not files:
        raise RuntimeError(f"{path}: no files to read")
    block = int(block_mib) * 2**20
    result: dict[str, Any] = {"unit": "GB/s", "files": len(files)}
    if cache in ("cold", "both"):
        dropped = all([drop_cache(f) for f in files])
        nbytes, seconds = read_pass(files, block)
        result["cold"] = significant(bandwidth_gbs(nbytes, max(seconds, 1e-9)))
        result["cold_cache_dropped"] = dropped
        result["bytes"] = nbytes
    if cache in ("warm", "both"):
        if cache == "warm":
            read_pass(files, block)  # fill the cache first
        nbytes, seconds = read_pass(files, block)
        result["warm"] = significant(bandwidth_gbs(nbytes, max(seconds, 1e-9)))
        result["bytes"] = nbytes
    measured = "cold" if cache == "cold" else "warm"
    result["worst"] = result.get("cold", result.get("warm"))
    result["method"] = (
        f"sequential {block_mib} MiB reads of {len(files)} file(s); measured: "
        + ("cold then warm" if cache == "both" else measured)
        + ("" if result.get("cold_cache_dropped", True) else " (cache drop refused: cold is warm)")
    )
    return result


PROBES = {
    "measure.matmul": measure_matmul,
    "measure.memory_bandwidth": measure_memory_bandwidth,
    "measure.pcie": measure_pcie,
    "measure.p2p": measure_p2p,
    "measure.allreduce": measure_allreduce,
    "measure.read": measure_read,
}
