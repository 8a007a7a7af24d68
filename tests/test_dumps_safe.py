"""sanitize.dumps_safe writes exactly what json.dumps(json_safe(v), indent=1, allow_nan=False)
writes, for the hostile values a box can answer with (the report's one-pass encoder)."""

from __future__ import annotations

import enum
import json
import math
import random
from typing import Any

import pytest

from factbook.judging.sanitize import MAX_DEPTH, dumps_safe, json_safe


def oracle(value: Any, indent: int = 1) -> str:
    return json.dumps(json_safe(value), indent=indent, allow_nan=False)


class Level(enum.IntEnum):
    HIGH = 3


class Text(str):
    def __str__(self) -> str:
        return "shown differently"


class Opaque:
    def __str__(self) -> str:
        return "opaque \ud800 object"

    def __repr__(self) -> str:  # a stable test id: every xdist worker must collect the same
        return "Opaque()"


SCALARS: list[Any] = [
    "",
    "plain",
    'tab\tnewline\n quote" backslash\\ slash/',
    "\x00\x1b[31m red \x7f",
    "lone \ud800 and \udfff surrogates",
    "pair \U0001f600 emoji, accents \u00e9\u4e2d",
    "literal \\ud800 text",
    "\u2028\u2029",
    0,
    -1,
    2**53 + 1,
    10**1300,  # beyond json_safe's bound: becomes text
    -(10**1300),
    0.1,
    -0.0,
    1e308,
    math.nan,
    math.inf,
    -math.inf,
    True,
    False,
    None,
    Level.HIGH,
    Text("a str subclass"),
    Opaque(),
    b"bytes",
]


@pytest.mark.parametrize("value", SCALARS, ids=repr)
def test_scalars(value: Any) -> None:
    assert dumps_safe(value) == oracle(value)
    assert dumps_safe({"k": value, "list": [value, value]}) == oracle(
        {"k": value, "list": [value] * 2}
    )


def test_keys_made_text_as_json_safe_makes_them() -> None:
    value = {
        1: "int key",
        "1": "same once text: the last wins, at the first one's place",
        False: "bool key (str: 'False')",
        None: "None key",
        2.5: "float key",
        "\ud800": "lone surrogate key",
        "\\ud800": "its escaped spelling: the same key once escaped",
        "é": "non-ASCII key",
        Text("k"): "str subclass key",
        (1, 2): "tuple key",
    }
    assert dumps_safe(value) == oracle(value)


def test_containers_and_depth() -> None:
    value: Any = {"tuple": (1, "a"), "set": {3}, "frozenset": frozenset({"x"}), "empty": {},
                  "none": [], "nested": [[[]], [{}]]}  # fmt: skip
    assert dumps_safe(value) == oracle(value)
    deep: Any = "bottom"
    for i in range(MAX_DEPTH + 5):
        deep = [deep] if i % 2 else {"d": deep, "n": math.nan}
    assert dumps_safe(deep) == oracle(deep)
    assert dumps_safe(deep, indent=3) == oracle(deep, indent=3)


def _random(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth > 6 or roll < 0.45:
        return rng.choice(SCALARS[:-3])
    if roll < 0.75:
        return {
            rng.choice(["a", "b", 1, "1", "\ud801", "é", "c"]): _random(rng, depth + 1)
            for _ in range(rng.randint(0, 5))
        }
    return [_random(rng, depth + 1) for _ in range(rng.randint(0, 5))]


def test_random_documents() -> None:
    rng = random.Random(29)
    for _ in range(300):
        value = _random(rng, 0)
        assert dumps_safe(value) == oracle(value)


def test_a_real_report_reads_back() -> None:
    """A report of results with box text in it: strict parsers read the output."""
    doc = {"results": [{"fact": f"f{i}", "observed": SCALARS[i % len(SCALARS) - 3]}
                       for i in range(100)]}  # fmt: skip
    text = dumps_safe(doc)
    assert text == oracle(doc)
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict constant {c}"))


def test_shared_containers_and_repeated_shapes() -> None:
    """The encoder remembers containers it wrote (by identity and depth) and the key shapes of
    dicts; neither may change a byte: the same object at another depth, a shape seen first
    with plain keys and then with a str subclass's or a non-ASCII twin."""
    args = {"path": "/x", "n": [1, 2.5, None]}
    expect = {"eq": math.nan}
    records = [{"fact": f"f{i}", "extra": {"args": args, "expect": expect}} for i in range(5)]
    value: Any = {"results": records, "top": args, "deeper": [[args]], "again": [args, args]}
    value["shapes"] = [{"k": 1}, {Text("k"): 2}, {"k": 3}, {"\ud800": 4}, {"k": 5, "é": 6}]
    assert dumps_safe(value) == oracle(value)
    assert dumps_safe(value, indent=2) == oracle(value, indent=2)
    args["path"] = "/changed"  # a new call starts with an empty memory
    assert dumps_safe(value) == oracle(value)
