"""Hidden-state alignment on a tiny random Llama: the seeds' traps, each recognised."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import module_or_skip

from factbook.commands.cli import run
from factbook.errors import InputError

pytestmark = pytest.mark.torch
torch = module_or_skip("torch")
transformers = module_or_skip("transformers")

from factbook.serving.eagle3.align import align, compare, load_dump, recompute  # noqa: E402

LAYERS, HIDDEN, TOKENS = 8, 32, 12


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path, Any, list[Any]]:
    """(model, its saved folder, token ids, every hidden state) of a tiny Llama."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=HIDDEN,
        intermediate_size=64,
        num_hidden_layers=LAYERS,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=128,
    )
    model = transformers.LlamaForCausalLM(config).eval()
    folder = tmp_path_factory.mktemp("target")
    model.save_pretrained(folder)
    ids = torch.randint(0, 128, (TOKENS,))
    states, _ = recompute(model, ids)
    return model, folder, ids, states


def _slots(states: list[Any], indices: list[int]) -> list[Any]:
    return [states[i].clone() for i in indices]


def test_matching_dump_is_ok(target: tuple) -> None:
    _model, _folder, _ids, states = target
    report = compare(_slots(states, [0, 3, 5]), states, [0, 3, 5])
    assert report.ok and [s.status for s in report.slots] == ["ok"] * 3
    assert all(s.expected_cos > 0.9999 and s.margin > 0.01 for s in report.slots)
    assert len(report.slots[0].per_position) == TOKENS


def test_wrong_order(target: tuple) -> None:
    states = target[3]
    report = compare(_slots(states, [3, 0, 5]), states, [0, 3, 5])
    assert report.findings == [
        "wrong order: the dump holds the expected layers in slots [3, embed, 5]"
    ]


def test_off_by_one_layer(target: tuple) -> None:
    states = target[3]  # config ids [2, 4, 6] read as outputs, without SGLang's +1
    report = compare(_slots(states, [2, 4, 6]), states, [3, 5, 7])
    assert [s.status for s in report.slots] == ["off_by_one"] * 3
    assert report.findings[0] == "off by one: slot 0 holds 2, expected 3 (-1 layer)"


def test_missing_embedding(target: tuple) -> None:
    states = target[3]  # the config expects [-1, 2, 4] -> [embed, 3, 5]; dump lacks embed
    report = compare(_slots(states, [3, 5, 7]), states, [0, 3, 5])
    assert (
        "missing embedding: no slot holds the embedding output the config expects"
        in report.findings
    )
    assert [s.best for s in report.slots] == [3, 5, 7]


def test_other_model_is_unmatched_and_bad_position_is_located(target: tuple) -> None:
    states = target[3]
    noise = [torch.randn_like(states[0]) for _ in range(3)]
    report = compare(noise, states, [0, 3, 5])
    assert {s.status for s in report.slots} == {"unmatched"}
    slots = _slots(states, [0, 3, 5])
    slots[1][7] = -slots[1][7]  # one corrupted position
    located = compare(slots, states, [0, 3, 5])
    assert located.slots[1].worst_position == 7
    assert located.slots[1].per_position[7] == pytest.approx(-1.0, abs=1e-4)
    assert located.slots[1].status == "low_cos"  # right layer, one position wrong
    assert located.findings == [
        "slot 1 holds 3 but only at mean cos 0.8333 < 0.99; worst position 7 (cos -1.0000)"
    ]


