"""Software probes: package versions in a chosen interpreter or venv, Python, the CUDA toolkit.

Stdlib only: this source is shipped to the box and executed there by the agent. A probe given
`python` asks that interpreter in a subprocess (the venv of the engine, ~/ml-env/bin/python3);
without it, the agent's own interpreter answers in-process.
"""

from __future__ import annotations

import os
import re
import shutil
import sys

from .common import run_capped, run_python

# typing costs ~10 ms to import on a box and annotations here are never evaluated
# (`from __future__ import annotations`): type checkers see it, the box does not import it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# importlib.metadata costs 25-50 ms to import on a box (email, csv, zipfile...) and ~2 ms per
# lookup (it parses the whole METADATA file as e-mail): the common case, a `.dist-info` folder
# in a plain folder of sys.path, is answered from the folder listing and METADATA's header
# lines instead, with the same search order and name matching. Anything else (an egg, a zip on
# sys.path, another finder that provides distributions) goes to importlib.metadata itself.
UNDECIDED = object()
_LISTINGS: dict[str, tuple[float, dict[str, list[str]]]] = {}


def _normalized(name: str) -> str:
    """PEP 503 with underscores: how importlib.metadata matches `.dist-info` folder names."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _infos(root: str) -> dict[str, list[str]] | None:
    """Normalized name -> the `.dist-info`/`.egg-info` entries of `root`, in listing order
    (cached while the folder's mtime holds); {} when `root` is missing, None when it is not a
    plain folder (a zip: importlib.metadata decides)."""
    try:
        mtime = os.stat(root).st_mtime
    except OSError:
        return {}
    cached = _LISTINGS.get(root)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    try:
        children = os.listdir(root)
    except NotADirectoryError:
        return None
    except OSError:
        return {}
    infos: dict[str, list[str]] = {}
    for child in children:
        low = child.lower()
        if low.endswith((".dist-info", ".egg-info")):
            name = _normalized(low.rpartition(".")[0].partition("-")[0])
            infos.setdefault(name, []).append(child)
    _LISTINGS[root] = (mtime, infos)
    return infos


def _header_version(path: str) -> Any:
    """The first `Version:` header of a METADATA file as the e-mail parser gives it (leading
    blanks dropped, trailing ones kept); headers end at the first empty line. A folded value
    is left to importlib.metadata."""
    try:
        with open(path, encoding="utf-8") as handle:
            found: Any = UNDECIDED
            for line in handle:
                if found is not UNDECIDED:
                    return UNDECIDED if line[:1] in (" ", "\t") else found
                if not line.strip():
                    break
                key, colon, value = line.partition(":")
                if colon and key.lower() == "version" and not line[0].isspace():
                    found = value.lstrip(" \t").rstrip("\r\n")
            return found
    except (OSError, UnicodeDecodeError):
        return UNDECIDED


def dist_info_version(name: str) -> Any:
    """The version importlib.metadata would find, None when it would find none, or UNDECIDED
    when only importlib.metadata can tell."""
    import importlib.machinery

    # 3.10 brought the name matching mirrored here (3.8 and 3.9 keep dots in names)
    if sys.version_info < (3, 10) or not name:
        return UNDECIDED
    finders = [f for f in sys.meta_path if getattr(f, "find_distributions", None) is not None]
    if finders != [importlib.machinery.PathFinder]:
        return UNDECIDED
    wanted = _normalized(name)
    for entry in sys.path:
        root = entry or "."
        if os.path.basename(root).lower().endswith(".egg"):
            return UNDECIDED
        infos = _infos(root)
        if infos is None:
            return UNDECIDED
        found = infos.get(wanted)
        if found:
            return _info_version(os.path.join(root, found[0]))
    return None


def _info_version(info: str) -> Any:
    """The version in a `.dist-info`/`.egg-info` folder (METADATA, else PKG-INFO) or an
    `.egg-info` file (PKG-INFO's text itself), read as importlib.metadata reads it."""
    if not os.path.isdir(info):
        return _header_version(info) if os.path.isfile(info) else UNDECIDED
    for name in ("METADATA", "PKG-INFO"):
        path = os.path.join(info, name)
        if os.path.isfile(path) and os.path.getsize(path):
            return _header_version(path)
    return UNDECIDED


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
    fast = dist_info_version(str(name))
    if fast is not UNDECIDED:
        return fast
    try:
        from importlib import metadata
    except ImportError:  # Python 3.7 on the box
        try:
            import importlib_metadata as metadata  # type: ignore[no-redef]
        except ImportError:
            raise ModuleNotFoundError("importlib_metadata", name="importlib_metadata") from None
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
    import platform

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
    _, out, _ = run_capped([_nvcc(cuda_home), "--version"], merge=True)
    text = out.text()[0]
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
