"""The runbook format, its linter inside `factbook lint`, and --dry-run, on the shipped KB and
on malformed runbooks in a tmp KB (exact file:line messages)."""

from __future__ import annotations

from pathlib import Path

import pytest
from runbook_kit import make_kb, run_cli, write_runbook

from factbook.knowledge.kb import load_kb
from factbook.runbooks.format import load_runbook, runbook_paths, select_steps
from factbook.runbooks.lint import lint_runbooks

REPO = Path(__file__).resolve().parents[1]
SEED_RUNBOOKS = {
    "gpu-cleanup": ["DESTRUCTIVE", "requires instr.zombie-gpu-cleanup: check process.gpu_holders"],
    "vllm-stop": ["-> vllm-kimi-k25-int4.service", "DESTRUCTIVE"],
    "vllm-restore": ["-> vllm-kimi-k25-int4.service", "DESTRUCTIVE"],
    "sglang-base": [
        "fact('inv.model.kimi-k25-int4').get('path') -> /shared/kimi-k2.5-int4/",
        "env_from('sw.sglang.tuned_config') -> "
        '{"NCCL_PROTO": "LL", "NCCL_ALGO": "Ring", "NCCL_P2P_LEVEL": "SYS"}',
        'flags_from(\'sw.sglang.tuned_config\') -> ["--num-continuous-decode-steps", "4"]',
        "fact('hw.gpu.count').value -> 8",
        "fact('sw.sglang.port').value -> 8000",
    ],
    "sglang-eagle3": [
        'flags_from(\'instr.sglang-eagle3-cli-flags\') -> ["--speculative-algorithm", "EAGLE3"',
        "fact('inv.drafter.output-10k-epoch4').get('path') -> /data/eagle3/output_10k/4/",
        "requires eagle3.ckpt.midlayer_keys: check eagle3.checkpoint_keys",
    ],
    "bench-sglang": [
        "records  bench.sglang.nccl_tuned.single_stream",
        "records  bench.sglang.nccl_tuned.c128",
    ],
    "eagle3-checkpoint-fixes": [
        "fact('draft.aux_layers_embedding_fix').value -> [-1, 2, 30]",
        "DESTRUCTIVE",
    ],
}


# --- the shipped runbooks ---------------------------------------------------------------


def test_every_seed_workflow_has_a_runbook() -> None:
    assert {p.stem for p in runbook_paths(REPO)} >= set(SEED_RUNBOOKS)


def test_shipped_runbooks_lint_clean_and_link_facts_and_pitfalls() -> None:
    kb = load_kb(REPO, strict=False)
    assert lint_runbooks(kb) == []
    for path in runbook_paths(REPO):
        runbook = load_runbook(path, REPO)
        assert runbook.target == "llm-two", path
        assert runbook.pitfalls and runbook.facts, f"{path.name} links no facts/pitfalls"
        assert all(kb.facts[p].category == "pitfalls" for p in runbook.pitfalls)


