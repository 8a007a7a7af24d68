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
import stat
import struct
import subprocess

# typing costs ~10 ms to import on a box and annotations here are never evaluated
# (`from __future__ import annotations`): type checkers see it, the box does not import it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# what one command's stream may hold in the agent's memory: the head and the tail of it; the
# box under test may print without end (`yes`), and its output is read as it arrives
CAPTURE_MAX_BYTES = 16 << 20


class Capped:
    """One stream's output as it arrives, held in at most `cap` bytes: the first half and a
    rolling last half, and how many bytes between them were dropped. Reading it all before
    capping held everything a command printed: `yes` grew the agent by ~1 GB a second on the
    box until its timeout (4.6 GB in 5 s)."""

    NOTE = "\n[... factbook: {} bytes of output dropped ...]\n"

    def __init__(self, cap: int, note: str = NOTE) -> None:
        self.note = note  # where the middle was dropped, `{}` its byte count
        self.half = max(1, cap // 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > 2 * self.half:  # trimmed in batches: linear in what was read
            cut = len(self.tail) - self.half
            self.dropped += cut
            del self.tail[:cut]

    def data(self) -> tuple[bytes, int]:
        """The output, with a note where its middle was dropped; how many bytes were."""
        if not self.dropped and len(self.head) + len(self.tail) <= 2 * self.half:
            return bytes(self.head + self.tail), 0
        extra = max(0, len(self.tail) - self.half)
        dropped = self.dropped + extra
        note = self.note.format(dropped).encode()
        return bytes(self.head) + note + bytes(self.tail[extra:]), dropped

    def text(self) -> tuple[str, int]:
        """data() decoded (invalid UTF-8 replaced)."""
        data, dropped = self.data()
        return data.decode("utf-8", "replace"), dropped


def communicate_capped(
    proc: subprocess.Popen, cap: int = CAPTURE_MAX_BYTES
) -> tuple[Capped, Capped]:
    """Read a child's stdout and stderr (either may be None) to their ends, each held within
    `cap` bytes, then wait for it."""
    import selectors

    streams = {s: Capped(cap) for s in (proc.stdout, proc.stderr) if s is not None}
    with selectors.DefaultSelector() as selector:
        for stream in streams:
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            for key, _ in selector.select():
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    streams[key.fileobj].add(chunk)  # type: ignore[index]
                else:
                    selector.unregister(key.fileobj)
                    key.fileobj.close()  # type: ignore[union-attr]
    proc.wait()
    empty = Capped(cap)
    return streams.get(proc.stdout, empty), streams.get(proc.stderr, empty)


def run_capped(
    argv: list[str], cap: int = CAPTURE_MAX_BYTES, merge: bool = False
) -> tuple[int, Capped, Capped]:
    """subprocess.run(argv, capture_output=True) with each stream held within `cap` bytes
    (stderr into stdout with `merge`): (exit code, stdout, stderr)."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge else subprocess.PIPE,
    )
    out, err = communicate_capped(proc, cap)
    return proc.returncode, out, err


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
    status, stdout, stderr = run_capped([_interpreter(python), "-c", _NO_CWD + code, *args])
    out = stdout.text()[0].strip().splitlines()
    if status != 0 or not out:
        detail = stderr.text()[0].strip().splitlines()[-3:]
        raise RuntimeError(f"{python} exited {status}: {' | '.join(detail)}")
    result = json.loads(out[-1])
    if isinstance(result, dict) and "__missing__" in result:
        exc = ModuleNotFoundError(f"No module named {result['__missing__']!r}")
        exc.name = result["__missing__"]
        raise exc
    return result


def read_bounded(path: str, limit: int, error: type[Exception] = RuntimeError) -> bytes:
    """The bytes of a regular file of at most `limit` bytes, else `error` in one line naming
    the path. The size is checked before reading (a sparse file of terabytes is refused
    unread), a FIFO or device is refused without waiting for a writer (opened non-blocking),
    and at most `limit` + 1 bytes are read whatever the file grows to meanwhile: the probes
    run on the box for whoever may run a check, so nothing may read without a bound."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{path}: not a regular file; not read")
        if info.st_size > limit:
            raise error(f"{path}: {info.st_size} bytes, larger than {limit}; not read")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise error(f"{path}: larger than {limit} bytes; not read")
    return data


# ---------------------------------------------------------------- safetensors
# The one reader of safetensors checkpoints: the probes, checks/*.py on the box and
# `factbook eagle3` (through factbook.serving.eagle3.safetensors_files) all use it.

SAFETENSORS_INDEX = "model.safetensors.index.json"
SAFETENSORS_SINGLE = "model.safetensors"
_MAX_HEADER = 100 * 1024 * 1024
# The most a model.safetensors.index.json may hold: its weight_map names every tensor once
# (~100 bytes each); DeepSeek-V3's 671B index is ~9 MB, and an INT4 MoE that stores a scale
# and a shape beside each expert weight about three times that. 64 MiB leaves room for
# twice as large a model and bounds what a hostile index makes the agent parse.
INDEX_READ_MAX_BYTES = 64 << 20
# Bits per element of the dtypes safetensors knows; a dtype not here (a newer format) is
# kept as a name, its byte count left unchecked.
_DTYPE_BITS = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
    "F4": 4,
}


