"""Control and bidi characters written as YAML escapes (`"\\x1b[31m"`, `"\\u202e"`): lint names
each at its file:line, and every output shows them escaped, never raw (defence in depth: a
knowledge base with lint problems is still listed, shown and rendered)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import cli, fact, make_kb

from factbook.judging.sanitize import first_hidden, for_document
from factbook.knowledge.yamlsrc import parse_located

# (escape as written in YAML, the character it decodes to)
ESCAPES = [
    ("\\x1b[31m", "\x1b"),
    ("\\e]0;title\\a", "\x1b"),
    ("\\u202e", "\u202e"),
    ("\\u2066", "\u2066"),
    ("\\x07", "\x07"),
    ("\\r", "\r"),
    ("\\x00", "\x00"),
    ("\\N", "\x85"),
    ("\\L", "\u2028"),
    ("\\x9b2J", "\x9b"),
]
FIELDS = ["title", "statement", "value", "unit", "target", "tags", "sources", "key"]
RAW = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def fact_file(field: str, escaped: str) -> str:
    """A fact file whose one fact carries `"EVIL<escape>"` in `field`, on line 4."""
    text = f'"EVIL{escaped}"'
    lines = {
        "title": f"    title: {text}",
        "statement": f"    statement: {text}",
        "value": f"    value: {text}",
        "unit": f"    unit: {text}",
        "target": f"    target: {text}",
        "tags": f"    tags: [ok, {text}]",
        "sources": f"    sources: [{{seed: a.txt, quote: {text}}}]",
        "key": f"    {text}: 1",
    }
    head = "facts:\n  - id: hw.x\n    category: hardware\n"
    rest = {
        "title": "    title: T\n",
        "statement": "    statement: S.\n",
        "status": "    status: assumed\n",
        "sources": "    sources: [{seed: a.txt}]\n",
    }
    rest.pop(field, None)
    return head + lines[field] + "\n" + "".join(rest.values())


def kb(tmp_path: Path, facts_yaml: str) -> Path:
    root = make_kb(tmp_path / "kb", [])
    (root / "facts" / "facts.yaml").write_text(facts_yaml)
    (root / "milestones.yaml").write_text('milestones:\n  - {id: "1", title: first}\n')
    return root


@pytest.mark.parametrize(("escaped", "char"), ESCAPES, ids=[e for e, _ in ESCAPES])
@pytest.mark.parametrize("field", FIELDS)
def test_lint_names_a_decoded_control_character_at_its_line(
    tmp_path: Path, field: str, escaped: str, char: str
) -> None:
    root = kb(tmp_path, fact_file(field, escaped))
    code, out, err = cli(root, "lint")
    assert code == 2, out + err
    expected = f"facts/facts.yaml:4: hidden character U+{ord(char):04X} ("
    assert expected in out + err, out + err
    assert not RAW.search(out + err)


@pytest.mark.parametrize(
    "text", ['"a\\tb\\nc"', "|\n      two\n      lines", '"plain \\\\x1b text"']
)
def test_tabs_newlines_and_escaped_backslashes_pass_lint(tmp_path: Path, text: str) -> None:
    root = kb(tmp_path, fact_file("statement", "").replace('"EVIL"', text))
    code, out, err = cli(root, "lint")
    assert code == 0, out + err


def test_both_parse_paths_report_the_same_problems() -> None:
    """The event fast path and the composer (taken for an anchor) agree on strings."""
    plain = 'a: "x\\e[2J"\nb: ["ok", "\\u202e"]\n"k\\a": 1\n'
    anchored = plain.replace('a: "x', 'a: &anchor "x')
    for text in (plain, anchored):
        doc, problems = parse_located(text, "f.yaml")
        assert [(p.line, p.message.split(" in a string")[0]) for p in problems] == [
            (1, "hidden character U+001B (ESC)"),
            (2, "hidden character U+202E (RIGHT-TO-LEFT OVERRIDE)"),
            (3, "hidden character U+0007 (BEL)"),
        ], text
        assert doc.data["a"] == "x\x1b[2J"  # the value is still loaded: only lint refuses it


def hostile_kb(tmp_path: Path) -> Path:
    facts = [
        fact(
            "hw.evil",
            "env.var",
            {"exists": True},
            args={"name": "HOME"},
            title="T\x1b[31mRED\u202eevil\x07",
            statement="S\x1b]0;pwned\x07 line\x00 \u2066x",
            value="v\x1b[2J\x9b",
            tags=["t\u202e"],
            sources=[{"seed": "a\x1b[1m.txt", "quote": "q\u202e"}],
            target="local",
        )
    ]
    root = make_kb(tmp_path / "kb", facts)  # yaml.dump writes the controls as escapes
    assert "\\e" in (root / "facts" / "facts.yaml").read_text()
    return root


@pytest.mark.parametrize(
    "argv",
    [
        ["list"],
        ["list", "--format", "ids"],
        ["list", "--format", "json"],
        ["show", "hw.evil"],
        ["show", "hw.evil", "--format", "json"],
        ["status", "--out", "-"],
        ["status", "--out", "-", "--budget", "2000"],
        ["status", "--budget", "2000", "--format", "json"],
        ["status", "--redact", "--budget", "2000", "--format", "json"],
    ],
    ids=" ".join,
)
def test_outputs_show_hidden_characters_escaped(tmp_path: Path, argv: list[str]) -> None:
    root = hostile_kb(tmp_path)
    code, out, err = cli(root, *argv)
    assert code == 0, err
    assert not RAW.search(out), [m.group() for m in RAW.finditer(out)]
    assert not RAW.search(err)
    if argv[-1] == "json":
        json.loads(out)
    elif argv[0] != "list" or len(argv) == 1:
        assert "\\x1b" in out or "\\u001b" in out, out


def test_written_status_documents_and_handbook_pages_hold_none(tmp_path: Path) -> None:
    root = hostile_kb(tmp_path)
    code, _, err = cli(root, "status")
    assert code == 0, err
    code, _, err = cli(root, "docs", "--out", str(tmp_path / "site"))
    assert code == 0, err
    written = list((root / "docs" / "status").glob("*.md")) + list((tmp_path / "site").rglob("*"))
    pages = [p for p in written if p.is_file() and p.suffix in (".md", ".html", ".json")]
    assert len(pages) >= 5
    for path in pages:
        text = path.read_text(encoding="utf-8")
        assert not RAW.search(text), (path, [m.group() for m in RAW.finditer(text)])
    hardware = (tmp_path / "site" / "facts" / "hardware.md").read_text()
    assert "RED\\u202eevil" in hardware


def test_sanitize_for_document_keeps_lines_and_tabs() -> None:
    assert for_document("a\tb\nc\x1b[0m\r\u202e\x85") == "a\tb\nc\\x1b[0m\\r\\u202e\\x85"
    assert for_document(5) == "5"
    assert first_hidden("fine\ttext\n") is None
    found = first_hidden("ok \u2069 then \x1b")
    assert found is not None and found.group() == "\u2069"
