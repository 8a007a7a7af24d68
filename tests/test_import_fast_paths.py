"""The import's fast paths (issue 25, item 5) give the answer the slow way gave. Plain fact
data handed to libyaml's emitter as events writes the bytes
`yaml.dump` writes; a status line's mark is split as the `_MARKED` regex splits it."""

from __future__ import annotations

import datetime
import random
from copy import deepcopy
from pathlib import Path

import pytest
import yaml

from factbook.dumps.capture import parse
from factbook.store.writeback import dump_block
from factbook.store.yamlevents import emit_plain

REPO = Path(__file__).resolve().parents[1]
OPTIONS = {"width": 100, "allow_unicode": True}
C_DUMPER = getattr(yaml, "CSafeDumper", None)
pytestmark = pytest.mark.skipif(C_DUMPER is None, reason="libyaml is not installed")

# values whose text, style, quoting, folding or flow style the emitter decides
TRICKY: list[object] = [
    "",
    " lead",
    "trail ",
    "yes",
    "No",
    "null",
    "~",
    "1",
    "0x1F",
    "1.5e3",
    ".inf",
    "2026-12-02",
    "a: b",
    "#x",
    "x #y",
    "- item",
    "'quoted'",
    '"dq"',
    "two\nlines",
    "tab\there",
    "ümlaut — dash ✅ ⚠️",
    "\u0085nel",
    "bell\x07",
    "word " * 40,
    "x" * 150,
    "*(msg 3157 llm-two)* " * 9,
    0,
    -7,
    10**30,
    1.0,
    -0.0,
    82.5,
    1e17,
    1e-7,
    float("inf"),
    float("-inf"),
    True,
    False,
    None,
    [],
    {},
    [1, "a", None],
    {"k": [1, {"deep": ["x" * 120]}]},
    {1: "int key", None: "null key", 2.5: "float key"},
    {False: "bool key"},
]


def _facts() -> list[dict]:
    facts = []
    for path in sorted((REPO / "facts").glob("*.yaml")):
        facts += yaml.load(path.read_text(encoding="utf-8"), Loader=C_DUMPER and yaml.CSafeLoader)[
            "facts"
        ]
    return facts


def _dumped(data: object) -> str:
    return yaml.dump(data, Dumper=C_DUMPER, default_flow_style=None, sort_keys=False, **OPTIONS)


def test_every_shipped_fact_is_written_byte_for_byte_as_yaml_dump_writes_it() -> None:
    facts = _facts()
    assert len(facts) > 300
    for fact in facts:
        assert emit_plain([fact], **OPTIONS) == _dumped([fact]), fact["id"]


def test_tricky_values_alone_in_lists_and_in_a_fact() -> None:
    for value in TRICKY:
        for data in (
            value,
            [value],
            {"v": value},
            [{"id": "x", "v": value, "w": [deepcopy(value)]}],
        ):
            assert emit_plain(data, **OPTIONS) == _dumped(data), repr(data)


def test_what_the_representer_must_write_is_left_to_it() -> None:
    shared = ["a"]
    for data in (
        {"a": shared, "b": shared},  # the representer anchors it (&id001)
        {"t": (1, 2)},
        {"d": datetime.date(2026, 12, 2)},
        {"s": {1, 2}},
        {"sub": type("Text", (str,), {})("x")},
        {("k",): 1},
    ):
        assert emit_plain(data, **OPTIONS) is None, repr(data)
    assert "&id001" in _dumped({"a": shared, "b": shared})


def test_dump_block_still_indents_lists_under_their_key() -> None:
    text = dump_block([{"id": "x", "tags": ["a", "b"], "sources": [{"seed": "s", "q": 1}]}])
    assert text == ("- id: x\n  tags: [a, b]\n  sources:\n    - {seed: s, q: 1}\n"), text
    assert dump_block([{"d": datetime.date(2026, 12, 2)}]) == "- {d: 2026-12-02}\n"


PIECES = [
    "✅ ", "⚠️ ", "❌ ", "◻ ", " — *why:* ", " *(", ")*", " ", "a", "(", ")", "*",
    " —", "\n", "\r", "x y", "*(msg 3 llm)*", "~~",
]  # fmt: skip


def test_marks_split_as_the_regex_splits_them() -> None:
    rnd = random.Random(25)
    bodies = [
        "✅ text *(msg 3157 llm-two)*",
        "✅ text — *why:* because *(msg 3157 llm-two)*",
        "◻ text — *why:* a *(b)* c *(msg 1)*",
        "⚠️ text *(a)* (copy 1)",
        "❌ x *()*",
        "❌ x *(",
        "✅ x\n*(y)*",
    ]
    for _ in range(20_000):
        body = "".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 9)))
        bodies.append(rnd.choice(PIECES[:4]) + body if rnd.random() < 0.7 else body)
    for seed in sorted((REPO / "seeds").glob("*.txt")):
        bodies += seed.read_text(encoding="utf-8").split("\n")
    for body in bodies:
        assert parse._marked(body) == parse._regex_marked(body), repr(body)
    text, mark, why = parse.parse_mark("✅ GPUs: 8 — *why:* nvidia-smi *(msg 3157 llm-two)*")
    assert (text, why, mark and mark.message, mark and mark.where) == (
        "GPUs: 8",
        "nvidia-smi",
        3157,
        "llm-two",
    )
