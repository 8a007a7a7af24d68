"""The one persistent kernel a run executes its steps on, and Ctrl-C routed to it.

`Kernel` starts an ipykernel of this interpreter over local IPC sockets, runs hidden setup
code, executes one cell at a time through `LiveClient` (nbclient's NotebookClient, printing
stream output as it arrives) and shuts everything down. nbclient errors stay nbclient's: the
executor (executor.py) maps them to step statuses. `Interrupt` turns the first Ctrl-C into a
kernel interrupt and the second into KeyboardInterrupt.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from nbclient import NotebookClient

from factbook.errors import FactbookError

STEP_TIMEOUT_ENAME = "StepTimeout"


class LiveClient(NotebookClient):
    """Prints stream output as it arrives (when `live`), so long steps show progress."""

    live = True

    def output(self, outs: Any, msg: Any, display_id: Any, cell_index: int) -> Any:
        out = super().output(outs, msg, display_id, cell_index)
        if self.live and msg["msg_type"] == "stream":
            stream = sys.stderr if msg["content"].get("name") == "stderr" else sys.stdout
            with contextlib.suppress(OSError):  # a hung-up terminal must not fail the step
                stream.write(msg["content"].get("text", ""))
                stream.flush()
        return out


class Interrupt:
    """SIGINT, SIGTERM and SIGHUP: the first interrupts the kernel, the second stops hard.

    A service manager's SIGTERM and a closed terminal's SIGHUP end a run as Ctrl-C does: the
    step is interrupted, the record saved as interrupted and every server torn down.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.requested = False
        self.what = "Ctrl-C"  # the signal that asked, for the record
        self.kernel_pid: int | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        for sig in self.SIGNALS:
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread (embedded use): signals stay default
                return

    def uninstall(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.what = what = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
            sys.stderr.write(f"\nfactbook: {what}: interrupting the step (again to stop at once)\n")
            sys.stderr.flush()
        if self.kernel_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.kernel_pid, signal.SIGINT)


class Kernel:
    """One ipykernel for one run; `timeout_for(cell)` bounds each cell (read at execution)."""

    def __init__(self, notebook: Any, *, live: bool, timeout_for: Callable[[Any], float]):
        self.client = LiveClient(
            notebook,
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
            timeout_func=timeout_for,
        )
        self.client.live = live
        self._ipc_dir: str | None = None

    def start(self, env: dict[str, str], cwd: str) -> None:
        """Start the kernel process and its client (the caller imports what cells need)."""
        try:
            self._launch(env, cwd)
        except (FactbookError, KeyboardInterrupt):
            raise
        except Exception as exc:  # jupyter_client / zmq errors: one line, not a traceback
            raise FactbookError(f"cannot start the python3 kernel: {exc}") from exc

    @property
    def pid(self) -> int | None:
        provisioner = getattr(self.client.km, "provisioner", None)
        return getattr(getattr(provisioner, "process", None), "pid", None)

    def _launch(self, env: dict[str, str], cwd: str) -> None:
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
        self.client.start_new_kernel(env=env, cwd=cwd)
        self.client.start_new_kernel_client()

    def silent(self, code: str, *, wait: bool = True) -> None:
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

    def execute_cell(self, cell: Any, index: int) -> None:
        """Run one cell; nbclient's CellExecutionError / DeadKernelError pass through."""
        self.client.execute_cell(cell, index)

    def stop(self) -> None:
        """Shut the kernel down (a dead one has nothing left to stop) and remove its sockets."""
        if self.client.km is None:
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
