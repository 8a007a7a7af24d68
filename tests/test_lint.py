"""Malformed knowledge bases: each problem is reported at its exact file:line, all at once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from factbook.commands.cli import run

MILESTONES = """\
milestones:
  - {id: "3157", title: first}
  - {id: "3478", title: second}
  - {id: "4504", title: third}
"""
TARGETS = """\
targets:
  box: {host: box.invalid, user: root}
  here: {transport: local}
"""
GOOD = """\
facts:
  - id: hw.gpu.count
    category: hardware
    title: GPU count
    statement: The box has 8 GPUs.
    value: 8
    status: verified
    target: box
    sources: [{seed: a.txt, message: 3157}]
    check:
      probe: gpu.count
      expect: {eq: 8}
"""


def make_kb(root: Path, facts: str, *, name: str = "bad.yaml", extra: dict | None = None) -> Path:
    (root / "facts").mkdir(parents=True, exist_ok=True)
    (root / "milestones.yaml").write_text(MILESTONES)
    (root / "targets.yaml").write_text(TARGETS)
    (root / "facts" / "good.yaml").write_text(GOOD)
    (root / "facts" / name).write_text(textwrap.dedent(facts))
    for rel, text in (extra or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def lint(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = run(["--root", str(root), "lint"])
    out = capsys.readouterr().out
    return code, [line for line in out.splitlines() if line]


def fact(body: str, fid: str = "x.one", category: str = "hardware") -> str:
    """A valid fact with `body` appended (indented as fact keys)."""
    head = f"""\
facts:
  - id: {fid}
    category: {category}
    title: T
    statement: S
    status: assumed
    sources: [{{seed: a.txt, message: 1}}]
