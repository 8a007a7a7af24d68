"""A handbook people can carry and trust (issue 14 item 4), on a real `mkdocs build`.

A copy of the shipped knowledge base gets a small runbook, really run twice by `factbook run`
(one failed run, one that records a value), and results on two targets; mkdocs.yml names a
repository. Then: every fact links to its YAML line, the tag index lists every tag, each
runbook has its page with prose, steps, runs and the executed notebook, and in Chromium with
nothing but DejaVu fonts every mark is readable text and topology diagrams share one scale.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import markdown
import pytest
import yaml
from handbook_support import copy_kb, mkdocs_build
from helpers import require, require_chromium

from factbook.dumps.status.items import MARKS
from factbook.handbook import Generator
from factbook.handbook.editlinks import EditLinks, check_template, from_repo
from factbook.handbook.marks import STATUS_MARKS, status_marks
from factbook.handbook.special import link_caption
from factbook.knowledge.kb import load_kb
from factbook.knowledge.model import Fact
from factbook.store.results import ResultRecord, write_run

REPO_URL = "https://github.com/example-org/kimi-kb"
EDIT_URI = "edit/main/docs/"
LINE_URL = REPO_URL + "/blob/main/{path}#L{line}"  # what repo_url + edit_uri imply
FACTBOOK = str(Path(sys.executable).with_name("factbook"))

DEMO_FACTS = """\
facts:
  - id: bench.demo.speed
    category: benchmarks
    title: Demo speed
    statement: How fast the demo runbook's measuring step runs.
    value: 1.0
    unit: tok/s
    metric: demo speed
    status: assumed
    target: local
    tags: [demo, GPU, gpu]
    sources: [{note: handbook test}]
"""
DEMO_RUNBOOK = """\
---
jupytext:
  text_representation: {extension: .md, format_name: myst}
kernelspec: {display_name: Python 3, language: python, name: python3}
factbook:
  title: Demo the runbook page
  target: local
  description: A runbook written for the handbook test.
  facts: [bench.demo.speed]
---

# Demo the runbook page

Prose before the first step: *why* this runbook exists.

## Preparing

```{code-cell} ipython3
---
name: prepare
timeout: 30
---
import os
print("prepared")
```

Measuring writes the figure back.

```{code-cell} ipython3
---
name: measure
timeout: 45
destructive: true
requires: [hw.gpu.count]
records: [bench.demo.speed]
---
from factbook.runbooks.api import record
if os.environ.get("DEMO_FAIL"):
    raise RuntimeError("failing on purpose")
record("bench.demo.speed", 42.5, unit="tok/s")
```

