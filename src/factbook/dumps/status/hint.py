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
from typing import Any

PREFIX = "<!-- fb "
_CLOSE = "} -->"


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
    found = find_hint(line)
    if found is None:
        return line, None
    start, end = found
    try:
        data = json.loads(line[start + len(PREFIX) : end + 1])
    except (ValueError, RecursionError):  # not JSON, a 5000-digit number, nested too deep
        return line, None
    rest = (line[:start].rstrip() + line[end + len(_CLOSE) :]).rstrip()
    return rest, data if isinstance(data, dict) else None


def find_hint(line: str) -> tuple[int, int] | None:
    r"""Where the first hint is: (its `<!-- fb ` , the `}` of the `} -->` closing it), as
    re.search(r"\s*<!-- fb (\{.*?\}) -->") finds it, in linear time. The regex tried every
    `<!-- fb {` against the rest of the line (20,000 of them in one 240 kB dump line kept
    `factbook import` busy 55 s): the first one with a `} -->` after it on its line is the
    match, and when none follows the first, none follows any later one either."""
    start, close = 0, -1
    while (opener := line.find(PREFIX, start)) >= 0:
        body = opener + len(PREFIX)
        if not line.startswith("{", body):
            start = opener + 1
            continue
        if close <= body:
            close = line.find(_CLOSE, body + 1)
            if close < 0:
                return None
        newline = line.find("\n", body, close)
        if newline < 0:
            return opener, close
        start = newline + 1  # `.` stops at a line break: the next line's own hint
    return None