def test_seed_situation_through_the_cli(
    target: tuple, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _model, folder, ids, states = target
    sample = tmp_path / "data_0.pt"  # training layout: cat([embed, 3, 5]) + verifier last 7
    torch.save(
        {
            "input_ids": ids,
            "hidden_states": torch.cat(_slots(states, [0, 3, 5]), -1),
            "verifier_last_hidden_states": states[7].clone(),
            "loss_mask": torch.ones(TOKENS),
        },
        sample,
    )
    draft = tmp_path / "draft.json"
    draft.write_text(
        json.dumps(
            {"hidden_size": HIDDEN, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 4, 6]}}
        )
    )
    argv = ["eagle3", "align", str(folder), str(sample), "--dtype", "fp32"]
    assert run([*argv, "--draft-config", str(draft)]) == 1  # SGLang would feed [3, 5, 7]
    out = capsys.readouterr().out
    assert "unexpected embedding" in out and "expected [3, 5, 7]" in out
    draft.write_text(
        json.dumps(
            {
                "hidden_size": HIDDEN,
                "eagle_config": {"eagle_aux_hidden_state_layer_ids": [-1, 2, 4]},
            }
        )
    )
    assert run([*argv, "--draft-config", str(draft), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    assert run([*argv, "--layers", "embed,3,5", "--positions", "3"]) == 0
    assert "per position: 1.0000, 1.0000, 1.0000" in capsys.readouterr().out
    assert run([*argv]) == 2
    assert "pass --layers or --draft-config" in capsys.readouterr().err


def test_list_dump_with_recorded_layers_and_bad_width(target: tuple, tmp_path: Path) -> None:
    model, _folder, ids, states = target
    sample = tmp_path / "list.pt"
    torch.save(
        {
            "input_ids": ids[None],
            "hidden_states": [s[None] for s in _slots(states, [0, 3, 5])],
            "layer_ids": [-1, 3, 5],
        },
        sample,
    )
    dump = load_dump(sample, HIDDEN)
    assert dump.recorded == [0, 3, 5] and len(dump.slots) == 3
    assert align(model, dump, dump.recorded).ok
    wide = tmp_path / "wide.pt"
    torch.save({"input_ids": ids, "hidden_states": torch.zeros(TOKENS, 50)}, wide)
    with pytest.raises(InputError, match="width 50 is not a multiple of the target hidden"):
        load_dump(wide, HIDDEN)


def test_unreadable_inputs_are_input_errors(
    target: tuple, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = target[1]
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a zip or a pickle")
    assert run(["eagle3", "align", str(folder), str(junk), "--layers", "embed,3,5"]) == 2
    assert f"{junk}: cannot read as a torch file" in capsys.readouterr().err
    broken = tmp_path / "model"
    broken.mkdir()
    sample = tmp_path / "s.pt"
    torch.save(
        {
            "input_ids": torch.zeros(2, dtype=torch.long),
            "hidden_states": torch.zeros(2, 3 * HIDDEN),
        },
        sample,
    )
    (broken / "config.json").write_text(
        json.dumps({"model_type": "no-such-arch", "hidden_size": HIDDEN})
    )
    assert run(["eagle3", "align", str(broken), str(sample), "--layers", "0,1,2"]) == 2
    assert "transformers cannot load it" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert (
            run(
                [
                    "eagle3",
                    "align",
                    str(folder),
                    str(sample),
                    "--layers",
                    "0,1,2",
                    "--device",
                    "cuda",
                ]
            )
            == 2
        )
        assert "has no CUDA device" in capsys.readouterr().err


def test_deepseek_v3_target_kimis_architecture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """MLA attention and routed experts, as in Kimi-K2.5: same index convention, same verdicts."""
    config = transformers.DeepseekV3Config(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        moe_intermediate_size=16,
        num_hidden_layers=6,
        first_k_dense_replace=1,
        n_routed_experts=8,
        num_experts_per_tok=2,
        n_shared_experts=1,
        n_group=2,
        topk_group=1,
        num_attention_heads=4,
        num_key_value_heads=4,
        q_lora_rank=16,
        kv_lora_rank=16,
        qk_rope_head_dim=8,
        qk_nope_head_dim=8,
        v_head_dim=8,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    model = transformers.DeepseekV3ForCausalLM(config).eval()
    model.save_pretrained(tmp_path / "dsv3")
    ids = torch.randint(0, 128, (10,))
    states, _ = recompute(model, ids)
    sample = tmp_path / "sample.pt"
    torch.save({"input_ids": ids, "hidden_states": [states[i] for i in (0, 2, 4)]}, sample)
    argv = ["eagle3", "align", str(tmp_path / "dsv3"), str(sample), "--dtype", "fp32"]
    assert run([*argv, "--layers", "embed,2,4"]) == 0
    assert run([*argv, "--layers", "1,3,5"]) == 1
    assert "off by one: slot 1 holds 2, expected 3 (-1 layer)" in capsys.readouterr().out
