"""Hidden-state alignment: recompute a dumped training sample with transformers and compare.

A dump stores, per token, the hidden states training fed the fc (speculators writes a list
of [T, h] tensors, or their concatenation [T, 3h]). Recomputing the same tokens with
`output_hidden_states=True` gives every candidate (index 0 = embedding output, index k =
output of decoder layer k-1; see `capture`). Each dumped slot is compared with every
candidate by cosine similarity per position; the best match per slot shows what the dump
really holds, and the difference from what was expected names the trap: wrong order, a layer
off by one, a missing (or unexpected) embedding.

A slot matches when its best candidate is the expected index (argmax, not a threshold:
consecutive residual-stream states are close, so "above 0.99" alone could pass a neighbour)
and the mean cosine there reaches `min_cos`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from factbook.errors import InputError, UsageError
from factbook.serving.eagle3 import check_device, require, safetensors_load, torch_load
from factbook.serving.eagle3.capture import label

DTYPES = {
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
    "fp16": "float16",
    "float16": "float16",
    "fp32": "float32",
    "float32": "float32",
}


@dataclass
class Dump:
    """One training sample: token ids, the fc-input slots, and the recorded layers if any."""

    input_ids: Any  # LongTensor [T]
    slots: list[Any]  # [T, h] each
    recorded: list[int] | None = None
    verifier_last: Any = None  # [T, h] or None


def load_dump(path: Path | str, hidden_size: int) -> Dump:
    """A .pt or .safetensors sample in speculators' layout (list or concatenation)."""
    torch = require("torch")
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    if path.suffix == ".safetensors":
        data: dict[str, Any] = dict(safetensors_load(path))
        numbered = sorted(
            (k for k in data if k.startswith("hidden_states.")),
            key=lambda k: int(k.rsplit(".", 1)[1]),
        )
        if numbered:
            data["hidden_states"] = [data.pop(k) for k in numbered]
    else:
        data = torch_load(path)
    if not isinstance(data, dict) or "input_ids" not in data or "hidden_states" not in data:
        raise InputError(f"{path}: expected a dict with input_ids and hidden_states")
    ids = data["input_ids"].reshape(-1).long()
    states = data["hidden_states"]
    if isinstance(states, torch.Tensor):
        states = _squeeze(states, path)
        if states.shape[-1] % hidden_size:
            raise InputError(
                f"{path}: hidden_states width {states.shape[-1]} is not a multiple of the "
                f"target hidden size {hidden_size}"
            )
        slots = list(states.split(hidden_size, dim=-1))
    elif isinstance(states, (list, tuple)) and states:
        slots = [_squeeze(s, path) for s in states]
    else:
        raise InputError(f"{path}: hidden_states must be a tensor or a list of tensors")
    for i, slot in enumerate(slots):
        if tuple(slot.shape) != (ids.numel(), hidden_size):
            raise InputError(
                f"{path}: hidden state {i} has shape {list(slot.shape)}, expected "
                f"[{ids.numel()}, {hidden_size}] (tokens x target hidden size)"
            )
    last = data.get("verifier_last_hidden_states")
    recorded = None
    for key in ("hidden_state_layers", "capture_indices", "layer_ids"):
        if key in data:
            value = data[key]
            value = value.tolist() if hasattr(value, "tolist") else list(value)
            recorded = [0 if v == -1 or v == "embed" else int(v) for v in value]
            break
    return Dump(ids, slots, recorded, _squeeze(last, path) if last is not None else None)


def _squeeze(tensor: Any, path: Path) -> Any:
    while tensor.dim() > 2 and tensor.shape[0] == 1:
        tensor = tensor[0]
    if tensor.dim() != 2:
        raise InputError(f"{path}: expected [tokens, hidden] tensors, got {list(tensor.shape)}")
    return tensor


