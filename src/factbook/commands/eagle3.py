"""`factbook eagle3 ...`: the EAGLE-3 draft-model checks, one subcommand per trap.

Exit codes follow errors.py: 0 when the check passes, 1 when it finds a problem (wrong keys,
absolute d2t, capture mismatch, misaligned hidden states), 2 for unusable input or usage.
Heavy modules (torch, transformers) are imported by the handlers that need them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from factbook.commands.cli_options import option_values
from factbook.errors import EXIT_FAILED, UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eagle3",
        help="EAGLE-3 draft checks: checkpoint keys, vocab maps, capture layers, alignment",
        description=(
            "Checks for an EAGLE-3 draft model served by SGLang. Layer indices are those of "
            "transformers' output_hidden_states: 0 (or 'embed') is the embedding output, "
            "k the output of decoder layer k-1. Exit 0 ok, 1 problem found, 2 bad input."
        ),
    )
    p.set_defaults(handler=lambda _args: p.print_help() or 2)
    cmds = p.add_subparsers(dest="eagle3_command", metavar="CHECK")

    def add(name: str, help_text: str, handler: Any) -> argparse.ArgumentParser:
        c = cmds.add_parser(name, help=help_text, description=help_text)
        c.add_argument("--format", choices=["text", "json"], default="text")
        c.set_defaults(handler=handler)
        return c

    c = add("keys", "which checkpoint keys SGLang loads, drops (layers.0.*) or misses", _keys)
    c.add_argument("checkpoint", type=Path, help="checkpoint folder or .safetensors file")
    c.add_argument("--config", type=Path, help="draft config.json (default: the folder's)")

    c = add("fix-keys", "write a copy with layers.N.* renamed to midlayer.*, verified", _fix)
    c.add_argument("checkpoint", type=Path)
    c.add_argument("--out", type=Path, help="output (default: beside it, suffixed -sglang)")
    c.add_argument("--force", action="store_true", help="replace an existing output")

    c = add("vocab-map", "build d2t (offsets) and t2d from token frequencies", _vocab_map)
    c.add_argument(
        "data",
        type=Path,
        help=".npy, .safetensors, .jsonl, .pt, a folder of .pt, or speculators' token_freq.pt",
    )
    c.add_argument("--target-vocab", type=int, required=True)
    c.add_argument("--draft-vocab", type=int, required=True)
    c.add_argument("--out", type=Path, help="folder for d2t.pt, t2d.pt, vocab_mapping.json")
    c.add_argument("--key", default="input_ids", help="token field name (default input_ids)")
    c.add_argument("--loss-mask", action="store_true", help="count only loss_mask tokens")
    c.add_argument("--device", default="cpu", help="cpu or cuda (counting and top-k)")

    c = add(
        "validate-vocab",
        "check a d2t/t2d pair: shapes, offsets vs absolute, coverage",
        _validate_vocab,
    )
    c.add_argument("--d2t", type=Path)
    c.add_argument("--t2d", type=Path)
    c.add_argument("--checkpoint", type=Path, help="read d2t/t2d from a draft checkpoint")
    c.add_argument("--target-vocab", type=int)
    c.add_argument("--data", type=Path, help="tokenized data to report coverage on")

    c = add("capture", "SGLang's capture layers (id + 1) vs the layers training recorded", _capture)
    c.add_argument("draft_config", type=Path)
    c.add_argument("--target-config", type=Path, help="target config.json (layers, hidden)")
    c.add_argument("--target-layers", type=int, help="number of target decoder layers")
    c.add_argument("--trained-layers", help="recorded fc inputs, e.g. embed,3,31")
    c.add_argument("--dump-meta", type=Path, help="JSON or .pt sample naming its layers")
    c.add_argument("--checkpoint", type=Path, help="draft checkpoint: check fc.weight width")

    c = add("align", "recompute a training sample's hidden states and compare per layer", _align)
    c.add_argument("target", type=Path, help="local transformers model folder")
    c.add_argument("sample", type=Path, help="dumped sample (.pt or .safetensors)")
    c.add_argument("--layers", help="expected capture indices, e.g. embed,3,31")
    c.add_argument("--draft-config", type=Path, help="expect what SGLang feeds for it")
    c.add_argument("--device", default="cpu")
    c.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    c.add_argument("--min-cos", type=float, default=0.99)
    c.add_argument("--positions", type=int, default=0, help="print the first N per-position")

    c = add("summary", "parameter counts from a draft config alone", _summary)
    c.add_argument("draft_config", type=Path)


def _emit(args: argparse.Namespace, report: Any, ok: bool) -> int:
    if args.format == "json":
        print(json.dumps(report.to_dict(), indent=1, default=str))
    else:
        print("\n".join(report.lines()))
    return 0 if ok else EXIT_FAILED


def _keys(args: argparse.Namespace) -> int:
    from factbook.serving.eagle3.capture import load_json
    from factbook.serving.eagle3.keys import inspect_keys

    config = load_json(args.config) if args.config else None
    report = inspect_keys(args.checkpoint, config)
    return _emit(args, report, report.ok)


def _fix(args: argparse.Namespace) -> int:
    from factbook.serving.eagle3.keys import fix_keys, inspect_keys

    report = fix_keys(args.checkpoint, args.out, force=args.force)
    after = inspect_keys(report.output)
    if args.format == "json":
        print(json.dumps({**report.to_dict(), "layout_after": after.layout}, indent=1))
    else:
        print("\n".join([*report.lines(), f"layout of the copy: {after.layout}"]))
    return 0 if after.ok else EXIT_FAILED


class _Built:
    def __init__(self, summary: dict[str, Any]) -> None:
        self.summary = summary

    def to_dict(self) -> dict[str, Any]:
        return self.summary

    def lines(self) -> list[str]:
        s = self.summary
        out = [
            f"{s['tokens']:,} tokens, {s['distinct_tokens']:,} distinct; draft vocab "
            f"{s['draft_vocab_size']:,} of {s['target_vocab_size']:,} covers "
            f"{s['coverage']:.2%} of them",
        ]
        curve = ", ".join(f"{int(k):,}: {v:.2%}" for k, v in s["coverage_at"].items())
        out.append(f"  coverage by draft vocab size: {curve}")
        if s["padded_with_unseen_ids"]:
            out.append(f"  padded with {s['padded_with_unseen_ids']} ids never seen")
        out += [f"  wrote {p}" for p in s.get("written", [])]
        return out


def _vocab_map(args: argparse.Namespace) -> int:
    from factbook.serving.eagle3.vocab import build_mapping, load_counts, save_mapping

    counts = load_counts(
        args.data,
        args.target_vocab,
        key=args.key,
        use_loss_mask=args.loss_mask,
        device=args.device,
    )
    mapping = build_mapping(counts, args.draft_vocab)
    summary = mapping.summary()
    if args.out:
        summary["written"] = [str(p) for p in save_mapping(mapping, args.out)]
    return _emit(args, _Built(summary), True)


def _validate_vocab(args: argparse.Namespace) -> int:
    from factbook.serving.eagle3.vocab import (
        load_counts,
        load_tensor,
        mapping_from_checkpoint,
        validate_mapping,
    )

    if args.checkpoint:
        d2t, t2d = mapping_from_checkpoint(args.checkpoint)
    elif args.d2t:
        d2t = load_tensor(args.d2t, "d2t")
        t2d = load_tensor(args.t2d, "t2d") if args.t2d else None
    else:
        raise UsageError("give --d2t (and --t2d) or --checkpoint")
    counts = None
    if args.data:
        vocab = args.target_vocab or (t2d.numel() if t2d is not None else None)
        if vocab is None:
            raise UsageError("--data needs --target-vocab or --t2d")
        counts = load_counts(args.data, vocab)
    report = validate_mapping(d2t, t2d, target_vocab_size=args.target_vocab, counts=counts)
    return _emit(args, report, report.ok)


def _capture(args: argparse.Namespace) -> int:
    from factbook.serving.eagle3.checks import capture_report

    report = capture_report(
        args.draft_config,
        target_config_path=args.target_config,
        target_layers=args.target_layers,
        trained_layers=args.trained_layers,
        dump_meta=args.dump_meta,
        checkpoint=args.checkpoint,
    )
    return _emit(args, report, report.ok)


def _align(args: argparse.Namespace) -> int:
    from factbook.serving.eagle3.checks import align_report

    options = option_values(args, "layers", "draft_config", "device", "dtype", "min_cos")
    report = align_report(args.target, args.sample, **options)
    if args.format == "json":
        print(json.dumps(report.to_dict(), indent=1))
    else:
        print("\n".join(report.lines(args.positions)))
    return 0 if report.ok else EXIT_FAILED


def _summary(args: argparse.Namespace) -> int:
    from factbook.serving.eagle3.capture import load_json
    from factbook.serving.eagle3.params import count_params

    return _emit(args, count_params(load_json(args.draft_config)), True)
