"""File probes: existence, sizes, hashes, globs, and values by path inside config files.

Stdlib only: this source is shipped to the box and executed there by the agent. YAML and
TOML files need pyyaml / tomllib (tomli) there; without them the check is skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

# typing costs ~10 ms to import on a box and annotations here are never evaluated
# (`from __future__ import annotations`): type checkers see it, the box does not import it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _path(path: str) -> str:
    return os.path.expanduser(str(path))


def file_exists(path: str) -> bool:
    """True when the path exists."""
    return os.path.exists(_path(path))


def _tree_size(path: str) -> int:
    """A file's size, or the total of the regular files under a directory (links not followed)."""
    if not os.path.isdir(path) or os.path.islink(path):
        return os.stat(path).st_size
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            if not os.path.islink(os.path.join(folder, name)):
                total += st.st_size
    return total


def file_size(path: str) -> int:
    """Size in bytes (a directory: the total of its files)."""
    full = _path(path)
    if not os.path.exists(full):
        raise RuntimeError(f"no such file or directory: {path}")
    return _tree_size(full)


def file_sha256(path: str) -> str:
    """Hex sha256 of a file."""
    digest = hashlib.sha256()
    with open(_path(path), "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_glob_count(pattern: str) -> int:
    """Number of paths matching a glob."""
    import glob

    return len(glob.glob(_path(pattern), recursive=True))


def file_total_size(pattern: str) -> int:
    """Total size in bytes of the paths matching a glob."""
    import glob

    return sum(_tree_size(p) for p in glob.glob(_path(pattern), recursive=True))


# The most file.read returns, whatever max_bytes asks (a huge one grew the agent to 2.9 GB);
# lint refuses more (factbook.knowledge.limits.PROBE_ARG_MAX, kept equal by a test).
READ_MAX_BYTES = 1 << 20


def file_read(path: str, max_bytes: int = 65536) -> str:
    """Text of a (small) file, at most `max_bytes` (at most 1 MiB)."""
    wanted = int(max_bytes)
    if wanted < 0:
        raise RuntimeError(f"max_bytes must be 0 or more, not {wanted}")
    with open(_path(path), "rb") as handle:
        data = handle.read(min(wanted, READ_MAX_BYTES))
    return data.decode("utf-8", "replace")


# The most config.value reads of one file: factbook.knowledge.limits.CONFIG_MAX_BYTES, the
# bound of a model's config.json, kept equal by a test. It read the whole file: /dev/zero
# (or a log of gigabytes) grew the agent on the box until the check's timeout killed it.
CONFIG_READ_MAX_BYTES = 8 << 20


def _load_config(path: str) -> Any:
    full = _path(path)
    suffix = os.path.splitext(full)[1].lower()
    with open(full, "rb") as handle:
        raw = handle.read(CONFIG_READ_MAX_BYTES + 1)
    if len(raw) > CONFIG_READ_MAX_BYTES:
        raise RuntimeError(f"{path}: larger than {CONFIG_READ_MAX_BYTES} bytes; not read")
    text = raw.decode("utf-8", "replace")
    if suffix == ".json":
        return json.loads(text)
    if suffix in (".yaml", ".yml"):
        import yaml  # ModuleNotFoundError: reported as skipped

        return yaml.safe_load(text)
    if suffix == ".toml":
        try:
            import tomllib
        except ModuleNotFoundError:
            import tomli as tomllib  # type: ignore[no-redef]
        return tomllib.loads(text)
    if suffix in (".ini", ".cfg", ".conf", ".env") or os.path.basename(full) == "os-release":
        return _ini(text)
    try:
        return json.loads(text)
    except ValueError:
        import yaml

        return yaml.safe_load(text)


def _ini(text: str) -> dict[str, Any]:
    """INI sections as mappings; `key = value` lines before any section (pyvenv.cfg) at top."""
    import configparser  # only INI files need it: not imported on every run

    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
    try:
        parser.read_string(text)
    except configparser.MissingSectionHeaderError:
        parser.read_string("[__top__]\n" + text)
    data: dict[str, Any] = {s: dict(parser[s]) for s in parser.sections() if s != "__top__"}
    if parser.has_section("__top__"):
        data.update({k: v.strip('"') for k, v in parser["__top__"].items()})
    return data


_PART = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")


def lookup(data: Any, key: str) -> Any:
    """Follow `a.b[0].c`; None when a key or index is missing."""
    current = data
    for name, index in _PART.findall(str(key)):
        if index:
            if not isinstance(current, list) or not -len(current) <= int(index) < len(current):
                return None
            current = current[int(index)]
        elif isinstance(current, dict) and name in current:
            current = current[name]
        elif (
            isinstance(current, list)
            and name.lstrip("-").isdigit()
            and abs(int(name)) < len(current)
        ):
            current = current[int(name)]
        else:
            return None
    return current


def config_value(path: str, key: str | None = None) -> Any:
    """The value at `key` (`a.b[0].c`) in a JSON, YAML, TOML or INI file (null when
    missing), or the whole document without a key.
    """
    data = _load_config(path)
    return data if key in (None, "", ".") else lookup(data, key)


PROBES = {
    "file.exists": file_exists,
    "file.size": file_size,
    "file.sha256": file_sha256,
    "file.glob_count": file_glob_count,
    "file.total_size": file_total_size,
    "file.read": file_read,
    "config.value": config_value,
}
