"""The handbook's fleet page at 64 targets: outliers named, facts x groups, every target's
last verification; built by real MkDocs and read in headless Chromium at phone width."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from handbook_support import copy_kb, mkdocs_build
from helpers import CHROMIUM, fact, require_chromium

from factbook.handbook.generator import Generator
from factbook.store.results import ResultRecord, write_run

NODES = [f"node-{i:02d}" for i in range(1, 65)]
DRIVER_OUTLIERS = {"node-17": "575.57.08", "node-40": "575.57.08"}


def _fleet_kb(root: Path) -> Path:
    """64 targets in groups h100 (1-32) and b200 (33-64), two fleet facts and their results."""
    (root / "facts").mkdir(parents=True, exist_ok=True)
    targets = {n: {"transport": "local"} for n in NODES}
    groups = {
        "gpu": {"children": ["h100", "b200"]},
        "h100": {"targets": ["node-0*", "node-1*", "node-2*", "node-3[0-2]"]},
        "b200": {"targets": ["node-3[3-9]", "node-[4-6]*"]},
    }
    (root / "targets.yaml").write_text(yaml.safe_dump({"targets": targets, "groups": groups}))
    facts = [
        fact("sw.driver", "env.var", {"eq": "580.95.05"}, args={"name": "D"}, target="gpu"),
        fact("hw.gpu_count", "env.var", {"eq": "8"}, args={"name": "G"}, target="gpu"),
    ]
    (root / "facts" / "fleet.yaml").write_text(yaml.safe_dump({"facts": facts}, sort_keys=False))
    records = []
    for node in NODES:
        driver = DRIVER_OUTLIERS.get(node, "580.95.05")
        for fact_id, value in (("sw.driver", driver), ("hw.gpu_count", "8")):
            ok = value in ("580.95.05", "8")
            records.append(
                ResultRecord(
                    fact=fact_id,
                    target=node,
                    outcome="pass" if ok else "drift",
                    reason="ok" if ok else f"expected eq '580.95.05', observed '{value}'",
                    time="2026-12-01T00:10:00Z",
                    run="20261201T001000000000Z-fleet-1",
                    observed=value,
                )
            )
    write_run(root, "20261201T001000000000Z-fleet-1", {"targets": NODES}, records)
    return root


def test_fleet_page_names_outliers_and_every_target(tmp_path: Path) -> None:
    root = _fleet_kb(tmp_path / "kb")
    book = Generator().generate(root)
    page = book.pages["fleet.md"]
    assert "64 targets in 3 groups" in page
    assert "62 targets 580.95.05, 2 targets 575.57.08 (node-17, node-40)" in page
    assert "hw.gpu_count" not in page.split("## Facts by group")[0]  # no outlier there
    matrix = page.split("## Facts by group")[1].split("## Targets")[0]
    driver_row = next(line for line in matrix.splitlines() if "sw.driver" in line)
    cells = [c.strip() for c in driver_row.split("|")[2:-1]]  # gpu, h100, b200
    assert [c.split(" ", 1)[0] for c in cells] == ["62/64", "31/32", "31/32"]
    assert all('<span class="fb-flag" title="2 drifted or erroring"' in c for c in cells[:1])
    assert all('class="fb-flag"' in c and ">!</span>" in c for c in cells)  # no emoji font
    rows = page.split("## Targets")[1]
    listed = [line.split("|")[1].strip() for line in rows.splitlines() if line.startswith("| ")]
    assert listed[1:] == NODES  # after the header row
    assert rows.count("2026-12-01 00:10 UTC") == 64
    assert "**1 not ok**" in rows.split("node-17")[1].split("\n")[0]
    assert {"Fleet": "fleet.md"} in book.nav[1]["Facts"]


def test_no_fleet_page_for_a_single_box(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    (root / "facts").mkdir(parents=True)
    (root / "targets.yaml").write_text("targets:\n  here: {transport: local}\n")
    (root / "facts" / "f.yaml").write_text(
        yaml.safe_dump({"facts": [fact("a.b", "env.var", args={"name": "X"})]})
    )
    book = Generator().generate(root)
    assert "fleet.md" not in book.pages


@pytest.mark.browser
def test_fleet_page_reads_at_phone_width(tmp_path: Path) -> None:
    require_chromium()
    from playwright.sync_api import sync_playwright

    root = copy_kb(tmp_path / "site")
    for path in (root / "facts").glob("*.yaml"):
        path.unlink()
    _fleet_kb(root)
    done = mkdocs_build(root, "-q", "-d", str(tmp_path / "out"), timeout=300)
    assert done.returncode == 0, done.stderr
    url = (tmp_path / "out" / "facts" / "fleet.html").as_uri()
    if not (tmp_path / "out" / "facts" / "fleet.html").exists():
        url = (tmp_path / "out" / "fleet.html").as_uri()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 390, "height": 844})
            page.goto(url, wait_until="load")
            assert page.locator("h1").first.inner_text().startswith("Fleet")
            outliers = page.locator("li", has_text="node-17").first
            assert outliers.is_visible() and "node-40" in outliers.inner_text()
            overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 1, f"page is {overflow}px wider than the phone"
            assert page.locator("table").count() == 2
            page.close()
        finally:
            browser.close()
