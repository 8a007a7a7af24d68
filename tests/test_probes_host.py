"""Host, network and GPU probes against this machine: real commands, sockets and servers."""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from factbook.probes import gpu, host, net, software


def test_cpu_memory_disk_os() -> None:
    assert host.cpu_threads() == os.cpu_count()
    assert 1 <= host.cpu_sockets() <= host.cpu_cores() <= host.cpu_threads()
    assert host.cpu_model()
    meminfo = Path("/proc/meminfo").read_text()
    kib = int(next(line for line in meminfo.splitlines() if line.startswith("MemTotal")).split()[1])
    assert host.mem_total_gib() == round(kib / 1024**2, 2)
    assert host.swap_total_gib() >= 0
    usage = host.disk_usage("/")
    assert usage["mount"] == "/" and usage["total_gib"] >= usage["free_gib"] > 0
    assert host.os_kernel() == platform.uname().release
    assert host.os_release()["pretty_name"]


def test_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FACTBOOK_TEST_VAR", "yes")
    assert host.env_var("FACTBOOK_TEST_VAR") == "yes"
    assert host.env_var("FACTBOOK_TEST_VAR_UNSET") is None


def test_cmd_exit_code_stdout_stderr_and_shell(tmp_path: Path) -> None:
    done = host.cmd(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert done == {"exit_code": 3, "stdout": "out\n", "stderr": "err\n"}
    assert host.cmd("echo $((2+3))", shell=True)["stdout"] == "5\n"
    assert host.cmd(["pwd"], cwd=str(tmp_path))["stdout"].strip() == str(tmp_path)
    assert host.cmd(["sh", "-c", "echo $X"], env={"X": "42"})["stdout"] == "42\n"
    missing = host.cmd(["factbook-no-such-command"])
    assert missing["exit_code"] == 127 and "command not found" in missing["stderr"]


def test_cmd_output_over_the_cap_keeps_head_and_tail() -> None:
    done = host.cmd(["sh", "-c", "head -c 5000000 /dev/zero | tr '\\0' a; echo; echo END-MARK"])
    assert done["exit_code"] == 0
    assert done["stdout"].startswith("aaaa") and done["stdout"].rstrip().endswith("END-MARK")
    assert done["truncated_bytes"]["stdout"] > 3_000_000
    assert len(done["stdout"]) < 1_100_000


def test_nvidia_smi_absent_is_a_clear_error() -> None:
    if shutil.which("nvidia-smi"):
        pytest.skip("nvidia-smi exists here; GPU probes are checked on the GPU box")
    for probe in (gpu.gpu_names, gpu.gpu_count, gpu.gpu_topology, gpu.gpu_numa_nodes):
        with pytest.raises(RuntimeError, match=r"^nvidia-smi not found on target$"):
            probe()


TOPO_8_PCIE = (
    "\t\x1b[4mGPU0\tGPU1\tGPU2\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
    "GPU0\t X \tNODE\tSYS\tNODE\t0-47\t0\t\tN/A\n"
    "GPU1\tNODE\t X \tSYS\tNODE\t0-47\t0\t\tN/A\n"
    "GPU2\tSYS\tSYS\t X \tSYS\t48-95\t1\t\tN/A\n"
    "NIC0\tNODE\tNODE\tSYS\t X \t\t\t\t\n"
    "\nLegend:\n\n  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect\n"
)
TOPO_NVLINK = (
    "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
    "GPU0\t X \tNV18\t0-31\t0\n"
    "GPU1\tNV18\t X \t0-31\t0\n"
)


def test_topology_parsing_pcie_and_nvlink() -> None:
    pcie = gpu.parse_topology(TOPO_8_PCIE)
    assert pcie["nvlink"] is False and pcie["gpus"] == 3
    assert pcie["links"] == ["NODE", "SYS"]
    assert pcie["matrix"]["GPU0"]["GPU2"] == "SYS"
    assert pcie["numa_affinity"] == {"GPU0": "0", "GPU1": "0", "GPU2": "1"}
    assert pcie["cpu_affinity"]["GPU2"] == "48-95"
    nv = gpu.parse_topology(TOPO_NVLINK)
    assert nv["nvlink"] is True and nv["links"] == ["NV18"]
    single = gpu.parse_topology("\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-15\t0\n")
    assert single["nvlink"] is False and single["links"] == [] and single["gpus"] == 1


@pytest.fixture
def http_server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/get_server_info":
                body = json.dumps({"speculative_algorithm": "EAGLE3", "steps": [1, 4]}).encode()
                self.send_response(200)
            else:
                body = b"not here"
                self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_http_get_status_and_json_path(http_server: str) -> None:
    info = net.http_get(f"{http_server}/get_server_info", json_path="speculative_algorithm")
    assert info["status"] == 200 and info["json"] == "EAGLE3"
    assert net.http_get(f"{http_server}/get_server_info", json_path="steps[1]")["json"] == 4
    missing = net.http_get(f"{http_server}/nope")
    assert missing["status"] == 404 and missing["json"] is None and missing["text"] == "not here"


def test_http_get_unreachable_is_an_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(RuntimeError, match="cannot reach"):
        net.http_get(f"http://127.0.0.1:{port}/")


def test_port_listening() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        assert net.port_listening(port) is False
        sock.listen()
        assert net.port_listening(port) is True
        assert net.port_listening(port, host="127.0.0.1") is True


def test_process_gpu_holders_lists_nothing_without_gpu_devices() -> None:
    holders = host.process_gpu_holders()
    assert isinstance(holders, list)
    if not Path("/dev/nvidia0").exists():
        assert holders == []


def test_holders_leave_out_the_agents_own_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process holding a device file is listed, unless the agent started it."""
    import subprocess
    import sys

    device = tmp_path / "nvidia0"
    device.write_text("")
    code = f"import time; f = open({str(device)!r}); print('ready', flush=True); time.sleep(30)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        match = lambda path: path == str(device)  # noqa: E731
        monkeypatch.delenv("FACTBOOK_AGENT_PID", raising=False)
        found = host.holders(match)
        assert [h["pid"] for h in found] == [proc.pid]
        assert found[0]["devices"] == [str(device)] and "time.sleep" in found[0]["cmdline"]
        monkeypatch.setenv("FACTBOOK_AGENT_PID", str(os.getpid()))  # we are its parent
        assert host.holders(match) == []
    finally:
        proc.kill()
        proc.wait()


def test_systemd_state_without_systemd_is_an_error() -> None:
    if Path("/run/systemd/system").exists():
        state = host.systemd_state("factbook-no-such.service")
        assert state["load"] == "not-found"
    else:
        with pytest.raises(RuntimeError, match="systemctl"):
            host.systemd_state("ssh.service")


def test_package_and_python_versions_in_another_interpreter(tmp_path: Path) -> None:
    import sys
    from importlib import metadata

    assert software.pkg_version("pyyaml") == metadata.version("pyyaml")
    assert software.pkg_version("factbook-no-such-package") is None
    assert software.pkg_version("pyyaml", python=sys.executable) == metadata.version("pyyaml")
    assert software.python_version(python=sys.executable) == platform.python_version()
    with pytest.raises(RuntimeError, match="interpreter not found"):
        software.pkg_version("pyyaml", python=str(tmp_path / "bin" / "python3"))


def test_nvcc_version_from_a_toolkit_dir(tmp_path: Path) -> None:
    """A CUDA_HOME whose bin/nvcc prints what nvcc prints."""
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text(
        "#!/bin/sh\necho 'Cuda compilation tools, release 12.8, V12.8.93'\n"
        "echo 'Build cuda_12.8.r12.8/compiler.35583870_0'\n"
    )
    nvcc.chmod(0o755)
    assert software.cuda_nvcc_version(cuda_home=str(tmp_path)) == "12.8.93"
    with pytest.raises(RuntimeError, match="nvcc not found"):
        software.cuda_nvcc_version(cuda_home=str(tmp_path / "none"))
