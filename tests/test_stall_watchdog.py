"""Every StallWatchdog of a process waits on one thread (collect._Deadlines), not a timer
thread each: every deadline that passes kills its agent, a cancelled one never fires."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

from factbook.verification.collect import StallWatchdog
from factbook.verification.transports.local import LocalProcess


def _agent() -> LocalProcess:
    argv = [sys.executable, "-c", "import time; time.sleep(60)"]
    pipes = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return LocalProcess(subprocess.Popen(argv, start_new_session=True, **pipes), b"")


def _watchers() -> int:
    return sum(t.name == "verify-watchdog" and t.is_alive() for t in threading.enumerate())


def test_one_thread_fires_every_deadline_and_skips_the_cancelled() -> None:
    procs = [_agent() for _ in range(12)]
    try:
        dogs = []
        for i, proc in enumerate(procs):
            # every third is cancelled as soon as it is made (a loaded CI box took longer
            # than the soonest grace to make all twelve), and would fire last if it were not
            dog = StallWatchdog(proc, [], jobs=1, grace=0.2 + 0.05 * (i % 4) + 0.4 * (i % 3 == 0))
            if i % 3 == 0:
                dog.cancel()
            dogs.append(dog)
        made = time.monotonic()
        assert _watchers() == 1
        deadline = made + 10
        while time.monotonic() < deadline and not all(d.fired for d in dogs[1::3] + dogs[2::3]):
            time.sleep(0.02)
        time.sleep(max(0.0, made + 1.0 - time.monotonic()))  # past every cancelled deadline
        for i, (dog, proc) in enumerate(zip(dogs, procs, strict=True)):
            if i % 3 == 0:
                assert not dog.fired and proc.proc.poll() is None, i
            else:
                assert dog.fired, i
                assert proc.wait(5) is not None, i  # killed
        assert dogs[1].reason() == "no result within the run's 0s bound; agent stopped"
        assert _watchers() == 1
    finally:
        for proc in procs:
            proc.kill()
