# ruff: noqa: E501  (the table keeps one case per line, so a new case is one line)
"""Hostile input, round 7 (issue 25): the MCP tools called with arguments the server's schema
would refuse (the Toolbox is the API behind it and checks every argument itself), and the
shell completion scripts fed hostile fact ids, tags and targets.

Every bad argument is one line naming it (a FactbookError), never a TypeError or
AttributeError from deep inside, and never an error line that quotes a megabyte back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import kb_copy

from factbook.errors import FactbookError
from factbook.integrations.mcp.tools import Toolbox


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Toolbox:
    """A Toolbox over a copy of the shipped facts (the calls below are refused before any
    write, so the module shares one)."""
    return Toolbox(kb_copy(tmp_path_factory.mktemp("kb"), ("facts", "checks")))


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


NEW = {"id": "hw.evil.x", "category": "hardware", "title": "t", "statement": "s.", "reason": "r"}
CHANGE = {"id": "hw.gpu.model", "reason": "r"}

# (name, call, fragment of the one-line error)
BAD: list[tuple[str, Callable[[Toolbox], Any], str]] = [
    ("search limit a string", lambda b: b.search_facts("gpu", limit="5"), "limit must be"),
    ("search limit a float", lambda b: b.search_facts("gpu", limit=2.5), "limit must be"),
    ("search limit a bool", lambda b: b.search_facts("gpu", limit=True), "limit must be"),
    ("pitfalls limit a string", lambda b: b.match_pitfalls("hang", limit="3"), "limit must be"),
    ("search category a number", lambda b: b.search_facts("gpu", category=5), "category must be"),
    ("search status a mapping", lambda b: b.search_facts("gpu", status={}), "status must be"),
    ("show a 1 MB id", lambda b: b.show_fact("a" * 1_000_000), "at most 200"),
    ("change a 1 MB id", lambda b: b.propose_change("a" * 1_000_000, "r", 1), "at most 200"),
    ("propose a 100,000-character id", lambda b: b.propose_fact(**{**NEW, "id": "a" * 100_000}), "at most 200"),
    ("propose tags a string", lambda b: b.propose_fact(**NEW, tags="abc"), "tags must be a list"),
    ("propose tags a mapping", lambda b: b.propose_fact(**NEW, tags={"a": 1}), "tags must be a list"),
    ("propose 51 tags", lambda b: b.propose_fact(**NEW, tags=["a"] * 51), "at most 50"),
    ("propose fields a list", lambda b: b.propose_fact(**NEW, fields=[1]), "fields must be an object"),
    ("propose status a number", lambda b: b.propose_fact(**NEW, status=5), "status must be"),
    ("propose category a number", lambda b: b.propose_fact(**{**NEW, "category": 5}), "category must be"),
    ("propose a value 5,000 levels deep", lambda b: b.propose_fact(**NEW, value=_deep(5000)), "nested too deeply"),
    ("change fields a list", lambda b: b.propose_change(**CHANGE, fields=[1]), "fields must be an object"),
    ("change status a number", lambda b: b.propose_change(**CHANGE, status=5), "status must be"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "call", "fragment"), BAD, ids=[b[0] for b in BAD])
def test_mcp_tool_arguments_are_checked(
    box: Toolbox, name: str, call: Callable[[Toolbox], Any], fragment: str
) -> None:
    with pytest.raises(FactbookError) as caught:
        call(box)
    message = str(caught.value)
    assert fragment in message, message
    assert "\n" not in message and len(message) < 500, message[:300]
    assert not list((box.root / "proposals").glob("*.yaml")), "a proposal was written"


FISH_TAGS = ["$(touch PWN1)", "`touch PWN2`", "a;touch PWN3", "*", "{a,b}", "~", "a b"]


def test_fish_completion_runs_and_globs_no_hostile_tag(tmp_path: Path) -> None:
    """The generated fish function, sourced in a real fish and asked as fish asks it
    (`complete -C`), in a folder with files: each hostile tag comes back as itself (fish
    escapes it when inserting), `*` not the file names, and no command in a tag runs."""
    import json
    import shutil
    import subprocess

    from helpers import require
    from test_hostile_kb import completion_shell

    fish = shutil.which("fish")
    require(None if fish else "fish is not installed (Debian's fish; scripts/test installs it)")
    assert fish is not None
    root = tmp_path / "kb"
    (root / "facts").mkdir(parents=True)
    fact = {"id": "hw.x", "category": "hardware", "title": "t", "statement": "s."}
    fact |= {"status": "assumed", "sources": [{"note": "x"}], "tags": FISH_TAGS}
    (root / "facts" / "hardware.yaml").write_text(json.dumps({"facts": [fact]}))
    work, script, env = completion_shell(tmp_path, "fish")
    program = f"source {script}; complete -C 'factbook --root {root} verify --tag '"
    proc = subprocess.run(
        [fish, "--no-config", "-c", program],
        capture_output=True, text=True, env=env, cwd=work, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.splitlines()) == sorted(FISH_TAGS), proc.stdout
    assert not [p for p in tmp_path.rglob("PWN*")], "a command in a tag ran"


def test_a_fact_id_is_at_most_200_characters(tmp_path: Path) -> None:
    """The fact id pattern had no bound: a 100,000-character id passed lint and went on into
    file names, HTML ids and metric labels. Lint now says how long it is, in one short line."""
    from helpers import cli, fact, make_kb

    long_id = "hw." + "a" * 100_000
    kb = make_kb(tmp_path / "kb", [fact(long_id, "cpu.threads", {"ge": 1}, target="local")])
    code, out, err = cli(kb, "lint")
    assert code == 2, (out, err)
    text = out + err
    assert "100003 characters; at most 200" in text
    assert max(len(line) for line in text.splitlines()) < 1_000
    kb = make_kb(
        tmp_path / "ok", [fact("hw." + "a" * 197, "cpu.threads", {"ge": 1}, target="local")]
    )
    assert cli(kb, "lint")[0] == 0
