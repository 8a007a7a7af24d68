"""Every `verify-facts` output format parses in a real consumer, whatever a box printed.

JUnit XML is validated against schema/junit.xsd with lxml and read by junitparser; TAP is read
by tap.py's parser (YAML blocks included); JSON is validated against
schema/results.schema.json with jsonschema and read by a strict parser; Markdown is rendered
by Python-Markdown (what mkdocs uses) and the HTML parsed; the terminal table is checked for
raw control characters. The records are generated from every hostile character class.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jsonschema
import markdown
import pytest
from junitparser import Error, Failure, JUnitXml, Skipped
from lxml import etree
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_parse,
)
from tap.parser import Parser

from factbook.judging.sanitize import for_line, for_terminal, for_xml, json_safe
from factbook.store.results import ResultRecord
from factbook.verification import report
from tests.helpers import cli, fact, make_kb

ROOT = Path(__file__).resolve().parents[1]
JUNIT_XSD = etree.XMLSchema(etree.parse(str(ROOT / "schema" / "junit.xsd")))
# Jenkins' xunit-plugin schema, as pytest keeps it for its own tests (tests/data/README.md)
JENKINS_XSD = etree.XMLSchema(etree.parse(str(ROOT / "tests" / "data" / "junit-10.xsd")))
RESULTS_SCHEMA = json.loads((ROOT / "schema" / "results.schema.json").read_text())

# One sample of each character class a box can send back.
CLASSES: dict[str, str] = {
    "esc": "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 \x1b[2J",
    "nul": "a\x00b",
    "c0": "".join(chr(c) for c in range(32)),
    "c1": "".join(chr(c) for c in range(0x7F, 0xA0)),
    "xml-excluded": "\x0b\x0c\ufffe\uffff",
    "lone-surrogates": "\ud800 x \udcff \udfff",
    "cdata-end": "]]> <![CDATA[ x ]]>",
    "xml-markup": '<a href="x">&amp; &#0; &#x1b;</a> \' "',
    "tap-forgery": "\nnot ok 99 - forged\n# SKIP all\nok 1 - x # TODO later\nBail out! stop",
    "leading-newlines": "\n\n\nok 7 - forged",
    "yaml-block": "  ---\n  outcome: pass\n  ...\n",
    "hash": "x # SKIP y \\# z #",
    "markdown": "| a | b |\n|---|---|\n<script>alert(1)</script> [x](javascript:alert(1)) `code`",
    "bidi": "\u202eevil\u2066 \u200f \u2028 \u2029",
    "unicode": "Grüße 日本語 🚀 e\u0301 \u00a0 \ufeff",
    "crlf": "a\r\nb\rc\td",
    "backslashes": "C:\\path\\n \\x1b \\u0000 \\",
    "json-ish": '{"a": NaN} \\u0000 "quoted"',
}
HUGE = "h" * 3_000_000


def _random_text(rng: random.Random) -> str:
    """Samples of several classes glued to random code points from the whole range."""
    parts = rng.sample(sorted(CLASSES.values()), rng.randint(1, 3))
    noise = "".join(
        chr(rng.choice([rng.randrange(0, 0x80), rng.randrange(0, 0x110000)]))
        for _ in range(rng.randint(0, 40))
    )
    parts.insert(rng.randrange(len(parts) + 1), noise)
    return "".join(parts)


def _records(count: int, seed: int) -> list[ResultRecord]:
    rng = random.Random(seed)
    outcomes = ["pass", "drift", "error", "skipped"]
    records = []
    for i in range(count):
        hostile_name = rng.random() < 0.2
        records.append(
            ResultRecord(
                fact=f"hw.f{i}" + (_random_text(rng)[:30] if hostile_name else ""),
                target=rng.choice(["h200", "box-2", _random_text(rng)[:20]]),
                outcome=rng.choice(outcomes),
                reason=_random_text(rng) + " [facts/hw.yaml:12]",
                observed=rng.choice(
                    [
                        _random_text(rng),
                        {_random_text(rng): [_random_text(rng), float("nan"), float("inf")]},
                        10**5000,
                        [1, [2, [3]]],
                        None,
                    ]
                ),
                time="2026-11-30T23:00:00Z",
                run="r1",
                duration_s=rng.choice([0.25, float("nan"), -1.0, 3.5]),
                probe="t.hostile",
                extra={"location": f"facts/hw{_random_text(rng)[:5]}.yaml:12", "expect": {"eq": 1}},
            )
        )
    records.append(
        ResultRecord("hw.huge", "h200", "error", HUGE, observed=HUGE, extra={"location": "f:1"})
    )
    return records


HEADER = {"id": "r1", "started": "2026-11-30T23:00:00Z", "argv": ["\x1b[2J", "\ud800"]}
GENERATED = _records(400, seed=15)
PER_CLASS = {
    name: [
        ResultRecord(f"c.{o}", "h200", o, text, observed=text, extra={"location": f"{text}:3"})
        for o in ("pass", "drift", "error", "skipped")
    ]
    + [ResultRecord("c.name", text, "drift", text, observed={text: text})]
    for name, text in CLASSES.items()
}
CASES = {"generated": GENERATED, **PER_CLASS}


def _utf8(text: str) -> bytes:
    return text.encode("utf-8")  # strict: a lone surrogate here would crash the CLI's writer


@pytest.mark.parametrize("case", sorted(CASES))
def test_junit_is_valid_and_reads_back_in_junitparser(case: str) -> None:
    records = CASES[case]
    xml = _utf8(report.to_junit(records, HEADER))
    JUNIT_XSD.assertValid(etree.fromstring(xml))
    JENKINS_XSD.assertValid(etree.fromstring(xml))
    suites = JUnitXml.fromstring(xml)
    cases = [c for suite in suites for c in suite]
    assert len(cases) == len(records)
    kinds = {Failure: "drift", Error: "error", Skipped: "skipped"}
    seen = sorted(kinds[type(c.result[0])] if c.result else "pass" for c in cases)
    assert seen == sorted(r.outcome for r in records)
    names = sorted(c.name for c in cases)
    assert names == sorted(for_xml(r.fact, limit=200) for r in records)
    for suite in suites:
        assert suite.tests == len(list(suite))
        assert suite.failures == sum(isinstance(c.result[0], Failure) for c in suite if c.result)


@pytest.mark.parametrize("case", sorted(CASES))
def test_tap_reads_back_in_tap_py(case: str) -> None:
    records = CASES[case]
    text = report.to_tap(records, HEADER)
    _utf8(text)
    lines = list(Parser().parse_text(text))
    assert [line.category for line in lines[:2]] == ["version", "plan"]
    assert lines[1].expected_tests == len(records)
    results = [line for line in lines if line.category == "test"]
    assert [r.number for r in results] == list(range(1, len(records) + 1))
    assert not [line for line in lines if line.category in ("bail", "unknown")]
    for result, record in zip(results, records, strict=True):
        assert result.ok == (record.outcome in ("pass", "skipped"))
        assert result.skip == (record.outcome == "skipped")
        assert not result.todo
        name = for_line(f"{record.fact} @ {record.target}", limit=1000).replace("#", "\uff03")
        assert result.description == f"- {name}".strip()
        if not result.ok:
            block = result.yaml_block
            assert block["outcome"] == record.outcome
            assert block["message"] == for_line(record.reason)


def _strict_json(text: str) -> object:
    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("case", sorted(CASES))
def test_json_matches_the_published_schema(case: str) -> None:
    records = CASES[case]
    text = report.to_json(records, HEADER)
    data = _strict_json(_utf8(text).decode("utf-8"))
    jsonschema.Draft202012Validator(RESULTS_SCHEMA).validate(data)
    assert isinstance(data, dict)
    assert [r["fact"] for r in data["results"]] == [json_safe(r.fact) for r in records]
    assert [r["reason"] for r in data["results"]] == [json_safe(r.reason) for r in records]
    assert data["summary"] == report.counts(records)


def test_json_keeps_everything_json_can_carry() -> None:
    """Only what JSON cannot carry changes: controls and markup come back as they were."""
    record = ResultRecord("a.b", "h", "drift", CLASSES["c0"] + CLASSES["xml-markup"])
    record.observed = {"esc": CLASSES["esc"], "huge": HUGE, "n": float("nan"), "s": "\udcff"}
    back = _strict_json(report.to_json([record], HEADER))["results"][0]  # type: ignore[index]
    assert back["reason"] == record.reason
    assert back["observed"] == {"esc": CLASSES["esc"], "huge": HUGE, "n": "nan", "s": "\\udcff"}


def test_json_schema_rejects_what_it_should() -> None:
    """The schema is not a rubber stamp: a wrong outcome or missing key fails it."""
    data = json.loads(report.to_json(PER_CLASS["unicode"], HEADER))
    validator = jsonschema.Draft202012Validator(RESULTS_SCHEMA)
    data["results"][0]["outcome"] = "passed"
    assert not validator.is_valid(data)
    del data["results"][0]["outcome"]
    assert not validator.is_valid(data)
    assert not validator.is_valid({"run": {"id": "x"}, "results": []})


class _Table(HTMLParser):
    """Rows and cells of the rendered Markdown, and every tag seen."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.tags: set[str] = set()
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


