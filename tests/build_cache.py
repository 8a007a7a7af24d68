"""factbook's wheel, and venvs installed from it, built once per machine and keyed on content.

The suite builds this tree's wheel for several files (the first day, init's CI, the wheel
path) and installs it into fresh venvs; a fresh clone or another worktree of the same source
would build the very same things again. They live in
`${XDG_CACHE_HOME:-~/.cache}/factbook/test-builds/` (or `$FACTBOOK_TEST_BUILDS`):

    wheel-KEY/factbook-*.whl     KEY: a hash of what goes into the wheel (pyproject.toml,
                                 README.md, src/ without caches) and the interpreter and
                                 setuptools versions that build it
    venv-KEY-EXTRA/              python -m venv + pip install WHEEL[EXTRA]; KEY adds the wheel's
                                 key, pip's version and its configuration (index, find-links)
    deps-KEY-EXTRA/              what pip installed beside factbook for WHEEL[EXTRA] (factbook
                                 itself uninstalled again); KEY: the wheel's Requires-Dist and
                                 Requires-Python, the interpreter, pip's identity. A source
                                 change leaves it valid: the venv of a new wheel is a
                                 hard-linked copy of it, its paths rewritten, into which
                                 `pip install WHEEL[EXTRA]` (the same command) finds every
                                 dependency satisfied and installs factbook alone (seconds
                                 instead of the half minute pip takes to install the handbook's
                                 51 packages)
    answer-KIND-KEY/answer.json  what a slow oracle answered (cached_answer: sglang's own
                                 resolution of the conformance cases), KEY: a hash of
                                 everything the answer depends on, the caller's to name
    files-KIND-KEY/              a tree of small files (content_dir), KEY: their paths and
                                 bytes, so that paths inside it are stable across runs

Each entry is made under a lock (pytest-xdist workers of one run, or two runs, never build one
twice or see one half made) and counts only once its `.complete` stamp is written; a venv is
built at its final path (venvs are not relocatable) and removed first if a build died in it.
The newest KEEP entries of each kind are kept. FACTBOOK_TEST_FRESH=1 builds everything again.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from helpers import build_wheel

REPO = Path(__file__).resolve().parents[1]
KEEP = 3  # newest entries of each kind kept: a few source versions (branches, worktrees)
IDLE_S = 1800.0  # an older entry goes only once no run has used it for this long
STAMP = ".complete"
WHEEL_INPUTS = ("pyproject.toml", "README.md", "src")
_SKIP_DIRS = {"__pycache__"}


def cache_dir() -> Path:
    """Where built artefacts live, outside any clone."""
    chosen = os.environ.get("FACTBOOK_TEST_BUILDS")
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "factbook" / "test-builds"


def _fresh() -> bool:
    return os.environ.get("FACTBOOK_TEST_FRESH", "").lower() in ("1", "true", "yes")


def _wheel_files(root: Path) -> Iterator[Path]:
    """What build_wheel copies into its source tree, in a stable order."""
    for name in WHEEL_INPUTS:
        top = root / name
        if top.is_file():
            yield top
            continue
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.endswith(".egg-info"))
            for file in sorted(files):
                yield Path(folder) / file


def wheel_key(root: Path = REPO) -> str:
    """A hash of everything the wheel is made from: its files' paths, modes and bytes, and the
    interpreter and setuptools that build it."""
    from importlib.metadata import version

    digest = hashlib.sha256()
    digest.update(f"{sys.version}\0setuptools {version('setuptools')}\0".encode())
    for path in _wheel_files(root):
        digest.update(
            f"{path.relative_to(root).as_posix()}\0{path.stat().st_mode & 0o111}\0".encode()
        )
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:24]


@functools.cache
def _pip_identity(python: str) -> str:
    """pip's version and the configuration that decides what an install resolves to."""
    shown = subprocess.run(
        [python, "-m", "pip", "--version"], capture_output=True, text=True, check=False
    ).stdout.split(" from ")[0]
    config = subprocess.run(
        [python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    ).stdout
    env = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("PIP_"))
    return "\0".join([shown, config, *env])


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cached_entry(name: str, kind: str, build: Callable[[Path], None]) -> Path:
    """cache_dir()/name, made by `build(path)` unless a complete one is there; older entries
    matching the glob `kind` pruned."""
    root = cache_dir()
    entry = root / name
    with _locked(root / f".{name}.lock"):
        if (entry / STAMP).is_file() and not _fresh():
            os.utime(entry / STAMP)  # used now: the newest are the ones kept
            return entry
        shutil.rmtree(entry, ignore_errors=True)  # a build that died half-way, or a forced one
        build(entry)
        (entry / STAMP).write_text("", encoding="utf-8")
    _prune(root, kind, keep=entry)
    return entry


def _last_used(entry: Path) -> float | None:
    """When a run last used a complete entry; None for one being built or gone."""
    try:
        return (entry / STAMP).stat().st_mtime
    except OSError:
        return None


def _prune(root: Path, kind: str, keep: Path) -> None:
    """Remove the complete entries of one kind beyond the newest KEEP that no run has used for
    IDLE_S (another worktree's run may be using one right now), never `keep`. Lock files stay
    (empty): removing one another process waits on would let two hold "the" lock."""
    used = {p: _last_used(p) for p in root.glob(kind)}
    done = sorted((p for p, t in used.items() if t is not None), key=used.get, reverse=True)
    for old in done[KEEP:]:
        if old == keep:
            continue
        with _locked(root / f".{old.name}.lock"):  # checked again: it may be in use by now
            last = _last_used(old)
            if last is not None and time.time() - last > IDLE_S:
                shutil.rmtree(old, ignore_errors=True)


