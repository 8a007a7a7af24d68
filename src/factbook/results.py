"""Verification results on disk: one JSON-lines file per run, and the latest per fact per target.

Layout (documented in docs/results-format.md):

    results/runs/<run_id>.jsonl   first line: {"run": {...}}; then one ResultRecord per line
    results/latest.json           {fact_id: {target: ResultRecord}}, merged after every run

The handbook, `factbook show` and status documents read only this module's API.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import outcomes
from .atomic import write_text_atomic
from .errors import ResultsUnreadable

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
    base.mkdir(parents=True, exist_ok=True)
    lock_path = base / ".latest.lock"
    with open(lock_path, "a+") as lock:
        _lock(lock)
        try:
            latest = load_latest(root)
            for record in records:
                if record.outcome == outcomes.SKIPPED and record.fact in latest:
                    continue
                latest.setdefault(record.fact, {})[record.target] = asdict(record)
            write_text_atomic(
                base / "latest.json", json.dumps(latest, indent=1, sort_keys=True, default=str)
            )
        finally:
            _unlock(lock)


def _lock(handle: Any) -> None:
    if os.name == "posix":
        import fcntl

        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)


def _unlock(handle: Any) -> None:
    if os.name == "posix":
        import fcntl

        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def load_latest(root: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """{fact_id: {target: record dict}}; empty when nothing was verified yet.

    A latest.json that exists but does not parse (a git merge conflict, a truncated copy) is
    an error, never read as empty: a run would otherwise replace every result in it with its
    own few. The user fixes or removes it; results/runs/ still holds every run.
    """
    path = results_dir(root) / "latest.json"
    if not path.exists():
        return {}
    shown = f"{RESULTS_DIR}/latest.json"
    advice = (
        "fix it (git checkout / resolve the conflict) or delete it to start afresh "
        "(results/runs/ keeps every run); not overwritten"
    )
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsUnreadable(f"{shown}: not UTF-8 (byte {exc.start}); {advice}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsUnreadable(
            f"{shown}:{exc.lineno}: not valid JSON ({exc.msg}); {advice}"
        ) from exc
    problem = _shape_problem(data)
    if problem:
        raise ResultsUnreadable(f"{shown}: {problem}; {advice}")
    return data


def _shape_problem(data: Any) -> str | None:
    """Why `data` is not {fact_id: {target: record}}, or None."""
    if not isinstance(data, dict):
        return f"expected an object of facts, found a JSON {type(data).__name__}"
    for fact_id, by_target in data.items():
        if not isinstance(by_target, dict):
            return f"fact {fact_id!r}: expected an object of targets"
        for target, record in by_target.items():
            if not isinstance(record, dict):
                return f"fact {fact_id!r}, target {target!r}: expected a result object"
    return None


def latest_for(root: Path, fact_id: str) -> list[ResultRecord]:
    """The latest result of one fact on every target it was checked on."""
    return [ResultRecord.from_dict(r) for r in load_latest(root).get(fact_id, {}).values()]


def list_runs(root: Path) -> list[dict[str, Any]]:
    """Run headers, newest first."""
    runs = []
    for path in sorted((results_dir(root) / "runs").glob("*.jsonl"), reverse=True):
        with path.open(encoding="utf-8") as handle:
            first = handle.readline()
        try:
            runs.append(json.loads(first)["run"])
        except (json.JSONDecodeError, KeyError):
            continue
    return runs
