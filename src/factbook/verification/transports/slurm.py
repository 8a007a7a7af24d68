"""The Slurm transport: N nodes checked by ONE `srun` step, one agent per node.

    transport: slurm
    nodes: gpu[01-16]          # a Slurm node list, or
    partition: gpu             # every node of a partition (sinfo decides which)
    srun_args: [--time=5, --immediate=60]
    via: login1                # optional: run srun on a login node reached over SSH

`srun SRUN_ARGS --nodes=N --ntasks-per-node=1 --input=all --label ... sh -c SCRIPT` starts the
same supervised agent (remote.py) on every node; stdin (the agent script) goes to all of them
and stays open as every supervisor's lifeline. srun's `--label` prefixes each output line with
the task id, and each task first prints `factbook-node TOKEN PROCID NODENAME JOB.STEP`
(SLURM_PROCID, SLURMD_NODENAME), so the JSON lines are demultiplexed by node
(SlurmStep.by_node). A cluster is checked through its own
scheduler and accounting instead of N SSH sessions.

What the knowledge base says is checked where targets.yaml is read (fleet/slurmwords.py: the
node list's syntax and size, the partition, srun_args against an allow-list) and again here.
srun's options come from srun_args only: the target's `env` is the checks' environment (set
on the nodes by the supervisor, from its stdin: never a word of srun's command line), never
srun's, whose SLURM_* input variables are options too (SLURM_STDOUTMODE is --output).
srun_args come first and factbook's own options after them, so the step's shape is
factbook's whatever they say.

Output is trusted as far as srun vouches for it: the task id comes from srun's `--label`, and
a task's node is the one its first `factbook-node` line names, that line carrying a token
made for this step (a TaskProlog or anything else printing before the agent cannot forge
it), its own task id, and a node of the step that no other task claimed. srun cuts a line
longer than 1024 bytes into labelled pieces of 1024 (a line of exactly 1024 is followed by an
empty piece); they are joined again, within MAX_LINE_BYTES a line.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import secrets
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

from factbook.errors import TargetError, UnreachableError
from factbook.knowledge.fleet.slurmwords import (
    compressed,
    hostlist_problem,
    option_names,
    partition_problem,
    srun_args_problems,
)
from factbook.knowledge.model import Target
from factbook.verification.transports.base import (
    MAX_LINE_BYTES,
    AgentProcess,
    Transport,
    TransportOptions,
)
from factbook.verification.transports.pipe import MarkedProcess, announce, start_marked
from factbook.verification.transports.remote import shell_join, supervised

START_LIMIT = 120.0  # seconds for a task's shell to answer (srun may wait for the nodes)
CAPTURE_LIMIT = 60.0  # seconds for scontrol, sinfo or scancel to answer, here or on `via`
CAPTURE_GRACE = 5.0  # then the `via` channel is closed from here
TIMEOUT_STATUS = 124  # timeout(1)'s exit status when it ended the command
NODE_LINE = "factbook-node"
_LABELLED = re.compile(r"^\s*(\d{1,9}): ?(.*)$")
_NODE_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_JOB = re.compile(r"\d{1,12}\.\d{1,12}")
PIECE = 1024  # srun's I/O message (MAX_MSG_LEN): a longer line reaches us cut into these
MAX_PENDING = 16 * MAX_LINE_BYTES  # bytes of cut lines held for all tasks together


class SlurmStep(AgentProcess):
    """One srun step; `by_node()` yields (node, line) for every task's stdout line."""

    def __init__(
        self,
        proc: AgentProcess,
        nodes: list[str],
        cancel: Callable[[str], None] | None = None,
        token: str = "",
    ):
        self.proc = proc
        self.nodes = nodes
        self.token = token
        self.task_node: dict[int, str] = {}
        self.job: str | None = None  # "JOBID.STEPID" as the tasks announced it
        self._cancel = cancel
        self._cancelled = False

    def by_node(self) -> Iterator[tuple[str, str]]:
        expected, claimed = set(self.nodes), set()
        for task, text in self._joined():
            if task not in self.task_node:
                words = text.split(" ")
                if (
                    len(words) == 5
                    and words[:3] == [NODE_LINE, self.token, str(task)]
                    and words[3] in expected
                    and words[3] not in claimed
                    and _JOB.fullmatch(words[4])
                ):
                    self.task_node[task] = words[3]
                    claimed.add(words[3])
                    self.job = self.job or words[4]
                continue  # before its node line, a task's output is no agent's
            yield self.task_node[task], text

    def _joined(self) -> Iterator[tuple[int, str]]:
        """(task id, line) with the lines srun cut into PIECE-sized pieces joined again."""
        pending: dict[int, list[str]] = {}
        skipping: set[int] = set()
        held = 0
        for raw in self.proc.lines():
            match = _LABELLED.match(raw)
            if not match:
                continue
            task, piece = int(match.group(1)), match.group(2)
            if len(piece) == PIECE:  # cut here by srun: the rest of the line follows
                parts = pending.setdefault(task, [])
                size = PIECE * (len(parts) + 1)
                if task in skipping or size > MAX_LINE_BYTES or held + PIECE > MAX_PENDING:
                    held -= PIECE * len(pending.pop(task, []))
                    skipping.add(task)
                    continue
                parts.append(piece)
                held += PIECE
                continue
            parts = pending.pop(task, [])
            held -= PIECE * len(parts)
            if task in skipping:
                skipping.discard(task)
                continue
            yield task, "".join(parts) + piece

    def lines(self) -> Iterator[str]:
        for node, text in self.by_node():
            yield f"{node}: {text}"

    def stderr_text(self) -> str:
        return self.proc.stderr_text()

    def wait(self, timeout: float | None = None) -> int | None:
        status = self.proc.wait(timeout)
        if status is None:
            self.cancel()  # srun died or was killed: its tasks may live on
        return status

    def kill(self) -> None:
        self.proc.kill()
        self.cancel()

    def cancel(self) -> None:
        """scancel the step: when srun dies, slurmd keeps its tasks running (their stdin
        does not close), so only the scheduler can end them."""
        if self._cancel is not None and self.job and not self._cancelled:
            self._cancelled = True
            self._cancel(self.job)


