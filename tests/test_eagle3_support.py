"""Builders the EAGLE-3 tests share: tiny draft configs and checkpoints, written to tmp dirs.

The stdlib safetensors writer lets the config-only tests (capture, probes) run without torch;
the torch builders make real speculators-style checkpoints the fix must round-trip.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

# The seeds' draft config (LlamaForCausalLMEagle3 for Kimi-K2.5), as message 3157 lists it.
SEED_DRAFT_CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLMEagle3"],
    "model_type": "llama",
    "hidden_size": 7168,
    "head_dim": 128,
    "num_attention_heads": 64,
    "num_key_value_heads": 64,
    "intermediate_size": 18432,
    "num_hidden_layers": 1,
    "vocab_size": 163840,
    "draft_vocab_size": 32000,
    "tie_word_embeddings": False,
    "eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 58]},
}

TINY = {"hidden": 16, "heads": 2, "inter": 24, "vocab": 64, "draft_vocab": 8}

_CODES = {"I64": ("q", 8), "BOOL": ("B", 1), "F32": ("f", 4)}


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], list[Any]]]) -> Path:
    """A safetensors file from (dtype, shape, flat values), stdlib only (little-endian)."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    payload = b""
    for name, (dtype, shape, values) in tensors.items():
        code, _size = _CODES[dtype]
        data = struct.pack("<" + code * len(values), *values)
        header[name] = {
            "dtype": dtype,
            "shape": shape,
            "data_offsets": [len(payload), len(payload) + len(data)],
        }
        payload += data
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + payload)
    return path


def draft_tensor_shapes(prefix: str = "layers.0.") -> dict[str, tuple[int, ...]]:
    """Every tensor of a tiny one-layer EAGLE-3 draft, speculators naming by default."""
    h, inter, vocab, dv = (TINY[k] for k in ("hidden", "inter", "vocab", "draft_vocab"))
    shapes = {
        "embed_tokens.weight": (vocab, h),
        "fc.weight": (h, 3 * h),
        "norm.weight": (h,),
        "lm_head.weight": (dv, h),
        "verifier_lm_head.weight": (dv, h),
    }
    for proj in ("q_proj", "k_proj", "v_proj"):
        shapes[f"{prefix}self_attn.{proj}.weight"] = (h, 2 * h)
    shapes[f"{prefix}self_attn.o_proj.weight"] = (h, h)
    for proj in ("gate_proj", "up_proj"):
        shapes[f"{prefix}mlp.{proj}.weight"] = (inter, h)
    shapes[f"{prefix}mlp.down_proj.weight"] = (h, inter)
    for norm in ("input_layernorm", "hidden_norm", "post_attention_layernorm"):
        shapes[f"{prefix}{norm}.weight"] = (h,)
    return shapes


def tiny_draft_config(**extra: Any) -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLMEagle3"],
        "hidden_size": TINY["hidden"],
        "num_attention_heads": TINY["heads"],
        "num_key_value_heads": TINY["heads"],
        "intermediate_size": TINY["inter"],
        "num_hidden_layers": 1,
        "vocab_size": TINY["vocab"],
        "draft_vocab_size": TINY["draft_vocab"],
        **extra,
    }


def make_checkpoint(
    root: Path,
    *,
    prefix: str = "layers.0.",
    shards: int = 1,
    with_vocab: bool = True,
    config: dict[str, Any] | None = None,
) -> Path:
    """A real (torch) draft checkpoint folder: one file or `shards` shards with an index."""
    import torch
    from safetensors.torch import save_file

    root.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(7)
    tensors = {
        name: torch.randn(shape, generator=gen).to(torch.bfloat16)
        for name, shape in draft_tensor_shapes(prefix).items()
    }
    tensors["fc.weight"][0, 0] = float("nan")  # speculators' never-loaded marker: must survive
    if with_vocab:
        chosen = torch.tensor([1, 2, 3, 5, 8, 13, 21, 34])
        tensors["d2t"] = chosen - torch.arange(len(chosen))
        t2d = torch.zeros(TINY["vocab"], dtype=torch.bool)
        t2d[chosen] = True
        tensors["t2d"] = t2d
    (root / "config.json").write_text(json.dumps(config or tiny_draft_config()))
    names = sorted(tensors)
    if shards == 1:
        save_file(tensors, str(root / "model.safetensors"), metadata={"format": "pt"})
        return root
    weight_map = {}
    for i in range(shards):
        part = names[i::shards]
        file = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        save_file({n: tensors[n] for n in part}, str(root / file), metadata={"format": "pt"})
        weight_map.update({n: file for n in part})
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (root / "model.safetensors.index.json").write_text(json.dumps(index))
    return root
