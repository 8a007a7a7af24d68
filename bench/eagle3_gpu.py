"""EAGLE-3 checks at sizes that matter, CPU and GPU side by side, in one command.

    python bench/eagle3_gpu.py --out OUT.json            # on a CUDA machine (H200)
    python bench/eagle3_gpu.py --small --out OUT.json    # anywhere, seconds, CPU only

What it runs (factbook.serving.eagle3, imported from src/ without installing):

1. A randomly initialised Llama-shaped target with Kimi-K2.5's depth and vocabulary (61
   layers, vocab 163840; hidden 2048, 3.8B parameters in bf16), built on the GPU.
2. A training dump as the seeds made it: cat([embed, 3, 31]) + verifier last (59), produced
   on the GPU and saved/reloaded as a speculators-style .pt sample.
3. The alignment check (recompute with output_hidden_states, cosine per layer and position):
   timed on the GPU at --tokens and --cpu-tokens, and on the CPU at --cpu-tokens; the CPU
   run also measures how far CPU and GPU bf16 kernels disagree. Scenarios: the draft config
   [-1, 2, 30] (aligned), the seeds' [2, 30, 58] (mismatch), a wrong order, an off-by-one.
4. The vocab-map build (bincount, top-k, d2t/t2d, coverage) on Zipf-distributed synthetic
   token ids (no tokenizer or dataset exists offline) at several sizes, CPU vs GPU, with
   d2t compared bit for bit between the two.

Prints a table and writes a JSON summary to --out. Needs torch and transformers only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch
import transformers

from factbook.serving.eagle3.align import align, compare, load_dump, recompute
from factbook.serving.eagle3.capture import sglang_capture_indices
from factbook.serving.eagle3.vocab import (
    build_mapping,
    count_tokens,
    load_token_ids,
    validate_mapping,
)

VOCAB = 163840
DRAFT_VOCAB = 32000
LAYERS = 61
FULL = {"hidden_size": 2048, "intermediate_size": 5632, "heads": 16}
SMALL = {"hidden_size": 64, "intermediate_size": 128, "heads": 4}
TRAINED = [0, 3, 31]  # what the seeds' training concatenated: [embed, 3, 31]
VERIFIER_LAST = 59


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(device: str, fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    sync(device)
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    sync(device)
    return out, time.perf_counter() - start


def build_target(shape: dict[str, int], device: str) -> tuple[Any, float]:
    """A random Llama with Kimi's depth and vocabulary, in bf16, built on `device`."""
    config = transformers.LlamaConfig(
        hidden_size=shape["hidden_size"],
        intermediate_size=shape["intermediate_size"],
        num_hidden_layers=LAYERS,
        num_attention_heads=shape["heads"],
        num_key_value_heads=shape["heads"],
        vocab_size=VOCAB,
        max_position_embeddings=8192,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(device):
            model, seconds = timed(device, transformers.LlamaForCausalLM, config)
    finally:
        torch.set_default_dtype(default)
    built_on = str(next(model.parameters()).device)
    if not built_on.startswith(device):  # a transformers version that ignores the context
        model, moved = timed(device, model.to, device)
        seconds += moved
    return model.eval(), seconds


def make_dump(model: Any, ids: Any, folder: Path) -> tuple[Path, float]:
    """The seeds' training sample: cat([embed, 3, 31]) and verifier_last = 59, as a .pt."""
    states, seconds = recompute(model, ids)
    sample = {
        "input_ids": ids.cpu(),
        "hidden_states": torch.cat([states[i] for i in TRAINED], dim=-1).cpu(),
        "verifier_last_hidden_states": states[VERIFIER_LAST].cpu(),
        "loss_mask": torch.ones(ids.numel(), dtype=torch.long),
    }
    path = folder / "data_0.pt"
    torch.save(sample, path)
    return path, seconds


def alignment(
    model: Any, dump_path: Path, hidden: int, tokens: int, device: str, repeats: int
) -> dict[str, Any]:
    """Aligned check timed `repeats` times, then the trap scenarios on the same states."""
    dump = load_dump(dump_path, hidden)
    dump.input_ids = dump.input_ids[:tokens]
    dump.slots = [s[:tokens].to(device) for s in dump.slots]
    expected = sglang_capture_indices([-1, 2, 30], LAYERS)
    recompute(model, dump.input_ids[: min(8, tokens)])  # warm-up: kernels, allocator
    runs = [align(model, dump, expected) for _ in range(repeats)]
    best = min(runs, key=lambda r: r.timings["forward"] + r.timings["compare"])
    states, _ = recompute(model, dump.input_ids)
    scenarios = {
        "config [-1,2,30] (aligned)": (dump.slots, expected),
        "config [2,30,58] (seeds)": (dump.slots, sglang_capture_indices([2, 30, 58], LAYERS)),
        "wrong order": ([dump.slots[1], dump.slots[0], dump.slots[2]], expected),
        "off by one": (
            [states[i] for i in (2, 30, 58)],
            sglang_capture_indices([2, 30, 58], LAYERS),
        ),
    }
    verdicts = {}
    for name, (slots, want) in scenarios.items():
        report = compare(slots, states, want)
        verdicts[name] = {
            "ok": report.ok,
            "findings": report.findings,
            "statuses": [s.status for s in report.slots],
        }
    return {
        "device": device,
        "tokens": tokens,
        "forward_s": round(best.timings["forward"], 4),
        "compare_s": round(best.timings["compare"], 4),
        "check_s": round(best.timings["forward"] + best.timings["compare"], 4),
        "forward_runs_s": [round(r.timings["forward"], 4) for r in runs],
        "aligned_ok": best.ok,
        "slot_cos": [round(s.expected_cos, 6) for s in best.slots],
        "slot_min_cos": [round(s.expected_min_cos, 6) for s in best.slots],
        "slot_margin": [round(s.margin, 6) for s in best.slots],
        "scenarios": verdicts,
    }


def zipf_tokens(count: int, device: str, seed: int = 0) -> Any:
    """Synthetic token ids: Zipf(1.1) over a random permutation of the vocabulary."""
    gen = torch.Generator(device=device).manual_seed(seed)
    weights = 1.0 / torch.arange(1, VOCAB + 1, device=device, dtype=torch.float64) ** 1.1
    chunk = 1 << 24  # stay within the sizes every torch build's multinomial handles
    ranks = torch.cat(
        [
            torch.multinomial(
                weights.float(), min(chunk, count - done), replacement=True, generator=gen
            )
            for done in range(0, count, chunk)
        ]
    )
    perm = torch.randperm(VOCAB, device=device, generator=gen)
    return perm[ranks]


def vocab_build(ids: Any, device: str) -> tuple[Any, float]:
    def run() -> Any:
        return build_mapping(count_tokens(ids, VOCAB, device=device), DRAFT_VOCAB)

    run()  # warm-up
    best = None
    for _ in range(3):
        mapping, seconds = timed(device, run)
        best = seconds if best is None else min(best, seconds)
    return mapping, float(best)


def vocab_bench(sizes: list[int], device: str, folder: Path) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        gpu_ids = zipf_tokens(size, device)
        cpu_ids = gpu_ids.cpu()
        gpu_map, gpu_s = vocab_build(gpu_ids, device)
        cpu_map, cpu_s = vocab_build(cpu_ids, "cpu")
        report = validate_mapping(cpu_map.d2t, cpu_map.t2d, target_vocab_size=VOCAB)
        row = {
            "tokens": size,
            "cpu_s": round(cpu_s, 4),
            "gpu_s": round(gpu_s, 4),
            "speedup": round(cpu_s / gpu_s, 1) if gpu_s else None,
            "coverage": round(cpu_map.coverage, 4),
            "coverage_at": cpu_map.summary()["coverage_at"],
            "distinct": cpu_map.distinct,
            "d2t_equal": bool(torch.equal(cpu_map.d2t, gpu_map.d2t)),
            "valid_offsets": report.ok,
        }
        if size == sizes[-1]:
            path = folder / "tokens.npy"
            import numpy

            numpy.save(path, cpu_ids.numpy().astype("int32"))
            loaded, load_s = timed("cpu", load_token_ids, path)
            row["npy_load_s"] = round(load_s, 4)
            row["npy_roundtrip_equal"] = bool(torch.equal(loaded, cpu_ids))
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON summary file")
    parser.add_argument("--small", action="store_true", help="tiny shapes, CPU-friendly")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--tokens", type=int, help="tokens for the GPU alignment run")
    parser.add_argument("--cpu-tokens", type=int, help="tokens for the CPU alignment run")
    parser.add_argument("--vocab-sizes", help="comma-separated token counts")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--facts", type=Path, help="also write benchmark facts (YAML) here")
    parser.add_argument("--run-id", default=time.strftime("%Y%m%dT%H%M%SZ-h200", time.gmtime()))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    shape = SMALL if args.small else FULL
    tokens = args.tokens or (128 if args.small else 2048)
    cpu_tokens = args.cpu_tokens or (64 if args.small else 256)
    sizes = [
        int(s)
        for s in (
            args.vocab_sizes or ("1000000" if args.small else "1000000,16000000,100000000")
        ).split(",")
    ]
    device = args.device
    summary: dict[str, Any] = {
        "env": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu",
            "cpu": platform.processor() or platform.machine(),
            "cpu_threads": args.threads,
            "small": args.small,
        }
    }
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="eagle3-bench-") as tmp:
        folder = Path(tmp)
        model, build_s = build_target(shape, device)
        params = sum(p.numel() for p in model.parameters())
        ids = torch.randint(0, VOCAB, (tokens,), generator=torch.Generator().manual_seed(1))
        dump_path, dump_s = make_dump(model, ids.to(device), folder)
        summary["target"] = {
            "shape": {**shape, "layers": LAYERS, "vocab": VOCAB},
            "params": params,
            "params_b": round(params / 1e9, 2),
            "dtype": "bfloat16",
            "build_s": round(build_s, 2),
            "dump_s": round(dump_s, 3),
            "dump_mb": round(dump_path.stat().st_size / 1e6, 1),
        }
        hidden = shape["hidden_size"]
        runs = {"gpu_full": alignment(model, dump_path, hidden, tokens, device, 3)}
        runs["gpu_short"] = alignment(model, dump_path, hidden, cpu_tokens, device, 3)
        if device != "cpu":
            cpu_model, copy_s = timed("cpu", model.to, "cpu")
            del model
            torch.cuda.empty_cache()
            runs["cpu_short"] = alignment(cpu_model, dump_path, hidden, cpu_tokens, "cpu", 1)
            runs["cpu_short"]["copy_to_cpu_s"] = round(copy_s, 2)
            del cpu_model
        summary["alignment"] = runs
        summary["vocab"] = vocab_bench(sizes, device, folder)
    summary["total_s"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1) + "\n")
    print_summary(summary)
    if args.facts:
        date = time.strftime("%Y-%m-%d", time.gmtime())
        args.facts.write_text(facts_fragment(summary, args.run_id, date))
    failed = [n for n, r in runs.items() if not r["aligned_ok"]]
    return 1 if failed else 0


