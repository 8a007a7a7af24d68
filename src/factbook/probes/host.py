"""Host probes: CPU, memory, swap, disks, OS, environment, commands, processes, services.

Stdlib only: this source is shipped to the box and executed there by the agent.
"""

from __future__ import annotations

import os
import platform
import shlex
import shutil
import subprocess

from .common import communicate_capped, run_capped

# typing costs ~10 ms to import on a box and annotations here are never evaluated
# (`from __future__ import annotations`): type checkers see it, the box does not import it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GIB = 1024**3
# Command output kept per stream: the head and the tail, so a marker at the end still matches.
OUTPUT_CAP = 1024 * 1024


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _cpuinfo() -> list[dict[str, str]]:
    blocks, current = [], {}
    for line in _read("/proc/cpuinfo").splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
            current = {}
            continue
        key, _, value = line.partition(":")
        current[key.strip()] = value.strip()
    if current:
        blocks.append(current)
    return blocks


def cpu_model() -> str:
    """CPU model name, from /proc/cpuinfo."""
    try:
        for block in _cpuinfo():
            for key in ("model name", "Model", "cpu model", "Hardware"):
                if block.get(key):
                    return block[key]
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _topology() -> set[tuple[str, str]]:
    """(package, core) pairs of every CPU, from sysfs."""
    import glob  # only this probe needs it: not imported on every run

    pairs = set()
    for cpu in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology"):
        try:
            pairs.add(
                (_read(cpu + "/physical_package_id").strip(), _read(cpu + "/core_id").strip())
            )
        except OSError:
            continue
    return pairs


def cpu_sockets() -> int:
    """Number of CPU sockets, from /proc and /sys."""
    pairs = _topology()
    if pairs:
        return len({p for p, _ in pairs})
    ids = {b.get("physical id") for b in _cpuinfo() if "physical id" in b}
    return len(ids) or 1


def cpu_cores() -> int:
    """Number of physical cores, from /proc and /sys."""
    pairs = _topology()
    if pairs:
        return len(pairs)
    cores = {(b.get("physical id"), b.get("core id")) for b in _cpuinfo() if "core id" in b}
    return len(cores) or (os.cpu_count() or 0)


def cpu_threads() -> int:
    """Number of logical CPUs, from /proc and /sys."""
    return os.cpu_count() or 0


def _meminfo_gib(key: str) -> float:
    for line in _read("/proc/meminfo").splitlines():
        name, _, rest = line.partition(":")
        if name == key:
            return round(int(rest.split()[0]) * 1024 / GIB, 2)
    raise RuntimeError(f"{key} not in /proc/meminfo")


def mem_total_gib() -> float:
    """Total memory in GiB (float), from /proc/meminfo."""
    return _meminfo_gib("MemTotal")


def swap_total_gib() -> float:
    """Total swap in GiB (float), from /proc/meminfo."""
    return _meminfo_gib("SwapTotal")


def _mount_of(path: str) -> str:
    path = os.path.realpath(path)
    while not os.path.ismount(path):
        path = os.path.dirname(path)
    return path


def disk_usage(path: str) -> dict[str, Any]:
    """`{total_gib, used_gib, free_gib, mount}` of the mount holding `path`."""
    path = os.path.expanduser(str(path))
    usage = shutil.disk_usage(path)
    return {
        "total_gib": round(usage.total / GIB, 2),
        "used_gib": round(usage.used / GIB, 2),
        "free_gib": round(usage.free / GIB, 2),
        "mount": _mount_of(path),
    }


def os_release() -> dict[str, Any]:
    """`{id, version_id, pretty_name}` from /etc/os-release."""
    data: dict[str, str] = {}
    for candidate in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            text = _read(candidate)
        except OSError:
            continue
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                data[key.strip()] = value.strip().strip('"').strip("'")
        break
    return {
        "id": data.get("ID"),
        "version_id": data.get("VERSION_ID"),
        "pretty_name": data.get("PRETTY_NAME") or platform.platform(),
    }


def os_kernel() -> str:
    """Kernel release (`uname -r`)."""
    return platform.uname().release