@pytest.mark.parametrize("case", sorted(CASES))
def test_markdown_renders_one_row_per_record(case: str) -> None:
    records = CASES[case]
    text = report.to_markdown(records, HEADER)
    html = markdown.markdown(_utf8(text).decode("utf-8"), extensions=["tables"])
    table = _Table()
    table.feed(html)
    assert len(table.rows) == len(records) + 1
    assert all(len(row) == 4 for row in table.rows)
    assert table.tags <= {"h2", "p", "table", "thead", "tbody", "tr", "th", "td", "code"}
    targets = [row[2] for row in table.rows[1:]]
    assert targets == [for_terminal(r.target, limit=500).strip() for r in records]


_RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize("case", sorted(CASES))
def test_terminal_table_shows_no_raw_control_character(case: str) -> None:
    records = CASES[case]
    text = report.table(records, 1.0)
    _utf8(text)
    assert not _RAW_CONTROL.search(text)
    assert len(max(text.splitlines(), key=len)) < 5000  # a 3 MB error is clipped


def test_escape_sequences_are_shown_escaped_not_dropped() -> None:
    record = ResultRecord("a.b", "h200", "error", "boom \x1b[31mred\x1b[0m \x00")
    assert "boom \\x1b[31mred\\x1b[0m \\x00" in report.table([record], 0.1)
    xml = report.to_junit([record], HEADER)
    assert "boom \\x1b[31mred\\x1b[0m \\x00" in etree.fromstring(_utf8(xml)).find(".//error").text


