"""`factbook lint --format text|json|sarif|github` and the pre-commit hook.

SARIF is validated against the official OASIS SARIF 2.1.0 schema (tests/data, source named in
tests/data/README.md); GitHub workflow commands are read back with the unescaping rules GitHub
documents; the hook manifest is loaded by pre-commit's own manifest loader.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from factbook.commands.lint import collect_problems
from factbook.commands.lint_output import github_command, render, repo_path, rule_of
from factbook.errors import Problem
from tests.helpers import cli, fact, make_kb

ROOT = Path(__file__).resolve().parents[1]
SARIF = jsonschema.Draft4Validator(
    json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
)

# Messages and paths with every character a workflow command or a URI must escape.
TRICKY = [
    Problem("facts/a b,c:d%.yaml", 3, "100% wrong, see: here\nsecond line\r\nthird"),
    Problem("facts/x.yaml", 1, "::error file=evil.py::forged %0A %25 \x1b[31mred"),
    Problem("targets.yaml", 7, "ünïcödé 日本 \ud800 lone surrogate"),
    Problem("runbooks/serve.md", 12, "step 'up': sglang launch refused"),
    Problem("checks/p.py", 0, "no line known"),
]


@pytest.fixture
def broken_kb(tmp_path: Path) -> Path:
    facts = [
        fact("hw.a", "cpu.threads", {"ge": 1}, target="local"),
        fact("hw.a", "cpu.threads", {"ge": 1}, target="nowhere"),
        fact("hw.b", "no.such.probe", {"eq": 1}),
        fact("hw.c", "cpu.threads", {"eq": 1}, category="not-a-category"),
    ]
    root = make_kb(tmp_path / "kb", facts)
    (root / "facts" / "bad, name: 100%.yaml").write_text("facts:\n  - id: [unclosed\n")
    return root


def test_text_is_file_line_message(broken_kb: Path) -> None:
    code, out, err = cli(broken_kb, "lint")
    _, problems = collect_problems(broken_kb)
    assert code == 2 and len(problems) >= 4
    assert out.splitlines() == [str(p) for p in problems]
    assert f"{len(problems)} problem(s)" in err
    assert cli(broken_kb, "lint", "--format", "text")[1] == out


def test_json_is_a_list_of_located_problems(broken_kb: Path) -> None:
    code, out, _ = cli(broken_kb, "lint", "--format", "json")
    _, problems = collect_problems(broken_kb)
    data = json.loads(out)
    assert code == 2
    assert [(d["file"], d["line"], d["message"]) for d in data] == [
        (p.file, p.line, p.message) for p in problems
    ]
    assert {d["rule"] for d in data} == {"fact-file"}
    assert {d["severity"] for d in data} == {"error"}


def test_sarif_is_valid_against_the_official_schema(
    broken_kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(broken_kb.parent)
    code, out, _ = cli(broken_kb, "lint", "--format", "sarif")
    log = json.loads(out)
    SARIF.validate(log)
    _, problems = collect_problems(broken_kb)
    results = log["runs"][0]["results"]
    assert code == 2 and len(results) == len(problems)
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    for result, problem in zip(results, problems, strict=True):
        where = result["locations"][0]["physicalLocation"]
        from urllib.parse import unquote

        assert unquote(where["artifactLocation"]["uri"]) == f"kb/{problem.file}"
        assert where["region"]["startLine"] == problem.line
        assert result["message"]["text"] == problem.message
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"] == rule_of(problem)


def test_sarif_of_tricky_problems_is_valid(tmp_path: Path) -> None:
    log = json.loads(render("sarif", TRICKY, root=tmp_path / "kb", cwd=tmp_path))
    SARIF.validate(log)
    results = log["runs"][0]["results"]
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "kb/facts/a%20b%2Cc%3Ad%25.yaml"
    )
    assert "region" not in results[4]["locations"][0]["physicalLocation"]  # line 0: unknown
    outside = json.loads(render("sarif", TRICKY[:1], root=tmp_path, cwd=tmp_path / "elsewhere"))
    SARIF.validate(outside)
    uri = outside["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert uri["artifactLocation"]["uri"].startswith("file:///")


def test_sarif_schema_check_can_fail() -> None:
    """The official schema really judges: a log without a message is refused."""
    log = json.loads(render("sarif", TRICKY[:1], root=Path("/kb"), cwd=Path("/")))
    del log["runs"][0]["results"][0]["message"]
    assert not SARIF.is_valid(log)


_COMMAND = re.compile(r"^::(?P<name>[a-z]+) (?P<props>[^:]*)::(?P<data>.*)$")


def _unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _unescape_property(text: str) -> str:
    return _unescape_data(text.replace("%3A", ":").replace("%2C", ","))


def parse_workflow_command(line: str) -> tuple[str, dict[str, str], str]:
    """Read `::name k=v,k=v::data` as GitHub's runner does (split, then unescape)."""
    match = _COMMAND.match(line)
    assert match, line
    props = dict(item.split("=", 1) for item in match.group("props").split(","))
    return (
        match.group("name"),
        {k: _unescape_property(v) for k, v in props.items()},
        _unescape_data(match.group("data")),
    )


