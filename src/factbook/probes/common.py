"""Helpers the probe modules share, shipped to the box with them.

Stdlib only. The agent registers this source as `factbook.probes.common` before it loads any
probe module, so `from .common import ...` (built-in probes) and
`from factbook.probes.common import ...` (a knowledge base's checks/*.py) work on a box where
factbook is not installed, exactly as they do here.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess

# typing costs ~10 ms to import on a box and annotations here are never evaluated
# (`from __future__ import annotations`): type checkers see it, the box does not import it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _interpreter(python: str) -> str:
    path = os.path.expanduser(str(python))
    found = shutil.which(path)
    if found is None:
        raise RuntimeError(f"interpreter not found on target: {python}")
    return found


# `-c` puts the working folder first on sys.path; the code's imports come from the venv only
_NO_CWD = "import sys\nif sys.path and sys.path[0] in ('', '.'):\n    del sys.path[0]\n"


def run_python(python: str, code: str, *args: str) -> Any:
    """Run `code` in another interpreter (a venv's) and parse the JSON it prints last.

    Code that prints `{"__missing__": NAME}` reports a module missing there: it comes back as
    ModuleNotFoundError, which the agent turns into a skipped check.
    """
    proc = subprocess.run(
        [_interpreter(python), "-c", _NO_CWD + code, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    out = proc.stdout.decode("utf-8", "replace").strip().splitlines()
    if proc.returncode != 0 or not out:
        detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise RuntimeError(f"{python} exited {proc.returncode}: {' | '.join(detail)}")
    result = json.loads(out[-1])
    if isinstance(result, dict) and "__missing__" in result:
        exc = ModuleNotFoundError(f"No module named {result['__missing__']!r}")
        exc.name = result["__missing__"]
        raise exc
    return result


# ---------------------------------------------------------------- safetensors
# The one reader of safetensors checkpoints: the probes, checks/*.py on the box and
# `factbook eagle3` (through factbook.serving.eagle3.safetensors_files) all use it.

SAFETENSORS_INDEX = "model.safetensors.index.json"
SAFETENSORS_SINGLE = "model.safetensors"
_MAX_HEADER = 100 * 1024 * 1024


class SafetensorsError(RuntimeError):
    """A checkpoint cannot be read; the message names the file (the agent shows it as is)."""


def safetensors_header(path: str) -> tuple[dict[str, Any], dict[str, str], int]:
    """(tensor entries, `__metadata__`, byte offset of the data section) of one .safetensors
    file: an 8-byte little-endian header length, then that much JSON."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(8)
            if len(raw) != 8:
                raise SafetensorsError(f"{path}: not a safetensors file (too short)")
            (length,) = struct.unpack("<Q", raw)
            if length > _MAX_HEADER:
                raise SafetensorsError(f"{path}: not a safetensors file (header length {length})")
            header = json.loads(handle.read(length).decode("utf-8"))
    except OSError as exc:
        raise SafetensorsError(f"{path}: cannot read ({exc.strerror})") from None
    except ValueError as exc:  # bad UTF-8 or JSON
        raise SafetensorsError(f"{path}: not a safetensors file (bad header: {exc})") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: not a safetensors file (header is not an object)")
    metadata = header.pop("__metadata__", None) or {}
    for name, entry in header.items():
        if not isinstance(entry, dict) or "dtype" not in entry or "shape" not in entry:
            raise SafetensorsError(f"{path}: tensor {name!r} has no dtype/shape in the header")
    return header, dict(metadata), 8 + length


def read_safetensors_header(path: str) -> tuple[dict[str, Any], int]:
    """(tensor entries without `__metadata__`, byte offset of the data section) of one file."""
    header, _metadata, start = safetensors_header(path)
    return header, start


def _index_files(folder: str, index: str) -> tuple[list[str], dict[str, Any]]:
    try:
        with open(index, encoding="utf-8") as handle:
            data = json.load(handle)
    except json.JSONDecodeError as exc:
        raise SafetensorsError(f"{index}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    except OSError as exc:
        raise SafetensorsError(f"{index}: cannot read ({exc.strerror})") from None
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict):
        raise SafetensorsError(f"{index}: no 'weight_map' object")
    files = sorted({os.path.join(folder, str(name)) for name in weight_map.values()})
    for file in files:
        if not os.path.isfile(file):
            raise SafetensorsError(
                f"{index}: weight_map names {os.path.basename(file)}, which does not exist"
            )
    return files, data


def safetensors_files(path: str, *, strict: bool = False) -> tuple[list[str], str | None, Any]:
    """(files, index path or None, index JSON or None) of a checkpoint.

    A .safetensors file is itself; a folder is its index's shards, else its model.safetensors,
    else every *.safetensors in it (sorted). `strict`: an unindexed folder must hold exactly
    one file, as a loader would not know how several fit.
    """
    full = os.path.expanduser(str(path))
    if os.path.isfile(full):
        return [full], None, None
    if not os.path.isdir(full):
        raise SafetensorsError(f"{path}: no such file or folder")
    index = os.path.join(full, SAFETENSORS_INDEX)
    if os.path.isfile(index):
        files, data = _index_files(full, index)
        return files, index, data
    if os.path.isfile(os.path.join(full, SAFETENSORS_SINGLE)):
        return [os.path.join(full, SAFETENSORS_SINGLE)], None, None
    found = sorted(os.path.join(full, f) for f in os.listdir(full) if f.endswith(".safetensors"))
    if strict and not found:
        raise SafetensorsError(
            f"{path}: no *.safetensors file here (only safetensors is supported)"
        )
    if strict and len(found) > 1:
        raise SafetensorsError(
            f"{path}: {len(found)} .safetensors files but no {SAFETENSORS_INDEX} "
            "to say how they fit"
        )
    return found, None, None


def read_checkpoint(path: str, *, strict: bool = False) -> dict[str, Any]:
    """Every tensor of a checkpoint (see safetensors_files), from the headers alone.

    {"files", "index", "index_data", "tensors": {name: (file, entry, data offset)},
    "metadata": {file: __metadata__}}; a tensor the index puts in a shard that lacks it is
    an error.
    """
    files, index, index_data = safetensors_files(path, strict=strict)
    tensors: dict[str, tuple[str, dict[str, Any], int]] = {}
    metadata: dict[str, dict[str, str]] = {}
    for file in files:
        header, metadata[file], start = safetensors_header(file)
        for name, entry in header.items():
            tensors[name] = (file, entry, start)
    for name, shard in ((index_data or {}).get("weight_map") or {}).items():
        found = tensors.get(name)
        if found is None or os.path.basename(found[0]) != os.path.basename(str(shard)):
            raise SafetensorsError(f"{index}: weight_map puts {name!r} in {shard}, which lacks it")
    return {
        "files": files,
        "index": index,
        "index_data": index_data,
        "tensors": tensors,
        "metadata": metadata,
    }
