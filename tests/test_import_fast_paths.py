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


def test_the_compiled_matcher_gives_difflibs_ratios() -> None:
    """Statement matching uses cydifflib when installed: difflib's own algorithm compiled,
    so every ratio (and so every match) is difflib's, autojunk past 200 characters included."""
    import difflib

    from factbook.dumps.capture import match

    rng = random.Random(5)
    words = ["gpu", "the", "sglang", "8", "h200", "nccl", "eagle", "0.9", "mem", "is", "tp", " "]
    for _ in range(400):
        a = " ".join(rng.choice(words) for _ in range(rng.randint(0, 90)))
        b = a.split(" ")
        for _ in range(rng.randint(0, 6)):
            b[rng.randrange(len(b))] = rng.choice(words)
        matcher = match.SequenceMatcher(None, "", " ".join(b))
        matcher.set_seq1(a)  # as Index._matcher reuses one matcher per known statement
        assert matcher.ratio() == difflib.SequenceMatcher(None, a, " ".join(b)).ratio()


def test_schema_fast_check_agrees_with_the_walk() -> None:
    """`validate` answers "conforms" with a check compiled per schema and walks only values
    that do not: on every shipped fact and thousands of damaged copies, the check says
    "conforms" exactly when the walk finds nothing."""
    from factbook.knowledge import schema
    from factbook.knowledge.yamlsrc import LocatedDoc

    doc = LocatedDoc("f.yaml", None)
    facts = _facts()
    odd: list[object] = [None, True, 0, 2.0, 2.5, float("nan"), "", "x y", [], {}, {1: 2}]
    odd += [datetime.date(2026, 1, 1), b"x", ["x"], "tested", 10**30]
    rng = random.Random(7)
    cases = [(f, schema.FACT_SCHEMA) for f in facts]
    for _ in range(1500):
        fact = deepcopy(rng.choice(facts))
        spot = fact
        while isinstance(spot, (dict, list)) and spot and rng.random() < 0.6:
            inner = spot[rng.choice(list(spot))] if isinstance(spot, dict) else rng.choice(spot)
            if not isinstance(inner, (dict, list)) or not inner:
                break
            spot = inner
        if isinstance(spot, dict) and spot:
            key = rng.choice([*spot, "zz", "unit", 3])
            if rng.random() < 0.3:
                spot.pop(key, None)
            else:
                spot[key] = rng.choice(odd)
        elif isinstance(spot, list) and spot:
            spot[rng.randrange(len(spot))] = rng.choice(odd)
        cases.append((fact, schema.FACT_SCHEMA))
    clean = 0
    for value, against in cases:
        walked = schema._problems(value, against, doc)
        assert schema._conforms(value, against) == (walked == []), value
        assert schema.validate(value, against, doc) == walked
        clean += walked == []
    assert len(facts) <= clean < len(cases)  # both answers were exercised


def test_scratch_writes_are_atomic_but_not_forced_to_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import's scratch copy is deleted after it: its writes skip fsync; real ones do not."""
    import os

    from factbook.store import atomic

    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    with atomic.throwaway_writes():
        atomic.write_text_atomic(tmp_path / "scratch.yaml", "a: 1\n")
    assert synced == [] and (tmp_path / "scratch.yaml").read_text() == "a: 1\n"
    atomic.write_text_atomic(tmp_path / "real.yaml", "b: 2\n")
    assert len(synced) == 1 and (tmp_path / "real.yaml").read_text() == "b: 2\n"
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize(
    ("top", "message"),
    [
        ("facts: 3\n", "facts: expected list, got integer"),
        ("facts: []\nextra: 1\n", "unknown key 'extra'"),
        ("[1, 2]\n", "expected mapping, got list"),
    ],
)
def test_a_fact_files_top_level_is_checked_and_each_value_once(
    tmp_path: Path, top: str, message: str
) -> None:
    """The top level's schema checks its shape but does not walk the facts for values JSON
    cannot hold: each fact's own check names the fact, once per fact (the walk of the whole
    list added the first such value again, without its id)."""
    from factbook.knowledge.kb import _parse_fact_file

    fact = "  - id: sw.{n}\n    category: software\n    title: T\n    statement: S.\n"
    fact += "    status: assumed\n    value: {value}\n    sources: [{{seed: a.txt}}]\n"
    text = "facts:\n" + "".join(
        fact.format(n=n, value=v) for n, v in enumerate([".nan", "[1, .inf]", "2"])
    )
    problems = [p.message for p in _parse_fact_file(text, "facts/x.yaml").problems]
    assert problems == [
        "fact 'sw.0': value: unsupported value of type nan",
        "fact 'sw.1': value: unsupported value of type inf",
    ]
    shape = [p.message for p in _parse_fact_file(top, "facts/y.yaml").problems]
    assert any(message in m for m in shape), shape