def load_target(path: Path | str, *, device: str = "cpu", dtype: str = "bf16") -> Any:
    """A transformers causal LM from a local folder (no download), on `device`."""
    torch = require("torch")
    transformers = require("transformers")
    path = Path(path)
    if not (path / "config.json").is_file():
        raise InputError(f"{path}: no config.json (a local transformers model folder)")
    device = check_device(device)
    transformers.utils.logging.disable_progress_bar()
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(path), dtype=getattr(torch, DTYPES[dtype]), local_files_only=True
        )
    except (OSError, ValueError, KeyError) as exc:  # unknown model type, missing weights
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{path}: transformers cannot load it: {first}") from None
    return model.to(device).eval()


def recompute(model: Any, input_ids: Any) -> tuple[list[Any], float]:
    """All hidden states ([T, h] each, index 0 = embeddings) and the forward time in s."""
    torch = require("torch")
    device = next(model.parameters()).device
    ids = input_ids.to(device).reshape(1, -1)
    _sync(torch, device)
    start = time.perf_counter()
    with torch.inference_mode():
        try:  # logits for one position only: the full [T, vocab] logits are not needed
            out = model(input_ids=ids, output_hidden_states=True, use_cache=False, logits_to_keep=1)
        except TypeError:
            out = model(input_ids=ids, output_hidden_states=True, use_cache=False)
    _sync(torch, device)
    return [h[0] for h in out.hidden_states], time.perf_counter() - start


def _sync(torch: Any, device: Any) -> None:
    if getattr(device, "type", str(device)).startswith("cuda"):
        torch.cuda.synchronize(device)


@dataclass
class SlotResult:
    """One dumped slot against the recomputed states."""

    slot: int
    expected: int
    best: int
    best_cos: float
    expected_cos: float
    expected_min_cos: float
    worst_position: int
    margin: float
    per_position: list[float]
    status: str  # ok | low_cos | off_by_one | other_slot | unexpected_embedding | other_layer
    # | unmatched


@dataclass
class AlignReport:
    """Every slot's verdict and the findings across slots."""

    expected: list[int]
    slots: list[SlotResult]
    findings: list[str] = field(default_factory=list)
    min_cos: float = 0.99
    num_states: int = 0
    tokens: int = 0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}

    def lines(self, positions: int = 0) -> list[str]:
        out = [
            f"{self.tokens} tokens, {self.num_states} recomputed states "
            f"(embed + {self.num_states - 1} layers); expected "
            f"[{', '.join(label(i) for i in self.expected)}]"
        ]
        for s in self.slots:
            out.append(
                f"  slot {s.slot}: expected {label(s.expected):>5} cos {s.expected_cos:.4f} "
                f"(min {s.expected_min_cos:.4f} at position {s.worst_position}); best "
                f"{label(s.best):>5} cos {s.best_cos:.4f} (margin {s.margin:.4f})  {s.status}"
            )
            if positions:
                shown = ", ".join(f"{c:.4f}" for c in s.per_position[:positions])
                out.append(f"    per position: {shown}")
        out += [f"  finding: {f}" for f in self.findings]
        if self.timings:
            out.append("  time: " + ", ".join(f"{k} {v:.3f}s" for k, v in self.timings.items()))
        return out


def compare(
    slots: list[Any], states: list[Any], expected: list[int], *, min_cos: float = 0.99
) -> AlignReport:
    """Cosine of every slot against every recomputed state, per position; then the verdict."""
    torch = require("torch")
    if len(slots) != len(expected):
        raise UsageError(f"{len(slots)} dumped slots but {len(expected)} expected layers")
    bad = [i for i in expected if not 0 <= i < len(states)]
    if bad:
        raise UsageError(f"expected indices {bad} outside 0..{len(states) - 1}")
    device = states[0].device
    functional = torch.nn.functional
    normed = [functional.normalize(s.to(device).float(), dim=-1) for s in slots]
    cos = torch.empty(len(slots), len(states), states[0].shape[0], device=device)
    for k, state in enumerate(states):
        other = functional.normalize(state.float(), dim=-1)
        for j, slot in enumerate(normed):
            cos[j, k] = (slot * other).sum(-1)
    mean = cos.mean(-1).cpu()
    cos = cos.cpu()
    results = []
    for j, want in enumerate(expected):
        ranked = torch.sort(mean[j], descending=True)
        best, best_cos = int(ranked.indices[0]), float(ranked.values[0])
        margin = best_cos - float(ranked.values[1]) if len(states) > 1 else 1.0
        at = cos[j, want]
        results.append(
            SlotResult(
                slot=j,
                expected=want,
                best=best,
                best_cos=best_cos,
                expected_cos=float(mean[j, want]),
                expected_min_cos=float(at.min()),
                worst_position=int(at.argmin()),
                margin=margin,
                per_position=[round(float(c), 5) for c in at],
                status=_status(want, best, best_cos, expected, min_cos, float(mean[j, want])),
            )
        )
    report = AlignReport(
        list(expected),
        results,
        min_cos=min_cos,
        num_states=len(states),
        tokens=int(states[0].shape[0]),
    )
    report.findings = _findings(results, expected, min_cos)
    return report


