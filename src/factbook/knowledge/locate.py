"""Find the knowledge base from the current directory upwards, as git finds its repository.

A knowledge base is a folder holding `facts/`. `--root` (before or after the subcommand) or
$FACTBOOK_ROOT name one explicitly; otherwise the nearest such folder at or above the
current directory is used, so `factbook lint` works from `facts/` or `runbooks/` too.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT_ENV = "FACTBOOK_ROOT"
# the folder that makes a knowledge base; defined here, not in kb.py, so that finding the
# root (every command's first step) does not import the whole loader
FACTS_DIR = "facts"


def find_root(start: Path | str | None = None) -> Path | None:
    """The nearest folder at or above `start` (default: cwd) holding facts/, or None."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / FACTS_DIR).is_dir():
            return folder
    return None


def resolve_root(explicit: str | None = None) -> Path:
    """--root, else $FACTBOOK_ROOT, else the nearest knowledge base upwards, else cwd (whose
    loading then says there is no facts/ folder)."""
    if explicit:
        return Path(explicit)
    if os.environ.get(ROOT_ENV):
        return Path(os.environ[ROOT_ENV])
    return find_root() or Path(".")
