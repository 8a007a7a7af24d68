"""sglang 0.5.23's resolution rules: what a speculative launch really runs with.

`resolve(flags, target_arch)` follows the argument hooks (`_handle_eagle_family` in
sglang/srt/arg_groups/speculative_hook.py): NEXTN is EAGLE, auto-chosen steps/topk/draft
tokens, `num_draft_tokens = num_steps + 1` when topk is 1, 48 running requests.
`capture_layers` is the EAGLE-3 hidden-state capture rule (`set_eagle3_layers_to_capture`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from factbook.serving.sglang.flags import UNKNOWN

SGLANG_VERSION = "0.5.23"
CONVENTIONS = (SGLANG_VERSION, "plus-one")
EAGLE_FAMILY = ("EAGLE", "EAGLE3", "STANDALONE")
# Targets whose checkpoint holds its own MTP head: a missing draft path means "use the target".
BUNDLED_DRAFT_ARCHS = {
    "DeepseekV32ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV4ForCausalLM",
    "Glm4MoeForCausalLM", "Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM",
    "BailingMoeForCausalLM", "BailingMoeV2ForCausalLM", "BailingMoeV2_5ForCausalLM",
    "MistralLarge3ForCausalLM", "PixtralForConditionalGeneration", "HYV3ForCausalLM",
    "HYV4ForCausalLM", "Qwen4ExpForConditionalGeneration",
}  # fmt: skip
AUTO_5_4_8 = {"LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM"}
# DeepSeek-V2/V3 (and Kimi-K2.5, which wraps DeepseekV3ForCausalLM) add 1 to the layer ids
# only when the first id is 1 in 0.5.23; other models always add 1.
DEEPSEEK_CAPTURE_ARCHS = {
    "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM",
    "KimiK25ForConditionalGeneration",
}  # fmt: skip
EAGLE3_DRAFT_ARCHS = ("LlamaForCausalLMEagle3", "KimiK25ForCausalLMEagle3")


@dataclass
class Resolved:
    """The speculative settings sglang would run with, or why it would refuse to start."""

    speculative_algorithm: str | None = None
    speculative_num_steps: Any = None
    speculative_eagle_topk: Any = None
    speculative_num_draft_tokens: Any = None
    speculative_draft_model_path: Any = None
    max_running_requests: Any = None
    error: str | None = None  # sglang raises: it would not start
    capture_layers: list[int] | None = None  # layers whose *input* SGLang captures
    captured: list[str] | None = None  # "embed" / "layer K" outputs the draft's fc receives

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def resolve(flags: dict[str, Any], target_arch: str | None = None) -> Resolved:
    """The speculative fields after sglang 0.5.23's hooks (eagle family only)."""
    out = Resolved(
        speculative_draft_model_path=flags.get("speculative_draft_model_path"),
        max_running_requests=flags.get("max_running_requests"),
        speculative_num_steps=flags.get("speculative_num_steps"),
        speculative_eagle_topk=flags.get("speculative_eagle_topk"),
        speculative_num_draft_tokens=flags.get("speculative_num_draft_tokens"),
    )
    algo = flags.get("speculative_algorithm")
    if algo is UNKNOWN:
        out.speculative_algorithm = UNKNOWN
        return out
    if algo is not None:
        algo = str(algo).upper()
        algo = "EAGLE" if algo == "NEXTN" else algo
    out.speculative_algorithm = algo
    if algo not in EAGLE_FAMILY:
        return out
    if out.max_running_requests is None:
        out.max_running_requests = 48
    if target_arch in BUNDLED_DRAFT_ARCHS and out.speculative_draft_model_path is None:
        out.speculative_draft_model_path = flags.get("model_path")
    steps, topk = out.speculative_num_steps, out.speculative_eagle_topk
    ndt = out.speculative_num_draft_tokens
    if UNKNOWN in (steps, topk, ndt):
        return out
    if not flags.get("speculative_adaptive") and steps is None:
        if topk is not None or ndt is not None:
            out.error = (
                "sglang asserts: --speculative-eagle-topk/--speculative-num-draft-tokens "
                "need --speculative-num-steps"
            )
            return out
        if algo == "STANDALONE":
            steps, topk, ndt = 3, 1, 4
        elif target_arch in AUTO_5_4_8:
            steps, topk, ndt = 5, 4, 8
        else:
            steps, topk, ndt = 3, 1, 4
    if topk is None:
        out.error = "sglang fails comparing topk None > 1: --speculative-eagle-topk is required"
        return out
    if topk == 1 and ndt != steps + 1:
        ndt = steps + 1
    if topk > 1 and (flags.get("page_size") or 1) > 1:
        backend = flags.get("attention_backend")
        if backend not in ("flashinfer", "fa3", "triton"):
            out.error = f"topk > 1 with page_size > 1 is not supported on backend {backend!r}"
    out.speculative_num_steps, out.speculative_eagle_topk = steps, topk
    out.speculative_num_draft_tokens = ndt
    return out


def capture_layers(
    layer_ids: list[int] | None,
    target_arch: str | None,
    num_layers: int | None,
    convention: str = SGLANG_VERSION,
) -> list[int] | None:
    """Layers whose input SGLang captures for EAGLE-3 (`set_eagle3_layers_to_capture`).

    `convention` "0.5.23" is that release; "plus-one" is older sglang (the seeds' dev checkout
    3207427), which added 1 to every id on DeepSeek targets too.
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown capture convention {convention!r} ({', '.join(CONVENTIONS)})")
    if layer_ids is None:
        if num_layers is None:
            return None
        return [2, num_layers // 2, num_layers - 3]
    if (
        convention == SGLANG_VERSION
        and target_arch in DEEPSEEK_CAPTURE_ARCHS
        and not (layer_ids and layer_ids[0] == 1)
    ):
        return list(layer_ids)
    return [v + 1 for v in layer_ids]