def env_var(name: str) -> str | dict | None:
    """Value of an environment variable in the agent's environment, or null; a credential's
    value as `{masked, length, sha256}` instead.

    A variable is a credential when a word of its name says so (`HF_TOKEN`, `DB_PASS`,
    `GITHUB_PAT`, `OPENAI_API_KEY`, `SSH_AUTH_SOCK`; not `TOKENIZERS_PARALLELISM` or `PWD`)
    or its value looks like one (a known token prefix, a private key, a password in a URL, a
    long random string). Its value is masked here, on the box, so no results file, verify
    output or status document ever holds it. Expectations still work on the mask: `{exists:
    true}` (set or not), `{path: length, ge: 20}`, and equality as `{path: sha256, eq: HEX}`
    where HEX is the first 12 hex digits of the value's SHA-256 (`printf %s "$VALUE" |
    sha256sum | cut -c1-12`): a prefix names the value without giving it away, though a weak
    password can be guessed from it offline, so keep such checks for real tokens.
    """
    value = os.environ.get(str(name))
    if value is None or not (_credential_name(str(name)) or _credential_value(value)):
        return value
    import hashlib  # only a masked value needs it

    digest = hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()
    return {"masked": True, "length": len(value), "sha256": digest[:12]}


# Words of a variable's name (split at `_`, `-`, `.`; case ignored) that make it a credential,
# and endings of a word that do (`APIKEY`, `HFTOKEN`, `DBPASSWORD`).
_CREDENTIAL_WORDS = frozenset(
    {
        "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASS",
        "PASSPHRASE", "PW", "PWD", "KEY", "KEYS", "CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH",
        "AUTHORIZATION", "PAT", "COOKIE", "PRIVATE", "SIGNATURE", "DSN",
    }
)  # fmt: skip
_CREDENTIAL_ENDINGS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "APIKEY", "CREDENTIALS")
_NOT_CREDENTIALS = frozenset({"PWD", "OLDPWD"})  # the working directory


def _credential_name(name: str) -> bool:
    """Whether a variable's name says it holds a credential."""
    upper = name.upper()
    if upper in _NOT_CREDENTIALS:
        return False
    words = upper.replace("-", "_").replace(".", "_").split("_")
    return any(w in _CREDENTIAL_WORDS or w.endswith(_CREDENTIAL_ENDINGS) for w in words)


def _credential_value(value: str) -> bool:
    """Whether a value looks like a credential whatever its variable is called."""
    import re  # the pattern only runs for env.var; every alternative is linear

    if re.search(_SECRET_VALUE, value):
        return True
    return any(_looks_random(m.group()) for m in re.finditer(_RANDOM_RUN, value))


_SECRET_VALUE = (
    r"-----BEGIN[A-Z ]*PRIVATE KEY"
    r"|(?<![A-Za-z0-9])(?:hf_|api_org_|gh[pousr]_|github_pat_|glpat-|xox[abposre]-|npm_|pypi-"
    r"|sk-|[rsp]k_(?:live|test)_)[A-Za-z0-9_-]{16}"
    r"|(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}"
    r"|(?<![A-Za-z0-9])eyJ[A-Za-z0-9_-]{8,}\.eyJ"
    r"|(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:[^\s/@]+@"
)
_RANDOM_RUN = r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{32,}={0,2}(?![A-Za-z0-9+/=_-])"


def _looks_random(text: str) -> bool:
    """Mixed case, digits (or `/`, `+`), high entropy and few word-like pieces: an AWS secret
    or a base64 credential, not a path or `Qwen4ExpForConditionalGeneration`."""
    import math
    import re

    core = text.rstrip("=")
    if not (any(c.isupper() for c in core) and any(c.islower() for c in core)):
        return False
    if not any(c.isdigit() or c in "/+" for c in core):
        return False
    counts = [core.count(c) for c in set(core)]
    entropy = -sum(n / len(core) * math.log2(n / len(core)) for n in counts)
    wordy = sum(len(w) for w in re.findall(r"[A-Z]?[a-z]{3,}", core)) / len(core)
    return entropy >= 4.0 and wordy < 0.5


