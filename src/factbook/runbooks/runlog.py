"""A run's bookkeeping: its folder, record and executed notebook, write-back and teardown.

Like papermill's NotebookExecutionManager, this keeps everything a run leaves behind apart
from executing cells (executor.py, kernel.py): the record saved after every step (a killed
executor loses at most one step), each step's status and output, measured values written
back to facts/ with provenance, every managed server stopped at the end, and what the
operator reads on the terminal about all of it.
"""

from __future__ import annotations

import copy
import json
import re
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from factbook.errors import FactbookError, WritebackError
from factbook.judging.outcomes import FAILED, INTERRUPTED, OK, PENDING, RUNNING, SKIPPED
from factbook.judging.sanitize import hidden_escaped
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.kbfiles import require_inside
from factbook.knowledge.limits import RUN_MAX_BYTES
from factbook.knowledge.names import shown
from factbook.runbooks import record as rec
from factbook.runbooks import servers
from factbook.runbooks.api import RECORDS_FILE, RunContext
from factbook.runbooks.format import Runbook, Step
from factbook.runbooks.remote import BoxClient


class RunLog:
    """Where one run is recorded; `open` creates it, `close` finishes it."""

    def __init__(self, kb: KnowledgeBase, runbook: Runbook, target: str | None, out: TextIO):
        self.kb, self.runbook, self.target, self.out = kb, runbook, target, out
        self.record: rec.RunRecord | None = None
        self.folder: Path | None = None
        self.notebook: Any = None
        self._records_seen = 0

    # ---- opening and closing ------------------------------------------------------------

    def open(
        self, steps: list[Step], previous: rec.RunRecord | None, options: dict[str, Any]
    ) -> None:
        """Create the run folder, its record (previous successes carried) and context."""
        run_id = rec.new_run_id(self.target)
        # results/, results/runbooks/ or its runbook's folder linked elsewhere: the run's
        # record, notebook and server logs were written outside the knowledge base
        runs = rec.runs_root(self.kb.root) / self.runbook.name
        require_inside(runs, runs.relative_to(self.kb.root).as_posix(), self.kb.root)
        self.folder = rec.run_dir(self.kb.root, self.runbook.name, run_id)
        self.folder.mkdir(parents=True, exist_ok=False)
        chosen = {s.name for s in steps}
        self.record = rec.RunRecord(
            runbook=self.runbook.name,
            run_id=run_id,
            target=self.target,
            started=rec.now_iso(),
            path=self.runbook.display,
            steps=[
                rec.StepRecord(
                    name=s.name,
                    target=s.target or self.target,
                    destructive=s.destructive,
                    status=PENDING if s.name in chosen else SKIPPED,
                )
                for s in self.runbook.steps
            ],
            resumed_from=previous.run_id if previous else None,
            last_ok_step=previous.last_ok_step if previous else None,
            options={k: v for k, v in options.items() if v not in (None, [], False)},
        )
        if previous is not None:  # carry the earlier run's successes, so the record is whole
            known = {s.name for s in self.runbook.steps}
            for old in previous.steps:
                if old.status == OK and old.name not in chosen and old.name in known:
                    mine = self.record.step(old.name)
                    mine.status, mine.outputs = OK, old.outputs
                    mine.error = f"done in run {previous.run_id}"
        RunContext(
            root=str(self.kb.root),
            runbook=self.runbook.name,
            run_id=run_id,
            run_dir=str(self.folder),
            target=self.target,
        ).save()
        self.notebook = copy.deepcopy(self.runbook.notebook)
        self.save(notebook=True)
        self.say(
            f"run {run_id}: runbook {self.runbook.name} on {self.target or '(no target)'}, "
            f"{len(steps)} step(s); saving to {self.display(self.folder)}"
        )

    def close(self, duration_s: float) -> None:
        """Stamp the end, save record and notebook, print the summary and where it went."""
        assert self.record is not None and self.folder is not None
        self.record.finished = rec.now_iso()
        self.record.duration_s = round(duration_s, 3)
        self.save(notebook=True)
        self.summary()
        self.say(
            f"run {self.record.run_id}: {self.record.status} "
            f"({self.record.duration_s:.1f}s); saved {self.display(self.folder)}"
        )

    # ---- steps --------------------------------------------------------------------------

    def finish(
        self, entry: rec.StepRecord, status: str, error: str | None, code: int
    ) -> tuple[str, int]:
        """Record a step's outcome in the record and its cell, save, print one line."""
        entry.status, entry.error = status, error
        if entry.duration_s is None:
            entry.duration_s = 0.0
        cell_meta = {"status": status, "duration_s": entry.duration_s, "error": error}
        for step in self.runbook.steps:
            if step.name == entry.name:
                self.notebook.cells[step.index].metadata["factbook_run"] = cell_meta
        self.save()
        mark = OK if status == OK else status.upper()
        self.say(
            f"-- {entry.name}: {mark} ({entry.duration_s:.2f}s)"
            + (f": {error}" if error and status != OK else ""),
            err=status != OK,
        )
        return status, code

    def collect(self, entry: rec.StepRecord, cell: Any, began: float) -> None:
        """A step's duration and (truncated) text output, from its executed cell."""
        entry.duration_s = round(time.monotonic() - began, 4)
        entry.outputs = rec.truncate(outputs_text(cell.get("outputs", [])))

    def mark_interrupted(self, what: str = "Ctrl-C") -> None:
        """`what`: the signal that stopped the run (Ctrl-C, SIGTERM, SIGHUP)."""
        assert self.record is not None
        self.record.status = INTERRUPTED
        for entry in self.record.steps:
            if entry.status == RUNNING:
                entry.status, entry.error = INTERRUPTED, what
        self.save()

    def fail(self, exc: FactbookError) -> None:
        """The run stopped on a user-facing error (e.g. the box was unreachable)."""
        assert self.record is not None
        self.record.status = FAILED
        self.record.error = str(exc)
        for entry in self.record.steps:  # e.g. the box was unreachable for `requires`
            if entry.status == RUNNING:
                entry.status, entry.error = FAILED, str(exc)

    # ---- write-back and teardown --------------------------------------------------------

    def write_back(self, step: Step, target: str | None) -> list[dict[str, Any]]:
        """Apply this step's record() calls to facts/, with provenance."""
        assert self.folder is not None and self.record is not None
        path = self.folder / RECORDS_FILE
        if not path.exists():
            return []
        if path.stat().st_size > RUN_MAX_BYTES:  # a cell's loop of record() calls
            raise WritebackError(
                f"{RECORDS_FILE}: {path.stat().st_size:,} bytes of record() calls; "
                f"at most {RUN_MAX_BYTES:,}; nothing written"
            )
        lines = path.read_text(encoding="utf-8").splitlines()
        fresh, self._records_seen = lines[self._records_seen :], len(lines)
        # a value a cell recorded is often a box's output: its hidden characters (an ESC)
        # are stored escaped, as lint asks of a fact file (and never reach the terminal raw)
        entries = last_per_fact(
            [hidden_escaped(json.loads(line)) for line in fresh if line.strip()]
        )
        if not entries:
            return []
        from factbook.store.writeback import FactUpdate, update_facts

        applied = []
        planned = []
        for entry in entries:
            source = {
                "run": self.record.run_id,
                "runbook": self.runbook.name,
                "step": entry.get("step") or step.name,
                "target": entry.get("target") or target,
                "date": rec.now_iso()[:10],
            }
            if entry.get("note"):
                source["note"] = entry["note"]
            set_fields = dict(entry.get("fields") or {})
            if entry.get("unit"):
                set_fields["unit"] = entry["unit"]
            planned.append((entry, source, set_fields))
        files: dict[Path, Any] = {}  # each fact file read once for all the step's records
        for entry, source, set_fields in planned:  # every record checked before any is written
            refuse_unloadable(self.kb, entry, source, set_fields, files)
        # one read, check and write per fact file for the whole step (update_facts): a step
        # recording 2,000 facts wrote each with its own edit, re-reading the file each time
        updates = [
            FactUpdate(
                entry["fact"],
                value=entry["value"],
                status=entry.get("status") or "verified",
                add_source=source,
                set_fields=set_fields or None,
            )
            for entry, source, set_fields in planned
        ]
        written, refused = update_facts(self.kb.root, updates)
        done = {update.fact_id for update in written}
        for entry, _, _ in planned:
            if entry["fact"] in done:
                applied.append(
                    {"fact": entry["fact"], "value": entry["value"], "unit": entry.get("unit")}
                )
                self.say(f"   wrote {entry['fact']} = {entry['value']} to facts/")
        if refused:
            raise WritebackError("; ".join(refused[:3]))  # as update_fact said it, one each
        return applied

    def teardown(self, *, success: bool) -> None:
        """Stop every server this run started (keep=True ones survive a successful run)."""
        if self.folder is None or self.record is None:
            return
        boxes: dict[str, BoxClient] = {}
        self.record.servers = []  # the running ones listed by save(), now with their fate
        for info in servers.registered(self.folder):
            entry = server_entry(info)
            if info.keep and success:
                entry["state"] = "left running (keep=True)"
                self.record.servers.append(entry)
                self.say(
                    f"server {info.name} left running on {info.target}: pid {info.pid}, "
                    f"pid file {info.pidfile}"
                )
                continue
            target = self.kb.targets.get(info.target)
            if target is None:
                entry["state"] = f"unknown target {info.target}: not stopped"
                self.record.servers.append(entry)
                continue
            box = boxes.setdefault(info.target, BoxClient(target, self.kb.targets))
            try:
                result = servers.stop(box, info, run_dir=self.folder)
                entry["state"] = "stopped" + (" (SIGKILL)" if result.get("killed") else "")
            except Exception as exc:  # teardown must reach every server, whatever fails
                entry["state"] = f"teardown failed: {exc}"
                self.say(f"server {info.name}: teardown failed: {exc}", err=True)
            self.record.servers.append(entry)
        for box in boxes.values():
            box.close()

    # ---- saving and printing ------------------------------------------------------------

    def save(self, *, notebook: bool = False) -> None:
        """Save record.json (after every step: a killed executor loses at most one step) and,
        at the start and the end, executed.ipynb (serialising the notebook costs ~20 ms)."""
        assert self.folder is not None and self.record is not None
        if self.record.status == RUNNING:  # what a dead run left, for whoever cleans up
            self.record.servers = [
                {**server_entry(info), "state": RUNNING} for info in servers.registered(self.folder)
            ]
        rec.save(self.record, self.folder)
        if notebook and self.notebook is not None:
            import nbformat

            from factbook.store.atomic import write_text_atomic

            self.notebook.metadata["factbook_run"] = {
                "run_id": self.record.run_id,
                "status": self.record.status,
                "target": self.record.target,
            }
            write_text_atomic(self.folder / rec.NOTEBOOK_FILE, nbformat.writes(self.notebook))

    def summary(self) -> None:
        """One line per step that was part of this run: status, duration, name."""
        assert self.record is not None
        self.say("")
        for entry in self.record.steps:
            if entry.status in (SKIPPED, PENDING) and entry.started is None:
                continue
            took = f"{entry.duration_s:8.2f}s" if entry.duration_s is not None else " " * 9
            self.say(f"  {entry.status:12} {took}  {entry.name}")

    def say(self, text: str, *, err: bool = False) -> None:
        stream = sys.stderr if err else self.out
        try:
            stream.write(text + "\n")
            stream.flush()
        except OSError:  # a hung-up terminal (SIGHUP): the record still says it all
            pass

    def display(self, path: Path) -> str:
        try:
            return path.relative_to(self.kb.root).as_posix()
        except ValueError:
            return str(path)


