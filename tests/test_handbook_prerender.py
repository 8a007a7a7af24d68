"""The pre-rendered parts of the largest pages (handbook/prerender.py) are exactly the HTML
Python-Markdown makes of the same pages' Markdown, with the site's Markdown settings, on fact
text chosen to trip an escaper: Markdown's own characters, HTML, entities, table pipes."""

from __future__ import annotations

from pathlib import Path

import markdown
import pytest
import yaml
from handbook_support import REPO, edit_fact
from helpers import fact, make_kb

from factbook.handbook import Generator
from factbook.handbook.editlinks import EditLinks
from factbook.handbook.prerender import fill

NASTY = [
    "a|b `code` *star* _under_ **bold**",
    "<think> & &amp; &copy; </div> <!-- factbook:html 0 -->",
    "[link](http://x.invalid) ![img](y.png) {#id} \\\\ backslash",
    "#heading ## not | pipe || twice  spaces\ttab",
    "<script>alert(1)</script> 'quotes' \"double\"",
]


def _site_markdown() -> markdown.Markdown:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    names, settings = [], {}
    for ext in config["markdown_extensions"]:
        if isinstance(ext, dict):
            ((name, options),) = ext.items()
            names.append(name)
            settings[name] = options or {}
        else:
            names.append(ext)
    return markdown.Markdown(extensions=names, extension_configs=settings)


@pytest.fixture(scope="module")
def nasty_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    facts = [
        fact(
            f"hw.nasty{n}",
            "cpu.threads",
            {"ge": 1},
            target="local",
            title=title,
            tags=[title[:12], "shared tag", "a|b"],
        )
        for n, title in enumerate(NASTY)
    ]
    facts.append(fact("sw.plain", "cpu.threads", {"ge": 1}, category="software", target="local"))
    return make_kb(tmp_path_factory.mktemp("nasty"), facts)


@pytest.mark.parametrize(
    "edit", [None, EditLinks("https://git.invalid/r/blob/main/{path}#L{line}")]
)
def test_fragments_are_what_markdown_makes_of_the_page(nasty_kb: Path, edit: EditLinks) -> None:
    whole = Generator().generate(nasty_kb, edit=edit)
    split = Generator().generate(nasty_kb, edit=edit, prerender=True)
    assert set(split.fragments) == {"facts/index.md", "tags.md"}
    for uri, fragments in split.fragments.items():
        expected = _site_markdown().convert(whole.pages[uri])
        converted = _site_markdown().convert(split.pages[uri])
        assert len(split.pages[uri]) < len(whole.pages[uri]) / 2 or len(fragments) < 3
        assert fill(converted, fragments, uri, lambda target: None) == expected, uri
    assert "&lt;think&gt;" in split.fragments["facts/index.md"][0]


def test_a_title_edit_leaves_the_placeholder_markdown_as_it_was(tmp_path: Path) -> None:
    """What makes the conversion reusable under `mkdocs serve` (rebuild.py keys on it)."""
    facts = [
        fact(f"hw.f{n}", "cpu.threads", {"ge": 1}, target="local", tags=["t"]) for n in range(3)
    ]
    root = make_kb(tmp_path / "kb", facts)
    generator = Generator()
    before = generator.generate(root, prerender=True)
    edit_fact(root, "hw.f1", title="A new title")
    after = generator.generate(root, prerender=True)
    for uri in ("facts/index.md", "tags.md"):
        assert after.pages[uri] == before.pages[uri]
        assert "A new title" in "".join(after.fragments[uri])
        assert "A new title" not in "".join(before.fragments[uri])


def test_links_are_resolved_like_markdown_links() -> None:
    html = "<!-- factbook:html 0 -->\n<p>after</p><!-- factbook:html 7 -->"
    fragment = '<a href="hardware.md#hw.x">x</a> <a href="../tags.md#t">t</a> <a href="#here">h</a>'
    urls = {"facts/hardware.md": "hardware.html", "tags.md": "../tags.html"}
    out = fill(html, [fragment], "facts/index.md", urls.get)
    assert out == (
        '<a href="hardware.html#hw.x">x</a> <a href="../tags.html#t">t</a> '
        '<a href="#here">h</a><p>after</p><!-- factbook:html 7 -->'
    )
    missing = fill(html, [fragment], "facts/index.md", lambda target: None)
    assert 'href="hardware.md#hw.x"' in missing  # unknown page: left as written, as MkDocs does
