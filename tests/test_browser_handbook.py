"""The served handbook in headless Chromium: pages, anchors, search, phone width, live reload.

`mkdocs serve` runs on a copy of the shipped knowledge base. Screenshots go to a temp folder,
or to $FACTBOOK_SCREENSHOTS (the README's are made with FACTBOOK_SCREENSHOTS=docs/img).
Without /usr/bin/chromium these tests skip, except under CI (CI=true), where they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CHROMIUM, require_chromium

from factbook.store.results import ResultRecord, write_run
from tests.handbook_support import Served, copy_kb, edit_fact, search_and_open_fact

pytestmark = pytest.mark.browser
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def _need_chromium() -> None:
    require_chromium()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    _need_chromium()
    root = copy_kb(tmp_path_factory.mktemp("served") / "kb")
    # Real results for the page: verify the facts of the local `h200` target on this machine
    # (most fail here, which is what the badges should show). Its exit code says "some failed".
    # --skip-identity: h200 declares its identity, and this machine is not the H200.
    subprocess.run(
        [
            str(Path(sys.executable).with_name("verify-facts")),
            "--root",
            str(root),
            "--target",
            "h200",
            "--skip-identity",
        ],
        capture_output=True,
        timeout=300,
        check=False,
    )
    server = Served(root, root.parent / "serve.log")
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser(served: Served) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = os.environ.get("FACTBOOK_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def open_page(browser: Any, url: str, viewport: dict[str, int] = DESKTOP) -> Any:
    page = browser.new_page(viewport=viewport)
    page.goto(url, wait_until="load")
    return page


def test_home_shows_goal_and_status_at_a_glance(served: Served, browser: Any, shots: Path) -> None:
    page = open_page(browser, served.url + "/")
    assert page.locator("h1").first.inner_text().startswith("Kimi-K2.5")
    assert page.locator("#status-at-a-glance").is_visible()
    table = page.locator("table", has_text="Never checked").first
    assert "llm-two" in table.inner_text()
    if (served.root / "results" / "latest.json").exists():
        assert "h200" in table.inner_text()
        assert page.locator("#needs-attention").count() == 1
    nav = page.locator("nav.md-nav--primary").first.inner_text()
    for section in ("Hardware", "Pitfalls", "Runbooks", "Status documents"):
        assert section in nav
    page.screenshot(path=str(shots / "home.png"))
    page.close()


def test_fact_anchor_scrolls_to_the_fact(served: Served, browser: Any, shots: Path) -> None:
    page = open_page(browser, served.url + "/facts/hardware.html#hw.numa.gpu_layout")
    heading = page.locator('[id="hw.numa.gpu_layout"]')
    assert heading.is_visible()
    page.wait_for_function(
        "document.getElementById('hw.numa.gpu_layout').getBoundingClientRect().top < 300"
    )
    assert page.locator(".fb-badge").count() > 10
    page.goto(served.url + "/facts/hardware.html#topology", wait_until="load")
    assert page.locator("svg[aria-label='GPU to NUMA node layout']").first.is_visible()
    page.screenshot(path=str(shots / "hardware-topology.png"))
    page.close()


def test_pitfalls_page_reads_at_phone_width(served: Served, browser: Any, shots: Path) -> None:
    page = open_page(browser, served.url + "/facts/pitfalls.html", PHONE)
    assert page.locator("h1").first.inner_text().startswith("Pitfalls")
    assert (
        page.locator("text=Symptom:").first.is_visible()
        or page.locator("strong", has_text="Symptom").count() > 0
    )
    assert page.locator(".fb-badge").count() > 0
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"page is {overflow}px wider than the phone"
    page.screenshot(path=str(shots / "pitfalls-phone.png"))
    desktop = open_page(browser, served.url + "/facts/pitfalls.html")
    desktop.screenshot(path=str(shots / "pitfalls.png"))
    desktop.close()
    page.close()


def test_search_finds_a_fact_by_its_words(served: Served, browser: Any) -> None:
    page = open_page(browser, served.url + "/")
    anchor = search_and_open_fact(page, "/facts/hardware.html", timeout=120)
    assert page.locator(f'[id="{anchor}"]').is_visible()
    page.close()


def body_has(text: str) -> str:
    """A predicate for wait_for_function that holds once the page's text has `text`; false,
    not a TypeError, while a reload has replaced the document and its body is not parsed yet
    (`document.body` is null then)."""
    return f"document.body !== null && document.body.innerText.includes({json.dumps(text)})"


def test_editing_a_fact_or_results_reloads_the_page_once(
    served: Served, browser: Any, shots: Path
) -> None:
    page = open_page(browser, served.url + "/facts/hardware.html#hw.gpu.count")
    assert "never checked" in page.locator('[id="hw.gpu.count"] ~ p').first.inner_text()
    before = served.builds()
    marker = "GPU count (edited under mkdocs serve)"
    assert marker not in page.content()
    edit_fact(served.root, "hw.gpu.count", title=marker)
    started = time.monotonic()
    page.wait_for_function(body_has(marker), timeout=90_000)
    seen_after = time.monotonic() - started
    time.sleep(4)  # a loop would rebuild again and again without any edit
    assert served.builds() == before + 1, served.log()[-3000:]
    write_run(
        served.root,
        "20261129T160000Z-browser",
        {"targets": ["llm-two"]},
        [
            ResultRecord(
                "hw.gpu.count", "llm-two", "pass", "ok", observed=8, time="2026-11-29T16:00:00Z"
            )
        ],
    )
    page.wait_for_function(body_has("verified 2026-11-29 16:00 UTC on llm-two"), timeout=90_000)
    page.locator('[id="hw.gpu.count"]').scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "fact-verified.png"))
    page.close()
    print(f"edit to reloaded page: {seen_after:.1f} s")
