"""Verification results on disk: one JSON-lines file per run, and the latest per fact per target.

Layout (documented in docs/results-format.md):

    results/runs/<run_id>.jsonl   first line: {"run": {...}}; then one ResultRecord per line
    results/latest.json           {fact_id: {target: ResultRecord}}, merged after every run

The handbook, `factbook show` and status documents read only this module's API.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from factbook.errors import Problem, ResultsUnreadable
from factbook.judging import outcomes
from factbook.knowledge.kbfiles import confined, escapes, require_inside
from factbook.knowledge.yamlsrc import read_text_bounded
from factbook.store.atomic import exclusive_lock, write_text_atomic

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
    """Store one run's history file and merge its records into latest.json, atomically."""
    base = results_dir(root)
    require_inside(base, RESULTS_DIR, root)
    lines = [json.dumps({"run": {"id": run_id, **header}}, sort_keys=True)]
    lines += [json.dumps(asdict(r), sort_keys=True, default=str) for r in records]
    run_path = base / "runs" / f"{run_id}.jsonl"
    load_latest(root)  # an unreadable latest.json refuses the whole save, history included
    write_text_atomic(run_path, "\n".join(lines) + "\n")
    merge_latest(root, records)
    return run_path


def merge_latest(root: Path, records: list[ResultRecord]) -> None:
    """Fold records into latest.json under an exclusive lock (concurrent runs are safe)."""
    base = results_dir(root)
    with exclusive_lock(base / ".latest.lock", Path(root), f"{RESULTS_DIR}/.latest.lock"):
        latest = load_latest(root)
        for record in records:
            if record.outcome == outcomes.SKIPPED and record.fact in latest:
                continue
            latest.setdefault(record.fact, {})[record.target] = asdict(record)
        write_text_atomic(
            base / "latest.json", json.dumps(latest, indent=1, sort_keys=True, default=str)
        )


# ~25,000 records, 10x this knowledge base's; parsed, 8 MiB of JSON stays under ~200 MB
MAX_RESULTS_BYTES = 8 << 20
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
        data = json.loads(text)
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
    out = []
    for fact_id, by_target in data.items():
        line = _line_of(text, fact_id)
        if not isinstance(by_target, dict):
            out.append(Problem(display, line, f"{fact_id}: expected a mapping {{target: record}}"))
            continue
        for target, record in by_target.items():
            where = f"{fact_id}.{target}"
            if not isinstance(record, dict):
                out.append(Problem(display, line, f"{where}: expected a mapping (a record)"))
                continue
            for key in ("fact", "target", "outcome", "reason"):
                if key not in record:
                    out.append(Problem(display, line, f"{where}: missing '{key}'"))
            for key, types in _RECORD_TYPES.items():
                value = record.get(key)
                if key in record and (not isinstance(value, types) or isinstance(value, bool)):
                    want = " or ".join(t.__name__ for t in types)
                    out.append(Problem(display, line, f"{where}.{key}: expected {want}"))
                elif isinstance(value, float) and not math.isfinite(value):
                    out.append(Problem(display, line, f"{where}.{key}: not a finite number"))
            if isinstance(record.get("outcome"), str) and record["outcome"] not in OUTCOMES:
                out.append(
                    Problem(
                        display,
                        line,
                        f"{where}.outcome: {record['outcome']!r} is not one of "
                        f"{', '.join(OUTCOMES)}",
                    )
                )
    return out


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
                first = handle.readline(1 << 20).decode("utf-8")
            header = json.loads(first)["run"]
        except (OSError, ValueError, RecursionError, KeyError, TypeError):
            continue  # one unreadable history file must not hide the others
        if isinstance(header, dict):
            runs.append(header)
    return runs
