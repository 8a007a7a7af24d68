"""The standard streams made safe to use before any command runs.

A command started with a stream closed (`factbook lint >&-`, `2>&-`, `<&-`: Python sets
`sys.stdout` to None) ended in an AttributeError traceback at its first print, or exit 1 at
the final flush; and the next file factbook opened took the free descriptor 1 or 2, so a
child's output (a local check, a runbook kernel) went into that file. An output that cannot
encode a character (`PYTHONIOENCODING=ascii`, latin-1, a lone surrogate from a file name that
is not UTF-8) ended in a UnicodeEncodeError traceback. Here: every closed descriptor 0-2 is
held open on /dev/null, a closed stdout refuses every write with OutputClosed (one line,
exit 2, by the CLI), a closed stderr drops its lines, and stdout and stderr write what they
cannot encode as backslash escapes, as Python's own stderr does.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys


class OutputClosed(OSError):
    """A write to a standard output the command was started without."""

    def __init__(self) -> None:
        super().__init__(errno.EBADF, "standard output is closed")


class ClosedOutput(io.TextIOBase):
    """sys.stdout when descriptor 1 was closed at start: every write refuses."""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OutputClosed()


# the error handlers that raise on a character the encoding has not: `strict`, and the C
# locale's `surrogateescape` (which only writes back undecodable bytes)
_FAILING = ("strict", "surrogateescape")


def guard() -> None:
    """Hold descriptors 0-2 open, give Python a stream for each closed one, and make stdout
    and stderr write what their encoding cannot as escapes. Idempotent; streams a caller
    replaced (a test's StringIO) are left as they are."""
    for fd in (0, 1, 2):
        _hold(fd)
    if sys.stdin is None:
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 (the process's own)
    if sys.stdout is None:
        sys.stdout = ClosedOutput()
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors in _FAILING:
            with contextlib.suppress(ValueError, io.UnsupportedOperation):
                stream.reconfigure(errors="backslashreplace")


def _hold(fd: int) -> None:
    """`fd` open on /dev/null when it was closed, so no file factbook opens later takes it."""
    try:
        os.fstat(fd)
    except OSError:
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        os.set_inheritable(fd, True)
