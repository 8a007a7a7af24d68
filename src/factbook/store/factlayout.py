"""What write-back needs to know of a fact file's `facts:` list, from the parse an import
already made of its text, instead of composing the whole text once more.

Inside `yamlsrc.sharing()` (an import) every text is parsed once into values and lines.
Appending facts needs the ids already present and the indent of the list's dashes; editing
known facts needs the nodes (with their offsets) of those facts only. An import appends
thousands of facts to a file and then edits a few of its first ones: composing the grown
file for that was a twentieth of an import. Both answers here are taken from the shared
parse only when they are exactly what composing the whole text gives (a clean parse, ids
that are all strings, list items that start on their dash's line); otherwise the caller
composes as before.
"""

from __future__ import annotations

import re
from typing import Any

from factbook.knowledge.yamlsrc import LocatedDoc, parse_located, shared_parses

# a block list item whose node starts on the dash's line, after the dash and its spaces
_DASH = re.compile(r"( *)- +(?=[^\s#])")


def _clean_facts(text: str) -> tuple[LocatedDoc, list[Any]] | None:
    """The shared parse of `text` and its non-empty `facts` list, when the parse is clean
    and every item's id is a string (composing reads an id's text as written: `id: 12` is
    "12" there, 12 here); None otherwise, or outside sharing()."""
    if not shared_parses():
        return None
    doc, problems = parse_located(text, "")
    data = doc.data
    if problems or type(data) is not dict:
        return None
    items = data.get("facts")
    if type(items) is not list or not items:
        return None
    for item in items:
        if type(item) is dict and "id" in item and type(item["id"]) is not str:
            return None
    return doc, items


def _item_start(text: str, doc: LocatedDoc, index: int) -> tuple[int, int] | None:
    """(offset of its line, column of its node) of item `index` of `facts`, when that line
    starts with the item's dash (`  - id: x`), so the node starts right after the dash and
    its spaces, as a composed node's mark says; None otherwise."""
    line = doc.lines.get(("facts", index))
    if line is None or line == doc.key_lines.get(("facts",)):  # on the key's line: flow
        return None
    start = 0
    for _ in range(line - 1):
        start = text.find("\n", start) + 1
        if start == 0:
            return None
    match = _DASH.match(text, start)
    return None if match is None else (start, match.end() - start)


def append_layout(text: str) -> tuple[set[str], str] | None:
    """(the ids of the file's facts, the indent before each item's dash) of a file whose
    `facts` is a non-empty block list, read from the shared parse; None: compose it."""
    found = _clean_facts(text)
    if found is None:
        return None
    doc, items = found
    start = _item_start(text, doc, 0)
    if start is None:
        return None
    ids = {item["id"] for item in items if type(item) is dict and "id" in item}
    return ids, " " * (start[1] - 2)


def edit_prefix(text: str, wanted: dict[str, Any]) -> str | None:
    """The shortest start of `text` whose composed nodes are those of the whole text for the
    facts in `wanted` (first definitions): it ends where the item after the next one after
    the last of them begins, so each of them is followed by exactly the text that follows it
    in the whole file (an empty value's mark is the next token's). "" when none of them is
    in the file; None: compose the whole text."""
    found = _clean_facts(text)
    if found is None:
        return None
    doc, items = found
    last = -1
    seen: set[str] = set()
    for index, item in enumerate(items):
        if type(item) is dict:
            fact_id = item.get("id")
            if fact_id in wanted and fact_id not in seen:
                seen.add(fact_id)
                last = index
    if last < 0:
        return ""
    if last + 2 >= len(items):
        return None
    start = _item_start(text, doc, last + 2)
    return None if start is None else text[: start[0]]
