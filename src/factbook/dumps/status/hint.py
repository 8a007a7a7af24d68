"""The machine-readable hint a status line carries for `factbook import`.

A status document is written for people; `factbook import` reads it back. The visible text
gives the statement, category, status and milestone of each line, but not the fact's id, nor
a value that the sentence words differently (`~96GB of VRAM (97887 MiB)` holds 97887 MiB), nor
the statement of a benchmark row or a file entry (those show only a title or a path). One HTML
comment at the end of the line carries exactly that, so a rendered page reads the same:

    - ✅ Each GPU has ~96GB of VRAM (97887 MiB). *(msg 4504 llm-two)* <!-- fb {"id": ...} -->

Only what was known at the document's moment goes in (never `until`: that is later knowledge).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

PREFIX = "<!-- fb "
_HINT = re.compile(r"\s*<!-- fb (\{.*?\}) -->")


def _plain(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return str(value)


def hint_comment(item: Any, *, statement: bool = False, off: bool = False) -> str:
    """` <!-- fb {...} -->` for a status Item: id, value, unit, since; the statement when the
    line does not show it. Empty for an item without a fact, and when `off`: a redacted
    document is for sharing, and ids and values may name hosts the redactor cannot see."""
    fact = getattr(item, "fact", None)
    if fact is None or off:
        return ""
    data: dict[str, Any] = {"id": fact.id}
    if fact.value is not None:
        data["value"] = fact.value
    if fact.unit:
        data["unit"] = fact.unit
    if fact.since:
        data["since"] = fact.since
    if fact.target:  # the mark shows where a check ran, not always the box the fact is about
        data["target"] = fact.target
    if statement:
        data["statement"] = " ".join(str(fact.statement).split())
    if getattr(item, "refuted", False) and fact.get("rationale"):
        data["rationale"] = " ".join(str(fact.get("rationale")).split())  # not shown struck
    text = json.dumps(data, ensure_ascii=False, default=_plain, separators=(", ", ": "))
    # a value must neither close the comment nor split a table row
    safe = text.replace("-->", "--\\u003e").replace("|", "\\u007c")
    return f" {PREFIX}{safe} -->"


def split_hint(line: str) -> tuple[str, dict[str, Any] | None]:
    """The line without its hint, and the hint's data (None when absent or unreadable)."""
    found = _HINT.search(line) if "<!-- fb " in line else None  # a search costs 10 µs a line
    if not found:
        return line, None
    try:
        data = json.loads(found.group(1))
    except (ValueError, RecursionError):  # not JSON, a 5000-digit number, nested too deep
        return line, None
    rest = (line[: found.start()] + line[found.end() :]).rstrip()
    return rest, data if isinstance(data, dict) else None