def test_github_commands_read_back_exactly(tmp_path: Path) -> None:
    text = render("github", TRICKY, root=tmp_path / "kb", cwd=tmp_path)
    lines = text.splitlines()
    assert len(lines) == len(TRICKY)
    for line, problem in zip(lines, TRICKY, strict=True):
        name, props, data = parse_workflow_command(line)
        assert name == "error"
        assert props["file"] == f"kb/{problem.file}"
        assert props.get("line") == (str(problem.line) if problem.line else None)
        assert props["title"] == f"factbook lint: {rule_of(problem)}"
        if "\x1b" in problem.message:
            assert "\x1b" not in data and "\\x1b[31mred" in data
        elif "\ud800" in problem.message:
            assert data == problem.message.replace("\ud800", "\\ud800")
        else:
            assert data == problem.message.replace("\r", "\\r")


def test_github_format_from_the_cli(broken_kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(broken_kb)
    code, out, _ = cli(broken_kb, "lint", "--format", "github")
    _, problems = collect_problems(broken_kb)
    assert code == 2
    read = [parse_workflow_command(line) for line in out.splitlines()]
    assert [(p["file"], p["line"], d) for _, p, d in read] == [
        (repo_path(p, root=broken_kb, cwd=broken_kb), str(p.line), p.message) for p in problems
    ]
    assert github_command(problems[0], path="x").startswith("::error file=x,line=")


@pytest.mark.parametrize("fmt", ["json", "sarif", "github"])
def test_clean_knowledge_base_keeps_stdout_machine_readable(tmp_path: Path, fmt: str) -> None:
    root = make_kb(tmp_path / "kb", [fact("hw.a", "cpu.threads", {"ge": 1}, target="local")])
    code, out, err = cli(root, "lint", "--format", fmt)
    assert code == 0 and err.startswith("ok: 1 facts")
    if fmt == "json":
        assert json.loads(out) == []
    elif fmt == "sarif":
        SARIF.validate(json.loads(out))
        assert json.loads(out)["runs"][0]["results"] == []
    else:
        assert out == ""


def test_pre_commit_hook_manifest() -> None:
    """pre-commit's own loader accepts the manifest; the hook runs factbook lint."""
    clientlib = pytest.importorskip("pre_commit.clientlib")
    hooks = clientlib.load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))
    hook = next(h for h in hooks if h["id"] == "factbook-lint")
    scripts = _console_scripts()
    assert hook["entry"].split()[0] in scripts and hook["language"] == "python"
    assert not hook["pass_filenames"]
    pattern = re.compile(hook["files"])
    for path in (
        "facts/hw.yaml",
        "targets.yaml",
        "milestones.yaml",
        "checks/p.py",
        "runbooks/a.md",
    ):
        assert pattern.search(path), path
    for path in (
        "README.md",
        "src/factbook/commands/cli.py",
        "results/latest.json",
        "docs/facts.yaml",
    ):
        assert not pattern.search(path), path


def _console_scripts() -> set[str]:
    text = (ROOT / "pyproject.toml").read_text()
    block = text.split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    return {line.split("=")[0].strip() for line in block.splitlines() if "=" in line}


def test_pre_commit_hook_entry_runs_with_root_after_the_command(broken_kb: Path) -> None:
    """The hook's entry plus `args: [--root, DIR]` (a knowledge base in a subfolder) works."""
    hook = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())[0]
    entry = hook["entry"].split()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    argv = [
        sys.executable,
        "-m",
        "factbook.commands.cli",
        *entry[1:],
        "--root",
        "kb",
        "--format",
        "github",
    ]
    done = subprocess.run(
        argv, cwd=broken_kb.parent, capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout.startswith("::error file=kb/")
