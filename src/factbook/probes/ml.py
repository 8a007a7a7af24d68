"""ML probes: torch and its CUDA view, safetensors headers, tokenizer ids, read with the stdlib.

Stdlib only: this source is shipped to the box and executed there by the agent. torch is
imported lazily (missing: the check is skipped); safetensors headers and tokenizer files are
parsed directly, so neither the safetensors nor the tokenizers package is needed.
"""

from __future__ import annotations

import base64
import glob
import json
import os
from typing import Any

from .common import read_bounded, read_checkpoint, run_python

_TORCH_CODE = r"""
def _torch_info():
    import torch
    info = {"version": torch.__version__, "cuda": torch.version.cuda}
    info["cuda_available"] = bool(torch.cuda.is_available())
    count = torch.cuda.device_count() if info["cuda_available"] else 0
    info["device_count"] = count
    info["capability"] = ["%d.%d" % torch.cuda.get_device_capability(i) for i in range(count)]
    info["device_names"] = [torch.cuda.get_device_name(i) for i in range(count)]
    try:
        nccl = torch.cuda.nccl.version()
        info["nccl"] = ".".join(str(p) for p in nccl) if isinstance(nccl, tuple) else str(nccl)
    except Exception:
        info["nccl"] = None
    return info
"""

_TORCH_MAIN = r"""
import json
try:
    result = _torch_info()
except ModuleNotFoundError as exc:
    result = {"__missing__": exc.name}
print(json.dumps(result))
"""


def torch_info(python: str | None = None) -> dict[str, Any]:
    """`{version, cuda, cuda_available, device_count, capability, nccl, device_names}`;
    skipped without torch.

    torch is imported once per agent batch (checks share one call).
    """
    if not python:
        scope: dict[str, Any] = {}
        exec(_TORCH_CODE, scope)
        return scope["_torch_info"]()
    return run_python(python, _TORCH_CODE + _TORCH_MAIN)


# ---------------------------------------------------------------- safetensors


def safetensors_shard_count(path: str) -> int:
    """Number of `*.safetensors` files in a directory, read with the stdlib."""
    full = os.path.expanduser(str(path))
    if not os.path.isdir(full):
        raise RuntimeError(f"not a directory: {path}")
    return len(glob.glob(os.path.join(full, "*.safetensors")))


def safetensors_tensors(path: str) -> dict[str, list[int]]:
    """`{tensor name: shape}` of a file or a sharded directory (via
    `model.safetensors.index.json`), read from the headers with the stdlib.
    """
    return {
        name: list(entry.get("shape", []))
        for name, (_file, entry, _start) in read_checkpoint(path)["tensors"].items()
    }


# ---------------------------------------------------------------- tokenizers


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte-level alphabet: byte-level BPE vocabularies store tokens in it."""
    keep = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = keep[:]
    extra = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(keep, (chr(c) for c in chars)))  # noqa: B905 - runs on Python 3.8+


# The most a tokenizer file (tokenizer.json, tiktoken.model, tokenizer_config.json) may hold:
# the largest in use are tens of MB (Gemma 3's tokenizer.json ~33 MB, its 262k pieces; a
# tiktoken.model of 160k pieces ~2.8 MB), so 256 MiB leaves room for a vocabulary several
# times larger while bounding what a hostile path (/dev/zero, a sparse file of terabytes)
# makes the agent read on the box. No reader of factbook's own side shares this bound.
TOKENIZER_READ_MAX_BYTES = 256 << 20


def _json_file(full: str, raw: bytes | None = None) -> Any:
    """A tokenizer JSON file (`raw`, its bytes if read already), bounded (read_bounded); bad
    UTF-8 or JSON, or JSON nested past the parser's depth, is one line naming the file."""
    if raw is None:
        raw = read_bounded(full, TOKENIZER_READ_MAX_BYTES)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        why = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise RuntimeError(f"{full}: not a tokenizer JSON file ({why})") from None
    if not isinstance(data, dict):
        raise RuntimeError(f"{full}: not a tokenizer JSON file (not an object)")
    return data


