# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile knowledge bases, round 4 (issue 25): places tests/test_hostile_kb.py's corpus did
not reach yet, in the same table form and checked by the same `run_case` (no file outside
changes or shows up, no marker appears, no traceback, exit code, fragment, time and memory).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_kb import Case, run_case


def alias_bomb(indent: str = "") -> str:
    """`bomb:` with nine levels of ten aliases, `&a9` the last: 400 bytes that a plain
    `safe_load` builds as shared lists and `str()` spells out as 10**9 strings."""
    levels = [f"{indent}  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"]
    levels += [
        f"{indent}  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 10)
    ]
    return f"{indent}bomb:\n" + "".join(levels)


# fmt: off
CASES: list[Case] = [
    # YAML the handbook read with a plain safe_load: aliases built, then spelled out by str()
    Case("mkdocs.yml site_name an alias bomb, docs", {"mkdocs.yml": alias_bomb() + "site_name: *a9\n"}, "docs", 0, "pages generated", isolated=True, max_s=20),
    Case("status document front matter an alias bomb, docs", {"docs/status/x.md": "---\n" + alias_bomb() + "title: *a9\ndate: *a9\n---\n# Heading\n"}, "docs", 0, "pages generated", isolated=True, max_s=20),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_knowledge_base_round4(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)
