"""EAGLE-3 draft-model checks: the traps that cost the seeds' team days, made executable.

Modules, one job each:

- `safetensors_files`: a checkpoint's files and tensors, single or sharded (via probes.common).
- `keys`: speculators' `layers.0.*` vs SGLang's `midlayer.*`; the renaming fix.
- `vocab`: build and validate `d2t` (offsets) / `t2d` (mask) from token frequencies.
- `capture`: SGLang's capture convention (`layer_id + 1`) against what training recorded.
- `align`: recompute hidden states with transformers and compare them to a training dump.
- `params`: the draft model's parameter counts from its config alone.

Everything that needs torch imports it inside the function, so `factbook --help` stays fast
and the config-only checks (capture, summary) run without the ml extra.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from factbook.errors import InputError, MissingDependency, UsageError


def require(module: str) -> Any:
    """Import `module` or raise a message that names the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        from factbook.knowledge.install_source import hint

        raise MissingDependency(
            f"this command needs {module.split('.')[0]} ({exc}); install the ml extra: {hint('ml')}"
        ) from None


def torch_load(path: Any) -> Any:
    """`torch.load` (weights only, to CPU) with unreadable files reported by path."""
    torch = require("torch")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # pickle, zip and torch errors all mean: not a tensor file
        raise InputError(
            f"{path}: cannot read as a torch file ({type(exc).__name__}: {exc})"
        ) from None


def numpy_load(path: Any) -> Any:
    """A .npy array, mapped rather than read (a header may claim terabytes: numpy allocated
    them), never unpickled; an unreadable file, an object array or a shape larger than the
    file is reported by path, not a ValueError or MemoryError traceback."""
    numpy = require("numpy")
    try:
        return numpy.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError, MemoryError) as exc:
        raise InputError(f"{path}: cannot read as .npy ({type(exc).__name__}: {exc})") from None


@contextmanager
def safetensors_open(path: Any) -> Iterator[Any]:
    """`safetensors.safe_open(path, framework="pt")`, with what the library refuses (a dtype
    it does not know, which the stdlib header reader keeps as a name; a file cut short) one
    line naming the path: it was a SafetensorError traceback in fix-keys and validate-vocab."""
    safetensors = require("safetensors")
    error = getattr(safetensors, "SafetensorError", OSError)
    try:
        with safetensors.safe_open(str(path), framework="pt") as handle:
            yield handle
    except (error, OSError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise InputError(f"{path}: cannot read as safetensors ({first[:500]})") from None


def safetensors_load(path: Any) -> dict[str, Any]:
    """All tensors of a .safetensors file, unreadable files reported by path."""
    load_file = require("safetensors.torch").load_file
    try:
        return load_file(str(path))
    except Exception as exc:  # SafetensorError, OSError
        raise InputError(f"{path}: cannot read as safetensors ({exc})") from None


def check_device(device: str) -> str:
    """A usable torch device name, or a usage error (not a CUDA traceback)."""
    torch = require("torch")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"device {device!r}: torch here has no CUDA device")
    try:
        torch.device(device)
    except RuntimeError:
        raise UsageError(f"device {device!r}: not a torch device (cpu, cuda, cuda:1)") from None
    return device
