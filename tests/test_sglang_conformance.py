"""The launch linter's parsing and resolution equal the real sglang 0.5.23's, case by case.

One subprocess of .venvs/sglang/bin/python (made by scripts/sglang-venv) answers every case
through factbook.serving.sglang.reference: sglang's own `prepare_server_args` (its argparse parser:
abbreviations, `=` forms, repeated and unknown flags) and `ServerArgs.resolve_once()`, the call
`sglang.launch_server` makes before it starts anything; the EAGLE-3 capture layers come from
the real `set_eagle3_layers_to_capture` of sglang's DeepSeek and Llama model classes. The cases
are a hand-written matrix plus seeded random command lines. Model folders hold only
config.json files this test writes: no weights, no hub.

sglang's answers are kept once per machine (tests/build_cache.py, cached_answer), keyed on
everything they depend on: the cases and capture layers asked, the model configs (in a folder
named by their content, so their paths are stable), the harness (reference.py), the sglang
venv (every installed distribution's name, version and RECORD), the interpreter, SGLANG_*
variables and the machine's cores and memory. Any change asks sglang again, as does
FACTBOOK_TEST_FRESH=1; the comparisons below run every time. test_check_command_defers...
asks sglang live on every run.

In CI (CI=true) a missing sglang venv fails this test; elsewhere it skips.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from build_cache import cached_answer, content_dir
from helpers import require

from factbook.serving.sglang import reference
from factbook.serving.sglang.flags import option_table, parse_flags
from factbook.serving.sglang.launch import check_command
from factbook.serving.sglang.reference import FIELDS, resolve_with_sglang
from factbook.serving.sglang.rules import capture_layers

pytestmark = pytest.mark.sglang

ROOT = Path(__file__).resolve().parent.parent
SGLANG_PY = ROOT / ".venvs" / "sglang" / "bin" / "python"

GENERATED = 520  # seeded random command lines on top of the hand-written matrix
SEED = 20261130
SPECULATIVE = {
    "--speculative-algorithm": ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "eagle3", "nextn"),
    "--speculative-num-steps": ("1", "2", "3", "5", "15"),
    "--speculative-eagle-topk": ("1", "2", "4", "8"),
    "--speculative-num-draft-tokens": ("2", "4", "6", "8", "16"),
    "--max-running-requests": ("8", "48", "64"),
}
ODD_FLAGS = (
    "--speculative-num-stepz",
    "--speculative-topk",
    "--speculative-algorithmm",
    "--max-running",
)
BAD_VALUES = ("five", "1.5", "")


def _spelling(rng: random.Random, flag: str) -> str:
    """The flag as written: in full, a unique prefix of it, or now and then any prefix
    (ambiguous or not: sglang's parser decides, and factbook's must agree)."""
    roll = rng.random()
    if roll < 0.55:
        return flag
    others = [o for o in option_table() if o != flag]
    unique = next(
        (n for n in range(3, len(flag)) if not any(o.startswith(flag[:n]) for o in others)),
        len(flag),
    )
    if roll < 0.97:  # --model and --speculative-draft-model prefix longer flags: no abbreviation
        return flag[: rng.randint(unique, len(flag) - 1)] if unique < len(flag) else flag
    shortest = len("--speculative-") + 1 if flag.startswith("--speculative-") else 5
    return flag[: rng.randint(shortest, len(flag) - 1)]


def _flag(rng: random.Random, flag: str, value: str) -> list[str]:
    written = _spelling(rng, flag)
    return [f"{written}={value}"] if rng.random() < 0.3 else [written, value]


def _generated(models: dict[str, str], count: int, seed: int) -> list[list[str]]:
    """Random launches: algorithms, drafts, steps/topk/draft tokens, some omitted, some given
    twice, abbreviated or `=`-joined, now and then a misspelt flag or a bad value."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        target = rng.choice(("llama", "llama", "deepseek"))
        argv = _flag(rng, rng.choice(("--model-path", "--model")), models[target])
        argv += ["--device", "cpu"]
        parts: list[list[str]] = []
        for flag, values in SPECULATIVE.items():
            if rng.random() < 0.7:
                parts.append(_flag(rng, flag, rng.choice(values)))
            if rng.random() < 0.1:  # given twice: the last one wins
                parts.append(_flag(rng, flag, rng.choice(values)))
        if rng.random() < 0.75:
            draft = rng.choice(("eagle3_draft", "eagle_draft"))
            flag = rng.choice(("--speculative-draft-model-path", "--speculative-draft-model"))
            parts.append(_flag(rng, flag, models[draft]))
        if rng.random() < 0.06:
            parts.append(
                [rng.choice(ODD_FLAGS), rng.choice(SPECULATIVE["--speculative-num-steps"])]
            )
        if rng.random() < 0.04:
            parts.append(_flag(rng, "--speculative-num-steps", rng.choice(BAD_VALUES)))
        rng.shuffle(parts)
        cases.append(argv + [token for part in parts for token in part])
    return cases


