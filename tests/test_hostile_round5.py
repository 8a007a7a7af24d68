# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile inputs, round 5 (issue 25): other people's files that factbook reads as their own
tools do (status dumps, Ansible inventories, ssh configs, results and runs from another
machine), in the same table form and checked by the same `run_case` as
tests/test_hostile_kb.py, plus plain tests where a property needs its own parser.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
from prometheus_client.parser import text_string_to_metric_families as classic_parse
from test_hostile_kb import Case, _in_process, make_outside, plant, run_case

from factbook.store.results import ResultRecord
from factbook.verification.openmetrics import to_openmetrics

RAW = ("\x1b", "\x07", "\u202e", "\u2028")
HIDDEN_DUMP = "# Status\n\n## Access\n\n- Node\x1b[2J\u202e: ssh ubuntu@node-a\x1b]0;x\x07.example -p 2202\n\n## Software\n\n- torch\x1b[31m 2.5.1 on node-a\u2028 x\n"
HINTED_DUMP = '# Status as of 2026-12-07\n\n## Discoveries\n\n### Engine notes\n\n- \u2705 torch 2.5.1 is installed. *(run here)* <!-- fb {"id": "sw.x\\u001b[31m", "value": "v\\u202e", "statement": "s\\u0007.", "target": "here"} -->\n'

# fmt: off
CASES: list[Case] = [
    # a dump is someone else's file: its hidden characters went raw to the terminal and into the facts --write wrote, which lint then refused
    Case("import: raw ESC, BEL and bidi controls in a hand-written dump, --write", {"dump.md": HIDDEN_DUMP}, ["import", "{kb}/dump.md", "--milestone", "1", "--write"], 0, "Node\\x1b[2J\\u202e: ssh ubuntu@node-a", absent=RAW, then="lint"),
    Case("import: hint JSON escapes decoding to ESC and U+202E, --write", {"dump.md": HINTED_DUMP}, ["import", "{kb}/dump.md", "--milestone", "1", "--write"], 0, "sw.x\\x1b[31m", absent=RAW, then="lint"),
    Case("import: a hint nested 10,000 levels deep", {"dump.md": HINTED_DUMP.replace('"v\\u202e"', "[" * 10_000 + "]" * 10_000)}, ["import", "{kb}/dump.md", "--milestone", "1"], 0, "dump.md: 1 items"),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round5(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


def test_openmetrics_of_long_and_hostile_names_is_one_series_each_and_parses() -> None:
    """Label values were clipped bare at 200 characters: two fact ids alike in their first
    200 (lint accepts ids of any length) became one series twice, and prometheus_client's
    OpenMetrics parser refused the whole /metrics page ("Invalid metric grouping"). Bidi
    controls and line separators also reached the page raw."""
    long = "hw." + "x" * 250
    names = [
        long + "1",
        long + "2",
        'a"b',
        "a\nb}",
        "x\\",
        "x\x1b[31m",
        "y\u202ez",
        "a\u2028b",
        "a\ud800b",
    ]
    records = [
        ResultRecord(
            fact=n,
            target='t"}\n',
            outcome="pass",
            reason="r",
            observed=1.5,
            time="2026-01-01T00:00:00Z",
            duration_s=0.5,
        )
        for n in names
    ]
    text = to_openmetrics(records, {"finished": "2026-01-01T00:00:00Z", "elapsed_s": 1.0})
    for parse in (om_parse, classic_parse):
        families = {f.name: f for f in parse(text)}
        facts = {s.labels["fact"] for s in families["factbook_check_observed"].samples}
        assert len(facts) == len(names)
    assert not any(ch in text for ch in ("\x1b", "\u202e", "\u2028", "\ud800"))


INVENTORY_TARGETS = "inventory: inv\ntargets:\n  here: {transport: local}\n"


@pytest.mark.parametrize(
    ("content", "mode", "code", "fragment"),
    [
        (
            b"#!/bin/sh\ntouch {out}/MARKER\n",
            0o755,
            2,
            "inv/zz: an executable inventory script or program, which Ansible would run; factbook never runs one",
        ),
        (
            b"\x7fELF\x02\x01\x01\x00\xd0\xff",
            0o755,
            2,
            "inv/zz: an executable inventory script or program",
        ),
        (
            b"#!/bin/sh\n[g]\nn9\n",
            0o644,
            0,
            "3 targets",
        ),  # Ansible cannot run it, then reads it as INI
        (b"[g]\nn9\n", 0o755, 0, "3 targets"),  # execve refuses it, then Ansible reads it as INI
    ],
    ids=["script", "binary", "shebang not executable", "executable INI"],
)
def test_executable_inventory_file_is_refused_as_ansible_would_run_it(
    tmp_path: Path, content: bytes, mode: int, code: int, fragment: str
) -> None:
    """Ansible's script plugin runs an executable inventory file with `#!`, or any binary;
    factbook runs neither and says so (a binary was `not UTF-8 (byte 0xd0)`, which did not)."""
    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, {"targets.yaml": INVENTORY_TARGETS, "inv/hosts.ini": "[g]\nn1\n"})
    program = root / "inv" / "zz"
    program.write_bytes(content.replace(b"{out}", str(out).encode()))
    program.chmod(mode)
    got, output, _ = _in_process(["--root", str(root), "lint"], 10)
    assert (got, "Traceback" in output) == (code, False), output
    assert fragment in output, output
    assert not (out / "MARKER").exists()


@pytest.mark.parametrize(
    "name",
    ["team: gpu", '"q', "*ref", "[x", "#1", "x #y", "!!python/name:os.system", "%x", "é \\ '"],
)
def test_init_writes_any_folder_name_as_a_site_name_lint_reads_back(
    tmp_path: Path, name: str
) -> None:
    """`site_name: @NAME@ handbook` took the name (the folder's, by default) as YAML: a folder
    named `team: gpu`, `[x` or `*ref` gave a mkdocs.yml that lint refused at once, `#1` an
    empty site_name, `!!python/name:...` a tag MkDocs resolves while it reads the file."""
    import yaml

    from factbook.knowledge.starter import create_kb

    root = tmp_path / "kb"
    create_kb(root, name=name, discover=False)
    assert (
        yaml.safe_load((root / "mkdocs.yml").read_text(encoding="utf-8"))["site_name"]
        == f"{name} handbook"
    )
    code, output, _ = _in_process(["--root", str(root), "lint"], 20)
    assert (code, "Traceback" in output) == (0, False), output


@pytest.mark.parametrize("name", ["x\rhooks: [h.py]", "a\x1b[2Jb", "a\u2028b", "a\u202eb"])
def test_init_refuses_a_name_with_a_hidden_character(tmp_path: Path, name: str) -> None:
    """Only `\\n` was refused: `\\r` is a YAML line break too, and the rest no reader sees."""
    from factbook.errors import UsageError
    from factbook.knowledge.starter import create_kb

    with pytest.raises(UsageError, match="no control characters"):
        create_kb(tmp_path / "kb", name=name, discover=False)
    assert not (tmp_path / "kb" / "mkdocs.yml").exists()
