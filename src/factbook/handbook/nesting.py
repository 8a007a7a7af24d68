"""Markdown from a knowledge base that Python-Markdown renders in time linear in its size.

Python-Markdown's inline pass rebuilds a block's whole text for every match it makes, and
recurses once or more per level of nesting. Statements, status documents and runbook prose
that reach generated pages through `safe_markdown` showed it: a statement of 4,000 links
(28 kB) took `mkdocs build` 31 s, 200 kB of `<a ` 12 s, 1,000 `*a ` runs and as many
` a*` (6 kB) ended it in a RecursionError traceback, as did 400 nested admonitions, and
1,500 nested quote lines took 9 s. So, while it is still text:

- a block (a paragraph, a list item, a heading, a table row) that would make more than
  `MAX_MATCHES` inline matches, holds a delimiter run longer than three (`***` is the most
  Markdown means), or so many tag-like `<` for its length that Python's HTMLParser (which
  Python-Markdown runs over the page first, code spans included) would scan it quadratically
  (4,000 `<a ` in one code span: 1.2 s), is shown as code, line by line (a table row cell by
  cell): as typed but for `<` shown as `‹`, one match each;
- a line indents at most `MAX_INDENT` columns (lists, admonitions and details nest by
  indentation) and opens at most `MAX_NEST` quotes and list items (`> - > - x`: the markers
  past them are shown as code).

Prose as people write it stays far below these bounds and passes unchanged; code spans,
fenced blocks and a document's YAML front matter are never touched. Linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

MAX_MATCHES = 200  # inline matches one block may make: each costs a copy of the block
# tag-like `<` in a block times its length: Python's HTMLParser, which Python-Markdown runs
# over the page first, scans from each one to where a tag could end (code spans included)
MAX_TAG_SCAN = 20_000_000
MAX_INDENT = 128  # columns: 32 levels of four-space nesting
MAX_NEST = 32  # quote and list markers opening one line

# what starts an inline match in Python-Markdown or an extension a site may enable: escapes,
# code, links and images, entities, tags and autolinks, emphasis (core, tilde, caret, mark),
# attribute lists and critic marks, emoji and magic links (`:`), smart symbols (`(c)`)
_TRIGGERS = "\\`[&<*_~^=:{(!"
_LONG_RUN = re.compile(r"[*_~^]{4,}|={4,}")
TAG_START = re.compile(r"<(?=[A-Za-z/!?])")  # where an HTML parser sees a tag begin
_BLOCK_START = re.compile(r"^ {0,3}(?:[-*+][ \t]|\d{1,9}[.)][ \t]|#{1,6}(?:[ \t]|$)|>|\|)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# the markers a line opens its nesting with: quotes and list items, in any mix (`> - > 1. `)
_NEST = re.compile(r"^(?:[ \t]*(?:>[ ]?|(?:[-*+]|\d{1,9}[.)])[ \t]+))+")
_MARKER = re.compile(r">[ ]?|(?:[-*+]|\d{1,9}[.)])[ \t]+")
# what stays Markdown on a line shown as code: indentation, quote and list markers, a
# heading's hashes
_STRUCTURE = re.compile(
    r"^[ \t]*(?:(?:>[ ]?)+[ \t]*)?(?:(?:[-*+]|\d{1,9}[.)])[ \t]+|#{1,6}[ \t]+)?"
)
BACKTICK_RUN = re.compile(r"`+")
_CELL_BORDER = re.compile(r"(?<!\\)\|")


def bounded(text: str, code: list[tuple[int, int]]) -> str:
    """`text` made cheap to render (see the module docstring), `text` itself when nothing
    needed to change; `code` holds the (start, end) offsets of its code spans, which stay as
    typed."""
    out: list[str] = []
    last = first_code = 0
    for start, end, lines in _blocks(text):
        while first_code < len(code) and code[first_code][1] <= start:
            first_code += 1  # blocks go forward, and so do the spans they meet
        prose, spans = _outside(start, end, code, first_code)
        breaks = sum(1 for a, b in lines if text.endswith("  ", a, b))  # hard line breaks
        heavy = _heavy(text, prose, start, end, spans + breaks)
        for line_start, line_end in lines:
            if not heavy and text[line_start] not in _MAY_NEST:
                continue  # most lines: nothing to change
            line = text[line_start:line_end]
            changed = _shallow(_as_code(line) if heavy else line)
            if changed != line:
                out += [text[last:line_start], changed]
                last = line_end
    if not out:
        return text  # unchanged, as it nearly always is: the caller's code spans still hold
    out.append(text[last:])
    return "".join(out)


_MAY_NEST = frozenset(" \t>-*+0123456789")  # what a line that indents or nests starts with


def _heavy(text: str, prose: list[tuple[int, int]], start: int, end: int, known: int) -> bool:
    """Whether the block would make more than MAX_MATCHES inline matches (counted from
    above: `known` (its code spans and hard line breaks), and every character of its prose
    that can start one), holds a long delimiter run, or would send Python's HTMLParser
    scanning quadratically."""
    tags = len(TAG_START.findall(text, start, end))
    if tags * (end - start) > MAX_TAG_SCAN:
        return True
    matches = known
    for a, b in prose:
        matches += sum(text.count(ch, a, b) for ch in _TRIGGERS)
        if matches > MAX_MATCHES or _LONG_RUN.search(text, a, b):
            return True
    return matches > MAX_MATCHES


def _blocks(text: str) -> Iterator[tuple[int, int, list[tuple[int, int]]]]:
    """(start, end, its lines' (start, end)) of each block outside fenced code and front
    matter: lines up to a blank line or a line that starts another block (a list item,
    heading, quote, row)."""
    block: list[tuple[int, int]] = []
    fence: str | None = None
    front = text.startswith("---\n")  # YAML front matter: MkDocs reads it as data, not text
    offset = 0
    for raw in text.split("\n"):
        start, end = offset, offset + len(raw)
        offset = end + 1
        if front:
            front = start == 0 or raw.rstrip() not in ("---", "...")
            continue
        blank = not raw or raw.isspace()
        opening = _FENCE.match(raw) if raw[:1] in _MAY_FENCE else None
        if fence is not None:  # inside fenced code: no block, nothing bounded
            closing = opening and opening[1][0] == fence[0] and len(opening[1]) >= len(fence)
            if closing and not raw[opening.end() :].strip():
                fence = None
            continue
        if opening:
            fence = opening[1]
        starts = raw[:1] in _MAY_START and _BLOCK_START.match(raw)
        if block and (opening or blank or starts):
            yield block[0][0], block[-1][1], block
            block = []
        if not blank and not opening:
            block.append((start, end))
    if block:
        yield block[0][0], block[-1][1], block


_MAY_FENCE = frozenset(" `~")
_MAY_START = frozenset(" -*+#>|0123456789")


def _outside(
    start: int, end: int, code: list[tuple[int, int]], first: int
) -> tuple[list[tuple[int, int]], int]:
    """The parts of [start, end) that lie outside the code spans (from code[first] on),
    and how many spans lie in it."""
    parts, at, spans = [], start, 0
    for i in range(first, len(code)):
        a, b = code[i]
        if a >= end:
            break
        spans += 1
        if a > at:
            parts.append((at, a))
        at = max(at, b)
    if at < end:
        parts.append((at, end))
    return parts, spans


def _as_code(line: str) -> str:
    """The line's text as code, its structure (indent, markers) kept; a table row's cells
    each as code."""
    head = _STRUCTURE.match(line)
    prefix = head[0] if head else ""
    rest, slots = _placeholders_off(line[len(prefix) :])
    if rest.startswith("|"):
        cells = _CELL_BORDER.split(rest)
        return prefix + "|".join(f" {code_span(c)} " if c.strip() else c for c in cells) + slots
    return prefix + code_span(rest) + slots


def _placeholders_off(text: str) -> tuple[str, str]:
    """`text` without the placeholders that end it (`\ue000...\ue001`, private-use marks a
    caller puts in and replaces afterwards, as `factbook status` does its import hints),
    and those placeholders: they stay outside the code span, as what replaces them must."""
    last = end = len(text.rstrip())
    while end and text[end - 1] == "\ue001":
        start = text.rfind("\ue000", 0, end)
        if start < 0 or "\ue001" in text[start : end - 1]:
            break
        end = len(text[:start].rstrip())
    return (text[:end], text[end:]) if end < last else (text, "")


def code_span(text: str) -> str:
    """`text` as one code span: delimited by a backtick run longer than any inside it,
    padded where it starts or ends with a backtick (Markdown strips the padding); a `<`
    that could open a tag is shown as `‹`, which no HTML parser scans from."""
    text = TAG_START.sub("\u2039", text.strip())
    if not text:
        return text
    fence = "`" * (max((len(m) for m in BACKTICK_RUN.findall(text)), default=0) + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _shallow(line: str) -> str:
    """The line indented at most MAX_INDENT columns, opening at most MAX_NEST quotes and
    list items (the markers past them as code)."""
    stripped = line.lstrip(" \t")
    width = len(line[: len(line) - len(stripped)].expandtabs(4))
    if width > MAX_INDENT:
        line = " " * MAX_INDENT + stripped
    nest = _NEST.match(line)
    if nest is None:
        return line
    markers = list(_MARKER.finditer(nest[0]))
    if len(markers) <= MAX_NEST:
        return line
    cut = markers[MAX_NEST - 1].end()
    return nest[0][:cut] + code_span(nest[0][cut:]) + " " + line[nest.end() :]
