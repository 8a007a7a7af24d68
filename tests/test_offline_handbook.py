"""The handbook carried on a USB stick (issue 14.4): built once, opened from disk (file://)
in Chromium with no network, its search finds facts and its links work, and no page asks
the internet for anything."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from handbook_support import copy_kb, mkdocs_build, search_and_open_fact
from helpers import CHROMIUM, require_chromium

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_chromium()
    root = copy_kb(tmp_path_factory.mktemp("offline") / "kb")
    built = mkdocs_build(root, "-d", str(root / "site"), timeout=600)
    assert built.returncode == 0, built.stderr
    return root / "site"


@pytest.fixture(scope="module")
def page(site: Path) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.remote = []  # type: ignore[attr-defined]
        page.on(
            "request",
            lambda r: (
                None
                if r.url.startswith(("file:", "data:", "about:"))
                else page.remote.append(r.url)
            ),  # type: ignore[attr-defined]
        )
        page.goto((site / "index.html").as_uri(), wait_until="load")
        yield page
        browser.close()


def test_search_works_from_disk(page: Any, site: Path) -> None:
    assert (
        (site / "search" / "search_index.js").read_text(encoding="utf-8").startswith("var __index")
    )
    anchor = search_and_open_fact(page, "facts/hardware.html", timeout=90)
    assert "/facts/hardware.html" in page.url
    assert page.url.startswith("file://")
    assert page.locator(f'[id="{anchor}"]').is_visible()


def test_no_request_leaves_the_machine(page: Any) -> None:
    page.goto(page.url.split("#")[0], wait_until="load")
    assert page.remote == []
