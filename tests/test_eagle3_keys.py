"""Checkpoint keys: speculators' layers.0.* is detected and renamed, verified, source untouched."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
from helpers import module_or_skip
from test_eagle3_support import make_checkpoint, tiny_draft_config

from factbook.commands.cli import run
from factbook.errors import InputError, UsageError

pytestmark = pytest.mark.torch
torch = module_or_skip("torch")
safetensors = module_or_skip("safetensors")

from factbook.serving.eagle3.keys import fix_keys, inspect_keys, rename_key  # noqa: E402


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _all_tensors(folder: Path) -> dict[str, object]:
    out = {}
    for file in sorted(folder.glob("*.safetensors")):
        with safetensors.safe_open(str(file), framework="pt") as handle:
            out.update({k: handle.get_tensor(k) for k in handle.keys()})  # noqa: SIM118
    return out


def test_speculators_checkpoint_is_detected(tmp_path: Path) -> None:
    report = inspect_keys(make_checkpoint(tmp_path / "ckpt"))
    assert report.layout == "speculators" and not report.ok
    assert report.renames["layers.0.self_attn.q_proj.weight"] == "midlayer.self_attn.q_proj.weight"
    assert len(report.renames) == 10
    assert "midlayer.self_attn.q_proj.weight" not in report.missing  # fixable, not missing
    assert report.vocab == ["d2t", "t2d"]
    assert report.ignored == ["verifier_lm_head.weight"]


@pytest.mark.parametrize("shards", [1, 3])
def test_fix_writes_a_verified_sglang_copy_beside_the_original(tmp_path: Path, shards: int) -> None:
    source = make_checkpoint(tmp_path / "ckpt", shards=shards)
    before = _digests(source)
    result = fix_keys(source)
    out = tmp_path / "ckpt-sglang"
    assert result.output == str(out) and result.renamed == 10
    assert result.verified == len(_all_tensors(source))
    assert _digests(source) == before  # original untouched, byte for byte
    assert inspect_keys(out).layout == "sglang"
    old, new = _all_tensors(source), _all_tensors(out)
    for key, tensor in old.items():
        copy = new[rename_key(key) or key]
        assert copy.dtype == tensor.dtype
        assert torch.equal(
            copy.view(torch.uint8) if copy.dtype == torch.bfloat16 else copy,
            tensor.view(torch.uint8) if tensor.dtype == torch.bfloat16 else tensor,
        )
    assert json.loads((out / "config.json").read_text()) == tiny_draft_config()
    if shards > 1:
        index = json.loads((out / "model.safetensors.index.json").read_text())
        assert "midlayer.mlp.down_proj.weight" in index["weight_map"]
        assert not any(k.startswith("layers.") for k in index["weight_map"])
        assert sorted(p.name for p in out.glob("*.safetensors")) == sorted(
            p.name for p in source.glob("*.safetensors")
        )


def test_fix_single_file_and_refusals(tmp_path: Path) -> None:
    source = make_checkpoint(tmp_path / "ckpt") / "model.safetensors"
    result = fix_keys(source)
    assert Path(result.output) == tmp_path / "ckpt" / "model-sglang.safetensors"
    with pytest.raises(UsageError, match="exists; pass --force"):
        fix_keys(source)
    fix_keys(source, force=True)
    with pytest.raises(UsageError, match="nothing to rename"):
        fix_keys(result.output)
    with pytest.raises(UsageError, match="must not be"):
        fix_keys(source, source, force=True)
    with pytest.raises(UsageError, match=r"must not be \(or contain\) the original"):
        fix_keys(source.parent, tmp_path, force=True)  # would rmtree the source
    pipe = tmp_path / "pipe.safetensors"
    os.mkfifo(pipe)  # --force unlinked whatever was there: /dev/null too, as root
    with pytest.raises(UsageError, match="a device or a pipe"):
        fix_keys(source, pipe, force=True)
    assert source.is_file() and stat.S_ISFIFO(os.lstat(pipe).st_mode)


def test_mixed_and_incomplete_layouts(tmp_path: Path) -> None:
    sglang = make_checkpoint(tmp_path / "ok", prefix="model.midlayer.")
    assert inspect_keys(sglang).layout == "sglang"
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(sglang / "model.safetensors"))
    tensors["layers.0.mlp.up_proj.weight"] = tensors["model.midlayer.mlp.up_proj.weight"]
    mixed = tmp_path / "mixed" / "model.safetensors"
    mixed.parent.mkdir()
    save_file({k: v.clone() for k, v in tensors.items()}, str(mixed))
    assert inspect_keys(mixed, tiny_draft_config()).layout == "mixed"
    del tensors["layers.0.mlp.up_proj.weight"], tensors["model.midlayer.mlp.up_proj.weight"]
    partial = tmp_path / "partial.safetensors"
    save_file(tensors, str(partial))
    report = inspect_keys(partial, tiny_draft_config())
    assert report.layout == "incomplete" and report.missing == ["midlayer.mlp.up_proj.weight"]


def test_malformed_inputs_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "model.safetensors"
    bad.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{oops")
    with pytest.raises(InputError, match=f"{bad}: not a safetensors file"):
        inspect_keys(bad)
    shard_dir = make_checkpoint(tmp_path / "sharded", shards=2)
    next(shard_dir.glob("model-00002-*.safetensors")).unlink()
    with pytest.raises(InputError, match=r"weight_map names model-00002-of-00002\.safetensors"):
        inspect_keys(shard_dir)


def test_cli_keys_and_fix_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = make_checkpoint(tmp_path / "ckpt")
    assert run(["eagle3", "keys", str(source)]) == 1
    assert "speculators layout" in capsys.readouterr().out
    assert run(["eagle3", "fix-keys", str(source), "--out", str(tmp_path / "fixed")]) == 0
    out = capsys.readouterr().out
    assert "verified 17 tensors byte for byte" in out and "layout of the copy: sglang" in out
    assert run(["eagle3", "keys", str(tmp_path / "fixed"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["layout"] == "sglang"
    assert run(["eagle3", "keys", str(tmp_path / "missing")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_rename_rules() -> None:
    assert rename_key("model.layers.0.mlp.up_proj.weight") == "model.midlayer.mlp.up_proj.weight"
    assert rename_key("layers.2.hidden_norm.weight") == "additional_layers.1.hidden_norm.weight"
    assert rename_key("midlayer.mlp.up_proj.weight") is None
    assert rename_key("fc.weight") is None
