"""Read the result files of SGLang's and vLLM's serving benchmarks into benchmark-fact fields.

    python -m sglang.bench_serving ... --output-file run.jsonl   (one JSON object per line,
                                                                  appended per run)
    vllm bench serve ... --save-result --result-filename run.json (one JSON object)
    factbook bench import run.jsonl --record bench.sglang.c128 [--figure median_tpot_ms]

Each tool's keys mean what its own code computes, and the figures are not interchangeable
with factbook's own client (benchclient.py), so every import records which tool measured it
and the definition of each figure, in the fact's `config`:

- `output_throughput` (both tools): all output tokens of the completed requests divided by the
  benchmark's duration (first request sent to last response): tokens per second over the run,
  summed across concurrent requests. It is NOT a per-request rate; at max_concurrency 1 it is
  still wall-time based (idle gaps and TTFT included).
- factbook's `single_stream_tok_s` is the median over requests of one request's output tokens
  divided by its own total time (TTFT included): a per-request rate.
- TPOT (both): (request latency - TTFT) / (output tokens - 1), per request, then mean/median/
  percentiles in ms. 1000 / median TPOT is the per-request decode rate.
- ITL: gaps between streamed chunks; E2E latency (sglang `*_e2e_latency_ms`, vLLM `*_e2el_ms`):
  send to last token, per request. TTFT: send to first token.
- accept length: SGLang `accept_length` (server's average speculative accept length); vLLM
  `spec_decode_acceptance_length` = 1 + accepted / drafts from the server's /metrics delta.

SGLang writes `request_rate` as the bare token `Infinity` (not JSON; Python's reader accepts
it); vLLM writes the string "inf". Both are kept as the string "inf".
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factbook.errors import InputError
from factbook.judging.sanitize import finite_number, hidden_escaped
from factbook.knowledge.limits import RECORDED_VALUE_MAX_BYTES, RECORDED_VALUE_MAX_DEPTH, preview
from factbook.knowledge.yamlsrc import read_text_bounded

SGLANG = "sglang.bench_serving"
VLLM = "vllm bench serve"
TOOLS = {"sglang": SGLANG, "vllm": VLLM}

DEFINITIONS: dict[str, str] = {
    "output_throughput": (
        "output tokens of all completed requests / benchmark duration (first request sent to "
        "last response), tok/s over the run, summed across concurrent requests; not per request"
    ),
    "total_throughput": "(input + output tokens) / benchmark duration, tok/s over the run",
    "request_throughput": "completed requests / benchmark duration, req/s",
    "ttft_ms": "time to first token per request: request sent to first streamed token, ms",
    "tpot_ms": (
        "time per output token per request, first token excluded: "
        "(latency - TTFT) / (output tokens - 1), ms; 1000/TPOT is the per-request decode rate"
    ),
    "itl_ms": "inter-token latency: gaps between streamed chunks, ms",
    "e2e_latency_ms": "end-to-end latency per request: sent to last token received, ms",
    "accept_length": "average speculative accept length (tokens per verify step) the server saw",
}

# figure name -> (definition key, unit)
FIGURES: dict[str, tuple[str, str]] = {
    "output_throughput": ("output_throughput", "tok/s"),
    "total_throughput": ("total_throughput", "tok/s"),
    "request_throughput": ("request_throughput", "req/s"),
}
for _stat in ("mean", "median", "p90", "p95", "p99"):
    for _name in ("ttft", "tpot", "itl", "e2e_latency"):
        FIGURES[f"{_stat}_{_name}_ms"] = (f"{_name}_ms", "ms")

# vLLM names end-to-end latency `e2el` and total throughput `total_token_throughput`
_VLLM_ALIASES = {"total_throughput": "total_token_throughput"}
_CONFIG_KEYS = {
    SGLANG: (
        "backend", "dataset_name", "max_concurrency", "request_rate", "random_input_len",
        "random_output_len", "random_range_ratio", "sharegpt_output_len", "tag", "completed",
        "duration", "total_input_tokens", "total_output_tokens",
    ),
    VLLM: (
        "backend", "endpoint_type", "label", "model_id", "tokenizer_id", "num_prompts",
        "max_concurrency", "request_rate", "burstiness", "completed", "failed", "duration",
        "total_input_tokens", "total_output_tokens", "date",
    ),
}  # fmt: skip


@dataclass
class BenchImport:
    """One benchmark run read from a tool's result file."""

    tool: str
    source: str  # FILE or FILE:LINE
    data: dict[str, Any]
    config: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # values recorded as previews, one line each

    def figure(self, name: str) -> float | None:
        """A figure by factbook's name (the sglang key; vLLM's names are mapped)."""
        key = name
        if self.tool == VLLM:
            key = _VLLM_ALIASES.get(name, name.replace("e2e_latency", "e2el"))
        return finite_number(self.data.get(key))

    @property
    def accept_length(self) -> float | None:
        key = "accept_length" if self.tool == SGLANG else "spec_decode_acceptance_length"
        value = finite_number(self.data.get(key))
        return value if value is not None and value > 0 else None


# vllm's --save-detailed result holds per-request arrays: tens of MB for long runs
MAX_RESULT_BYTES = 512 << 20


