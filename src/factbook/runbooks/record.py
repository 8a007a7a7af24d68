"""The run record: what a runbook run did, step by step, saved next to its executed notebook.

    results/runbooks/<runbook>/<run_id>/record.json     this record (the handbook reads it)
    results/runbooks/<runbook>/<run_id>/executed.ipynb  the notebook with every output
    results/runbooks/<runbook>/<run_id>/servers/        managed servers' logs
    results/runbooks/<runbook>/<run_id>/records.jsonl   measured values queued by record()
    results/runbooks/<runbook>/<run_id>/servers.jsonl   the managed-server registry

Run and step statuses are the constants in factbook.judging.outcomes (RUN_STATUSES, STEP_STATUSES).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from factbook.errors import InputError, UsageError, warn
from factbook.handbook.safehtml import slug
from factbook.judging.outcomes import OK, PENDING, RUNNING
from factbook.judging.sanitize import loads_without_surrogates
from factbook.knowledge.kbfiles import Refused, read_text
from factbook.knowledge.limits import KB_FILE_MAX_BYTES, PREVIEW_MIN_CHARS, preview
from factbook.knowledge.names import inside
from factbook.store import stamps
from factbook.store.atomic import write_text_atomic
from factbook.store.results import results_dir

RUNS_SUBDIR = "runbooks"
RECORD_FILE = "record.json"
NOTEBOOK_FILE = "executed.ipynb"
OUTPUT_LIMIT = 8000  # characters of text output kept per step in record.json


def now_iso() -> str:
    """Step and run times carry milliseconds (steps are often shorter than a second)."""
    return stamps.now_iso(ms=True)


def new_run_id(target: str | None) -> str:
    """The shared run-id scheme (stamps.new_run_id); the target is only a label, slugged
    (`../../x` cannot climb out of the runs folder)."""
    return stamps.new_run_id([slug(target or "none")])


@dataclass
class StepRecord:
    """One step's outcome."""

    name: str
    status: str = PENDING
    started: str | None = None
    duration_s: float | None = None
    outputs: str = ""
    error: str | None = None
    target: str | None = None
    destructive: bool = False
    recorded: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RunRecord:
    """One run of one runbook."""

    runbook: str
    run_id: str
    target: str | None
    status: str = RUNNING
    started: str = ""
    finished: str | None = None
    duration_s: float | None = None
    path: str = ""  # the runbook file, relative to the knowledge base
    steps: list[StepRecord] = field(default_factory=list)
    last_ok_step: str | None = None
    resumed_from: str | None = None
    servers: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    kernel_start_s: float | None = None
    # who runs it: {"pid", "started" (/proc start time), "host"}; a `running` record whose
    # executor is gone is a dead run (reclaim.py)
    executor: dict[str, Any] | None = None

    def step(self, name: str) -> StepRecord:
        for step in self.steps:
            if step.name == name:
                return step
        raise KeyError(name)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, default=str)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        known["steps"] = [
            StepRecord(**{k: s[k] for k in StepRecord.__dataclass_fields__ if k in s})
            for s in data.get("steps", [])
        ]
        return cls(**known)


def runs_root(root: Path) -> Path:
    return results_dir(Path(root)) / RUNS_SUBDIR


def run_dir(root: Path, runbook: str, run_id: str) -> Path:
    """results/runbooks/<runbook>/<run_id>, refused when either name would climb out."""
    return inside(runs_root(root), runbook, run_id)


def save(record: RunRecord, folder: Path) -> Path:
    """Write record.json atomically (a reader never sees half a record)."""
    path = folder / RECORD_FILE
    write_text_atomic(path, _fitted(record, path) + "\n")
    return path


