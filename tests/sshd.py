"""A real OpenSSH lab for tests and benchmarks: a box sshd reachable only through a jump sshd.

Layout (root, with `ip netns`):

    client (root netns) ──veth 10.213.N.1 → 10.213.N.2:22──▶ jump sshd  ┐ netns fbssh-PID
                                                              box sshd ◀┘ 127.0.0.1:BOXPORT

Both sshds run inside one network namespace. The client can reach the jump's veth address but
not the namespace's loopback, where the box listens: `127.0.0.1:BOXPORT` from the client is its
own loopback, where nothing listens (checked at start), so a client that ignores ProxyJump gets
"connection refused" instead of silently reaching the box. The jump runs with LogLevel DEBUG1,
so its log also records every direct-tcpip forward.

Without `ip netns` (not root, or no CAP_NET_ADMIN) both listen on 127.0.0.1 and
`Lab.isolated` is False: only the jump's log proves the path then.

The lab also writes a client home (`Lab.home`) with `.ssh/config`, `.ssh/known_hosts` and
`.ssh/id_ed25519`, so a subprocess run with HOME=Lab.home (or paramiko reading `~`) behaves like
a user whose ssh setup names the box and the jump; OpenSSH's `ssh` ignores $HOME, so
`Lab.ssh_argv()` passes `-F` explicitly.

Usable without pytest: `python tests/sshd.py` starts a lab and prints how to reach it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from helpers import free_port

SSHD = "/usr/sbin/sshd"
SUBNET = "10.213"


def sshd_missing_reason() -> str | None:
    """Why the lab cannot start here, or None when it can."""
    if not os.path.exists(SSHD):
        return f"{SSHD} not installed (apt-get install openssh-server; scripts/test does)"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen not installed (openssh-client)"
    return None


def _run(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw)  # type: ignore[call-overload]


def _keygen(path: Path, comment: str) -> str:
    """A fresh ed25519 key pair; returns the public key line."""
    _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)])
    return path.with_suffix(".pub").read_text().strip()


def port_refused(host: str, port: int, timeout: float = 2.0) -> bool:
    """True when a TCP connect from here to host:port is refused (or has no route)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return False
    except (ConnectionRefusedError, OSError):
        return True


@dataclass
class SSHDInstance:
    """One running sshd: where clients reach it and what it logged."""

    name: str
    host: str  # the address a client (or the jump, for the box) connects to
    port: int
    workdir: Path
    host_key_pub: str  # "ssh-ed25519 AAAA... comment"
    proc: subprocess.Popen[bytes] | None = None

    @property
    def config(self) -> Path:
        return self.workdir / f"{self.name}_sshd_config"

    @property
    def log(self) -> Path:
        return self.workdir / f"{self.name}.log"

    @property
    def host_key(self) -> Path:
        return self.workdir / f"{self.name}_host_key"

    @property
    def known_hosts_name(self) -> str:
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"

    def known_hosts_line(self) -> str:
        kind, blob = self.host_key_pub.split()[:2]
        return f"{self.known_hosts_name} {kind} {blob}"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def session_pids(self) -> list[int]:
        """Per-connection sshd processes (children of the listener), to kill a connection."""
        if self.proc is None:
            return []
        return _children(self.proc.pid)

    def kill_sessions(self) -> list[int]:
        """Drop every open connection to this sshd (the listener stays up)."""
        pids = self.session_pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return pids

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill_sessions()
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            out.append(int(entry))
    return out


@dataclass
class Lab:
    """A box and a jump sshd, a client key, and a client home whose ssh setup names both."""

    workdir: Path
    box: SSHDInstance
    jump: SSHDInstance
    user: str
    client_key: Path
    isolated: bool  # True: the box is reachable only through the jump
    netns: str | None = None
    veth: str | None = None
    _extra: list[SSHDInstance] = field(default_factory=list)

    @property
    def home(self) -> Path:
        return self.workdir / "home"

    @property
    def ssh_config(self) -> Path:
        return self.home / ".ssh" / "config"

    @property
    def known_hosts(self) -> Path:
        return self.home / ".ssh" / "known_hosts"

    @property
    def jump_spec(self) -> str:
        return f"{self.user}@{self.jump.host}:{self.jump.port}"

    def box_url(self, **query: str) -> str:
        """`ssh://root@127.0.0.1:PORT?jump=root@10.213.N.2:22` (extra query keys appended)."""
        q = "&".join([f"jump={self.jump_spec}"] + [f"{k}={v}" for k, v in query.items()])
        return f"ssh://{self.user}@{self.box.host}:{self.box.port}?{q}"

    def ssh_argv(self, *remote: str, host: str = "box") -> list[str]:
        """OpenSSH client argv reaching `box` (through the jump) or `jump` with the lab's setup."""
        return ["ssh", "-F", str(self.ssh_config), host, *remote]

    def copy_home(self, dest: Path) -> Path:
        """A private copy of the client home, for tests that edit known_hosts or config."""
        shutil.copytree(self.home, dest, dirs_exist_ok=True)
        text = (dest / ".ssh" / "config").read_text().replace(str(self.home), str(dest))
        (dest / ".ssh" / "config").write_text(text)
        return dest

    def stop(self) -> None:
        for inst in (self.box, self.jump, *self._extra):
            inst.stop()
        if self.netns:
            subprocess.run(["ip", "netns", "del", self.netns], capture_output=True)
        if self.veth:
            subprocess.run(["ip", "link", "del", self.veth], capture_output=True)