class SafetensorsError(RuntimeError):
    """A checkpoint cannot be read; the message names the file (the agent shows it as is)."""


def safetensors_header(path: str) -> tuple[dict[str, Any], dict[str, str], int]:
    """(tensor entries, `__metadata__`, byte offset of the data section) of one .safetensors
    file: an 8-byte little-endian header length, then that much JSON."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO: refused, not waited on
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise SafetensorsError(f"{path}: not a regular file; not read")
            raw = handle.read(8)
            if len(raw) != 8:
                raise SafetensorsError(f"{path}: not a safetensors file (too short)")
            (length,) = struct.unpack("<Q", raw)
            if length > min(_MAX_HEADER, info.st_size - 8):
                raise SafetensorsError(
                    f"{path}: not a safetensors file (header length {length}, "
                    f"file size {info.st_size})"
                )
            header = json.loads(handle.read(length).decode("utf-8"))
    except OSError as exc:
        raise SafetensorsError(f"{path}: cannot read ({exc.strerror})") from None
    except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, JSON nested too deep
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SafetensorsError(f"{path}: not a safetensors file (bad header: {why})") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: not a safetensors file (header is not an object)")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise SafetensorsError(f"{path}: __metadata__ is not an object of strings")
    _check_entries(path, header, info.st_size - 8 - length)
    return header, dict(metadata), 8 + length


def _check_entries(path: str, header: dict[str, Any], data_size: int) -> None:
    """Each entry as the safetensors library checks it before loading: a dtype name, a shape
    of whole numbers >= 0, data_offsets [begin, end] inside the data section, as many bytes
    as the shape needs of a known dtype, and the entries tiling the data (no overlap, no
    gap). What the library refuses (a SafetensorError traceback in `eagle3 fix-keys`) is one
    line here, and a shape of 10**30 never reaches a caller that multiplies it out. An entry
    without data_offsets (this reader never uses them) is passed, and the tiling with it."""
    spans = []
    for name, entry in header.items():
        if not isinstance(entry, dict) or "dtype" not in entry or "shape" not in entry:
            raise SafetensorsError(f"{path}: tensor {name!r} has no dtype/shape in the header")
        dtype, shape = entry["dtype"], entry["shape"]
        if not isinstance(dtype, str) or not dtype.isascii() or not dtype.isprintable():
            raise SafetensorsError(f"{path}: tensor {name!r}: dtype is not a name")
        if not isinstance(shape, list) or not all(
            type(n) is int and 0 <= n < 1 << 62 for n in shape
        ):
            raise SafetensorsError(f"{path}: tensor {name!r}: shape is not a list of sizes")
        if "data_offsets" not in entry:
            continue
        offsets = entry["data_offsets"]
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(type(n) is int for n in offsets)
            or not 0 <= offsets[0] <= offsets[1] <= data_size
        ):
            raise SafetensorsError(
                f"{path}: tensor {name!r}: data_offsets outside the {data_size} bytes of data"
            )
        count = 1
        for n in shape:
            count = min(count * n, 1 << 64)
        bits = _DTYPE_BITS.get(dtype)
        if bits is not None and offsets[1] - offsets[0] != (count * bits + 7) // 8:
            raise SafetensorsError(
                f"{path}: tensor {name!r}: {offsets[1] - offsets[0]} bytes for {dtype} "
                f"of shape {shape}"
            )
        spans.append((offsets[0], offsets[1], name))
    if len(spans) < len(header):
        return
    spans.sort()
    end, last = 0, None
    for begin, stop, name in spans:
        if begin != end:
            where = f"after {last!r}" if last is not None else "at the start"
            why = "overlaps" if begin < end else "leaves a gap"
            raise SafetensorsError(f"{path}: tensor {name!r} {why} {where} of the data")
        end, last = stop, name
    if end != data_size:
        raise SafetensorsError(f"{path}: {data_size - end} bytes after the last tensor")


def read_safetensors_header(path: str) -> tuple[dict[str, Any], int]:
    """(tensor entries without `__metadata__`, byte offset of the data section) of one file."""
    header, _metadata, start = safetensors_header(path)
    return header, start


def _index_files(folder: str, index: str) -> tuple[list[str], dict[str, Any]]:
    raw = read_bounded(index, INDEX_READ_MAX_BYTES, SafetensorsError)
    try:
        data = json.loads(raw.decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise SafetensorsError(f"{index}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:  # bad UTF-8, JSON nested too deep
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SafetensorsError(f"{index}: invalid JSON: {why}") from None
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict):
        raise SafetensorsError(f"{index}: no 'weight_map' object")
    names = {str(name) for name in weight_map.values()}
    for name in names:  # a shard is a file beside the index: "../x" or "/x" would read elsewhere
        if not name or os.path.basename(name) != name or name in (".", ".."):
            raise SafetensorsError(f"{index}: weight_map names {name[:200]!r}, not a file here")
    files = sorted(os.path.join(folder, name) for name in names)
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