Closing words after the last step.
"""


def _run(root: Path, *args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(
        [FACTBOOK, "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **(env or {})},
        check=False,
    )


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_kb(tmp_path_factory.mktemp("trust") / "kb")
    (root / "facts" / "demo.yaml").write_text(DEMO_FACTS, encoding="utf-8")
    (root / "runbooks" / "handbook-demo.md").write_text(DEMO_RUNBOOK, encoding="utf-8")
    # the measuring step requires hw.gpu.count, a fact of the 8-GPU box: --skip-requires
    # runs it here anyway (the page still lists what the step needs)
    _run(root, "run", "handbook-demo", "--yes", "--skip-requires", env={"DEMO_FAIL": "1"})
    _run(root, "run", "handbook-demo", "--yes", "--skip-requires")
    kb = load_kb(root)
    checked = [f for f in kb.facts.values() if f.check is not None and f.category == "hardware"]
    outcomes = ["pass", "drift", "error", "skipped"]
    records = [
        ResultRecord(
            f.id, target, outcomes[(n + k) % 4], "test", observed=8, time="2026-11-29T15:00:00Z"
        )
        for n, f in enumerate(checked[:8])
        for k, target in enumerate(("llm-two", "h200"))
    ]
    write_run(root, "20261129T150000Z-trust", {"targets": ["llm-two", "h200"]}, records)
    targets = yaml.safe_load((root / "targets.yaml").read_text(encoding="utf-8"))
    targets["groups"] = {"gpu-boxes": {"targets": ["llm-two", "h200"]}}  # a fleet page matrix
    (root / "targets.yaml").write_text(yaml.safe_dump(targets, sort_keys=False), encoding="utf-8")
    config = yaml.safe_load((root / "mkdocs.yml").read_text(encoding="utf-8"))
    config.update(repo_url=REPO_URL, edit_uri=EDIT_URI)
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def site(kb: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("trust-site")
    proc = mkdocs_build(kb, "--strict", "-d", str(out), timeout=400)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def _page(site: Path, uri: str) -> str:
    return (site / uri).read_text(encoding="utf-8")


def _edit_hrefs(page: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'<a class="fb-edit" href="([^"]+)"', page)]


# ---- edit links -------------------------------------------------------------------------


def test_the_demo_runs_happened(kb: Path) -> None:
    records = sorted((kb / "results/runbooks/handbook-demo").glob("*/record.json"))
    statuses = [json.loads(p.read_text())["status"] for p in records]
    assert sorted(statuses) == ["failed", "ok"], statuses


def test_every_fact_links_to_its_yaml_line(kb: Path, site: Path) -> None:
    facts = load_kb(kb).facts.values()
    for category in {f.category for f in facts}:
        page = _page(site, f"facts/{category}.html")
        expected = {
            LINE_URL.format(path=f.file, line=f.line) for f in facts if f.category == category
        }
        assert set(_edit_hrefs(page)) == expected, category
    every = {LINE_URL.format(path=f.file, line=f.line) for f in facts}
    assert set(_edit_hrefs(_page(site, "facts/index.html"))) == every
    assert set(_edit_hrefs(_page(site, "tags.html"))) == {
        LINE_URL.format(path=f.file, line=f.line) for f in facts if f.tags
    }
    count = load_kb(kb).facts["hw.gpu.count"]
    line = (kb / count.file).read_text(encoding="utf-8").splitlines()[count.line - 1]
    assert "id: hw.gpu.count" in line  # the link's line is the fact's first line


def test_without_a_repository_the_location_is_plain_text(kb: Path) -> None:
    page = Generator().generate(kb).pages["facts/hardware.md"]
    fact = load_kb(kb).facts["hw.gpu.count"]
    assert f"<code>{fact.file}:{fact.line}</code>" in page
    assert "fb-edit" not in page and "http" not in page.split("{#hw.gpu.count}")[1][:400]


def test_edit_links_follow_repo_url_and_edit_uri(tmp_path: Path) -> None:
    docs, kb = tmp_path / "docs", tmp_path / "kb"
    assert from_repo(REPO_URL, EDIT_URI, docs_dir=docs, kb_root=tmp_path) == EditLinks(LINE_URL)
    sub = from_repo(REPO_URL, EDIT_URI, docs_dir=docs, kb_root=kb)
    assert sub is not None and sub.url("facts/a b.yaml", 7) == (
        REPO_URL + "/blob/main/kb/facts/a%20b.yaml#L7"
    )
    gitlab = from_repo(
        "https://gitlab.com/g/p", "-/edit/dev/docs/", docs_dir=docs, kb_root=tmp_path
    )
    assert gitlab == EditLinks("https://gitlab.com/g/p/-/blob/dev/{path}#L{line}")
    absolute = from_repo(
        REPO_URL, "https://git.example/x/src/main/docs/", docs_dir=docs, kb_root=tmp_path
    )
    assert absolute is None  # outside the repository repo_url names: no invented URL
    assert from_repo(None, EDIT_URI, docs_dir=docs, kb_root=tmp_path) is None
    assert from_repo(REPO_URL, "", docs_dir=docs, kb_root=tmp_path) is None
    climbing = from_repo(REPO_URL, "edit/main/docs/", docs_dir=docs, kb_root=tmp_path.parent.parent)
    assert climbing is None


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("https://x.example/blob/main/facts.yaml", "has no {path}"),
        ("https://x.example/{path}#L{lines}", "unknown placeholder(s) {lines}"),
        ("javascript:alert(1)//{path}", "must be an http(s) URL"),
        ('https://x.example/{path}" onclick="x', "must be an http(s) URL"),
        ("facts/{path}", "must be an http(s) URL"),
    ],
)
def test_a_bad_edit_url_is_refused_with_its_reason(template: str, reason: str) -> None:
    from factbook.errors import UsageError

    with pytest.raises(UsageError, match=re.escape(reason)):
        check_template(template)


def test_a_bad_edit_url_fails_the_build_with_its_reason(kb: Path, tmp_path: Path) -> None:
    config = yaml.safe_load((kb / "mkdocs.yml").read_text(encoding="utf-8"))
    config["plugins"] = ["search", {"factbook": {"edit_url": "https://x.example/edit"}}]
    bad = kb / "mkdocs-bad-edit.yml"
    bad.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    proc = mkdocs_build(kb, "-f", str(bad), "-d", str(tmp_path / "site"), timeout=240)
    assert proc.returncode == 1
    assert "factbook: edit_url 'https://x.example/edit' has no {path}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_factbook_docs_takes_an_edit_url(
    kb: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from factbook.commands.cli import run as cli

    out = tmp_path / "md"
    assert cli(["--root", str(kb), "docs", "--out", str(out), "--edit-url", "https://x/e"]) == 2
    assert "--edit-url 'https://x/e' has no {path}" in capsys.readouterr().err
    template = "https://git.example/kb/src/{path}?line={line}"
    assert cli(["--root", str(kb), "docs", "--out", str(out), "--edit-url", template]) == 0
    fact = load_kb(kb).facts["hw.gpu.count"]
    href = template.format(path=fact.file, line=fact.line)
    assert f'href="{html.escape(href)}"' in (out / "facts/hardware.md").read_text("utf-8")


# ---- tags -------------------------------------------------------------------------------


def test_the_tag_index_lists_every_tag_with_its_facts(kb: Path, site: Path) -> None:
    facts = load_kb(kb).facts.values()
    page = _page(site, "tags.html")
    ids = set(re.findall(r'<h2 id="([^"]+)"', page))
    for tag in {t for f in facts for t in f.tags}:
        heading = re.search(
            r'<h2 id="(tag-[^"]+)">' + re.escape(html.escape(tag, quote=False)) + "<", page
        )
        assert heading is not None, tag
        section = page[heading.end() :].split("<h2 ", 1)[0]
        for fact in (f for f in facts if tag in f.tags):
            assert f'href="facts/{fact.category}.html#{fact.id}"' in section, (tag, fact.id)
    assert {"tag-gpu", "tag-gpu-2"} <= ids  # `GPU` and `gpu` are two tags, two anchors
    hardware = _page(site, "facts/hardware.html")
    links = set(re.findall(r'href="\.\./tags\.html#([^"]+)"', hardware))
    assert links and links <= ids
    assert 'href="tags.html"' in _page(site, "index.html")  # in the navigation


def test_hostile_tags_are_text_and_distinct_anchors(tmp_path: Path) -> None:
    root = copy_kb(tmp_path / "kb")
    hostile = ["<script>alert('t')</script>", "a|b", "[x](javascript:y)", "{#id onclick=z}"]
    (root / "facts" / "tags.yaml").write_text(
        yaml.safe_dump(
            {
                "facts": [
                    {
                        "id": "goal.tagged",
                        "category": "goal",
                        "title": "Tagged",
                        "statement": "tags from many hands",
                        "status": "assumed",
                        "tags": hostile,
                        "sources": [{"note": "test"}],
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    page = Generator().generate(root).pages["tags.md"]
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "](javascript:" not in page.replace("\\](javascript:", "")
    anchors = re.findall(r"\{#(tag-[^}]*)\}", page)
    assert len(anchors) == len(set(anchors)) and all(
        re.fullmatch(r"tag-[a-z0-9._-]+", a) for a in anchors
    )
    assert len(anchors) == len({t for f in load_kb(root).facts.values() for t in f.tags})


# ---- runbook pages ----------------------------------------------------------------------


def test_each_runbook_has_a_page_with_prose_steps_runs_and_notebooks(kb: Path, site: Path) -> None:
    page = _page(site, "runbooks/handbook-demo.html")
    assert (
        "<em>why</em> this runbook exists" in page and "Closing words after the last step" in page
    )
    headings = re.findall(r"<h(\d)[^>]*>Demo the runbook page<", page)
    assert headings == ["1"]  # the prose's own title heading is not repeated
    assert re.search(r"<h3[^>]*>Preparing", page)  # the prose's `##`, beside the steps
    prepare = page.index('id="step-prepare"')
    measure = page.index('id="step-measure"')
    assert page.index("Measuring writes the figure back") in range(prepare, measure)
    step = page[measure:]
    assert "timeout 45 s" in step and "fb-destructive" in step
    assert 'href="../facts/hardware.html#hw.gpu.count"' in step  # needs
    assert 'href="../facts/benchmarks.html#bench.demo.speed"' in step  # records
    assert "raise RuntimeError(&quot;failing on purpose&quot;)" in step or (
        'raise RuntimeError("failing on purpose")' in step
    )
    runs = page[page.index('id="runs"') : page.index('id="steps"')]
    assert ">failed<" in runs and ">ok<" in runs
    assert len(re.findall(r"<td>\d+\.\d s</td>", runs)) == 2  # both runs' durations
    assert "42.5" in runs  # the value the ok run recorded
    notebooks = re.findall(r'href="(handbook-demo/[^"]+\.ipynb)"', runs)
    assert len(notebooks) == 2
    for href in notebooks:
        notebook = json.loads((site / "runbooks" / href).read_text(encoding="utf-8"))
        outputs = [o for c in notebook["cells"] for o in c.get("outputs", [])]
        assert any("prepared" in "".join(o.get("text", "")) for o in outputs)
    assert re.search(r"<td>\d+\.\d s</td>", page[page.index('id="step-measure"') :]) is None
    overview = _page(site, "runbook-runs.html")
    assert (
        'href="runbooks/handbook-demo.html"' in overview
        and 'id="runbook-handbook-demo"' in overview
    )
    assert 'href="runbooks/handbook-demo.html"' in _page(site, "index.html")  # in the nav


def test_runbook_prose_fences_are_shown_exactly_and_unclosed_ones_stay_prose(
    tmp_path: Path,
) -> None:
    """A closed fence of the prose reads as typed (`2>&1`, `<script>` as text) in a built page,
    whatever extensions the site has; an unclosed fence is prose and its tags stay text."""
    from factbook.handbook.runbook_view import prose_block

    text = (
        "# T\n\nRun it:\n\n```bash\npython -m x 2>&1 | grep '<script>' # fbcode\n```\n\n"
        "~~~~\n``` not a close\n<b>kept</b>\n~~~~\n\n```\n<script>alert('open')</script>\n"
    )
    out = prose_block(text, "T")
    page = markdown.markdown(out)
    pres = re.findall(r"<pre[^>]*><code>(.*?)</code></pre>", page, re.S)
    assert [html.unescape(p) for p in pres] == [
        "python -m x 2>&1 | grep '<script>' # fbcode",
        "``` not a close\n<b>kept</b>",
    ]
    assert "<script>" not in page and "&lt;script&gt;alert('open')" in page


def test_notebooks_past_the_copy_budget_are_named_not_copied(kb: Path) -> None:
    from factbook.handbook.runbook_view import runbook_context, runbook_pages
    from factbook.handbook.sources import load_runbooks
    from factbook.handbook.views import ViewBuilder
    from factbook.store.results import load_latest

    books = [b for b in load_runbooks(kb) if b.name == "handbook-demo"]
    newest = books[0].runs[0].notebook
    assert newest is not None
    pages = runbook_pages(books, budget=newest.stat().st_size)  # room for one notebook
    assert list(pages[0].notebooks) == [books[0].runs[0].id]
    runs = runbook_context(pages[0], ViewBuilder(load_kb(kb), load_latest(kb)))["runs"]
    older = books[0].runs[1]
    where = f"results/runbooks/handbook-demo/{older.id}/executed.ipynb"
    assert f"not copied (over 8 MiB, or 64 MiB in all): <code>{where}</code>" in runs


# ---- marks and diagrams -----------------------------------------------------------------


def test_status_document_marks_become_words_outside_code() -> None:
    text = "- ✅ ok *(msg 1)*\n- ⚠️ off\n- ❌ bad `✅ kept` and ◻\n\n```\n✅ fenced\n```\n"
    out = status_marks(text)
    assert "`✅ kept`" in out and "```\n✅ fenced\n```" in out
    assert out.count('class="fb-badge fb-pass"') == 1 and ">drifted<" in out
    assert ">error<" in out and ">not checked<" in out
    assert "⚠" not in out.split("`")[0] and "\ufe0f" not in out
    glyphs = {m for m in MARKS.values() if not m.isascii()}  # `~~refuted~~` is Markdown
    assert glyphs and glyphs <= set(STATUS_MARKS)  # every glyph `factbook status` writes


def test_the_interconnect_caption_shows_values_not_titles(site: Path) -> None:
    page = _page(site, "facts/hardware.html")
    captions = re.findall(r'<svg class="fb-topology".*?</svg>', page, re.S)
    assert len(captions) >= 2
    llm_two = next(c for c in captions if ">GPU 7<" in c)
    assert "no NVLink · PCIe Gen5" in llm_two and "PCIe generation" not in llm_two


def _fact(**kw: Any) -> Fact:
    base = {"id": "x", "category": "hardware", "title": "T", "statement": "s", "status": "assumed"}
    return Fact(**{**base, "sources": [], "file": "f.yaml", "line": 1, **kw})


def test_link_captions() -> None:
    assert (
        link_caption(_fact(value=False, tags=["nvlink", "pcie"], title="No NVLink")) == "no NVLink"
    )
    assert link_caption(_fact(value=True, tags=["nvlink"])) == "NVLink"
    assert link_caption(_fact(value=5, tags=["pcie"], title="PCIe generation")) == "PCIe Gen5"
    assert link_caption(_fact(value="Gen4", tags=["pcie"])) == "PCIe Gen4"
    assert link_caption(_fact(value="NVSwitch", title="Fabric")) == "Fabric: NVSwitch"
    assert link_caption(_fact(value=None, tags=["pcie"])) == ""


# Characters the base fonts (DejaVu, Liberation) carry: Latin-1, general punctuation (dashes,
# quotes, ellipsis, bullet), arrows and box drawing. No emoji, no dingbats.
def _allowed(ch: str) -> bool:
    o = ord(ch)
    return o < 0x250 or 0x2010 <= o <= 0x2027 or 0x2190 <= o <= 0x2193 or 0x2500 <= o <= 0x257F


EMOJI = re.compile("[\u2600-\u27bf\u2b00-\u2bff\ufe0f\U0001f000-\U0001faff]|[\u25a0-\u25ff]")


def _base_fonts() -> Path | None:
    for folder in ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/truetype/liberation"):
        if Path(folder).is_dir():
            return Path(folder)
    return None


def _fontconfig(tmp: Path, fonts: Path) -> Path:
    """A fontconfig that knows one font folder: a machine without any emoji font."""
    conf = tmp / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n'
        f"  <dir>{fonts}</dir>\n  <cachedir>{tmp / 'fc-cache'}</cachedir>\n</fontconfig>\n",
        encoding="utf-8",
    )
    return conf


def _has_glyph(conf: Path, ch: str) -> bool:
    proc = subprocess.run(
        ["fc-list", f":charset={ord(ch):x}", "family"],
        env={**os.environ, "FONTCONFIG_FILE": str(conf)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    return bool(proc.stdout.strip())


MARK_PAGES = [
    "index.html",
    "facts/hardware.html",
    "facts/index.html",
    "tags.html",
    "fleet.html",
    "runbook-runs.html",
    "runbooks/handbook-demo.html",
    "runbooks/gpu-cleanup.html",
    "status/status-4504.html",
]


@pytest.mark.browser
def test_marks_read_without_an_emoji_font_and_diagrams_share_a_scale(
    site: Path, tmp_path: Path
) -> None:
    chromium = require_chromium()
    fonts = _base_fonts()
    require(
        None
        if fonts is not None
        else "DejaVu or Liberation fonts (Debian's chromium pulls them in)"
    )
    from playwright.sync_api import sync_playwright

    conf = _fontconfig(tmp_path, fonts)
    shots = Path(os.environ.get("FACTBOOK_SCREENSHOTS") or tmp_path)
    seen_chars: set[str] = set()
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium,
            args=["--no-sandbox", "--disable-gpu"],
            env={**os.environ, "FONTCONFIG_FILE": str(conf)},
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for uri in MARK_PAGES:
                page.goto((site / uri).as_uri())
                marks = page.eval_on_selector_all(
                    ".fb-badge, .fb-flag",
                    """els => els.map(e => { const r = e.getBoundingClientRect();
                        const s = getComputedStyle(e);
                        return {text: e.innerText, w: r.width, h: r.height,
                                shown: s.visibility === 'visible' && s.display !== 'none'}; })""",
                )
                assert marks or uri == "tags.html", uri  # the tag index lists links only
                for mark in marks:
                    assert mark["text"].strip() and mark["shown"], (uri, mark)
                    assert mark["w"] > 4 and mark["h"] > 4, (uri, mark)
                    bad = [c for c in mark["text"] if not _allowed(c)]
                    assert not bad, (uri, mark["text"])
                    seen_chars.update(c for c in mark["text"] if ord(c) > 0x7E)
                text = page.inner_text("article")
                assert not EMOJI.findall(text), (uri, sorted(set(EMOJI.findall(text))))
                name = uri.replace("/", "-").replace(".html", ".png")
                page.screenshot(path=str(shots / f"no-emoji-{name}"), full_page=False)
            status = page.goto((site / "status/status-4504.html").as_uri())
            assert status is not None
            pills = page.eval_on_selector_all(".fb-badge.fb-pass", "els => els.length")
            assert pills >= 300  # the document's ✅ marks, each a worded pill

            page.goto((site / "facts/hardware.html").as_uri())
            boxes = page.eval_on_selector_all(
                "svg.fb-topology",
                """els => els.map(e => ({w: e.getBoundingClientRect().width,
                    vb: e.viewBox.baseVal.width,
                    column: e.closest('article').getBoundingClientRect().width}))""",
            )
            page.locator("svg.fb-topology").first.scroll_into_view_if_needed()
            page.screenshot(path=str(shots / "topology.png"), full_page=False)
        finally:
            browser.close()
    assert all(_has_glyph(conf, c) for c in seen_chars), sorted(seen_chars)
    assert len(boxes) >= 2, boxes
    small = min(boxes, key=lambda b: b["vb"])
    large = max(boxes, key=lambda b: b["vb"])
    assert small["vb"] < large["vb"]
    # one viewBox unit is one pixel in both: the one-GPU box is not stretched
    assert small["w"] / small["vb"] == pytest.approx(large["w"] / large["vb"], rel=0.05)
    assert small["w"] < 0.6 * small["column"], small
