"""Clear messages at the edges: boxes that cannot run the agent or never speak SSH (issue 11.10).

Each case is one row: a target that goes wrong in one way, and the fragments the single line
about it must hold. They run for real: a local target, the real sshd box behind the real jump
(tests/sshd.py) and a TCP listener that accepts and says nothing, through the `factbook` CLI
as a subprocess, so whatever a library prints on stderr is seen exactly as a user sees it.
A python2-only box is an interpreter that prints what python2 prints when fed Python 3.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import fact, make_kb
from runbook_kit import FACTBOOK, write_runbook
from runbook_kit import make_kb as runbook_kb

PY2 = """#!/bin/sh
# what python2 says when `python -` is fed Python 3 (it parses the whole script first)
cat >/dev/null
echo '  File "<stdin>", line 12' >&2
echo '    def main(sources: dict[str, str]) -> None:' >&2
echo '                    ^' >&2
echo 'SyntaxError: invalid syntax' >&2
exit 1
"""
NOT_PY3 = ("is not Python 3", "SyntaxError", "Python >= 3.7", "`python:`", "targets.yaml")
NOT_EXEC = ("is not executable (permission denied)", "chmod +x", "`python:`")
NO_BANNER = ("accepted the connection but sent no SSH banner within 1 s", "ssh -v -p")


@pytest.fixture
def interpreters(tmp_path: Path) -> dict[str, str]:
    py2 = tmp_path / "bin" / "python2-only"
    py2.parent.mkdir()
    py2.write_text(PY2)
    py2.chmod(0o755)
    noexec = tmp_path / "bin" / "python3"
    noexec.write_text("#!/bin/sh\nexit 0\n")
    noexec.chmod(0o644)
    return {"py2": str(py2), "noexec": str(noexec)}


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A TCP port that accepts connections and never writes a byte."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def verify(root: Path, target: str, home: Path | None = None) -> tuple[int, str, str, float]:
    env = {**os.environ, **({"HOME": str(home)} if home else {})}
    started = time.monotonic()
    done = subprocess.run(
        [FACTBOOK, "--root", str(root), "verify", "x.home", "--target", target],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def kb(root: Path, targets: dict) -> Path:
    return make_kb(
        root, [fact("x.home", "env.var", {"exists": True}, args={"name": "HOME"})], targets=targets
    )


def one_clear_line(out: str, err: str, target: str, fragments: tuple[str, ...]) -> str:
    """The error line for the check; nothing of a library on stderr."""
    lines = [line for line in out.splitlines() if line.startswith("ERROR")]
    assert len(lines) == 1, out
    line = lines[0]
    assert target in line, line
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"
    noise = [e for e in err.splitlines() if not e.startswith("results: ")]
    assert noise == [], f"stray stderr: {noise}"
    return line


@pytest.mark.parametrize(
    ("interpreter", "fragments"),
    [("py2", NOT_PY3), ("noexec", NOT_EXEC)],
)
def test_local_box_whose_python_cannot_run_the_agent(
    tmp_path: Path, interpreters: dict[str, str], interpreter: str, fragments: tuple[str, ...]
) -> None:
    python = interpreters[interpreter]
    root = kb(tmp_path / "kb", {"targets": {"old": {"transport": "local", "python": python}}})
    code, out, err, _took = verify(root, "old")
    assert code == 3, (out, err)
    line = one_clear_line(out, err, "old", fragments)
    assert python in line


@pytest.mark.ssh
@pytest.mark.parametrize(("interpreter", "fragments"), [("py2", NOT_PY3), ("noexec", NOT_EXEC)])
def test_ssh_box_whose_python_cannot_run_the_agent(
    ssh_lab, ssh_home: Path, tmp_path: Path, interpreters: dict, interpreter: str, fragments: tuple
) -> None:
    root = kb(tmp_path / "kb", {"targets": {}})
    url = ssh_lab.box_url(python=interpreters[interpreter])
    code, out, err, _took = verify(root, url, ssh_home)
    assert code == 3, (out, err)
    line = one_clear_line(out, err, f"{ssh_lab.box.host}:{ssh_lab.box.port}", fragments)
    assert interpreters[interpreter] in line


def test_silent_box_is_named_with_what_to_check(tmp_path: Path, silent_port: int) -> None:
    home = tmp_path / "home"
    home.mkdir()
    box = {"host": "127.0.0.1", "port": silent_port, "user": "root", "connect_timeout": 1}
    root = kb(tmp_path / "kb", {"targets": {"mute": box}})
    code, out, err, took = verify(root, "mute", home)
    assert code == 3, (out, err)
    line = one_clear_line(out, err, "box mute (root@127.0.0.1", NO_BANNER)
    assert f"ssh -v -p {silent_port} 127.0.0.1" in line
    assert took < 10  # the target's 1 s connect timeout bounds the wait, not paramiko's 15 s


def test_silent_jump_is_named_as_the_jump(tmp_path: Path, silent_port: int) -> None:
    home = tmp_path / "home"
    home.mkdir()
    targets = {
        "mute": {"host": "127.0.0.1", "port": silent_port, "user": "root", "connect_timeout": 1},
        "behind": {"host": "10.0.0.9", "jump": ["mute"], "connect_timeout": 1},
    }
    root = kb(tmp_path / "kb", {"targets": targets})
    code, out, err, _took = verify(root, "behind", home)
    assert code == 3, (out, err)
    one_clear_line(out, err, "jump host mute (root@127.0.0.1", NO_BANNER)


def test_runbook_step_on_a_python2_box_fails_with_the_same_line(
    tmp_path: Path, interpreters: dict[str, str]
) -> None:
    root = runbook_kb(
        tmp_path, targets={"old": {"transport": "local", "python": interpreters["py2"]}}
    )
    write_runbook(
        root,
        "old",
        [({"name": "uname"}, "from factbook.runbooks.api import box\nbox.run(['uname'])")],
        target="old",
    )
    done = subprocess.run(
        [FACTBOOK, "--root", str(root), "run", "old"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stderr
    assert f"old: {interpreters['py2']} is not Python 3" in done.stdout + done.stderr
