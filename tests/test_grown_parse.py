"""A fact file grown by appended blocks is parsed from what is known (knowledge.grown) only
where that gives exactly what parsing the grown text gives: the same values (type for
type), the same lines, no problem and no broken bound; anywhere else it says None and the
text is parsed (issue 25, item 5: the parse of what an import appends was a quarter of it)."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from factbook.errors import WritebackError
from factbook.knowledge.grown import count_values
from factbook.knowledge.yamlsrc import MAX_NODES, PORTABLE_DEPTH, located_answer
from factbook.store.writeback import _grow, _grown_parse

REPO = Path(__file__).resolve().parents[1]
SHIPPED = sorted((REPO / "facts").glob("*.yaml"))
pytestmark = pytest.mark.skipif(not hasattr(yaml, "CSafeDumper"), reason="libyaml is not installed")


def _shipped_facts() -> list[dict[str, Any]]:
    facts: list[dict[str, Any]] = []
    for path in SHIPPED:
        facts += yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)["facts"]
    return facts


def _renamed(facts: list[dict[str, Any]], tag: str) -> list[dict[str, Any]]:
    return [{**fact, "id": f"{fact['id']}-{tag}"} for fact in facts]


def _exactly(a: Any, b: Any) -> bool:
    """Equal, and of the same type at every level (`1 == True` is not enough)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_exactly(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_exactly(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _grown(tmp_path: Path, before: str | None, facts: list[dict[str, Any]]) -> bool:
    """Append `facts` to a file holding `before` (None: a new file); where the grown parse
    answers, it must be the real parse's answer. Whether it answered."""
    path = tmp_path / "f.yaml"
    if path.exists():
        path.unlink()
    if before is not None:
        path.write_text(before, encoding="utf-8")
    growth = _grow(path, facts)
    grown = _grown_parse(growth)
    if grown is None:
        return False
    real_doc, real_problems, real_refused = located_answer(growth.new_text)
    doc, problems, refused = grown
    assert (problems, refused) == (real_problems, real_refused) == ([], None)
    assert _exactly(doc.data, real_doc.data)
    shallow = {p: n for p, n in real_doc.lines.items() if len(p) <= PORTABLE_DEPTH}
    assert doc.lines == shallow
    assert doc.key_lines == {p: n for p, n in real_doc.key_lines.items() if len(p) <= 2}
    sample = list(real_doc.lines)[-40:] + list(real_doc.key_lines)[-40:]
    for where in sample:  # a deeper line is read from the text when asked (a problem's)
        assert doc.line(where) == real_doc.line(where), where
    return True


def test_shipped_facts_appended_to_a_new_file_and_to_every_shipped_file(tmp_path: Path) -> None:
    facts = _shipped_facts()
    assert len(facts) > 300
    assert _grown(tmp_path, None, facts)
    assert _grown(tmp_path, None, facts[:1])
    assert _grown(tmp_path, None, facts[:65])  # past one emitter's chunk
    for path in SHIPPED:  # hand-written: comments, blank lines, block scalars
        text = path.read_text(encoding="utf-8")
        assert _grown(tmp_path, text, _renamed(facts[:70], "again")), path.name
        assert _grown(tmp_path, text.rstrip("\n"), _renamed(facts[:3], "nl")), path.name


# what decides a scalar's style, quoting, escapes and folding
PIECES = [
    "a", "word", " ", "  ", ":", ": ", " #", "#", "-", "- ", "'", '"', "\\", "\\n", "\n",
    "\n\n", "é", "✅", "⚠️", "—", "yes", "null", "~", "1", "0x1F", "1.5e3", ".inf",
    "2026-12-02", "!", "&a", "*a", "%", "@", "`", "[", "]", "{", "}", ",", "?", "|", ">",
    "x" * 60, " word" * 25, "𝔘",
]  # fmt: skip
APART = ["\t", "\x85", "\u2028", "\u2029", "\r", "\ufeff"]  # raw in the text: left to the parse
HIDDEN = ["\x07", "\x00", "\x1b"]  # written as escapes, reported by the reader: left to the parse


def _value(rng: random.Random, pieces: list[str], depth: int = 0) -> Any:
    kind = rng.random()
    if kind < 0.6 or depth > 3:
        return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
    if kind < 0.7:
        return rng.choice([0, -7, 2**40, 1.0, -0.0, 1e17, 1e-7, float("inf"), True, None])
    if kind < 0.85:
        return [_value(rng, pieces, depth + 1) for _ in range(rng.randint(0, 4))]
    return {f"k{i}": _value(rng, pieces, depth + 1) for i in range(rng.randint(0, 4))}


def test_hostile_values_read_back_as_written_or_are_left_to_the_parse(tmp_path: Path) -> None:
    rng = random.Random(25)
    answered = 0
    for batch in range(80):
        pieces = PIECES + APART + HIDDEN if batch % 4 == 0 else PIECES
        facts = [
            {"id": f"f{batch}-{i}", **{k: _value(rng, pieces) for k in ("statement", "v", "w")}}
            for i in range(rng.randint(1, 90))
        ]
        before = None if batch % 2 else _bounded_file()
        answered += _grown(tmp_path, before, facts)
    assert answered >= 50  # quotes, colons, folding and escapes are answered, not avoided


def _bounded_file() -> str:
    return "# header\nfacts:\n  - id: first\n    note: |\n      kept\n\n# trailing\n"


# files the appended blocks would not join as items of `facts`, or which break a rule
ELSEWHERE = [
    "facts: []\n",
    "facts: null\n",
    "facts: ~\n",
    "facts:\n  - id: a\n...\n",
    "facts:\n  - id: a\nother: 1\n",
    "facts:\n  - id: a\n---\n",
    "facts:\n- id: a\n",
    "facts:\n    - id: a\n      n: |\n        text\n",
    "facts:\n  - plain item\n",
    "facts:\n  - id: a\n    v: [1,\n",
    "facts:\n  - id: a\n  - id: a2\n    v: &x 1\n",
    "facts:\n  - id: a\n    v: !!python/object/apply:os.system [x]\n",
    "facts:\n  - id: a\n    v: 1\n    v: 2\n",
    "other: 1\nfacts:\n",
    "facts:\n  - id: a\n\tbad: 1\n",
    "- id: a\n",
    "",
]


@pytest.mark.parametrize("before", ELSEWHERE)
def test_a_file_the_blocks_would_not_join_is_left_to_the_parse(tmp_path: Path, before: str) -> None:
    with contextlib.suppress(WritebackError):  # _grow refuses some (a flow list, a top list)
        _grown(tmp_path, before, [{"id": "b", "title": "x"}, {"id": "c", "title": "y"}])


def test_blocks_landing_under_another_key_are_caught(tmp_path: Path) -> None:
    assert not _grown(tmp_path, "facts:\n  - id: a\nother: 1\n", [{"id": "b"}, {"id": "c"}])
    assert not _grown(tmp_path, "facts:\n  - id: a\n...\n", [{"id": "b"}, {"id": "c"}])


def test_a_bound_the_blocks_would_break_is_left_to_the_parse(tmp_path: Path) -> None:
    near = MAX_NODES - 20
    before = "facts:\n  - id: a\n    v: [" + "1," * (near - 7) + "1]\n"
    assert count_values(yaml.load(before, Loader=yaml.CSafeLoader)) == _events(before)
    facts = [{"id": "b", "v": list(range(30))}]
    assert not _grown(tmp_path, before, facts)
    assert located_answer(_grow(tmp_path / "f.yaml", facts).new_text)[2] is not None
    for inexact in (2**70, float("nan")):  # past the reader's integers; unequal to itself
        assert not _grown(tmp_path, None, [{"id": "i", "v": [1, {"n": inexact}]}])
    deep: Any = "x"
    for _ in range(45):
        deep = [deep]
    assert not _grown(tmp_path, None, [{"id": "d", "v": deep}])


def _events(text: str) -> int:
    starts = (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)
    return sum(isinstance(e, starts) for e in yaml.parse(text, Loader=yaml.CSafeLoader))


def test_values_are_counted_as_the_reader_counts_them() -> None:
    for path in SHIPPED:
        text = path.read_text(encoding="utf-8")
        assert count_values(yaml.load(text, Loader=yaml.CSafeLoader)) == _events(text), path.name
