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
from typing import Any


def _interpreter(python: str) -> str:
    path = os.path.expanduser(str(python))
    found = shutil.which(path)
    if found is None:
        raise RuntimeError(f"interpreter not found on target: {python}")
    return found


def run_python(python: str, code: str, *args: str) -> Any:
    """Run `code` in another interpreter (a venv's) and parse the JSON it prints last.

    Code that prints `{"__missing__": NAME}` reports a module missing there: it comes back as
    ModuleNotFoundError, which the agent turns into a skipped check.
    """
    proc = subprocess.run(
        [_interpreter(python), "-c", code, *args],
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


def read_safetensors_header(path: str) -> tuple[dict[str, Any], int]:
    """(tensor entries without `__metadata__`, byte offset of the data section) of one
    .safetensors file: an 8-byte little-endian header length, then that much JSON."""
    with open(path, "rb") as handle:
        raw = handle.read(8)
        if len(raw) != 8:
            raise RuntimeError(f"{path}: not a safetensors file (too short)")
        (length,) = struct.unpack("<Q", raw)
        if length > 100 * 1024 * 1024:
            raise RuntimeError(f"{path}: not a safetensors file (header length {length})")
        try:
            header = json.loads(handle.read(length).decode("utf-8"))
        except ValueError as exc:
            raise RuntimeError(f"{path}: bad safetensors header: {exc}") from None
    header.pop("__metadata__", None)
    return header, 8 + length