def _sglang_python() -> Path:
    require(None if SGLANG_PY.exists() else f"{SGLANG_PY} missing: run scripts/sglang-venv")
    return SGLANG_PY


def _llama(layers: int, arch: str = "LlamaForCausalLM", **extra: object) -> dict:
    return {
        "architectures": [arch],
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "num_hidden_layers": layers,
        "vocab_size": 256,
        "max_position_embeddings": 512,
        "torch_dtype": "float32",
        **extra,
    }


@pytest.fixture(scope="module")
def models() -> dict[str, str]:
    """Folders holding only a config.json each, at paths fixed by their content (the cases
    name them, and sglang's cached answers are keyed on the cases)."""
    eagle3 = {"draft_vocab_size": 256, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1]}}
    configs = {
        "llama": _llama(8),
        "deepseek": {
            "architectures": ["DeepseekV3ForCausalLM"],
            "model_type": "deepseek_v3",
            "hidden_size": 64,
            "intermediate_size": 128,
            "moe_intermediate_size": 32,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "n_routed_experts": 4,
            "n_shared_experts": 1,
            "num_experts_per_tok": 2,
            "first_k_dense_replace": 1,
            "kv_lora_rank": 16,
            "q_lora_rank": 16,
            "qk_nope_head_dim": 16,
            "qk_rope_head_dim": 8,
            "v_head_dim": 16,
            "vocab_size": 256,
            "max_position_embeddings": 512,
            "torch_dtype": "bfloat16",
        },
        "eagle3": _llama(1, "LlamaForCausalLMEagle3", **eagle3),
        "eagle": _llama(1, "LlamaForCausalLMEagle"),
    }
    base = content_dir(
        "sglang-models", {f"{name}/config.json": json.dumps(c) for name, c in configs.items()}
    )
    folders = {"llama": "llama", "deepseek": "deepseek", "eagle3_draft": "eagle3",
               "eagle_draft": "eagle"}  # fmt: skip
    return {name: str(base / folder) for name, folder in folders.items()}


def _cases(models: dict[str, str]) -> list[list[str]]:
    """The flag matrix: explicit steps/topk/draft tokens, omissions, algorithms, targets."""
    cases: list[list[str]] = []

    def case(target: str, algo: str | None, draft: str | None, **spec: int | None) -> None:
        argv = ["--model-path", models[target], "--device", "cpu"]
        if algo is not None:
            argv += ["--speculative-algorithm", algo]
        if draft is not None:
            argv += ["--speculative-draft-model-path", models[draft]]
        for flag, value in spec.items():
            if value is not None:
                argv += [f"--speculative-{flag.replace('_', '-')}", str(value)]
        cases.append(argv)

    for topk, steps, ndt in itertools.product((1, 2, 4), (1, 3, 5, 15), (2, 4, 6, 16, None)):
        case("llama", "EAGLE3", "eagle3_draft", num_steps=steps, eagle_topk=topk,
             num_draft_tokens=ndt)  # fmt: skip
    for algo in ("EAGLE", "eagle3", "NEXTN", "nextn", "STANDALONE"):
        for topk, steps, ndt in ((1, 1, 16), (1, 15, 16), (4, 5, 8), (None, None, None)):
            case("llama", algo, "eagle_draft", num_steps=steps, eagle_topk=topk,
                 num_draft_tokens=ndt)  # fmt: skip
    # omissions sglang refuses (asserts, None compared with 1) or fills in
    case("llama", "EAGLE3", "eagle3_draft", eagle_topk=1)
    case("llama", "EAGLE3", "eagle3_draft", num_draft_tokens=6)
    case("llama", "EAGLE3", "eagle3_draft", num_steps=5)
    case("llama", "EAGLE3", "eagle3_draft", num_steps=5, num_draft_tokens=6)
    case("llama", None, None)
    # a DeepSeek-V3 target: auto params (3, 1, 4); EAGLE without a draft path uses the target
    for algo in ("EAGLE", "NEXTN", "EAGLE3"):
        case("deepseek", algo, None)
        case("deepseek", algo, None, num_steps=1, eagle_topk=1, num_draft_tokens=16)
    case("deepseek", "EAGLE3", "eagle3_draft", num_steps=15, eagle_topk=1, num_draft_tokens=16)
    return cases