def _write_sshd_config(inst: SSHDInstance, authorized_keys: Path, *, extra: list[str]) -> None:
    lines = [
        f"ListenAddress {inst.host}",
        f"Port {inst.port}",
        f"HostKey {inst.host_key}",
        f"PidFile {inst.workdir / (inst.name + '.pid')}",
        f"AuthorizedKeysFile {authorized_keys}",
        "StrictModes no",
        "UsePAM no",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PermitRootLogin prohibit-password",
        "AllowTcpForwarding yes",
        "PrintMotd no",
        "MaxSessions 1000",
        "MaxStartups 100:30:200",
        *extra,
    ]
    inst.config.write_text("\n".join(lines) + "\n")


def _start_sshd(inst: SSHDInstance, netns: str | None, timeout: float = 10.0) -> None:
    argv = [SSHD, "-D", "-f", str(inst.config), "-E", str(inst.log)]
    if netns:
        argv = ["ip", "netns", "exec", netns, *argv]  # ip execs sshd: proc.pid is sshd's pid
    inst.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "Server listening on" in inst.log_text():
            return
        if inst.proc.poll() is not None:
            err = inst.proc.stderr.read().decode() if inst.proc.stderr else ""
            raise RuntimeError(f"sshd {inst.name} exited: {err}{inst.log_text()}")
        time.sleep(0.02)
    inst.stop()
    raise RuntimeError(f"sshd {inst.name} did not start listening: {inst.log_text()}")


