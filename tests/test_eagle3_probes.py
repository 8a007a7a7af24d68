"""checks/eagle3.py: the stdlib probes the verify agent ships to llm-two."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
from test_eagle3_support import SEED_DRAFT_CONFIG, draft_tensor_shapes, write_safetensors

from factbook.probes.scan import find_custom_probes

ROOT = Path(__file__).resolve().parents[1]


def _probes() -> ModuleType:
    spec = importlib.util.spec_from_file_location("eagle3_checks", ROOT / "checks" / "eagle3.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _checkpoint(folder: Path, prefix: str, d2t: list[int], t2d: list[int]) -> Path:
    folder.mkdir()
    tensors = {
        n: ("F32", list(s), [0.0] * _numel(s)) for n, s in draft_tensor_shapes(prefix).items()
    }
    tensors["d2t"] = ("I64", [len(d2t)], d2t)
    tensors["t2d"] = ("BOOL", [len(t2d)], t2d)
    write_safetensors(folder / "model.safetensors", tensors)
    return folder


def _numel(shape: tuple[int, ...]) -> int:
    out = 1
    for dim in shape:
        out *= dim
    return out


def test_probes_are_declared_for_lint() -> None:
    specs, problems = find_custom_probes(ROOT / "checks", ROOT)
    assert problems == []
    assert specs["eagle3.d2t_format"].required == ("path",)
    assert set(specs["eagle3.d2t_format"].optional) == {"t2d", "target_vocab"}


def test_keys_width_and_offsets_without_torch(tmp_path: Path) -> None:
    probes = _probes()
    mask = [0] * 64
    for i in (1, 2, 3, 5, 8, 13, 21, 34):
        mask[i] = 1
    offsets = [t - i for i, t in enumerate((1, 2, 3, 5, 8, 13, 21, 34))]
    spec = _checkpoint(tmp_path / "spec", "layers.0.", offsets, mask)
    keys = probes.checkpoint_keys(str(spec))
    assert keys["layout"] == "speculators" and keys["layers"] == 10 and keys["d2t"]
    assert probes.fc_in_features(str(spec)) == 48
    assert probes.d2t_format(str(spec)) == {
        "format": "offsets",
        "size": 8,
        "t2d_marked": 8,
        "max_target_id": 34,
    }
    absolute = _checkpoint(tmp_path / "abs", "midlayer.", [1, 2, 3, 5, 8, 13, 21, 34], mask)
    assert probes.checkpoint_keys(str(absolute))["layout"] == "sglang"
    assert probes.d2t_format(str(absolute))["format"] == "absolute"
    with pytest.raises(RuntimeError, match="no such file or folder"):
        probes.checkpoint_keys(str(tmp_path / "nowhere"))


def test_capture_layers_probe(tmp_path: Path) -> None:
    probes = _probes()
    config = tmp_path / "draft_config.json"
    config.write_text(
        json.dumps(
            {**SEED_DRAFT_CONFIG, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [-1, 2, 30]}}
        )
    )
    result = probes.capture_layers(str(config), 61)
    assert result["layers_to_capture"] == [0, 3, 31] and result["fc_in"] == 21504
    config.write_text(json.dumps({"hidden_size": 7168}))
    assert probes.capture_layers(str(config), 61)["layers_to_capture"] == [2, 30, 58]


@pytest.mark.torch
def test_pt_d2t_needs_torch(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    probes = _probes()
    torch.save(torch.tensor([1, 1, 1]), tmp_path / "d2t.pt")
    mask = torch.zeros(10, dtype=torch.bool)
    mask[[1, 2, 3]] = True
    torch.save(mask, tmp_path / "t2d.pt")
    result = probes.d2t_format(str(tmp_path / "d2t.pt"), str(tmp_path / "t2d.pt"))
    assert result["format"] == "offsets" and result["t2d_marked"] == 3


def test_probes_run_through_the_verify_agent(tmp_path: Path) -> None:
    """The facts' way: checks/eagle3.py shipped by the agent, expectations compared."""
    from helpers import fact, make_kb

    from factbook.knowledge.kb import load_kb
    from factbook.verification.engine import Engine, PlannedCheck, VerifyOptions

    mask = [1 if i in (1, 2, 3) else 0 for i in range(16)]
    spec = _checkpoint(tmp_path / "spec", "layers.0.", [1, 1, 1], mask)
    fixed = _checkpoint(tmp_path / "fixed", "midlayer.", [1, 1, 1], mask)
    layout = {"path": "layout", "eq": "sglang"}
    facts = [
        fact("e.spec", "eagle3.checkpoint_keys", layout, args={"path": str(spec)}, target="local"),
        fact(
            "e.fixed", "eagle3.checkpoint_keys", layout, args={"path": str(fixed)}, target="local"
        ),
        fact(
            "e.d2t",
            "eagle3.d2t_format",
            {"path": "format", "eq": "offsets"},
            args={"path": str(fixed)},
            target="local",
        ),
        fact(
            "e.fc", "eagle3.fc_in_features", {"eq": 48}, args={"path": str(fixed)}, target="local"
        ),
        fact(
            "e.gone",
            "eagle3.fc_in_features",
            {"eq": 48},
            args={"path": str(tmp_path / "gone")},
            target="local",
        ),
    ]
    checks = {"eagle3.py": (ROOT / "checks" / "eagle3.py").read_text()}
    kb = load_kb(make_kb(tmp_path / "kb", facts, checks=checks))
    plan = [PlannedCheck(f, "local") for f in kb.facts.values()]
    records = {r.fact: r for r in Engine(kb, kb.targets, VerifyOptions(), run_id="r").run(plan)}
    assert {k: r.outcome for k, r in records.items()} == {
        "e.spec": "drift",
        "e.fixed": "pass",
        "e.d2t": "pass",
        "e.fc": "pass",
        "e.gone": "error",
    }
    assert "no such file or folder" in records["e.gone"].reason


