"""safe_markdown, the pass over runbook prose and status documents, is linear in its text
(issue 25 item 5). Its inline-link pattern overlapped (`[^\\s)]*` then `[^)]*`) and, with no
`)` after a `[..](`, tried every split from every `[`: 3,000 characters of `![](` took 14 s
and an 8 kB runbook stopped `factbook docs`. The link reader now reads what follows `(` by
hand; it is compared here with the pattern it replaces on random Markdown."""

from __future__ import annotations

import random
import re
import time

import pytest

from factbook.handbook import safehtml
from factbook.handbook.safehtml import safe_markdown, safe_markdown_links

OLD_INLINE_LINK = re.compile(
    r"(?P<bang>!?)\[(?P<text>(?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(?P<url><[^>]*>|[^\s)]*)"
    r"(?P<rest>[^)]*)\)"
)
PIECES = ["[", "]", "(", ")", "<", ">", "!", " ", "\n", "a", "x y", "javascript:", "http://h/",
          "`", '"t"', "\t", "[a](", "](", "<x)"]  # fmt: skip


def old_links(text: str) -> str:
    """The replaced pass: the pattern's matches, kept or cut to their text."""
    return OLD_INLINE_LINK.sub(
        lambda m: m[0] if safehtml.is_safe_url(m["url"].strip("<>")) else m["text"], text
    )


def test_links_are_read_as_the_pattern_read_them() -> None:
    rng = random.Random(20261207)
    for _ in range(20_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 24)))
        new = safehtml._inline_links(
            text,
            lambda whole, inner, url: whole if safehtml.is_safe_url(url.strip("<>")) else inner,
        )
        assert new == old_links(text), repr(text)


@pytest.mark.parametrize("unit", ["![](", "[a](", "[a](<", "[a](x ", "`", "[[a]](", "<"])
def test_a_megabyte_of_link_starts_takes_linear_time(unit: str) -> None:
    text = unit * (1_000_000 // len(unit))
    started = time.process_time()
    safe_markdown(text)
    safe_markdown_links(text)
    assert time.process_time() - started < 8.0, unit  # 14 s for 3 kB of `![](` before


PROSE = ["`", "``", "a", "\\", " ", "<b>", "\n", "\n\n", "x <b> y", "- ", "# "]


def test_no_text_markdown_renders_as_html_is_kept_as_a_code_span() -> None:
    """What safe_markdown keeps as a code span, Markdown shows as code: `\\`<b>`` (an escaped
    backtick) was kept and rendered <b>; a backtick run Markdown pairs beyond its line makes
    the rest of the paragraph prose to the pass."""
    markdown = pytest.importorskip("markdown")
    rng = random.Random(20261207)
    for _ in range(5_000):
        text = "".join(rng.choice(PROSE) for _ in range(rng.randint(0, 16)))
        assert "<b>" not in markdown.markdown(safe_markdown(text)), repr(text)


@pytest.mark.parametrize(
    ("text", "kept"),
    [("run `--model <path>` now", "`--model <path>`"), ("a ``x ` <y>`` b", "``x ` <y>``")],
)
def test_code_spans_show_what_was_typed(text: str, kept: str) -> None:
    assert kept in safe_markdown(text)