def server_entry(info: servers.ServerInfo) -> dict[str, Any]:
    """A server as the run record lists it: pid + start time identify the process."""
    return {
        "name": info.name,
        "target": info.target,
        "pid": info.pid,
        "started": info.started,
        "log": info.log,
        "pidfile": info.pidfile,
        "step": info.step,
    }


def outputs_text(outputs: list[Any]) -> str:
    """Text of a cell's outputs: streams, text/plain results, error tracebacks."""
    parts: list[str] = []
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            parts.append(out.get("text", ""))
        elif kind in ("execute_result", "display_data"):
            parts.append(str(out.get("data", {}).get("text/plain", "")) + "\n")
        elif kind == "error":
            tb = "\n".join(out.get("traceback", [])) or f"{out.get('ename')}: {out.get('evalue')}"
            parts.append(re.sub(r"\x1b\[[0-9;]*m", "", tb) + "\n")
    return "".join(parts)


def refuse_unloadable(
    kb: KnowledgeBase,
    entry: dict[str, Any],
    source: dict[str, Any],
    fields: dict[str, Any],
    files: dict[Path, Any],
) -> None:
    """Refuse a record() whose fact would no longer load, before anything is written.

    A cell's record is whatever Python (or a hand-edited records.jsonl) holds: an infinite
    float, a status outside the vocabulary, a `fields` key its category does not have. Written
    as is, the fact file stops linting and every command that loads the knowledge base
    refuses it (a self-inflicted lockout). The fact as it would be after the edit is asked
    the loader's question (schema.fact_problem, which write-back asks of every edit too);
    here it is asked of every record of the step before the first is written, so that a
    step writes all its records or none. A fact that did not load before is no worse."""
    import yaml

    from factbook.knowledge.schema import fact_problem

    fact_id = str(entry.get("fact"))
    fact = kb.facts.get(fact_id)
    if fact is None:
        return  # update_fact names an unknown id
    path = kb.root / fact.file
    try:
        if path not in files:  # `files`: the step's fact files as read, by path
            files[path] = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        raw = next(
            f
            for f in files[path].get("facts") or []
            if isinstance(f, dict) and f.get("id") == fact_id
        )
    except (OSError, UnicodeError, yaml.YAMLError, StopIteration, AttributeError):
        return  # update_fact reports a file it cannot edit
    after = {**raw, "value": entry.get("value"), "status": entry.get("status") or "verified"}
    after["sources"] = [*(raw.get("sources") or []), source]
    after.update(fields)
    problem = fact_problem(after)
    if problem is not None and fact_problem(raw) is None:
        raise WritebackError(
            f"record('{fact_id}'): the fact would not load back ({shown(problem)}); not written"
        )


def last_per_fact(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A step's record() calls as one per fact, in the order the facts were first recorded:
    the last value, status, unit and note, and the fields of all of them (later ones win).
    Each call was written back on its own, adding a source to the fact each time: a loop of
    1,000 calls took 46 s (each edit re-read the grown file), 4,000 more than 300 s, and the
    fact file grew by ~5 lines a call toward the size the loader refuses."""
    merged: dict[Any, dict[str, Any]] = {}
    for entry in entries:
        key = entry.get("fact")
        key = key if isinstance(key, str) else json.dumps(key, default=str)
        before = merged.get(key)
        if before is None:
            merged[key] = dict(entry)
            continue
        old, new = before.get("fields") or {}, entry.get("fields") or {}
        fields = {**old, **new} if isinstance(old, dict) and isinstance(new, dict) else new
        merged[key] = {**entry, "fields": fields}
    return list(merged.values())