def _fitted(record: RunRecord, path: Path) -> str:
    """record.json's text within what `load` reads (KB_FILE_MAX_BYTES, limits.py): when the
    steps' outputs would not fit, each keeps a preview of its share (the notebook has all)."""
    text = record.to_json()
    if len(text.encode("utf-8")) < KB_FILE_MAX_BYTES - 2:
        return text
    data = asdict(record)
    share = KB_FILE_MAX_BYTES // (8 * max(1, len(data["steps"])))
    cap = max(PREVIEW_MIN_CHARS + 48, share)
    for step in data["steps"]:
        for key in ("outputs", "error", "recorded"):
            step[key] = preview(step[key], cap)
    data["servers"] = preview(data["servers"], KB_FILE_MAX_BYTES // 8)
    data["options"] = preview(data["options"], KB_FILE_MAX_BYTES // 8)
    text = json.dumps(data, indent=1, default=str)
    if len(text.encode("utf-8")) >= KB_FILE_MAX_BYTES - 2:
        raise InputError(f"{path}: the run record would exceed {KB_FILE_MAX_BYTES} bytes")
    return text


class RecordRefused(InputError):
    """A record.json that is not read: a link out of the knowledge base, a FIFO, too large."""


def kb_root_of(folder: Path) -> Path | None:
    """The knowledge base a run folder belongs to, ROOT/results/runbooks/<runbook>/<run_id>
    (None for a folder not laid out so: then the confining root of the caller applies)."""
    parents = Path(folder).parents
    return parents[3] if len(parents) > 3 else None


def load(folder: Path, root: Path | None = None) -> RunRecord:
    """A run's record.json: bounded, never a FIFO, and only inside the knowledge base (`root`,
    by default the one the run folder's place names), so a record linked to a file elsewhere
    is refused with its path and never shown, whichever command reads it."""
    path = folder / RECORD_FILE
    try:
        text = read_text(path, root=root if root is not None else kb_root_of(folder))
    except Refused as exc:
        raise RecordRefused(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: unreadable run record ({type(exc).__name__})") from None
    try:
        record = RunRecord.from_dict(loads_without_surrogates(text))
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise InputError(f"{path}: unreadable run record ({type(exc).__name__})") from None
    if not isinstance(record.run_id, str) or not isinstance(record.status, str):
        raise InputError(f"{path}: unreadable run record (run_id and status must be strings)")
    wrong = _wrong_field(record)
    if wrong is not None:
        raise InputError(f"{path}: unreadable run record ({wrong})")
    return record


# fields a resume, `run --list` and the reclaiming of dead runs read: what each must be
_OPTIONAL_TEXT = ("target", "last_ok_step", "resumed_from", "finished", "error")


def _wrong_field(record: RunRecord) -> str | None:
    """What in a record read back is not what the runner writes (a record is a file of the
    knowledge base: `resumed_from: [1]` ended `run --resume` in a TypeError)."""
    for name in _OPTIONAL_TEXT:
        if not isinstance(getattr(record, name), (str, type(None))):
            return f"{name} must be a string"
    if not isinstance(record.executor, (dict, type(None))):
        return "executor must be a mapping"
    if not isinstance(record.options, dict):
        return "options must be a mapping"
    if not isinstance(record.servers, list) or not all(isinstance(s, dict) for s in record.servers):
        return "servers must be a list of mappings"
    if not all(isinstance(step.name, str) for step in record.steps):
        return "each step's name must be a string"
    return None


def list_runs(root: Path, runbook: str | None = None) -> list[RunRecord]:
    """Run records, newest first (run ids start with a UTC timestamp)."""
    base = runs_root(root)
    folders = base.glob(f"{runbook}/*") if runbook else base.glob("*/*")
    out = []
    for folder in folders:
        if (folder / RECORD_FILE).exists() or (folder / RECORD_FILE).is_symlink():
            try:
                out.append(load(folder, root))
            except RecordRefused as exc:  # a link out, a FIFO: planted, so say so
                why = str(exc).removesuffix("; not read")
                warn(f"{why}; run skipped")
            except InputError:
                continue  # one broken record must not hide the other runs
    return sorted(out, key=lambda r: r.run_id, reverse=True)


def find_run(root: Path, runbook: str, ref: str | None) -> RunRecord:
    """A run to resume: `ref` (a run id) or the newest run of the runbook that did not finish."""
    if ref:
        folder = run_dir(root, runbook, ref)
        if not (folder / RECORD_FILE).exists():
            raise UsageError(f"no run '{ref}' of runbook {runbook} under {folder.parent}")
        return load(folder, root)
    every = list_runs(root, runbook)
    resumed = {r.resumed_from for r in every if r.resumed_from}
    for record in every:  # newest first; a run already resumed by a later one is done with
        if record.status != OK and record.run_id not in resumed:
            return record
    raise UsageError(f"runbook {runbook}: no unfinished run to resume")


def truncate(text: str, limit: int = OUTPUT_LIMIT) -> str:
    """Keep the head and the tail: errors are at the end, context at the start."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters cut] ...\n{text[-half:]}"
