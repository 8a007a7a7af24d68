"""Draft parameter counts from a config alone (no torch): the seeds' figures, computed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_eagle3_support import SEED_DRAFT_CONFIG

from factbook.commands.cli import run
from factbook.errors import InputError
from factbook.serving.eagle3.params import count_params


def test_seed_config_reproduces_the_seed_figures() -> None:
    summary = count_params(SEED_DRAFT_CONFIG)
    assert (summary.total / 1e6, summary.trainable / 1e6, summary.frozen / 1e6) == pytest.approx(
        (2594.7, 1190.9, 1403.8), abs=0.05
    )
    assert summary.to_dict()["total_m"] == 2594.7
    assert summary.to_dict()["trainable_m"] == 1190.9
    assert summary.to_dict()["frozen_m"] == 1403.8
    # SGLang holds one lm_head: the 4.7 GB epoch-4 checkpoint in bf16
    assert summary.to_dict()["serving_m"] == 2365.4
    assert 2 * summary.serving / 1e9 == pytest.approx(4.7, abs=0.05)


def test_components_follow_the_eagle3_layer() -> None:
    parts = count_params(SEED_DRAFT_CONFIG).components
    h = 7168
    assert parts["fc"] == 3 * h * h  # 21504 -> 7168, no bias
    assert parts["midlayer.self_attn"] == 2 * h * 64 * 128 * 3 + 64 * 128 * h  # q,k,v on 2h
    assert parts["midlayer.mlp"] == 3 * h * 18432
    assert parts["embed_tokens"] == 163840 * h
    assert parts["lm_head"] == parts["verifier_lm_head"] == 32000 * h


def test_fc_bias_and_gqa_change_the_count() -> None:
    with_bias = count_params({**SEED_DRAFT_CONFIG, "bias": True})
    assert with_bias.to_dict()["trainable_m"] == 1191.0  # why the seeds' run had no fc bias
    gqa = count_params({**SEED_DRAFT_CONFIG, "num_key_value_heads": 8})
    assert gqa.trainable < count_params(SEED_DRAFT_CONFIG).trainable


def test_speculators_nested_config_and_defaults() -> None:
    nested = {
        "speculators_model_type": "eagle3",
        "draft_vocab_size": 32000,
        "transformer_layer_config": {
            k: v for k, v in SEED_DRAFT_CONFIG.items() if k != "draft_vocab_size"
        },
    }
    assert count_params(nested).total == count_params(SEED_DRAFT_CONFIG).total
    no_head_dim = {k: v for k, v in SEED_DRAFT_CONFIG.items() if k != "head_dim"}
    assert count_params(no_head_dim).config["head_dim"] == 7168 // 64


def test_tied_draft_has_no_separate_heads() -> None:
    tied = count_params({**SEED_DRAFT_CONFIG, "tie_word_embeddings": True})
    assert "lm_head" not in tied.components and tied.frozen_names == ("embed_tokens",)


def test_bad_config_is_an_input_error() -> None:
    with pytest.raises(InputError, match="hidden_size must be a positive integer"):
        count_params({**SEED_DRAFT_CONFIG, "hidden_size": "7168"})


def test_cli_summary_json_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(SEED_DRAFT_CONFIG))
    assert run(["eagle3", "summary", str(config), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["total_m"], data["trainable_m"], data["frozen_m"]) == (2594.7, 1190.9, 1403.8)
    broken = tmp_path / "broken.json"
    broken.write_text('{"hidden_size": 7168,\n  oops}')
    assert run(["eagle3", "summary", str(broken)]) == 2
    assert f"{broken}:2: invalid JSON" in capsys.readouterr().err
