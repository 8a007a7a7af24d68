"""Hostile knowledge bases, round 8 (issue 25).

Names a knowledge base writes are quoted in messages by their head: a fact whose `target`,
`since`, a link or its probe named a 6 kB string, or a runbook naming a 6 kB fact id, had
lint print that string whole, once per line that used it. Runbooks are read in time linear
in their size: each cell's line was found by counting the newlines before it, each fence's
closer by a search to the end of the file (40,000 unclosed openers in 1 MiB: 150 s), and
jupytext with nbformat read every one of 35,000 tiny cells (~15 s): at most MAX_CELLS now.
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

import pytest
from test_hostile_kb import BASE

from factbook.commands.cli import run as cli
from factbook.errors import LintFailed
from factbook.knowledge.names import KNOWN_SHOWN, SHOWN_AT_MOST, shown
from factbook.runbooks import format as runbook_format
from factbook.runbooks.format import CODE_FENCE, MAX_CELLS, load_runbook

LONG = "x" * 6000


def test_shown_keeps_short_names_and_cuts_long_ones() -> None:
    assert shown("hw.gpu.count") == "hw.gpu.count"
    assert shown(LONG) == LONG[:SHOWN_AT_MOST] + "..."


def lint_lines(root: Path, files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    """`files` planted in a knowledge base at `root`, and the lines lint prints (exit 2)."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    assert cli(["--root", str(root), "lint"]) == 2
    said = capsys.readouterr()
    return (said.out + said.err).splitlines()