def _status(
    want: int, best: int, best_cos: float, expected: list[int], min_cos: float, want_cos: float
) -> str:
    if best == want:
        return "ok" if want_cos >= min_cos else "low_cos"
    if best_cos < min_cos:
        return "unmatched"
    if abs(best - want) == 1:
        return "off_by_one"
    if best in expected:
        return "other_slot"
    if best == 0:
        return "unexpected_embedding"
    return "other_layer"


def _findings(results: list[SlotResult], expected: list[int], min_cos: float) -> list[str]:
    """Name the traps, across slots."""
    found = []
    held = [r.best for r in results if r.best_cos >= min_cos]
    bad = [r for r in results if r.status != "ok"]
    if not bad:
        return found
    permuted = sorted(held) == sorted(expected) and len(held) == len(expected)
    if permuted:
        found.append(
            "wrong order: the dump holds the expected layers in slots "
            f"[{', '.join(label(r.best) for r in results)}]"
        )
    for r in (r for r in bad if r.status == "off_by_one" and not permuted):
        found.append(
            f"off by one: slot {r.slot} holds {label(r.best)}, expected {label(r.expected)} "
            f"({r.best - r.expected:+d} layer)"
        )
    if 0 in expected and 0 not in held:
        found.append("missing embedding: no slot holds the embedding output the config expects")
    if 0 in held and 0 not in expected:
        found.append(
            "unexpected embedding: a slot holds the embedding output, the "
            "expected layers do not include it"
        )
    for r in (r for r in bad if r.status == "other_slot" and not permuted):
        found.append(
            f"slot {r.slot} holds {label(r.best)}, which belongs in slot "
            f"{expected.index(r.best)} (expected {label(r.expected)} here)"
        )
    for r in (r for r in bad if r.status == "low_cos"):
        found.append(
            f"slot {r.slot} holds {label(r.expected)} but only at mean cos "
            f"{r.expected_cos:.4f} < {min_cos}; worst position {r.worst_position} "
            f"(cos {r.per_position[r.worst_position]:.4f})"
        )
    for r in (r for r in bad if r.status in {"other_layer", "unmatched"}):
        what = (
            f"best match {label(r.best)} at cos {r.best_cos:.4f}"
            if r.status == "other_layer"
            else f"no state matches (best {label(r.best)} at cos {r.best_cos:.4f} < {min_cos})"
        )
        found.append(f"slot {r.slot} (expected {label(r.expected)}): {what}")
    if not found:
        found.append(
            "slots differ from the expected layers: "
            f"[{', '.join(label(r.best) for r in results)}] vs "
            f"[{', '.join(label(i) for i in expected)}]"
        )
    return found


def align(model: Any, dump: Dump, expected: list[int], *, min_cos: float = 0.99) -> AlignReport:
    """Recompute `dump`'s tokens with `model` and compare (timings in the report)."""
    torch = require("torch")
    states, forward_s = recompute(model, dump.input_ids)
    device = states[0].device
    _sync(torch, device)
    start = time.perf_counter()
    report = compare(dump.slots, states, expected, min_cos=min_cos)
    _sync(torch, device)
    report.timings = {"forward": forward_s, "compare": time.perf_counter() - start}
    return report
