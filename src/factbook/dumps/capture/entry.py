"""One item of a dump (a bullet, numbered item, table row or sentence) and its mark."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# sub-item labels that complete their parent item instead of standing alone
SUBKEYS = {
    "symptom": "symptom",
    "cause": "cause",
    "root cause": "cause",
    "trigger": "cause",
    "why": "cause",
    "fix": "fix",
    "workaround": "fix",
    "solution": "fix",
    "remedy": "fix",
    "rationale": "rationale",
    "because": "rationale",
    "success criterion": "criterion",
    "criterion": "criterion",
}


@dataclass
class Mark:
    """A status line's verification mark, read back."""

    status: str
    message: int | None = None
    where: str = ""
    detail: str = ""
    replaced_by: list[str] = field(default_factory=list)


@dataclass
class Entry:
    """One item of the dump: a bullet, a numbered item, a table row or a sentence."""

    line: int
    kind: str  # bullet | numbered | row | sentence
    text: str
    quote: str
    headings: list[str]
    number: int | None = None
    label: str = ""  # a group label inside a section (`Scripts:`, `Models:`)
    fields: dict[str, Any] = field(default_factory=dict)
    mark: Mark | None = None
    hint: dict[str, Any] | None = None
    header: list[str] = field(default_factory=list)
    cells: list[str] = field(default_factory=list)