def _make_netns() -> tuple[str, str, str, str] | None:
    """(netns, host-side veth, client-side address, netns-side address) or None if refused."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return None
    # pytest-xdist workers (and benches) start labs at once: choosing a free subnet and
    # taking it is one step under a machine-wide lock
    with open("/run/lock/factbook-netns.lock" if os.path.isdir("/run/lock") else
              "/tmp/factbook-netns.lock", "w") as lock:  # fmt: skip
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _make_netns_locked()


def _make_netns_locked() -> tuple[str, str, str, str] | None:
    tag = f"{os.getpid() % 100000}{random.randint(0, 99)}"
    netns, veth_host, veth_ns = f"fbssh-{tag}", f"fbh{tag}", f"fbn{tag}"
    used = subprocess.run(["ip", "-4", "addr"], capture_output=True, text=True).stdout
    nets = [n for n in range(1, 255) if f"{SUBNET}.{n}." not in used]
    if not nets:
        return None
    n = random.choice(nets)
    here, there = f"{SUBNET}.{n}.1", f"{SUBNET}.{n}.2"
    steps = [
        ["ip", "netns", "add", netns],
        ["ip", "link", "add", veth_host, "type", "veth", "peer", "name", veth_ns],
        ["ip", "link", "set", veth_ns, "netns", netns],
        ["ip", "addr", "add", f"{here}/30", "dev", veth_host],
        ["ip", "link", "set", veth_host, "up"],
        ["ip", "-n", netns, "addr", "add", f"{there}/30", "dev", veth_ns],
        ["ip", "-n", netns, "link", "set", veth_ns, "up"],
        ["ip", "-n", netns, "link", "set", "lo", "up"],
    ]
    for argv in steps:
        if subprocess.run(argv, capture_output=True).returncode != 0:
            subprocess.run(["ip", "netns", "del", netns], capture_output=True)
            subprocess.run(["ip", "link", "del", veth_host], capture_output=True)
            return None
    return netns, veth_host, here, there


def start_lab(workdir: Path, *, skip_bashrc: bool = True, user: str | None = None) -> Lab:
    """Start the jump and the box sshd under workdir (a fresh temp dir); call Lab.stop() after.

    skip_bashrc sets `SetEnv SHLVL=1` on the box: bash then skips ~/.bashrc for remote commands
    (here root's bashrc runs `pyenv init`, 0.14-0.18 s per command). False measures a box
    as a real login would find it.
    """
    reason = sshd_missing_reason()
    if reason:
        raise RuntimeError(reason)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's fixed privsep directory
    workdir.mkdir(parents=True, exist_ok=True)
    workdir.chmod(0o755)
    user = user or _current_user()
    client_key = workdir / "client_key"
    authorized = workdir / "authorized_keys"
    authorized.write_text(_keygen(client_key, "factbook-test-client") + "\n")

    net = _make_netns()
    if net:
        netns, veth, _here, jump_addr = net
        box_port = free_port()
        while not port_refused("127.0.0.1", box_port, 0.5):  # must be dead from the client side
            box_port = free_port()
        jump = SSHDInstance("jump", jump_addr, 22, workdir, "")
        box = SSHDInstance("box", "127.0.0.1", box_port, workdir, "")
    else:
        netns = veth = None
        jump = SSHDInstance("jump", "127.0.0.1", free_port(), workdir, "")
        box = SSHDInstance("box", "127.0.0.1", free_port(), workdir, "")
    lab = Lab(workdir, box, jump, user, client_key, isolated=bool(net), netns=netns, veth=veth)
    try:
        # one authorized_keys file serves every account, so only the lab's user may log in:
        # another name must fail authentication, whatever its password entry looks like
        admit = f"AllowUsers {user}"
        for inst, extra in (
            (jump, ["LogLevel DEBUG1", admit]),
            (box, ["LogLevel VERBOSE", admit] + (["SetEnv SHLVL=1"] if skip_bashrc else [])),
        ):
            inst.host_key_pub = _keygen(inst.host_key, f"factbook-test-{inst.name}")
            _write_sshd_config(inst, authorized, extra=extra)
            _start_sshd(inst, netns)
        _write_home(lab)
    except BaseException:
        lab.stop()
        raise
    return lab


def start_extra_box(lab: Lab, name: str, options: list[str]) -> SSHDInstance:
    """One more sshd on 127.0.0.1 (no jump), admitting the lab's client key, with sshd_config
    `options` of the test's own (e.g. `SetEnv PATH=...`): the shared box stays as it is.
    Add `known_hosts_line()` to the client's known_hosts; stop() it after (Lab.stop() does
    too). `name` gets a random suffix: its files live in the lab's folder."""
    name = f"{name}-{random.randrange(16**8):08x}"
    inst = SSHDInstance(name, "127.0.0.1", free_port(), lab.workdir, "")
    inst.host_key_pub = _keygen(inst.host_key, f"factbook-test-{name}")
    admit = [f"AllowUsers {lab.user}", "LogLevel VERBOSE", *options]
    _write_sshd_config(inst, lab.workdir / "authorized_keys", extra=admit)
    _start_sshd(inst, None)
    lab._extra.append(inst)
    return inst


def _current_user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name


def _write_home(lab: Lab) -> None:
    ssh = lab.home / ".ssh"
    ssh.mkdir(parents=True, exist_ok=True)
    ssh.chmod(0o700)
    key = ssh / "id_ed25519"
    shutil.copy(lab.client_key, key)
    shutil.copy(lab.client_key.with_suffix(".pub"), ssh / "id_ed25519.pub")
    key.chmod(0o600)
    lab.known_hosts.write_text(
        lab.jump.known_hosts_line() + "\n" + lab.box.known_hosts_line() + "\n"
    )
    common = [
        f"  User {lab.user}",
        f"  IdentityFile {key}",
        "  IdentitiesOnly yes",
        f"  UserKnownHostsFile {lab.known_hosts}",
        "  StrictHostKeyChecking yes",
        "  BatchMode yes",
        "  ConnectTimeout 5",
    ]
    lab.ssh_config.write_text(
        "\n".join(
            [
                "Host jump",
                f"  HostName {lab.jump.host}",
                f"  Port {lab.jump.port}",
                *common,
                "",
                "Host box",
                f"  HostName {lab.box.host}",
                f"  Port {lab.box.port}",
                "  ProxyJump jump",
                *common,
                "",
            ]
        )
    )


if __name__ == "__main__":
    import tempfile

    lab = start_lab(Path(tempfile.mkdtemp(prefix="factbook-sshd-")))
    print(f"box:  {lab.box_url()}  (isolated={lab.isolated})")
    print(f"ssh:  {' '.join(lab.ssh_argv('true'))}")
    print("Ctrl-C stops the lab")
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        lab.stop()
