"""What a write-back stores reads back exactly as given, or is refused with one line.

YAML takes NEL, LS and PS for line breaks: libyaml writes them raw inside a quoted value
(and reads them back), but the append cut its blocks into lines with str.splitlines, which
cuts there too, and the edit's pure-Python emitter wrote them where they read back as
newlines: `a<LS>b` was stored as `a b`, silently. A lone surrogate (JSON's \\ud800) crashed
the append with a UnicodeEncodeError traceback."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from factbook.errors import WritebackError
from factbook.knowledge.yamlsrc import load_located
from factbook.store.writeback import FactUpdate, append_facts, update_facts

REPO = Path(__file__).resolve().parents[1]

BREAKING = [
    "a\u2028b",
    "c\x85d",
    "e\u2029f",
    "\u2028",
    "x  \u2028",
    "k\u2028\nz",
    "c\x85d\n",
    "word " * 30 + "\u2029" + "tail " * 30,
]
VALUES: list[Any] = [*BREAKING, list(BREAKING), {"k": "x\x85", "l": ["q\u2028", "r"]}]


def _kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    (root / "facts").mkdir(parents=True)
    for name in ("milestones.yaml", "targets.yaml"):
        shutil.copy(REPO / name, root / name)
    return root


def _fact(fact_id: str, value: Any) -> dict[str, Any]:
    return {
        "id": fact_id,
        "category": "software",
        "title": "t",
        "statement": "s",
        "status": "assumed",
        "value": value,
        "sources": [{"seed": "a"}],
    }


def _read(path: Path) -> list[dict[str, Any]]:
    doc, problems = load_located(path, path.name)
    # stored exactly; the reader names each NEL, LS and PS (hidden characters) for lint
    assert [p for p in problems if "hidden character" not in p.message] == []
    return doc.data["facts"]


def test_line_break_characters_are_appended_exactly(tmp_path: Path) -> None:
    path = _kb(tmp_path) / "facts" / "software.yaml"
    facts = [_fact(f"sw.v{i}", value) for i, value in enumerate(VALUES)]
    append_facts(path, facts[:1])  # alone, then in one batch (the chunked emitter)
    append_facts(path, facts[1:])
    assert [f["value"] for f in _read(path)] == VALUES


def test_line_break_characters_are_edited_in_exactly(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    path = root / "facts" / "software.yaml"
    append_facts(path, [_fact("sw.x", "plain")])
    for value in VALUES:
        written, refused = update_facts(root, [FactUpdate("sw.x", value=value)])
        assert (len(written), refused) == (1, []), repr(value)
        assert _read(path)[0]["value"] == value


def test_a_lone_surrogate_is_refused_in_one_line(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    path = root / "facts" / "software.yaml"
    append_facts(path, [_fact("sw.x", "plain")])
    before = path.read_bytes()
    with pytest.raises(WritebackError, match=r"U\+D800, which cannot be written as UTF-8"):
        append_facts(path, [_fact("sw.y", "bad \ud800 value")])
    written, refused = update_facts(root, [FactUpdate("sw.x", value="\ud800")])
    assert written == [] and len(refused) == 1 and "not written" in refused[0]
    assert path.read_bytes() == before


def test_nan_is_appended_as_nan(tmp_path: Path) -> None:
    path = _kb(tmp_path) / "facts" / "software.yaml"
    append_facts(path, [_fact("sw.n", float("nan"))])
    assert math.isnan(_read(path)[0]["value"])
