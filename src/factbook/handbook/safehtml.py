"""What may reach the handbook's HTML from facts, targets and results: safe URLs, slugs, links.

A knowledge base is a shared repository and results come back from boxes, so every name, value
and link is hostile until shown otherwise. Browsers drop tabs and newlines inside a URL and
decode entities before they read its scheme (`jav&#x09;ascript:` is `javascript:`), so a URL is
judged on what the browser will see, and only http, https, mailto and scheme-less (relative)
URLs pass. Ids are slugs: an id never carries a quote, a space or a brace that could close an
attribute or an attr_list.
"""

from __future__ import annotations

import bisect
import html
import re
import unicodedata
from collections.abc import Callable

from factbook.handbook.nesting import BACKTICK_RUN, TAG_START, bounded

SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_INVISIBLE = re.compile(r"[\x00-\x20\x7f-\x9f\u200b-\u200f\u2028\u2029\ufeff]")
_SLUG_BAD = re.compile(r"[^a-z0-9._-]+")


def browser_view(url: str) -> str:
    """`url` as a browser parses its scheme: entities decoded, invisible characters gone."""
    text = url
    for _ in range(5):  # nested entities (`&amp;#106;`) unwrap a level per pass
        decoded = html.unescape(text)
        if decoded == text:
            break
        text = decoded
    return _INVISIBLE.sub("", text)


def is_safe_url(url: str) -> bool:
    """True for http(s), mailto and relative URLs; false for every other scheme."""
    seen = browser_view(url)
    match = _SCHEME.match(seen)
    if match is None:
        # no scheme: relative, unless a ':' before any '/', '?' or '#' hides one from us
        head = re.split(r"[/?#]", seen, maxsplit=1)[0]
        return ":" not in head
    return match[1].lower() in SAFE_SCHEMES


def slug(text: str, *, fallback: str = "x") -> str:
    """A lower-case id made of [a-z0-9._-], starting with a letter or digit; never empty."""
    folded = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode()
    value = _SLUG_BAD.sub("-", folded.lower()).strip("-._")
    return value or fallback


# The head of [text](url "title") and ![alt](url); nested brackets one level deep. What
# follows the `(` is read by _link_tail, not by a pattern: `(?P<url>[^\s)]*)(?P<rest>[^)]*)\)`
# overlaps, and with no `)` after it backtracked over every split from every `[` (3,000
# characters of `![](` took 14 s, an 8 kB runbook stopped `factbook docs`).
_LINK_HEAD = re.compile(r"(?P<bang>!?)\[(?P<text>(?:[^\[\]]|\[[^\[\]]*\])*)\]\(")
_SPACE = re.compile(r"\s")


class _Next:
    """Where a pattern next matches at or after a position, remembered: the heads of a text
    ask in increasing order, so each stretch of it is searched once."""

    def __init__(self, text: str, pattern: re.Pattern[str]):
        self.text, self.pattern = text, pattern
        self.asked, self.found = len(text) + 1, -1

    def at(self, i: int) -> int:
        """The first match's position at or after `i`; -1 when there is none."""
        if not (self.asked <= i and (self.found == -1 or i <= self.found)):
            match = self.pattern.search(self.text, i)
            self.asked, self.found = i, match.start() if match else -1
        return self.found


def _link_tail(text: str, i: int, find: dict[str, _Next]) -> tuple[str, int] | None:
    """(url, end) of the link whose `(` ends at `i`, read as the pattern
    `\\s*(<[^>]*>|[^\\s)]*)[^)]*\\)` would; None when it would not match."""
    close = find[")"].at(i)
    if close == -1:
        return None
    start = i + len(text[i:close]) - len(text[i:close].lstrip())
    if text.startswith("<", start):
        angle = find[">"].at(start + 1)
        after = find[")"].at(angle + 1) if angle != -1 else -1
        if after != -1:
            return text[start : angle + 1], after + 1
    space = find["space"].at(start)
    stop = close if space == -1 else min(space, close)
    return text[start:stop], close + 1


# [label]: url  (a reference definition at the start of a line)
_REF_DEF = re.compile(r"^(?P<lead> {0,3}\[[^\]]+\]:\s*)(?P<url><[^>]*>|\S+)(?P<rest>.*)$", re.M)
# <scheme:...> autolinks
_AUTOLINK = re.compile(r"<(?P<url>[A-Za-z][A-Za-z0-9+.\-]*:[^\s<>]*)>")


def safe_markdown_links(text: str) -> str:
    """Markdown with links to unsafe schemes turned into their plain text.

    `[x](javascript:...)` keeps `x`, an image with an unsafe source keeps its alt text, a
    reference definition to an unsafe URL is dropped and an unsafe autolink is shown as code.
    """

    def inline(whole: str, text: str, url: str) -> str:
        return whole if is_safe_url(url.strip("<>")) else text

    def refdef(match: re.Match[str]) -> str:
        return match[0] if is_safe_url(match["url"].strip("<>")) else ""

    def autolink(match: re.Match[str]) -> str:
        url = match["url"]
        return match[0] if is_safe_url(url) else "`" + url.replace("`", "") + "`"

    text = _inline_links(text, inline)
    text = _REF_DEF.sub(refdef, text)
    return _AUTOLINK.sub(autolink, text)


