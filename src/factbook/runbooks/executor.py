"""Execute a runbook step by step on one persistent kernel (nbclient's low-level API).

As in papermill, the bookkeeping (record, autosave after every step, write-back, teardown:
runlog.py) is apart from execution (kernel.py: the nbclient client, a top-level class); this
module decides which steps run and what each outcome means. Unlike papermill it runs ranges
(--step, --from/--until), resumes after the last successful step, asks before destructive
steps, bounds each step and the whole run, and maps what can go wrong to distinct exits: a
failed step 1, refused/invalid 2, a dead kernel 4 (KernelDied), Ctrl-C, SIGTERM or SIGHUP 130
(Interrupted, state saved, servers torn down). A watchdog process (watchdog.py) tears the run
down if this process dies without doing so itself, and every run first cleans up after runs
whose executor died (reclaim.py).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from factbook.errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_KERNEL_DIED,
    EXIT_OK,
    FactbookError,
    UsageError,
)
from factbook.judging.outcomes import FAILED, INTERRUPTED, OK, RUNNING
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.names import known_names, shown
from factbook.runbooks import leftovers, reclaim, servers
from factbook.runbooks import record as rec
from factbook.runbooks.api import CONTEXT_ENV
from factbook.runbooks.format import Runbook, Step, select_steps
from factbook.runbooks.runlog import RunLog

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
        self.log = RunLog(kb, runbook, self.target, self.out)
        self.kernel: Any = None  # kernel.Kernel, once started
        self._interrupt: Any = None  # kernel.Interrupt, during run()
        self._step_timeout = 60.0

    # ---- public -------------------------------------------------------------------------

    def plan(self) -> tuple[list[Step], rec.RunRecord | None]:
        """The steps to run (and the run being resumed), or a UsageError. The target is
        checked after a resume has taken the previous run's: a record naming a target that
        targets.yaml does not have is refused like --target of one."""
        previous = None
        after = None
        if self.options.resume is not None:
            previous = rec.find_run(self.kb.root, self.runbook.name, self.options.resume or None)
            after = previous.last_ok_step
            if self.options.target is None:
                self.target = previous.target
        if self.target is not None and self.target not in self.kb.targets:
            raise UsageError(
                f"unknown target '{shown(self.target)}' (known: {known_names(self.kb.targets)})"
            )
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
        reclaim.reclaim_dead_runs(self.kb, lambda line: self._say(line, err=True))
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
        from factbook.runbooks.kernel import Interrupt
        from factbook.runbooks.watchdog import Watchdog

        self.log.target = self.target
        self.log.open(steps, previous, vars(self.options))
        assert self.log.record is not None and self.log.folder is not None
        self.log.record.executor = reclaim.identity()
        watchdog = Watchdog(self.kb.root, self.log.folder)
        watchdog.start()  # from here on, even SIGKILL of this process leaves no server behind
        self.log.record.executor["watchdog"] = watchdog.pid
        self.log.save()
        code = EXIT_FAILED
        started = time.monotonic()
        limit = self.options.timeout or self.runbook.timeout
        deadline = started + limit if limit else None
        self._interrupt = Interrupt()
        self._interrupt.install()
        since, subreaper = leftovers.boot_ticks_now(), leftovers.set_subreaper(True)
        try:
            self._start_kernel()
            code = self._run_steps(steps, deadline)
        except KeyboardInterrupt:  # the second Ctrl-C
            self.log.mark_interrupted(self._interrupt.what)
            code = EXIT_INTERRUPTED
        except FactbookError as exc:
            self.log.fail(exc)
            self._say(f"factbook: error: {exc}", err=True)
            code = exc.exit_code
        except Exception as exc:  # a bug: still saved, torn down, then reported
            record = self.log.record
            record.status, record.error = FAILED, f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self._interrupt.uninstall()
            self.log.teardown(success=code == EXIT_OK)
            if self.kernel is not None:
                self.kernel.stop()
            self._end_leftovers(since, watchdog.pid, success=code == EXIT_OK)
            if subreaper:
                leftovers.set_subreaper(False)
            self.log.close(time.monotonic() - started)
            watchdog.done()
        return code

    def _end_leftovers(self, since: int, watchdog: int | None, *, success: bool) -> None:
        """End what the cells detached from the kernel (a new session, a double fork) and
        left running here: the kernel's shutdown kills only its own process group, so
        `Popen(..., start_new_session=True)` in a cell outlived every run (leftovers.py)."""
        assert self.log.folder is not None
        kept = [i.pid for i in servers.registered(self.log.folder) if i.keep and success]
        found = leftovers.left_behind(
            self.log.folder, since, [watchdog or -1], kept
        )
        if found:
            left = leftovers.end(found)
            self._say(
                f"ended {len(found) - len(left)} process(es) the cells left running "
                f"(pids {', '.join(map(str, found[:8]))}{' ...' if len(found) > 8 else ''})",
                err=True,
            )

    # ---- the kernel ---------------------------------------------------------------------

    def _start_kernel(self) -> None:
        from factbook.runbooks.kernel import Kernel

        assert self.log.folder is not None and self.log.record is not None
        self.kernel = Kernel(
            self.log.notebook, live=self.options.live, timeout_for=lambda cell: self._step_timeout
        )
        env = {**os.environ, CONTEXT_ENV: str(self.log.folder), "PYTHONUNBUFFERED": "1"}
        started = time.monotonic()
        self.kernel.start(env, str(self.kb.root))
        self._interrupt.kernel_pid = self.kernel.pid
        if self.kernel.pid and self.log.record.executor is not None:  # the watchdog kills it
            self.log.record.executor["kernel"] = reclaim.identity(self.kernel.pid)
        self.kernel.silent("import factbook.runbooks.api as __factbook_api")
        self.log.record.kernel_start_s = round(time.monotonic() - started, 3)
        self.log.save()

    # ---- the steps ----------------------------------------------------------------------

    def _run_steps(self, steps: list[Step], deadline: float | None) -> int:
        assert self.log.record is not None
        for step in steps:
            status, code = self._run_step(step, deadline)
            if status != OK:
                self.log.record.status = status
                return code
            if self._interrupt.requested:  # Ctrl-C arrived as the step finished
                self.log.mark_interrupted(self._interrupt.what)
                return EXIT_INTERRUPTED
        self.log.record.status = OK
        return EXIT_OK

    def _run_step(self, step: Step, deadline: float | None) -> tuple[str, int]:
        from nbclient.exceptions import CellExecutionError, DeadKernelError

        from factbook.runbooks.kernel import STEP_TIMEOUT_ENAME

        assert self.log.record is not None
        entry = self.log.record.step(step.name)
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
        entry.started, entry.status = rec.now_iso(), RUNNING
        if remaining is not None and remaining <= 0:
            return self.log.finish(entry, "timeout", "the run's timeout was reached", EXIT_FAILED)
        if step.destructive and not self.options.yes and not self.confirm(step):
            return self.log.finish(entry, "refused", "not confirmed", EXIT_INVALID)
        if step.requires and not self.options.skip_requires:
            failed = self._check_requires(step, target)
            if failed:
                return self.log.finish(
                    entry, FAILED, "requirements not met: " + "; ".join(failed), EXIT_FAILED
                )
        self.kernel.silent(
            f"__factbook_api._begin_step({step.name!r}, {target!r}, {list(step.records)!r})",
            wait=False,
        )
        if self._interrupt.requested:  # Ctrl-C during the prompt or the requirement checks
            entry.status = RUNNING
            self.log.mark_interrupted(self._interrupt.what)
            return INTERRUPTED, EXIT_INTERRUPTED
        self.log.save()  # a run killed during this step is found with this step running
        cell = self.log.notebook.cells[step.index]
        began = time.monotonic()
        try:
            self.kernel.execute_cell(cell, step.index)
        except DeadKernelError:
            self.log.collect(entry, cell, began)
            return self.log.finish(
                entry, "kernel_died", "the kernel died during this step", EXIT_KERNEL_DIED
            )
        except CellExecutionError as exc:
            self.log.collect(entry, cell, began)
            if self._interrupt.requested:
                self.log.mark_interrupted(self._interrupt.what)
                return INTERRUPTED, EXIT_INTERRUPTED
            if exc.ename == STEP_TIMEOUT_ENAME:
                run_out = deadline is not None and time.monotonic() >= deadline - 0.5
                why = (
                    "the run's timeout was reached"
                    if run_out
                    else f"step timed out after {self._step_timeout:.0f}s"
                )
                return self.log.finish(entry, "timeout", why, EXIT_FAILED)
            return self.log.finish(entry, FAILED, f"{exc.ename}: {exc.evalue}", EXIT_FAILED)
        self.log.collect(entry, cell, began)
        try:
            entry.recorded = self.log.write_back(step, target)
        except FactbookError as exc:
            return self.log.finish(entry, FAILED, f"write-back failed: {exc}", EXIT_FAILED)
        self.log.record.last_ok_step = step.name
        return self.log.finish(entry, OK, None, EXIT_OK)

    def _check_requires(self, step: Step, target: str | None) -> list[str]:
        from factbook.runbooks.requires import check_requirements

        assert self.log.record is not None
        verdicts = check_requirements(
            self.kb,
            step.requires,
            target,
            run_id=self.log.record.run_id,
            runbook=self.runbook.name,
            step=step.name,
        )
        for verdict in verdicts:
            self._say(
                f"   requires {verdict.fact}: {'ok' if verdict.ok else 'NOT MET'} "
                f"({verdict.reason})"
            )
        return [f"{v.fact} ({v.reason})" for v in verdicts if not v.ok]

    def _say(self, text: str, *, err: bool = False) -> None:
        self.log.say(text, err=err)


def _ask(step: Step) -> bool:
    """Ask on the terminal before a destructive step."""
    sys.stderr.write(f"step '{step.name}' is destructive:\n")
    for line in step.source.splitlines()[:15]:
        sys.stderr.write(f"    {line}\n")
    sys.stderr.write("run it? [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")
