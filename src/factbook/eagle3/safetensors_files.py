"""A checkpoint's safetensors files, single or sharded, read without torch.

The header of a safetensors file is an 8-byte little-endian length and a JSON object, so
names, dtypes and shapes come from the standard library: `keys` and `capture` stay usable
on a box where torch is missing, and reading a 4.7 GB checkpoint's key list costs
microseconds.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError

INDEX_NAME = "model.safetensors.index.json"
SINGLE_NAME = "model.safetensors"
MAX_HEADER = 100 * 1024 * 1024


@dataclass(frozen=True)
class TensorInfo:
    """One tensor's entry in a safetensors header."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    file: Path


@dataclass
class Checkpoint:
    """The safetensors files of one checkpoint and where each tensor lives."""

    root: Path
    files: list[Path]
    index: Path | None = None
    index_data: dict[str, Any] = field(default_factory=dict)
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    metadata: dict[Path, dict[str, str]] = field(default_factory=dict)

    @property
    def sharded(self) -> bool:
        return self.index is not None


def read_header(path: Path) -> tuple[dict[str, TensorInfo], dict[str, str]]:
    """Tensor infos and `__metadata__` of one file; InputError naming the file if malformed."""
    try:
        with path.open("rb") as handle:
            raw_len = handle.read(8)
            if len(raw_len) != 8:
                raise InputError(f"{path}: not a safetensors file (shorter than 8 bytes)")
            (length,) = struct.unpack("<Q", raw_len)
            if length > MAX_HEADER:
                raise InputError(f"{path}: not a safetensors file (header length {length})")
            header = json.loads(handle.read(length).decode("utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a safetensors file (bad header: {exc})") from None
    if not isinstance(header, dict):
        raise InputError(f"{path}: not a safetensors file (header is not an object)")
    metadata = header.pop("__metadata__", None) or {}
    infos = {}
    for name, entry in header.items():
        if not isinstance(entry, dict) or "dtype" not in entry or "shape" not in entry:
            raise InputError(f"{path}: tensor {name!r} has no dtype/shape in the header")
        infos[name] = TensorInfo(name, entry["dtype"], tuple(entry["shape"]), path)
    return infos, dict(metadata)


def open_checkpoint(path: Path | str) -> Checkpoint:
    """A checkpoint folder (index + shards, or one file) or a single .safetensors file."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.is_file():
        return _single(path.parent, path)
    index = path / INDEX_NAME
    if index.is_file():
        return _sharded(path, index)
    if (path / SINGLE_NAME).is_file():
        return _single(path, path / SINGLE_NAME)
    found = sorted(path.glob("*.safetensors"))
    if len(found) == 1:
        return _single(path, found[0])
    if not found:
        raise InputError(f"{path}: no *.safetensors file here (only safetensors is supported)")
    raise InputError(
        f"{path}: {len(found)} .safetensors files but no {INDEX_NAME} to say how they fit"
    )


def _single(root: Path, file: Path) -> Checkpoint:
    tensors, metadata = read_header(file)
    return Checkpoint(root=root, files=[file], tensors=tensors, metadata={file: metadata})


def _sharded(root: Path, index: Path) -> Checkpoint:
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{index}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict):
        raise InputError(f"{index}: no 'weight_map' object")
    files = sorted({root / str(v) for v in weight_map.values()})
    ckpt = Checkpoint(root=root, files=files, index=index, index_data=data)
    for file in files:
        if not file.is_file():
            raise InputError(f"{index}: weight_map names {file.name}, which does not exist")
        tensors, metadata = read_header(file)
        ckpt.tensors.update(tensors)
        ckpt.metadata[file] = metadata
    for name, shard in weight_map.items():
        info = ckpt.tensors.get(name)
        if info is None or info.file.name != Path(str(shard)).name:
            raise InputError(f"{index}: weight_map puts {name!r} in {shard}, which lacks it")
    return ckpt
