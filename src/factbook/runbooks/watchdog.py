"""A run's watchdog: a small process that outlives the executor only to clean up after it.

The executor's own teardown covers every ending it sees (success, a failed step, Ctrl-C,
SIGTERM, SIGHUP, a dead kernel). It cannot see SIGKILL, the OOM killer or a crash of the
interpreter, and the servers it started live in their own sessions on purpose (a Ctrl-C in
the terminal must not reach them). So each run starts this watchdog in a session of its
own, holding the read end of a pipe whose only writer is the executor. The kernel closes
that pipe when the executor dies, however it dies; the watchdog reads EOF without the
`done` line a finished executor writes, then stops the kernel and every server the run
registered (reclaim.py) and marks the record interrupted. It costs one idle process that
blocks in read(): no polling.

    executor ──pipe──▶ python -m factbook.runbooks.watchdog ROOT RUN_DIR
             "done\\n" then EOF: exit quietly.   EOF alone: reclaim the run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

DONE = b"done\n"
LOG_FILE = "watchdog.log"


class Watchdog:
    """The executor's end: start it, and tell it the run ended cleanly."""

    def __init__(self, root: Path, folder: Path):
        self.root, self.folder = Path(root), Path(folder)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with (self.folder / LOG_FILE).open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", __name__, str(self.root), str(self.folder)],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=log,
                start_new_session=True,  # no Ctrl-C or terminal hang-up reaches it
                close_fds=True,
            )

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def done(self) -> None:
        """The executor tore its run down itself: the watchdog may go."""
        if self.proc is None or self.proc.stdin is None:
            return
        with contextlib.suppress(OSError):
            self.proc.stdin.write(DONE)
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def main(argv: list[str]) -> int:
    """The watchdog's end: block until the executor writes `done` or dies."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    root, folder = Path(argv[0]), Path(argv[1])
    received = b""
    while True:
        try:
            chunk = os.read(0, 4096)
        except InterruptedError:
            continue
        except OSError:
            break
        if not chunk:
            break
        received += chunk
    if received.endswith(DONE):
        return 0
    from factbook.knowledge.kb import load_kb
    from factbook.runbooks import record as rec
    from factbook.runbooks.reclaim import reclaim_run

    pid = (rec.load(folder).executor or {}).get("pid")
    why = f"the executor (pid {pid}) died while the run was running; its watchdog cleaned up"
    kb = load_kb(root, strict=False)
    for line in reclaim_run(kb, folder, why):
        print(f"watchdog: {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
