"""Render verification results: live progress, the summary table, JSON, JUnit XML, TAP, Markdown.

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
from dataclasses import asdict
from typing import Any, TextIO
from xml.etree import ElementTree as ET

from ..errors import EXIT_ERRORED, EXIT_FAILED, EXIT_OK
from ..outcomes import DRIFT, ERROR, OUTCOMES, PASS, SKIPPED
from ..results import ResultRecord
from .targets import Plan

FORMATS = ("table", "json", "junit", "tap", "markdown")
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

    def __init__(self, total: int, *, stream: TextIO | None = None, verbose: bool = False):
        self.total, self.verbose = total, verbose
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()

    def result(self, record: ResultRecord) -> None:
        with self.lock:
            self.seen[record.outcome] += 1
            done = sum(self.seen.values())
            if self.verbose:
                prefix = "\r\x1b[K" if self.tty else ""
                self.stream.write(
                    f"{prefix}[{done}/{self.total}] {MARK[record.outcome]:<5} {record.fact}"
                    f"@{record.target}  {record.reason}\n"
                )
            if self.tty:
                bad = self.seen[DRIFT] + self.seen[ERROR]
                self.stream.write(
                    f"\r\x1b[K[{done}/{self.total}] {self.seen[PASS]} ok, {bad} not ok  "
                    f"{record.fact}@{record.target}"[: _width()]
                )
            self.stream.flush()

    def note(self, text: str) -> None:
        with self.lock:
            self.stream.write(("\r\x1b[K" if self.tty else "") + f"note: {text}\n")
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


def table(records: list[ResultRecord], elapsed: float, *, show_passed: bool = True) -> str:
    """The human summary: failures first with their reasons, then a count line.

    Errors with the same cause on one target (an unreachable box: 116 times 'cannot
    resolve llm-two') show once, with how many checks they hit.
    """
    order = {DRIFT: 0, ERROR: 1, SKIPPED: 2, PASS: 3}
    shown = [r for r in records if show_passed or r.outcome != PASS]
    shown.sort(key=lambda r: (order[r.outcome], r.target, r.fact))
    causes = Counter((r.target, _LOCATION.sub("", r.reason)) for r in shown if r.outcome == ERROR)
    width = _width()
    fact_w = min(max((len(r.fact) for r in shown), default=4), 48)
    target_w = min(max((len(r.target) for r in shown), default=6), 20)
    lines = []
    collapsed: set[tuple[str, str]] = set()
    for r in shown:
        cause = (r.target, _LOCATION.sub("", r.reason))
        if r.outcome == ERROR and causes[cause] >= COLLAPSE_AT:
            if cause not in collapsed:
                collapsed.add(cause)
                label = f"({causes[cause]} checks)"
                lines.append(
                    f"{MARK[ERROR]:<5} {label:<{fact_w}}  {r.target:<{target_w}}  {cause[1]}"
                )
            continue
        head = f"{MARK[r.outcome]:<5} {r.fact:<{fact_w}}  {r.target:<{target_w}}  "
        reason = r.reason.replace("\n", " ")
        if r.outcome == PASS and len(head) + len(reason) > width:
            reason = reason[: max(10, width - len(head) - 3)] + "..."
        lines.append(head + reason)
    lines.append(summary_line(records, elapsed))
    return "\n".join(lines) + "\n"


def to_json(records: list[ResultRecord], header: dict[str, Any]) -> str:
    return (
        json.dumps(
            {"run": header, "summary": counts(records), "results": [asdict(r) for r in records]},
            indent=1,
            default=str,
        )
        + "\n"
    )


def to_junit(records: list[ResultRecord], header: dict[str, Any]) -> str:
    """JUnit XML: a testsuite per target, a testcase per fact (classname = category)."""
    root = ET.Element("testsuites", name="factbook", tests=str(len(records)))
    by_target: dict[str, list[ResultRecord]] = {}
    for r in records:
        by_target.setdefault(r.target, []).append(r)
    for target, items in by_target.items():
        c = counts(items)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=target,
            tests=str(len(items)),
            failures=str(c[DRIFT]),
            errors=str(c[ERROR]),
            skipped=str(c[SKIPPED]),
            time=f"{sum(r.duration_s for r in items):.3f}",
            timestamp=str(header.get("started", "")),
        )
        for r in items:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{target}.{r.fact.split('.')[0]}",
                name=r.fact,
                time=f"{r.duration_s:.3f}",
                file=str(r.extra.get("location", "")).rsplit(":", 1)[0],
            )
            if r.outcome == DRIFT:
                ET.SubElement(case, "failure", message=r.reason, type="drift").text = _detail(r)
            elif r.outcome == ERROR:
                ET.SubElement(case, "error", message=r.reason, type="error").text = r.reason
            elif r.outcome == SKIPPED:
                ET.SubElement(case, "skipped", message=r.reason)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _detail(r: ResultRecord) -> str:
    return (
        f"{r.reason}\nexpected: {json.dumps(r.extra.get('expect'), default=str)}\n"
        f"observed: {json.dumps(r.observed, default=str)[:2000]}\n"
        f"at: {r.extra.get('location', '')}"
    )


def to_tap(records: list[ResultRecord], header: dict[str, Any]) -> str:
    """TAP 13: `not ok` for drift and errors, `# SKIP` for skipped, a YAML block with details."""
    lines = ["TAP version 13", f"1..{len(records)}"]
    for i, r in enumerate(records, 1):
        name = f"{r.fact} @ {r.target}".replace("#", "\\#")
        if r.outcome == PASS:
            lines.append(f"ok {i} - {name}")
        elif r.outcome == SKIPPED:
            lines.append(f"ok {i} - {name} # SKIP {r.reason}")
        else:
            lines.append(f"not ok {i} - {name}")
            lines += [
                "  ---",
                f"  outcome: {r.outcome}",
                f"  message: {json.dumps(r.reason)}",
                f"  at: {json.dumps(str(r.extra.get('location', '')))}",
                f"  observed: {json.dumps(r.observed, default=str)[:2000]}",
                "  ...",
            ]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(records: list[ResultRecord], header: dict[str, Any]) -> str:
    c = counts(records)
    lines = [
        f"## Verification {header.get('id', '')}",
        "",
        f"{c[PASS]} passed, {c[DRIFT]} failed, {c[ERROR]} errored, {c[SKIPPED]} skipped.",
        "",
        "| outcome | fact | target | reason |",
        "|---|---|---|---|",
    ]
    for r in records:
        lines.append(f"| {MARK[r.outcome]} | `{r.fact}` | {_cell(r.target)} | {_cell(r.reason)} |")
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


def render(fmt: str, records: list[ResultRecord], header: dict[str, Any], elapsed: float) -> str:
    if fmt == "table":
        return table(records, elapsed)
    return {"json": to_json, "junit": to_junit, "tap": to_tap, "markdown": to_markdown}[fmt](
        records, header
    )