def test_lint_quotes_long_references_by_their_head(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
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
    lines = lint_lines(root, files, capsys)
    for needle in ("unknown target", "unknown milestone", "no such fact", "unknown probe"):
        assert any(needle in line for line in lines), needle
    assert any("no fact 'hw.xxx" in line for line in lines)
    assert max(len(line) for line in lines) < 400, max(lines, key=len)[:200]


# --- runbooks: read in time linear in their size, at most MAX_CELLS cells ----------------

RUNBOOK_HEAD = (
    "---\njupytext:\n  text_representation: {extension: .md, format_name: myst}\n"
    "kernelspec: {display_name: Python 3, language: python, name: python3}\n"
    "factbook:\n  title: r\n  target: here\n---\n\n# r\n\n"
)


def _cells(n: int) -> str:
    return "".join(
        f"```{{code-cell}} ipython3\n---\nname: s{i}\n---\nprint({i})\n```\n\n" for i in range(n)
    )


@pytest.mark.parametrize(
    "body",
    [
        "```{code-cell} ipython3\n" * 40_000,  # openers, never closed: 150 s before
        "```{code-cell} ipython3\n---\nname: a\n" * 25_000,  # options never closed
        _cells(9_000),  # 9,000 steps: jupytext and nbformat, ~0.5 ms each
        "+++\n\ntext\n\n" * 60_000,  # markdown cells
    ],
    ids=["openers", "open-options", "steps", "markdown-cells"],
)
def test_a_runbook_of_too_many_cells_is_refused_in_one_line(tmp_path: Path, body: str) -> None:
    path = tmp_path / "runbooks" / "r.md"
    path.parent.mkdir()
    path.write_text(RUNBOOK_HEAD + body, encoding="utf-8")
    assert path.stat().st_size < 1 << 20  # inside the size bound: the cell bound refuses it
    started = time.perf_counter()
    with pytest.raises(LintFailed) as refused:
        load_runbook(path)
    assert time.perf_counter() - started < 5
    [problem] = refused.value.problems
    assert f"at most {MAX_CELLS} in one runbook" in problem.message
    assert problem.line == RUNBOOK_HEAD.count("\n") + 1 + (
        MAX_CELLS * body.count("\n") // max(1, _units(body))
    )


def _units(body: str) -> int:
    return body.count("{code-cell}") + body.count("+++")


def test_a_runbook_at_the_cell_bound_reads_quickly_with_every_line_right(tmp_path: Path) -> None:
    """MAX_CELLS steps, the last one's fence never closed: every step's line, and the one
    problem, where they are."""
    path = tmp_path / "runbooks" / "r.md"
    path.parent.mkdir()
    path.write_text(RUNBOOK_HEAD + _cells(MAX_CELLS - 1) + "```{code-cell} ipython3\nx = 1\n")
    started = time.perf_counter()
    runbook = load_runbook(path)
    assert time.perf_counter() - started < 10
    assert len(runbook.steps) == MAX_CELLS
    first = RUNBOOK_HEAD.count("\n") + 1
    assert [s.line for s in runbook.steps[:3]] == [first, first + 7, first + 14]
    unclosed = [p for p in runbook.problems if "never closed" in p.message]
    assert [p.line for p in unclosed] == [first + 7 * (MAX_CELLS - 1)]


def _unclosed_by_search(text: str) -> list[int]:
    """The replaced check, word for word: a search for a closer after each opener (the
    oracle: the one-pass check must find the same fences)."""
    out = []
    for fence in CODE_FENCE.finditer(text):
        opener = fence.group(1)
        closer = re.compile(rf"^{re.escape(opener[0])}{{{len(opener)},}}[ \t]*$", re.MULTILINE)
        start = text.find("\n", fence.end())
        if start < 0 or not closer.search(text, start):
            out.append(text.count("\n", 0, fence.start()) + 1)
    return out


def test_a_closing_fence_must_be_as_long_and_of_the_same_character(tmp_path: Path) -> None:
    path = tmp_path / "runbooks" / "r.md"
    path.parent.mkdir()
    cell = "{fence}{{code-cell}} ipython3\n---\nname: {name}\n---\nx\n{close}\n\n"
    text = RUNBOOK_HEAD + "".join(
        cell.format(fence=fence, name=name, close=close)
        for fence, name, close in [("```", "a", "```"), ("~~~", "b", "```"), ("````", "c", "```")]
    )
    path.write_text(text)
    never = [p.line for p in load_runbook(path).problems if "never closed" in p.message]
    first = RUNBOOK_HEAD.count("\n") + 1
    assert never == [first + 7, first + 14] == _unclosed_by_search(text)


def test_unclosed_fences_match_the_search_they_replace() -> None:
    """20,000 random runbooks of fences of both characters and several lengths, closed or
    not, at the end of a line or not (the check itself: jupytext takes ~10 ms a runbook)."""
    rng = random.Random(25)
    for _ in range(20_000):
        lines = []
        for _ in range(rng.randrange(1, 12)):
            fence = rng.choice("`~") * rng.randrange(3, 6)
            lines.append(rng.choice([f"{fence}{{code-cell}} ipython3", fence, fence + " ", "x"]))
        text = RUNBOOK_HEAD + "\n".join(lines) + rng.choice(["", "\n"])
        fences = list(CODE_FENCE.finditer(text))
        found = runbook_format._unclosed_fences(text, "r.md", fences, runbook_format._lines(text))
        assert [p.line for p in found] == _unclosed_by_search(text), text


def test_messages_list_what_is_known_by_its_head(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fleet's 5,000 targets made each `unknown target` line 40 kB (and listed its groups
    as `@fleet`, the command line's spelling, which a fact's `target:` does not take)."""
    root = tmp_path / "kb"
    names = [f"box{i}" for i in range(5000)]
    targets = "targets:\n" + "".join(f"  {n}: {{host: h{n}, user: u}}\n" for n in names)
    targets += f"groups:\n  fleet:\n    targets: [{', '.join(names)}]\n"
    fact = (
        "facts:\n"
        "  - id: hw.a\n    category: hardware\n    title: a\n    statement: a\n"
        "    status: assumed\n    target: '@fleet'\n    sources: [{seed: a}]\n"
        "  - id: hw.b\n    category: hardware\n    title: b\n    statement: b\n"
        "    status: assumed\n    target: nowhere\n    since: m9\n    sources: [{seed: a}]\n"
    )
    files = {**BASE, "targets.yaml": targets, "facts/a.yaml": fact}
    lines = lint_lines(root, files, capsys)
    assert any("a fact names group 'fleet' without '@' (target: fleet)" in x for x in lines)
    [unknown] = [x for x in lines if "unknown target or group 'nowhere'" in x]
    assert f"box{KNOWN_SHOWN - 1}, … {5000 - KNOWN_SHOWN:,} more; groups: fleet)" in unknown
    assert max(len(x) for x in lines) < 400
