"""Checkpoint key names: what SGLang's LlamaForCausalLMEagle3 loads, and the rename fix.

SGLang looks each checkpoint key up as `name` or `model.<name>` among its parameters
(`model.midlayer.*`, `model.fc.*`, `model.norm.*`, `model.embed_tokens.*`, `lm_head.*`) and
skips every other key without a word. speculators saves the decoder layer as `layers.0.*`, so
a speculators checkpoint loads with a randomly initialised midlayer: accept length 1.0, no
error anywhere. `inspect_keys` names that situation; `fix_keys` writes a renamed copy.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from factbook.errors import InputError, UsageError
from factbook.serving.eagle3 import require, safetensors_open
from factbook.serving.eagle3.safetensors_files import INDEX_NAME, Checkpoint, open_checkpoint

_LAYER_KEY = re.compile(r"^(model\.)?layers\.(\d+)\.(.+)$")
_ATTN = ("q_proj", "k_proj", "v_proj", "o_proj")
_MLP = ("gate_proj", "up_proj", "down_proj")


def sglang_params(config: dict[str, Any] | None = None) -> tuple[set[str], set[str]]:
    """(every key SGLang loads, the keys a working draft must have), in checkpoint naming.

    Names are without the `model.` prefix SGLang adds itself; `lm_head.weight` is top level.
    """
    config = config or {}
    layers = int(config.get("num_hidden_layers", 1) or 1)
    tied = bool(config.get("tie_word_embeddings", False))
    attn_bias = bool(config.get("attention_bias", False))
    names: set[str] = {"embed_tokens.weight", "fc.weight", "norm.weight"}
    if config.get("bias", False):
        names.add("fc.bias")
    for i in range(layers):
        prefix = "midlayer" if i == 0 else f"additional_layers.{i - 1}"
        names |= {f"{prefix}.self_attn.{p}.weight" for p in _ATTN}
        if attn_bias:
            names |= {f"{prefix}.self_attn.{p}.bias" for p in _ATTN[:3]}
        names |= {f"{prefix}.mlp.{p}.weight" for p in _MLP}
        norms = ["hidden_norm", "post_attention_layernorm"]
        if i == 0:
            norms.append("input_layernorm")
        names |= {f"{prefix}.{n}.weight" for n in norms}
    required = {n for n in names if n != "embed_tokens.weight"}  # shared from the target
    if not tied:
        names.add("lm_head.weight")
        if config.get("draft_vocab_size") is not None:  # else SGLang takes the target's head
            required.add("lm_head.weight")
    return names, required


def _loaded_as(key: str, names: set[str]) -> str | None:
    """The parameter a key fills in SGLang, or None when SGLang silently skips it."""
    if key == "lm_head.weight":
        return key if key in names else None
    bare = key[len("model.") :] if key.startswith("model.") else key
    return bare if bare in names and bare != "lm_head.weight" else None


def rename_key(key: str) -> str | None:
    """speculators' `layers.N.*` to SGLang's name (`midlayer.*`, then `additional_layers.N-1`)."""
    match = _LAYER_KEY.match(key)
    if not match:
        return None
    prefix, index, rest = match.group(1) or "", int(match.group(2)), match.group(3)
    module = "midlayer" if index == 0 else f"additional_layers.{index - 1}"
    return f"{prefix}{module}.{rest}"


@dataclass
class KeyReport:
    """What SGLang would make of a checkpoint's keys."""

    path: str
    layout: str  # sglang | speculators | mixed | incomplete
    files: int
    sharded: bool
    loaded: list[str] = field(default_factory=list)
    renames: dict[str, str] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    vocab: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.layout == "sglang"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}

    def lines(self) -> list[str]:
        out = [
            f"{self.path}: {self.layout} layout ({self.files} file(s), "
            f"{'sharded' if self.sharded else 'single file'})",
            f"  loaded by SGLang: {len(self.loaded)} keys; vocab maps: "
            f"{', '.join(self.vocab) or 'none'}",
        ]
        if self.renames:
            sample = next(iter(self.renames.items()))
            out.append(
                f"  silently dropped by SGLang, fixable by renaming: {len(self.renames)} keys "
                f"(e.g. {sample[0]} -> {sample[1]}); run `factbook eagle3 fix-keys`"
            )
        if self.missing:
            out.append(f"  missing (SGLang keeps random init): {', '.join(sorted(self.missing))}")
        if self.ignored:
            out.append(f"  ignored by SGLang: {', '.join(sorted(self.ignored))}")
        return out


def inspect_keys(path: Path | str, config: dict[str, Any] | None = None) -> KeyReport:
    """Classify every key of a checkpoint the way SGLang's loader treats it."""
    ckpt = open_checkpoint(path)
    if config is None:
        config = _folder_config(ckpt.root)
    names, required = sglang_params(config)
    report = KeyReport(str(path), "sglang", len(ckpt.files), ckpt.sharded)
    filled: set[str] = set()
    for key in sorted(ckpt.tensors):
        if "d2t" in key or "t2d" in key:  # SGLang's own substring test
            report.vocab.append(key)
            continue
        target = _loaded_as(key, names)
        if target is not None:
            report.loaded.append(key)
            filled.add(target)
            continue
        new = rename_key(key)
        if new is not None and _loaded_as(new, names) is not None:
            report.renames[key] = new
            filled.add(_loaded_as(new, names) or new)
        else:
            report.ignored.append(key)
    report.missing = sorted(required - filled)
    midlayer_loaded = any(".midlayer." in f".{k}" for k in report.loaded)
    if report.renames:
        report.layout = "mixed" if midlayer_loaded else "speculators"
    elif report.missing:
        report.layout = "incomplete"
    return report


