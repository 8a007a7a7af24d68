"""The parse of a fact file grown by appended blocks, without parsing what was appended.

An import appends thousands of facts to a fact file and then reads the file back (the
write-back's check, the lint of the result): parsing the appended text was a quarter of
importing a dump of short items, and it can only give back the values just written. When
libyaml's emitter wrote each block from plain data (store.yamlevents.emit_counted), the
parse is made from what is known instead:

- the file before, as parsed already (inside `sharing()` the plan's parse of it);
- the file up to the end of the first appended block, parsed for real: it proves the
  blocks land as items of `facts` (a `...` marker, a key after the list, a flow list or a
  `facts: null` in the file before would put them elsewhere, and is caught there);
- the other blocks are emitted the same way, each a complete list item indented under the
  first one's dash: their values are the facts' own (copied), their lines are counted.

Anything else (a value the emitter leaves to the representer, a character the reader
treats apart, a bound that would break, a problem in the file before, a hidden character
the reader reports in a fact) returns None: the caller parses the whole text as before.
tests/test_grown_parse.py holds both to the same answers.
"""

from __future__ import annotations

import marshal
import re
from typing import Any

from factbook.errors import Problem
from factbook.knowledge.yamlsrc import (
    MAX_DEPTH,
    MAX_NODES,
    PORTABLE_DEPTH,
    LocatedDoc,
    hides,
    located_answer,
    may_hide,
    remembered,
)

Answer = tuple[LocatedDoc, list[Problem], Problem | None]

# characters the reader forbids, normalizes (\r, a BOM) or counts as a line break (NEL, LS,
# PS: `starts` counts newlines), and tabs: a block holding one raw is left to the real parse
_RAW_APART = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff\ufffe\uffff]")


def grown_answer(
    before: str,
    after: str,
    first_end: int,
    starts: list[int],
    facts: list[dict[str, Any]],
    nodes: int,
    depth: int,
) -> Answer | None:
    """`located_answer(after)` for `after` = `before` + the blocks of `facts`, or None.

    `first_end` is where the first block ends in `after`, `starts` each block's first line;
    `nodes` and `depth` are what the emitter counted in the blocks (the facts list is depth 1).
    """
    if not facts or len(starts) != len(facts) or _RAW_APART.search(after, len(before)):
        return None
    old, old_problems, old_refused = remembered("located", before, lambda: located_answer(before))
    if old_problems or old_refused is not None or type(old.data) is not dict:
        return None
    old_facts = old.data.get("facts")
    if not (old_facts is None or type(old_facts) is list):
        return None
    if count_values(old.data) + nodes > MAX_NODES or 1 + depth > MAX_DEPTH:
        return None  # the real parse names the line where the bound breaks
    if may_hide(after, len(before)) and hides(facts):
        return None  # the real parse reports each hidden character (`"\x1b"`) at its line
    edge, problems, refused = located_answer(after[:first_end])
    expected = {**old.data, "facts": [*(old_facts or []), facts[0]]}
    if problems or refused is not None or edge.data != expected:
        return None
    data = edge.data
    first = len(data["facts"]) - 1
    data["facts"].extend(marshal.loads(marshal.dumps(facts[1:])))  # plain data: exact copies
    lines = {path: n for path, n in edge.lines.items() if len(path) <= PORTABLE_DEPTH}
    for k, start in enumerate(starts[1:], 1):
        lines[("facts", first + k)] = start
    keys = {path: n for path, n in edge.key_lines.items() if len(path) <= PORTABLE_DEPTH}
    return LocatedDoc("", data, lines, keys, after), [], None


def count_values(data: Any) -> int:
    """The values the reader counts in `data` against MAX_NODES: each collection, key and
    scalar (yamlsrc's event count, for data without duplicate keys)."""
    count, stack = 0, [data]
    while stack:
        value = stack.pop()
        count += 1
        if type(value) is dict:
            count += len(value)
            stack.extend(value.values())
        elif type(value) is list:
            stack.extend(value)
    return count
