"""The draft model's parameter counts, from its config alone.

The formula that reproduces the seeds' "2594.7M (1190.9M trainable, 1403.8M frozen
embed+lm_head)" for the Kimi-K2.5 draft (h=7168, 64 heads x 128, 64 kv heads, intermediate
18432, vocab 163840, draft vocab 32000), as speculators builds the model for training:

    frozen     embed_tokens       vocab x h                       1174.4M
               verifier_lm_head   draft_vocab x h                  229.4M   -> 1403.8M
    trainable  fc                 3h x h (no bias)                 154.1M
               midlayer q, k, v   2h x heads*head_dim, 2h x kv*head_dim (x2)  352.3M
               midlayer o         heads*head_dim x h                58.7M
               midlayer mlp       3 x h x intermediate             396.4M
               norms              3 in the layer + final, h each     0.03M
               lm_head            draft_vocab x h                  229.4M   -> 1190.9M
    total                                                                      2594.7M

The attention input is 2h because EAGLE-3 concatenates the normed token embedding and the
fused hidden state. The trainable lm_head and the frozen verifier_lm_head are two separate
draft_vocab x h matrices. SGLang serves one lm_head only (2365.4M; 4.73 GB in bf16, the
seeds' 4.7 GB checkpoint). An fc with bias would make it 1191.0M: the seeds' run had none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from factbook.errors import InputError
from factbook.serving.eagle3.capture import flat_config


@dataclass
class ParamSummary:
    """Counts per component, and the training/serving totals built from them."""

    components: dict[str, int]
    frozen_names: tuple[str, ...]
    serving_excludes: tuple[str, ...] = ("verifier_lm_head",)
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.components.values())

    @property
    def frozen(self) -> int:
        return sum(v for k, v in self.components.items() if k in self.frozen_names)

    @property
    def trainable(self) -> int:
        return self.total - self.frozen

    @property
    def serving(self) -> int:
        return sum(v for k, v in self.components.items() if k not in self.serving_excludes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "trainable": self.trainable,
            "frozen": self.frozen,
            "serving": self.serving,
            "total_m": millions(self.total),
            "trainable_m": millions(self.trainable),
            "frozen_m": millions(self.frozen),
            "serving_m": millions(self.serving),
            "serving_bf16_bytes": 2 * self.serving,
            "components": dict(self.components),
            "frozen_components": list(self.frozen_names),
            "config": self.config,
        }

    def lines(self) -> list[str]:
        out = [
            f"total {millions(self.total)}M ({millions(self.trainable)}M trainable, "
            f"{millions(self.frozen)}M frozen {' + '.join(self.frozen_names)})",
            f"served by SGLang (one lm_head): {millions(self.serving)}M, "
            f"{2 * self.serving / 1e9:.2f} GB in bf16",
        ]
        for name, count in self.components.items():
            tag = "frozen" if name in self.frozen_names else "trainable"
            out.append(f"  {name:<22} {count:>14,}  {millions(count):>8}M  {tag}")
        return out


def millions(count: int) -> float:
    return round(count / 1e6, 1)


def _int(config: dict[str, Any], key: str, default: int | None = None) -> int:
    value = config.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InputError(f"draft config: {key} must be a positive integer, got {value!r}")
    return value


def count_params(draft_config: dict[str, Any]) -> ParamSummary:
    """Parameter counts of an EAGLE-3 draft (SGLang or speculators config)."""
    c = flat_config(draft_config)
    h = _int(c, "hidden_size")
    heads = _int(c, "num_attention_heads")
    kv_heads = _int(c, "num_key_value_heads", heads)
    head_dim = _int(c, "head_dim", h // heads)
    inter = _int(c, "intermediate_size")
    vocab = _int(c, "vocab_size")
    draft_vocab = c.get("draft_vocab_size") or vocab
    target_h = c.get("target_hidden_size") or h
    layers = _int(c, "num_hidden_layers", 1)
    attn_bias = bool(c.get("attention_bias", False))
    mlp_bias = bool(c.get("mlp_bias", False))
    fc_bias = bool(c.get("bias", False))
    tied = bool(c.get("tie_word_embeddings", False))
    q_out, kv_out = heads * head_dim, kv_heads * head_dim

    def attention(inp: int) -> int:
        qkv = inp * (q_out + 2 * kv_out) + (q_out + 2 * kv_out if attn_bias else 0)
        return qkv + q_out * h + (h if attn_bias else 0)

    mlp = 3 * h * inter + ((2 * inter + h) if mlp_bias else 0)
    parts: dict[str, int] = {
        "embed_tokens": vocab * h,
        "fc": 3 * target_h * h + (h if fc_bias else 0),
        "midlayer.self_attn": attention(2 * h),  # embeds and hidden state, concatenated
        "midlayer.mlp": mlp,
        "midlayer.norms": 3 * h,  # input_layernorm, hidden_norm, post_attention_layernorm
    }
    if layers > 1:  # later layers are plain Llama layers on h inputs, 2 norms each
        parts["additional_layers"] = (layers - 1) * (attention(h) + mlp + 2 * h)
    parts["norm"] = h
    frozen = ["embed_tokens"]
    if not tied:
        parts["lm_head"] = draft_vocab * h
        parts["verifier_lm_head"] = draft_vocab * h
        frozen.append("verifier_lm_head")
    used = {
        "hidden_size": h,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "intermediate_size": inter,
        "vocab_size": vocab,
        "draft_vocab_size": draft_vocab,
        "target_hidden_size": target_h,
        "num_hidden_layers": layers,
        "fc_bias": fc_bias,
        "tie_word_embeddings": tied,
    }
    return ParamSummary(parts, tuple(frozen), config=used)