def _folder_config(root: Path) -> dict[str, Any] | None:
    from factbook.serving.eagle3.capture import load_json

    config = root / "config.json"
    if not config.is_file():
        return None
    try:
        return load_json(config)
    except InputError as exc:
        if "expected a JSON object" in str(exc):
            return None
        raise


@dataclass
class FixReport:
    """Where the renamed checkpoint went and how it was verified."""

    source: str
    output: str
    renamed: int
    verified: int
    files: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        return [
            f"wrote {self.output} ({len(self.files)} file(s)): {self.renamed} keys renamed",
            f"verified {self.verified} tensors byte for byte against {self.source} "
            "(original untouched)",
        ]


def default_output(path: Path) -> Path:
    """Beside the original: `<folder>-sglang/`, or `<stem>-sglang.safetensors` for a file."""
    if path.is_file():
        return path.with_name(f"{path.stem}-sglang{path.suffix}")
    return path.with_name(f"{path.name}-sglang")


def fix_keys(path: Path | str, out: Path | str | None = None, *, force: bool = False) -> FixReport:
    """Write a copy with `layers.N.*` renamed, verify it tensor by tensor, leave the source."""
    path = Path(path)
    report = inspect_keys(path)
    if not report.renames:
        raise UsageError(f"{path}: nothing to rename ({report.layout} layout)")
    ckpt = open_checkpoint(path)
    target = Path(out) if out is not None else default_output(path)
    resolved = target.resolve()
    if resolved == path.resolve() or any(
        resolved == f.resolve() or resolved in f.resolve().parents for f in ckpt.files
    ):  # --force would delete the original with it
        raise UsageError(f"{target}: the output must not be (or contain) the original")
    if target.exists() and not force:
        raise UsageError(f"{target}: exists; pass --force to replace it")
    if target.exists() and not (target.is_file() or target.is_dir()):  # --force: unlinked
        raise UsageError(f"{target}: a device or a pipe, not a checkpoint; not replaced")
    before = {f: _stamp(f) for f in ckpt.files}
    mapping = {k: report.renames.get(k, k) for k in ckpt.tensors}
    single_file_out = path.is_file()
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=parent))
    names = {f: (target.name if single_file_out else f.name) for f in ckpt.files}
    try:
        written = _write(ckpt, mapping, staging, names)
        verified = _verify(ckpt, mapping, staging, names)
        if not single_file_out:
            _copy_other_files(ckpt, staging)
        if target.exists():
            shutil.rmtree(target) if target.is_dir() else target.unlink()
        if single_file_out:
            os.replace(staging / target.name, target)
            shutil.rmtree(staging)
        else:
            os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    for file, stamp in before.items():
        if _stamp(file) != stamp:
            raise InputError(f"{file}: changed while fixing keys; check it")
    return FixReport(str(path), str(target), len(report.renames), verified, written)


def _stamp(file: Path) -> tuple[int, int]:
    st = file.stat()
    return st.st_size, st.st_mtime_ns


def _write(
    ckpt: Checkpoint, mapping: dict[str, str], staging: Path, names: dict[Path, str]
) -> list[str]:
    save_file = require("safetensors.torch").save_file
    written = []
    for file in ckpt.files:
        with safetensors_open(file) as handle:
            tensors = {mapping[k]: handle.get_tensor(k) for k in handle.keys()}  # noqa: SIM118
        save_file(tensors, str(staging / names[file]), metadata=ckpt.metadata.get(file) or None)
        written.append(names[file])
    if ckpt.index is not None:
        data = dict(ckpt.index_data)
        data["weight_map"] = {
            mapping[k]: v for k, v in sorted(ckpt.index_data["weight_map"].items())
        }
        (staging / INDEX_NAME).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        written.append(INDEX_NAME)
    return written


def _verify(
    ckpt: Checkpoint, mapping: dict[str, str], staging: Path, names: dict[Path, str]
) -> int:
    """Every source tensor equals its renamed copy bit for bit (NaN-safe), and nothing else."""
    torch = require("torch")
    verified = 0
    for file in ckpt.files:
        copy = staging / names[file]
        with (
            safetensors_open(file) as src,
            safetensors_open(copy) as dst,
        ):
            src_keys, dst_keys = set(src.keys()), set(dst.keys())
            if {mapping[k] for k in src_keys} != dst_keys:
                raise InputError(f"{copy}: key set differs from the renamed source")
            for key in src_keys:
                a, b = src.get_tensor(key), dst.get_tensor(mapping[key])
                if (
                    a.dtype != b.dtype
                    or a.shape != b.shape
                    or not torch.equal(_bytes(a, torch), _bytes(b, torch))
                ):
                    raise InputError(f"{copy}: {mapping[key]} differs from {file}:{key}")
                verified += 1
    return verified


def _bytes(tensor: Any, torch: Any) -> Any:
    """The raw bytes, so NaN == NaN and -0.0 != 0.0: a copy must be exact, not close."""
    flat = tensor.contiguous().reshape(-1)
    return flat.view(torch.uint8) if flat.numel() else flat


def _copy_other_files(ckpt: Checkpoint, staging: Path) -> None:
    """config.json, generation_config.json, d2t/t2d side files: SGLang reads the folder."""
    skip = {f.name for f in ckpt.files} | {INDEX_NAME}
    for item in ckpt.root.iterdir():
        if item.is_file() and item.name not in skip:
            shutil.copy2(item, staging / item.name)
