"""Shared test helpers: a throwaway knowledge base on disk, a copy of the shipped one, the CLI
run in-process, free ports and live pids. Fixtures wrapping them live in conftest.py."""

from __future__ import annotations

import importlib
import importlib.util
import io
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml

from factbook.commands.cli import run

REPO = Path(__file__).resolve().parents[1]


class DeferredModule:
    """A module imported on its first attribute, by the process that runs a test using it.

    Under pytest-xdist every worker collects every test file; a heavy import at a module's top
    (torch and transformers: ~3 s of CPU, the mcp SDK: ~1 s) was paid by each worker, though
    one runs the file."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):  # pytest's probes at collection (_mock_name, __test__...)
            raise AttributeError(attr)
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<deferred module {self._name!r}>"


def module_or_skip(name: str, reason: str | None = None) -> Any:
    """pytest.importorskip at a test module's top, the import itself deferred: the module is
    skipped at collection when `name` cannot be found, else `name` is imported on first use
    (a DeferredModule). An install that is found but fails to import fails its tests."""
    if importlib.util.find_spec(name) is None:
        pytest.skip(reason or f"could not import {name!r}", allow_module_level=True)
    return DeferredModule(name)


class _NoAliases(yaml.SafeDumper):
    """Shared objects written out in full: the loader refuses YAML aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_NoAliases, sort_keys=False)


LOCAL_TARGETS = {"targets": {"local": {"transport": "local"}, "other": {"transport": "local"}}}


def fact(fact_id: str, probe: str, expect: Any = None, *, args: Any = None, **extra: Any) -> dict:
    """A minimal valid fact with a check."""
    check: dict[str, Any] = {"probe": probe, "args": args or {}}
    if expect is not None:
        check["expect"] = expect
    for key in ("timeout",):
        if key in extra:
            check[key] = extra.pop(key)
    base = {
        "id": fact_id,
        "category": extra.pop("category", "hardware"),
        "title": fact_id,
        "statement": f"statement of {fact_id}",
        "status": "assumed",
        "sources": [{"note": "test"}],
        "check": check,
    }
    base.update(extra)
    return base


def local_trio() -> list[dict]:
    """Three facts on `local`: one passes, one drifts (100000 CPU threads), one reads $HOME."""
    return [
        fact("hw.cpu.threads", "cpu.threads", {"ge": 1}, target="local", tags=["cpu"]),
        fact("hw.cpu.too_many", "cpu.threads", {"eq": 100000}, target="local", tags=["cpu"]),
        fact(
            "sw.env.home",
            "env.var",
            {"exists": True},
            args={"name": "HOME"},
            category="software",
            target="local",
            tags=["shell-env"],
        ),
    ]


def make_kb(
    root: Path,
    facts: list[dict],
    *,
    targets: dict | None = None,
    checks: dict[str, str] | None = None,
) -> Path:
    (root / "facts").mkdir(parents=True, exist_ok=True)
    (root / "targets.yaml").write_text(_dump(targets or LOCAL_TARGETS))
    (root / "facts" / "facts.yaml").write_text(_dump({"facts": facts}))
    for name, text in (checks or {}).items():
        (root / "checks").mkdir(exist_ok=True)
        (root / "checks" / name).write_text(text)
    return root


