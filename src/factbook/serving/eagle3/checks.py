"""The `factbook eagle3 capture` and `align` checks from files on disk, as library calls.

The command line only parses and renders; what to read (a config that wraps its text model
in `text_config`, the fc width of a checkpoint, which layers a sample should hold) is decided
here, so other callers (a runbook step, a probe) get the same verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factbook.errors import UsageError
from factbook.serving.eagle3.capture import (
    aux_layer_ids,
    check_capture,
    flat_config,
    load_json,
    parse_layers,
    sglang_capture_indices,
    trained_layers_from_file,
)


def target_config(path: Path) -> dict[str, Any]:
    """A target's config.json, flattened; Kimi-K2.5 wraps DeepseekV3 in `text_config`."""
    config = flat_config(load_json(path))
    if isinstance(config.get("text_config"), dict):
        config = {**config["text_config"], **config}
    return config


def capture_report(
    draft_config: Path,
    *,
    target_config_path: Path | None = None,
    target_layers: int | None = None,
    trained_layers: str | None = None,
    dump_meta: Path | None = None,
    checkpoint: Path | None = None,
) -> Any:
    """SGLang's capture layers for a draft vs what training recorded (a CaptureReport)."""
    draft = load_json(draft_config)
    layers, hidden = target_layers, None
    if target_config_path:
        target = target_config(target_config_path)
        layers = layers or target.get("num_hidden_layers")
        hidden = target.get("hidden_size")
    trained = None
    if trained_layers:
        trained = parse_layers(trained_layers)
    elif dump_meta:
        trained = trained_layers_from_file(dump_meta)
    fc_in = None
    if checkpoint:
        from factbook.serving.eagle3.safetensors_files import open_checkpoint

        tensors = open_checkpoint(checkpoint).tensors
        fc = next((t for n, t in tensors.items() if n.endswith("fc.weight")), None)
        if fc is None:
            raise UsageError(f"{checkpoint}: no fc.weight tensor")
        fc_in = fc.shape[1]
    return check_capture(
        draft,
        num_target_layers=layers,
        target_hidden_size=hidden,
        trained=trained,
        fc_in_checkpoint=fc_in,
    )


def align_report(
    target: Path,
    sample: Path,
    *,
    layers: str | None = None,
    draft_config: Path | None = None,
    device: str = "cpu",
    dtype: str = "bf16",
    min_cos: float = 0.99,
) -> Any:
    """Recompute a dumped sample's hidden states on the target and compare (an AlignReport).

    The expected layers come from --layers, else what SGLang feeds the draft config, else
    what the sample says it recorded."""
    from factbook.serving.eagle3.align import align, load_dump, load_target

    config = target_config(target / "config.json")
    hidden = config.get("hidden_size")
    if not isinstance(hidden, int):
        raise UsageError(f"{target / 'config.json'}: no hidden_size")
    dump = load_dump(sample, hidden)
    if layers:
        expected = parse_layers(layers)
    elif draft_config:
        ids, _key = aux_layer_ids(flat_config(load_json(draft_config)))
        expected = sglang_capture_indices(ids, config.get("num_hidden_layers"))
    elif dump.recorded:
        expected = dump.recorded[: len(dump.slots)]
    else:
        raise UsageError("the sample names no layers: pass --layers or --draft-config")
    if len(expected) != len(dump.slots) and len(dump.slots) == len(expected) + 1:
        dump.slots = dump.slots[: len(expected)]  # the last one is verifier_last
    model = load_target(target, device=device, dtype=dtype)
    return align(model, dump, expected, min_cos=min_cos)
