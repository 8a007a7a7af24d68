"""What every record is stamped with: factbook's version, one clock format, one run-id scheme.

Run ids start with a UTC timestamp so that sorting them as strings sorts them by time; the
label (targets) is reduced to safe characters, so an id is always one safe path component.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from datetime import datetime, timezone

FACTBOOK_VERSION = "0.1.0"  # pyproject.toml's version; `factbook.__version__`

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def now_iso(*, ms: bool = False) -> str:
    """Now in UTC as ISO 8601 with a Z: seconds (results) or milliseconds (runbook steps).

    The seconds' text is made once per second: a fleet run stamps thousands of results."""
    global _LAST_SECOND
    if ms:
        now = datetime.now(timezone.utc)
        return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    second = int(time.time())
    last = _LAST_SECOND
    if last[0] == second:
        return last[1]
    text = datetime.fromtimestamp(second, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    _LAST_SECOND = (second, text)
    return text


_LAST_SECOND: tuple[int, str] = (-1, "")


def new_run_id(labels: Iterable[str | None], *, suffix: str = "") -> str:
    """`<UTC stamp>-<labels>-<pid>[-suffix]`: unique per process and microsecond."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    label = "-".join(sorted({name for name in labels if name}))[:40] or "none"
    safe = _UNSAFE.sub("_", label)
    run_id = f"{stamp}-{safe}-{os.getpid()}"
    return f"{run_id}-{suffix}" if suffix else run_id
