"""EAGLE-3 probes: the draft checkpoint as SGLang will load it, read on the box.

Shipped to the box by the verify agent and run there, so stdlib only: safetensors headers
and the int64/bool payloads of d2t/t2d are parsed directly (little-endian, as the format
says). Only a d2t stored as a torch pickle (.pt) needs torch, imported inside; when it is
missing the agent reports the check as skipped. Clean failures raise RuntimeError, which the
agent reports as a one-line error.

Index convention (same as `factbook eagle3`): 0 = embedding output, k = output of decoder
layer k-1; SGLang captures index `layer_id + 1` for each configured aux layer id.
"""

from __future__ import annotations

import json
import os
import re
import sys
from array import array

from factbook.probes.common import read_checkpoint

_LAYER = re.compile(r"^(model\.)?layers\.\d+\.")
_MIDLAYER = re.compile(r"^(model\.)?midlayer\.")


def _tensors(path: str) -> tuple[dict[str, tuple[str, dict, int]], int, bool]:
    """name -> (file, entry, data offset) for a checkpoint folder or file; files; sharded."""
    checkpoint = read_checkpoint(path, strict=True)
    return checkpoint["tensors"], len(checkpoint["files"]), checkpoint["index"] is not None


def checkpoint_keys(path: str) -> dict:
    """{layout, midlayer, layers, d2t, t2d, files, sharded, sample}: speculators or SGLang keys."""
    tensors, files, sharded = _tensors(path)
    layers = sorted(n for n in tensors if _LAYER.match(n))
    mid = sorted(n for n in tensors if _MIDLAYER.match(n))
    if layers and mid:
        layout = "mixed"
    elif layers:
        layout = "speculators"
    elif mid:
        layout = "sglang"
    else:
        layout = "none"
    return {
        "layout": layout,
        "midlayer": len(mid),
        "layers": len(layers),
        "d2t": any(n == "d2t" or n.endswith(".d2t") for n in tensors),
        "t2d": any(n == "t2d" or n.endswith(".t2d") for n in tensors),
        "files": files,
        "sharded": sharded,
        "sample": (layers or mid)[:3],
    }


def fc_in_features(path: str) -> int:
    """Input width of the draft's fc (fc.weight is [hidden, 3 x target hidden])."""
    tensors, _files, _sharded = _tensors(path)
    for name, (_file, entry, _start) in tensors.items():
        if name.endswith("fc.weight"):
            return int(entry["shape"][1])
    raise RuntimeError(f"{path}: no fc.weight tensor")


def capture_layers(config: str, target_layers: int | None = None) -> dict:
    """{layer_ids, key, layers_to_capture}: what SGLang captures for a draft config."""
    with open(os.path.expanduser(config), encoding="utf-8") as handle:
        data = json.load(handle)
    inner = data.get("transformer_layer_config")
    if isinstance(inner, dict):
        data = {**inner, **data}
    for key in (
        "eagle_config.eagle_aux_hidden_state_layer_ids",
        "eagle_aux_hidden_state_layer_ids",
        "aux_hidden_state_layer_ids",
    ):
        node = data
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return {
                "layer_ids": node,
                "key": key,
                "layers_to_capture": [i + 1 for i in node],
                "fc_in": 3 * int(data.get("target_hidden_size") or data["hidden_size"]),
            }
    if target_layers is None:
        raise RuntimeError(f"{config}: no aux layer ids; give target_layers for the default")
    n = int(target_layers)
    return {
        "layer_ids": None,
        "key": None,
        "layers_to_capture": [2, n // 2, n - 3],
        "fc_in": 3 * int(data.get("target_hidden_size") or data["hidden_size"]),
    }


def _read(file: str, entry: dict, start: int) -> list:
    begin, end = entry["data_offsets"]
    with open(file, "rb") as handle:
        handle.seek(start + begin)
        raw = handle.read(end - begin)
    dtype = entry["dtype"]
    if dtype == "BOOL" or dtype == "U8":
        return list(raw)
    codes = {"I64": "q", "I32": "i", "I16": "h"}
    if dtype not in codes:
        raise RuntimeError(f"{file}: unexpected dtype {dtype} for a vocab map")
    values = array(codes[dtype])
    values.frombytes(raw)
    if sys.byteorder == "big":
        values.byteswap()
    return values.tolist()


def _load_pt(path: str) -> list:
    import torch  # only for pickled tensors; ModuleNotFoundError -> skipped

    value = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(value, dict) and len(value) == 1:
        value = next(iter(value.values()))
    return value.reshape(-1).tolist()


def d2t_format(path: str, t2d: str | None = None, target_vocab: int | None = None) -> dict:
    """{format, size, t2d_marked, max_target_id}: does d2t hold offsets (SGLang) or ids?

    `path` is a checkpoint (folder or .safetensors) holding d2t (and t2d), or a d2t .pt file
    with `t2d` naming its t2d .pt file.
    """
    path = os.path.expanduser(path)
    if path.endswith((".pt", ".pth")):
        d2t = _load_pt(path)
        mask = _load_pt(os.path.expanduser(t2d)) if t2d else None
    else:
        tensors, _files, _sharded = _tensors(path)
        found = {
            n.rsplit(".", 1)[-1]: v
            for n, v in tensors.items()
            if n in ("d2t", "t2d") or n.endswith((".d2t", ".t2d"))
        }
        if "d2t" not in found:
            raise RuntimeError(f"{path}: no d2t tensor")
        d2t = _read(*found["d2t"])
        mask = _read(*found["t2d"]) if "t2d" in found else None
    vocab = target_vocab or (len(mask) if mask is not None else None)
    marked = {i for i, m in enumerate(mask) if m} if mask is not None else None
    readings = {"offsets": [d + i for i, d in enumerate(d2t)], "absolute": list(d2t)}
    good = [k for k, ids in readings.items() if _valid(ids, vocab, marked)]
    if good == ["absolute"]:
        fmt = "absolute"
    elif "offsets" in good and (len(good) == 1 or marked is not None):
        fmt = "offsets"
    elif good:
        fmt = "ambiguous"
    else:
        fmt = "invalid"
    ids = readings["absolute" if fmt == "absolute" else "offsets"]
    return {
        "format": fmt,
        "size": len(d2t),
        "t2d_marked": len(marked) if marked else None,
        "max_target_id": max(ids) if ids else None,
    }


def _valid(ids: list, vocab: int | None, marked: set | None) -> bool:
    if not ids or min(ids) < 0 or (vocab is not None and max(ids) >= vocab):
        return False
    if len(set(ids)) != len(ids):
        return False
    return marked is None or set(ids) == marked


PROBES = {
    "eagle3.checkpoint_keys": checkpoint_keys,
    "eagle3.fc_in_features": fc_in_features,
    "eagle3.capture_layers": capture_layers,
    "eagle3.d2t_format": d2t_format,
}
