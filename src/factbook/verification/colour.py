"""Colour in the terminal: `--color auto|always|never`, and NO_COLOR respected.

auto (the default) colours only a terminal, and not when NO_COLOR is set to anything
non-empty (no-color.org) or TERM is `dumb`; `always` colours even into a pipe or with
NO_COLOR set (an explicit flag wins over the environment, as no-color.org asks); `never`
never does. Only factbook's own words are coloured (the outcome marks, the summary);
text from a box is escaped by sanitize.py before it gets here and is never coloured.
"""

from __future__ import annotations

import os
from typing import TextIO

MODES = ("auto", "always", "never")
_mode = "auto"

STYLES = {
    "pass": "32",  # green
    "drift": "31;1",  # bold red
    "error": "35;1",  # bold magenta
    "skipped": "33",  # yellow
    "dim": "2",
}


def set_mode(mode: str) -> None:
    """Set by the CLI from --color (the last word of the command line wins)."""
    global _mode
    if mode not in MODES:
        raise ValueError(f"colour mode {mode!r} is not one of {', '.join(MODES)}")
    _mode = mode


def enabled(stream: TextIO, *, mode: str | None = None, env: dict[str, str] | None = None) -> bool:
    """Whether to colour what goes to `stream`."""
    mode = mode or _mode
    if mode != "auto":
        return mode == "always"
    env = dict(os.environ if env is None else env)
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, style: str, on: bool) -> str:
    """`text` in the style's colour when `on`, else unchanged."""
    code = STYLES.get(style)
    return f"\x1b[{code}m{text}\x1b[0m" if on and code else text
