"""Marks a reader must see on any machine: words and CSS-drawn shapes, never emoji.

A browser draws ✅, ❌ or ⚠️ only with a font that has them; a server, a container or a
fresh laptop without an emoji font shows an empty box where "verified" belongs, and the
handbook is read on exactly such machines. Every mark the handbook emits is therefore a word
in a coloured pill (`.fb-badge`) or a CSS shape around an ASCII character (`.fb-flag`).

Status documents keep their emoji marks in the file (they follow the seeds' structure and
`factbook import` reads them back); `status_marks` turns them into pills when the handbook
shows such a document, leaving code spans and fenced blocks as written.
"""

from __future__ import annotations

import re

from factbook.handbook.markup import attr
from factbook.handbook.safehtml import between_matches, outside_code_spans

# a status document's marks (status/items.py MARKS and its legend): glyph -> (css kind, word)
STATUS_MARKS: dict[str, tuple[str, str]] = {
    "✅": ("pass", "verified"),
    "⚠️": ("drift", "drifted"),
    "⚠": ("drift", "drifted"),
    "❌": ("error", "error"),
    "◻": ("never", "not checked"),
}
_GLYPHS = re.compile("|".join(re.escape(g) for g in sorted(STATUS_MARKS, key=len, reverse=True)))
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}\1[`~]*[ \t]*$|\Z)", re.M | re.S)


def badge(kind: str, word: str, tooltip: str = "") -> str:
    """A coloured pill with a word in it (the same shape as a fact's status badges)."""
    tip = f' title="{attr(tooltip)}"' if tooltip else ""
    return f'<span class="fb-badge fb-{kind}"{tip}>{attr(word)}</span>'


def flag(tooltip: str) -> str:
    """A short attention mark for dense cells: an ASCII `!` in a CSS-drawn orange disc."""
    tip = attr(tooltip)
    return f'<span class="fb-flag" title="{tip}" role="img" aria-label="{tip}">!</span>'


def status_marks(markdown: str) -> str:
    """A status document's ✅ ⚠️ ❌ ◻ as worded pills, outside code spans and fences."""
    return between_matches(_FENCE, markdown, _prose)


def _prose(text: str) -> str:
    return outside_code_spans(text, lambda part: _GLYPHS.sub(_pill, part))


def _pill(match: re.Match[str]) -> str:
    kind, word = STATUS_MARKS[match[0]]
    return badge(kind, word)
