"""Why an agent never started on a box, said in one line with what to do about it.

An agent that wrote no line at all failed before any factbook code ran: the interpreter is
missing, not executable, or not Python 3 (a python2-only box, or a `python:` pointing at an
old one, fails to parse the agent with a SyntaxError). The raw evidence is an exit status and
a few lines of another program's stderr; `explain` turns the common cases into a sentence
that names the host and the fix, and returns None for anything it does not recognise, so the
caller keeps its own message (with the stderr tail) for those.
"""

from __future__ import annotations

import re

MIN_PYTHON = "3.7"
_SYNTAX = re.compile(r"^\s*(SyntaxError|IndentationError|TabError)\b", re.MULTILINE)
_PY2 = re.compile(r"\bPython 2\.\d+|python2", re.IGNORECASE)
_DENIED = re.compile(r"Permission denied|\[Errno 13\]|EACCES")
_MISSING = re.compile(
    r"No such file or directory|\[Errno 2\]|command not found|not found|no python3 on the box"
)


def explain(label: str, python: str | None, status: int | None, stderr: str) -> str | None:
    """One line for an agent that never started on `label`, or None when not recognised."""
    interpreter = python or "python3"
    fix = f"point `python:` for this target in targets.yaml at a Python >= {MIN_PYTHON}"
    text = stderr or ""
    if _SYNTAX.search(text) or _PY2.search(text):
        version = _PY2.search(text)
        seen = f" (it reports {version.group(0)})" if version else ""
        return (
            f"{label}: {interpreter} is not Python 3{seen}: it cannot parse the agent "
            f"(SyntaxError); factbook needs Python >= {MIN_PYTHON} there: install one and {fix}"
        )
    if status == 126 or _DENIED.search(text):
        return (
            f"{label}: {interpreter} is not executable (permission denied): "
            f"`chmod +x` it on the box or {fix}"
        )
    if status == 127 or _MISSING.search(text):
        return f"{label}: {interpreter} was not found on the box: install Python 3 or {fix}"
    return None
