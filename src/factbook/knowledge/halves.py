"""Pure work on a long list, split in two: the first half here, the second in a forked copy
of this process on the machine's other core, its answers sent back pickled.

An import's per-line work (building and matching a proposal, parsing the YAML it writes)
is pure: it reads the knowledge base and the dump, which a forked child shares
copy-on-write, and returns plain values. On two cores that halves its wall time, for the
cost of a fork (a few milliseconds) and pickling the child's answers. Anything unusual
(one core, no fork, a thread running, a short list, `FACTBOOK_SERIAL=1`) runs the work
here in one piece; so does a child that fails in any way: the answers are the same, only
slower.

    results = in_halves(lambda part: [f(x) for x in part], items, least=500)
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

SERIAL_ENV = "FACTBOOK_SERIAL"  # set to 1: never fork (to compare, or to debug)


def cores() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether a forked helper can take half of the work: two cores, fork, no other thread
    (a fork copies only the calling thread; a lock another one held would never be freed)."""
    return (
        hasattr(os, "fork")
        and os.environ.get(SERIAL_ENV, "") != "1"
        and cores() >= 2
        and only_thread()
    )


def only_thread() -> bool:
    """Whether this is the process's one thread (a test runner's own threads keep work here)."""
    return threading.active_count() == 1


def in_halves(
    work: Callable[[Sequence[T]], list[R]],
    items: Sequence[T],
    *,
    least: int,
    child_share: float = 0.5,
    send: Callable[[R], R] | None = None,
) -> list[R]:
    """`work(items)`, as `work(first part) + work(second part)` with the second part (about
    `child_share` of the items) computed in a forked child when there are at least `least`
    items and `can_fork()`. `work` must return one answer per item, depend on nothing but
    its items and what it reads, and change nothing the parent keeps (the child's changes
    are lost with it). A share under half leaves the child time to pickle its answers and
    the parent none to wait. `send`, when given, is what the child sends of each answer:
    an equivalent that is quicker to pickle and load."""
    if len(items) < max(least, 2) or not can_fork():
        return work(items)
    middle = min(len(items) - 1, max(1, round(len(items) * (1 - child_share))))
    first, second = items[:middle], items[middle:]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, send, and leave without running the parent's exits
        os.close(read)
        _child(work if send is None else _sending(work, send), second, write)
    os.close(write)
    try:
        mine = work(first)
        theirs = _answers(read, pid, len(second))
    except BaseException:
        _stop(pid)
        raise
    finally:
        os.close(read)
    return mine + (theirs if theirs is not None else work(second))


def _sending(
    work: Callable[[Sequence[T]], list[R]], send: Callable[[R], R]
) -> Callable[[Sequence[T]], list[R]]:
    return lambda part: [send(answer) for answer in work(part)]


def _child(work: Callable[[Sequence[T]], list[R]], part: Sequence[T], fd: int) -> None:
    """Run in the forked child only: never returns."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # the parent reports an interrupt
        gc.disable()  # a short life: its garbage goes with it
        payload = pickle.dumps(work(part), protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(fd, "wb") as out:
            out.write(payload)
        code = 0
    except BaseException:  # any failure: the parent computes the half again
        pass
    finally:
        os._exit(code)


def _answers(fd: int, pid: int, expected: int) -> list[R] | None:
    """The child's answers, or None when it failed (the caller computes them itself)."""
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0 or not chunks:
        return None
    try:
        answers = pickle.loads(b"".join(chunks))
    except Exception:  # a truncated stream: compute it here
        return None
    return answers if isinstance(answers, list) and len(answers) == expected else None


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