"""
    return head + textwrap.indent(textwrap.dedent(body), "    ")


CASES = [
    # (name, facts text, expected exact lines)
    (
        "yaml syntax error",
        "facts:\n  - id: a\n    title: [unclosed\n",
        ["facts/bad.yaml:4: YAML syntax error: expected ',' or ']', but got '<stream end>'"],
    ),
    (
        "tab indentation",
        "facts:\n\t- id: a\n",
        ["facts/bad.yaml:2: YAML syntax error: found character '\\t' that cannot start any token"],
    ),
    (
        "top level not a mapping",
        "- id: a\n",
        ["facts/bad.yaml:1: top level: expected mapping, got list"],
    ),
    (
        "unknown top-level key",
        "facts: []\nfact: []\n",
        ["facts/bad.yaml:2: unknown key 'fact' (known: facts)"],
    ),
    (
        "missing facts key",
        "other: 1\n",
        [
            "facts/bad.yaml:1: top level: missing required key 'facts'",
            "facts/bad.yaml:1: unknown key 'other' (known: facts)",
        ],
    ),
    ("empty file", "", ["facts/bad.yaml:1: empty fact file (expected 'facts:')"]),
    (
        "facts not a list",
        "facts: {id: a}\n",
        ["facts/bad.yaml:1: facts: expected list, got mapping"],
    ),
    (
        "unknown fact key",
        fact("colour: red\n"),
        [
            "facts/bad.yaml:8: fact 'x.one': unknown key 'colour' (known: accept_len, category, "
            "cause, check, config, criterion, epoch, fix, history, id, kind, links, machine, "
            "metric, path, priority, purpose, rationale, since, size, sources, state, statement, "
            "status, symptom, tags, target, title, token, token_id, unit, until, value)"
        ],
    ),
    (
        "missing required keys",
        "facts:\n  - id: x.two\n    category: hardware\n",
        [
            "facts/bad.yaml:2: fact 'x.two': missing required key 'title'",
            "facts/bad.yaml:2: fact 'x.two': missing required key 'statement'",
            "facts/bad.yaml:2: fact 'x.two': missing required key 'status'",
            "facts/bad.yaml:2: fact 'x.two': missing required key 'sources'",
        ],
    ),
    (
        "wrong type for title",
        fact("").replace("title: T", "title: [a, b]"),
        ["facts/bad.yaml:4: fact 'x.one': title: expected string, got list"],
    ),
    (
        "bad status",
        fact("").replace("status: assumed", "status: maybe"),
        [
            "facts/bad.yaml:6: fact 'x.one': status: 'maybe' is not one of: "
            "assumed, verified, refuted, stale"
        ],
    ),
    (
        "bad category",
        fact("").replace("category: hardware", "category: gpus"),
        [
            "facts/bad.yaml:3: fact 'x.one': category: 'gpus' is not one of: goal, "
            "instructions, hardware, software, model, tokenizer, inventory, pitfalls, "
            "benchmarks, training, decisions, progress"
        ],
    ),
    (
        "bad id",
        fact("", fid="Bad ID"),
        [
            "facts/bad.yaml:2: fact 'Bad ID': id: 'Bad ID' does not match "
            "^[a-z0-9_]+(\\.[a-z0-9_-]+)*$"
        ],
    ),
    (
        "duplicate id across files",
        fact("", fid="hw.gpu.count"),
        ["facts/good.yaml:2: duplicate id 'hw.gpu.count' (first defined at facts/bad.yaml:2)"],
    ),
    (
        "duplicate yaml key",
        fact("title: again\n"),
        ["facts/bad.yaml:8: duplicate key 'title'"],
    ),
    (
        "dangling link",
        fact("links:\n  fixed_by: [nope.fix]\n"),
        ["facts/bad.yaml:9: fact 'x.one': link fixed_by -> 'nope.fix': no such fact"],
    ),
    (
        "unknown link relation",
        fact("links:\n  fixxed_by: [hw.gpu.count]\n"),
        [
            "facts/bad.yaml:9: fact 'x.one': unknown key 'fixxed_by' (known: caused_by, causes, "
            "checked_by, checks, fixed_by, fixes, justified_by, justifies, replaced_by, "
            "replaces, see_also)"
        ],
    ),
    (
        "unknown probe",
        fact("check:\n  probe: gpu.nmaes\n"),
        [
            "facts/bad.yaml:9: fact 'x.one': unknown probe 'gpu.nmaes' (known in that group: "
            "gpu.names, gpu.count, gpu.memory_mib, gpu.compute_capability, gpu.driver, "
            "gpu.power_limit_w, gpu.topology, gpu.numa_nodes, gpu.query)"
        ],
    ),
    (
        "missing probe argument",
        fact("check:\n  probe: file.exists\n  args: {}\n"),
        ["facts/bad.yaml:10: fact 'x.one': probe file.exists needs argument 'path'"],
    ),
    (
        "unknown probe argument",
        fact("check:\n  probe: file.exists\n  args: {path: /x, pth: /y}\n"),
        [
            "facts/bad.yaml:10: fact 'x.one': probe file.exists "
            + "takes no argument 'pth' (takes: path)"
        ],
    ),
    (
        "check without probe",
        fact("check:\n  expect: {eq: 1}\n"),
        ["facts/bad.yaml:8: fact 'x.one': check: missing required key 'probe'"],
    ),
    (
        "invalid regex",
        fact("check:\n  probe: os.kernel\n  expect: {regex: '6.14[.'}\n"),
        [
            "facts/bad.yaml:10: fact 'x.one': expect.regex: invalid regex '6.14[.': "
            "unterminated character set at position 4"
        ],
    ),
    (
        "invalid version specifier",
        fact("check:\n  probe: gpu.driver\n  expect: {version: '>>590'}\n"),
        [
            "facts/bad.yaml:10: fact 'x.one': expect.version: invalid version specifier "
            "'>>590': '>>590'"
        ],
    ),
    (
        "unknown expectation operator",
        fact("check:\n  probe: gpu.count\n  expect: {equals: 8}\n"),
        [
            "facts/bad.yaml:10: fact 'x.one': expect: unknown operator 'equals' (known: eq, ne, "
            "gt, ge, lt, le, between, approx, contains, regex, one_of, exists, length, version, "
            "each, all, any, not, share, near_median)"
        ],
    ),
    (
        "two operators",
        fact("check:\n  probe: gpu.count\n  expect: {eq: 8, gt: 1}\n"),
        ["facts/bad.yaml:10: fact 'x.one': expect: needs exactly one operator, found 2"],
    ),
    (
        "between not a pair",
        fact("check:\n  probe: gpu.count\n  expect: {between: [1]}\n"),
        ["facts/bad.yaml:10: fact 'x.one': expect.between: expected [low, high] numbers"],
    ),
    (
        "nested invalid regex in each",
        fact("check:\n  probe: gpu.names\n  expect: {each: {regex: '('}}\n"),
        [
            "facts/bad.yaml:10: fact 'x.one': expect.each.regex: invalid regex '(': "
            "missing ), unterminated subpattern at position 0"
        ],
    ),
    (
        "unknown target",
        fact("target: llm-three\n"),
        ["facts/bad.yaml:8: fact 'x.one': unknown target 'llm-three' (known: box, here)"],
    ),
    (
        "unknown check target",
        fact("check:\n  probe: gpu.count\n  target: nowhere\n"),
        ["facts/bad.yaml:10: fact 'x.one': unknown target 'nowhere' (known: box, here)"],
    ),
    (
        "unknown milestone",
        fact("since: '9999'\n"),
        ["facts/bad.yaml:8: fact 'x.one': unknown milestone '9999' (known: 3157, 3478, 4504)"],
    ),
    (
        "until before since",
        fact("since: '4504'\nuntil: '3157'\n"),
        ["facts/bad.yaml:9: fact 'x.one': until '3157' is not after since '4504'"],
    ),
    (
        "unknown milestone in history",
        fact("history:\n  - {at: '1', status: assumed}\n"),
        ["facts/bad.yaml:9: fact 'x.one': unknown milestone '1'"],
    ),
    (
        "category key in wrong category",
        fact("symptom: it hangs\n"),
        ["facts/bad.yaml:8: fact 'x.one': key 'symptom' is only for category pitfalls"],
    ),
    (
        "pitfall missing cause and fix",
        fact("symptom: it hangs\n", category="pitfalls"),
        [
            "facts/bad.yaml:2: fact 'x.one': category pitfalls requires key 'cause'",
            "facts/bad.yaml:2: fact 'x.one': category pitfalls requires key 'fix'",
        ],
    ),
    (
        "progress bad state",
        fact("state: finished\n", category="progress"),
        [
            "facts/bad.yaml:8: fact 'x.one': state: 'finished' is not one of: done, "
            "in_progress, todo, failed, blocked"
        ],
    ),
    (
        "sources empty",
        fact("").replace("sources: [{seed: a.txt, message: 1}]", "sources: []"),
        ["facts/bad.yaml:7: fact 'x.one': sources: needs at least 1 item"],
    ),
    (
        "source unknown key",
        fact("").replace("{seed: a.txt, message: 1}", "{seed: a.txt, msg: 1}"),
        [
            "facts/bad.yaml:7: fact 'x.one': unknown key 'msg' (known: date, message, note, "
            "quote, run, runbook, seed, step, target)"
        ],
    ),
    (
        "timeout not positive",
        fact("check:\n  probe: gpu.count\n  timeout: 0\n"),
        ["facts/bad.yaml:10: fact 'x.one': check.timeout: must be > 0"],
    ),
    (
        "approx without tolerance",
        fact("check:\n  probe: mem.total_gib\n  expect: {approx: {value: 449}}\n"),
        ["facts/bad.yaml:10: fact 'x.one': expect.approx: keys are value and rel or abs"],
    ),
    (
        "boolean where integer expected",
        fact("", category="tokenizer") + "    token_id: true\n",
        ["facts/bad.yaml:8: fact 'x.one': token_id: expected integer, got boolean"],
    ),
]


@pytest.mark.parametrize(("name", "text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_malformed_fact_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, expected: list[str]
) -> None:
    code, lines = lint(make_kb(tmp_path, text), capsys)
    assert code == 2
    assert sorted(lines) == sorted(expected)


def test_every_problem_reported_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = fact("colour: red\ntarget: nowhere\nlinks: {see_also: [missing.one]}\n")
    make_kb(tmp_path, text, extra={"facts/second.yaml": "facts: [\n"})
    code, lines = lint(tmp_path, capsys)
    assert code == 2
    files = {line.split(":")[0] for line in lines}
    assert files == {"facts/bad.yaml", "facts/second.yaml"}
    assert len(lines) == 4


def test_targets_file_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_kb(tmp_path, GOOD.replace("hw.gpu.count", "hw.other"))
    (tmp_path / "targets.yaml").write_text(
        "targets:\n  box: {host: box.invalid, jump: gate}\n"
        "  loop1: {host: a.invalid, jump: loop2}\n"
        "  loop2: {host: b.invalid, jump: loop1}\n  nohost: {user: root}\n"
    )
    code, lines = lint(tmp_path, capsys)
    assert code == 2
    assert "targets.yaml:2: target 'box': unknown jump 'gate'" in lines
    assert "targets.yaml:3: target 'loop1': jump loop" in lines
    assert "targets.yaml:5: target 'nohost': ssh needs 'host'" in lines


def test_custom_probe_in_checks_is_known(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    probe = 'def think(path, token="<think>"):\n    """id of a token"""\n    return 1\n\n'
    probe += 'PROBES = {"kimi.think": think}\n'
    text = fact("check:\n  probe: kimi.think\n  args: {tokn: x}\n")
    make_kb(tmp_path, text, extra={"checks/kimi.py": probe})
    code, lines = lint(tmp_path, capsys)
    assert code == 2
    assert lines == [
        "facts/bad.yaml:10: fact 'x.one': probe kimi.think needs argument 'path'",
        "facts/bad.yaml:10: fact 'x.one': probe kimi.think takes no argument 'tokn' "
        "(takes: path, token)",
    ]


def test_lint_never_prints_a_traceback(tmp_path: Path) -> None:
    make_kb(tmp_path, "facts:\n  - id: a\n    title: [\n")
    proc = subprocess.run(
        [sys.executable, "-m", "factbook.commands.cli", "--root", str(tmp_path), "lint"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "facts/bad.yaml:4: YAML syntax error" in proc.stdout


def test_clean_kb_lints_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_kb(tmp_path, GOOD.replace("hw.gpu.count", "hw.other"))
    code, lines = lint(tmp_path, capsys)
    assert code == 0
    assert lines == ["ok: 2 facts, 3 milestones, 2 targets, 2 checks"]


def test_no_facts_folder_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["--root", str(tmp_path), "lint"]) == 2
    assert "no facts/ folder here" in capsys.readouterr().err
