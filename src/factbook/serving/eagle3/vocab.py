"""The draft vocabulary: t2d (bool mask over the target vocab) and d2t (offsets).

EAGLE-3 drafts over the `draft_vocab_size` most frequent target tokens. SGLang reads `d2t`
as offsets: `target_id = draft_idx + d2t[draft_idx]` (`hot_token_id = d2t + arange`). A d2t
holding absolute ids loads without complaint and maps every draft token to the wrong target
token, so `validate_mapping` decides which of the two a tensor holds, and says so.

Selection follows speculators' convention: most frequent first, ties by lower id, padded
with the lowest unseen ids when the data has fewer distinct tokens, then sorted by id.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from factbook.errors import InputError
from factbook.serving.eagle3 import (
    check_device,
    numpy_load,
    require,
    safetensors_load,
    torch_load,
)


@dataclass
class VocabMapping:
    """A built mapping and how much of the data's token mass it covers."""

    d2t: Any  # torch.LongTensor [draft_vocab]
    t2d: Any  # torch.BoolTensor [target_vocab]
    coverage: float
    tokens: int
    distinct: int
    padded: int
    coverage_at: dict[int, float] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {
            "draft_vocab_size": int(self.d2t.numel()),
            "target_vocab_size": int(self.t2d.numel()),
            "tokens": self.tokens,
            "distinct_tokens": self.distinct,
            "coverage": round(self.coverage, 6),
            "padded_with_unseen_ids": self.padded,
            "coverage_at": {str(k): round(v, 6) for k, v in self.coverage_at.items()},
        }


def load_token_ids(path: Path | str, *, key: str = "input_ids", use_loss_mask: bool = False) -> Any:
    """All token ids of a tokenized dataset as one 1-D int64 tensor (CPU).

    Accepts .npy, .safetensors (tensor `key`, or every integer tensor), .jsonl (field `key`,
    optional `loss_mask`), .pt (a tensor, a list of tensors or of sample dicts) and a folder
    of .pt sample dumps (speculators' hidden-state files: dicts with `input_ids`).
    """
    torch = require("torch")
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.is_dir():
        parts = [
            load_token_ids(p, key=key, use_loss_mask=use_loss_mask)
            for p in sorted(path.glob("*.pt"))
        ]
        if not parts:
            raise InputError(f"{path}: no *.pt sample files here")
        return torch.cat(parts)
    suffix = path.suffix
    if suffix == ".npy":
        array = numpy_load(path)
        if array.dtype.kind not in "iu":
            raise InputError(f"{path}: {array.dtype} values, not integer token ids")
        return torch.from_numpy(array.astype("int64").reshape(-1))
    if suffix == ".safetensors":
        data = safetensors_load(path)
        chosen = (
            [data[key]]
            if key in data
            else [t for t in data.values() if not t.is_floating_point() and t.dtype != torch.bool]
        )
        if not chosen:
            raise InputError(f"{path}: no integer tensor (looked for {key!r})")
        return torch.cat([t.reshape(-1).long() for t in chosen])
    if suffix == ".jsonl":
        return _jsonl_ids(path, key, use_loss_mask, torch)
    if suffix in {".pt", ".pth", ".bin"}:
        return _pt_ids(torch_load(path), path, key, use_loss_mask, torch)
    raise InputError(f"{path}: unknown data format {suffix!r} (.npy .safetensors .jsonl .pt)")


MAX_JSONL_LINE = 64 << 20  # characters of one sample; a whole file may be any size
MAX_TOKEN_ID = 1 << 31


def _jsonl_ids(path: Path, key: str, use_loss_mask: bool, torch: Any) -> Any:
    """The token ids of a .jsonl of samples; a line that is no sample (nested past Python's
    recursion, over MAX_JSONL_LINE, ids that are no token ids, not UTF-8) is one line naming
    file:line (each was a traceback)."""
    ids: list[int] = []
    for number, line in _jsonl_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{number}: invalid JSON: {exc.msg}") from None
        except (RecursionError, ValueError) as exc:
            why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
            raise InputError(f"{path}:{number}: invalid JSON: {why}") from None
        if not isinstance(row, dict) or not isinstance(row.get(key), list):
            raise InputError(f"{path}:{number}: no list field {key!r}")
        values = row[key]
        if not all(type(v) is int and 0 <= v < MAX_TOKEN_ID for v in values):
            raise InputError(f"{path}:{number}: {key!r} holds a value that is no token id")
        mask = row.get("loss_mask") if use_loss_mask else None
        if isinstance(mask, list) and len(mask) == len(values):
            values = [v for v, m in zip(values, mask, strict=True) if m]
        ids.extend(values)
    return torch.tensor(ids, dtype=torch.long)


