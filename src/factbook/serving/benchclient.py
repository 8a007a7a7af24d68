"""Benchmark an OpenAI-compatible server (SGLang, vLLM) the way the seeds' tables were measured.

Standard library only (http.client and threads), so the same file runs on the box. Every
request streams (`stream: true`, `stream_options.include_usage`), so per request we see:

- TTFT: send to the first chunk that carries text;
- TPOT: (total - TTFT) / (output tokens - 1);
- output tokens: `usage.completion_tokens` of the final chunk, else the number of text chunks;
- the accept length, where the server reports one: SGLang per request
  (`sglext.spec_tokens_details.spec_accept_length` with `return_spec_tokens_details`, or
  `meta_info`), else SGLang's `/server_info` `internal_states[].avg_spec_accept_length`, else
  vLLM's `/metrics` spec_decode counters (1 + accepted / drafts over the run); null if none.

`run_benchmark(...)` returns a BenchResult; `to_fact_values(result, server_config)` turns it into
the fields of a benchmark fact (value, unit, metric, accept_len, config) for write-back.
The file also runs alone on a box without factbook: `python3 benchclient.py --url URL -c 8`
prints the summary as JSON.
"""

from __future__ import annotations

import http.client
import json
import queue
import re
import statistics
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

try:
    from factbook.errors import BenchError
except ImportError:  # shipped alone to a box (no factbook package there)

    class BenchError(Exception):  # type: ignore[no-redef]
        """Stand-in for factbook.errors.BenchError when this file runs as a script."""

        exit_code = 3


DEFAULT_PROMPTS = (
    "Explain in one paragraph why speculative decoding speeds up single-stream generation.",
    "List the steps to benchmark a language model server fairly.",
    "Write a short story about a GPU that could not sleep.",
    "What is the difference between throughput and latency?",
)


@dataclass
class RequestResult:
    """One streamed request, timed on the client."""

    ok: bool
    ttft_s: float | None = None
    total_s: float | None = None
    output_tokens: int = 0
    tokens_from: str = "usage"  # "usage" or "chunks"
    accept_length: float | None = None
    error: str | None = None

    @property
    def tpot_s(self) -> float | None:
        if not self.ok or self.output_tokens < 2 or self.ttft_s is None or self.total_s is None:
            return None
        return (self.total_s - self.ttft_s) / (self.output_tokens - 1)

    @property
    def tok_s(self) -> float | None:
        """Output tokens per second of this request, TTFT included (what a user sees)."""
        if not self.ok or not self.total_s:
            return None
        return self.output_tokens / self.total_s


@dataclass
class BenchResult:
    """A run at one concurrency: per request results and the figures the facts record."""

    base_url: str
    model: str
    endpoint: str
    concurrency: int
    max_tokens: int
    wall_s: float
    requests: list[RequestResult]
    accept_length: float | None = None
    accept_length_source: str | None = None
    server_info: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> list[RequestResult]:
        return [r for r in self.requests if r.ok]

    @property
    def output_tokens(self) -> int:
        return sum(r.output_tokens for r in self.ok)

    @property
    def throughput_tok_s(self) -> float:
        """All output tokens over the wall time: the seeds' "C=128 throughput"."""
        return self.output_tokens / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def single_stream_tok_s(self) -> float | None:
        """Median per-request output tok/s: the seeds' "single-stream tok/s" at C=1."""
        rates = [r.tok_s for r in self.ok if r.tok_s is not None]
        return statistics.median(rates) if rates else None

    def percentiles(self, name: str) -> dict[str, float | None]:
        values = sorted(v for v in (getattr(r, name) for r in self.ok) if v is not None)
        return {"p50": _pct(values, 50), "p90": _pct(values, 90)}

    def summary(self) -> dict[str, Any]:
        """Plain data for JSON output and run records."""
        return {
            "base_url": self.base_url,
            "model": self.model,
            "endpoint": self.endpoint,
            "concurrency": self.concurrency,
            "max_tokens": self.max_tokens,
            "requests": len(self.requests),
            "failed": len(self.requests) - len(self.ok),
            "output_tokens": self.output_tokens,
            "wall_s": round(self.wall_s, 4),
            "throughput_tok_s": round(self.throughput_tok_s, 2),
            "single_stream_tok_s": _round(self.single_stream_tok_s),
            "ttft_s": {k: _round(v, 4) for k, v in self.percentiles("ttft_s").items()},
            "tpot_s": {k: _round(v, 5) for k, v in self.percentiles("tpot_s").items()},
            "accept_length": _round(self.accept_length, 3),
            "accept_length_source": self.accept_length_source,
            "tokens_from": sorted({r.tokens_from for r in self.ok}),
            "errors": sorted({r.error for r in self.requests if r.error})[:5],
        }


