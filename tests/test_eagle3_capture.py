"""SGLang's capture convention against recorded training layers (config-only, no torch)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_eagle3_support import SEED_DRAFT_CONFIG, write_safetensors

from factbook.commands.cli import run
from factbook.errors import InputError, UsageError
from factbook.serving.eagle3.capture import (
    check_capture,
    parse_layers,
    sglang_capture_indices,
    trained_layers_from_file,
)


def _config(ids: list[int] | None) -> dict:
    config = {k: v for k, v in SEED_DRAFT_CONFIG.items() if k != "eagle_config"}
    if ids is not None:
        config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": ids}
    return config


def test_seed_situation_is_reported_with_the_fix() -> None:
    report = check_capture(
        _config([2, 30, 58]),
        num_target_layers=61,
        trained=parse_layers("embed,3,31,59"),
        fc_in_checkpoint=21504,
    )
    assert report.sglang_indices == [3, 31, 59]
    assert report.trained_indices == [0, 3, 31] and report.verifier_last == 59
    assert not report.ok
    assert "training used the embedding output, inference does not capture it" in report.problems[0]
    assert any("[-1, 2, 30]" in n for n in report.notes)
    assert report.fc_in_expected == 21504


def test_embedding_fix_matches_training() -> None:
    report = check_capture(_config([-1, 2, 30]), num_target_layers=61, trained=[0, 3, 31])
    assert report.ok and report.sglang_indices == [0, 3, 31]
    assert any("embedding output" in n for n in report.notes)


def test_off_by_one_and_order_are_named() -> None:
    off = check_capture(_config([2, 30, 58]), trained=[2, 30, 58])
    assert "off by one layer (inference is +1)" in off.problems[0]
    order = check_capture(_config([2, 30, 58]), trained=[31, 3, 59])
    assert "same layers in a different order" in order.problems[0]


def test_default_ids_use_no_offset_and_need_the_target_depth() -> None:
    assert sglang_capture_indices(None, 61) == [2, 30, 58]
    with pytest.raises(UsageError, match="--target-layers"):
        check_capture(_config(None))


def test_fc_width_and_hidden_size_mismatches() -> None:
    report = check_capture(_config([2, 30, 58]), target_hidden_size=4096, fc_in_checkpoint=2688)
    assert any("target hidden size 7168" in p for p in report.problems)
    assert any("fc.weight takes 2688 inputs" in p for p in report.problems)


def test_parse_and_recorded_layers(tmp_path: Path) -> None:
    assert parse_layers("embed, 3,31") == [0, 3, 31]
    with pytest.raises(UsageError, match="'x'"):
        parse_layers("embed,x")
    meta = tmp_path / "data_config.json"
    meta.write_text(json.dumps({"layer_ids": [-1, 3, 31, 59]}))
    assert trained_layers_from_file(meta) == [0, 3, 31, 59]
    meta.write_text(json.dumps({"other": 1}))
    with pytest.raises(InputError, match="no hidden_state_layers"):
        trained_layers_from_file(meta)


def test_cli_exit_codes_and_checkpoint_width(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft = tmp_path / "draft.json"
    draft.write_text(json.dumps(_config([2, 30, 58])))
    target = tmp_path / "target.json"
    target.write_text(  # Kimi-K2.5's layout: the DeepseekV3 config under text_config
        json.dumps(
            {
                "model_type": "kimi_k25",
                "text_config": {"num_hidden_layers": 61, "hidden_size": 7168},
            }
        )
    )
    ckpt = write_safetensors(
        tmp_path / "model.safetensors", {"fc.weight": ("F32", [2, 6], [0.0] * 12)}
    )
    argv = [
        "eagle3",
        "capture",
        str(draft),
        "--target-config",
        str(target),
        "--checkpoint",
        str(ckpt),
    ]
    assert run([*argv, "--trained-layers", "embed,3,31"]) == 1
    out = capsys.readouterr().out
    assert "slot 0: inference     3  training embed  MISMATCH" in out
    assert "checkpoint fc.weight takes 6" in out
    assert run([*argv, "--trained-layers", "3,31,59", "--format", "json"]) == 1  # fc width
    assert json.loads(capsys.readouterr().out)["problems"][0].startswith("checkpoint fc.weight")
    missing = tmp_path / "nope.json"
    assert run(["eagle3", "capture", str(missing)]) == 2
    assert f"{missing}: no such file" in capsys.readouterr().err


def test_cli_default_layers_come_from_kimis_text_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft = tmp_path / "draft.json"
    draft.write_text(json.dumps(_config(None)))
    target = tmp_path / "config.json"
    target.write_text(json.dumps({"text_config": {"num_hidden_layers": 61, "hidden_size": 7168}}))
    assert (
        run(["eagle3", "capture", str(draft), "--target-config", str(target), "--format", "json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["sglang_indices"] == [2, 30, 58]
    assert run(["eagle3", "capture", str(draft)]) == 2
    assert "--target-layers" in capsys.readouterr().err