def cmd(argv: Any, cwd: str | None = None, env: dict | None = None, shell: bool = False) -> dict:
    """`{exit_code, stdout, stderr}` of a command; argv is a list (a shell only with `shell:
    true`); output over 1 MiB per stream keeps head and tail and adds `truncated_bytes`.

    argv may also be a string, split like a shell would unless shell.
    """
    if shell:
        args: Any = argv if isinstance(argv, str) else " ".join(shlex.quote(str(a)) for a in argv)
    else:
        args = shlex.split(argv) if isinstance(argv, str) else [str(a) for a in argv]
    full_env = None
    if env:
        full_env = dict(os.environ)
        full_env.update({str(k): str(v) for k, v in env.items()})
    try:
        proc = subprocess.Popen(
            args,
            shell=bool(shell),
            cwd=os.path.expanduser(cwd) if cwd else None,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except FileNotFoundError as exc:
        name = args[0] if isinstance(args, list) and args else args
        if cwd and not os.path.isdir(os.path.expanduser(cwd)):
            raise RuntimeError(f"cwd does not exist: {cwd}") from exc
        return {"exit_code": 127, "stdout": "", "stderr": f"command not found: {name}"}
    out, err = communicate_capped(proc, OUTPUT_CAP)
    stdout, out_dropped = out.text()
    stderr, err_dropped = err.text()
    result = {"exit_code": proc.returncode, "stdout": stdout, "stderr": stderr}
    if out_dropped or err_dropped:
        result["truncated_bytes"] = {"stdout": out_dropped, "stderr": err_dropped}
    return result


def _parent(pid: int) -> int:
    try:
        for line in _read(f"/proc/{pid}/status").splitlines():
            if line.startswith("PPid:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _agent_descendant(pid: int, agent: int) -> bool:
    """Whether `pid` was started by the factbook agent (its torch.info worker holds the GPU)."""
    for _ in range(64):
        if pid in (agent, 0, 1):
            return pid == agent
        pid = _parent(pid)
    return False


def holders(match: Any) -> list[dict[str, Any]]:
    """Processes with an open fd whose target `match(path)` accepts; the agent's own excluded."""
    found = []
    agent = int(os.environ.get("FACTBOOK_AGENT_PID") or 0)
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        paths = set()
        try:
            for fd in os.listdir(f"/proc/{entry}/fd"):
                try:
                    link = os.readlink(f"/proc/{entry}/fd/{fd}")
                except OSError:
                    continue
                if match(link):
                    paths.add(link)
        except OSError:
            continue
        if not paths or (agent and _agent_descendant(int(entry), agent)):
            continue
        try:
            raw = _read(f"/proc/{entry}/cmdline")
        except OSError:
            raw = ""
        cmdline = " ".join(part for part in raw.split("\x00") if part)
        found.append({"pid": int(entry), "cmdline": cmdline, "devices": sorted(paths)})
    return sorted(found, key=lambda h: h["pid"])


def process_gpu_holders() -> list[dict[str, Any]]:
    """`[{pid, cmdline, devices}]` of processes holding `/dev/nvidia*` open (the
    zombie-GPU-process pitfall), from /proc.

    The agent's own workers are left out: after torch.info one of them holds the GPU too.
    """
    return holders(lambda path: path.startswith("/dev/nvidia"))


def systemd_state(unit: str) -> dict[str, Any]:
    """`{load, active, sub, enabled}` of a systemd unit."""
    exe = shutil.which("systemctl")
    if exe is None:
        raise RuntimeError("systemctl not found on target")
    props = "LoadState,ActiveState,SubState,UnitFileState"
    status, out, err = run_capped([exe, "show", str(unit), f"--property={props}"])
    if status != 0:
        detail = err.text()[0].strip()
        raise RuntimeError(f"systemctl show {unit} exited {status}: {detail[:300]}")
    values = dict(line.partition("=")[::2] for line in out.text()[0].splitlines())
    return {
        "load": values.get("LoadState") or None,
        "active": values.get("ActiveState") or None,
        "sub": values.get("SubState") or None,
        "enabled": values.get("UnitFileState") or None,
    }


PROBES = {
    "cpu.model": cpu_model,
    "cpu.sockets": cpu_sockets,
    "cpu.cores": cpu_cores,
    "cpu.threads": cpu_threads,
    "mem.total_gib": mem_total_gib,
    "swap.total_gib": swap_total_gib,
    "disk.usage": disk_usage,
    "os.release": os_release,
    "os.kernel": os_kernel,
    "env.var": env_var,
    "cmd": cmd,
    "process.gpu_holders": process_gpu_holders,
    "systemd.state": systemd_state,
}
