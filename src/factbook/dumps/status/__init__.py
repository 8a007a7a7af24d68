"""Status documents: the knowledge base as of a moment, in the seeds' structure.

context.py  facts → sections (the template context)
items.py    one fact → text + verification mark + date
changes.py  what changed since the previous status
redact.py   hosts, IPs, users, secrets, key paths → consistent placeholders
shapes.py   what secrets, addresses and personal paths look like (regexes)
redact_config.py  redact.yaml, checked before use
render.py   Jinja2 (knowledge-base overrides first), atomic writes, the index
selection.py, budget.py  `--budget`: items ranked by the priority rules, fitted to the tokens
compact.py, grouping.py, quotes.py  the budgeted dump's dense lines
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from factbook.dumps.status.context import StatusContext, build_context, default_previous
    from factbook.dumps.status.redact import Redactor, redactor_for
    from factbook.dumps.status.render import (
        StatusOptions,
        default_path,
        prepare,
        render_context,
        render_status,
        write_index,
        write_status,
    )

# Re-exported on first use: `import factbook.dumps.capture` (import) reads `hint.py` and
# `kinds.py` from this package and must not pay for the renderer and Jinja2.
_EXPORTS = {
    **dict.fromkeys(("StatusContext", "build_context", "default_previous"), "context"),
    **dict.fromkeys(("Redactor", "redactor_for"), "redact"),
    **dict.fromkeys(
        (
            "StatusOptions",
            "default_path",
            "prepare",
            "render_context",
            "render_status",
            "write_index",
            "write_status",
        ),
        "render",
    ),
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)


__all__ = [
    "Redactor",
    "StatusContext",
    "StatusOptions",
    "build_context",
    "default_path",
    "default_previous",
    "prepare",
    "redactor_for",
    "render_context",
    "render_status",
    "write_index",
    "write_status",
]
