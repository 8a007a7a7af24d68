"""The SGLang launch linter: parsing, the four pitfalls, and `factbook lint` over runbooks.

Model and draft folders are real folders holding config.json files written here; the knowledge
base is a copy of this repository's, so fact ids in messages are the real pitfalls.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factbook.commands.cli import run
from factbook.commands.lint import collect_problems
from factbook.errors import LaunchRefused
from factbook.knowledge.kb import load_kb
from factbook.serving.sglang.flags import UNKNOWN, launch_argv, parse_flags
from factbook.serving.sglang.launch import check_command, preflight
from factbook.serving.sglang.rules import capture_layers
from factbook.serving.sglang.runbook_lint import CellEvaluator

ROOT = Path(__file__).resolve().parent.parent
LAUNCH = "python -m sglang.launch_server"


def _folder(path: Path, config: dict) -> str:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(config))
    return str(path)


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, str]:
    eagle3 = {"architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1}
    return {
        "llama": _folder(
            tmp_path / "llama", {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 61}
        ),
        "kimi": _folder(
            tmp_path / "kimi",
            {
                "architectures": ["KimiK25ForConditionalGeneration"],
                "text_config": {"num_hidden_layers": 61},
            },
        ),
        "deepseek": _folder(
            tmp_path / "dsv3", {"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 61}
        ),
        "draft_258": _folder(
            tmp_path / "d258",
            {**eagle3, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 58]}},
        ),
        "draft_157": _folder(
            tmp_path / "d157",
            {**eagle3, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 29, 57]}},
        ),
        "draft_m1": _folder(
            tmp_path / "dm1",
            {**eagle3, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [-1, 2, 30]}},
        ),
        "draft_noids": _folder(tmp_path / "dnoids", eagle3),
        "draft_eagle2": _folder(tmp_path / "deagle", {"architectures": ["LlamaForCausalLMEagle"]}),
    }


def _spec(model: str, draft: str | None, algo: str = "EAGLE3", steps=3, topk=1, ndt=4) -> str:
    cmd = f"{LAUNCH} --model-path {model} --speculative-algorithm {algo}"
    if draft:
        cmd += f" --speculative-draft-model-path {draft}"
    for flag, value in (("num-steps", steps), ("eagle-topk", topk), ("num-draft-tokens", ndt)):
        if value is not None:
            cmd += f" --speculative-{flag} {value}"
    return cmd


def _pits(report) -> list[str | None]:
    return [f.pitfall for f in report.findings]


# ---- parsing ----------------------------------------------------------------------------


def test_launch_forms_are_recognised() -> None:
    shell = "NCCL_PROTO=LL python3 -m sglang.launch_server \\\n  --model /m \\\n  --tp 8  # go"
    assert launch_argv(shell) == ["--model", "/m", "--tp", "8"]
    assert launch_argv("sglang serve --model-path /m") == ["--model-path", "/m"]
    assert launch_argv(["/usr/bin/sglang", "serve", "--model", "/m"]) == ["--model", "/m"]
    assert launch_argv("python -m vllm.entrypoints.openai.api_server --model /m") is None
    assert check_command("echo hello") is None


def test_equals_form_aliases_and_last_flag_wins() -> None:
    report = check_command(
        f"{LAUNCH} --model=org/m --speculative-algorithm=nextn "
        "--speculative-draft-model org/d --speculative-num-steps 2 "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 3 --speculative-num-steps=5"
    )
    assert report is not None
    r = report.resolved
    assert (r.speculative_algorithm, r.speculative_num_steps, r.speculative_num_draft_tokens) == (
        "EAGLE", 5, 6,
    )  # fmt: skip
    assert r.speculative_draft_model_path == "org/d"  # a hub id: not checked for existence
    assert report.flags["model_path"] == "org/m"


def test_bad_integer_is_an_error() -> None:
    report = check_command(f"{LAUNCH} --model /m --speculative-num-steps five")
    assert report is not None
    assert [f.message for f in report.errors] == [
        "sglang 0.5.23 would refuse to start: argument --speculative-num-steps: "
        "invalid int value: 'five'"
    ]


def test_abbreviations_are_read_as_sglang_reads_them(folders: dict[str, str]) -> None:
    """issue 15: `--speculative-algo EAGLE` runs EAGLE and `--speculative-num-step 3` sets
    the steps (unique prefixes, argparse's default), so both are linted, not ignored."""
    eagle = check_command(
        f"{LAUNCH} --model-path {folders['llama']} --speculative-algo EAGLE "
        f"--speculative-draft-model-path {folders['draft_eagle2']} --speculative-num-step 3 "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 16"
    )
    assert eagle is not None
    assert eagle.flags["speculative_algorithm"] == "EAGLE"
    assert eagle.resolved.error is None and eagle.resolved.speculative_num_draft_tokens == 4
    assert _pits(eagle) == ["pit.topk1-num-draft-tokens"]
    refused = parse_flags(["--model", "/m", "--speculative-num", "3"])
    assert refused.refusal == (
        "ambiguous option: --speculative-num could match "
        "--speculative-num-steps, --speculative-num-draft-tokens"
    )
    assert parse_flags(["--speculative-num-steps", "3"]).refusal == (
        "the following arguments are required: --model-path/--model"
    )


def test_unknown_speculative_flag_is_a_warning_naming_the_nearest(
    folders: dict[str, str],
) -> None:
    report = check_command(
        _spec(folders["llama"], folders["draft_258"]) + " --speculative-num-stepz 4"
    )
    assert report is not None
    unknown = [f for f in report.findings if "no flag --speculative-num-stepz" in f.message]
    assert [f.severity for f in unknown] == ["warning"]
    assert "did you mean --speculative-num-steps or" in unknown[0].message
    assert report.resolved.error == "unrecognized arguments: --speculative-num-stepz 4"
    assert report.resolved.speculative_num_steps == 3  # still resolved for the other checks


def test_no_speculation_no_findings(folders: dict[str, str]) -> None:
    report = check_command(f"{LAUNCH} --model-path {folders['llama']} --tp 8")
    assert report is not None and report.findings == []
    assert report.resolved.speculative_algorithm is None


# ---- the pitfalls -----------------------------------------------------------------------


def test_seed_topk1_sixteen_draft_tokens_is_silently_two(folders: dict[str, str]) -> None:
    report = check_command(_spec(folders["llama"], folders["draft_258"], steps=1, ndt=16))
    assert report is not None
    assert report.resolved.speculative_num_draft_tokens == 2
    [warning] = [f for f in report.findings if f.pitfall == "pit.topk1-num-draft-tokens"]
    assert warning.severity == "warning"
    assert "silently changes num_draft_tokens to 2" in warning.message
    assert "--speculative-num-steps 15" in warning.message
    assert "see pit.topk1-num-draft-tokens" in str(warning)


def test_consistent_topk1_and_topk_above_one_are_left_alone(folders: dict[str, str]) -> None:
    for steps, topk, ndt in ((15, 1, 16), (5, 1, 6), (1, 4, 16), (3, 2, 4)):
        report = check_command(_spec(folders["llama"], folders["draft_258"], "EAGLE3", steps,
                                     topk, ndt))  # fmt: skip
        assert report is not None
        assert "pit.topk1-num-draft-tokens" not in _pits(report), (steps, topk, ndt)
        assert report.resolved.speculative_num_draft_tokens == ndt


def test_eagle_with_an_eagle3_draft_is_an_error(folders: dict[str, str]) -> None:
    report = check_command(_spec(folders["kimi"], folders["draft_258"], "EAGLE", 5, 1, 6))
    assert report is not None
    [error] = [f for f in report.errors if f.pitfall == "pit.eagle-vs-eagle3-flag"]
    assert "LlamaForCausalLMEagle3" in error.message and "use EAGLE3" in error.message
    fixed = check_command(_spec(folders["kimi"], folders["draft_157"], "EAGLE3", 5, 1, 6))
    assert fixed is not None and fixed.findings == []


def test_eagle_with_an_eagle2_draft_is_fine(folders: dict[str, str]) -> None:
    report = check_command(_spec(folders["llama"], folders["draft_eagle2"], "EAGLE"))
    assert report is not None and report.findings == []


def test_draft_path_missing_or_absent(folders: dict[str, str], tmp_path: Path) -> None:
    missing = check_command(_spec(folders["llama"], None))
    assert missing is not None
    assert any("without --speculative-draft-model-path" in f.message for f in missing.errors)
    absent = check_command(_spec(folders["llama"], str(tmp_path / "nope")))
    assert absent is not None
    assert any("does not exist" in f.message for f in absent.errors)
    # a DeepSeek-V3 checkpoint carries its MTP head: sglang uses the target as the draft
    bundled = check_command(_spec(folders["deepseek"], None, "EAGLE"))
    assert bundled is not None and bundled.errors == []
    assert bundled.resolved.speculative_draft_model_path == folders["deepseek"]


def test_hidden_state_ids_on_kimi_follow_sglang_0523(folders: dict[str, str]) -> None:
    """DeepSeek/Kimi add 1 only when the first id is 1: [2, 30, 58] feeds outputs 1, 29, 57."""
    shifted = check_command(_spec(folders["kimi"], folders["draft_258"]))
    assert shifted is not None
    assert shifted.resolved.capture_layers == [2, 30, 58]
    assert shifted.resolved.captured == ["layer 1", "layer 29", "layer 57"]
    [warning] = [f for f in shifted.findings if f.pitfall == "pit.hidden-state-capture-offset"]
    assert "[2, 30, 58]" in warning.message and "layer 1, layer 29, layer 57" in warning.message
    aligned = check_command(_spec(folders["kimi"], folders["draft_157"]))
    assert aligned is not None and aligned.findings == []
    assert aligned.resolved.captured == ["layer 1", "layer 29", "layer 57"]


def test_seed_era_plus_one_convention(folders: dict[str, str]) -> None:
    """The seeds' sglang added 1 on Kimi too: [2, 30, 58] -> [3, 31, 59] (outputs 2, 30, 58)."""
    cmd = _spec(folders["kimi"], folders["draft_258"])
    old = check_command(cmd, convention="plus-one")
    assert old is not None and old.findings == []
    assert old.resolved.capture_layers == [3, 31, 59]
    minus_one = check_command(_spec(folders["kimi"], folders["draft_m1"]), convention="plus-one")
    assert minus_one is not None and minus_one.resolved.captured == ["embed", "layer 2", "layer 30"]
    with pytest.raises(ValueError, match="unknown capture convention"):
        capture_layers([1], "LlamaForCausalLM", 4, "0.4")


def test_embedding_id_minus_one(folders: dict[str, str]) -> None:
    """-1 means the embedding output on Llama (+1 -> layer 0's input), is lost on Kimi."""
    llama = check_command(_spec(folders["llama"], folders["draft_m1"]))
    assert llama is not None and llama.findings == []
    assert llama.resolved.captured == ["embed", "layer 2", "layer 30"]
    kimi = check_command(_spec(folders["kimi"], folders["draft_m1"]))
    assert kimi is not None
    [error] = kimi.errors
    assert error.pitfall == "pit.hidden-state-capture-offset"
    assert "[-1]" in error.message and "2 hidden states instead of 3" in error.message


def test_layer_id_past_the_last_layer(folders: dict[str, str], tmp_path: Path) -> None:
    draft = _folder(
        tmp_path / "d_past",
        {"architectures": ["LlamaForCausalLMEagle3"],
         "eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 60]}},
    )  # fmt: skip
    report = check_command(_spec(folders["llama"], draft))
    assert report is not None
    assert any("[60]" in f.message and "61-layer" in f.message for f in report.errors)


def test_draft_without_layer_ids_warns_with_the_default(folders: dict[str, str]) -> None:
    report = check_command(_spec(folders["kimi"], folders["draft_noids"]))
    assert report is not None
    [warning] = report.findings
    assert warning.severity == "warning" and "layer 1, layer 29, layer 57" in warning.message


def test_capture_layers_table() -> None:
    assert capture_layers([2, 30, 58], "LlamaForCausalLM", 61) == [3, 31, 59]
    assert capture_layers([2, 30, 58], "DeepseekV3ForCausalLM", 61) == [2, 30, 58]
    assert capture_layers([1, 29, 57], "KimiK25ForConditionalGeneration", 61) == [2, 30, 58]
    assert capture_layers(None, "LlamaForCausalLM", 61) == [2, 30, 58]
    assert capture_layers(None, "LlamaForCausalLM", None) is None


def test_cli_exit_codes(folders: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    bad = _spec(folders["llama"], folders["draft_258"], steps=1, ndt=16).split()
    assert run(["launch-lint", "--", *bad]) == 1  # a warning only
    out = capsys.readouterr().out
    assert "speculative_num_draft_tokens=2" in out and "pit.topk1-num-draft-tokens" in out
    wrong = _spec(folders["llama"], folders["draft_258"], "EAGLE")
    assert run(["launch-lint", "--json", "--", wrong]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["resolved"]["speculative_algorithm"] == "EAGLE"
    assert {f["pitfall"] for f in data["findings"]} == {"pit.eagle-vs-eagle3-flag"}
    good = _spec(folders["llama"], folders["draft_258"], steps=15, ndt=16).split()
    assert run(["launch-lint", "--", *good]) == 0
    assert run(["launch-lint", "--", "echo", "hi"]) == 2


def test_preflight_refuses_errors_and_prints_warnings(
    folders: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(LaunchRefused, match=r"pit\.eagle-vs-eagle3-flag"):
        preflight(_spec(folders["kimi"], folders["draft_157"], "EAGLE").split())
    report = preflight(_spec(folders["kimi"], folders["draft_157"], steps=1, ndt=16).split())
    assert report is not None and report.resolved.speculative_num_draft_tokens == 2
    assert "pit.topk1-num-draft-tokens" in capsys.readouterr().out
    assert preflight(["python", "-m", "vllm.entrypoints.openai.api_server"]) is None


def test_managed_server_start_refuses_a_bad_launch_before_spawning(
    folders: dict[str, str], tmp_path: Path
) -> None:
    from factbook.knowledge.model import Target
    from factbook.runbooks import servers
    from factbook.runbooks.remote import BoxClient

    local = Target(name="here", transport="local")
    box = BoxClient(local, {"here": local})
    argv = _spec(folders["kimi"], folders["draft_157"], "EAGLE").split()
    with pytest.raises(LaunchRefused, match=r"pit\.eagle-vs-eagle3-flag"):
        servers.start(
            box,
            servers.ServerSpec("sglang", argv, ready=1),
            run_dir=tmp_path,
            runbook="rb",
            run_id="r1",
            step="launch",
        )
    assert servers.registered(tmp_path) == []  # nothing was spawned or registered


# ---- runbooks -------------------------------------------------------------------------


def test_evaluator_follows_facts_across_cells() -> None:
    kb = load_kb(ROOT)
    ev = CellEvaluator(kb)
    assert ev.run_cell('draft = fact("inv.drafter.output-10k-epoch4").get("path")') == []
    found = ev.run_cell(
        'flags = [draft if f == "<path>" else f\n'
        '         for f in flags_from("instr.sglang-eagle3-cli-flags")]\n'
        'argv = [box.python, "-m", "sglang.launch_server", *flags, "--port", port]\n'
    )  # fmt: skip
    [(line, argv)] = found
    assert line == 3
    assert argv[0] is UNKNOWN and argv[-1] is UNKNOWN
    assert argv[argv.index("--speculative-draft-model-path") + 1] == "/data/eagle3/output_10k/4/"


RUNBOOK = """\
---
jupytext:
  text_representation: {{extension: .md, format_name: myst}}
kernelspec: {{display_name: Python 3, language: python, name: python3}}
factbook:
  title: launch test
  target: local
---

# Launch

```{{code-cell}} ipython3
---
name: setup
setup: true
---
from factbook.runbooks.api import box, fact, server

model = "{model}"
argv = [box.python, "-m", "sglang.launch_server", "--model-path", model,
        "--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", "{draft}",
        "--speculative-num-steps", "1", "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "16"]
```

```{{code-cell}} ipython3
---
name: launch
---
server.start("sglang", argv, ready=8000)
```
"""


def test_factbook_lint_reports_runbook_launches(kb_copy: Path, folders: dict[str, str]) -> None:
    text = RUNBOOK.format(model=folders["kimi"], draft=folders["draft_258"])
    (kb_copy / "runbooks").mkdir(exist_ok=True)
    (kb_copy / "runbooks" / "launch.md").write_text(text)
    _, problems = collect_problems(kb_copy)
    mine = [p for p in problems if "sglang launch" in p.message]
    argv_line = text.splitlines().index("argv = [box.python, \"-m\", \"sglang.launch_server\", "
                                        "\"--model-path\", model,") + 1  # fmt: skip
    assert {p.file for p in mine} == {"runbooks/launch.md"}
    assert {p.line for p in mine} == {argv_line}
    messages = " | ".join(p.message for p in mine)
    assert "step 'setup'" in messages
    assert "pit.eagle-vs-eagle3-flag" in messages
    assert "silently changes num_draft_tokens to 2" in messages
    assert run(["--root", str(kb_copy), "lint"]) == 2


def test_repository_runbooks_lint_clean_of_launch_problems() -> None:
    _, problems = collect_problems(ROOT)
    assert [p for p in problems if "sglang launch" in p.message] == []
