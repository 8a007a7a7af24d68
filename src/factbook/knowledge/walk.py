"""Files under a folder of the knowledge base, found without recursion and to a bounded depth.

`Path.rglob` recurses once per folder level (Python 3.11): a facts/ or docs/ tree 2,500
folders deep (an attacker needs one `mkdir -p`) was a RecursionError traceback out of every
command that lists it. `tree_glob` answers what `sorted(folder.rglob(pattern))` answers (a
link to a folder is listed, not entered, as rglob does) and refuses a tree deeper than
MAX_DEPTH with one line naming the folder.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from factbook.errors import InputError

MAX_DEPTH = 100  # folders inside one folder of a knowledge base; no team nests deeper


class NestedTooDeep(InputError):
    """A folder tree deeper than MAX_DEPTH: not listed."""

    why = f"folders nested more than {MAX_DEPTH} deep; not read"

    def __init__(self, where: str) -> None:
        super().__init__(f"{where}: {self.why}")


def tree_glob(folder: Path, pattern: str = "*", *, shown: str | None = None) -> list[Path]:
    """`sorted(folder.rglob(pattern))`, walked with a stack; NestedTooDeep past MAX_DEPTH
    levels (`shown` names the folder in that message; default: its path). A folder that
    cannot be listed is skipped, as rglob skips it."""
    found: list[Path] = []
    stack: list[tuple[str, int]] = [(os.fspath(folder), 0)]
    while stack:
        here, depth = stack.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        for entry in entries:
            if fnmatch.fnmatchcase(entry.name, pattern):
                found.append(Path(entry.path))
            try:
                real_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                real_folder = False
            if real_folder:
                if depth + 1 > MAX_DEPTH:
                    raise NestedTooDeep(shown if shown is not None else os.fspath(folder))
                stack.append((entry.path, depth + 1))
    return sorted(found)