def test_box_probe_and_eagle3_command_judge_a_checkpoint_alike(tmp_path: Path) -> None:
    """One reader (factbook.probes.common): the probe shipped to the box and `factbook eagle3`
    see the same tensors in a sharded checkpoint and refuse a broken one with the same words."""
    from factbook.errors import InputError
    from factbook.probes import ml
    from factbook.serving.eagle3.safetensors_files import open_checkpoint

    probes = _probes()
    good = tmp_path / "good"
    good.mkdir()
    write_safetensors(good / "a.safetensors", {"x": ("F32", [2], [0.0, 1.0])})
    write_safetensors(good / "b.safetensors", {"y": ("I64", [1], [7])})
    index = {"weight_map": {"x": "a.safetensors", "y": "b.safetensors"}}
    (good / "model.safetensors.index.json").write_text(json.dumps(index))
    assert sorted(open_checkpoint(good).tensors) == sorted(probes._tensors(str(good))[0])
    assert ml.safetensors_tensors(str(good)) == {"x": [2], "y": [1]}
    assert probes._tensors(str(good))[1:] == (2, True)

    index["weight_map"]["z"] = "b.safetensors"  # the index promises a tensor b lacks
    (good / "model.safetensors.index.json").write_text(json.dumps(index))
    two = tmp_path / "two"
    two.mkdir()
    for name in ("a", "b"):
        write_safetensors(two / f"{name}.safetensors", {name: ("F32", [1], [0.0])})
    (tmp_path / "short.safetensors").write_bytes(b"\x01")
    for broken in (good, two, tmp_path / "short.safetensors", tmp_path / "nowhere"):
        with pytest.raises(RuntimeError) as on_box:
            probes.checkpoint_keys(str(broken))
        with pytest.raises(InputError) as here:
            open_checkpoint(broken)
        assert str(on_box.value) == str(here.value), broken