def _jsonl_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(number, line) of a regular UTF-8 file, each line at most MAX_JSONL_LINE characters."""
    if not path.is_file():  # a FIFO would block, /dev/zero never end a line
        raise InputError(f"{path}: not a regular file")
    with path.open(encoding="utf-8") as handle:
        number = 0
        while True:
            number += 1
            try:
                line = handle.readline(MAX_JSONL_LINE + 1)
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{path}: not UTF-8 (byte 0x{exc.object[exc.start]:02x})"
                ) from None
            if not line:
                return
            if len(line) > MAX_JSONL_LINE:
                raise InputError(f"{path}:{number}: a line over {MAX_JSONL_LINE:,} characters")
            yield number, line


def _pt_ids(obj: Any, path: Path, key: str, use_loss_mask: bool, torch: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.reshape(-1).long()
    if isinstance(obj, dict) and key in obj:
        ids = obj[key].reshape(-1).long()
        mask = obj.get("loss_mask")
        if use_loss_mask and isinstance(mask, torch.Tensor) and mask.numel() == ids.numel():
            ids = ids[mask.reshape(-1).bool()]
        return ids
    if isinstance(obj, (list, tuple)) and obj:
        return torch.cat([_pt_ids(o, path, key, use_loss_mask, torch) for o in obj])
    raise InputError(f"{path}: expected a tensor, a dict with {key!r}, or a list of them")


def count_tokens(ids: Any, target_vocab_size: int, *, device: str = "cpu") -> Any:
    """Frequency of every target id (int64 [target_vocab]); ids out of range are an error."""
    torch = require("torch")
    ids = ids.to(check_device(device))
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= target_vocab_size):
        raise InputError(
            f"token ids span [{int(ids.min())}, {int(ids.max())}], outside the target "
            f"vocabulary of {target_vocab_size}"
        )
    return torch.bincount(ids, minlength=target_vocab_size)


def load_counts(
    path: Path | str,
    target_vocab_size: int,
    *,
    key: str = "input_ids",
    use_loss_mask: bool = False,
    device: str = "cpu",
) -> Any:
    """Token frequencies [target_vocab] of a dataset, or of speculators' token_freq.pt.

    speculators saves `{token_id: count}` (`token_freq.pt`) while preparing data; reading it
    skips re-counting the dataset.
    """
    torch = require("torch")
    path = Path(path)
    if path.is_file() and path.suffix in {".pt", ".pth"}:
        obj = torch_load(path)
        if isinstance(obj, dict) and obj and all(isinstance(k, int) for k in obj):
            ids = torch.tensor(list(obj), dtype=torch.long)
            if int(ids.min()) < 0 or int(ids.max()) >= target_vocab_size:
                raise InputError(
                    f"{path}: token ids span [{int(ids.min())}, {int(ids.max())}], outside "
                    f"the target vocabulary of {target_vocab_size}"
                )
            counts = torch.zeros(target_vocab_size, dtype=torch.long)
            counts[ids] = torch.tensor([int(v) for v in obj.values()], dtype=torch.long)
            return counts.to(check_device(device))
        ids = _pt_ids(obj, path, key, use_loss_mask, torch)
    else:
        ids = load_token_ids(path, key=key, use_loss_mask=use_loss_mask)
    return count_tokens(ids, target_vocab_size, device=device)


def coverage_curve(counts: Any, sizes: list[int]) -> dict[int, float]:
    """Share of all tokens covered by the `size` most frequent ids, for each size."""
    torch = require("torch")
    total = int(counts.sum())
    ranked = torch.sort(counts, descending=True).values.cumsum(0)
    return {
        size: (int(ranked[min(size, ranked.numel()) - 1]) / total if total else 0.0)
        for size in sizes
        if size > 0
    }


CURVE_SIZES = (8000, 16000, 32000, 64000)


def build_mapping(counts: Any, draft_vocab_size: int) -> VocabMapping:
    """d2t offsets and the t2d mask for the `draft_vocab_size` most frequent ids."""
    torch = require("torch")
    target_vocab = int(counts.numel())
    if not 0 < draft_vocab_size <= target_vocab:
        raise InputError(
            f"draft vocab size {draft_vocab_size} must be in 1..{target_vocab} (target vocab)"
        )
    # stable descending sort: equal counts keep ascending id order, as speculators does
    order = torch.sort(counts, descending=True, stable=True).indices
    distinct = int((counts > 0).sum())
    taken = min(distinct, draft_vocab_size)
    chosen = order[:taken]
    padded = draft_vocab_size - taken
    if padded:  # the lowest ids never seen, like speculators
        unseen = (counts == 0).nonzero().reshape(-1)[:padded]
        chosen = torch.cat([chosen, unseen])
    chosen = torch.sort(chosen).values
    arange = torch.arange(draft_vocab_size, device=chosen.device)
    d2t = (chosen - arange).to(torch.long)
    t2d = torch.zeros(target_vocab, dtype=torch.bool, device=counts.device)
    t2d[chosen] = True
    total = int(counts.sum())
    covered = int(counts[chosen].sum())
    return VocabMapping(
        d2t=d2t.cpu(),
        t2d=t2d.cpu(),
        coverage=covered / total if total else 0.0,
        tokens=total,
        distinct=distinct,
        padded=padded,
        coverage_at=coverage_curve(
            counts, sorted({s for s in CURVE_SIZES if s < target_vocab} | {draft_vocab_size})
        ),
    )


@dataclass
class VocabReport:
    """What a d2t/t2d pair holds and whether SGLang would map tokens correctly with it."""

    d2t_shape: list[int]
    t2d_shape: list[int] | None
    format: str  # offsets | absolute | ambiguous | invalid
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    coverage: float | None = None

    @property
    def ok(self) -> bool:
        return self.format == "offsets" and not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}

    def lines(self) -> list[str]:
        head = f"d2t {self.d2t_shape}, t2d {self.t2d_shape}: d2t holds {self.format}"
        if self.coverage is not None:
            head += f"; coverage {self.coverage:.2%} of the data's tokens"
        return (
            [head]
            + [f"  problem: {p}" for p in self.problems]
            + [f"  note: {n}" for n in self.notes]
        )


def validate_mapping(
    d2t: Any, t2d: Any = None, *, target_vocab_size: int | None = None, counts: Any = None
) -> VocabReport:
    """Shapes, offsets vs absolute ids, t2d/d2t agreement and (with counts) coverage."""
    torch = require("torch")
    report = VocabReport(list(d2t.shape), list(t2d.shape) if t2d is not None else None, "invalid")
    if d2t.dim() != 1 or d2t.is_floating_point() or d2t.dtype == torch.bool:
        report.problems.append(
            f"d2t must be a 1-D integer tensor, got {d2t.dtype} {list(d2t.shape)}"
        )
        return report
    if (
        t2d is not None
        and t2d.dim() == 1
        and not t2d.is_floating_point()
        and t2d.dtype != torch.bool
        and bool(((t2d == 0) | (t2d == 1)).all())
    ):
        report.notes.append(f"t2d is a 0/1 {t2d.dtype} mask; speculators stores bool")
        t2d = t2d.bool()
    if t2d is not None and (t2d.dim() != 1 or t2d.dtype != torch.bool):
        report.problems.append(f"t2d must be a 1-D bool tensor, got {t2d.dtype} {list(t2d.shape)}")
        return report
    vocab = target_vocab_size or (int(t2d.numel()) if t2d is not None else None)
    if t2d is not None and target_vocab_size and t2d.numel() != target_vocab_size:
        report.problems.append(
            f"t2d has {t2d.numel()} entries, the target vocabulary {target_vocab_size}"
        )
    d2t = d2t.long().cpu()
    n = d2t.numel()
    as_offsets = d2t + torch.arange(n)
    candidates = {"offsets": as_offsets, "absolute": d2t}
    fits = {name: _fits(ids, vocab, t2d, torch) for name, ids in candidates.items()}
    good = [name for name, why in fits.items() if why is None]
    if good == ["offsets"] or (len(good) == 2 and t2d is not None):
        report.format = "offsets"
    elif good == ["absolute"]:
        report.format = "absolute"
        report.problems.append(
            "d2t holds absolute target ids; SGLang adds arange(n) to it "
            "(hot_token_id = d2t + arange), so store d2t[i] = target_id - i"
        )
    elif len(good) == 2:
        report.format = "ambiguous"
        report.notes.append("both readings are valid ids; pass t2d to decide")
    else:
        report.problems.append(
            f"as offsets: {fits['offsets']}; as absolute ids: {fits['absolute']}"
        )
    if t2d is not None and int(t2d.sum()) != n:
        report.problems.append(f"t2d marks {int(t2d.sum())} ids but d2t has {n} entries")
    ids = candidates["absolute" if report.format == "absolute" else "offsets"]
    if report.format in {"offsets", "absolute"} and n > 1 and not bool((ids[1:] > ids[:-1]).all()):
        report.notes.append("target ids are not in ascending order (speculators sorts them)")
    if counts is not None and report.format in {"offsets", "absolute", "ambiguous"}:
        total = int(counts.sum())
        inside = ids[(ids >= 0) & (ids < counts.numel())]
        report.coverage = int(counts.cpu()[inside].sum()) / total if total else 0.0
    return report


def _fits(ids: Any, vocab: int | None, t2d: Any, torch: Any) -> str | None:
    """None when `ids` is a valid draft->target map, else why not."""
    if int(ids.min()) < 0:
        return f"negative id {int(ids.min())}"
    if vocab is not None and int(ids.max()) >= vocab:
        return f"id {int(ids.max())} >= target vocab {vocab}"
    if torch.unique(ids).numel() != ids.numel():
        return "repeated ids"
    if t2d is not None and not bool(t2d[ids].all()):
        return f"{int((~t2d[ids]).sum())} ids not marked in t2d"
    return None


def load_tensor(path: Path | str, name: str | None = None) -> Any:
    """One tensor from .pt/.npy/.safetensors (`name` picks it from a multi-tensor file)."""
    torch = require("torch")
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    if path.suffix == ".npy":
        return torch.from_numpy(numpy_load(path).copy())
    data = safetensors_load(path) if path.suffix == ".safetensors" else torch_load(path)
    if isinstance(data, torch.Tensor):
        return data
    if isinstance(data, dict) and name and name in data:
        return data[name]
    if isinstance(data, dict) and len(data) == 1:
        return next(iter(data.values()))
    raise InputError(f"{path}: expected one tensor (or a dict with {name!r})")


def mapping_from_checkpoint(path: Path | str) -> tuple[Any, Any]:
    """(d2t, t2d) stored inside a draft checkpoint; either may be None."""
    from factbook.serving.eagle3 import safetensors_open
    from factbook.serving.eagle3.safetensors_files import open_checkpoint

    ckpt = open_checkpoint(path)
    found: dict[str, Any] = {}
    for name, info in ckpt.tensors.items():
        for wanted in ("d2t", "t2d"):
            if name == wanted or name.endswith("." + wanted):
                with safetensors_open(info.file) as handle:
                    found[wanted] = handle.get_tensor(name)
    if "d2t" not in found:
        raise InputError(f"{path}: no d2t tensor in the checkpoint")
    return found["d2t"], found.get("t2d")


def save_mapping(mapping: VocabMapping, out: Path | str) -> list[Path]:
    """d2t.pt and t2d.pt (torch.save, as speculators writes them) plus a JSON summary."""
    torch = require("torch")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "d2t.pt", out / "t2d.pt", out / "vocab_mapping.json"]
    torch.save(mapping.d2t, paths[0])
    torch.save(mapping.t2d, paths[1])
    paths[2].write_text(json.dumps(mapping.summary(), indent=2) + "\n", encoding="utf-8")
    return paths