def _pct(values: list[float], pct: float) -> float | None:
    """Nearest-rank percentile (no interpolation: every figure is a measured request)."""
    if not values:
        return None
    rank = max(1, -(-len(values) * pct // 100))
    return values[int(rank) - 1]


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


class _Client:
    """One HTTP(S) origin; a new connection per request keeps threads independent."""

    def __init__(self, base_url: str, timeout: float, api_key: str | None = None):
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BenchError(f"not an http(s) URL: {base_url}")
        self.https = parts.scheme == "https"
        self.host, self.port = parts.hostname, parts.port
        self.prefix = parts.path.rstrip("/")
        if self.prefix.endswith("/v1"):
            self.prefix = self.prefix[:-3]
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"

    def connect(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=self.timeout)

    def get(self, path: str) -> tuple[int, bytes]:
        conn = self.connect()
        try:
            conn.request("GET", self.prefix + path, headers=self.headers)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def get_json(self, path: str) -> Any:
        try:
            status, body = self.get(path)
        except (OSError, http.client.HTTPException):
            return None
        if status != 200:
            return None
        try:
            return json.loads(body)
        except ValueError:
            return None


def list_models(base_url: str, *, timeout: float = 10, api_key: str | None = None) -> list[str]:
    """Model ids the server serves (GET /v1/models)."""
    client = _Client(base_url, timeout, api_key)
    try:
        status, body = client.get("/v1/models")
    except (OSError, http.client.HTTPException) as exc:
        raise BenchError(f"{base_url}: cannot reach the server ({exc})") from exc
    if status != 200:
        raise BenchError(f"{base_url}/v1/models answered HTTP {status}")
    return [str(m.get("id")) for m in json.loads(body).get("data", [])]


def _payload(
    endpoint: str, model: str, prompt: str, max_tokens: int, extra: dict[str, Any]
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
        # SGLang and vLLM honour ignore_eos, so every request yields max_tokens tokens
        "ignore_eos": True,
        # SGLang >= 0.5.23: per request speculative stats in sglext.spec_tokens_details
        "return_spec_tokens_details": True,
    }
    if endpoint == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    body.update(extra)
    return body


def _chunk_text(chunk: dict[str, Any]) -> str:
    parts = []
    for choice in chunk.get("choices") or []:
        delta = choice.get("delta") or {}
        parts.append(str(delta.get("content") or delta.get("reasoning_content") or ""))
        parts.append(str(choice.get("text") or ""))
    return "".join(parts)


def _accept_from_chunk(chunk: dict[str, Any]) -> float | None:
    """Per request accept length in SGLang's extension fields, when present."""
    details = (chunk.get("sglext") or {}).get("spec_tokens_details")
    if isinstance(details, list):
        details = details[0] if details else None
    candidates = [details or {}, chunk.get("meta_info") or {}]
    for choice in chunk.get("choices") or []:
        candidates.append(choice.get("meta_info") or {})
    for info in candidates:
        value = info.get("spec_accept_length")
        if isinstance(value, (int, float)) and value > 0:
            return float(value)
    return None


def stream_one(client: _Client, endpoint: str, body: dict[str, Any]) -> RequestResult:
    """Send one streaming request and time it."""
    path = "/v1/chat/completions" if endpoint == "chat" else "/v1/completions"
    conn = client.connect()
    start = time.perf_counter()
    ttft = None
    chunks = 0
    usage_tokens = None
    accept = None
    try:
        conn.request("POST", client.prefix + path, json.dumps(body), client.headers)
        resp = conn.getresponse()
        if resp.status != 200:
            text = resp.read()[:300].decode("utf-8", "replace")
            return RequestResult(ok=False, error=f"HTTP {resp.status}: {text}")
        while True:
            line = resp.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                break
            chunk = json.loads(data)
            if "error" in chunk:
                return RequestResult(ok=False, error=str(chunk["error"])[:300])
            if _chunk_text(chunk):
                chunks += 1
                if ttft is None:
                    ttft = time.perf_counter() - start
            usage = chunk.get("usage") or {}
            if isinstance(usage.get("completion_tokens"), int):
                usage_tokens = usage["completion_tokens"]
            accept = _accept_from_chunk(chunk) or accept
        total = time.perf_counter() - start
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return RequestResult(ok=False, error=f"{type(exc).__name__}: {exc}")
    finally:
        conn.close()
    tokens = usage_tokens if usage_tokens is not None else chunks
    return RequestResult(
        ok=True,
        ttft_s=ttft if ttft is not None else total,
        total_s=total,
        output_tokens=tokens,
        tokens_from="usage" if usage_tokens is not None else "chunks",
        accept_length=accept,
    )


_VLLM_ACCEPTED = re.compile(
    r"^vllm:spec_decode_num_accepted_tokens(?:_total)?(?:\{[^}]*\})?\s+(\S+)"
)
_VLLM_DRAFTS = re.compile(r"^vllm:spec_decode_num_drafts(?:_total)?(?:\{[^}]*\})?\s+(\S+)")


def _vllm_counters(client: _Client) -> tuple[float, float] | None:
    try:
        status, body = client.get("/metrics")
    except (OSError, http.client.HTTPException):
        return None
    if status != 200:
        return None
    accepted = drafts = 0.0
    seen = False
    for line in body.decode("utf-8", "replace").splitlines():
        if m := _VLLM_ACCEPTED.match(line):
            accepted += float(m.group(1))
            seen = True
        elif m := _VLLM_DRAFTS.match(line):
            drafts += float(m.group(1))
            seen = True
    return (accepted, drafts) if seen else None


def server_info(client: _Client) -> dict[str, Any]:
    """SGLang's /server_info (or the older /get_server_info); {} elsewhere."""
    for path in ("/server_info", "/get_server_info"):
        info = client.get_json(path)
        if isinstance(info, dict):
            return info
    return {}


def _server_accept(info: dict[str, Any]) -> float | None:
    values = [
        float(s["avg_spec_accept_length"])
        for s in info.get("internal_states") or []
        if isinstance(s, dict) and isinstance(s.get("avg_spec_accept_length"), (int, float))
    ]
    return statistics.fmean(values) if values else None


def run_benchmark(
    base_url: str,
    model: str | None,
    prompts: Sequence[str] = DEFAULT_PROMPTS,
    max_tokens: int = 256,
    concurrency: int = 1,
    *,
    num_requests: int | None = None,
    endpoint: str = "chat",
    warmup: int = 1,
    timeout: float = 600,
    api_key: str | None = None,
    extra_body: dict[str, Any] | None = None,
) -> BenchResult:
    """Send `num_requests` streaming requests (default: max(len(prompts), concurrency) at C=1,
    else 2 * concurrency), `concurrency` at a time, after `warmup` untimed ones."""
    if concurrency < 1 or max_tokens < 1:
        raise BenchError("concurrency and max_tokens must be at least 1")
    if endpoint not in ("chat", "completions"):
        raise BenchError(f"unknown endpoint '{endpoint}' (chat, completions)")
    if not prompts:
        raise BenchError("no prompts")
    client = _Client(base_url, timeout, api_key)
    model = model or (list_models(base_url, timeout=timeout, api_key=api_key) or [""])[0]
    if num_requests is None:
        num_requests = max(len(prompts), concurrency) if concurrency == 1 else 2 * concurrency
    extra = dict(extra_body or {})
    for i in range(warmup):
        body = _payload(endpoint, model, prompts[i % len(prompts)], min(max_tokens, 8), extra)
        warm = stream_one(client, endpoint, body)
        if not warm.ok:
            raise BenchError(f"{base_url}: warm-up request failed: {warm.error}")
    before = _vllm_counters(client)
    jobs: queue.Queue[int] = queue.Queue()
    for i in range(num_requests):
        jobs.put(i)
    results: list[RequestResult | None] = [None] * num_requests

    def worker() -> None:
        while True:
            try:
                i = jobs.get_nowait()
            except queue.Empty:
                return
            body = _payload(endpoint, model, prompts[i % len(prompts)], max_tokens, extra)
            results[i] = stream_one(client, endpoint, body)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    done = [r for r in results if r is not None]
    if not any(r.ok for r in done):
        errors = sorted({r.error or "" for r in done})
        raise BenchError(f"{base_url}: every request failed: {'; '.join(errors)[:500]}")
    result = BenchResult(base_url, model, endpoint, concurrency, max_tokens, wall, done)
    result.server_info = server_info(client)
    _fill_accept(result, client, before)
    return result


def _fill_accept(result: BenchResult, client: _Client, before: tuple[float, float] | None) -> None:
    per_request = [(r.accept_length, r.output_tokens) for r in result.ok if r.accept_length]
    if per_request:
        weight = sum(n for _, n in per_request) or len(per_request)
        result.accept_length = sum(a * (n or 1) for a, n in per_request) / weight
        result.accept_length_source = "response: spec_accept_length (token-weighted)"
        return
    from_info = _server_accept(result.server_info)
    if from_info is not None:
        result.accept_length = from_info
        result.accept_length_source = "server_info: internal_states.avg_spec_accept_length"
        return
    after = _vllm_counters(client)
    if before is not None and after is not None and after[1] > before[1]:
        accepted, drafts = after[0] - before[0], after[1] - before[1]
        result.accept_length = 1 + accepted / drafts
        result.accept_length_source = "metrics: 1 + spec_decode accepted / drafts"


SERVER_KEYS = (
    "model_path", "tp_size", "dp_size", "attention_backend", "speculative_algorithm",
    "speculative_draft_model_path", "speculative_num_steps", "speculative_eagle_topk",
    "speculative_num_draft_tokens", "cuda_graph_max_bs", "disable_cuda_graph",
    "num_continuous_decode_steps", "mem_fraction_static", "max_running_requests", "version",
)  # fmt: skip


def server_config(result: BenchResult) -> dict[str, Any]:
    """The configuration the server reports about itself (SGLang), trimmed to what matters."""
    info = result.server_info
    return {k: info[k] for k in SERVER_KEYS if info.get(k) is not None}


SINGLE_STREAM_DEFINITION = (
    "median over requests of one request's output tokens / its total time (TTFT included), "
    "tok/s per request; at concurrency 1"
)
THROUGHPUT_DEFINITION = (
    "output tokens of all timed requests / wall time of the timed phase, tok/s over the run, "
    "summed across concurrent requests (as SGLang's and vLLM's output_throughput)"
)


def to_fact_values(
    result: BenchResult, server_config: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The fields of a benchmark fact: value, unit, metric, accept_len, config.

    At C=1 the value is the single-stream tok/s, above it the throughput; the config holds
    the server configuration given (and what the server reports), plus how it was measured.
    """
    single = result.concurrency == 1
    value = result.single_stream_tok_s if single else result.throughput_tok_s
    summary = result.summary()
    config: dict[str, Any] = {**(server_config or {})}
    config.update(
        {
            "concurrency": result.concurrency,
            "max_tokens": result.max_tokens,
            "requests": summary["requests"],
            "endpoint": result.endpoint,
            "ttft_p50_s": summary["ttft_s"]["p50"],
            "ttft_p90_s": summary["ttft_s"]["p90"],
            "tpot_p50_s": summary["tpot_s"]["p50"],
            "tpot_p90_s": summary["tpot_s"]["p90"],
            "throughput_tok_s": summary["throughput_tok_s"],
        }
    )
    if result.accept_length_source:
        config["accept_length_source"] = result.accept_length_source
    # stated as benchimport.py states SGLang's and vLLM's figures: the two are not the same
    config["measured_by"] = "factbook bench"
    config["definition"] = SINGLE_STREAM_DEFINITION if single else THROUGHPUT_DEFINITION
    return {
        "value": round(value or 0.0, 2),
        "unit": "tok/s",
        # the knowledge base's metric names: single_stream_tok_s, throughput_c128_tok_s, ...
        "metric": "single_stream_tok_s" if single else f"throughput_c{result.concurrency}_tok_s",
        "accept_len": _round(result.accept_length, 2),
        "config": config,
    }


def result_from_dict(data: dict[str, Any]) -> BenchResult:
    """A BenchResult back from `asdict` (run records store it so)."""
    data = dict(data)
    data["requests"] = [RequestResult(**r) for r in data.get("requests", [])]
    return BenchResult(**data)


def result_to_dict(result: BenchResult) -> dict[str, Any]:
    return asdict(result)


def main(argv: Sequence[str] | None = None) -> int:
    """`python3 benchclient.py --url URL [-c C] [--max-tokens N]`: the summary as JSON."""
    import argparse

    p = argparse.ArgumentParser(description="benchmark an OpenAI-compatible server")
    p.add_argument("--url", required=True)
    p.add_argument("--model")
    p.add_argument("-c", "--concurrency", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--requests", type=int)
    p.add_argument("--endpoint", choices=("chat", "completions"), default="chat")
    args = p.parse_args(argv)
    try:
        result = run_benchmark(
            args.url, args.model, DEFAULT_PROMPTS, args.max_tokens, args.concurrency,
            num_requests=args.requests, endpoint=args.endpoint,
        )  # fmt: skip
    except BenchError as exc:
        print(json.dumps({"error": str(exc)}))
        return exc.exit_code
    print(json.dumps({**result.summary(), "server_config": server_config(result)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
