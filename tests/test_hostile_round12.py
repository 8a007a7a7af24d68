"""Hostile round 12: redaction that grows the text, redact.yaml entries made of Markdown, and
a results/ folder that takes the run file but not latest.json.

Each case was found by trying it (session of 2026-12-07) and failed before its fix:
- one-letter hosts each redacted to `host-1` made a budgeted dump diverge: at 1,500 tokens it
  showed no fact at all;
- `secrets: ['---']` or `hosts: ['|']` redacted the front matter's fences and every table's
  separators; a pattern that matched across line ends made the document one line;
- with results/ immutable and results/runs/ writable, verify wrote its run file and then failed
  on latest.json, and the two disagreed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import cli, make_kb

import factbook.api
from factbook.knowledge.kb import load_kb


def _hosts_kb(root: Path) -> Path:
    """Sixty facts, each naming the one-letter host `q` forty times (each becomes `host-1`)."""
    facts = [
        {
            "id": f"hw.n{i}",
            "category": "hardware",
            "title": f"n{i}",
            "statement": "node " + " ".join(["q"] * 40) + f" z{i}",
            "status": "assumed",
            "sources": [{"note": "test"}],
        }
        for i in range(60)
    ]
    make_kb(root, facts)
    (root / "redact.yaml").write_text("hosts: [q]\n")
    return root


@pytest.mark.parametrize("budget", [600, 800, 1500])
def test_redaction_that_lengthens_text_still_fills_the_budget(tmp_path: Path, budget: int) -> None:
    kb = load_kb(_hosts_kb(tmp_path / "kb"))
    text = factbook.api.status(kb, budget=budget, redact=True)
    shown = text.count("node host-1")
    tokens = int(text.split("\ntokens: ", 1)[1].split("\n", 1)[0])
    assert tokens <= budget
    # each fact is ~90 tokens redacted: a budget this size holds several, and used to hold none
    assert shown >= (budget - 450) // 100, (shown, text[-1500:])
    assert " q " not in text


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ("secrets: ['-----']", "secrets[0] has no letter or digit"),
        ("hosts: ['|']", "hosts[0] has no letter or digit"),
        ("users: ['##']", "users[0] has no letter or digit"),
    ],
)
def test_redact_entries_made_of_markdown_are_refused(
    tmp_path: Path, entry: str, fragment: str
) -> None:
    root = make_kb(tmp_path / "kb", [])
    (root / "redact.yaml").write_text(entry + "\n")
    code, out, err = cli(root, "status", "--redact", "--out", "-")
    assert code == 2 and fragment in err and "Traceback" not in err, (code, err)
    assert out == ""


def test_environment_secret_made_of_markdown_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_kb(tmp_path / "kb", [])
    monkeypatch.setenv("FACTBOOK_SECRETS", "long-enough-secret, --------")
    code, _, err = cli(root, "status", "--redact", "--out", "-")
    assert code == 2 and "$FACTBOOK_SECRETS: entry 2 has no letter or digit" in err


def _one_fact_kb(root: Path, statement: str) -> Path:
    fact = {
        "id": "sw.tok",
        "category": "software",
        "title": "token",
        "statement": statement,
        "status": "assumed",
        "sources": [{"note": "test"}],
    }
    return make_kb(root, [fact])


def test_pattern_matching_markdown_keeps_the_document_lines(tmp_path: Path) -> None:
    """A pattern that matches separators alone hides nothing; one that runs across line ends
    hides every worded line it covers and keeps the line breaks."""
    root = _one_fact_kb(tmp_path / "kb", "the key is SECRETX-abc123 here")
    code, plain, err = cli(root, "status", "--redact", "--out", "-")
    assert code == 0, err
    (root / "redact.yaml").write_text("patterns: ['[|#-]+']\n")
    code, same, err = cli(root, "status", "--redact", "--out", "-")
    assert code == 0 and same == plain, err
    (root / "redact.yaml").write_text("patterns: ['(?s)SECRETX.*']\n")
    code, hidden, err = cli(root, "status", "--redact", "--out", "-")
    assert code == 0, err
    assert "SECRETX" not in hidden and "abc123" not in hidden and "secret-1" in hidden
    assert len(hidden.splitlines()) == len(plain.splitlines())
    assert hidden.splitlines()[:3] == plain.splitlines()[:3]  # before the match: untouched


def test_run_file_and_latest_are_written_both_or_neither(tmp_path: Path) -> None:
    """results/ immutable (chattr +i: even root cannot add a file there), results/runs/ not:
    verify refuses before writing either file."""
    if shutil.which("chattr") is None:
        pytest.skip("no chattr")
    from helpers import fact

    root = make_kb(tmp_path / "kb", [fact("hw.cpus", "cpu.threads", {"ge": 1}, target="local")])
    code, _, err = cli(root, "verify", "hw.cpus")
    assert code in (0, 1), err
    results = root / "results"
    runs = sorted(p.name for p in (results / "runs").iterdir())
    latest = (results / "latest.json").read_bytes()
    if subprocess.run(["chattr", "+i", str(results)], capture_output=True).returncode:
        pytest.skip("chattr +i refused here")
    try:
        code, _, err = cli(root, "verify", "hw.cpus")
    finally:
        subprocess.run(["chattr", "-i", str(results)], check=True)
    assert code == 2 and "results: cannot write in this folder" in err, (code, err)
    assert "nothing written" in err and "Traceback" not in err
    assert sorted(p.name for p in (results / "runs").iterdir()) == runs
    assert (results / "latest.json").read_bytes() == latest
