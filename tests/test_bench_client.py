"""The benchmark client against a real OpenAI-compatible server on loopback (tests/openai_server).

The server decodes a tiny random Llama greedily, so tokens, timings and (in speculative mode)
accept lengths are real measurements; nothing here is canned.
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers import module_or_skip

from factbook.commands.cli import run
from factbook.knowledge.kb import load_kb, load_kb_with_problems
from factbook.serving.benchclient import (
    BenchError,
    _pct,
    run_benchmark,
    server_config,
    to_fact_values,
)

module_or_skip("torch")
module_or_skip("transformers")
sys.path.insert(0, str(Path(__file__).resolve().parent))
openai_server = module_or_skip("openai_server")  # imports torch: only where a test runs
if TYPE_CHECKING:
    from openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.torch
PROMPTS = ["hello there", "the quick brown fox", "speculative decoding", "benchmarks"]


@pytest.fixture(scope="module")
def plain() -> OpenAIServer:
    with openai_server.OpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def spec() -> OpenAIServer:
    with openai_server.OpenAIServer(spec_steps=3) as server:
        yield server


def test_single_stream_measures_every_token(plain: OpenAIServer) -> None:
    result = run_benchmark(plain.url, None, PROMPTS, max_tokens=16, concurrency=1,
                           num_requests=3)  # fmt: skip
    assert result.model == openai_server.MODEL_ID  # taken from /v1/models
    assert len(result.requests) == 3 and all(r.ok for r in result.requests)
    for r in result.requests:
        assert r.output_tokens == 16 and r.tokens_from == "usage"  # ignore_eos honoured
        assert 0 < r.ttft_s < r.total_s
        assert r.tpot_s is not None and r.tpot_s > 0
    assert result.single_stream_tok_s is not None and result.single_stream_tok_s > 0
    assert result.throughput_tok_s == pytest.approx(48 / result.wall_s)
    assert result.accept_length is None and result.accept_length_source is None
    summary = result.summary()
    assert summary["ttft_s"]["p50"] <= summary["ttft_s"]["p90"]
    assert summary["failed"] == 0 and summary["output_tokens"] == 48


def test_concurrency_keeps_requests_in_flight_for_a_batching_server(plain: OpenAIServer) -> None:
    """What concurrency buys on a continuous-batching engine: the client keeps N requests in
    flight, so each forward of the server's engine serves several of them. Counted on the
    server (tokens per batched forward), not timed: the engine computes on the cores the
    rest of the suite shares, where a throughput race between two runs is decided by the
    load of the moment, not by the client."""
    per_forward = {}
    for concurrency, requests in ((1, 4), (4, 8)):
        plain.engine.reset_stats()
        result = run_benchmark(plain.url, None, PROMPTS, max_tokens=24,
                               concurrency=concurrency, num_requests=requests)  # fmt: skip
        assert result.output_tokens == requests * 24 and len(result.ok) == requests
        stats = plain.engine.stats()
        per_forward[concurrency] = stats["tokens"] / stats["forwards"]
    assert per_forward[1] == 1.0, per_forward  # one request at a time: one token a forward
    assert per_forward[4] >= 2.0, per_forward  # 8 requests, 4 at a time: batched


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_counts_chunks_when_the_server_sends_no_usage(plain: OpenAIServer, endpoint: str) -> None:
    result = run_benchmark(
        plain.url, openai_server.MODEL_ID, PROMPTS, max_tokens=12, num_requests=2,
        endpoint=endpoint,
        extra_body={"stream_options": {"include_usage": False}},
    )  # fmt: skip
    assert [r.tokens_from for r in result.requests] == ["chunks", "chunks"]
    # a lower bound: special tokens (BOS/EOS under ignore_eos) stream as empty text, as
    # with skip_special_tokens on real servers; usage, when sent, is exact (test above)
    assert all(9 <= r.output_tokens <= 12 for r in result.requests)


def test_accept_length_per_request_sglang_style(spec: OpenAIServer) -> None:
    result = run_benchmark(spec.url, None, PROMPTS, max_tokens=24, num_requests=4)
    assert result.accept_length_source.startswith("response")
    # one verify step yields 1 to num_steps + 1 tokens; the 1-layer draft often agrees
    assert 1.0 < result.accept_length <= 4.0
    per_request = [r.accept_length for r in result.requests]
    assert all(a is not None and 1.0 <= a <= 4.0 for a in per_request)
    assert server_config(result)["speculative_num_steps"] == 3


def test_accept_length_from_server_info_when_responses_lack_it(spec: OpenAIServer) -> None:
    result = run_benchmark(spec.url, None, PROMPTS, max_tokens=16, num_requests=2,
                           extra_body={"return_spec_tokens_details": False})  # fmt: skip
    assert result.accept_length_source.startswith("server_info")
    assert result.accept_length == pytest.approx(spec.engine.avg_accept_length(), rel=0.2)


def test_accept_length_from_vllm_metrics() -> None:
    with openai_server.OpenAIServer(spec_steps=3, flavor="vllm") as server:
        result = run_benchmark(server.url, None, PROMPTS, max_tokens=16, num_requests=2)
        verify_steps, accepted = server.engine.draft_counters()
    assert verify_steps > 0 and accepted >= 0
    assert result.accept_length_source.startswith("metrics")
    assert 1.0 < result.accept_length <= 4.0
    assert server_config(result) == {}  # vLLM has no /server_info


def test_accept_length_null_when_the_server_reports_none() -> None:
    with openai_server.OpenAIServer(spec_steps=2, flavor="plain") as server:
        result = run_benchmark(server.url, None, PROMPTS, max_tokens=8, num_requests=2)
    assert result.accept_length is None and result.accept_length_source is None


def test_failures_are_bench_errors(plain: OpenAIServer) -> None:
    with pytest.raises(BenchError, match="warm-up request failed: HTTP 404"):
        run_benchmark(plain.url, "no-such-model", PROMPTS, max_tokens=4)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nobody listens there
    with pytest.raises(BenchError, match="cannot reach"):
        run_benchmark(f"http://127.0.0.1:{port}", None, PROMPTS, max_tokens=4)
    with pytest.raises(BenchError, match="not an http"):
        run_benchmark("ftp://x", "m", PROMPTS)


def test_nearest_rank_percentiles() -> None:
    values = [float(v) for v in range(1, 11)]
    assert (_pct(values, 50), _pct(values, 90), _pct(values, 100)) == (5.0, 9.0, 10.0)
    assert _pct([], 50) is None


def test_fact_values_pick_the_metric_by_concurrency(plain: OpenAIServer) -> None:
    one = run_benchmark(plain.url, None, PROMPTS, max_tokens=8, num_requests=2)
    values = to_fact_values(one, {"engine": "tiny", "flags": ["--tp 1"]})
    assert values["metric"] == "single_stream_tok_s" and values["unit"] == "tok/s"
    assert values["value"] == round(one.single_stream_tok_s, 2)
    assert values["config"]["engine"] == "tiny" and values["config"]["concurrency"] == 1
    assert values["accept_len"] is None
    two = run_benchmark(plain.url, None, PROMPTS, max_tokens=8, concurrency=2)
    values = to_fact_values(two)
    assert values["metric"] == "throughput_c2_tok_s"
    assert values["value"] == round(two.throughput_tok_s, 2)


def test_bench_cli_records_into_a_fact(
    spec: OpenAIServer, kb_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fact_id = "bench.eagle3.6draft_steps5.single_stream"  # block-style config, comments around
    before = load_kb(kb_copy).get(fact_id)
    text_before = before.file and (kb_copy / before.file).read_text()
    code = run(
        ["--root", str(kb_copy), "bench", "--url", spec.url, "--max-tokens", "16",
         "--requests", "2", "--config", "engine=tiny-test", "--record", fact_id]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "single-stream" in out and f"recorded {fact_id}" in out
    kb, problems = load_kb_with_problems(kb_copy)
    assert problems == []
    after = kb.get(fact_id)
    assert after.value != before.value and after.value > 0
    assert after.status == "verified" and after.unit == "tok/s"
    assert 1.0 < after.get("accept_len") <= 4.0
    config = after.get("config")
    assert config["engine"] == "tiny-test" and config["concurrency"] == 1
    assert config["speculative_num_steps"] == 3  # reported by the server
    assert config["aux_hidden_state_layers"] == [-1, 2, 30]  # the fact's own config is kept
    assert len(after.sources) == len(before.sources) + 1
    assert after.sources[-1].run.startswith("bench-")
    assert "# " in text_before and text_before.splitlines()[0] in (kb_copy / after.file).read_text()


def test_bench_cli_records_into_a_flow_config_fact(spec: OpenAIServer, kb_copy: Path) -> None:
    fact_id = "bench.sglang.aqmedai_eagle3.single_stream"
    code = run(["--root", str(kb_copy), "bench", "--url", spec.url, "--max-tokens", "8",
                "--requests", "1", "--record", fact_id])  # fmt: skip
    assert code == 0
    after = load_kb(kb_copy).get(fact_id)
    assert after.get("config")["drafter"] == "AQ-MedAI/Kimi-K2-Instruct-eagle3"
    assert after.get("config")["max_tokens"] == 8 and after.get("accept_len") is not None


def test_bench_cli_json_and_extra_body(
    plain: OpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run(["bench", "--url", plain.url + "/v1", "--max-tokens", "6", "--requests", "1",
                "--json", "--endpoint", "completions",
                "--extra-body", '{"stream_options": {"include_usage": false}}'])  # fmt: skip
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["tokens_from"] == ["chunks"] and summary["endpoint"] == "completions"
    assert run(["bench", "--url", plain.url, "--extra-body", "[1]"]) == 2


def test_client_file_runs_alone_on_a_box(plain: OpenAIServer, tmp_path: Path) -> None:
    """Copied out of the package, as it is shipped to a box: stdlib only, JSON out."""
    import subprocess

    import factbook.serving.benchclient as module

    alone = tmp_path / "benchclient.py"
    shutil.copy(module.__file__, alone)
    args = ["--url", plain.url, "--max-tokens", "5", "--requests", "1"]
    proc = subprocess.run([sys.executable, "-I", str(alone), *args], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["output_tokens"] == 5 and summary["failed"] == 0
    dead = subprocess.run([sys.executable, "-I", str(alone), "--url", "http://127.0.0.1:9"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert dead.returncode == 3 and "cannot reach" in json.loads(dead.stdout)["error"]


def test_bench_cli_refuses_a_non_benchmark_fact(plain: OpenAIServer, kb_copy: Path) -> None:
    code = run(["--root", str(kb_copy), "bench", "--url", plain.url, "--max-tokens", "4",
                "--requests", "1", "--record", "pit.topk1-num-draft-tokens"])  # fmt: skip
    assert code == 2