CAPTURE_IDS = ([2, 30, 58], [1, 29, 57], [-1, 2, 30], [0, 1, 2], [3], None)
CAPTURE_ARCHS = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "LlamaForCausalLM")


@pytest.fixture(scope="module")
def sglang_answers(models: dict[str, str]) -> tuple[list[list[str]], dict]:
    cases = _cases(models) + _generated(models, GENERATED, seed=SEED)
    captures = [(arch, ids, 61) for arch in CAPTURE_ARCHS for ids in CAPTURE_IDS]
    python = str(_sglang_python())
    key = _answers_key(python, cases, captures, models)
    return cases, cached_answer("sglang", key, lambda: _ask_sglang(python, cases, captures))


def _ask_sglang(python: str, cases: list[list[str]], captures: list[tuple]) -> dict:
    """sglang's answers to every case and capture. Each case costs sglang ~0.05 s of argparse
    and resolution, its import ~7 s of CPU: two processes, half the cases each, where a core
    is free for the second (run alone on two cores); one under pytest-xdist with a worker per
    core, where the other is busy."""
    parts = min(2, _free_cores())
    size = -(-len(cases) // parts)
    with ThreadPoolExecutor(parts) as pool:
        futures = [
            pool.submit(resolve_with_sglang, python, cases[i : i + size],
                        captures=captures if i == 0 else ())
            for i in range(0, len(cases), size)
        ]  # fmt: skip
        results = [f.result() for f in futures]
    answers = results[0]
    assert {r["version"] for r in results} == {"0.5.23"}
    answers["resolutions"] = [a for r in results for a in r["resolutions"]]
    return answers


def _answers_key(
    python: str, cases: list[list[str]], captures: list[tuple], models: dict[str, str]
) -> str:
    """A hash of everything sglang's answers depend on (see the module's docstring)."""
    venv = Path(python).parent.parent.resolve()
    digest = hashlib.sha256()
    digest.update(Path(reference.__file__).read_bytes())
    digest.update(json.dumps([cases, captures, sorted(models.items())]).encode())
    for folder in sorted(models.values()):
        digest.update((Path(folder) / "config.json").read_bytes())
    digest.update(f"{venv}\0{os.path.realpath(python)}\0".encode())
    digest.update((venv / "pyvenv.cfg").read_bytes())
    for record in sorted(venv.glob("lib/python*/site-packages/*.dist-info/RECORD")):
        digest.update(f"{record.parent.name}\0".encode() + record.read_bytes())
    digest.update(json.dumps(sorted((k, v) for k, v in os.environ.items()
                                    if k.startswith(("SGLANG", "SGL_")))).encode())  # fmt: skip
    memory = next(
        (line for line in Path("/proc/meminfo").read_text().splitlines()
         if line.startswith("MemTotal")), "",
    )  # fmt: skip
    digest.update(f"{os.cpu_count()}\0{memory}".encode())
    return digest.hexdigest()[:24]


def _free_cores() -> int:
    """Cores this test may use: all of them, or its share under pytest-xdist."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def test_matrix_is_large_enough(sglang_answers: tuple[list[list[str]], dict]) -> None:
    cases, answers = sglang_answers
    assert len(cases) >= 30
    assert len(answers["resolutions"]) == len(cases)
    # the matrix exercises both sglang outcomes and the silent topk=1 change
    assert any("error" in a for a in answers["resolutions"])
    changed = [
        (argv, a["ok"])
        for argv, a in zip(cases, answers["resolutions"], strict=True)
        if "ok" in a and "16" in argv and a["ok"]["speculative_num_draft_tokens"] == 2
    ]
    assert changed, "expected sglang to turn 16 draft tokens into 2 somewhere"


def test_linter_resolution_equals_sglang(sglang_answers: tuple[list[list[str]], dict]) -> None:
    cases, answers = sglang_answers
    mismatches = []
    for argv, answer in zip(cases, answers["resolutions"], strict=True):
        report = check_command(["python", "-m", "sglang.launch_server", *argv])
        assert report is not None
        predicted = report.resolved
        if "error" in answer:
            if predicted.error is None:
                mismatches.append((argv, "sglang refused", answer["error"], "linter accepted"))
            continue
        if predicted.error is not None:
            mismatches.append((argv, "sglang accepted", answer["ok"], predicted.error))
            continue
        mine = {k: getattr(predicted, k) for k in FIELDS}
        if answer["ok"]["speculative_algorithm"] is None:
            mine = {k: v for k, v in mine.items() if k != "max_running_requests"}
            theirs = {k: v for k, v in answer["ok"].items() if k != "max_running_requests"}
        else:
            theirs = answer["ok"]
        if mine != theirs:
            mismatches.append((argv, theirs, mine))
    assert not mismatches, "\n".join(map(repr, mismatches))


def test_capture_layers_equal_sglang(sglang_answers: tuple[list[list[str]], dict]) -> None:
    _, answers = sglang_answers
    expected = iter(answers["captures"])
    for arch in CAPTURE_ARCHS:
        for ids in CAPTURE_IDS:
            assert capture_layers(ids, arch, 61) == next(expected), (arch, ids)


def test_linter_flags_what_sglang_changes(sglang_answers: tuple[list[list[str]], dict]) -> None:
    """Every case where sglang's num_draft_tokens differs from the flag gets the topk=1 warning."""
    cases, answers = sglang_answers
    checked = 0
    for argv, answer in zip(cases, answers["resolutions"], strict=True):
        asked = answer.get("asked", {}).get("speculative_num_draft_tokens")
        if "ok" not in answer or asked is None:
            continue
        report = check_command(["python", "-m", "sglang.launch_server", *argv])
        assert report is not None
        warned = any(f.pitfall == "pit.topk1-num-draft-tokens" for f in report.findings)
        assert warned == (answer["ok"]["speculative_num_draft_tokens"] != asked), argv
        checked += 1
    assert checked >= 100


def test_parser_reads_the_flags_as_sglang_does(
    sglang_answers: tuple[list[list[str]], dict],
) -> None:
    """Abbreviations, `=` forms, aliases and repeats: the values before any hook, field by field;
    and the cases sglang's parser refuses are the ones factbook's parser refuses."""
    cases, answers = sglang_answers
    mismatches = []
    for argv, answer in zip(cases, answers["resolutions"], strict=True):
        parsed = parse_flags(argv)
        if "asked" in answer:
            mine = {k: parsed.values.get(k) for k in FIELDS}
            if parsed.refusal or mine != answer["asked"]:
                mismatches.append((argv, answer["asked"], mine, parsed.refusal))
        elif answer["error"].startswith("sglang serve: error:") and parsed.refusal is None:
            mismatches.append((argv, answer["error"], "parsed"))
    assert not mismatches, "\n".join(map(repr, mismatches[:20]))


def test_generated_cases_cover_the_parser(sglang_answers: tuple[list[list[str]], dict]) -> None:
    """The random cases reach every parser outcome: abbreviations, `=`, ambiguity, unknowns."""
    cases, answers = sglang_answers
    generated = cases[-GENERATED:]
    assert len(cases) >= 500 + 88
    table = option_table()
    tokens = [t.split("=", 1)[0] for argv in generated for t in argv if t.startswith("--")]
    assert sum(t not in table for t in tokens) >= 100  # abbreviated (or unknown) flags
    assert sum("=" in t for argv in generated for t in argv if t.startswith("--")) >= 100
    errors = [a["error"] for a in answers["resolutions"][-GENERATED:] if "error" in a]
    for kind in ("ambiguous option", "unrecognized arguments", "invalid int value"):
        assert any(kind in e for e in errors), kind
    assert sum("ok" in a for a in answers["resolutions"][-GENERATED:]) >= 150


def test_check_command_defers_to_sglang_where_it_imports(models: dict[str, str]) -> None:
    """With an interpreter that has sglang, sglang's own resolution is the answer: here it
    reads the Llama target's config (auto steps 5, topk 4, 8 draft tokens) that factbook's
    rules were not given (no read_config), which alone would say 3, 1, 4."""
    argv = [
        "python", "-m", "sglang.launch_server", "--model-path", models["llama"],
        "--device", "cpu", "--speculative-algo=EAGLE3",
        "--speculative-draft-model", models["eagle3_draft"],
    ]  # fmt: skip
    alone = check_command(argv, read_config=lambda _p: None)
    asked = check_command(argv, read_config=lambda _p: None, sglang_python=str(_sglang_python()))
    assert alone is not None and asked is not None
    steps = ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")
    assert [getattr(alone.resolved, k) for k in steps] == [3, 1, 4]
    assert [getattr(asked.resolved, k) for k in steps] == [5, 4, 8]
    assert asked.resolved.speculative_algorithm == "EAGLE3" and asked.resolved.error is None


if __name__ == "__main__":  # pragma: no cover - a manual entry point
    sys.exit(pytest.main([__file__, "-q"]))
