"""The launch linter's resolution equals the real sglang 0.5.23's, flag combination by combination.

A subprocess of .venvs/sglang/bin/python (made by scripts/sglang-venv) parses each command line
with sglang's own `prepare_server_args` and runs `ServerArgs.resolve_once()`, the call
`sglang.launch_server` makes before it starts anything; the EAGLE-3 capture layers come from
the real `set_eagle3_layers_to_capture` of sglang's DeepSeek and Llama model classes. Model
folders hold only config.json files this test writes: no weights, no hub.

In CI (CI=true) a missing sglang venv fails this test; elsewhere it skips.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from factbook.sglang.launch import check_command
from factbook.sglang.rules import capture_layers

pytestmark = pytest.mark.sglang

ROOT = Path(__file__).resolve().parent.parent
SGLANG_PY = ROOT / ".venvs" / "sglang" / "bin" / "python"
FIELDS = (
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "speculative_draft_model_path",
    "max_running_requests",
)

# Runs inside .venvs/sglang: reads cases as JSON on stdin, answers JSON on stdout.
HARNESS = r"""
import json, logging, sys, warnings
from types import SimpleNamespace as NS
warnings.simplefilter("ignore")
logging.disable(logging.CRITICAL)
from sglang.srt.server_args import prepare_server_args
from sglang.srt.models.deepseek_v2 import DeepseekV2ForCausalLM, DeepseekV3ForCausalLM
from sglang.srt.models.llama import LlamaForCausalLM

job = json.load(sys.stdin)
out = {"resolutions": [], "captures": []}
for argv in job["resolutions"]:
    try:
        args = prepare_server_args(argv)
        args.resolve_once()
        d = args.resolved_dict()
        out["resolutions"].append({"ok": {k: d[k] for k in job["fields"]}})
    except BaseException as exc:  # sglang asserts, raises ValueError or TypeError
        out["resolutions"].append({"error": f"{type(exc).__name__}: {exc}"[:300]})
classes = {c.__name__: c for c in (DeepseekV2ForCausalLM, DeepseekV3ForCausalLM, LlamaForCausalLM)}
for arch, ids, n in job["captures"]:
    me = NS(pp_group=NS(is_last_rank=True), config=NS(num_hidden_layers=n), model=NS())
    classes[arch].set_eagle3_layers_to_capture(me, ids)
    out["captures"].append(list(me.model.layers_to_capture))
