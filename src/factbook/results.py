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

from .atomic import write_text_atomic

RESULTS_DIR = "results"
OUTCOMES = ("pass", "drift", "error", "skipped")


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
                if record.outcome == "skipped" and record.fact in latest:
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
    """{fact_id: {target: record dict}}; empty when nothing was verified yet."""
    path = results_dir(root) / "latest.json"
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return {}


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