def facts_fragment(summary: dict[str, Any], run_id: str, date: str) -> str:
    """Benchmark facts (YAML, flow style) from a summary, for facts/eagle3.yaml."""
    env, target = summary["env"], summary["target"]
    source = {"run": run_id, "date": date, "target": "h200", "note": "bench/eagle3_gpu.py"}
    base_config = {
        "target_params_b": target["params_b"],
        "layers": LAYERS,
        "vocab": VOCAB,
        "dtype": "bfloat16",
        "torch": env["torch"],
        "device": env["device"],
    }
    facts = []
    for name, run in summary["alignment"].items():
        facts.append(
            {
                "id": f"eagle3.bench.align_{name}",
                "title": f"Alignment check, {run['device']}, {run['tokens']} tokens",
                "statement": (
                    f"factbook eagle3 align on a random {target['params_b']}B-parameter Llama "
                    f"(61 layers, bf16) took {run['check_s']} s on {run['device']} for "
                    f"{run['tokens']} tokens (forward {run['forward_s']} s, cosines "
                    f"{run['compare_s']} s); slot cosines {run['slot_cos']}."
                ),
                "metric": "alignment_check_s",
                "value": run["check_s"],
                "unit": "s",
                "config": {
                    **base_config,
                    "run_device": run["device"],
                    "tokens": run["tokens"],
                    "min_slot_cos": min(run["slot_min_cos"]),
                },
            }
        )
    for row in summary["vocab"]:
        facts.append(
            {
                "id": f"eagle3.bench.vocab_map_{row['tokens'] // 1_000_000}m",
                "title": f"Vocab map build, {row['tokens']:,} tokens, CPU vs GPU",
                "statement": (
                    f"Building d2t/t2d for a 32000-token draft vocab from {row['tokens']:,} "
                    f"token ids takes {row['gpu_s']} s on the GPU and {row['cpu_s']} s on the "
                    f"CPU ({row['speedup']}x); both give the same d2t: {row['d2t_equal']}."
                ),
                "metric": "vocab_map_build_s",
                "value": row["gpu_s"],
                "unit": "s",
                "config": {
                    "tokens": row["tokens"],
                    "cpu_s": row["cpu_s"],
                    "speedup": row["speedup"],
                    "data": "synthetic Zipf(1.1)",
                    "device": env["device"],
                },
            }
        )
    lines = []
    for fact in facts:
        fact = {
            "id": fact.pop("id"),
            "category": "benchmarks",
            "status": "verified",
            "target": "h200",
            "tags": ["eagle3", "h200", "bench"],
            "since": "4504",
            **fact,
            "sources": [source],
        }
        lines.append("  - " + json.dumps(fact))
    return "facts:\n" + "\n".join(lines) + "\n"


