"""Expectation operators are declared once (argument check + evaluation) in one registry."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from factbook.judging import expectations
from factbook.judging.expectations import OPERATORS, Operator, evaluate, problems_in

ROOT = Path(__file__).resolve().parent.parent


def test_the_fact_format_table_documents_every_operator() -> None:
    text = (ROOT / "docs" / "fact-format.md").read_text()
    table = text.split("| operator | argument | passes when observed |", 1)[1].split("\n\n")[0]
    documented = re.findall(
        r"`([a-z_]+)`", "\n".join(r.split("|")[1] for r in table.splitlines()[2:])
    )
    assert documented == list(OPERATORS)


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        ({"gt": "8"}, "expect.gt: expected a number, got '8'"),
        ({"between": [1]}, "expect.between: expected [low, high] numbers"),
        ({"approx": 3}, "expect.approx: expected {value: number, rel: number} or {value, abs}"),
        ({"approx": {"value": 3}}, "expect.approx: keys are value and rel or abs"),
        ({"one_of": 3}, "expect.one_of: expected a list"),
        ({"exists": "yes"}, "expect.exists: expected true or false"),
        ({"length": True}, "expect.length: expected a mapping with one operator, got bool"),
        ({"each": {"gt": "x"}}, "expect.each.gt: expected a number, got 'x'"),
        ({"all": []}, "expect.all: expected a non-empty list of expectations"),
        ({"any": [{"eq": 1}, {"lt": None}]}, "expect.any[1].lt: expected a number, got None"),
        (
            {"not": {"nope": 1}},
            "expect.not: unknown operator 'nope' (known: " + ", ".join(OPERATORS) + ")",
        ),
        ({"eq": 1, "ne": 2}, "expect: needs exactly one operator, found 2"),
        ({"path": 3, "eq": 1}, "expect.path: expected a string"),
    ],
)
def test_each_operator_checks_its_argument(expect: dict, message: str) -> None:
    assert problems_in(expect) == [message]


def test_regex_and_version_arguments_are_parsed() -> None:
    assert problems_in({"regex": "a("})[0].startswith("expect.regex: invalid regex 'a(': ")
    assert problems_in({"version": ">=2.10,<3"}) == []
    assert problems_in({"version": ">>2"}) != []


def test_an_uncomparable_value_is_a_reason_not_a_crash() -> None:
    outcome = evaluate({"gt": 3}, "many")
    assert not outcome.passed and outcome.reason.startswith("gt 3: cannot compare 'many': ")


def test_a_new_operator_is_one_registry_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    def check(arg: object, where: str) -> list[str]:
        return [] if arg in (True, False) else [f"{where}: expected true or false"]

    even = Operator("even", check, lambda arg, value: (int(value) % 2 == 0) == arg)
    monkeypatch.setitem(expectations.OPERATORS, "even", even)
    assert problems_in({"even": 3}) == ["expect.even: expected true or false"]
    assert problems_in({"all": [{"even": True}, {"gt": 2}]}) == []
    assert evaluate({"even": True}, 4).reason == "ok even True, observed 4"
    assert evaluate({"each": {"even": True}}, [2, 5]).reason == (
        "element [1]: expected even True, observed 5"
    )
