"""Escaping and small HTML pieces for generated Markdown.

Fact text comes from YAML written by people: `layers.0.*`, `a|b`, `<think>` must reach the page
as typed, not as emphasis, table cells or tags. Python-Markdown still parses Markdown between
inline HTML tags, so code spans escape Markdown's characters as entities too. Text that would
need more escapes than Python-Markdown renders in linear time is one Markdown code span
instead (nesting.py).
"""

from __future__ import annotations

import functools
import html
import json
import posixpath
import re
from typing import Any

from factbook.handbook.nesting import MAX_MATCHES, code_span

_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}#|!])")
# Markdown's characters as numeric entities (a newline folds to a space: code stays on one line)
_CODE_ENTITIES = {ch: f"&#{ord(ch)};" for ch in "*_`[]|{}\\"} | {"\n": " "}
_CODE_TABLE = str.maketrans(_CODE_ENTITIES)


def md(text: Any) -> str:
    """Inline Markdown that shows `text` literally (one line, safe inside a table cell)."""
    if text is None:
        return ""
    value = " ".join(str(text).split())
    if not value:
        return ""
    escaped = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _literal(_MD_SPECIAL.sub(r"\\\1", escaped), value)


def _literal(escaped: str, value: str) -> str:
    """`escaped`, unless its escapes (each an inline match Python-Markdown pays for with a
    copy of the whole text: nesting.py) are too many: then `value` as one code span."""
    if escaped.count("\\") + escaped.count("&") > MAX_MATCHES:
        return code_span(value)
    return escaped


_CODE_SPAN = re.compile(r"`([^`]+)`")


def prose(text: Any) -> str:
    """Like md(), but `backtick spans` the authors wrote stay code."""
    if text is None:
        return ""
    value = " ".join(str(text).split())
    parts, last = [], 0
    for match in _CODE_SPAN.finditer(value):
        parts.append(md(value[last : match.start()]) + code(match[1]))
        last = match.end()
    parts.append(md(value[last:]))
    return _literal("".join(parts), value)


def code(value: Any) -> str:
    """An inline `<code>` span for any value (YAML scalars as typed, mappings as JSON)."""
    text = value_text(value)
    escaped = html.escape(text, quote=False).translate(_CODE_TABLE)
    if escaped.count("&") > MAX_MATCHES:  # entities: one inline match each
        return code_span(" ".join(text.split()))
    return "<code>" + escaped + "</code>"


def attr(text: Any) -> str:
    """A value for an HTML attribute (tooltips), with Markdown's characters neutralised."""
    escaped = html.escape(" ".join(str(text).split()), quote=True)
    return escaped.translate(_CODE_TABLE)


def value_text(value: Any) -> str:
    """The compact text of a fact value or an observation."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, sort_keys=False, default=str, ensure_ascii=False)


def expect_text(expect: Any) -> str:
    """An expectation as people say it: `version >=2.11,<2.12`, `each contains RTX`."""
    if not isinstance(expect, dict):
        return value_text(expect)
    path = expect.get("path")
    ops = [(k, v) for k, v in expect.items() if k != "path"]
    if len(ops) != 1:
        return value_text(expect)
    op, arg = ops[0]
    if op in ("each", "not"):
        text = f"{op} {expect_text(arg)}"
    elif op in ("all", "any") and isinstance(arg, list):
        text = f"{op} of ({'; '.join(expect_text(a) for a in arg)})"
    elif op == "length" and isinstance(arg, dict):
        text = f"length {expect_text(arg)}"
    else:
        text = f"{op} {value_text(arg)}"
    return f"{path}: {text}" if path else text


def shorten(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


PARTS_SHOWN = 40  # links or values in one table cell or paragraph (~5 inline matches each)


def capped(parts: list[str], sep: str, *, last: bool = False) -> str:
    """`parts` joined with `sep`, at most PARTS_SHOWN of them (the last ones with `last`),
    the rest counted: one cell is one text for Python-Markdown, which pays a copy of it per
    inline match (a fact's 10,000 tags, or the 10,000 facts linking to one, never ended).
    Where every part matters (the tag index), `paragraphs` keeps them all."""
    if len(parts) <= PARTS_SHOWN:
        return sep.join(parts)
    left = len(parts) - PARTS_SHOWN
    if last:
        return f"… {left:,} earlier{sep}" + sep.join(parts[-PARTS_SHOWN:])
    return sep.join(parts[:PARTS_SHOWN]) + f"{sep}… {left:,} more"


PARAGRAPH_PARTS = 100  # links in one paragraph of a list that shows them all (the tag cloud)


def paragraphs(parts: list[str], sep: str = " ") -> str:
    """Every part, PARAGRAPH_PARTS to a paragraph: each paragraph is a text of its own, so
    10,000 tags cost 100 paragraphs of 100 links, not one of 10,000 (which never ended)."""
    return "\n\n".join(
        sep.join(parts[at : at + PARAGRAPH_PARTS]) for at in range(0, len(parts), PARAGRAPH_PARTS)
    )


def rel_link(from_uri: str, to_uri: str, anchor: str = "") -> str:
    """A link from page `from_uri` to `to_uri` (both docs-relative .md paths)."""
    target = "" if to_uri == from_uri else _relpath(to_uri, posixpath.dirname(from_uri) or ".")
    return f"{target}#{anchor}" if anchor else target or "#"


@functools.lru_cache(maxsize=4096)
def _relpath(to_uri: str, start: str) -> str:
    """posixpath.relpath, remembered: a 1,000-fact handbook asks it ~7,000 times for a few
    dozen distinct pairs (every fact links to its category page from each index)."""
    return posixpath.relpath(to_uri, start)


def time_text(iso: str | None) -> str:
    """`2026-11-29T15:10:03Z` as `2026-11-29 15:10 UTC`; anything else unchanged."""
    if not iso:
        return "never"
    match = re.match(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d)", str(iso))
    if not match:
        return md(iso)  # not a time: whatever a record holds is shown as text
    zone = " UTC" if iso.endswith(("Z", "+00:00")) else ""
    return f"{match[1]} {match[2]}{zone}"


def scroll_table(headers: list[str], rows: list[list[str]]) -> str:
    """A Markdown table inside a div that scrolls sideways at phone width."""
    if not rows:
        return ""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell or " " for cell in row) + " |" for row in rows]
    return '<div class="fb-scroll" markdown>\n\n' + "\n".join(lines) + "\n\n</div>"
