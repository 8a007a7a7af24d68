# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile input, round 17 (issue 25, "Hardening III"): known_hosts files of odd types and
hostile lines, a runbook's managed server under SIGTERM/SIGINT, the file modes of
`discover --write`, and three vague messages (an sshd that stalls after its banner, an
ssh:// port out of range, a long unknown MCP resource URI echoed whole).

What was tried:
- known_hosts named by `--known-hosts` or by the knowledge base's own ssh config
  (`inventory: ssh.conf` with UserKnownHostsFile / GlobalKnownHostsFile): a FIFO, a folder,
  a socket, /dev/null, a file past KNOWN_HOSTS_MAX_BYTES, a file without its last line
  break, a path (or a link) leaving the root, `~/` paths, `none`; hostile lines (a 4 MB
  line, non-UTF-8 bytes, malformed `|1|` hashes, `@revoked`/`@cert-authority` with junk, an
  unknown marker, option-shaped host patterns, a key of the wrong type, `@revoked` of the
  real key) against the real loopback sshd with both transports, with and without
  --accept-new-host-keys;
- `factbook run` of a runbook whose step starts a real loopback HTTP server through
  `server.start` (keep off and on), signalled with SIGTERM and SIGINT mid-step;
- `discover --write` under umask 022 and 077: new fact files, a rewritten one;
- a socket that sends an SSH banner and then stalls; ssh:// ports out of range or not
  numbers; an unknown MCP resource URI of 100 kB.

The table cases run through tests/test_hostile_kb.py's `run_case`; the rest start real
processes (the loopback sshd lab, `factbook run` subprocesses, a socket server, the MCP
server over stdio).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import loopback_listener
from test_hostile_kb import FIFO, Case, Link, _in_process, make_outside, plant, run_case

PORT_BAD = "is not a number from 1 to 65535"


def url(spec: str) -> list[str]:
    return ["verify", "hw.gpu.count", "--target", spec, "--timeout", "2"]


REFUSED = ["verify", "hw.gpu.count", "--target", "ssh://root@127.0.0.1:9", "--timeout", "2"]


def known(path: str) -> list[str]:
    """verify against a closed loopback port with `--known-hosts PATH`: known_hosts is read
    before connecting, so what it is decides the message."""
    return [*REFUSED, "--known-hosts", path]


def kb_config(*lines: str) -> dict[str, str | bytes | Link]:
    """The knowledge base's own ssh config as its inventory: host `kj` with `lines`."""
    body = "Host kj\n  HostName 127.0.0.1\n  Port 9\n" + "".join(f"  {line}\n" for line in lines)
    return {
        "targets.yaml": "inventory: ssh.conf\ntargets:\n  here: {transport: local}\n",
        "ssh.conf": body,
    }


# fmt: off
CASES: list[Case] = [
    # --- 1. known_hosts of odd types: a FIFO and a folder were read as an empty file (the host
    # "is not in" it), and with --accept-new-host-keys a FIFO hung the run on open() for ever
    # and a folder ended as "connection lost: [Errno 21] Is a directory"; now refused as the
    # command line's mistake (exit 2) before any box is tried, not as every box's host key ---
    Case("--known-hosts a FIFO", {"kh": FIFO}, known("{kb}/kh"), 2, "/kh: a FIFO, not a regular file; not read"),
    Case("--known-hosts a FIFO, accept-new", {"kh": FIFO}, [*known("{kb}/kh"), "--accept-new-host-keys"], 2, "a FIFO, not a regular file; not read"),
    Case("--known-hosts a folder", {"kh/x": "x"}, known("{kb}/kh"), 2, "/kh: a folder, not a regular file; not read"),
    Case("--known-hosts a folder, accept-new", {"kh/x": "x"}, [*known("{kb}/kh"), "--accept-new-host-keys"], 2, "a folder, not a regular file; not read"),
    Case("--known-hosts a link to a FIFO", {"kh": Link("fifo"), "fifo": FIFO}, known("{kb}/kh"), 2, "a FIFO, not a regular file; not read"),
    # ... held (guards): a missing file and /dev/null are no known hosts, as ssh reads them
    Case("--known-hosts missing", {}, known("{kb}/nothing"), 3, "connection refused"),
    Case("--known-hosts /dev/null", {}, known("/dev/null"), 3, "connection refused"),
    Case("--known-hosts non-UTF-8 bytes", {"kh": b"\xff\xfe\x00garbage\n\xc3(\n"}, known("{kb}/kh"), 3, "connection refused"),
    # --- 2. a known_hosts file the knowledge base's own ssh config names outside its root was
    # read as the trust anchor, and --accept-new-host-keys appended to it (a write outside) ---
    Case("kb ssh config: UserKnownHostsFile outside", kb_config("UserKnownHostsFile {out}/shadow"), "lint", 2, "resolves to {out}/shadow, outside the knowledge base; refusing it"),
    Case("kb ssh config: a link inside leading outside", {**kb_config("UserKnownHostsFile {kb}/kh"), "kh": Link("{out}/shadow")}, "lint", 2, "resolves to {out}/shadow, outside the knowledge base"),
    Case("kb ssh config: the second word outside", kb_config("UserKnownHostsFile ~/.ssh/known_hosts {out}/shadow"), "lint", 2, "resolves to {out}/shadow, outside"),
    Case("kb ssh config: GlobalKnownHostsFile outside", kb_config("GlobalKnownHostsFile {out}/environ"), "lint", 2, "resolves to {out}/environ, outside the knowledge base"),
    Case("kb ssh config: a ~ path not ssh's own", kb_config("UserKnownHostsFile ~/.ssh/other_hosts"), "lint", 2, "outside the knowledge base; refusing it"),
    Case("kb ssh config: outside, refused by verify too", kb_config("UserKnownHostsFile {out}/shadow"), ["verify", "hw.gpu.count", "--target", "kj", "--accept-new-host-keys"], 2, "outside the knowledge base; refusing it"),
    Case("kb ssh config: a %d token outside", kb_config("UserKnownHostsFile %d/.ssh/kh_%h"), "lint", 2, "outside the knowledge base; refusing it"),
    # ... held (guards): inside the root, ssh's own defaults, /dev/null and none are used
    Case("kb ssh config: UserKnownHostsFile inside", kb_config("UserKnownHostsFile {kb}/kh"), "lint", 0, "ok:"),
    Case("kb ssh config: ssh's own default", kb_config("UserKnownHostsFile ~/.ssh/known_hosts ~/.ssh/known_hosts2"), "lint", 0, "ok:"),
    Case("kb ssh config: /etc/ssh/ssh_known_hosts", kb_config("GlobalKnownHostsFile /etc/ssh/ssh_known_hosts"), "lint", 0, "ok:"),
    Case("kb ssh config: /dev/null", kb_config("UserKnownHostsFile /dev/null"), "lint", 0, "ok:"),
    Case("kb ssh config: none", kb_config("UserKnownHostsFile none"), "lint", 0, "ok:"),
    # --- 4b. urllib's wording for an ssh:// port: "Port out of range 0-65535" named neither the
    # value nor the range ssh takes, "Port could not be cast to integer value as '22;x'" was
    # its internals' (round 16 expected both; they now read as every other bad port) ---
    Case("ssh:// URL: port 65536", {}, url("ssh://root@x.invalid:65536"), 2, f"port '65536' {PORT_BAD}"),
    Case("ssh:// URL: IPv6 with port 70000", {}, url("ssh://root@[::1]:70000"), 2, f"port '70000' {PORT_BAD}"),
    Case("openssh:// URL: port 99999", {}, url("openssh://root@x.invalid:99999"), 2, f"port '99999' {PORT_BAD}"),
    Case("ssh:// URL: port -1", {}, url("ssh://root@x.invalid:-1"), 2, f"port '-1' {PORT_BAD}"),
    Case("ssh:// URL: port 22x", {}, url("ssh://root@x.invalid:22x"), 2, f"port '22x' {PORT_BAD}"),
    Case("ssh:// URL: jump port 22;x", {}, url("ssh://root@x.invalid?jump=gw.invalid:22;x"), 2, f"port '22;x' {PORT_BAD}"),
    Case("ssh:// URL: jump IPv6 port 65536", {}, url("ssh://root@x.invalid?jump=[::1]:65536"), 2, f"port '65536' {PORT_BAD}"),
    Case("ssh:// URL: a 300-digit port, its head echoed", {}, url("ssh://root@x.invalid:" + "9" * 300), 2, f"...' {PORT_BAD}", absent=("9" * 100,)),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round17(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


def test_a_known_hosts_socket_is_refused(tmp_path: Path) -> None:
    """A UNIX socket named as known_hosts: refused by kind, like a FIFO."""
    kb, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(kb, out, {})
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(kb / "kh"))
    try:
        code, output, _ = _in_process(["--root", str(kb), *known(str(kb / "kh"))], 10)
    finally:
        sock.close()
    assert code == 2 and "a socket, not a regular file; not read" in output, output[-2000:]
    assert f"--known-hosts {kb / 'kh'}: a socket" in output, output[-2000:]


def test_a_known_hosts_file_past_the_bound_is_sized_not_read(tmp_path: Path) -> None:
    """A sparse file one byte past KNOWN_HOSTS_MAX_BYTES: refused by its size before it is
    read (it was read up to the bound, 64 MB of memory, then refused): a child process's
    peak RSS stays far below the bound."""
    from factbook.knowledge.limits import KNOWN_HOSTS_MAX_BYTES

    huge = tmp_path / "kh"
    with huge.open("wb") as handle:
        handle.truncate(KNOWN_HOSTS_MAX_BYTES + 1)
    probe = (  # VmHWM, not ru_maxrss: that one keeps the forking pytest's peak across exec
        "import re, sys\n"
        "from pathlib import Path\n"
        "from factbook.verification.transports import knownhosts\n"
        "def peak():\n"
        "    return int(re.search(r'VmHWM:\\s+(\\d+)', Path('/proc/self/status').read_text())[1])\n"
        "base = peak()\n"
        "try:\n"
        "    knownhosts.load(Path(sys.argv[1]))\n"
        "except OSError as exc:\n"
        "    print(exc.strerror)\n"
        "print((peak() - base) // 1024)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(huge)], capture_output=True, text=True, timeout=60
    )
    said, grown = done.stdout.splitlines()
    assert said == f"larger than {KNOWN_HOSTS_MAX_BYTES} bytes; not read", done
    assert int(grown) < 16, f"{grown} MB read before the size was checked"


# --- 1b. hostile known_hosts lines against the real loopback sshd, both transports ---
OTHER = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
RSA_TYPE_ED_BLOB = "ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"


def hostile_lines(name: str, key: str) -> bytes:
    """known_hosts lines an attacker or a slip could leave, none of which vouches for `name`
    with its real `key` (the key is only ever paired with a line ssh skips)."""
    lines = [
        f"{name} " + "A" * (4 << 20),  # a 4 MB line: a key that is not base64 of a key
        f"|1|not-base64!|also-not {key}",  # malformed hash: skipped, not a match for all
        f"|1|{'A' * 28}|{'A' * 28}| {key}",  # a fifth field in the hash
        f"|2|AAAA|AAAA {key}",  # an unknown hash version
        f"@revoked * {OTHER} trailing junk",  # revokes another key: no effect on ours
        f"@cert-authority *.invalid,{name} ssh-ed25519 AAAA",  # a CA key that is no key
        f"@bogus {name} {key}",  # an unknown marker: the line is skipped, as ssh skips it
        f"@revoked @revoked {name} {key}",  # a second marker: skipped
        f"-oProxyCommand=touch${{IFS}}/tmp/x,{name}x {OTHER}",  # option-shaped patterns
        f"--,-F/etc/passwd {key}",
        f"{name} {RSA_TYPE_ED_BLOB}",  # the wrong key type for the blob: skipped
        f"\0{name} {key}",  # a NUL first: the line is empty to a C reader
        "\udcff" * 3,
    ]
    return b"\n".join(line.encode("utf-8", "surrogateescape") for line in lines) + b"\xff\xfe\n"


@pytest.fixture
def lab_kb(ssh_lab, ssh_home: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    kb, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(kb, out, {})
    return kb


@pytest.mark.ssh
@pytest.mark.parametrize("scheme", ["ssh", "openssh"])
@pytest.mark.parametrize(
    ("extra", "accept", "code", "said"),
    [
        # held (guards): no hostile line vouches for the host, and none stops a real one
        ("", False, 3, "not in"),
        ("", True, 0, "1 passed"),  # asked: the key is added, after the hostile lines
        ("real", False, 0, "1 passed"),
        ("revoked", False, 3, "REVOKED"),
        ("revoked", True, 3, "REVOKED"),
    ],
)
def test_hostile_known_hosts_lines_never_vouch_for_a_host(
    scheme: str,
    extra: str,
    accept: bool,
    code: int,
    said: str,
    ssh_lab,
    lab_kb: Path,
    ssh_home: Path,
) -> None:  # type: ignore[no-untyped-def]
    jump = ssh_lab.jump
    name, key = jump.known_hosts_line().split(" ", 1)
    kh = ssh_home / ".ssh" / "hostile_hosts"
    data = hostile_lines(name, key)
    if extra == "real":
        data += f"{name} {key}\n".encode()
    elif extra == "revoked":
        data += f"{name} {key}\n@revoked * {key}\n".encode()
    kh.write_bytes(data)
    argv = ["--root", str(lab_kb), "verify", "hw.gpu.count", "--target"]
    argv += [
        f"{scheme}://{ssh_lab.user}@{jump.host}:{jump.port}?timeout=5",
        "--known-hosts",
        str(kh),
    ]
    argv += ["--accept-new-host-keys"] if accept else []
    got, output, _ = _in_process(argv, 30)
    assert got == code and said in output and "Traceback" not in output, output[-2000:]
    assert "\n".join(output.splitlines()) == output.rstrip("\n")
    if accept and code == 0:  # the line added reads back, on a line of its own
        assert kh.read_bytes().startswith(data) and kh.read_bytes()[len(data) :].count(b"\n") == 1
        assert _in_process(argv[:-1], 30)[0] == 0


@pytest.mark.ssh
@pytest.mark.parametrize("scheme", ["ssh"])
def test_a_key_added_after_a_last_line_without_its_break_joins_nothing(
    scheme: str, ssh_lab, lab_kb: Path, ssh_home: Path
) -> None:  # type: ignore[no-untyped-def]
    """known_hosts whose last line has no line break (an editor that drops it): the key
    added by --accept-new-host-keys was glued to it, so both lines were lost (the old host's
    key no longer parsed, the new one neither: every run asked again). OpenSSH 9.2 does the
    same; factbook starts a new line."""
    jump = ssh_lab.jump
    kh = ssh_home / ".ssh" / "no_last_break"
    kh.write_text(f"other.invalid {OTHER}")
    argv = ["--root", str(lab_kb), "verify", "hw.gpu.count", "--target"]
    argv += [
        f"{scheme}://{ssh_lab.user}@{jump.host}:{jump.port}?timeout=5",
        "--known-hosts",
        str(kh),
    ]
    got, output, _ = _in_process([*argv, "--accept-new-host-keys"], 30)
    assert got == 0, output[-2000:]
    lines = kh.read_text().splitlines()
    assert lines[0] == f"other.invalid {OTHER}" and len(lines) == 2, lines
    assert _in_process(argv, 30)[0] == 0  # the key added is known now


# --- 4a. an sshd that sends its banner and then stalls or hangs up: paramiko's "No existing
# session" ("SSH handshake failed: No existing session") named neither the banner that came
# nor the wait ---
@pytest.fixture
def banner_sshd(request: pytest.FixtureRequest) -> Iterator[int]:
    """A listener on 127.0.0.1 that sends `banner` on each connection, then keeps it silent
    (`stall`), closes it (`close`) or sends junk and keeps it (`junk`)."""
    banner, then = request.param

    def greet(conn: socket.socket) -> bool:
        conn.sendall(banner)
        if then == "close":
            conn.close()
            return False
        if then == "junk":
            conn.sendall(b"\x00\x00\x00\x0c\x0a\x14" + b"\xff" * 10)
        return True

    with loopback_listener(greet) as port:
        yield port


@pytest.mark.parametrize(
    ("banner_sshd", "said", "max_s"),
    [
        # findings: "SSH handshake failed: No existing session" / "connection lost: EOF"
        (
            (b"SSH-2.0-OpenSSH_9.2\r\n", "stall"),
            "sent its SSH banner (SSH-2.0-OpenSSH_9.2) but the SSH handshake did not finish within 2 s",
            8,
        ),
        (
            (b"SSH-2.0-OpenSSH_9.2\r\n", "close"),
            "sent its SSH banner (SSH-2.0-OpenSSH_9.2) and closed the connection during the SSH handshake",
            1.5,
        ),
        (
            (
                b"SSH-2.0-x\x1b[31m" + "\u202e".encode() + b"y" * 200 + b"\r\n",
                "stall",
            ),
            "but the SSH handshake did not finish within 2 s",
            8,
        ),
        # held (guard): junk after the banner is paramiko's own reason, not a stall
        ((b"SSH-2.0-OpenSSH_9.2\r\n", "junk"), "127.0.0.1:", 8),
    ],
    indirect=["banner_sshd"],
)
def test_an_sshd_silent_after_its_banner_is_one_line_naming_it(
    banner_sshd: int, said: str, max_s: float, tmp_path: Path
) -> None:
    """One line naming host and port and what happened, exit 3, within the timeout; the
    banner quoted escaped and by its head."""
    kb, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(kb, out, {})
    began = time.monotonic()
    code, output, _ = _in_process(
        ["--root", str(kb), *url(f"ssh://root@127.0.0.1:{banner_sshd}?timeout=2")], 30
    )
    took = time.monotonic() - began
    assert code == 3 and "Traceback" not in output, output[-2000:]
    line = next(x for x in output.splitlines() if x.startswith("ERROR"))
    assert said in line and f"127.0.0.1:{banner_sshd}" in line, line
    assert "No existing session" not in line and "\x1b" not in line and "\u202e" not in line, line
    assert "y" * 100 not in line, line
    assert took < max_s, took


# --- 4c. the MCP SDK echoed an unknown resource URI whole, twice (its message and
# `data.uri`), however long: 100 kB in, 200 kB out ---
@pytest.mark.parametrize(
    ("uri", "said"),
    [
        ("factbook://nope/" + "x" * 100_000, "Unknown resource: factbook://nope/xxx"),
        ("urn:" + "\u202e" * 50 + "y" * 100_000, "Unknown resource: urn:\\u202e"),
        # a template's handler quoted the id by its head, but the SDK's `data.uri` held it whole
        ("factbook://fact/" + "z" * 100_000, "zzz"),
        ("factbook://status/" + "w" * 100_000, "www"),
    ],
)
def test_an_unknown_mcp_resource_uri_is_quoted_by_its_head(
    uri: str, said: str, tmp_path: Path
) -> None:
    pytest.importorskip("mcp")
    import anyio
    from helpers import REPO
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    kb, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(kb, out, {})
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "factbook", "mcp", "--root", str(kb)],
        env={"PYTHONPATH": str(REPO / "src"), "NO_COLOR": "1"},
        cwd=str(kb),
    )
    caught: list[MCPError] = []

    async def main() -> None:
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                try:
                    await session.read_resource(uri)
                except MCPError as exc:
                    caught.append(exc)
                listed = await session.list_resources()  # the server still serves
                assert any(r.uri == "factbook://status" for r in listed.resources)

    anyio.run(main)
    assert len(caught) == 1
    error = caught[0].error
    echoed = error.message + json.dumps(error.data)
    assert said in error.message and "\n" not in error.message, error.message[:300]
    assert len(echoed) < 2000, f"{len(echoed)} characters echoed"
    assert "\u202e" not in echoed


# --- 3. the file modes of `discover --write`: new files and folders have the umask's mode, a
# shared fact file it rewrites keeps its own ---
@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_discover_write_honours_the_umask(tmp_path: Path, umask: int) -> None:
    from helpers import cli
    from test_discover import _kb

    (tmp_path / "kb").mkdir()
    root = _kb(tmp_path / "kb")
    (root / "facts" / "box.yaml").chmod(0o664)  # a shared fact file, group-writable
    before = set(root.rglob("*"))
    previous = os.umask(umask)
    try:
        code, out, err = cli(root, "discover", "--target", "local", "--write")
    finally:
        os.umask(previous)
    assert code == 0 and "updated hw.threads" in err, (out[-1500:], err[-1500:])
    made = [p for p in root.rglob("*") if p not in before and not p.is_symlink()]
    assert any(p.name == "discovered-local.yaml" for p in made), made
    for path in made:
        mode = path.stat().st_mode & 0o777
        want = (0o777 if path.is_dir() else 0o666) & ~umask
        assert mode & 0o002 == 0 and mode == want, (path, oct(mode))
    assert (root / "facts" / "box.yaml").stat().st_mode & 0o777 == 0o664  # rewritten, mode kept
    assert "stale" in (root / "facts" / "box.yaml").read_text()


# --- 2. SIGTERM/SIGINT while a step's managed server runs (server.start), in the same step:
# while it waits for the server to be ready, and after, with keep off and on ---
SERVE_SAME_STEP = """
import sys, time
from factbook.runbooks.api import server
argv = {argv!r}
print('starting', flush=True)
srv = server.start('web', argv, ready={port}, deadline=60, keep={keep})
print('server up', flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("when", ["waiting for ready", "ready", "ready, keep=True"])
def test_a_signal_while_a_steps_server_runs_leaves_nothing_behind(
    tmp_path: Path, sig: signal.Signals, when: str
) -> None:
    """A real `factbook run` whose step starts a loopback HTTP server (or one that never
    listens: the run waits for it), signalled mid-step: exit 130, the record reads back as
    interrupted, no server outlives the run (keep=True keeps a server after a successful
    run only), and the next run, lint and status work."""
    from helpers import free_port, pid_alive, pids_with_cmdline
    from runbook_kit import make_kb, run_cli, runs, start_run_until, steps_of, write_runbook

    root = make_kb(tmp_path / "kb")
    mark = str(tmp_path / f"served-{uuid.uuid4().hex[:8]}")
    os.mkdir(mark)
    port = free_port()
    if when == "waiting for ready":  # a server that never listens: server.start waits
        argv = [sys.executable, "-c", "import time; time.sleep(300)", mark]
    else:
        argv = [
            sys.executable,
            "-m",
            "http.server",
            str(port),
            "--bind",
            "127.0.0.1",
            "--directory",
            mark,
        ]
    code = SERVE_SAME_STEP.format(argv=argv, port=port, keep=when.endswith("keep=True"))
    write_runbook(
        root,
        "srv",
        [({"name": "serve", "timeout": 300}, code), ({"name": "after"}, "print('after')")],
    )
    proc = start_run_until(root, "srv", "starting" if when == "waiting for ready" else "server up")
    try:
        deadline = time.monotonic() + 30
        while not pids_with_cmdline(mark) and time.monotonic() < deadline:
            time.sleep(0.05)
        servers = pids_with_cmdline(mark)
        assert servers, "the server never started"
        time.sleep(0.3)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 10
    while any(pid_alive(p) for p in servers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in servers if pid_alive(p)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    assert left == [], f"the server outlived the run: {err[-1500:]}"
    record = runs(root, "srv")[-1]
    assert (
        record["status"] == "interrupted" and steps_of(record)["serve"]["status"] == "interrupted"
    )
    assert steps_of(record)["after"]["status"] == "pending"
    write_runbook(root, "next", [({"name": "one"}, "print('next ok')")])
    again = run_cli(root, "run", "next", timeout=120)
    assert again.returncode == 0 and "next ok" in again.stdout, again.stderr[-2000:]
    for argv2 in (["lint"], ["status", "--out", "-"]):
        code2, said, _ = _in_process(["--root", str(root), *argv2], 60)
        assert code2 == 0 and "Traceback" not in said, (argv2, said[-2000:])
