"""Which hidden states the draft receives at inference, against what training fed it.

One index space for everything here, the one of transformers' `output_hidden_states`:
index 0 is the embedding output, index k the output of decoder layer k-1 (0-based), which
is the input of decoder layer k.

SGLang's convention (`set_eagle3_layers_to_capture`): a draft config's
`eagle_aux_hidden_state_layer_ids` [l0, l1, l2] become `layers_to_capture = [l + 1 ...]`,
and the model appends the *input* of each of those decoder layers, i.e. index l + 1 above.
So -1 means the embedding output (index 0) where the target model's code supports it
(llama.py does; the seeds patched deepseek_v2.py for it). Without ids in the config SGLang
uses [2, n // 2, n - 3] directly, without the +1.

The seeds' trap: training concatenated [embed, 3, 31] (indices 0, 3, 31) while the config's
[2, 30, 58] made SGLang feed [3, 31, 59].
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from factbook.errors import InputError, UsageError
from factbook.knowledge.limits import CONFIG_MAX_BYTES
from factbook.knowledge.yamlsrc import read_text_bounded

LAYER_ID_KEYS = (
    ("eagle_config", "eagle_aux_hidden_state_layer_ids"),  # SGLang / EAGLE reference
    ("eagle_aux_hidden_state_layer_ids",),
    ("aux_hidden_state_layer_ids",),
)
EMBED_NAMES = {"embed", "embedding", "embeddings", "emb", "e"}


def load_json(path: Path | str) -> dict[str, Any]:
    """A JSON object from a file; errors name the file and line. Read as every file handed
    over is (read_text_bounded): a folder, /dev/zero, a FIFO or a file over CONFIG_MAX_BYTES
    is one line, as is JSON nested past Python's recursion (each was a traceback)."""
    path = Path(path)
    if not os.path.lexists(path):
        raise InputError(f"{path}: no such file")
    text, problem = read_text_bounded(path, str(path), limit=CONFIG_MAX_BYTES)
    if problem is not None:
        raise InputError(f"{problem.file}:{problem.line}: {problem.message}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    except (RecursionError, ValueError) as exc:  # nested too deeply, a 5,000-digit number
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        raise InputError(f"{path}:1: invalid JSON: {why}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}:1: expected a JSON object")
    return data


def flat_config(config: dict[str, Any]) -> dict[str, Any]:
    """A draft config with speculators' nested `transformer_layer_config` merged in."""
    inner = config.get("transformer_layer_config")
    return (
        {**inner, **{k: v for k, v in config.items() if k != "transformer_layer_config"}}
        if isinstance(inner, dict)
        else dict(config)
    )


def aux_layer_ids(config: dict[str, Any]) -> tuple[list[int] | None, str | None]:
    """The draft config's aux hidden-state layer ids and the key they came from."""
    for path in LAYER_ID_KEYS:
        node: Any = config
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None:
            if not isinstance(node, list) or not all(isinstance(i, int) for i in node):
                raise InputError(f"config key {'.'.join(path)} must be a list of integers")
            return list(node), ".".join(path)
    return None, None


def sglang_capture_indices(layer_ids: list[int] | None, num_target_layers: int | None) -> list[int]:
    """SGLang's `layers_to_capture` for a config's ids (the +1 rule, or its default)."""
    if layer_ids is None:
        if num_target_layers is None:
            raise UsageError(
                "the draft config has no eagle_aux_hidden_state_layer_ids, so SGLang uses "
                "[2, n//2, n-3] of the target: pass --target-config or --target-layers"
            )
        n = num_target_layers
        return [2, n // 2, n - 3]
    return [i + 1 for i in layer_ids]


def parse_layers(text: str) -> list[int]:
    """`embed,3,31` -> [0, 3, 31] (capture indices; 'embed' is index 0)."""
    out = []
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        if part.lower() in EMBED_NAMES:
            out.append(0)
            continue
        try:
            out.append(int(part))
        except ValueError:
            raise UsageError(f"layer {part!r}: expected an integer or 'embed'") from None
    return out


def trained_layers_from_file(path: Path | str) -> list[int]:
    """Recorded capture indices from a dump's metadata (JSON or a .pt sample's `layer_ids`).

    Entries are indices as above; 'embed' (or -1 under the key `layer_ids`, speculators'
    way of naming the embedding) is 0.
    """
    path = Path(path)
    if path.suffix == ".json":
        data: Any = load_json(path)
    else:
        from factbook.serving.eagle3 import torch_load

        data = torch_load(path)
        if not isinstance(data, dict):
            raise InputError(f"{path}: expected a dict with 'layer_ids'")
        data = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in data.items()}
    for key in ("hidden_state_layers", "capture_indices", "layer_ids", "layers"):
        value = data.get(key)
        if isinstance(value, list) and value:
            return [
                0 if (isinstance(v, str) and v.lower() in EMBED_NAMES) or v == -1 else int(v)
                for v in value
            ]
    raise InputError(f"{path}: no hidden_state_layers / layer_ids list in it")


def label(index: int) -> str:
    return "embed" if index == 0 else str(index)


@dataclass
class CaptureReport:
    """Per fc slot: what SGLang captures, what training recorded, and the fc width check."""

    config_key: str | None
    layer_ids: list[int] | None
    sglang_indices: list[int]
    trained_indices: list[int] | None
    hidden_size: int | None
    target_hidden_size: int | None
    fc_in_expected: int | None
    fc_in_checkpoint: int | None = None
    verifier_last: int | None = None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}

    def lines(self) -> list[str]:
        source = self.config_key or "SGLang default [2, n//2, n-3]"
        out = [
            f"config {source}: {self.layer_ids} -> SGLang feeds the fc "
            f"[{', '.join(label(i) for i in self.sglang_indices)}]",
        ]
        if self.trained_indices is not None:
            out.append(f"training recorded [{', '.join(label(i) for i in self.trained_indices)}]")
            for slot, (got, want) in enumerate(
                zip(self.sglang_indices, self.trained_indices, strict=False)
            ):
                mark = "ok" if got == want else "MISMATCH"
                out.append(
                    f"  slot {slot}: inference {label(got):>5}  training {label(want):>5}  {mark}"
                )
        if self.fc_in_expected is not None:
            out.append(
                f"fc input width: 3 x {self.target_hidden_size} = {self.fc_in_expected}"
                + (
                    f"; checkpoint fc.weight takes {self.fc_in_checkpoint}"
                    if self.fc_in_checkpoint is not None
                    else ""
                )
            )
        out += [f"  problem: {p}" for p in self.problems]
        out += [f"  note: {n}" for n in self.notes]
        return out