def test_progress_lines_are_escaped(tmp_path: Path) -> None:
    import io

    stream = io.StringIO()
    progress = report.Progress(1, stream=stream, verbose=True)
    progress.result(ResultRecord("a.b", "h\x1b[2J", "error", "x\x1b]0;title\x07\nnext"))
    progress.note("agent said \x1b[31m")
    assert "\x1b" not in stream.getvalue() and "\x07" not in stream.getvalue()
    assert stream.getvalue().count("\n") == 2


HOSTILE_PROBE = r'''
def shout(kind):
    """Returns or raises text no terminal or XML parser should get raw."""
    text = "\x1b[31mred\x1b[0m \x00 \x0b \ufffe ]]> \nnot ok 9 - forged # TODO \udcff"
    if kind == "raise":
        raise RuntimeError(text)
    if kind == "huge":
        return "x" * 3_000_000
    return {"v": text, "n": float("nan")}
PROBES = {"t.shout": shout}
'''


@pytest.fixture(scope="module")
def hostile_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    facts = [
        fact("hw.raise", "t.shout", {"eq": 1}, args={"kind": "raise"}, target="local"),
        fact("hw.drift", "t.shout", {"eq": 1}, args={"kind": "value"}, target="local"),
        fact("hw.huge", "t.shout", {"eq": 1}, args={"kind": "huge"}, target="local"),
    ]
    root = tmp_path_factory.mktemp("hostile") / "kb"
    return make_kb(root, facts, checks={"shout.py": HOSTILE_PROBE})


