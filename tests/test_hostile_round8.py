"""Hostile knowledge bases, round 8 (issue 25): names a knowledge base writes are quoted
in messages by their head. A fact whose `target`, `since`, a link or its probe named a 6 kB
string, or a runbook naming a 6 kB fact id, had lint print that string whole, once per line
that used it (nesting.py's round found them: its payloads went into every field).
"""

from __future__ import annotations

from test_hostile_kb import BASE

from factbook.commands.cli import run as cli
from factbook.knowledge.names import SHOWN_AT_MOST, shown

LONG = "x" * 6000


def test_shown_keeps_short_names_and_cuts_long_ones() -> None:
    assert shown("hw.gpu.count") == "hw.gpu.count"
    assert shown(LONG) == LONG[:SHOWN_AT_MOST] + "..."


def test_lint_quotes_long_references_by_their_head(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "kb"
    fact = (
        "facts:\n  - id: hw.long\n    category: hardware\n    title: t\n    statement: s\n"
        f"    status: assumed\n    target: {LONG}\n    since: 'm{LONG}'\n"
        f"    sources: [{{seed: a}}]\n    links: {{see_also: [hw.{LONG}]}}\n"
        f"    check: {{probe: p{LONG}, args: {{}}}}\n"
    )
    runbook = (
        "---\njupytext:\n  text_representation: {extension: .md, format_name: myst}\n"
        "kernelspec: {display_name: Python 3, language: python, name: python3}\n"
        f"factbook:\n  title: r\n  target: here\n  facts: [hw.{LONG}]\n---\n\n# r\n\n"
        "```{code-cell} ipython3\n---\nname: s\n---\nprint(1)\n```\n"
    )
    files = {**BASE, "facts/long.yaml": fact, "runbooks/r.md": runbook}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    assert cli(["--root", str(root), "lint"]) == 2
    said = capsys.readouterr()
    lines = (said.out + said.err).splitlines()
    for needle in ("unknown target", "unknown milestone", "no such fact", "unknown probe"):
        assert any(needle in line for line in lines), needle
    assert any("no fact 'hw.xxx" in line for line in lines)
    assert max(len(line) for line in lines) < 400, max(lines, key=len)[:200]
