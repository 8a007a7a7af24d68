"""blockyaml writes a fact's block exactly as libyaml (then `_indent_sequences`) writes it.

The oracle is libyaml itself: random facts whose strings mix plain words with indicators,
quotes, colons, runs of spaces, non-ASCII letters and characters libyaml escapes, long
enough to break past the width, in mappings, lists and flow collections nested in each
other. Every fact blockyaml writes must be libyaml's text to the byte, with the counts the
grown-file reader relies on; a fact it declines goes to libyaml (None). An import written
with and without it is the same, file for file.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from factbook.dumps.capture import plan_import, write
from factbook.store import writeback
from factbook.store.blockyaml import fact_block
from factbook.store.writeback import _indent_sequences
from factbook.store.yamlevents import emit_counted

REPO = Path(__file__).resolve().parents[1]
WORDS = [*"abcdefghij klmnop0123456789", " ", "  ", "'", ":", " - ", "x: ", "#", "é"]
SPECIAL = [
    *"-:#?,[]{}&*!|>'\"%@`._/=+~—\u00a0\u2028\t\n\\",
    "\U0001f600",
    "\x85",
    "\ufeff",
    "true",
    "null",
    "1.5",
    "0x1f",
    "---",
    "...",
    "~",
    "2024-01-01",
    ": ",
    " #",
]


class Facts:
    """Random fact-shaped data: `special` is the share of characters that are not words."""

    def __init__(self, seed: int, special: float, lengths: list[int]) -> None:
        self.rng = random.Random(seed)
        self.special = special
        self.lengths = lengths

    def text(self) -> str:
        rng = self.rng
        share = rng.choice([0.0, self.special / 4, self.special])
        length = rng.choice(self.lengths)
        return "".join(
            rng.choice(SPECIAL) if rng.random() < share else rng.choice(WORDS)
            for _ in range(length)
        )

    def scalar(self) -> Any:
        rng = self.rng
        roll = rng.random()
        if roll < 0.7:
            return self.text()
        if roll < 0.8:
            return rng.choice([0, 1, -5, 2**70, 10**20, 4504])
        if roll < 0.87:
            return rng.choice([1.5, -0.0, float("inf"), 1e17, 3.0, float("nan")])
        return rng.choice([True, False, None])

    def value(self, depth: int = 0) -> Any:
        roll = self.rng.random()
        if depth > 3 or roll < 0.6:
            return self.scalar()
        if roll < 0.8:
            return [self.value(depth + 1) for _ in range(self.rng.randrange(4))]
        keys = [self.text(), "k", "name", 1]
        return {self.rng.choice(keys): self.value(depth + 1) for _ in range(self.rng.randrange(4))}

    def fact(self) -> dict[str, Any]:
        fact = {"id": self.text() or "x", "category": "software", "title": self.text()}
        fact["statement"] = self.text()
        for _ in range(self.rng.randrange(6)):
            key = self.rng.choice(["value", "unit", "tags", "check", "links", self.text()])
            fact[key] = self.value()
        if self.rng.random() < 0.6:
            fact["sources"] = [{"seed": "a.md", "message": 4504, "quote": self.text()}]
        return fact


@pytest.mark.parametrize(
    ("seed", "special", "lengths"),
    [
        (1, 0.3, [0, 1, 2, 3, 5, 8, 20, 40, 60, 95, 130]),  # many declined: escapes, breaks
        (2, 0.05, [0, 1, 2, 3, 5, 8, 20, 40, 60]),  # mostly written here
        (3, 0.05, [0, 1, 3, 20, 60, 95, 130, 200, 300]),  # long: broken past the width
    ],
    ids=["special", "plain", "long"],
)
def test_every_block_written_here_is_libyamls_text(seed: int, special: float, lengths) -> None:
    facts = Facts(seed, special, lengths)
    written = 0
    for _ in range(3000):
        fact = facts.fact()
        emitted = emit_counted([fact], width=100, allow_unicode=True)
        if emitted is None:  # not plain data: the representer's, never blockyaml's
            assert fact_block(fact) is None
            continue
        block = fact_block(fact)
        if block is None:
            continue
        written += 1
        assert block.text == _indent_sequences(emitted.text), fact
        # the reader's counts: the chunk's own list is libyaml's one node and level more
        assert (block.nodes, block.depth, block.exact) == (
            emitted.nodes - 1,
            emitted.depth - 1,
            emitted.exact,
        ), fact
    assert written > 250  # the rules were exercised, not only declined


@pytest.mark.parametrize(
    ("fact", "here"),
    [
        ({"id": "x", "bad": "tab\there"}, False),  # libyaml escapes a tab: double quotes
        ({"id": "x", "bad": "two\nlines"}, False),
        ({"id": "x", "bad": "emoji \U0001f600"}, False),  # past U+FFFF: escaped
        ({"id": "x", "nested": [[1, [2]]]}, False),  # a list in a list: `- - 1`
        ({"id": "x", "nested": [[1, 2], [3]]}, True),  # lists of scalars: `- [1, 2]`
        ({"id": "x", "k" * 129: 1}, False),  # a complex key: `? kkk`
        ({"id": "x", "é" * 64: 1}, True),  # 128 bytes: still a simple key
        ({"id": "x", "é" * 65: 1}, False),  # 130 bytes: complex
        ({"id": "x", "tuple": (1, 2)}, False),  # another type: the representer's
    ],
    ids=[
        "tab",
        "newline",
        "astral",
        "list-in-list",
        "flow-lists",
        "long-key",
        "128-byte-key",
        "130-byte-key",
        "tuple",
    ],
)
def test_what_libyaml_writes_otherwise_is_left_to_it(fact: dict[str, Any], here: bool) -> None:
    block = fact_block(fact)
    assert (block is not None) == here
    emitted = emit_counted([fact], width=100, allow_unicode=True)
    if block is not None:
        assert emitted is not None and block.text == _indent_sequences(emitted.text)


def test_a_shared_list_is_left_to_the_representer() -> None:
    tags = ["a", "b"]
    assert fact_block({"id": "x", "tags": tags, "more": tags}) is None  # it writes &id001


def _import_files(tmp_path: Path, name: str, dump: Path, *, blocks: bool, monkeypatch) -> dict:
    kb = tmp_path / name
    (kb / "facts").mkdir(parents=True)
    for file in ("milestones.yaml", "targets.yaml"):
        shutil.copy(REPO / file, kb / file)
    with monkeypatch.context() as patch:
        if not blocks:
            patch.setattr(writeback, "fact_block", lambda fact: None)
        result = plan_import(kb, dump, "4504")
        write(result.applied)
    return {p.relative_to(kb): p.read_text() for p in sorted((kb / "facts").rglob("*.yaml"))}


@pytest.mark.parametrize("dump", sorted((REPO / "tests" / "data" / "dumps").glob("*.md"))[:3])
def test_an_import_writes_the_same_files_with_and_without_it(
    tmp_path: Path, dump: Path, monkeypatch
) -> None:
    fast = _import_files(tmp_path, "fast", dump, blocks=True, monkeypatch=monkeypatch)
    slow = _import_files(tmp_path, "slow", dump, blocks=False, monkeypatch=monkeypatch)
    assert fast and fast == slow


def test_the_tag_a_text_implies_is_the_resolvers() -> None:
    """implied_tag answers a text whose first character files no pattern without asking
    the resolver: on texts built from every character that files one, the same tags."""
    import yaml

    from factbook.store.yamlevents import _RESOLVER, implied_tag

    rng = random.Random(3)
    pieces = [*"abcfnotyFNOTY0123456789+-.~=<!&*:# eE_xX", "true", "null", "1e3", "0x1f"]
    pieces += ["2024-01-01", "yes", "No", ".inf", "~", "é", "/x"]
    for _ in range(50_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 6)))
        assert implied_tag(text) == _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)), text


def test_the_one_line_class_is_libyamls_printable_characters_but_breaks() -> None:
    """The class named by what it leaves out holds exactly libyaml's IS_PRINTABLE
    characters that are not IS_BREAK, over every code point."""
    import re

    from factbook.store.blockyaml import _printable_but

    printable = ((0x20, 0x7E), (0xA0, 0x2027), (0x202A, 0xD7FF), (0xE000, 0xFEFE), (0xFF00, 0xFFFD))
    one = re.compile(_printable_but(""))
    for code in range(0x110000):
        inside = any(low <= code <= high for low, high in printable)
        assert (one.fullmatch(chr(code)) is not None) == inside, hex(code)
