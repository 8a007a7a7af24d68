"""Edits under a real `mkdocs serve`: the rebuild reuses unchanged pages (rebuild.py), and the
served site is still exactly what a fresh build of the edited knowledge base makes: content,
navigation on every page, links and the whole search index."""

from __future__ import annotations

import re
import time
import urllib.request
from pathlib import Path

import yaml
from helpers import fact, local_trio, make_kb

from tests.handbook_support import REPO, Served, edit_fact, mkdocs_build

RUNBOOK = """\
---
jupytext:
  text_representation: {{extension: .md, format_name: myst}}
kernelspec: {{display_name: Python 3, language: python, name: python3}}
factbook:
  title: {title}
  target: local
  description: A runbook whose title is in the navigation.
---

# {title}

```{{code-cell}} ipython3
print("hello")
```
"""
LIVERELOAD = re.compile(rb"<script>\s*var livereload = .*?</script>", re.S)
REUSED = re.compile(r"factbook: (\d+) of (\d+) pages reused")


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read()


def _wait_for(url: str, needle: bytes, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while needle not in _get(url):
        if time.monotonic() > deadline:
            raise AssertionError(f"{needle!r} never reached {url}")
        time.sleep(0.1)


def _served_equals_fresh_build(served: Served, site_url: str, tmp: Path) -> int:
    """Every page and the search index as served == a fresh `mkdocs build` of the same files
    (with serve's site_url); returns how many pages were compared."""
    config = yaml.safe_load((served.root / "mkdocs.yml").read_text(encoding="utf-8"))
    config["site_url"] = site_url
    tmp.mkdir()
    fresh_config = tmp / "mkdocs-fresh.yml"
    config["docs_dir"] = str(served.root / "docs")
    config.setdefault("plugins", [])
    config["plugins"] = [
        p if p != "factbook" else {"factbook": {"root": str(served.root)}}
        for p in config["plugins"]
    ]
    fresh_config.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    site = tmp / "fresh-site"
    proc = mkdocs_build(served.root, "-q", "-f", str(fresh_config), "-d", str(site))
    assert proc.returncode == 0, proc.stderr[-3000:]
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    assert len(pages) > 5
    for rel in [*pages, "search/search_index.json"]:
        got = LIVERELOAD.sub(b"", _get(f"{served.url}/{rel}"))
        assert got == (site / rel).read_bytes(), f"{rel} as served differs from a fresh build"
    return len(pages)


def test_edits_under_serve_rebuild_only_what_changed_and_match_a_fresh_build(
    tmp_path: Path,
) -> None:
    facts = [
        *local_trio(),
        fact("dec.one", "cpu.threads", {"ge": 1}, category="decisions", target="local"),
        fact("pit.one", "cpu.threads", {"ge": 1}, category="pitfalls", target="local"),
    ]
    root = make_kb(tmp_path / "kb", facts)
    (root / "runbooks").mkdir()
    (root / "runbooks" / "hello.md").write_text(RUNBOOK.format(title="Say hello"), "utf-8")
    (root / "docs").mkdir()
    (root / "mkdocs.yml").write_text(
        (REPO / "mkdocs.yml")
        .read_text(encoding="utf-8")
        .replace("  - Getting started: getting-started.md\n", ""),
        encoding="utf-8",
    )
    served = Served(root, tmp_path / "serve.log")
    try:
        served.wait_ready()
        site_url = served.url + "/"

        # a fact's title: its category page, the indexes and the home page change, the rest
        # (runbook, other categories) comes from the previous build
        first = served.builds()
        edit_fact(root, "hw.cpu.threads", title="CPU threads, edited under serve")
        _wait_for(served.url + "/facts/hardware.html", b"CPU threads, edited under serve")
        assert served.wait_builds(first + 1) == first + 1  # its log line, then its figures
        reused = [tuple(map(int, m)) for m in REUSED.findall(served.log())]
        assert reused, served.log()[-3000:]
        hits, total = reused[-1]
        assert 0 < hits < total, served.log()[-3000:]
        index = _get(served.url + "/search/search_index.json").decode("utf-8")
        assert "CPU threads, edited under serve" in index
        assert "Say hello" in index  # a reused page's entries are still indexed
        _served_equals_fresh_build(served, site_url, tmp_path / "one")

        # a runbook's title is in the navigation of every page: no page may keep the old one
        builds = served.builds()
        (root / "runbooks" / "hello.md").write_text(RUNBOOK.format(title="Say goodbye"), "utf-8")
        _wait_for(served.url + "/facts/decisions.html", b"Say goodbye")
        assert served.wait_builds(builds + 1) == builds + 1
        hits, _ = [tuple(map(int, m)) for m in REUSED.findall(served.log())][-1]
        assert hits == 0, "a changed navigation must render every page again"
        _served_equals_fresh_build(served, site_url, tmp_path / "two")
        for rel in ("index.html", "facts/pitfalls.html", "runbook-runs.html"):
            page = _get(f"{served.url}/{rel}")
            assert b"Say goodbye" in page and b"Say hello" not in page, rel
    finally:
        served.stop()
