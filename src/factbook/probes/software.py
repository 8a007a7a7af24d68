"""Software probes: package versions in a chosen interpreter or venv, Python, the CUDA toolkit.

Stdlib only: this source is shipped to the box and executed there by the agent. A probe given
`python` asks that interpreter in a subprocess (the venv of the engine, ~/ml-env/bin/python3);
without it, the agent's own interpreter answers in-process.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess

from .common import run_python

# Imported here, in the agent, before it forks its workers: importlib.metadata costs ~25 ms
# to import, which every worker would otherwise pay again on its first pkg.version.
try:
    from importlib import metadata
except ImportError:  # Python 3.7 on the box
    try:
        import importlib_metadata as metadata  # type: ignore[no-redef]
    except ImportError:
        metadata = None  # type: ignore[assignment]

_PKG_SNIPPET = r"""
import json, sys
try:
    from importlib import metadata
except ImportError:
    import importlib_metadata as metadata
try:
    print(json.dumps(metadata.version(sys.argv[1])))
except metadata.PackageNotFoundError:
    print("null")
"""


def pkg_version(name: str, python: str | None = None) -> str | None:
    """Installed version of a Python distribution (or null), in the agent's interpreter or
    in another one (a venv).
    """
    if python:
        return run_python(python, _PKG_SNIPPET, str(name))
    if metadata is None:
        raise ModuleNotFoundError("importlib_metadata", name="importlib_metadata")
    try:
        return metadata.version(str(name))
    except metadata.PackageNotFoundError:
        return None


def python_version(python: str | None = None) -> str:
    """Version of the agent's interpreter or of another one (a venv)."""
    if python:
        return run_python(
            python, "import platform, json; print(json.dumps(platform.python_version()))"
        )
    return platform.python_version()


def cuda_home() -> str | None:
    """CUDA_HOME, or the toolkit directory found."""
    for key in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(key):
            return os.environ[key]
    nvcc = shutil.which("nvcc")
    if nvcc:
        return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    return "/usr/local/cuda" if os.path.isdir("/usr/local/cuda") else None


def _nvcc(cuda_home_dir: str | None) -> str:
    candidates = []
    if cuda_home_dir:
        candidates.append(os.path.join(os.path.expanduser(cuda_home_dir), "bin", "nvcc"))
    else:
        home = cuda_home()
        if home:
            candidates.append(os.path.join(home, "bin", "nvcc"))
        candidates.append(shutil.which("nvcc") or "")
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    where = cuda_home_dir or "PATH, CUDA_HOME, /usr/local/cuda"
    raise RuntimeError(f"nvcc not found on target (looked in {where})")


def cuda_nvcc_version(cuda_home: str | None = None) -> str:
    """CUDA toolkit version (`12.8.93`) from `nvcc --version`."""
    proc = subprocess.run(
        [_nvcc(cuda_home), "--version"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    text = proc.stdout.decode("utf-8", "replace")
    match = re.search(r"\bV(\d+(?:\.\d+)+)", text) or re.search(r"release (\d+(?:\.\d+)+)", text)
    if match is None:
        raise RuntimeError(f"cannot read a version from nvcc --version: {text.strip()[:200]}")
    return match.group(1)


PROBES = {
    "pkg.version": pkg_version,
    "python.version": python_version,
    "cuda.nvcc_version": cuda_nvcc_version,
    "cuda.home": cuda_home,
}
