"""`factbook bench import`: SGLang's bench_serving JSONL (a file its own code wrote, live against
tests/openai_server.py when the sglang venv is here, and one kept from such a run) and vLLM's
`bench serve --save-result` JSON (built to the keys vllm/benchmarks/serve.py writes)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from factbook.integrations.benchimport import DEFINITIONS
from factbook.knowledge.kb import load_kb
from factbook.serving.benchclient import BenchResult, RequestResult
from factbook.serving.benchclient import to_fact_values as client_values
from tests.helpers import REPO, cli, fact, make_kb

KEPT = REPO / "tests" / "data" / "sglang_bench_serving.jsonl"
SGLANG_PY = REPO / ".venvs" / "sglang" / "bin" / "python"


def _kb(root: Path) -> Path:
    facts = []
    for fact_id, metric in [
        ("bench.sglang.c2", None),
        ("bench.sglang.single", "single_stream_tok_s"),
        ("bench.vllm.c4", "throughput_c4_tok_s"),
        ("bench.vllm.tpot", None),
    ]:
        f = fact(fact_id, "cpu.threads", category="benchmarks", value=1.0, unit="tok/s")
        f.pop("check")
        if metric:
            f["metric"] = metric
        facts.append(f)
    return make_kb(root, facts)


def _vllm_result(path: Path) -> Path:
    """A result as `vllm bench serve --save-result` writes it: its setup keys, the benchmark
    dict and per-metric mean/median/std/pNN (default percentiles 99), indented JSON."""
    data = {
        "date": "20261201-001500",
        "endpoint_type": "openai-chat",
        "backend": "openai-chat",
        "label": None,
        "model_id": "moonshotai/Kimi-K2.5",
        "tokenizer_id": "moonshotai/Kimi-K2.5",
        "num_prompts": 64,
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": 4,
        "duration": 40.0,
        "completed": 64,
        "failed": 0,
        "total_input_tokens": 65536,
        "total_output_tokens": 16384,
        "request_throughput": 1.6,
        "request_goodput": None,
        "output_throughput": 409.6,
        "total_token_throughput": 2048.0,
        "max_output_tokens_per_s": 520.0,
        "max_concurrent_requests": 4,
        "rtfx": 0.0,
        "spec_decode_acceptance_rate": 42.5,
        "spec_decode_acceptance_length": 2.3,
        "spec_decode_num_drafts": 4000,
        "mean_ttft_ms": 180.0, "median_ttft_ms": 170.0, "std_ttft_ms": 20.0, "p99_ttft_ms": 260.0,
        "mean_tpot_ms": 9.1, "median_tpot_ms": 8.9, "std_tpot_ms": 0.5, "p99_tpot_ms": 11.0,
        "mean_itl_ms": 20.1, "median_itl_ms": 19.0, "std_itl_ms": 3.0, "p99_itl_ms": 30.0,
        "mean_e2el_ms": 2500.0, "median_e2el_ms": 2450.0, "std_e2el_ms": 90.0,
        "p99_e2el_ms": 2800.0,
    }  # fmt: skip
    path.write_text(json.dumps(data, indent=2))
    return path


def _fact(kb: Path, fact_id: str):
    return load_kb(kb).get(fact_id)


def test_sglang_file_written_by_sglang_is_recorded_with_definitions(tmp_path: Path) -> None:
    kb = _kb(tmp_path / "kb")
    code, out, err = cli(kb, "bench", "import", str(KEPT), "--record", "bench.sglang.c2")
    assert code == 0, err
    run = json.loads(KEPT.read_text().splitlines()[-1].replace("Infinity", "1e999"))
    f = _fact(kb, "bench.sglang.c2")
    assert f.value == round(run["output_throughput"], 2) and f.unit == "tok/s"
    assert f.status == "verified"
    assert f.get("metric") == "throughput_c2_tok_s"
    config = f.get("config")
    assert config["measured_by"] == "sglang.bench_serving"
    assert config["definition"] == DEFINITIONS["output_throughput"]
    assert "over the run" in config["definition"] and "not per request" in config["definition"]
    assert config["request_rate"] == "inf"  # sglang writes the non-JSON token Infinity
    assert config["max_concurrency"] == 2 and config["backend"] == "sglang-oai"
    assert config["server_model_path"] == "tiny-llama-bytes"
    assert config["figures"]["median_tpot_ms"] == round(run["median_tpot_ms"], 3)
    assert set(config["definitions"]) >= {"output_throughput", "tpot_ms", "ttft_ms"}
    assert f.sources[-1].note.startswith(f"sglang.bench_serving result {KEPT}:1")
    assert "tok/s over the run" in out
    # the YAML stays plain (no Python tags), readable by any YAML reader
    yaml.safe_load((kb / "facts" / "facts.yaml").read_text())


def test_vllm_save_result_json(tmp_path: Path) -> None:
    kb = _kb(tmp_path / "kb")
    path = _vllm_result(tmp_path / "openai-chat-infqps-concurrency4-Kimi-K2.5.json")
    code, _, err = cli(kb, "bench", "import", str(path), "--record", "bench.vllm.c4")
    assert code == 0, err
    f = _fact(kb, "bench.vllm.c4")
    assert f.value == 409.6 and f.get("accept_len") == 2.3
    config = f.get("config")
    assert config["measured_by"] == "vllm bench serve"
    assert config["model_id"] == "moonshotai/Kimi-K2.5" and config["request_rate"] == "inf"
    assert config["figures"]["median_e2e_latency_ms"] == 2450.0  # vLLM's e2el, mapped
    assert config["figures"]["total_throughput"] == 2048.0  # total_token_throughput
    assert "accept_length" in config["definitions"]
    code, _, err = cli(
        kb, "bench", "import", str(path), "--record", "bench.vllm.tpot", "--figure",
        "median_tpot_ms",
    )  # fmt: skip
    assert code == 0, err
    tpot = _fact(kb, "bench.vllm.tpot")
    assert tpot.value == 8.9 and tpot.unit == "ms" and tpot.get("metric") == "median_tpot_ms"
    assert "per request" in tpot.get("config")["definition"]


def test_a_different_metric_is_refused_unless_forced(tmp_path: Path) -> None:
    kb = _kb(tmp_path / "kb")
    before = (kb / "facts" / "facts.yaml").read_text()
    code, _, err = cli(kb, "bench", "import", str(KEPT), "--record", "bench.sglang.single")
    assert code == 2
    assert "records metric 'single_stream_tok_s'" in err and "throughput_c2_tok_s" in err
    assert (kb / "facts" / "facts.yaml").read_text() == before
    code, _, err = cli(
        kb, "bench", "import", str(KEPT), "--record", "bench.sglang.single", "--force"
    )
    assert code == 0, err
    assert _fact(kb, "bench.sglang.single").get("metric") == "single_stream_tok_s"


def test_bad_files_are_one_line_errors(tmp_path: Path) -> None:
    kb = _kb(tmp_path / "kb")
    jsonl = tmp_path / "runs.jsonl"
    good = KEPT.read_text().splitlines()[-1]
    jsonl.write_text(f"{good}\n{{not json\n")
    code, _, err = cli(kb, "bench", "import", str(jsonl), "--record", "bench.sglang.c2")
    assert code == 2 and f"{jsonl}:2: not JSON" in err and "Traceback" not in err
    jsonl.write_text(f"{good}\n\n{good}\n")
    code, _, err = cli(
        kb, "bench", "import", str(jsonl), "--record", "bench.sglang.c2", "--line", "2"
    )
    assert code == 2 and "no run on line 2 (runs on lines 1, 3)" in err
    other = tmp_path / "other.json"
    other.write_text('{"accuracy": 0.9}')
    code, _, err = cli(kb, "bench", "import", str(other), "--record", "bench.sglang.c2")
    assert code == 2 and "neither an sglang.bench_serving nor a vllm bench serve result" in err
    code, _, err = cli(kb, "bench", "import", str(tmp_path / "missing.json"), "--record", "x")
    assert code == 2 and "cannot read" in err
    code, _, err = cli(kb, "bench", "import", str(KEPT), "--record", "no.such.fact")
    assert code == 2 and "no fact with id 'no.such.fact'" in err
    code, _, err = cli(kb, "bench")
    assert code == 2 and "--url is required" in err


@pytest.mark.parametrize(
    ("name", "make", "said"),
    [
        ("fifo", lambda p: os.mkfifo(p), "not a regular file"),
        ("latin1", lambda p: p.write_bytes(b'{"x": "\xe9"}'), "not UTF-8"),
        ("deep", lambda p: p.write_text("[" * 100_000 + "]" * 100_000), ":1: not JSON"),
        ("folder", lambda p: p.mkdir(), "is a folder"),
    ],
)
def test_hostile_result_files_are_refused_quickly(tmp_path: Path, name, make, said) -> None:
    """A FIFO never blocks, a deep document never overflows the stack: one line, exit 2."""
    kb = _kb(tmp_path / "kb")
    path = tmp_path / f"{name}.json"
    make(path)
    code, _, err = cli(kb, "bench", "import", str(path), "--record", "bench.sglang.c2")
    assert code == 2 and said in err and "Traceback" not in err, err


def test_factbook_client_states_its_definitions_the_same_way() -> None:
    requests = [RequestResult(ok=True, output_tokens=10, ttft_s=0.1, total_s=1.0)]
    single = client_values(BenchResult("u", "m", "chat", 1, 10, 1.0, requests))["config"]
    many = client_values(BenchResult("u", "m", "chat", 8, 10, 1.0, requests * 8))["config"]
    assert single["measured_by"] == many["measured_by"] == "factbook bench"
    assert "per request" in single["definition"]
    assert "over the run" in many["definition"]


@pytest.mark.sglang
@pytest.mark.torch
def test_live_sglang_bench_serving_against_the_loopback_server(tmp_path: Path) -> None:
    """sglang 0.5.23's own benchmark writes the file; factbook reads what it wrote."""
    if not SGLANG_PY.exists():
        pytest.skip("no sglang venv (.venvs/sglang): scripts/sglang-venv makes it")
    pytest.importorskip("transformers")
    from openai_server import OpenAIServer

    # sglang's dataset module imports HF `datasets` at import time though random-ids never
    # uses it; a stand-in keeps the benchmark importable where `datasets` is not installed
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "datasets.py").write_text(
        "def load_dataset(*a, **k):\n    raise RuntimeError('datasets is not installed')\n"
    )
    tokenizer = tmp_path / "tokenizer"
    env = {**os.environ, "PYTHONPATH": str(stubs), "HF_HUB_OFFLINE": "1"}
    subprocess.run(
        [str(SGLANG_PY), str(REPO / "tests" / "byte_tokenizer.py"), str(tokenizer)],
        check=True, env=env, timeout=300, capture_output=True,
    )  # fmt: skip
    out = tmp_path / "run.jsonl"
    with OpenAIServer() as server:
        proc = subprocess.run(
            [
                str(SGLANG_PY), "-m", "sglang.benchmark.serving", "--backend", "sglang-oai",
                "--base-url", server.url, "--dataset-name", "random-ids",
                "--random-input-len", "16", "--random-output-len", "8", "--num-prompts", "4",
                "--max-concurrency", "2", "--tokenizer", str(tokenizer),
                "--model", "tiny-llama-bytes", "--output-file", str(out),
            ],
            env=env, timeout=600, capture_output=True, text=True,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    kb = _kb(tmp_path / "kb")
    code, _, err = cli(kb, "bench", "import", str(out), "--record", "bench.sglang.c2")
    assert code == 0, err
    written = json.loads(out.read_text().splitlines()[-1].replace("Infinity", "1e999"))
    f = _fact(kb, "bench.sglang.c2")
    assert written["completed"] == 4
    assert f.value == round(written["output_throughput"], 2) > 0
    assert f.get("config")["total_output_tokens"] == written["total_output_tokens"]