def cli(root: Path, *argv: str) -> tuple[int, str, str]:
    """Run `factbook --root ROOT ARGV...` in-process; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = run(["--root", str(root), *argv])
        except SystemExit as exc:  # argparse rejects the command line
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not running
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def pids_with_cmdline(marker: str) -> list[int]:
    """Live pids other than ours whose command line contains `marker` (a /proc scan, no
    psutil; the lab's boxes share our pid namespace)."""
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            raw = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in raw and pid_alive(int(entry)):
            found.append(int(entry))
    return found


def pids_with_environ(entry: str) -> list[int]:
    """Live pids other than ours whose environment (as exec'd) holds `entry` (`NAME=value`):
    what a process inherited, even after it left our process tree (a daemon, a slurmstepd)."""
    found = []
    me = os.getpid()
    want = entry.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            env = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if want in env and pid_alive(int(name)):
            found.append(int(name))
    return found


def wait_no_environ(entry: str, seconds: float = 10.0) -> list[int]:
    """Wait until no process carries `entry` in its environment; the pids left at the end."""
    deadline = time.monotonic() + seconds
    while (left := pids_with_environ(entry)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def wait_no_cmdline(marker: str, seconds: float = 10.0) -> list[int]:
    """Wait until no process carries `marker`; the pids still carrying it at the deadline."""
    deadline = time.monotonic() + seconds
    while (left := pids_with_cmdline(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def kb_copy(dest: Path, parts: tuple[str, ...] = ("facts", "checks", "runbooks")) -> Path:
    """A copy of the shipped knowledge base (the given folders plus targets and milestones)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in parts:
        shutil.copytree(REPO / name, dest / name)
    for name in ("milestones.yaml", "targets.yaml"):
        shutil.copy(REPO / name, dest / name)
    return dest


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def target_entries(targets: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """targets.yaml entries (host, port, user, key, jump) for the SSH lab's Target objects."""
    return {
        name: {
            "host": t.host,
            "port": t.port,
            "user": t.user,
            "identity_file": t.identity_file,
            **({"jump": list(t.jump)} if t.jump else {}),
        }
        for name, t in targets.items()
    }


CHROMIUM = "/usr/bin/chromium"  # Debian's, driven by Playwright


def require(missing: str | None) -> None:
    """Skip where a real component the test needs is missing here (`missing` says which);
    fail in CI, whose scripts/test installs every one: a skip there would pass unrun."""
    if not missing:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI needs it: {missing}")
    pytest.skip(missing)


def require_chromium() -> str:
    """The Chromium path, after `require`."""
    require(None if os.path.exists(CHROMIUM) else f"{CHROMIUM} missing (Debian's chromium)")
    return CHROMIUM


SEED_ITEMS = REPO / "tests" / "data" / "seed_items.yaml"
_DIGIT_GROUP = re.compile(r"(?<=\d),(?=\d{3})")


def seed_items() -> dict[str, dict[str, str]]:
    """{milestone: {label: needles}}: what each seed says its dump held (the file explains)."""
    data = yaml.safe_load(SEED_ITEMS.read_text(encoding="utf-8"))
    return {str(m): {str(k): str(v) for k, v in items.items()} for m, items in data.items()}


def _plain(text: str) -> str:
    text = _DIGIT_GROUP.sub("", text.replace("&lt;", "<"))
    return " ".join(text.split()).lower()


def item_kept(text: str, needles: str, *, plain: bool = False) -> bool:
    """Whether every ` & `-separated needle (each `a | b`: either) occurs in `text`."""
    body = text if plain else _plain(text)
    return all(
        any(_plain(alt) in body for alt in part.split(" | ")) for part in needles.split(" & ")
    )


def items_missing(text: str, items: dict[str, str]) -> list[str]:
    """The labels of the seed items `text` does not hold."""
    body = _plain(text)
    return [label for label, needles in items.items() if not item_kept(body, needles, plain=True)]


# The CLI in a child that reports its own peak RSS on stderr ("maxrss_kb N") after it ran.
# VmHWM, not getrusage's ru_maxrss: Linux carries the forking parent's peak across exec into
# ru_maxrss, so a child forked from a big test worker would report the worker's size.
PEAK_RSS_CLI = (
    "import sys\n"
    "from factbook.commands.cli import run\n"
    "code = run(sys.argv[1:])\n"
    "sys.stdout.flush()\n"
    "hwm = [line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:')]\n"
    "print('\\nmaxrss_kb', hwm[0], file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def build_wheel(work: Path, repo: Path = REPO) -> Path:
    """factbook's wheel built from a copy of this tree (or `repo`, another checkout) into
    `work` (the build leaves nothing in the repository); without build isolation: setuptools
    is already here."""
    source = work / "source"
    source.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(repo / name, source / name)
    shutil.copytree(
        repo / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    argv = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    built = subprocess.run(
        [*argv, "-w", str(work / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    return next((work / "dist").glob("factbook-*.whl"))


# a knowledge base's own probe that leaves a marker when its code runs (issue 25: serve and
# mcp run it only with --run-kb-probes)
TOUCH_PROBE = '''
def touch(path):
    """Creates `path` and returns 1: the knowledge base's code ran."""
    open(path, "a").close()
    return 1
PROBES = {"t.touch": touch}
'''
# checks/ may declare a built-in's name; shipping the file runs its top-level code
SHADOW_PROBE = '''
open(%r, "a").close()
def threads():
    """1."""
    return 1
PROBES = {"cpu.threads": threads}
'''


@contextmanager
def loopback_listener(greet: Callable[[socket.socket], bool]) -> Iterator[int]:
    """A TCP listener on 127.0.0.1 (its port yielded) that hands each connection to `greet`,
    keeping it open while `greet` returns True: an sshd that never speaks, hangs up, or sends
    a banner and stalls, as hostile tests need one."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            if greet(conn):
                held.append(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()
