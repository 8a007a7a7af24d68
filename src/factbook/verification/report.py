"""Render verification results: live progress, the summary table, JSON, JUnit XML, TAP, Markdown,
OpenMetrics (verify/openmetrics.py).

Every format carries the same facts: outcome, fact id, target, reason (expected vs observed,
with the fact's file:line on failures), so CI systems and people read the same verdict.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from factbook.errors import EXIT_ERRORED, EXIT_FAILED, EXIT_OK
from factbook.judging.outcomes import DRIFT, ERROR, OUTCOMES, PASS, SKIPPED
from factbook.judging.sanitize import (
    dumps_safe,
    finite_number,
    for_line,
    for_markdown_cell,
    for_terminal,
    for_xml,
    json_safe,
)
from factbook.knowledge.fleet.outliers import summary, value_groups
from factbook.knowledge.fleet.outliers import to_json as fleet_json
from factbook.store.results import ResultRecord
from factbook.verification.colour import paint
from factbook.verification.targets import Plan

MARK = {PASS: "ok", DRIFT: "FAIL", ERROR: "ERROR", SKIPPED: "skip"}


def counts(records: list[ResultRecord]) -> dict[str, int]:
    found = Counter(r.outcome for r in records)
    return {k: found.get(k, 0) for k in OUTCOMES}


def exit_code(records: list[ResultRecord]) -> int:
    """3 when anything errored (state unknown), else 1 when anything drifted, else 0."""
    found = counts(records)
    if found[ERROR]:
        return EXIT_ERRORED
    if found[DRIFT]:
        return EXIT_FAILED
    return EXIT_OK


def summary_line(records: list[ResultRecord], elapsed: float) -> str:
    c = counts(records)
    return (
        f"{len(records)} checks: {c[PASS]} passed, {c[DRIFT]} failed, {c[ERROR]} errored, "
        f"{c[SKIPPED]} skipped in {elapsed:.2f}s"
    )


class Progress:
    """Live progress on stderr: one rewritten line on a TTY, a line per result when verbose."""

    def __init__(
        self,
        total: int,
        *,
        stream: TextIO | None = None,
        verbose: bool = False,
        per_target: dict[str, int] | None = None,
    ):
        self.total, self.verbose = total, verbose
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.left = dict(per_target or {})  # checks still due per target
        self.targets_done = 0

    def _targets(self, record: ResultRecord) -> str:
        """` targets 12/64` once a run spans several targets."""
        if len(self.left) < 2 or record.target not in self.left:
            return ""
        self.left[record.target] -= 1
        if self.left[record.target] == 0:
            self.targets_done += 1
        return f", targets {self.targets_done}/{len(self.left)}"

    def result(self, record: ResultRecord) -> None:
        with self.lock:
            self.seen[record.outcome] += 1
            done = sum(self.seen.values())
            across = self._targets(record)
            if self.verbose:
                prefix = "\r\x1b[K" if self.tty else ""
                self.stream.write(
                    f"{prefix}[{done}/{self.total}] {MARK[record.outcome]:<5} "
                    f"{for_terminal(record.fact)}@{for_terminal(record.target)}  "
                    f"{for_terminal(record.reason)}\n"
                )
            if self.tty:
                bad = self.seen[DRIFT] + self.seen[ERROR]
                self.stream.write(
                    f"\r\x1b[K[{done}/{self.total}] {self.seen[PASS]} ok, {bad} not ok{across}  "
                    f"{for_terminal(record.fact)}@{for_terminal(record.target)}"[: _width()]
                )
            self.stream.flush()

    def note(self, text: str) -> None:
        with self.lock:
            self.stream.write(("\r\x1b[K" if self.tty else "") + f"note: {for_terminal(text)}\n")
            self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _width() -> int:
    return max(60, shutil.get_terminal_size((120, 20)).columns - 1)


# Errors sharing one cause (an unreachable box) collapse into one line past this many.
COLLAPSE_AT = 4
_LOCATION = re.compile(r" \[[^\]]+:\d+\]$")


# Past this many targets a run is a fleet: passing checks are summed up per fact by value
# (fleet/outliers.py) instead of listed one line each.
FLEET_AT = 5


def table(
    records: list[ResultRecord],
    elapsed: float,
    *,
    show_passed: bool | None = None,
    colour: bool = False,
) -> str:
    """The human summary: failures first with their reasons, then a count line.

    Over FLEET_AT targets or more, passing checks are not listed; each fact checked on two or
    more targets gets one line grouping its targets by observed value, outliers named.

    Errors with the same cause on one target (an unreachable box: 116 times 'cannot
    resolve llm-two') show once, with how many checks they hit. Everything from a box is
    shown escaped (an ESC sequence in an error reads `\\x1b[31m`, it does not recolour).
    """
    order = {DRIFT: 0, ERROR: 1, SKIPPED: 2, PASS: 3}
    fleet = len({r.target for r in records}) >= FLEET_AT
    if show_passed is None:
        show_passed = not fleet
    shown = [_TableRow(r) for r in records if show_passed or r.outcome != PASS]
    shown.sort(key=lambda r: (order[r.outcome], r.target, r.fact))
    causes = Counter((r.target, r.cause) for r in shown if r.outcome == ERROR)
    width = _width()
    fact_w = min(max((len(r.fact) for r in shown), default=4), 48)
    target_w = min(max((len(r.target) for r in shown), default=6), 20)
    lines = []
    collapsed: set[tuple[str, str]] = set()
    for r in shown:
        cause = (r.target, r.cause)
        if r.outcome == ERROR and causes[cause] >= COLLAPSE_AT:
            if cause not in collapsed:
                collapsed.add(cause)
                label = f"({causes[cause]} checks)"
                mark = paint(f"{MARK[ERROR]:<5}", ERROR, colour)
                lines.append(f"{mark} {label:<{fact_w}}  {r.target:<{target_w}}  {cause[1]}")
            continue
        head = f"{MARK[r.outcome]:<5} {r.fact:<{fact_w}}  {r.target:<{target_w}}  "
        reason = r.reason
        if r.outcome == PASS and len(head) + len(reason) > width:
            reason = reason[: max(10, width - len(head) - 3)] + "..."
        lines.append(paint(head[:5], r.outcome, colour) + head[5:] + reason)
    groups = value_groups(records)
    if groups and (fleet or any(len(g) > 1 for g in groups.values())):
        lines.append("by value:")
        for fact, found in groups.items():
            line = f"  {for_terminal(fact, limit=200)}: {for_terminal(summary(found))}"
            lines.append(line if len(line) <= 4 * width else line[: 4 * width - 3] + "...")
    lines.append(summary_line(records, elapsed))
    return "\n".join(lines) + "\n"


class _TableRow:
    """A record's fields as the terminal shows them (escaped, one line, clipped)."""

    def __init__(self, record: ResultRecord):
        self.outcome = record.outcome
        self.fact = for_terminal(record.fact, limit=200)
        self.target = for_terminal(record.target, limit=200)
        self.reason = for_terminal(record.reason)
        where = _LOCATION.search(record.reason)
        if where and not self.reason.endswith(where.group(0)):  # clipped: keep file:line
            self.reason += for_terminal(where.group(0), limit=300)
        self.cause = _LOCATION.sub("", self.reason)


def to_json(records: list[ResultRecord], header: dict[str, Any]) -> str:
    """The whole run as one JSON document; strict parsers (no NaN, no lone surrogate) read it."""
    document = {
        "run": header,
        "summary": counts(records),
        "fleet": fleet_json(records),
        # vars(), not asdict(): dumps_safe copies nothing (asdict twice over cost a third of
        # the report's time)
        "results": [{**vars(r), "duration_s": _duration(r)} for r in records],
    }
    return dumps_safe(document) + "\n"


# Per-field limits in JUnit XML: CI servers show messages in one line and keep details in a
# database column; libxml2 refuses text nodes over 10 MB unless told otherwise.
_XML_MESSAGE = 1000
_XML_DETAIL = 64_000


def to_junit(records: list[ResultRecord], header: dict[str, Any]) -> str:
    """JUnit XML: a testsuite per target, a testcase per fact (classname = category).

    Valid against Jenkins' junit-10.xsd (the schema pytest's own tests use) and
    schema/junit.xsd whatever a box printed. That schema has no `file` attribute on a
    testcase, so a fact's file:line is the testcase's `<system-out>` (`at: facts/x.yaml:12`),
    which Jenkins, GitLab and GitHub reporters show beside the test.
    """
    from xml.etree import ElementTree as ET  # only this format needs it (~5 ms to import)

    root = ET.Element("testsuites", name="factbook", tests=str(len(records)))
    root.set("failures", str(sum(r.outcome == DRIFT for r in records)))
    root.set("errors", str(sum(r.outcome == ERROR for r in records)))
    root.set("time", f"{sum(_duration(r) for r in records):.3f}")
    by_target: dict[str, list[ResultRecord]] = {}
    for r in records:
        by_target.setdefault(r.target, []).append(r)
    started = _xml_timestamp(header.get("started"))
    for target, items in by_target.items():
        c = counts(items)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=for_xml(target, limit=200),
            tests=str(len(items)),
            failures=str(c[DRIFT]),
            errors=str(c[ERROR]),
            skipped=str(c[SKIPPED]),
            time=f"{sum(_duration(r) for r in items):.3f}",
        )
        if started:
            suite.set("timestamp", started)
        for r in items:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=for_xml(f"{target}.{r.fact.split('.')[0]}", limit=200),
                name=for_xml(r.fact, limit=200),
                time=f"{_duration(r):.3f}",
            )
            message = for_xml(r.reason.replace("\n", " "), limit=_XML_MESSAGE)
            if r.outcome == DRIFT:
                failure = ET.SubElement(case, "failure", message=message, type="drift")
                failure.text = for_xml(_detail(r), limit=_XML_DETAIL)
            elif r.outcome == ERROR:
                error = ET.SubElement(case, "error", message=message, type="error")
                error.text = for_xml(r.reason, limit=_XML_DETAIL)
            elif r.outcome == SKIPPED:
                ET.SubElement(case, "skipped", message=message)
            where = str(r.extra.get("location", ""))
            if where:
                ET.SubElement(case, "system-out").text = for_xml(f"at: {where}", limit=1000)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _duration(r: ResultRecord) -> float:
    """A duration JUnit's xs:decimal accepts (a record read from disk may hold anything)."""
    value = finite_number(r.duration_s)
    return value if value is not None and value >= 0 else 0.0


