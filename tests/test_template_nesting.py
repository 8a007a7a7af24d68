"""Templates nested too deep for Jinja's parser or Python's compiler are refused at their line.

Jinja parses and compiles recursively, and Python's compiler bounds nesting itself: 80
brackets deep was a RecursionError, 100 `if`s an IndentationError, ~25 `for`s "too many
statically nested blocks", and `factbook status` named no line for any of them. The sandbox
counts the nesting as the parser reads the tokens (handbook/sandbox.py, nesting_checked).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jinja2
import pytest

from factbook.handbook.sandbox import MAX_LOOPS, MAX_NESTING, KBSandbox


def _nested(open_: str, inner: str, close: str, depth: int) -> str:
    return open_ * depth + inner + close * depth


@pytest.mark.parametrize(
    ("source", "renders"),
    [
        ("{{ " + _nested("[", "1", "]", MAX_NESTING) + " }}", True),
        ("{{ " + _nested("[", "1", "]", MAX_NESTING + 1) + " }}", False),
        ("{{ " + _nested("(", "1", ")", 5000) + " }}", False),
        (_nested("{% if 1 %}", "x", "{% endif %}", MAX_NESTING), True),
        (_nested("{% if 1 %}", "x", "{% endif %}", 200), False),
        (_nested("{% for a in [1] %}", "x", "{% endfor %}", MAX_LOOPS), True),
        (_nested("{% for a in [1] %}", "x", "{% endfor %}", MAX_LOOPS + 1), False),
        (_nested("{% set y %}", "x", "{% endset %}", MAX_NESTING + 1), False),
        # statements that open nothing: as many as one likes
        ("{% set y = [1] %}" * 500 + "{{ y }}", True),
        ("{% if 1 %}a{% elif 2 %}b{% else %}c{% endif %}" * 500, True),
    ],
)
def test_nesting_is_bounded_before_the_parser(source: str, renders: bool) -> None:
    env = KBSandbox()
    if renders:
        env.from_string(source).render()
        return
    with pytest.raises(jinja2.TemplateSyntaxError) as caught:
        env.from_string(source)
    assert "nested more than" in str(caught.value) or "`for` loops" in str(caught.value)


def test_status_names_the_file_and_line_of_a_nested_macro(tmp_path: Path) -> None:
    """The line is the one where the bound is passed, in the file that passes it (here the
    knowledge base's own `_macros.j2`, included by factbook's status template)."""
    root = tmp_path / "kb"
    (root / "facts").mkdir(parents=True)
    (root / "templates").mkdir()
    (root / "milestones.yaml").write_text("milestones: []\n", encoding="utf-8")
    deep = _nested("{% if 1 %}\n", "x", "{% endif %}", 60)
    (root / "templates" / "_macros.j2").write_text("{# one #}\n" + deep, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "factbook", "--root", str(root), "status", "--out", "-"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"factbook: error: templates/_macros.j2:{MAX_NESTING + 2}: status template: "
        f"nested more than {MAX_NESTING} levels deep (brackets and blocks)"
    )
    assert "Traceback" not in done.stderr
