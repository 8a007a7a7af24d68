"""d2t/t2d: built from token frequencies, validated (offsets vs absolute ids, consistency)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import module_or_skip
from test_eagle3_support import make_checkpoint

from factbook.commands.cli import run
from factbook.errors import InputError

pytestmark = pytest.mark.torch
torch = module_or_skip("torch")

from factbook.serving.eagle3.vocab import (  # noqa: E402
    build_mapping,
    count_tokens,
    coverage_curve,
    load_counts,
    load_token_ids,
    mapping_from_checkpoint,
    validate_mapping,
)


def _ids() -> object:
    # id 7 x5, id 2 x4, ids 9 and 4 x3 (tie: lower id first), id 0 x1, id 11 x1
    return torch.tensor([7] * 5 + [2] * 4 + [9] * 3 + [4] * 3 + [0, 11])


def test_build_picks_most_frequent_sorted_with_offsets_and_coverage() -> None:
    mapping = build_mapping(count_tokens(_ids(), 12), 3)
    targets = mapping.d2t + torch.arange(3)
    assert targets.tolist() == [2, 4, 7]  # 7, 2, then 4 beats 9 on the tie
    assert mapping.d2t.tolist() == [2, 3, 5]  # offsets: target - draft index
    assert mapping.t2d.nonzero().reshape(-1).tolist() == [2, 4, 7]
    assert mapping.coverage == pytest.approx(12 / 17)
    assert validate_mapping(mapping.d2t, mapping.t2d, target_vocab_size=12).ok


def test_padding_with_unseen_ids_when_data_is_small() -> None:
    mapping = build_mapping(count_tokens(torch.tensor([5, 5, 9]), 12), 4)
    assert (mapping.d2t + torch.arange(4)).tolist() == [0, 1, 5, 9]
    assert mapping.padded == 2 and mapping.coverage == 1.0


def test_absolute_d2t_is_flagged() -> None:
    mapping = build_mapping(count_tokens(_ids(), 12), 3)
    absolute = mapping.d2t + torch.arange(3)  # what a wrong pipeline would store
    report = validate_mapping(absolute, mapping.t2d)
    assert report.format == "absolute" and not report.ok
    assert "hot_token_id = d2t + arange" in report.problems[0]
    # without t2d, the range decides: offsets would run past the vocabulary
    big = torch.tensor([100, 150, 199])
    alone = validate_mapping(big, target_vocab_size=200)
    assert alone.format == "absolute"


def test_inconsistent_pair_and_bad_shapes() -> None:
    mapping = build_mapping(count_tokens(_ids(), 12), 3)
    t2d = mapping.t2d.clone()
    t2d[11] = True
    report = validate_mapping(mapping.d2t, t2d)
    assert report.format == "offsets" and not report.ok
    assert any("t2d marks 4 ids but d2t has 3" in p for p in report.problems)
    as_bytes = validate_mapping(mapping.d2t, mapping.t2d.to(torch.uint8))
    assert as_bytes.ok and "0/1 torch.uint8 mask" in as_bytes.notes[0]
    floats = validate_mapping(torch.zeros(3), mapping.t2d)
    assert "1-D integer tensor" in floats.problems[0]
    short = validate_mapping(mapping.d2t, mapping.t2d, target_vocab_size=16)
    assert any("target vocabulary 16" in p for p in short.problems)


def test_ambiguous_without_t2d_and_coverage_on_data() -> None:
    report = validate_mapping(
        torch.tensor([0, 2, 4]), target_vocab_size=12, counts=count_tokens(_ids(), 12)
    )
    assert report.format == "ambiguous" and not report.ok  # [0,3,6] or [0,2,4]: both fit
    assert validate_mapping(torch.tensor([0, 0, 0]), target_vocab_size=12).format == "offsets"
    mapping = build_mapping(count_tokens(_ids(), 12), 3)
    with_data = validate_mapping(mapping.d2t, mapping.t2d, counts=count_tokens(_ids(), 12))
    assert with_data.coverage == pytest.approx(12 / 17)


def test_data_formats(tmp_path: Path) -> None:
    jsonl = tmp_path / "data.jsonl"
    jsonl.write_text('{"input_ids": [1, 2, 3], "loss_mask": [0, 1, 1]}\n\n{"input_ids": [4]}\n')
    assert load_token_ids(jsonl).tolist() == [1, 2, 3, 4]
    assert load_token_ids(jsonl, use_loss_mask=True).tolist() == [2, 3, 4]
    folder = tmp_path / "dumps"
    folder.mkdir()
    for i in range(2):
        torch.save(
            {"input_ids": torch.tensor([i, i + 1]), "loss_mask": torch.tensor([1, 0])},
            folder / f"data_{i}.pt",
        )
    assert load_token_ids(folder, use_loss_mask=True).tolist() == [0, 1]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"input_ids": [1]}\n{"input_ids": oops}\n')
    with pytest.raises(InputError, match=f"{bad}:2: invalid JSON"):
        load_token_ids(bad)
    with pytest.raises(InputError, match="outside the target vocabulary of 3"):
        count_tokens(torch.tensor([0, 5]), 3)


def test_mapping_inside_a_checkpoint(tmp_path: Path) -> None:
    d2t, t2d = mapping_from_checkpoint(make_checkpoint(tmp_path / "ckpt", shards=2))
    assert validate_mapping(d2t, t2d).ok


def test_cli_build_then_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "ids.pt"
    torch.save(_ids(), data)
    out = tmp_path / "vocab"
    argv = [
        "eagle3",
        "vocab-map",
        str(data),
        "--target-vocab",
        "12",
        "--draft-vocab",
        "3",
        "--out",
        str(out),
    ]
    assert run(argv) == 0
    assert "covers 70.59%" in capsys.readouterr().out
    assert json.loads((out / "vocab_mapping.json").read_text())["distinct_tokens"] == 6
    assert (
        run(
            [
                "eagle3",
                "validate-vocab",
                "--d2t",
                str(out / "d2t.pt"),
                "--t2d",
                str(out / "t2d.pt"),
                "--data",
                str(data),
            ]
        )
        == 0
    )
    assert "d2t holds offsets; coverage 70.59%" in capsys.readouterr().out
    absolute = tmp_path / "abs.pt"
    torch.save(torch.load(out / "d2t.pt") + torch.arange(3), absolute)
    assert (
        run(
            [
                "eagle3",
                "validate-vocab",
                "--d2t",
                str(absolute),
                "--t2d",
                str(out / "t2d.pt"),
                "--format",
                "json",
            ]
        )
        == 1
    )
    assert json.loads(capsys.readouterr().out)["format"] == "absolute"
    assert run(["eagle3", "validate-vocab"]) == 2


def test_speculators_token_freq_and_coverage_curve(tmp_path: Path) -> None:
    freq = tmp_path / "token_freq.pt"
    torch.save({7: 5, 2: 4, 9: 3, 4: 3, 0: 1, 11: 1}, freq)  # speculators' {id: count}
    counts = load_counts(freq, 12)
    assert torch.equal(counts, count_tokens(_ids(), 12))
    assert coverage_curve(counts, [1, 2, 6, 100]) == pytest.approx(
        {1: 5 / 17, 2: 9 / 17, 6: 1.0, 100: 1.0}
    )
    mapping = build_mapping(counts, 3)
    assert mapping.summary()["coverage_at"] == {"3": round(12 / 17, 6)}
    with pytest.raises(InputError, match="outside the target vocabulary of 8"):
        load_counts(freq, 8)
