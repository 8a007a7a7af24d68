"""Execute a runbook step by step on one persistent kernel (nbclient's low-level API).

Like papermill's engine base class, this module keeps the bookkeeping (status, timing,
autosave after every step, write-back, teardown) and leaves execution to nbclient's
`execute_cell`. Unlike papermill it runs ranges (--step, --from/--until), resumes after the
last successful step, asks before destructive steps, bounds each step and the whole run, and
maps what can go wrong to distinct exits: a failed step 1, refused/invalid 2, a dead kernel 4
(KernelDied), Ctrl-C 130 (Interrupted, state saved).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_KERNEL_DIED,
    EXIT_OK,
    FactbookError,
    UsageError,
)
from ..kb import KnowledgeBase
from . import record as rec
from . import servers
from .api import CONTEXT_ENV, RECORDS_FILE, RunContext
from .format import Runbook, Step, select_steps
from .remote import BoxClient

STEP_TIMEOUT_ENAME = "StepTimeout"
SHOWN_LINES = 12  # of a step's source, printed before it runs


@dataclass
class RunOptions:
    """What the command line asked for."""

    steps: list[str] = field(default_factory=list)  # --step (repeatable)
    start: str | None = None  # --from
    until: str | None = None  # --until
    resume: str | None = None  # --resume [RUN_ID]; "" = the newest unfinished run
    yes: bool = False  # --yes: destructive steps run without asking
    target: str | None = None  # --target: overrides the runbook's default target
    timeout: float | None = None  # --timeout: the whole run (else the runbook's)
    skip_requires: bool = False
    live: bool = True  # print step output as it arrives


class _Interrupt:
    """SIGINT handling: first Ctrl-C interrupts the kernel, the second stops hard."""

    def __init__(self) -> None:
        self.requested = False
        self.kernel_pid: int | None = None
        self._previous: Any = None

    def install(self) -> None:
        try:
            self._previous = signal.signal(signal.SIGINT, self._handle)
        except ValueError:  # not the main thread (embedded use): Ctrl-C stays default
            self._previous = None

    def uninstall(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        sys.stderr.write("\nfactbook: interrupting the step (Ctrl-C again to stop at once)\n")
        if self.kernel_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.kernel_pid, signal.SIGINT)


class Executor:
    """One run of one runbook."""

    def __init__(
        self,
        kb: KnowledgeBase,
        runbook: Runbook,
        options: RunOptions,
        *,
        out: TextIO | None = None,
        confirm: Callable[[Step], bool] | None = None,
        stdin_is_tty: bool | None = None,
    ):
        self.kb, self.runbook, self.options = kb, runbook, options
        self.out = out or sys.stdout
        self.confirm = confirm or _ask
        self.stdin_is_tty = sys.stdin.isatty() if stdin_is_tty is None else stdin_is_tty
        self.target = options.target or runbook.target
        self.record: rec.RunRecord | None = None
        self.folder: Path | None = None
        self.client: Any = None
        self.notebook: Any = None
        self._interrupt = _Interrupt()
        self._records_seen = 0
        self._step_timeout = 60.0
        self._ipc_dir: str | None = None

    # ---- public -------------------------------------------------------------------------

    def plan(self) -> tuple[list[Step], rec.RunRecord | None]:
        """The steps to run (and the run being resumed), or a UsageError."""
        if self.target is not None and self.target not in self.kb.targets:
            raise UsageError(
                f"unknown target '{self.target}' (known: {', '.join(self.kb.targets)})"
            )
        previous = None
        after = None
        if self.options.resume is not None:
            previous = rec.find_run(self.kb.root, self.runbook.name, self.options.resume or None)
            after = previous.last_ok_step
            if self.options.target is None:
                self.target = previous.target
        steps = select_steps(
            self.runbook,
            only=self.options.steps,
            start=self.options.start,
            until=self.options.until,
            after=after,
        )
        return steps, previous

    def run(self) -> int:
        """Execute; return the exit code. The record is saved whatever happens."""
        steps, previous = self.plan()
        if not steps:
            self._say(f"nothing to run: every step of {self.runbook.name} already succeeded")
            return EXIT_OK
        destructive = [s.name for s in steps if s.destructive]
        if destructive and not self.options.yes and not self.stdin_is_tty:
            self._say(
                f"refused: destructive step(s) {', '.join(destructive)} need confirmation; "
                "stdin is not a terminal, pass --yes to run them",
                err=True,
            )
            return EXIT_INVALID
        self._open(steps, previous)
        assert self.record is not None and self.folder is not None
        code = EXIT_FAILED
        started = time.monotonic()
        limit = self.options.timeout or self.runbook.timeout
        deadline = started + limit if limit else None
        self._interrupt.install()
        try:
            self._start_kernel()
            code = self._run_steps(steps, deadline)
        except KeyboardInterrupt:  # the second Ctrl-C
            self._mark_interrupted()
            code = EXIT_INTERRUPTED
        except FactbookError as exc:
            self.record.status = "failed"
            self.record.error = str(exc)
            for entry in self.record.steps:  # e.g. the box was unreachable for `requires`
                if entry.status == "running":
                    entry.status, entry.error = "failed", str(exc)
            self._say(f"factbook: error: {exc}", err=True)
            code = exc.exit_code
        except Exception as exc:  # a bug: still saved, torn down, then reported
            self.record.status, self.record.error = "failed", f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self._interrupt.uninstall()
            self._teardown(success=code == EXIT_OK)
            self._stop_kernel()
            self.record.finished = rec.now_iso()
            self.record.duration_s = round(time.monotonic() - started, 3)
            self._save(notebook=True)
            self._summary()
            self._say(
                f"run {self.record.run_id}: {self.record.status} "
                f"({self.record.duration_s:.1f}s); saved {self._display(self.folder)}"
            )
        return code

    # ---- setup --------------------------------------------------------------------------

    def _open(self, steps: list[Step], previous: rec.RunRecord | None) -> None:
        run_id = rec.new_run_id(self.target)
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
                    status="pending" if s.name in chosen else "skipped",
                )
                for s in self.runbook.steps
            ],
            resumed_from=previous.run_id if previous else None,
            last_ok_step=previous.last_ok_step if previous else None,
            options={k: v for k, v in vars(self.options).items() if v not in (None, [], False)},
        )
        if previous is not None:  # carry the earlier run's successes, so the record is whole
            known = {s.name for s in self.runbook.steps}
            for old in previous.steps:
                if old.status == "ok" and old.name not in chosen and old.name in known:
                    mine = self.record.step(old.name)
                    mine.status, mine.outputs = "ok", old.outputs
                    mine.error = f"done in run {previous.run_id}"
        RunContext(
            root=str(self.kb.root),
            runbook=self.runbook.name,
            run_id=run_id,
            run_dir=str(self.folder),
            target=self.target,
        ).save()
        self.notebook = copy.deepcopy(self.runbook.notebook)
        self._save(notebook=True)
        self._say(
            f"run {run_id}: runbook {self.runbook.name} on {self.target or '(no target)'}, "
            f"{len(steps)} step(s); saving to {self._display(self.folder)}"
        )

    def _start_kernel(self) -> None:
        from nbclient import NotebookClient

        class LiveClient(NotebookClient):
            """Prints stream output as it arrives, so long steps show progress."""

            def output(self, outs: Any, msg: Any, display_id: Any, cell_index: int) -> Any:
                out = super().output(outs, msg, display_id, cell_index)
                if live and msg["msg_type"] == "stream":
                    stream = sys.stderr if msg["content"].get("name") == "stderr" else sys.stdout
                    stream.write(msg["content"].get("text", ""))
                    stream.flush()
                return out

        live = self.options.live
        assert self.folder is not None and self.record is not None
        self.client = LiveClient(
            self.notebook,
            kernel_name="python3",
            timeout=60,
            interrupt_on_timeout=True,
            error_on_timeout={
                "ename": STEP_TIMEOUT_ENAME,
                "evalue": "step timed out",
                "traceback": [],
            },
            shell_timeout_interval=1,
            record_timing=True,
            allow_errors=False,
            timeout_func=lambda cell: self._step_timeout,
        )
        env = {**os.environ, CONTEXT_ENV: str(self.folder), "PYTHONUNBUFFERED": "1"}
        started = time.monotonic()
        try:
            self._launch_kernel(env)
        except (FactbookError, KeyboardInterrupt):
            raise
        except Exception as exc:  # jupyter_client / zmq errors: one line, not a traceback
            raise FactbookError(f"cannot start the python3 kernel: {exc}") from exc
        provisioner = getattr(self.client.km, "provisioner", None)
        self._interrupt.kernel_pid = getattr(getattr(provisioner, "process", None), "pid", None)
        self._silent("import factbook.runbooks.api as __factbook_api")
        self.record.kernel_start_s = round(time.monotonic() - started, 3)

    def _launch_kernel(self, env: dict[str, str]) -> None:
        assert self.folder is not None
        self.client.km = self.client.create_kernel_manager()
        # IPC sockets: local-only, and no "unencrypted TCP" warning at each start. Unix socket
        # paths are limited to ~107 bytes, so they live in a short private temp folder.
        self._ipc_dir = tempfile.mkdtemp(prefix="fbk-")
        self.client.km.transport = "ipc"
        self.client.km.ip = os.path.join(self._ipc_dir, "k")
        # The kernel runs this interpreter (which has factbook), whatever kernelspec named
        # python3 a user installed elsewhere.
        from jupyter_client.kernelspec import KernelSpec

        self.client.km._kernel_spec = KernelSpec(
            argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            display_name="factbook",
            language="python",
            resource_dir=self._ipc_dir,
        )
        self.client.start_new_kernel(env=env, cwd=str(self.kb.root))
        self.client.start_new_kernel_client()

    def _silent(self, code: str, *, wait: bool = True) -> None:
        """Run hidden code in the kernel (no output, no history, not in the notebook).

        `wait=False` skips the reply: the kernel handles shell requests in order, so the next
        cell runs after this code; nbclient ignores replies to other requests. Saves a round
        trip per step.
        """
        msg_id = self.client.kc.execute(code, silent=True, store_history=False)
        if not wait:
            return
        reply = self.client.wait_for_reply(msg_id)
        content = (reply or {}).get("content", {})
        if content.get("status") != "ok":
            raise FactbookError(
                f"kernel setup failed: {content.get('ename')}: {content.get('evalue')}"
            )

    # ---- the steps ----------------------------------------------------------------------

    def _run_steps(self, steps: list[Step], deadline: float | None) -> int:
        assert self.record is not None
        for step in steps:
            status, code = self._run_step(step, deadline)
            if status != "ok":
                self.record.status = status
                return code
            if self._interrupt.requested:  # Ctrl-C arrived as the step finished
                self._mark_interrupted()
                return EXIT_INTERRUPTED
        self.record.status = "ok"
        return EXIT_OK

    def _run_step(self, step: Step, deadline: float | None) -> tuple[str, int]:
        from nbclient.exceptions import CellExecutionError, DeadKernelError

        assert self.record is not None
        entry = self.record.step(step.name)
        target = step.target or self.target
        remaining = None if deadline is None else deadline - time.monotonic()
        self._step_timeout = step.timeout if remaining is None else min(step.timeout, remaining)
        flags = " destructive" if step.destructive else ""
        self._say(
            f"\n== step {step.name} [{target or 'no target'}] "
            f"(timeout {self._step_timeout:.0f}s{flags}) =="
        )
        if self.options.live:  # show what is about to run, like an operator reading along
            lines = step.source.splitlines()
            for line in lines[:SHOWN_LINES]:
                self._say(f"  | {line}")
            if len(lines) > SHOWN_LINES:
                self._say(f"  | ... ({len(lines) - SHOWN_LINES} more lines)")
        entry.started, entry.status = rec.now_iso(), "running"
        if remaining is not None and remaining <= 0:
            return self._finish(entry, "timeout", "the run's timeout was reached", EXIT_FAILED)
        if step.destructive and not self.options.yes and not self.confirm(step):
            return self._finish(entry, "refused", "not confirmed", EXIT_INVALID)
        if step.requires and not self.options.skip_requires:
            failed = self._check_requires(step, target)
            if failed:
                return self._finish(
                    entry, "failed", "requirements not met: " + "; ".join(failed), EXIT_FAILED
                )
        self._silent(
            f"__factbook_api._begin_step({step.name!r}, {target!r}, {list(step.records)!r})",
            wait=False,
        )
        if self._interrupt.requested:  # Ctrl-C during the prompt or the requirement checks
            entry.status = "running"
            self._mark_interrupted()
            return "interrupted", EXIT_INTERRUPTED
        cell = self.notebook.cells[step.index]
        began = time.monotonic()
        try:
            self.client.execute_cell(cell, step.index)
        except DeadKernelError:
            self._collect(entry, cell, began)
            return self._finish(
                entry, "kernel_died", "the kernel died during this step", EXIT_KERNEL_DIED
            )
        except CellExecutionError as exc:
            self._collect(entry, cell, began)
            if self._interrupt.requested:
                self._mark_interrupted()
                return "interrupted", EXIT_INTERRUPTED
            if exc.ename == STEP_TIMEOUT_ENAME:
                run_out = deadline is not None and time.monotonic() >= deadline - 0.5
                why = (
                    "the run's timeout was reached"
                    if run_out
                    else f"step timed out after {self._step_timeout:.0f}s"
                )
                return self._finish(entry, "timeout", why, EXIT_FAILED)
            return self._finish(entry, "failed", f"{exc.ename}: {exc.evalue}", EXIT_FAILED)
        self._collect(entry, cell, began)
        try:
            entry.recorded = self._write_back(step, target)
        except FactbookError as exc:
            return self._finish(entry, "failed", f"write-back failed: {exc}", EXIT_FAILED)
        self.record.last_ok_step = step.name
        return self._finish(entry, "ok", None, EXIT_OK)

    def _finish(
        self, entry: rec.StepRecord, status: str, error: str | None, code: int
    ) -> tuple[str, int]:
        entry.status, entry.error = status, error
        if entry.duration_s is None:
            entry.duration_s = 0.0
        cell_meta = {"status": status, "duration_s": entry.duration_s, "error": error}
        for step in self.runbook.steps:
            if step.name == entry.name:
                self.notebook.cells[step.index].metadata["factbook_run"] = cell_meta
        self._save()
        mark = "ok" if status == "ok" else status.upper()
        self._say(
            f"-- {entry.name}: {mark} ({entry.duration_s:.2f}s)"
            + (f": {error}" if error and status != "ok" else ""),
            err=status != "ok",
        )
        return status, code

    def _collect(self, entry: rec.StepRecord, cell: Any, began: float) -> None:
        entry.duration_s = round(time.monotonic() - began, 4)
        entry.outputs = rec.truncate(_outputs_text(cell.get("outputs", [])))

    def _mark_interrupted(self) -> None:
        assert self.record is not None
        self.record.status = "interrupted"
        for entry in self.record.steps:
            if entry.status == "running":
                entry.status, entry.error = "interrupted", "Ctrl-C"
        self._save()

    def _check_requires(self, step: Step, target: str | None) -> list[str]:
        from .requires import check_requirements

        assert self.record is not None
        verdicts = check_requirements(
            self.kb,
            step.requires,
            target,
            run_id=self.record.run_id,
            runbook=self.runbook.name,
            step=step.name,
        )
        for verdict in verdicts:
            self._say(
                f"   requires {verdict.fact}: {'ok' if verdict.ok else 'NOT MET'} "
                f"({verdict.reason})"
            )
        return [f"{v.fact} ({v.reason})" for v in verdicts if not v.ok]

    # ---- write-back, teardown, saving ---------------------------------------------------

    def _write_back(self, step: Step, target: str | None) -> list[dict[str, Any]]:
        """Apply this step's record() calls to facts/, with provenance."""
        assert self.folder is not None and self.record is not None
        path = self.folder / RECORDS_FILE
        if not path.exists():
            return []
        lines = path.read_text(encoding="utf-8").splitlines()
        fresh, self._records_seen = lines[self._records_seen :], len(lines)
        entries = [json.loads(line) for line in fresh if line.strip()]
        applied = []
        if entries:
            from ..writeback import update_fact

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
            update_fact(
                self.kb.root,
                entry["fact"],
                value=entry["value"],
                status=entry.get("status") or "verified",
                add_source=source,
                set_fields=set_fields or None,
            )
            applied.append(
                {"fact": entry["fact"], "value": entry["value"], "unit": entry.get("unit")}
            )
            self._say(f"   wrote {entry['fact']} = {entry['value']} to facts/")
        return applied

    def _teardown(self, *, success: bool) -> None:
        """Stop every server this run started (keep=True ones survive a successful run)."""
        if self.folder is None or self.record is None:
            return
        boxes: dict[str, BoxClient] = {}
        for info in servers.registered(self.folder):
            entry = {
                "name": info.name,
                "target": info.target,
                "pid": info.pid,
                "log": info.log,
                "pidfile": info.pidfile,
                "step": info.step,
            }
            if info.keep and success:
                entry["state"] = "left running (keep=True)"
                self.record.servers.append(entry)
                self._say(
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
                self._say(f"server {info.name}: teardown failed: {exc}", err=True)
            self.record.servers.append(entry)
        for box in boxes.values():
            box.close()

    def _stop_kernel(self) -> None:
        if self.client is None or self.client.km is None:
            return
        try:
            if self.client.kc is not None:
                self.client.kc.stop_channels()
            from jupyter_core.utils import run_sync

            run_sync(self.client.km.shutdown_kernel)(now=True)
        except Exception:  # a dead kernel has nothing left to shut down
            pass
        finally:
            if self._ipc_dir:
                shutil.rmtree(self._ipc_dir, ignore_errors=True)

    def _save(self, *, notebook: bool = False) -> None:
        """Save record.json (after every step: a killed executor loses at most one step) and,
        at the start and the end, executed.ipynb (serialising the notebook costs ~20 ms)."""
        assert self.folder is not None and self.record is not None
        rec.save(self.record, self.folder)
        if notebook and self.notebook is not None:
            import nbformat

            from ..atomic import write_text_atomic

            self.notebook.metadata["factbook_run"] = {
                "run_id": self.record.run_id,
                "status": self.record.status,
                "target": self.record.target,
            }
            write_text_atomic(self.folder / rec.NOTEBOOK_FILE, nbformat.writes(self.notebook))

    def _summary(self) -> None:
        """One line per step that was part of this run: status, duration, name."""
        assert self.record is not None
        self._say("")
        for entry in self.record.steps:
            if entry.status in ("skipped", "pending") and entry.started is None:
                continue
            took = f"{entry.duration_s:8.2f}s" if entry.duration_s is not None else " " * 9
            self._say(f"  {entry.status:12} {took}  {entry.name}")

    def _say(self, text: str, *, err: bool = False) -> None:
        stream = sys.stderr if err else self.out
        stream.write(text + "\n")
        stream.flush()

    def _display(self, path: Path) -> str:
        try:
            return path.relative_to(self.kb.root).as_posix()
        except ValueError:
            return str(path)


def _outputs_text(outputs: list[Any]) -> str:
    """Text of a cell's outputs: streams, text/plain results, error tracebacks."""
    import re

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


def _ask(step: Step) -> bool:
    """Ask on the terminal before a destructive step."""
    sys.stderr.write(f"step '{step.name}' is destructive:\n")
    for line in step.source.splitlines()[:15]:
        sys.stderr.write(f"    {line}\n")
    sys.stderr.write("run it? [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")