def _xml_timestamp(value: Any) -> str:
    """An xs:dateTime, or '' when the header holds none (the attribute is then left out)."""
    text = str(value or "")
    return text if _DATETIME.fullmatch(text) else ""


_DATETIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")


def _detail(r: ResultRecord) -> str:
    return (
        f"{r.reason}\nexpected: {_json_preview(r.extra.get('expect'))}\n"
        f"observed: {_json_preview(r.observed)}\n"
        f"at: {r.extra.get('location', '')}"
    )


def _json_preview(value: Any, limit: int = 2000) -> str:
    text = json.dumps(json_safe(value), allow_nan=False)
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more]"


def to_tap(records: list[ResultRecord], header: dict[str, Any]) -> str:
    """TAP 13: `not ok` for drift and errors, `# SKIP` for skipped, a YAML block with details.

    Every text from a box stays on its line (newlines shown as `\\n`), so no printed text
    can start a test line of its own. A `#` in a test name would start a directive, and
    consumers disagree on the spec's `\\#` escape (tap.py ignores it and reads a directive),
    so it is written as the fullwidth `＃`.
    """
    lines = ["TAP version 13", f"1..{len(records)}"]
    for i, r in enumerate(records, 1):
        name = _tap_text(f"{r.fact} @ {r.target}")
        if r.outcome == PASS:
            lines.append(f"ok {i} - {name}")
        elif r.outcome == SKIPPED:
            lines.append(f"ok {i} - {name} # SKIP {_tap_text(r.reason)}")
        else:
            lines.append(f"not ok {i} - {name}")
            lines += [
                "  ---",
                f"  outcome: {_yaml_scalar(r.outcome)}",
                f"  message: {_yaml_scalar(r.reason)}",
                f"  at: {_yaml_scalar(str(r.extra.get('location', '')))}",
                f"  observed: {_yaml_scalar(_json_preview(r.observed))}",
                "  ...",
            ]
    return "\n".join(lines) + "\n"