@pytest.mark.parametrize("fmt", report.FORMATS)
def test_cli_output_from_a_hostile_box_parses(hostile_kb: Path, fmt: str) -> None:
    """End to end: a real agent runs probes that print ESC, NUL and lone surrogates."""
    code, out, err = cli(hostile_kb, "verify", "--no-save", "--format", fmt)
    assert code == 3, err
    _utf8(out)
    if fmt == "junit":
        JUNIT_XSD.assertValid(etree.fromstring(_utf8(out)))
        JENKINS_XSD.assertValid(etree.fromstring(_utf8(out)))
        assert len(next(iter(JUnitXml.fromstring(_utf8(out))))) == 3
    elif fmt == "tap":
        results = [line for line in Parser().parse_text(out) if line.category == "test"]
        assert [r.ok for r in results] == [False, False, False]
    elif fmt == "json":
        data = _strict_json(out)
        jsonschema.Draft202012Validator(RESULTS_SCHEMA).validate(data)
    elif fmt == "table":
        assert not _RAW_CONTROL.search(out)
        assert "\\x1b[31mred" in out
    elif fmt == "openmetrics":
        families = {f.name: f for f in openmetrics_parse(out)}
        status = families["factbook_check_status"].samples
        assert len({s.labels["fact"] for s in status}) == 3
        assert sum(s.value for s in status if s.labels["outcome"] != "pass") == 3
    else:
        table = _Table()
        table.feed(markdown.markdown(out, extensions=["tables"]))
        assert len(table.rows) == 4


def test_a_clipped_reason_keeps_its_location() -> None:
    record = ResultRecord("a.b", "h200", "error", HUGE + " [facts/hw.yaml:12]")
    line = report.table([record], 0.1).splitlines()[0]
    assert len(line) < 5000 and line.endswith("more characters] [facts/hw.yaml:12]")


def test_junit_carries_file_and_line_where_jenkins_schema_allows() -> None:
    records = [
        ResultRecord("hw.a", "h200", "drift", "expected 1", extra={"location": "facts/hw.yaml:12"}),
        ResultRecord("hw.b", "h200", "pass", "", extra={"location": "facts/hw.yaml:30"}),
        ResultRecord("hw.c", "h200", "pass", ""),
    ]
    root = etree.fromstring(_utf8(report.to_junit(records, HEADER)))
    JENKINS_XSD.assertValid(root)
    cases = root.findall(".//testcase")
    assert [c.findtext("system-out") for c in cases] == [
        "at: facts/hw.yaml:12",
        "at: facts/hw.yaml:30",
        None,
    ]
    assert all("file" not in c.attrib for c in cases)
    cases[0].set("file", "facts/hw.yaml")  # what the old output had: Jenkins' schema refuses it
    assert not JENKINS_XSD.validate(root)


@pytest.mark.parametrize(
    "change",
    [
        lambda root: root.find(".//testcase").attrib.pop("name"),
        lambda root: root.find(".//testsuite").set("tests", "three"),
        lambda root: root.find(".//testcase").set("time", "-1"),
        lambda root: etree.SubElement(root.find(".//testcase"), "failure"),  # a second outcome
        lambda root: etree.SubElement(root, "testcase", name="x"),  # outside a suite
    ],
)
def test_the_junit_schema_refuses_what_ci_servers_refuse(change: Callable[[Any], object]) -> None:
    records = [ResultRecord("a.b", "h200", "drift", "expected eq 1, observed 2")]
    root = etree.fromstring(_utf8(report.to_junit(records, HEADER)))
    JUNIT_XSD.assertValid(root)
    change(root)
    assert not JUNIT_XSD.validate(root)


def test_show_prints_a_stored_result_escaped(tmp_path: Path) -> None:
    from factbook.store.results import merge_latest

    root = make_kb(tmp_path / "kb", [fact("hw.a", "cpu.threads", {"ge": 1}, target="local")])
    merge_latest(root, [ResultRecord("hw.a", "local", "error", "boom \x1b[2J\x1b]0;x\x07 \ud800")])
    code, out, _ = cli(root, "show", "hw.a")
    assert code == 0 and "boom \\x1b[2J\\x1b]0;x\\x07 \\ud800" in out
    assert not _RAW_CONTROL.search(out)
