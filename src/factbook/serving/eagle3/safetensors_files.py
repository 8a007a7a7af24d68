"""A checkpoint's safetensors files, single or sharded, read without torch.

The header of a safetensors file is an 8-byte little-endian length and a JSON object, so
names, dtypes and shapes come from the standard library: `keys` and `capture` stay usable on a
box where torch is missing, and reading a 4.7 GB checkpoint's key list costs microseconds.
The reading is factbook.probes.common's (the one implementation, shipped to boxes with the
probes); this module gives it the dataclasses and InputError of `factbook eagle3`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factbook.errors import InputError
from factbook.probes.common import SAFETENSORS_INDEX as INDEX_NAME
from factbook.probes.common import SafetensorsError, read_checkpoint

__all__ = ["INDEX_NAME", "Checkpoint", "TensorInfo", "open_checkpoint"]


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


def open_checkpoint(path: Path | str) -> Checkpoint:
    """A checkpoint folder (index + shards, or one file) or a single .safetensors file.

    Read by the probes' reader (factbook.probes.common, shipped to boxes), so `factbook
    eagle3` and the on-box checks judge a checkpoint the same way.
    """
    path = Path(path)
    try:
        found = read_checkpoint(str(path), strict=True)
    except SafetensorsError as exc:
        raise InputError(str(exc)) from None
    files = [Path(f) for f in found["files"]]
    return Checkpoint(
        root=path.parent if path.is_file() else path,
        files=files,
        index=Path(found["index"]) if found["index"] else None,
        index_data=found["index_data"] or {},
        tensors={
            name: TensorInfo(name, entry["dtype"], tuple(entry["shape"]), Path(file))
            for name, (file, entry, _start) in found["tensors"].items()
        },
        metadata={Path(file): meta for file, meta in found["metadata"].items()},
    )