def print_summary(summary: dict[str, Any]) -> None:
    env, target = summary["env"], summary["target"]
    print(
        f"torch {env['torch']} (CUDA {env['cuda']}), transformers {env['transformers']}, "
        f"device {env['device']}, {env['cpu_threads']} CPU threads"
    )
    print(
        f"target: random Llama {target['params_b']}B params ({target['shape']}), bf16, "
        f"built in {target['build_s']} s; dump {target['dump_mb']} MB"
    )
    print("alignment check (recompute + cosine per layer and position):")
    print(
        f"  {'run':<10} {'device':<7} {'tokens':>6} {'forward s':>10} {'compare s':>10} "
        f"{'slot cos (min)':<40}"
    )
    for name, run in summary["alignment"].items():
        cos = ", ".join(
            f"{c:.4f} ({m:.4f})" for c, m in zip(run["slot_cos"], run["slot_min_cos"], strict=True)
        )
        print(
            f"  {name:<10} {run['device']:<7} {run['tokens']:>6} {run['forward_s']:>10.4f} "
            f"{run['compare_s']:>10.4f} {cos}"
        )
    first = next(iter(summary["alignment"].values()))
    for scenario, verdict in first["scenarios"].items():
        state = "ok" if verdict["ok"] else "; ".join(verdict["findings"])
        print(f"  scenario {scenario}: {state}")
    print("vocab map (bincount + top-k + d2t/t2d), Zipf(1.1) synthetic ids:")
    print(
        f"  {'tokens':>11} {'cpu s':>8} {'gpu s':>8} {'x':>6} {'coverage@32000':>15} "
        f"{'d2t equal':>9}"
    )
    for row in summary["vocab"]:
        print(
            f"  {row['tokens']:>11,} {row['cpu_s']:>8.4f} {row['gpu_s']:>8.4f} "
            f"{row['speedup']:>6} {row['coverage']:>15.4f} {row['d2t_equal']!s:>9}"
        )
    print(f"total {summary['total_s']} s")


if __name__ == "__main__":
    sys.exit(main())
