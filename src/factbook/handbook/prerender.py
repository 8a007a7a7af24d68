"""The handbook's largest pages as HTML: their Markdown conversion is skipped under MkDocs.

At 1,000 facts the all-facts index (a table with a row per fact) and the tag index (a list
per tag) are most of the site's Markdown, and a title edit changes one line of each: Python-
Markdown converting them again was half of every rebuild under `mkdocs serve`. For the MkDocs
plugin the generator writes those parts as HTML fragments, in the very markup Python-Markdown
makes from the same Markdown (tests/test_handbook_prerender.py compares the two), and leaves a
placeholder in the page's Markdown, which stays the same across such edits (its conversion is
reused, rebuild.py). The plugin puts the fragments in after the conversion, with their links
made what MkDocs makes of a link to a page (`hardware.md#id` -> `hardware.html#id`).

`factbook docs` writes the full Markdown, for any Markdown tool.
"""

from __future__ import annotations

import html
import posixpath
import re
from collections.abc import Callable

PLACEHOLDER = "<!-- factbook:html {n} -->"
# Python-Markdown keeps the newline after a block of raw HTML: the fragment ends its block
_PLACEHOLDER = re.compile(r"<!-- factbook:html (\d+) -->\n?")
# the only links fragments hold: to a generated page, relative, with an optional anchor
_HREF = re.compile(r'href="([^"#:?]+\.md)(#[^"]*)?"')


def placeholders(count: int) -> list[str]:
    return [PLACEHOLDER.format(n=n) for n in range(count)]


def text(value: object) -> str:
    """Plain text as Python-Markdown prints what md() escaped: whitespace folded, & < >."""
    return html.escape(" ".join(str(value).split()), quote=False)


def link(href: str, label: str) -> str:
    return f'<a href="{html.escape(href, quote=True)}">{label}</a>'


def table(head: list[str], rows: list[list[str]], *, css: str) -> str:
    """A `<div class=css markdown>` around a Markdown table, as md_in_html + tables print it."""
    parts = [f'<div class="{css}">', "<table>", "<thead>", "<tr>"]
    parts += [f"<th>{h}</th>" for h in head]
    parts += ["</tr>", "</thead>", "<tbody>"]
    for row in rows:
        parts.append("<tr>")
        parts += [f"<td>{cell}</td>" for cell in row]
        parts.append("</tr>")
    parts += ["</tbody>", "</table>", "</div>"]
    return "\n".join(parts)


def bullets(items: list[str]) -> str:
    """A Markdown list of one-line items, as Python-Markdown prints it."""
    return "\n".join(["<ul>", *(f"<li>{item}</li>" for item in items), "</ul>"])


def fill(
    converted: str, fragments: list[str], page_uri: str, url_of: Callable[[str], str | None]
) -> str:
    """The page's HTML with each placeholder replaced by its fragment, links resolved:
    `url_of(docs-relative uri)` is the target's URL relative to this page (None: unknown,
    the link is left as written, as MkDocs leaves a link to a missing page)."""
    base = posixpath.dirname(page_uri)
    urls: dict[str, str | None] = {}

    def resolve(match: re.Match[str]) -> str:
        target = match[1]
        if target not in urls:
            urls[target] = url_of(posixpath.normpath(posixpath.join(base, target)))
        url = urls[target]
        if url is None:
            return match[0]
        return f'href="{html.escape(url, quote=True)}{match[2] or ""}"'

    def put(match: re.Match[str]) -> str:
        n = int(match[1])
        return _HREF.sub(resolve, fragments[n]) if n < len(fragments) else match[0]

    return _PLACEHOLDER.sub(put, converted)