def _tap_text(text: str) -> str:
    return for_line(text, limit=1000).replace("#", "\uff03")


def _yaml_scalar(text: str) -> str:
    # A JSON string of one line with every control escaped is a YAML double-quoted scalar.
    # Not ASCII-only: YAML 1.1 reads a `\\ud83d\\ude80` pair as two lone surrogates.
    return json.dumps(for_line(text), ensure_ascii=False)


_PLAIN_ID = re.compile(r"[A-Za-z0-9_.\-]+")


def to_markdown(records: list[ResultRecord], header: dict[str, Any]) -> str:
    """A Markdown table; no cell text can add a column, a row or raw HTML."""
    c = counts(records)
    lines = [
        f"## Verification {for_markdown_cell(header.get('id', ''))}",
        "",
        f"{c[PASS]} passed, {c[DRIFT]} failed, {c[ERROR]} errored, {c[SKIPPED]} skipped.",
        "",
        "| outcome | fact | target | reason |",
        "|---|---|---|---|",
    ]
    for r in records:
        fact = f"`{r.fact}`" if _PLAIN_ID.fullmatch(r.fact) else for_markdown_cell(r.fact)
        lines.append(
            f"| {MARK[r.outcome]} | {fact} | {for_markdown_cell(r.target)} | "
            f"{for_markdown_cell(r.reason)} |"
        )
    return "\n".join(lines) + "\n"


