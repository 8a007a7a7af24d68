"""Measured facts on a page: the figure, its share of the limit the fact states, its history.

A measurement's observed value is a whole report (per-GPU figures, spread, conditions), too
big for a result row. Here it shrinks to what a reader wants: the figure the expectation
judges (the path of its `share` operator, else `worst`), that figure as a share of the
stated limit, the per-GPU or per-link figures, and the same over every stored run, oldest
first. A drift's reason comes from `near_median`/`share`, which name the GPU or link.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factbook.handbook.markup import capped, md, time_text
from factbook.judging.expectations import PathMissing, get_path
from factbook.judging.sanitize import loads_without_surrogates
from factbook.knowledge.kbfiles import read_text
from factbook.knowledge.limits import RUN_MAX_BYTES
from factbook.knowledge.model import Fact
from factbook.store.results import results_dir

MAX_RUN_BYTES = RUN_MAX_BYTES  # limits.py: store/results.py writes no run file larger

MEASURED_PREFIX = "measure."
HISTORY_SHOWN = 8  # most recent runs listed under a fact
HISTORY_RUNS = 256  # newest run files read for the measured history
HISTORY_BYTES = 256 << 20  # and of them at most this much in all


def is_measured(fact: Fact) -> bool:
    return fact.check is not None and fact.check.probe.startswith(MEASURED_PREFIX)


def limits_in(expect: Any, path: str = "") -> list[tuple[str, float]]:
    """(path to the judged figure, limit) of every `share` operator in an expectation tree."""
    if isinstance(expect, list):
        return [found for item in expect for found in limits_in(item, path)]
    if not isinstance(expect, dict):
        return []
    here = expect.get("path", path) if isinstance(expect.get("path", path), str) else path
    found = []
    share = expect.get("share")
    if isinstance(share, dict) and isinstance(share.get("of"), (int, float)):
        found.append((here, float(share["of"])))
    for key in ("all", "any", "each", "not"):
        if key in expect:
            found += limits_in(expect[key], here)
    return found


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def figure(fact: Fact, observed: Any) -> tuple[str, float | None, float | None]:
    """(name of the figure, its value, its limit) from one observed report."""
    limits = limits_in(fact.check.expect) if fact.check is not None else []
    for path, limit in limits:
        try:
            value = _number(get_path(observed, path) if path else observed)
        except PathMissing:
            continue
        if value is not None:
            return path or "value", value, limit
    if isinstance(observed, dict):
        for key in ("worst", "busbw"):
            if _number(observed.get(key)) is not None:
                return key, float(observed[key]), None
    return "value", _number(observed), None


def figure_text(fact: Fact, observed: Any) -> str:
    """`worst 712.3 TFLOP/s = 72% of 989`, with the per-GPU figures when there are several."""
    name, value, limit = figure(fact, observed)
    if value is None:
        return "no figure"
    unit = observed.get("unit") if isinstance(observed, dict) else None
    unit = unit or fact.unit or ""
    text = f"{md(name)} {value:g} {md(unit)}".rstrip()
    if limit:
        text += f" = {value / limit:.0%} of {limit:g}"
    per = observed.get("values") if isinstance(observed, dict) else None
    if isinstance(per, dict) and len(per) > 1:
        text += " (" + capped([f"{md(k)} {v:g}" for k, v in per.items()], ", ") + ")"
    return text


def load_history(root: Path) -> dict[str, list[dict[str, Any]]]:
    """fact id -> its measured results from the newest HISTORY_RUNS stored runs (at most
    HISTORY_BYTES of them read), oldest first. Every run ever stored was read whole, so each
    `docs` grew with the history (`serve --save` keeps a run a minute: 4 GB in a week of a
    1,000-fact fleet); only lines naming a `measure.` probe are parsed."""
    history: dict[str, list[dict[str, Any]]] = {}
    paths = sorted((results_dir(root) / "runs").glob("*.jsonl"), reverse=True)
    budget, texts = HISTORY_BYTES, []
    for path in paths[:HISTORY_RUNS]:  # the newest first, for the budget
        try:
            texts.append(read_text(path, root=root, limit=min(MAX_RUN_BYTES, budget)))
        except (OSError, ValueError):
            continue
        budget -= len(texts[-1])
        if budget <= 0:
            break
    for text in reversed(texts):  # the oldest first: runs of one second keep their order
        for line in text.splitlines()[1:]:
            if MEASURED_PREFIX not in line:
                continue
            record = _measured_record(line)
            if record is not None:
                history.setdefault(record["fact"], []).append(record)
    for records in history.values():
        records.sort(key=lambda r: str(r.get("time", "")))
    return history


def _measured_record(line: str) -> dict[str, Any] | None:
    """A run file's line when it is a measured result of a fact (an object naming a `fact`
    string and a `measure.` probe); None for anything else. A run file is a knowledge base
    file like any other: a line `[1]`, `{"fact": [1], ...}` or 100,000 `[`s stopped the
    handbook with a traceback."""
    try:
        record = loads_without_surrogates(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("fact"), str):
        return None
    return record if str(record.get("probe", "")).startswith(MEASURED_PREFIX) else None


def history_text(fact: Fact, records: list[dict[str, Any]]) -> str:
    """One entry per run, newest last: time, target, outcome, figure and share."""
    entries = []
    for record in records[-HISTORY_SHOWN:]:
        when = time_text(record.get("time"))
        where = md(record.get("target", "?"))
        outcome = str(record.get("outcome"))
        if "observed" in record and outcome in ("pass", "drift"):
            _, value, limit = figure(fact, record["observed"])
            shown = f"{value:g}" if value is not None else "?"
            if value is not None and limit:
                shown += f" ({value / limit:.0%})"
        else:
            shown = "not measured"
        entries.append(f"{when} {where}: {shown} {outcome}")
    older = len(records) - HISTORY_SHOWN
    prefix = f"{older} older, then " if older > 0 else ""
    return prefix + " → ".join(entries)


def measured_rows(fact: Fact, records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The `Measured` rows of a fact's view: latest figure per target and the run history."""
    if not records:
        return []
    latest: dict[str, dict[str, Any]] = {}
    for record in records:
        if "observed" in record:
            latest[str(record.get("target", "?"))] = record
    rows = [
        (f"Measured on {md(target)}", figure_text(fact, record["observed"]))
        for target, record in sorted(latest.items())
    ]
    rows.append(("Measured history", history_text(fact, records)))
    return rows