def _build_wheel_into(entry: Path) -> None:
    entry.mkdir(parents=True)
    with tempfile.TemporaryDirectory(dir=entry.parent) as work:
        wheel = build_wheel(Path(work))
        wheel.rename(entry / wheel.name)


def cached_wheel() -> Path:
    """This tree's wheel (helpers.build_wheel): built once per machine for each content."""
    entry = cached_entry(f"wheel-{wheel_key()}", "wheel-*", _build_wheel_into)
    return next(entry.glob("factbook-*.whl"))


def cached_venv(
    extra: str | None, env: dict[str, str], wheel: Path | None = None
) -> tuple[Path, Path]:
    """(venv, wheel): `python -m venv` and `pip install WHEEL[EXTRA]` (pip's own
    configuration, `env` as the environment), once per machine for each wheel and extra.
    `wheel` defaults to this tree's (cached_wheel). The dependencies come from a deps- entry
    (dependencies_venv) when one matches the wheel's requirements: a source change costs one
    copy and factbook's own install, not every dependency's again."""
    base = getattr(sys, "_base_executable", sys.executable)
    wheel = wheel if wheel is not None else cached_wheel()
    pip = _pip_identity(base)
    content = hashlib.sha256(wheel.read_bytes()).hexdigest()
    ident = hashlib.sha256(
        f"{content}\0{wheel.name}\0{extra}\0{sys.version}\0{pip}".encode()
    ).hexdigest()[:24]
    kind = extra or "core"

    def build(venv: Path) -> None:
        deps = dependencies_venv(wheel, extra, env)
        copy_venv(deps, venv)
        _pip_install(venv, wheel, extra, env)

    return cached_entry(f"venv-{ident}-{kind}", f"venv-*-{kind}", build), wheel


def requirements_key(wheel: Path) -> str:
    """What decides the dependencies pip installs for a wheel: its Requires-Dist and
    Requires-Python lines (the METADATA of the wheel, not pyproject.toml: what pip reads)."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode("utf-8")
    lines = []
    for line in metadata.split("\n\n", 1)[0].splitlines():  # the headers, not the README
        if line.startswith(("Requires-Dist:", "Requires-Python:")):
            lines.append(line.strip())
    return "\n".join(lines)


def dependencies_venv(wheel: Path, extra: str | None, env: dict[str, str]) -> Path:
    """A venv holding what `pip install WHEEL[EXTRA]` installs besides the wheel's own
    package, keyed on the wheel's requirements (requirements_key), the interpreter and pip's
    identity: made once, by that very install followed by an uninstall of the package."""
    base = getattr(sys, "_base_executable", sys.executable)
    ident = hashlib.sha256(
        f"{requirements_key(wheel)}\0{extra}\0{sys.version}\0{_pip_identity(base)}".encode()
    ).hexdigest()[:24]
    kind = extra or "core"
    project = wheel.name.split("-", 1)[0]

    def build(venv: Path) -> None:
        made = subprocess.run(
            [base, "-m", "venv", str(venv)], env=env, capture_output=True, text=True, check=False
        )
        assert made.returncode == 0, made.stderr
        _pip_install(venv, wheel, extra, env)
        gone = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "uninstall", "-q", "-y", project],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert gone.returncode == 0, gone.stderr

    return cached_entry(f"deps-{ident}-{kind}", f"deps-*-{kind}", build)


def _pip_install(venv: Path, wheel: Path, extra: str | None, env: dict[str, str]) -> None:
    spec = f"{wheel}[{extra}]" if extra else str(wheel)
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", spec],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr


def copy_venv(source: Path, target: Path) -> None:
    """`source` at `target`: files hard-linked (nothing writes into an installed file: pip
    replaces, Python writes bytecode beside by rename, and the loader sets each code object's
    file name from where it was found), then every text file naming `source` (the scripts'
    shebangs, activate, pyvenv.cfg) written anew with `target` in its place, never through
    the shared link."""
    target.parent.mkdir(parents=True, exist_ok=True)
    copied = subprocess.run(
        ["cp", "-al", str(source), str(target)], capture_output=True, text=True, check=False
    )
    assert copied.returncode == 0, copied.stderr
    (target / STAMP).unlink(missing_ok=True)
    old, new = str(source).encode(), str(target).encode()
    for path in [target / "pyvenv.cfg", *(target / "bin").iterdir()]:
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if old not in data:
            continue
        fresh = path.with_name(path.name + ".relocated")
        fresh.write_bytes(data.replace(old, new))
        shutil.copymode(path, fresh)
        os.replace(fresh, path)


def cached_answer(kind: str, key: str, compute: Callable[[], Any]) -> Any:
    """compute()'s JSON answer, computed once per machine for `key` (a hash of every input
    the answer depends on: the caller's duty) and read back from then on."""

    def build(entry: Path) -> None:
        entry.mkdir(parents=True)
        text = json.dumps(compute())
        (entry / "answer.json").write_text(text, encoding="utf-8")

    entry = cached_entry(f"answer-{kind}-{key}", f"answer-{kind}-*", build)
    return json.loads((entry / "answer.json").read_text(encoding="utf-8"))


def content_dir(kind: str, files: dict[str, str]) -> Path:
    """A folder holding `files` ({relative path: text}), one per machine for each content:
    the same files always lie at the same paths (inputs of a cached_answer may name them)."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"{name}\0{files[name]}\0".encode())

    def build(entry: Path) -> None:
        for name, text in files.items():
            path = entry / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")

    return cached_entry(f"files-{kind}-{digest.hexdigest()[:24]}", f"files-{kind}-*", build)