def _inline_links(text: str, keep: Callable[[str, str, str], str]) -> str:
    """`text` with each inline link replaced by keep(link as written, its text, its url)."""
    find = {")": _Next(text, re.compile(r"\)")), ">": _Next(text, re.compile(">"))}
    find["space"] = _Next(text, _SPACE)
    out, last, pos = [], 0, 0
    while (head := _LINK_HEAD.search(text, pos)) is not None:
        tail = _link_tail(text, head.end(), find)
        if tail is None:  # as the pattern did: try again one character on
            pos = head.start() + 1
            continue
        url, end = tail
        out += [text[last : head.start()], keep(text[head.start() : end], head["text"], url)]
        last = pos = end
    out.append(text[last:])
    return "".join(out)


# An attr_list (`{#id}`, `{.class}`, `{: key=value}`, `{onclick=x}`) sets HTML attributes;
# a brace group of prose (`awk '{print $2}'`) does not look like one and stays as typed.
_ATTR_LIST = re.compile(r"\{(?=\s*[:#.]|[^{}\n]*=)")


def safe_markdown(text: str) -> str:
    """Markdown that renders no HTML of its own: outside code spans, tags are shown as text,
    attribute lists are inert and links to unsafe schemes lose their target; and nested no
    deeper than Python-Markdown can render (nesting.py).

    For documents assembled from facts and results (status documents): every field is
    escaped as it is filled in, and this pass over the whole text catches a field that was not.
    """
    spans = code_spans(text)
    safe = bounded(text, spans)
    return outside_code_spans(safe, _prose_pass, spans if safe is text else None)


def between_matches(pattern: re.Pattern[str], text: str, func: Callable[[str], str]) -> str:
    """`text` with `func` applied to what lies between `pattern`'s matches, the matches kept
    as written: code spans and fences show what was typed, whatever a pass does to prose."""
    out, last = [], 0
    for match in pattern.finditer(text):
        out.append(func(text[last : match.start()]))
        out.append(match[0])
        last = match.end()
    out.append(func(text[last:]))
    return "".join(out)


def outside_code_spans(
    text: str, func: Callable[[str], str], spans: list[tuple[int, int]] | None = None
) -> str:
    """`func` applied to Markdown outside its code spans (`spans`, when the caller found them
    already); the spans stay as typed."""
    out, last = [], 0
    for start, end in code_spans(text) if spans is None else spans:
        out += [func(text[last:start]), text[start:end]]
        last = end
    out.append(func(text[last:]))
    return "".join(out)


def code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of the code spans that Python-Markdown certainly shows as code, in time
    linear in the text (up to a log); what is left out is escaped like prose (never unsafe,
    at worst `&lt;` shown inside code). Markdown pairs an opening run of backticks (one
    later after an odd number of backslashes) with the first later run of as many anywhere
    in its paragraph, else with a shorter one. Where that run is on the same line, the span
    is certain; where it is not, what Markdown does depends on where its paragraph ends, so
    nothing more is taken for code until a blank line. The pattern `(`+)[^\\n]*?\\1` this
    replaces was cubic on a run of backticks, and kept text that Markdown renders as HTML."""
    spans: list[tuple[int, int]] = []
    offset, certain = 0, True
    for line in text.split("\n"):
        if not line.strip():
            certain = True  # a paragraph, Markdown's unit for code spans, ends here
        elif certain:
            found, certain = _line_code_spans(line)
            spans += [(offset + a, offset + b) for a, b in found]
        offset += len(line) + 1
    return spans


def _line_code_spans(line: str) -> tuple[list[tuple[int, int]], bool]:
    """The line's code spans, and whether every opening run closed on it."""
    runs = [(m.start(), m.end() - m.start()) for m in BACKTICK_RUN.finditer(line)]
    by_length: dict[int, list[int]] = {}
    for index, (_, length) in enumerate(runs):
        by_length.setdefault(length, []).append(index)
    spans: list[tuple[int, int]] = []
    index = 0
    while index < len(runs):
        start, length = runs[index]
        before = start
        while before > 0 and line[before - 1] == "\\":
            before -= 1
        if (start - before) % 2:  # the first backtick is escaped: the rest may open
            start, length = start + 1, length - 1
        if length == 0:
            index += 1
            continue
        later = by_length.get(length, [])
        at = bisect.bisect_right(later, index)
        if at == len(later):
            return spans, False
        close = later[at]
        spans.append((start, runs[close][0] + runs[close][1]))
        index = close + 1
    return spans, True


def _prose_pass(text: str) -> str:
    text = TAG_START.sub("&lt;", text)
    text = _ATTR_LIST.sub(r"\\{", text)
    return safe_markdown_links(text)


_ENTITY_START = re.compile(r"&(?=[#A-Za-z])")


def plain_title(title: str) -> str:
    """A page title that stays text in every template that prints it.

    MkDocs takes a page's title from its first heading as HTML-escaped text, and Material
    prints it through Jinja's `striptags`, which unescapes entities: a heading reading
    `</title><script>...` would come back as markup in `<title>`. Angle brackets become
    look-alike quotes and an entity-shaped `&` a full-width one, so nothing can turn into a
    tag again, whatever filter a theme applies.
    """
    text = html.unescape(title)
    text = text.replace("<", "\u2039").replace(">", "\u203a")
    return _ENTITY_START.sub("\uff06", text)
