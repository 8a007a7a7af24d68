"""The names and arguments of the built-in probes.

Lint needs this without importing the probe code (which is shipped to the box and may
import torch lazily), so the catalog is plain data. The implementations live next to it
and must agree with it; a test checks that they do.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ProbeSpec:
    """A probe's name, required and optional arguments, and what it returns."""

    name: str
    returns: str
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = field(default=())


def _spec(name: str, returns: str, required: str = "", optional: str = "") -> ProbeSpec:
    return ProbeSpec(name, returns, tuple(required.split()), tuple(optional.split()))


BUILTIN_PROBES: dict[str, ProbeSpec] = {
    p.name: p
    for p in [
        # GPUs (nvidia-smi)
        _spec("gpu.names", "list of GPU names, one per GPU"),
        _spec("gpu.count", "number of GPUs"),
        _spec("gpu.memory_mib", "list of total memory per GPU in MiB"),
        _spec("gpu.compute_capability", "list of compute capabilities ('12.0') per GPU"),
        _spec("gpu.driver", "driver version string"),
        _spec("gpu.power_limit_w", "list of power limits in W per GPU"),
        _spec("gpu.topology", "{matrix: {gpu: {gpu: link}}, nvlink: bool, links: [kinds]}"),
        _spec("gpu.numa_nodes", "list of NUMA node per GPU"),
        _spec("gpu.query", "list of values of one nvidia-smi --query-gpu field", "field"),
        # host
        _spec("cpu.model", "CPU model name"),
        _spec("cpu.sockets", "number of sockets"),
        _spec("cpu.cores", "number of physical cores"),
        _spec("cpu.threads", "number of logical CPUs"),
        _spec("mem.total_gib", "total memory in GiB (float)"),
        _spec("swap.total_gib", "total swap in GiB (float)"),
        _spec("disk.usage", "{total_gib, used_gib, free_gib} of the mount holding path", "path"),
        _spec("os.release", "{id, version_id, pretty_name} from /etc/os-release"),
        _spec("os.kernel", "kernel release (uname -r)"),
        _spec("env.var", "value of an environment variable or null", "name"),
        # software
        _spec(
            "pkg.version", "installed version of a Python distribution or null", "name", "python"
        ),
        _spec("python.version", "version of an interpreter", "", "python"),
        _spec("cuda.nvcc_version", "CUDA toolkit version reported by nvcc", "", "cuda_home"),
        _spec("cuda.home", "CUDA_HOME or the toolkit directory found"),
        _spec(
            "torch.info",
            "{version, cuda, cuda_available, device_count, capability, nccl, device_names}",
            "",
            "python",
        ),
        # files
        _spec("file.exists", "true when the path exists", "path"),
        _spec("file.size", "size in bytes (a directory: total of its files)", "path"),
        _spec("file.sha256", "hex sha256 of a file", "path"),
        _spec("file.glob_count", "number of paths matching a glob", "pattern"),
        _spec("file.total_size", "total size in bytes of paths matching a glob", "pattern"),
        _spec("file.read", "text of a (small) file", "path", "max_bytes"),
        _spec("config.value", "value at a dotted path in a JSON/YAML/TOML/INI file", "path", "key"),
        _spec("safetensors.shard_count", "number of *.safetensors files in a directory", "path"),
        _spec("safetensors.tensors", "{tensor name: shape} of a file or sharded directory", "path"),
        _spec(
            "tokenizer.token_id", "id of a token in a tokenizer.json / tiktoken model", "path token"
        ),
        _spec("tokenizer.decode", "text of a list of ids", "path ids"),
        # processes, services, network
        _spec("cmd", "{exit_code, stdout, stderr}", "argv", "cwd env shell"),
        _spec("http.get", "{status, json, text}", "url", "headers json_path"),
        _spec("port.listening", "true when something listens on the port", "port", "host"),
        _spec("process.gpu_holders", "list of {pid, cmdline} holding /dev/nvidia*"),
        _spec("systemd.state", "{load, active, sub, enabled}", "unit"),
    ]
}