print("@@RESULT@@" + json.dumps(out))
"""


def _sglang_python() -> Path:
    if SGLANG_PY.exists():
        return SGLANG_PY
    message = f"{SGLANG_PY} missing: run scripts/sglang-venv"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def _write_config(folder: Path, config: dict) -> str:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


def _llama(layers: int, arch: str = "LlamaForCausalLM", **extra: object) -> dict:
    return {
        "architectures": [arch],
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "num_hidden_layers": layers,
        "vocab_size": 256,
        "max_position_embeddings": 512,
        "torch_dtype": "float32",
        **extra,
    }


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("models")
    eagle3 = {"draft_vocab_size": 256, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1]}}
    return {
        "llama": _write_config(base / "llama", _llama(8)),
        "deepseek": _write_config(
            base / "deepseek",
            {
                "architectures": ["DeepseekV3ForCausalLM"],
                "model_type": "deepseek_v3",
                "hidden_size": 64,
                "intermediate_size": 128,
                "moe_intermediate_size": 32,
                "num_hidden_layers": 4,
                "num_attention_heads": 4,
                "num_key_value_heads": 4,
                "n_routed_experts": 4,
                "n_shared_experts": 1,
                "num_experts_per_tok": 2,
                "first_k_dense_replace": 1,
                "kv_lora_rank": 16,
                "q_lora_rank": 16,
                "qk_nope_head_dim": 16,
                "qk_rope_head_dim": 8,
                "v_head_dim": 16,
                "vocab_size": 256,
                "max_position_embeddings": 512,
                "torch_dtype": "bfloat16",
            },
        ),
        "eagle3_draft": _write_config(
            base / "eagle3", _llama(1, "LlamaForCausalLMEagle3", **eagle3)
        ),
        "eagle_draft": _write_config(base / "eagle", _llama(1, "LlamaForCausalLMEagle")),
    }


def _cases(models: dict[str, str]) -> list[list[str]]:
    """The flag matrix: explicit steps/topk/draft tokens, omissions, algorithms, targets."""
    cases: list[list[str]] = []

    def case(target: str, algo: str | None, draft: str | None, **spec: int | None) -> None:
        argv = ["--model-path", models[target], "--device", "cpu"]
        if algo is not None:
            argv += ["--speculative-algorithm", algo]
        if draft is not None:
            argv += ["--speculative-draft-model-path", models[draft]]
        for flag, value in spec.items():
            if value is not None:
                argv += [f"--speculative-{flag.replace('_', '-')}", str(value)]
        cases.append(argv)

    for topk, steps, ndt in itertools.product((1, 2, 4), (1, 3, 5, 15), (2, 4, 6, 16, None)):
        case("llama", "EAGLE3", "eagle3_draft", num_steps=steps, eagle_topk=topk,
             num_draft_tokens=ndt)  # fmt: skip
    for algo in ("EAGLE", "eagle3", "NEXTN", "nextn", "STANDALONE"):
        for topk, steps, ndt in ((1, 1, 16), (1, 15, 16), (4, 5, 8), (None, None, None)):
            case("llama", algo, "eagle_draft", num_steps=steps, eagle_topk=topk,
                 num_draft_tokens=ndt)  # fmt: skip
    # omissions sglang refuses (asserts, None compared with 1) or fills in
    case("llama", "EAGLE3", "eagle3_draft", eagle_topk=1)
    case("llama", "EAGLE3", "eagle3_draft", num_draft_tokens=6)
    case("llama", "EAGLE3", "eagle3_draft", num_steps=5)
    case("llama", "EAGLE3", "eagle3_draft", num_steps=5, num_draft_tokens=6)
    case("llama", None, None)
    # a DeepSeek-V3 target: auto params (3, 1, 4); EAGLE without a draft path uses the target
    for algo in ("EAGLE", "NEXTN", "EAGLE3"):
        case("deepseek", algo, None)
        case("deepseek", algo, None, num_steps=1, eagle_topk=1, num_draft_tokens=16)
    case("deepseek", "EAGLE3", "eagle3_draft", num_steps=15, eagle_topk=1, num_draft_tokens=16)
    return cases


def _run_sglang(job: dict) -> dict:
    proc = subprocess.run(
        [str(_sglang_python()), "-c", HARNESS],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    marker = [line for line in proc.stdout.splitlines() if line.startswith("@@RESULT@@")]
    assert proc.returncode == 0 and marker, f"sglang harness failed:\n{proc.stderr[-4000:]}"
    return json.loads(marker[-1][len("@@RESULT@@") :])


CAPTURE_IDS = ([2, 30, 58], [1, 29, 57], [-1, 2, 30], [0, 1, 2], [3], None)
CAPTURE_ARCHS = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "LlamaForCausalLM")


@pytest.fixture(scope="module")
def sglang_answers(models: dict[str, str]) -> tuple[list[list[str]], dict]:
    cases = _cases(models)
    captures = [[arch, ids, 61] for arch in CAPTURE_ARCHS for ids in CAPTURE_IDS]
    answers = _run_sglang({"resolutions": cases, "fields": FIELDS, "captures": captures})
    return cases, answers


def test_matrix_is_large_enough(sglang_answers: tuple[list[list[str]], dict]) -> None:
    cases, answers = sglang_answers
    assert len(cases) >= 30
    assert len(answers["resolutions"]) == len(cases)
    # the matrix exercises both sglang outcomes and the silent topk=1 change
    assert any("error" in a for a in answers["resolutions"])
    changed = [
        (argv, a["ok"])
        for argv, a in zip(cases, answers["resolutions"], strict=True)
        if "ok" in a and "16" in argv and a["ok"]["speculative_num_draft_tokens"] == 2
    ]
    assert changed, "expected sglang to turn 16 draft tokens into 2 somewhere"


def test_linter_resolution_equals_sglang(sglang_answers: tuple[list[list[str]], dict]) -> None:
    cases, answers = sglang_answers
    mismatches = []
    for argv, answer in zip(cases, answers["resolutions"], strict=True):
        report = check_command(["python", "-m", "sglang.launch_server", *argv])
        assert report is not None
        predicted = report.resolved
        if "error" in answer:
            if predicted.error is None:
                mismatches.append((argv, "sglang refused", answer["error"], "linter accepted"))
            continue
        if predicted.error is not None:
            mismatches.append((argv, "sglang accepted", answer["ok"], predicted.error))
            continue
        mine = {k: getattr(predicted, k) for k in FIELDS}
        if answer["ok"]["speculative_algorithm"] is None:
            mine = {k: v for k, v in mine.items() if k != "max_running_requests"}
            theirs = {k: v for k, v in answer["ok"].items() if k != "max_running_requests"}
        else:
            theirs = answer["ok"]
        if mine != theirs:
            mismatches.append((argv, theirs, mine))
    assert not mismatches, "\n".join(map(repr, mismatches))


def test_capture_layers_equal_sglang(sglang_answers: tuple[list[list[str]], dict]) -> None:
    _, answers = sglang_answers
    expected = iter(answers["captures"])
    for arch in CAPTURE_ARCHS:
        for ids in CAPTURE_IDS:
            assert capture_layers(ids, arch, 61) == next(expected), (arch, ids)


def test_linter_flags_what_sglang_changes(sglang_answers: tuple[list[list[str]], dict]) -> None:
    """Every case where sglang's num_draft_tokens differs from the flag gets the topk=1 warning."""
    cases, answers = sglang_answers
    for argv, answer in zip(cases, answers["resolutions"], strict=True):
        if "ok" not in answer or "--speculative-num-draft-tokens" not in argv:
            continue
        asked = int(argv[argv.index("--speculative-num-draft-tokens") + 1])
        report = check_command(["python", "-m", "sglang.launch_server", *argv])
        assert report is not None
        warned = any(f.pitfall == "pit.topk1-num-draft-tokens" for f in report.findings)
        assert warned == (answer["ok"]["speculative_num_draft_tokens"] != asked), argv


if __name__ == "__main__":  # pragma: no cover - a manual entry point
    sys.exit(pytest.main([__file__, "-q"]))
