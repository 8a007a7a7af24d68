"""The handbook of a knowledge base as large as an import now writes (issue 25, item 4:
nothing factbook writes can exceed what factbook reads).

A category of more than CATEGORY_PAGE_FACTS facts is split over pages that link to each
other and sit together in the navigation; every link to one of its facts goes to the page
holding it. And each page is rendered with its own output budget: the generator lives as
long as `mkdocs serve`, and one budget kept across renders ran out after ~46 edits of the
shipped knowledge base ("the document grew beyond 16777216 characters")."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from handbook_support import copy_kb, mkdocs_build

from factbook.handbook.generator import Generator
from factbook.handbook.views import CATEGORY_PAGE_FACTS
from factbook.store.writeback import append_facts

EXTRA = 2 * CATEGORY_PAGE_FACTS + 150  # the shipped software facts and these: three pages


def _many(root: Path) -> list[str]:
    ids = [f"sw.many-{i:05d}" for i in range(EXTRA)]
    facts: list[dict[str, Any]] = [
        {
            "id": fact_id,
            "category": "software",
            "title": f"package {i} is at 1.{i}",
            "statement": f"package {i} is at 1.{i}",
            "value": f"1.{i}",
            "status": "assumed",
            "sources": [{"seed": "many.md", "message": 4504}],
        }
        for i, fact_id in enumerate(ids)
    ]
    append_facts(root / "facts" / "software-many.yaml", facts)
    return ids


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = copy_kb(tmp_path_factory.mktemp("large") / "kb")
    return root, _many(root)


def test_a_category_past_one_page_is_split_and_every_link_finds_its_page(
    large: tuple[Path, list[str]],
) -> None:
    root, ids = large
    book = Generator().generate(root)
    pages = ["facts/software.md", "facts/software-2.md", "facts/software-3.md"]
    assert [uri for uri in book.pages if uri.startswith("facts/software")] == pages
    software = next(entry for entry in book.nav[1]["Facts"] if "Software" in entry)
    assert software == {"Software": pages}  # a section of its pages
    held = {uri: re.findall(r"^### .* \{#([^}]+)\}$", book.pages[uri], re.M) for uri in pages}
    assert [len(held[uri]) for uri in pages] == [1000, 1000, len(held[pages[2]])]
    assert sum(len(found) for found in held.values()) >= EXTRA
    for n, uri in enumerate(pages, 1):
        assert f"Page {n} of 3" in book.pages[uri]
        assert book.titles[uri] == f"Software ({n}/3)"
    # the list of all facts links each fact to the page that holds it
    index = book.pages["facts/index.md"]
    for fact_id in (ids[0], ids[CATEGORY_PAGE_FACTS], ids[-1]):
        page = next(uri for uri in pages if fact_id in held[uri])
        target = page.removeprefix("facts/")
        assert f"]({target}#{fact_id})" in index, (fact_id, page)


def test_mkdocs_builds_the_split_category_with_no_broken_link(
    large: tuple[Path, list[str]],
) -> None:
    root, ids = large
    done = mkdocs_build(root, "--strict")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    html = (root / "site" / "facts" / "software-3.html").read_text(encoding="utf-8")
    assert ids[-1] in html and "Page 3 of 3" in html


def test_each_page_is_rendered_with_its_own_output_budget(tmp_path: Path) -> None:
    root = copy_kb(tmp_path / "kb")
    generator = Generator()
    book = generator.generate(root)
    largest = max(len(text) for text in book.pages.values())
    assert sum(len(text) for text in book.pages.values()) > 2 * largest
    assert generator.env.emitted <= largest  # the last page's count, not the sum of all