class SlurmTransport(Transport):
    """srun here, or on the `via` target (a login node) over SSH."""

    def __init__(self, target: Target, targets: dict[str, Target], options: TransportOptions):
        super().__init__(target)
        if not (target.nodes or target.partition):
            raise TargetError(f"target {target.name}: transport slurm needs nodes or partition")
        # targets.yaml's loader refused these already (with the line): one more wall here
        bad = srun_args_problems(target.srun_args)
        for key, value, check in (
            ("nodes", target.nodes, hostlist_problem),
            ("partition", target.partition, partition_problem),
        ):
            why = check(value) if value else None
            bad += [f"{key} {value!r} {why}"] if why else []
        if bad:
            raise TargetError(f"target {target.name}: {bad[0]}")
        self.via: Transport | None = None
        if target.via:
            from factbook.verification.transports.base import transport_for

            outer = targets.get(target.via)
            if outer is None or outer.transport not in ("ssh", "openssh"):
                raise TargetError(
                    f"target {target.name}: via {target.via!r} must be a known ssh/openssh target"
                )
            self.via = transport_for(outer, targets, options)

    @property
    def label(self) -> str:
        what = self.target.nodes or f"partition {self.target.partition}"
        via = f" via {self.via.label}" if self.via else ""
        return f"{self.target.name} (slurm {what}{via})"

    def _capture(self, argv: list[str]) -> str:
        """stdout of a short Slurm command (scontrol, sinfo, scancel), here or on `via`; either
        way within CAPTURE_LIMIT (a hung slurmctld must not hang the run)."""
        if self.via is not None:
            return self._capture_via(argv)
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=CAPTURE_LIMIT)
        except subprocess.TimeoutExpired:
            raise UnreachableError(self._no_answer(argv)) from None
        except OSError as exc:
            raise UnreachableError(f"{self.label} is unreachable: {argv[0]}: {exc}") from None
        if done.returncode != 0:
            raise UnreachableError(
                f"{self.label} is unreachable: {shell_join(argv)}: {done.stderr.strip()}"
            )
        return done.stdout

    def _capture_via(self, argv: list[str]) -> str:
        """On the login node, bounded twice: `timeout` there ends the command at CAPTURE_LIMIT
        (exit 124; sshd would not end it when the channel closes), and a timer here kills the
        channel CAPTURE_GRACE later (a stalled connection, a box without `timeout`)."""
        assert self.via is not None
        command = shell_join(argv)
        bounded = shell_join(["timeout", "-k", "2", f"{CAPTURE_LIMIT:g}", *argv])
        line = f"if command -v timeout >/dev/null 2>&1; then exec {bounded}; fi; exec {command}"
        proc = self.via.start_command(line, b"")
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            proc.kill()

        deadline = time.monotonic() + CAPTURE_LIMIT + CAPTURE_GRACE
        timer = threading.Timer(CAPTURE_LIMIT + CAPTURE_GRACE, expire)
        timer.daemon = True
        timer.start()
        try:
            out = "\n".join(proc.lines())
            status = proc.wait(max(0.1, deadline - time.monotonic()))
        finally:
            timer.cancel()
        if status is None and time.monotonic() >= deadline:
            proc.kill()
            expired.set()
        if expired.is_set() or status == TIMEOUT_STATUS:
            raise UnreachableError(self._no_answer(argv))
        if status != 0:
            raise UnreachableError(f"{self.label}: {argv[0]} failed: {proc.stderr_text()}")
        return out

    def _no_answer(self, argv: list[str]) -> str:
        """One line naming the target and the command that timed out (its leading words)."""
        words = list(itertools.takewhile(lambda w: not w.startswith("-"), argv[:3]))
        what = " ".join(words)
        return f"{self.label} is unreachable: {what} gave no answer within {CAPTURE_LIMIT:g} s"

    def node_names(self) -> list[str]:
        """The nodes to check, expanded (`scontrol show hostnames`, or the partition's)."""
        if self.target.nodes:
            out = self._capture(["scontrol", "show", "hostnames", self.target.nodes])
        else:
            assert self.target.partition is not None
            out = self._capture(["sinfo", "-h", "-N", "-p", self.target.partition, "-o", "%N"])
        names = list(dict.fromkeys(w for w in out.split() if _NODE_WORD.fullmatch(w)))
        if not names:
            raise UnreachableError(f"{self.label} is unreachable: no nodes")
        return names

    def srun_argv(self, nodes: list[str], inner: list[str]) -> list[str]:
        """srun_args first, factbook's own options after them (the later option wins). Without
        an --immediate of srun_args, srun gives up waiting for the nodes a little before
        START_LIMIT, itself: its own reason ("Requested nodes are busy"), the job gone from
        the queue, and a bound on the `via` path too, where START_LIMIT does not apply."""
        argv = ["srun", *self.target.srun_args]
        if "immediate" not in option_names(self.target.srun_args):
            argv.append(f"--immediate={max(1, int(START_LIMIT * 0.9))}")
        argv += [f"--nodes={len(nodes)}", f"--ntasks={len(nodes)}"]
        argv += ["--ntasks-per-node=1", "--input=all", "--label", "--kill-on-bad-exit=0"]
        argv += ["--job-name=factbook-verify", f"--nodelist={compressed(nodes)}"]
        if self.target.partition:
            argv.append(f"--partition={self.target.partition}")
        return [*argv, *inner]

    def start_step(
        self, nodes: list[str], argv: list[str], stdin: bytes, env: dict[str, str]
    ) -> SlurmStep:
        """One srun step over `nodes`; returns once a task has started (else raises)."""
        token = secrets.token_hex(8)
        node_line = (
            f'echo "{NODE_LINE} {token} $SLURM_PROCID ${{SLURMD_NODENAME:-$(hostname)}} '
            '${SLURM_JOB_ID}.${SLURM_STEP_ID}"'
        )
        inner, payload = supervised(
            argv, stdin, env, self.target.python, preamble=f"{announce()}; {node_line}"
        )
        command = self.srun_argv(nodes, inner)
        if self.via is not None:
            return SlurmStep(
                self.via.start_command(shell_join(command), payload), nodes, self._scancel, token
            )
        proc: MarkedProcess = start_marked(
            command,
            payload,
            self.label,
            limit=START_LIMIT,
            failure=self._failure,
            env=dict(os.environ),  # the target's env reaches the checks (`inner`), not srun
        )
        return SlurmStep(proc, nodes, self._scancel, token)

    def _scancel(self, job: str) -> None:
        if not re.fullmatch(r"\d+(\.\d+)?", job):
            return
        with contextlib.suppress(TargetError):
            self._capture(["scancel", "--quiet", job])

    def start(self, argv: list[str], stdin: bytes, env: dict[str, str]) -> AgentProcess:
        return self.start_step(self.node_names(), argv, stdin, env)

    def _failure(self, stderr: str) -> TargetError:
        said = " | ".join(s.strip() for s in stderr.strip().splitlines()[-3:] if s.strip())
        return UnreachableError(f"{self.label} is unreachable: srun started no task: {said}")

    def close(self) -> None:
        if self.via is not None:
            self.via.close()
