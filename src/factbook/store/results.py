"""Verification results on disk: one JSON-lines file per run, and the latest per fact per target.

Layout (documented in docs/results-format.md):

    results/runs/<run_id>.jsonl   first line: {"run": {...}}; then one ResultRecord per line
    results/latest.json           {fact_id: {target: ResultRecord}}, merged after every run

The handbook, `factbook show` and status documents read only this module's API.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factbook.errors import Problem, ResultsTooLarge, ResultsUnreadable
from factbook.judging import outcomes
from factbook.judging.sanitize import loads_without_surrogates
from factbook.knowledge.kbfiles import confined, escapes, require_inside
from factbook.knowledge.limits import (
    PREVIEW_MIN_CHARS,
    RESULTS_MAX_BYTES,
    RUN_HEADER_MAX_BYTES,
    RUN_MAX_BYTES,
    preview,
)
from factbook.knowledge.yamlsrc import read_text_bounded
from factbook.store.atomic import exclusive_lock, require_writable, write_text_atomic

RESULTS_DIR = "results"
OUTCOMES = outcomes.OUTCOMES  # kept for readers of this module


@dataclass
class ResultRecord:
    """The outcome of one fact's check on one target."""

    fact: str
    target: str
    outcome: str  # pass | drift | error | skipped
    reason: str
    observed: Any = None
    time: str = ""  # ISO 8601 UTC of the observation
    run: str = ""
    duration_s: float = 0.0
    probe: str = ""
    attempts: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResultRecord:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


def results_dir(root: Path) -> Path:
    return Path(root) / RESULTS_DIR


