"""What may reach the handbook's HTML from facts, targets and results: safe URLs, slugs, links.

A knowledge base is a shared repository and results come back from boxes, so every name, value
and link is hostile until shown otherwise. Browsers drop tabs and newlines inside a URL and
decode entities before they read its scheme (`jav&#x09;ascript:` is `javascript:`), so a URL is
judged on what the browser will see, and only http, https, mailto and scheme-less (relative)
URLs pass. Ids are slugs: an id never carries a quote, a space or a brace that could close an
attribute or an attr_list.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable

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


# [text](url "title") and ![alt](url); the url may sit in <...>. Nested brackets one level deep.
_INLINE_LINK = re.compile(
    r"(?P<bang>!?)\[(?P<text>(?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(?P<url><[^>]*>|[^\s)]*)"
    r"(?P<rest>[^)]*)\)"
)
# [label]: url  (a reference definition at the start of a line)
_REF_DEF = re.compile(r"^(?P<lead> {0,3}\[[^\]]+\]:\s*)(?P<url><[^>]*>|\S+)(?P<rest>.*)$", re.M)
# <scheme:...> autolinks
_AUTOLINK = re.compile(r"<(?P<url>[A-Za-z][A-Za-z0-9+.\-]*:[^\s<>]*)>")


def safe_markdown_links(text: str) -> str:
    """Markdown with links to unsafe schemes turned into their plain text.

    `[x](javascript:...)` keeps `x`, an image with an unsafe source keeps its alt text, a
    reference definition to an unsafe URL is dropped and an unsafe autolink is shown as code.
    """

    def inline(match: re.Match[str]) -> str:
        url = match["url"].strip("<>")
        if is_safe_url(url):
            return match[0]
        return match["text"]

    def refdef(match: re.Match[str]) -> str:
        return match[0] if is_safe_url(match["url"].strip("<>")) else ""

    def autolink(match: re.Match[str]) -> str:
        url = match["url"]
        return match[0] if is_safe_url(url) else "`" + url.replace("`", "") + "`"

    text = _INLINE_LINK.sub(inline, text)
    text = _REF_DEF.sub(refdef, text)
    return _AUTOLINK.sub(autolink, text)


_CODE_SPAN = re.compile(r"(`+)[^\n]*?\1")
_TAGLIKE = re.compile(r"<(?=[A-Za-z/!?])")
# An attr_list (`{#id}`, `{.class}`, `{: key=value}`, `{onclick=x}`) sets HTML attributes;
# a brace group of prose (`awk '{print $2}'`) does not look like one and stays as typed.
_ATTR_LIST = re.compile(r"\{(?=\s*[:#.]|[^{}\n]*=)")


def safe_markdown(text: str) -> str:
    """Markdown that renders no HTML of its own: outside code spans, tags are shown as text,
    attribute lists are inert and links to unsafe schemes lose their target.

    For documents assembled from facts and results (status documents): every field is
    escaped as it is filled in, and this pass over the whole text catches a field that was not.
    """
    return outside_code_spans(text, _prose_pass)


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


def outside_code_spans(text: str, func: Callable[[str], str]) -> str:
    """`func` applied to Markdown outside its code spans; the spans stay as typed."""
    return between_matches(_CODE_SPAN, text, func)


def _prose_pass(text: str) -> str:
    text = _TAGLIKE.sub("&lt;", text)
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