class _Vocab:
    """token bytes/text <-> id for a tokenizer.json or a tiktoken model file."""

    def __init__(self, path: str):
        full = os.path.expanduser(str(path))
        if os.path.isdir(full):
            for name in ("tokenizer.json", "tiktoken.model", "tokenizer.model"):
                if os.path.exists(os.path.join(full, name)):
                    full = os.path.join(full, name)
                    break
            else:
                raise RuntimeError(f"no tokenizer.json or tiktoken.model in {path}")
        if not os.path.exists(full):
            raise RuntimeError(f"no such file: {path}")
        self.special: dict[str, int] = {}
        self.pieces: dict[bytes, int] = {}
        self.byte_level = False
        raw = read_bounded(full, TOKENIZER_READ_MAX_BYTES)  # before anything is read of it
        try:
            if raw.lstrip()[:1] == b"{":
                self._load_json(full, raw)
            else:
                self._load_tiktoken(full, raw)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            # a file of another shape (`added_tokens` without ids, a vocab of numbers): one
            # line naming it, not a bare KeyError 'id'
            why = f"{type(exc).__name__}: {str(exc)[:200]}"
            raise RuntimeError(f"{full}: not a tokenizer this probe can read ({why})") from None
        self.by_id: dict[int, bytes] = {i: b for b, i in self.pieces.items()}
        self.by_id.update({i: t.encode("utf-8") for t, i in self.special.items()})

    def _load_json(self, full: str, raw: bytes) -> None:
        data = _json_file(full, raw)
        for token in data.get("added_tokens") or []:
            self.special[token["content"]] = int(token["id"])
        model = data.get("model") or {}
        vocab = model.get("vocab") or {}
        kinds = json.dumps([data.get("decoder"), data.get("pre_tokenizer")])
        self.byte_level = "ByteLevel" in kinds
        decode = {c: b for b, c in _bytes_to_unicode().items()}
        items = (
            vocab.items()
            if isinstance(vocab, dict)
            else ((entry[0], i) for i, entry in enumerate(vocab))
        )
        for piece, index in items:
            if self.byte_level and all(c in decode for c in piece):
                raw = bytes(decode[c] for c in piece)
            else:
                raw = piece.replace("▁", " ").encode("utf-8")
            self.pieces.setdefault(raw, int(index))

    def _load_tiktoken(self, full: str, raw: bytes) -> None:
        """`BASE64 RANK` lines; a line that is not one is named with its file and number
        (a bad base64 said only "Incorrect padding", a bad rank "invalid literal")."""
        for number, line in enumerate(raw.splitlines(), 1):
            parts = line.split()
            if len(parts) == 2:
                try:
                    self.pieces[base64.b64decode(parts[0], validate=True)] = int(parts[1])
                except ValueError:  # binascii.Error is a ValueError
                    raise RuntimeError(
                        f"{full}:{number}: not a tiktoken line (base64 token, a space, its rank)"
                    ) from None
        config = os.path.join(os.path.dirname(full), "tokenizer_config.json")
        if os.path.exists(config):
            decoder = _json_file(config).get("added_tokens_decoder") or {}
            for index, entry in decoder.items():
                content = entry.get("content") if isinstance(entry, dict) else entry
                self.special[str(content)] = int(index)

    def token_id(self, token: str) -> int | None:
        if token in self.special:
            return self.special[token]
        return self.pieces.get(token.encode("utf-8"))

    def decode(self, ids: list[int]) -> str:
        missing = [i for i in ids if int(i) not in self.by_id]
        if missing:
            raise RuntimeError(f"ids not in the vocabulary: {missing}")
        return b"".join(self.by_id[int(i)] for i in ids).decode("utf-8", "replace")


def tokenizer_token_id(path: str, token: str) -> int | None:
    """Id of a token in a `tokenizer.json` (added tokens, byte-level BPE) or a
    `tiktoken.model` with `tokenizer_config.json`'s `added_tokens_decoder` beside it.
    """
    return _Vocab(path).token_id(str(token))


def tokenizer_decode(path: str, ids: Any) -> str:
    """Text of a list of ids, from the same tokenizer files as `tokenizer.token_id`."""
    return _Vocab(path).decode([ids] if isinstance(ids, int) else list(ids))


PROBES = {
    "torch.info": torch_info,
    "safetensors.shard_count": safetensors_shard_count,
    "safetensors.tensors": safetensors_tensors,
    "tokenizer.token_id": tokenizer_token_id,
    "tokenizer.decode": tokenizer_decode,
}