def write_run(root: Path, run_id: str, header: dict[str, Any], records: list[ResultRecord]) -> Path:
    """Store one run's history file and merge its records into latest.json, atomically.

    Neither file can exceed what its reader accepts (limits.py): the biggest values become
    previews until both fit, and a run that still would not fit is refused before anything is
    written (ResultsTooLarge), so a run never locks the knowledge base out of its results.
    """
    base = results_dir(root)
    require_inside(base, RESULTS_DIR, root)
    head = {k: preview(v, RUN_HEADER_MAX_BYTES // (len(header) + 2)) for k, v in header.items()}
    dicts = [_as_dict(r) for r in records]
    fit_records(dicts, RUN_MAX_BYTES)
    lines = [json.dumps({"run": {"id": run_id, **head}}, sort_keys=True, default=str)]
    lines += [json.dumps(d, sort_keys=True, default=str) for d in dicts]
    text = "\n".join(lines) + "\n"
    run_path = base / "runs" / f"{run_id}.jsonl"
    if len(text.encode("utf-8")) > RUN_MAX_BYTES:
        raise ResultsTooLarge(_too_large(f"{RESULTS_DIR}/runs/{run_id}.jsonl", len(dicts)))
    with exclusive_lock(base / ".latest.lock", Path(root), f"{RESULTS_DIR}/.latest.lock"):
        latest_text = _merged_latest(root, dicts)  # refused here: nothing written yet
        for folder, display in ((run_path.parent, f"{RESULTS_DIR}/runs"), (base, RESULTS_DIR)):
            require_writable(folder, display)  # both files or neither
        write_text_atomic(run_path, text)
        write_text_atomic(base / "latest.json", latest_text)
    return run_path


def merge_latest(root: Path, records: list[ResultRecord]) -> None:
    """Fold records into latest.json under an exclusive lock (concurrent runs are safe)."""
    base = results_dir(root)
    with exclusive_lock(base / ".latest.lock", Path(root), f"{RESULTS_DIR}/.latest.lock"):
        text = _merged_latest(root, [_as_dict(r) for r in records])
        write_text_atomic(base / "latest.json", text)


def _merged_latest(root: Path, records: list[dict[str, Any]]) -> str:
    """latest.json's new text (the caller holds the lock): read, merged, fitted, checked."""
    latest = load_latest(root)  # an unreadable latest.json refuses the whole save
    for record in records:
        if record["outcome"] == outcomes.SKIPPED and record["fact"] in latest:
            continue
        latest.setdefault(record["fact"], {})[record["target"]] = dict(record)
    fit_records([r for by in latest.values() for r in by.values()], RESULTS_MAX_BYTES)
    text = _dump_latest(latest)
    if len(text.encode("utf-8")) > RESULTS_MAX_BYTES:
        count = sum(len(by) for by in latest.values())
        raise ResultsTooLarge(_too_large(f"{RESULTS_DIR}/latest.json", count))
    return text


def _as_dict(record: ResultRecord) -> dict[str, Any]:
    """A record as a dict, values shared, not deep-copied (`asdict` copies every observed
    list); `extra` is copied one level, as fitting replaces values in it."""
    out = {name: getattr(record, name) for name in ResultRecord.__dataclass_fields__}
    out["extra"] = dict(record.extra)
    return out


def _dump_latest(latest: dict[str, dict[str, dict[str, Any]]]) -> str:
    """latest.json's text: one line per fact and one per record (a diff names the record
    that changed; each line is written by json's C encoder, which `indent` would bypass)."""
    parts = []
    for fact_id in sorted(latest):
        by_target = latest[fact_id]
        rows = ",\n".join(
            f"  {json.dumps(t)}: {json.dumps(by_target[t], sort_keys=True, default=str)}"
            for t in sorted(by_target)
        )
        parts.append(f" {json.dumps(fact_id)}: {{\n{rows}\n }}")
    return "{\n" + ",\n".join(parts) + "\n}\n" if parts else "{}\n"


def _too_large(display: str, count: int) -> str:
    return (
        f"{display}: {count} results would not fit in the bytes factbook reads back even "
        "with every value as a short preview; nothing written"
    )


_SHRINKABLE = ("observed", "reason")
_SHRINKABLE_EXTRA = ("args", "expect")


def fit_records(records: list[dict[str, Any]], limit: int) -> None:
    """Make `records` fit `limit` bytes of JSON, in place: the biggest ones have their values
    (observed, reason, args, expect) turned into previews, the smallest are kept whole.

    Linear after one sort: each record's size is measured once, and one cap is found such
    that every record under it is kept and every one over it is shrunk to it.
    """
    sizes = [_record_size(r) for r in records]
    budget = int(limit * 0.97) - 64 * len(records)  # keys and braces around each record
    if sum(sizes) <= budget:
        return
    cap = _water_level(sizes, budget)
    for record, size in zip(records, sizes, strict=True):
        if size > cap:
            _shrink(record, cap)


def _record_size(record: dict[str, Any]) -> int:
    return len(json.dumps(record, sort_keys=True, default=str))  # ASCII: bytes = characters


def _water_level(sizes: list[int], budget: int) -> int:
    """The largest cap with sum(min(size, cap)) <= budget."""
    ordered = sorted(sizes)
    below = 0
    for k, size in enumerate(ordered):
        left = len(ordered) - k
        if below + size * left > budget:
            return max(0, (budget - below) // left)
        below += size
    return ordered[-1] if ordered else 0


def _shrink(record: dict[str, Any], cap: int) -> None:
    """One record's values as previews small enough for the record to take `cap` bytes."""
    extra = record.get("extra") if isinstance(record.get("extra"), dict) else {}
    places = [(record, k) for k in _SHRINKABLE if k in record]
    places += [(extra, k) for k in _SHRINKABLE_EXTRA if k in extra]
    values = [holder[key] for holder, key in places]
    for holder, key in places:  # what the record takes without them
        holder[key] = ""
    room = max(0, cap - _record_size(record)) // max(1, len(places))
    each = max(PREVIEW_MIN_CHARS + 48, room // 2)  # JSON escapes: a character can take two
    for (holder, key), value in zip(places, values, strict=True):
        holder[key] = preview(value, each)


# ~80,000 records of ~400 bytes; parsed, ~400 MB (limits.py, shared with the writer above)
MAX_RESULTS_BYTES = RESULTS_MAX_BYTES
_RECORD_TYPES: dict[str, tuple[type, ...]] = {
    "fact": (str,),
    "target": (str,),
    "outcome": (str,),
    "reason": (str,),
    "time": (str,),
    "run": (str,),
    "duration_s": (int, float),
    "probe": (str,),
    "attempts": (int,),
    "extra": (dict,),
}


def load_latest(root: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """{fact_id: {target: record dict}}; empty when nothing was verified yet.

    A file that is not UTF-8, not JSON (a merge conflict) or not of this shape is refused with
    `results/latest.json:LINE: ...` (exit 2): nothing downstream indexes into unchecked values,
    and a run never silently replaces results it could not read.
    It is never overwritten: the user fixes or removes it; results/runs/ still holds every run.
    """
    path = results_dir(root) / "latest.json"
    if not (path.exists() or path.is_symlink()):
        return {}
    display = f"{RESULTS_DIR}/latest.json"
    with confined(root):
        text, problem = read_text_bounded(path, display, limit=MAX_RESULTS_BYTES)
    if problem is not None:
        raise ResultsUnreadable([problem])
    try:
        data = loads_without_surrogates(text)
    except json.JSONDecodeError as exc:
        raise ResultsUnreadable(
            [Problem(display, exc.lineno, f"not valid JSON: {exc.msg}")]
        ) from None
    except (ValueError, RecursionError) as exc:  # a 5000-digit number, nesting 100k deep
        message = str(exc).split(";")[0] or "nested too deeply"
        raise ResultsUnreadable([Problem(display, 1, f"not valid JSON: {message}")]) from None
    problems = _shape_problems(data, text, display)
    if problems:
        raise ResultsUnreadable(problems[:20])
    return data


def _shape_problems(data: Any, text: str, display: str) -> list[Problem]:
    if not isinstance(data, dict):
        return [Problem(display, 1, "expected a mapping {fact: {target: record}}")]
    found: list[tuple[str, str]] = []  # (fact id, message): lines are looked up at the end
    for fact_id, by_target in data.items():
        if len(found) >= 20:  # enough to act on; each line costs a scan of the file
            break
        if not isinstance(by_target, dict):
            found.append((fact_id, f"{fact_id}: expected a mapping {{target: record}}"))
            continue
        for target, record in by_target.items():
            where = f"{fact_id}.{target}"
            if not isinstance(record, dict):
                found.append((fact_id, f"{where}: expected a mapping (a record)"))
                continue
            for key in ("fact", "target", "outcome", "reason"):
                if key not in record:
                    found.append((fact_id, f"{where}: missing '{key}'"))
            for key, types in _RECORD_TYPES.items():
                value = record.get(key)
                if key in record and (not isinstance(value, types) or isinstance(value, bool)):
                    want = " or ".join(t.__name__ for t in types)
                    found.append((fact_id, f"{where}.{key}: expected {want}"))
                elif isinstance(value, float) and not math.isfinite(value):
                    found.append((fact_id, f"{where}.{key}: not a finite number"))
            if isinstance(record.get("outcome"), str) and record["outcome"] not in OUTCOMES:
                found.append(
                    (
                        fact_id,
                        f"{where}.outcome: {record['outcome']!r} is not one of "
                        f"{', '.join(OUTCOMES)}",
                    )
                )
    return [Problem(display, _line_of(text, key), message) for key, message in found[:20]]


def _line_of(text: str, key: str) -> int:
    """The line where `key` first appears as a JSON key (the file is written one per line)."""
    at = text.find(json.dumps(key) + ":")
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def latest_for(root: Path, fact_id: str) -> list[ResultRecord]:
    """The latest result of one fact on every target it was checked on."""
    return [ResultRecord.from_dict(r) for r in load_latest(root).get(fact_id, {}).values()]


def list_runs(root: Path) -> list[dict[str, Any]]:
    """Run headers, newest first."""
    runs = []
    for path in sorted((results_dir(root) / "runs").glob("*.jsonl"), reverse=True):
        if escapes(path, root) or not path.is_file():
            continue  # a link out of the knowledge base, a FIFO: not a run
        try:
            with path.open("rb") as handle:
                first = handle.readline(RUN_HEADER_MAX_BYTES).decode("utf-8")
            header = loads_without_surrogates(first)["run"]
        except (OSError, ValueError, RecursionError, KeyError, TypeError):
            continue  # one unreadable history file must not hide the others
        if isinstance(header, dict):
            runs.append(header)
    return runs
