"""`factbook bench`: measure an OpenAI-compatible server and optionally record the figure.

    factbook bench --url http://127.0.0.1:8000 --concurrency 1 --max-tokens 256
    factbook bench --url ... --concurrency 128 --record bench.sglang.nccl_tuned.c128
    factbook bench import run.jsonl --record bench.sglang.c128   # sglang.bench_serving JSONL
    factbook bench import vllm.json --record bench.vllm.c128     # vllm bench serve --save-result

Recording writes the value, unit, accept length and configuration into the benchmark fact
through factbook.store.writeback (comments kept) and adds a source naming this run. The config
names the tool that measured the figure and the definition of each figure (benchimport.py):
SGLang's and vLLM's `output_throughput` is tokens per second over the run, factbook's
single-stream figure is per request.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from factbook.commands.cli_options import add_json_option, add_repeatable, option_values, seconds
from factbook.errors import UsageError, visible


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench",
        help="benchmark an OpenAI-compatible server (tok/s, TTFT, TPOT, accept length)",
        description="Stream requests to URL/v1/chat/completions (or /v1/completions) and "
        "report single-stream tok/s, throughput at the given concurrency, TTFT and TPOT "
        "p50/p90 and the accept length where the server reports one.",
    )
    p.add_argument("--url", help="server base URL, e.g. http://127.0.0.1:8000 (required)")
    p.add_argument("--model", help="model id (default: the first of /v1/models)")
    p.add_argument("--concurrency", "-c", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--requests", type=int, help="number of timed requests")
    p.add_argument("--endpoint", choices=("chat", "completions"), default="chat")
    p.add_argument("--prompt", action="append", help="a prompt (repeatable)")
    p.add_argument("--warmup", type=int, default=1, help="untimed requests first (default 1)")
    p.add_argument("--timeout", type=seconds, default=600, help="seconds per request")
    p.add_argument("--api-key", help="sent as a Bearer token")
    p.add_argument(
        "--extra-body",
        metavar="JSON",
        help="merged into every request body, e.g. '{\"ignore_eos\": false}'",
    )
    add_json_option(p, "summary")
    p.add_argument("--record", metavar="FACT_ID", help="write the result into this fact")
    add_repeatable(
        p,
        "--config",
        metavar="KEY=VALUE",
        help="server configuration to record with the figure (repeatable; VALUE is YAML)",
    )
    p.set_defaults(handler=handle)
    actions = p.add_subparsers(dest="bench_action", metavar="ACTION")
    imp = actions.add_parser(
        "import",
        help="record a sglang.bench_serving JSONL or vllm bench serve --save-result JSON",
        description="Read a result file of SGLang's or vLLM's serving benchmark and record one "
        "of its figures (default output_throughput: tok/s over the run) in a benchmark fact, "
        "with the tool's configuration and the definition of each figure.",
    )
    imp.add_argument("file", metavar="FILE")
    imp.add_argument("--record", dest="import_record", metavar="FACT_ID", required=True)
    imp.add_argument("--tool", choices=("sglang", "vllm"), help="default: told by the keys")
    imp.add_argument("--line", type=int, help="which run of a JSONL file (default: the last)")
    imp.add_argument(
        "--figure",
        default="output_throughput",
        help="which figure becomes the value (output_throughput, median_tpot_ms, ...)",
    )
    imp.add_argument(
        "--force",
        action="store_true",
        help="record even when the fact already names a different metric",
    )
    imp.set_defaults(handler=handle_import)


def handle_import(args: argparse.Namespace) -> int:
    from factbook.integrations.benchimport import TOOLS, read_result, to_fact_values
    from factbook.knowledge.kb import load_kb

    run = read_result(Path(args.file), tool=TOOLS.get(args.tool or ""), line=args.line)
    values = to_fact_values(run, args.figure)
    fact = load_kb(Path(args.root)).get(args.import_record)
    if fact.get("metric") not in (None, values["metric"]) and not args.force:
        raise UsageError(
            f"{args.import_record} ({fact.location}) records metric '{fact.get('metric')}'; "
            f"this file's {args.figure} is '{values['metric']}' "
            f"({values['config']['definition']}); pick another fact or pass --force"
        )
    run_id = time.strftime("bench-import-%Y%m%dT%H%M%SZ", time.gmtime())
    note = f"{run.tool} result {run.source}, figure {args.figure}"
    path = record(Path(args.root), args.import_record, values, run_id=run_id, note=note)
    for note in run.notes:
        print(visible(note))
    print(f"recorded {args.import_record} = {values['value']} {values['unit']} in {path}")
    print(f"  {args.figure} ({run.tool}): {values['config']['definition']}")
    return 0


def _config_items(items: list[str]) -> dict[str, Any]:
    """`--config KEY=VALUE` pairs, each VALUE read as the fact file will read it back (the
    same parser, bounds and hidden-character check): yaml.safe_load of `[unclosed`, 5,000
    `[`, a 5,000-digit number or `2001-02-30` ended `bench` in a traceback."""
    from factbook.knowledge.yamlsrc import parse_located

    out: dict[str, Any] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        if not eq or not key:
            raise UsageError(f"--config wants KEY=VALUE, got '{item}'")
        if not raw:
            out[key] = ""
            continue
        doc, problems = parse_located(raw, f"--config {key}")
        if problems:
            raise UsageError(f"--config {key}: {problems[0].message}")
        out[key] = doc.data
    return out


def record(root: Path, fact_id: str, values: dict[str, Any], *, run_id: str, note: str) -> Path:
    """Write `to_fact_values` output into a benchmark fact; return the file it lives in."""
    from factbook.knowledge.kb import load_kb
    from factbook.store.writeback import update_fact

    kb = load_kb(root)
    fact = kb.get(fact_id)
    if fact.category != "benchmarks":
        raise UsageError(f"{fact_id} is a {fact.category} fact; --record wants a benchmark")
    config = dict(fact.get("config") or {})
    config.update(values["config"])
    fields: dict[str, Any] = {"unit": values["unit"], "config": config}
    if values.get("accept_len") is not None:
        fields["accept_len"] = values["accept_len"]
    if fact.get("metric") is None:
        fields["metric"] = values["metric"]
    source = {"run": run_id, "date": time.strftime("%Y-%m-%d", time.gmtime()), "note": note}
    return update_fact(
        root, fact_id, value=values["value"], status="verified", add_source=source,
        set_fields=fields,
    )  # fmt: skip


def handle(args: argparse.Namespace) -> int:
    if not args.url:
        raise UsageError("bench: --url is required (or: factbook bench import FILE --record ID)")
    from factbook.serving.benchclient import (
        DEFAULT_PROMPTS,
        run_benchmark,
        server_config,
        to_fact_values,
    )

    config = _config_items(args.config)
    try:
        extra = json.loads(args.extra_body) if args.extra_body else None
    except ValueError as exc:
        raise UsageError(f"--extra-body is not JSON: {exc}") from exc
    if extra is not None and not isinstance(extra, dict):
        raise UsageError("--extra-body must be a JSON object")
    result = run_benchmark(
        args.url,
        args.model,
        args.prompt or DEFAULT_PROMPTS,
        args.max_tokens,
        args.concurrency,
        num_requests=args.requests,
        extra_body=extra,
        **option_values(args, "endpoint", "warmup", "timeout", "api_key"),
    )
    summary = result.summary()
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        _print_summary(summary)
    if args.record:
        values = to_fact_values(result, {**server_config(result), **config})
        run_id = time.strftime("bench-%Y%m%dT%H%M%SZ", time.gmtime())
        note = f"factbook bench {args.url} C={args.concurrency} max_tokens={args.max_tokens}"
        path = record(Path(args.root), args.record, values, run_id=run_id, note=note)
        print(f"recorded {args.record} = {values['value']} {values['unit']} in {path}")
    return 0


def _print_summary(s: dict[str, Any]) -> None:
    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v * 1000:.1f} ms"

    head = f"{s['base_url']} model {s['model']} ({s['endpoint']}), C={s['concurrency']}"
    print(f"{head}, {s['requests']} requests x {s['max_tokens']} max tokens, {s['failed']} failed")
    single = s["single_stream_tok_s"]
    rate = "-" if single is None else f"{single:.2f}"
    print(f"  single-stream  {rate} tok/s (median per request)")
    total = f"{s['output_tokens']} tokens in {s['wall_s']:.2f} s"
    print(f"  throughput     {s['throughput_tok_s']:.2f} tok/s ({total})")
    print(f"  TTFT           p50 {ms(s['ttft_s']['p50'])}, p90 {ms(s['ttft_s']['p90'])}")
    print(f"  TPOT           p50 {ms(s['tpot_s']['p50'])}, p90 {ms(s['tpot_s']['p90'])}")
    accept = s["accept_length"]
    where = f" ({s['accept_length_source']})" if accept is not None else " (not reported)"
    print(f"  accept length  {'-' if accept is None else accept}{where}")
    for error in s["errors"]:
        print(f"  error: {error}")
