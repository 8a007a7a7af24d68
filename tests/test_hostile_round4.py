# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile knowledge bases, round 4 (issue 25): places tests/test_hostile_kb.py's corpus did
not reach yet, in the same table form and checked by the same `run_case` (no file outside
changes or shows up, no marker appears, no traceback, exit code, fragment, time and memory).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_kb import PID, Case, Link, make_outside, plant, run_case

UP = "../" * 40  # from a scratch copy in any temporary folder up to /


def planted_proposal(category: str) -> str:
    """A pending proposal (as an MCP client leaves one) of a new fact in `category`."""
    fact = f"{{id: hw.evil.x, category: '{category}', title: t, statement: s., status: assumed, sources: [{{note: x}}]}}"
    return f"id: {PID}\norigin: mcp\nsummary: new fact\nreason: r\nitem:\n  new: {fact}\n"


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
    # a new fact's category names its file: facts/<category>.yaml was written before lint ran
    Case("proposal of a category leading out, proposals show", {f"proposals/{PID}.yaml": planted_proposal(UP + "{out}/evil")}, ["proposals", "show", PID], 2, "unknown category"),
    Case("proposal of a category leading out, proposals accept", {f"proposals/{PID}.yaml": planted_proposal(UP + "{out}/evil")}, ["proposals", "accept", PID], 2, "unknown category"),
    # run files read by the handbook's measured history: each line is whatever the file says
    *[Case(f"run file line {n}, docs", {"results/runs/r1.jsonl": '{"run": {"id": "r1"}}\n' + line + "\n"}, "docs", 0, "pages generated") for n, line in (("a list", "[1]"), ("a number", "5"), ("naming a list as its fact", '{"fact": [1], "probe": "measure.x"}'), ("100,000 levels deep", "[" * 100_000 + "]" * 100_000))],
    # MkDocs walks docs_dir with os.walk(followlinks=True) before any plugin runs
    Case("mkdocs.yml docs/ folder links looping, lint", {"mkdocs.yml": "site_name: x\n", "docs/about.md": "# a\n", "docs/a": Link("."), "docs/b": Link(".")}, "lint", 2, "mkdocs.yml:1: docs_dir: docs/a leads to", max_s=20),
    Case("mkdocs.yml docs/ folder link to /, lint", {"mkdocs.yml": "site_name: x\n", "docs/r": Link("/")}, "lint", 2, "docs_dir: docs/r leads to /, outside the knowledge base", max_s=20),
    Case("mkdocs.yml docs_dir with two ways into one folder, lint", {"mkdocs.yml": "site_name: x\ndocs_dir: d0\n", "d0/x": Link("../d1"), "d0/y": Link("../d1"), "d1/p.md": "# p\n"}, "lint", 2, "mkdocs.yml:2: docs_dir: d0/y leads to", max_s=20),
    Case("mkdocs.yml docs/ a folder linked once inside, lint", {"mkdocs.yml": "site_name: x\n", "docs/about.md": "# a\n", "docs/more": Link("../notes"), "notes/n.md": "# n\n"}, "lint", 0, "ok: 1 facts"),
    # MkDocs builds an alias as one shared value, then validates and walks it (nav: *a8 was a MemoryError traceback)
    Case("mkdocs.yml nav an alias bomb, lint", {"mkdocs.yml": "site_name: x\nextra:\n  " + alias_bomb("  ").strip() + "\nnav: *a9\n"}, "lint", 2, "spells out more than 200,000 values through aliases"),
    Case("mkdocs.yml recursive alias, lint", {"mkdocs.yml": "site_name: x\nextra: &r {a: 1, b: *r}\n"}, "lint", 2, "mkdocs.yml:2: YAML alias loop"),
    Case("mkdocs.yml a few aliases, lint", {"mkdocs.yml": "site_name: &n x\nextra:\n  a: &e [1, 2]\n  b: *e\n  c: *n\n"}, "lint", 0, "ok: 1 facts"),
    # trusting the config's code (FACTBOOK_TRUST_MKDOCS_CODE) lets it run code and publish outside, never hang
    Case("trusted mkdocs.yml, docs/ folder links looping, lint", {"mkdocs.yml": "site_name: x\n", "docs/about.md": "# a\n", "docs/a": Link("."), "docs/b": Link(".")}, "lint", 2, "mkdocs.yml:1: docs_dir: docs/a leads to", max_s=20, env={"FACTBOOK_TRUST_MKDOCS_CODE": "1"}),
    Case("trusted mkdocs.yml, nav an alias bomb, lint", {"mkdocs.yml": "site_name: x\nextra:\n  " + alias_bomb("  ").strip() + "\nnav: *a9\n"}, "lint", 2, "spells out more than 200,000 values through aliases", env={"FACTBOOK_TRUST_MKDOCS_CODE": "1"}),
    Case("trusted mkdocs.yml, hooks and a docs link outside, lint", {"mkdocs.yml": "site_name: x\nhooks: [h.py]\n", "docs/o": Link("{out}")}, "lint", 0, "ok: 1 facts", env={"FACTBOOK_TRUST_MKDOCS_CODE": "1"}),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_knowledge_base_round4(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


def test_mcp_propose_fact_of_a_category_leading_out_writes_nothing(tmp_path: Path) -> None:
    """propose_fact's category named the file a new fact went to in the scratch copy:
    `../` enough times wrote evil.yaml wherever the client wanted, write_facts or not."""
    import dataclasses

    from factbook.errors import FactbookError
    from factbook.integrations.mcp.settings import McpSettings
    from factbook.integrations.mcp.tools import Toolbox

    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, {})
    for write_facts in (False, True):
        box = Toolbox(root, dataclasses.replace(McpSettings(), write_facts=write_facts))
        for category in (f"{UP}{out}/evil", "hardware/../../../evil", ["hardware"]):
            # refused before any file is named: too long, not a string, or not a category
            with pytest.raises(FactbookError, match="category"):
                box.propose_fact("hw.x", category, "t", "s.", "r")  # type: ignore[arg-type]
    assert not list(tmp_path.rglob("evil*"))
    assert "hw.x" in str(box.propose_fact("hw.x", "hardware", "t", "s.", "r")["diff"])


@pytest.mark.parametrize("trusted", [False, True], ids=["vetted", "trusted"])
def test_mkdocs_build_stops_on_a_docs_link_loop_instead_of_walking_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trusted: bool
) -> None:
    """`mkdocs build` with docs/a -> . and docs/b -> . walked 2**N paths (over 30 s, no
    end in sight); the factbook plugin now stops it while the config loads, in one line,
    also where whoever builds trusts the config's code (trust is not a licence to hang)."""
    from handbook_support import mkdocs_build

    if trusted:
        monkeypatch.setenv("FACTBOOK_TRUST_MKDOCS_CODE", "1")

    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    files: dict[str, str | bytes | Link] = {
        "mkdocs.yml": "site_name: x\nplugins:\n  - factbook\n",
        "docs/about.md": "# About\n",
        "docs/a": Link("."),
        "docs/b": Link("."),
    }
    plant(root, out, files)
    proc = mkdocs_build(root, "-q", "-d", str(tmp_path / "site"), timeout=60)
    assert proc.returncode != 0
    assert "docs_dir: docs/a leads to" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