@pytest.mark.parametrize("name", sorted(SEED_RUNBOOKS))
def test_shipped_runbook_dry_run_resolves_its_facts(name: str) -> None:
    done = run_cli(REPO, "run", name, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "target: llm-two (ssh root@llm-two.invalid via kpro6" in done.stdout
    assert "ERROR" not in done.stdout
    for expected in SEED_RUNBOOKS[name]:
        assert expected in done.stdout, expected


def test_destructive_steps_of_the_seed_runbooks() -> None:
    destructive = {
        path.stem: [s.name for s in load_runbook(path, REPO).steps if s.destructive]
        for path in runbook_paths(REPO)
    }
    assert destructive["gpu-cleanup"] == ["kill-engines", "kill-gpu-holders"]
    assert destructive["vllm-stop"] == ["stop"]
    assert destructive["vllm-restore"] == ["start"]
    assert destructive["eagle3-checkpoint-fixes"] == ["fix-keys", "fix-config"]


# --- malformed runbooks -----------------------------------------------------------------


def test_lint_reports_every_problem_with_its_line(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(
        root,
        "bad",
        [
            ({"name": "one", "destuctive": True}, "print(1)"),  # fence line 16
            ({"name": "one"}, "print(2)"),  # 23
            ({"name": "two", "requires": ["inv.nope"], "target": "mars"}, "x = 1"),  # 30
            ({"name": "three", "timeout": -5}, "record('bench.speed', 2)"),  # 39
            ({"timeout": 3}, "fact('sw.server.config').get('flags')"),  # 46
            ({"name": "five"}, "def broken(:\n    pass"),  # 53
        ],
        extra="  pitfalls: [bench.speed]\n  colour: blue\n",
    )
    done = run_cli(root, "lint")
    assert done.returncode == 2
    lines = [line for line in done.stdout.splitlines() if line.startswith("runbooks/")]
    assert lines == [
        "runbooks/bad.md:1: factbook.pitfalls: 'bench.speed' is a benchmarks fact, not pitfalls",
        "runbooks/bad.md:1: unknown runbook key 'factbook.colour' (known: title, target, "
        "timeout, step_timeout, facts, pitfalls, description)",
        "runbooks/bad.md:16: step 'one': unknown key 'destuctive' (known: name, timeout, "
        "requires, destructive, target, records, setup)",
        "runbooks/bad.md:23: duplicate step name 'one' (first at line 16)",
        "runbooks/bad.md:30: step 'two' requires: no fact 'inv.nope'",
        "runbooks/bad.md:30: step 'two': unknown target 'mars' (known: local)",
        "runbooks/bad.md:39: step 'three': record('bench.speed') is not declared in `records:`",
        "runbooks/bad.md:39: step 'three': timeout must be a positive number of seconds",
        "runbooks/bad.md:46: code cell has no 'name'",
        "runbooks/bad.md:53: step 'five': syntax error at line 1 of the cell: invalid syntax",
    ]


def test_run_refuses_a_runbook_with_lint_problems(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(root, "bad", [({"name": "one", "requires": ["inv.nope"]}, "print(1)")])
    done = run_cli(root, "run", "bad")
    assert done.returncode == 2
    assert "runbooks/bad.md:14: step 'one' requires: no fact 'inv.nope'" in done.stderr
    assert not (root / "results").exists()


def test_unknown_runbook_names_the_known_ones(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(root, "alpha", [({"name": "one"}, "print(1)")])
    done = run_cli(root, "run", "beta")
    assert done.returncode == 2 and "no runbook 'beta' (known: alpha)" in done.stderr


# --- dry run ----------------------------------------------------------------------------


def test_dry_run_prints_steps_with_facts_resolved_and_runs_nothing(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(
        root,
        "plan",
        [
            (
                {"name": "setup", "setup": True},
                "from factbook.runbooks.api import fact, env_from, flags_from, box\n"
                "work = fact('inv.workdir').get('path')\n"
                "env = env_from('sw.server.config')\nflags = flags_from('sw.server.config')",
            ),
            (
                {
                    "name": "wipe",
                    "destructive": True,
                    "requires": ["inv.workdir"],
                    "records": ["bench.speed"],
                    "timeout": 7,
                },
                "box.run(['rm', '-rf', work + '/x'])\nopen(work + '/ran', 'w')",
            ),
        ],
    )
    done = run_cli(root, "run", "plan", "--dry-run")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"fact('inv.workdir').get('path') -> {root / 'work'}" in out
    assert 'env_from(\'sw.server.config\') -> {"GREETING": "hello", "NCCL_PROTO": "LL"}' in out
    assert 'flags_from(\'sw.server.config\') -> ["--bind", "127.0.0.1"]' in out
    assert "[2] wipe  on local  timeout 7s, DESTRUCTIVE (asks, or --yes)" in out
    assert "requires inv.workdir: check file.exists; never verified there" in out
    assert "records  bench.speed" in out
    assert "read first: pit.trap (A trap)" in out
    assert not (root / "work" / "ran").exists() and not (root / "results").exists()


def test_dry_run_flags_a_fact_key_that_does_not_exist(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(
        root,
        "plan",
        [
            (
                {"name": "one"},
                "from factbook.runbooks.api import fact\n"
                "p = fact('inv.workdir').get('no_such_key')",
            )
        ],
    )
    done = run_cli(root, "run", "plan", "--dry-run")
    assert done.returncode == 2
    assert "fact('inv.workdir').get('no_such_key') -> ERROR KeyError" in done.stdout


def test_list_shows_runbooks_and_their_last_run(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(root, "alpha", [({"name": "one"}, "print(1)")])
    assert run_cli(root, "run", "alpha").returncode == 0
    done = run_cli(root, "run", "--list")
    assert done.returncode == 0
    assert done.stdout.startswith("alpha") and " ok " in done.stdout


# --- step selection ---------------------------------------------------------------------


def test_select_steps_keeps_earlier_setup_steps(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    path = write_runbook(
        root,
        "sel",
        [
            ({"name": "s1", "setup": True}, "a = 1"),
            ({"name": "a"}, "1"),
            ({"name": "s2", "setup": True}, "b = 1"),
            ({"name": "b"}, "1"),
            ({"name": "c"}, "1"),
        ],
    )
    runbook = load_runbook(path, root)

    def names(**kw: object) -> list[str]:
        return [s.name for s in select_steps(runbook, **kw)]

    assert names() == ["s1", "a", "s2", "b", "c"]
    assert names(only=["b"]) == ["s1", "s2", "b"]
    assert names(only=["a", "c"]) == ["s1", "a", "s2", "c"]
    assert names(start="b") == ["s1", "s2", "b", "c"]
    assert names(until="a") == ["s1", "a"]
    assert names(after="b") == ["s1", "s2", "c"]
    assert names(after="c") == []


def test_requiring_an_unverifiable_fact_is_a_lint_problem(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(root, "req", [({"name": "one", "requires": ["bench.speed"]}, "print(1)")])
    problems = [str(p) for p in lint_runbooks(load_kb(root))]
    assert problems == [
        "runbooks/req.md:14: step 'one' requires 'bench.speed', which has no check and status "
        "assumed: the step can never run"
    ]


def test_a_cell_in_another_language_is_a_located_problem_not_a_warning(tmp_path: Path) -> None:
    """jupytext warns (on stderr, as Python prints warnings) when a cell's language differs
    from the first's; lint says it once, at the cell's fence, and prints nothing else."""
    root = make_kb(tmp_path)
    path = write_runbook(root, "mixed", [({"name": "one"}, "print(1)"), ({"name": "two"}, "x=1")])
    text = path.read_text(encoding="utf-8")
    second = text.rindex("```{code-cell} ipython3")
    path.write_text(text[:second] + "```{code-cell} bash" + text[second + 23 :])
    line = text[:second].count("\n") + 1
    done = run_cli(root, "lint")
    assert done.returncode == 2
    assert "Warning" not in done.stderr and "warnings.warn" not in done.stderr
    assert (
        f"runbooks/mixed.md:{line}: code cell in 'bash', not 'ipython3': every cell "
        "of a runbook runs in the same kernel" in done.stdout
    )
