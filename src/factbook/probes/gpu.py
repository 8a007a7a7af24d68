"""GPU probes: nvidia-smi queries, the link topology and the NUMA node of every GPU.

Stdlib only: this source is shipped to the box and executed there by the agent.
"""

from __future__ import annotations

import re
import shutil
from typing import Any

from .common import run_capped


def _smi(*args: str) -> str:
    """Run nvidia-smi; a missing binary or a failing driver becomes one clear message."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        raise RuntimeError("nvidia-smi not found on target")
    status, out, err = run_capped([exe, *args])
    if status != 0:
        detail = (err.data()[0] or out.data()[0]).decode("utf-8", "replace").strip()
        raise RuntimeError(f"nvidia-smi exited {status}: {detail[:500]}")
    return out.text()[0]


def _query(fields: str) -> list[list[str]]:
    text = _smi(f"--query-gpu={fields}", "--format=csv,noheader,nounits")
    return [[c.strip() for c in line.split(",")] for line in text.splitlines() if line.strip()]


def _number(text: str) -> Any:
    """'81559' -> 81559, '600.00' -> 600.0, '[N/A]' stays text."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def gpu_names() -> list[str]:
    """List of GPU names, one per GPU, from nvidia-smi ("nvidia-smi not found on target"
    without it).
    """
    return [row[0] for row in _query("name")]


def gpu_count() -> int:
    """Number of GPUs nvidia-smi lists."""
    return len(_query("index"))


def gpu_memory_mib() -> list[Any]:
    """List of total memory per GPU in MiB, from nvidia-smi."""
    return [_number(row[0]) for row in _query("memory.total")]


def gpu_compute_capability() -> list[str]:
    """List of compute capabilities (`12.0`) per GPU, from nvidia-smi."""
    return [row[0] for row in _query("compute_cap")]


def gpu_driver() -> str:
    """Driver version string, from nvidia-smi."""
    rows = _query("driver_version")
    if not rows:
        raise RuntimeError("nvidia-smi lists no GPU")
    return rows[0][0]


def gpu_power_limit_w() -> list[Any]:
    """List of power limits in W per GPU, from nvidia-smi."""
    return [_number(row[0]) for row in _query("power.limit")]


def gpu_query(field: str) -> list[Any]:
    """List of the values of one nvidia-smi `--query-gpu` field, one per GPU."""
    if not re.match(r"^[A-Za-z0-9_.]+$", str(field)):
        raise RuntimeError(f"invalid nvidia-smi field {field!r}")
    return [_number(row[0]) for row in _query(str(field))]


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_topology(text: str) -> dict[str, Any]:
    """Parse `nvidia-smi topo -m`: NV# is NVLink, PIX/PXB/PHB/NODE/SYS are PCIe paths."""
    lines = [_ANSI.sub("", line).rstrip() for line in text.splitlines()]
    header_at = next((i for i, line in enumerate(lines) if re.search(r"\bGPU0\b", line)), None)
    if header_at is None:
        raise RuntimeError("no GPU header in `nvidia-smi topo -m` output")
    header = [h.strip() for h in lines[header_at].split("\t") if h.strip()]
    matrix: dict[str, dict[str, str]] = {}
    numa: dict[str, str] = {}
    cpus: dict[str, str] = {}
    for line in lines[header_at + 1 :]:
        cells = [c.strip() for c in line.split("\t")]
        if not cells or not re.match(r"^GPU\d+$", cells[0]):
            if matrix and not line.strip():
                break
            continue
        # nvidia-smi pads some columns with an extra tab ("0\t\tN/A"): GPU rows fill every
        # column, so dropping empty cells realigns them with the header.
        row = dict(zip(header, [c for c in cells[1:] if c]))  # noqa: B905 - runs on 3.7+
        name = cells[0]
        matrix[name] = {k: v for k, v in row.items() if re.match(r"^GPU\d+$", k)}
        numa[name] = row.get("NUMA Affinity", "")
        cpus[name] = row.get("CPU Affinity", "")
    links = sorted({v for name, row in matrix.items() for k, v in row.items() if k != name})
    return {
        "matrix": matrix,
        "nvlink": any(link.startswith("NV") for link in links),
        "links": links,
        "numa_affinity": numa,
        "cpu_affinity": cpus,
        "gpus": len(matrix),
    }


def gpu_topology() -> dict[str, Any]:
    """`{matrix, nvlink, links, numa_affinity, cpu_affinity, gpus}` from `nvidia-smi topo
    -m` (`NV#` is NVLink; `PIX PXB PHB NODE SYS` are PCIe paths).
    """
    return parse_topology(_smi("topo", "-m"))


def _sysfs_bus_id(bus_id: str) -> str:
    """nvidia-smi says 00000000:18:00.0; sysfs names it 0000:18:00.0."""
    domain, _, rest = bus_id.partition(":")
    return f"{domain[-4:]}:{rest}".lower()


def gpu_numa_nodes() -> list[Any]:
    """NUMA node per GPU from `/sys/bus/pci/devices/<bus>/numa_node` (`-1`: firmware gives
    none).
    """
    nodes: list[Any] = []
    fallback: dict[str, str] | None = None
    for index, row in enumerate(_query("pci.bus_id")):
        path = f"/sys/bus/pci/devices/{_sysfs_bus_id(row[0])}/numa_node"
        try:
            with open(path) as handle:
                nodes.append(int(handle.read().strip()))
            continue
        except (OSError, ValueError):
            pass
        if fallback is None:
            fallback = gpu_topology()["numa_affinity"]
        nodes.append(_number(fallback.get(f"GPU{index}", "")))
    return nodes


PROBES = {
    "gpu.names": gpu_names,
    "gpu.count": gpu_count,
    "gpu.memory_mib": gpu_memory_mib,
    "gpu.compute_capability": gpu_compute_capability,
    "gpu.driver": gpu_driver,
    "gpu.power_limit_w": gpu_power_limit_w,
    "gpu.topology": gpu_topology,
    "gpu.numa_nodes": gpu_numa_nodes,
    "gpu.query": gpu_query,
}