def render_plan(plan: Plan) -> str:
    """--dry-run: which check runs where, one line each; unplaced facts say why."""
    lines = []
    for check in plan.checks:
        assert check.fact.check is not None
        lines.append(
            f"{check.fact.id}  on {check.target}: {check.fact.check.probe} "
            f"{json.dumps(check.fact.check.args)}"
        )
    lines += [f"{fact.id}  on -: no target (pass --target)" for fact in plan.unplaced]
    return "".join(line + "\n" for line in lines)


@dataclass(frozen=True)
class RenderOptions:
    """What some formats take beyond the records: `categories` (fact id -> category) labels
    the openmetrics series, `colour` colours the table's outcome marks (colour.py decides)."""

    categories: dict[str, str] | None = None
    colour: bool = False


Renderer = Callable[[list[ResultRecord], dict[str, Any], float, RenderOptions], str]


def _table(
    records: list[ResultRecord], header: dict[str, Any], elapsed: float, options: RenderOptions
) -> str:
    return table(records, elapsed, colour=options.colour)


def _openmetrics(
    records: list[ResultRecord], header: dict[str, Any], elapsed: float, options: RenderOptions
) -> str:
    from factbook.verification.openmetrics import to_openmetrics  # it imports this module's helpers

    return to_openmetrics(records, header, options.categories)


def _documents(render_one: Callable[[list[ResultRecord], dict[str, Any]], str]) -> Renderer:
    return lambda records, header, elapsed, options: render_one(records, header)


# Every output format, declared once: `--format`, `--report FORMAT:PATH` and the docs read it.
RENDERERS: dict[str, Renderer] = {
    "table": _table,
    "json": _documents(to_json),
    "junit": _documents(to_junit),
    "tap": _documents(to_tap),
    "markdown": _documents(to_markdown),
    "openmetrics": _openmetrics,
}
FORMATS = tuple(RENDERERS)


def render(
    fmt: str,
    records: list[ResultRecord],
    header: dict[str, Any],
    elapsed: float,
    *,
    categories: dict[str, str] | None = None,
    colour: bool = False,
) -> str:
    """One report in format `fmt` (see RENDERERS)."""
    return RENDERERS[fmt](records, header, elapsed, RenderOptions(categories, colour))