def read_result(path: Path, *, tool: str | None = None, line: int | None = None) -> BenchImport:
    """Read one run from a result file; `line` picks a run of an sglang JSONL (default: last).

    The tool is told by the shape: sglang's JSONL lines carry `server_info` or
    `total_output_tokens_retokenized`; vLLM's JSON `endpoint_type` or `*_e2el_ms` keys.
    """
    text, problem = read_text_bounded(path, str(path), limit=MAX_RESULT_BYTES)
    if problem is not None:
        raise InputError(f"{problem.file}:{problem.line}: {problem.message}")
    runs = _documents(path, text)
    if not runs:
        raise InputError(f"{path}:1: no benchmark result in the file")
    if line is not None:
        chosen = [r for r in runs if r[0] == line]
        if not chosen:
            have = ", ".join(str(n) for n, _ in runs)
            raise InputError(f"{path}: no run on line {line} (runs on lines {have})")
        number, data = chosen[0]
    else:
        number, data = runs[-1]
    found = tool or _tell_tool(data)
    where = f"{path}:{number}"
    if found is None:
        raise InputError(
            f"{where}: neither an sglang.bench_serving nor a vllm bench serve result "
            "(pass --tool sglang|vllm if it is one)"
        )
    if not isinstance(data.get("output_throughput"), (int, float)):
        raise InputError(f"{where}: no numeric output_throughput: not a serving benchmark result")
    _refuse_impossible(data, found, where)
    run = BenchImport(found, where, data)
    for key in _CONFIG_KEYS[found]:
        if data.get(key) is not None:
            run.config[key] = _recordable(key, data[key], run)
    if found == SGLANG and isinstance(data.get("server_info"), dict):
        info = data["server_info"]
        for key in ("model_path", "version", "speculative_algorithm", "speculative_num_steps"):
            if info.get(key) is not None:
                run.config[f"server_{key}"] = _recordable(f"server_{key}", info[key], run)
    return run


# Counts and durations a run reports beside its figures: none can be negative or infinite.
_COUNTS = (
    "completed", "failed", "num_prompts", "duration", "total_input_tokens",
    "total_output_tokens", "total_output_tokens_retokenized", "max_concurrency",
    "random_input_len", "random_output_len",
)  # fmt: skip


def _refuse_impossible(data: dict[str, Any], tool: str, where: str) -> None:
    """InputError naming the first throughput, latency or count that no run can measure:
    negative, infinite or NaN. `bench import` recorded `output_throughput: -1e308` as the
    fact's value, and a NaN latency among its figures. (request_rate is left out: sglang
    writes `Infinity` for "all at once"; an accept length of 0 or less means none and is
    passed over, as `accept_length` does.)"""
    keys = list(_COUNTS)
    for name in FIGURES:
        keys.append(name)
        if tool == VLLM:
            keys.append(_VLLM_ALIASES.get(name, name.replace("e2e_latency", "e2el")))
    for key in dict.fromkeys(keys):
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if (isinstance(value, float) and not math.isfinite(value)) or value < 0:
            shown = repr(value) if isinstance(value, float) or abs(value) < 10**30 else "<huge>"
            raise InputError(
                f"{where}: {key} is {shown}: a throughput, latency or count is a finite "
                "number of 0 or more; not recorded"
            )


def _recordable(key: str, value: Any, run: BenchImport) -> Any:
    """A value as the fact will record it: within what the knowledge base's loader reads
    (limits.py), else a preview and one line in `run.notes` saying so."""
    value = _plain(value)
    kept = preview(value, RECORDED_VALUE_MAX_BYTES, depth=RECORDED_VALUE_MAX_DEPTH)
    if kept is not value:
        run.notes.append(
            f"{run.source}: {key}: too large or too deeply nested for a fact file; "
            f"recorded as a {len(kept)}-character preview"
        )
    shown = hidden_escaped(kept)
    if shown != kept:  # lint refuses a hidden character in a fact file: it would lock it out
        run.notes.append(
            f"{run.source}: {key}: holds control or bidi characters; recorded with them "
            "shown escaped (\\x1b)"
        )
    return shown


def _documents(path: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    """(line, object) per run: one JSON document (vLLM, indented or not) or JSON lines."""
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        whole = None
    if isinstance(whole, dict):
        return [(1, whole)]
    runs = []
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise InputError(f"{path}:{number}: not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise InputError(f"{path}:{number}: expected a JSON object per line")
        runs.append((number, data))
    return runs


def _tell_tool(data: dict[str, Any]) -> str | None:
    if "server_info" in data or "total_output_tokens_retokenized" in data:
        return SGLANG
    if "endpoint_type" in data or any(k.endswith("_e2el_ms") for k in data):
        return VLLM
    return None


def _plain(value: Any) -> Any:
    """Infinity/NaN as strings (YAML and JSON readers alike keep them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else str(value)
    return value


def to_fact_values(run: BenchImport, figure: str = "output_throughput") -> dict[str, Any]:
    """The fields of a benchmark fact (as benchclient.to_fact_values): value, unit, metric,
    accept_len and a config naming the tool, the figure's definition and the other figures."""
    if figure not in FIGURES:
        raise InputError(f"unknown figure '{figure}' (one of: {', '.join(FIGURES)})")
    value = run.figure(figure)
    if value is None:
        raise InputError(f"{run.source}: the {run.tool} result has no figure '{figure}'")
    definition, unit = FIGURES[figure]
    concurrency = run.data.get("max_concurrency")
    if figure == "output_throughput" and isinstance(concurrency, int):
        metric = f"throughput_c{concurrency}_tok_s"
    else:
        metric = figure
    figures = {name: round(v, 3) for name in FIGURES if (v := run.figure(name)) is not None}
    config = {
        **run.config,
        "measured_by": run.tool,
        "figure": figure,
        "definition": DEFINITIONS[definition],
        "figures": figures,
        "definitions": {k: DEFINITIONS[k] for k in sorted({FIGURES[n][0] for n in figures})},
    }
    accept = run.accept_length
    if accept is not None:
        config["definitions"]["accept_length"] = DEFINITIONS["accept_length"]
    return {
        "value": round(value, 2),
        "unit": unit,
        "metric": metric,
        "accept_len": None if accept is None else round(accept, 2),
        "config": config,
    }