def check_capture(
    draft_config: dict[str, Any],
    *,
    num_target_layers: int | None = None,
    target_hidden_size: int | None = None,
    trained: list[int] | None = None,
    fc_in_checkpoint: int | None = None,
) -> CaptureReport:
    """Compare SGLang's capture for this config with the recorded training layers."""
    config = flat_config(draft_config)
    layer_ids, key = aux_layer_ids(config)
    indices = sglang_capture_indices(layer_ids, num_target_layers)
    hidden = config.get("hidden_size")
    target_hidden = config.get("target_hidden_size") or hidden
    fc_in = 3 * target_hidden if isinstance(target_hidden, int) else None
    report = CaptureReport(
        key, layer_ids, indices, None, hidden, target_hidden, fc_in, fc_in_checkpoint
    )
    if len(indices) != 3:
        report.problems.append(f"{len(indices)} aux layers configured; the fc takes exactly 3")
    if num_target_layers is not None:
        beyond = [i for i in indices if not 0 <= i <= num_target_layers]
        if beyond:
            report.problems.append(
                f"capture indices {beyond} outside 0..{num_target_layers} for a "
                f"{num_target_layers}-layer target"
            )
    if 0 in indices:
        report.notes.append(
            "index 0 (layer id -1) is the embedding output: the target model's code must "
            "support capturing it (SGLang's llama.py does; deepseek_v2.py appends "
            "hidden_states + residual, and residual is None before layer 0, so it needs a "
            "patch like the seeds')"
        )
    if target_hidden_size is not None and target_hidden != target_hidden_size:
        report.problems.append(
            f"draft config says target hidden size {target_hidden}, the target config "
            f"{target_hidden_size}"
        )
    if fc_in is not None and fc_in_checkpoint is not None and fc_in != fc_in_checkpoint:
        report.problems.append(
            f"checkpoint fc.weight takes {fc_in_checkpoint} inputs, the config implies "
            f"3 x {target_hidden} = {fc_in}"
        )
    if trained is not None:
        recorded = list(trained)
        if len(recorded) == len(indices) + 1:
            report.verifier_last = recorded.pop()
            report.notes.append(
                f"the last recorded state ({label(report.verifier_last)}) is taken as "
                "verifier_last_hidden_states, not an fc input"
            )
        report.trained_indices = recorded
        if len(recorded) != len(indices):
            report.problems.append(
                f"training recorded {len(recorded)} fc inputs, the config captures {len(indices)}"
            )
        elif recorded != indices:
            report.problems.append(_describe_mismatch(indices, recorded))
            if layer_ids is not None:
                report.notes.append(
                    "to feed what training saw, set eagle_aux_hidden_state_layer_ids to "
                    f"{[i - 1 for i in recorded]}"
                )
    return report


def _describe_mismatch(inference: list[int], trained: list[int]) -> str:
    """Name the kind of mismatch, as the seeds would have wanted to read it."""
    kinds = []
    if sorted(inference) == sorted(trained):
        kinds.append("same layers in a different order")
    shifts = {a - b for a, b in zip(inference, trained, strict=True)}
    if len(shifts) == 1 and abs(next(iter(shifts))) == 1:
        kinds.append(f"off by one layer (inference is {next(iter(shifts)):+d})")
    if 0 in trained and 0 not in inference:
        kinds.append("training used the embedding output, inference does not capture it")
    if 0 in inference and 0 not in trained:
        kinds.append("inference captures the embedding output, training did not use it")
    shared = [i for i in inference if i in trained and inference.index(i) != trained.index(i)]
    if shared and not any("order" in k for k in kinds):
        kinds.append(f"layers {shared} sit in different fc slots")
    detail = "; ".join(kinds) or "different layers"
    return (
        f"SGLang feeds [{', '.join(label(i) for i in inference)}] but training used "
        f"[{', '.join(label(i) for i in trained)}]: {detail}"
    )
