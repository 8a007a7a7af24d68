"""The handbook generator and the MkDocs build, on copies of the shipped knowledge base."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from pathlib import Path

import markdown
import pytest
import yaml
from handbook_support import REPO, copy_kb, edit_fact, mkdocs_build
from helpers import local_trio, make_kb

from factbook.commands.cli import run as cli
from factbook.handbook import Generator, write_tree
from factbook.handbook.charts import numa_diagram
from factbook.handbook.markup import code, expect_text, md, prose
from factbook.knowledge.kb import load_kb
from factbook.knowledge.schema import CATEGORIES
from factbook.store.results import ResultRecord, write_run

EXTENSIONS = ["attr_list", "md_in_html", "tables", "admonition", "toc"]


@pytest.fixture
def kb_root(tmp_path: Path) -> Path:
    return copy_kb(tmp_path / "kb")


def html_of(text: str) -> str:
    return markdown.markdown(text, extensions=EXTENSIONS)


def test_every_shipped_fact_has_one_anchor_on_its_category_page() -> None:
    kb = load_kb(REPO)
    pages = Generator().generate(REPO, docs_dir=REPO / "docs").pages
    assert {f"facts/{c}.md" for c in CATEGORIES} <= set(pages)
    for fact in kb.facts.values():
        page = pages[f"facts/{fact.category}.md"]
        assert page.count("{#" + fact.id + "}") == 1, fact.id
    page_html = html_of(pages["facts/hardware.md"])
    assert 'id="hw.gpu.count"' in page_html


def test_home_counts_results_per_target(kb_root: Path) -> None:
    kb = load_kb(kb_root)
    checked = [
        f
        for f in kb.facts.values()
        if f.check and f.check_target() == "llm-two" and kb.visible(f, None)  # holds now
    ]
    passed, drifted, errored = checked[0], checked[1], checked[2]
    write_run(
        kb_root,
        "20261129T150000Z-test",
        {"targets": ["llm-two"]},
        [
            ResultRecord(
                passed.id, "llm-two", "pass", "ok", observed=8, time="2026-11-29T15:00:01Z"
            ),
            ResultRecord(
                drifted.id,
                "llm-two",
                "drift",
                "expected eq 8, observed 7",
                observed=7,
                time="2026-11-29T15:00:02Z",
            ),
            ResultRecord(
                errored.id, "llm-two", "error", "probe crashed: boom", time="2026-11-29T15:00:03Z"
            ),
        ],
    )
    handbook = Generator().generate(kb_root)
    home = handbook.pages["index.md"]
    never = len(checked) - 3
    row = re.search(
        r"^\| llm-two \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (.+) \|$", home, re.M
    )
    assert row is not None, home
    assert row.groups() == ("1", "1", "1", "0", str(never), "2026-11-29 15:00 UTC")
    assert drifted.id in home and errored.id in home  # "needs attention"
    page = handbook.pages[f"facts/{drifted.category}.md"]
    block = page[page.index("{#" + drifted.id + "}") :]
    block = block[: block.index("\n### ")] if "\n### " in block else block
    assert "drifted on llm-two" in block
    assert "expected <code>" in block and "observed <code>7</code>" in block
    passed_page = handbook.pages[f"facts/{passed.category}.md"]
    assert "verified 2026-11-29 15:00 UTC on llm-two" in passed_page
    assert "error on llm-two" in handbook.pages[f"facts/{errored.category}.md"]


def test_badges_cover_every_kind(kb_root: Path) -> None:
    kb = load_kb(kb_root)
    pages = Generator().generate(kb_root).pages
    text = "\n".join(pages.values())
    assert "fb-never" in text  # checks never run in a fresh copy
    assert "fb-recorded" in text  # verified per its seed message, no check
    if any(f.status == "refuted" for f in kb.facts.values()):
        assert "fb-refuted" in text
    assert "fb-past" in text or all(f.until is None for f in kb.facts.values())


def test_one_changed_fact_rerenders_only_its_pages(kb_root: Path) -> None:
    generator = Generator()
    first = generator.generate(kb_root)
    assert len(first.rendered) == len(first.pages)
    again = generator.generate(kb_root)
    assert again.rendered == []
    assert again.pages == first.pages
    edit_fact(kb_root, "hw.gpu.count", title="GPU count (edited)")
    changed = generator.generate(kb_root)
    # its card, the id index and the tag index show its title; the hand-over dump (the newest
    # milestone's within 2,300 tokens) is chosen from every fact, so any edit may change it
    own = {"facts/hardware.md", "facts/index.md", "tags.md"}
    assert own <= set(changed.rendered) <= own | {"status-handover.md"}
    assert "GPU count (edited) {#hw.gpu.count}" in changed.pages["facts/hardware.md"]


def test_write_tree_writes_only_changes_and_removes_stale(kb_root: Path, tmp_path: Path) -> None:
    generator, out = Generator(), tmp_path / "out"
    written = write_tree(generator.generate(kb_root), out)
    assert "facts/hardware.md" in written and "assets/factbook.css" in written
    stamp = (out / "facts/pitfalls.md").stat().st_mtime_ns
    edit_fact(kb_root, "hw.gpu.count", title="GPU count (edited)")
    written = write_tree(generator.generate(kb_root), out)
    own = ["facts/hardware.md", "facts/index.md", "tags.md"]
    assert [p for p in written if p != "status-handover.md"] == own  # the dump: see above
    assert (out / "facts/pitfalls.md").stat().st_mtime_ns == stamp
    (out / ".factbook-pages.json").write_text(json.dumps(["old.md"]), encoding="utf-8")
    (out / "old.md").write_text("stale", encoding="utf-8")
    write_tree(generator.generate(kb_root), out)
    assert not (out / "old.md").exists()


def test_text_from_yaml_is_shown_literally() -> None:
    text = html_of(md("layers.0.* and midlayer.* | <think> [x](y) _a_ {#z}"))
    assert "<em>" not in text and "<a" not in text
    assert "layers.0.* and midlayer.* | &lt;think&gt; [x](y) _a_ {#z}" in text
    cell = html_of("| a |\n|---|\n| " + code("x|y*z*") + " |")
    assert "<em>" not in cell and cell.count("<td>") == 1
    assert "<code>x|y*z*</code>" in html.unescape(cell)
    assert "<code>nvidia-smi topo -m</code>" in html_of(prose("run `nvidia-smi topo -m` now"))


def test_runbooks_and_status_documents_are_listed(kb_root: Path) -> None:
    (kb_root / "runbooks").mkdir(exist_ok=True)
    (kb_root / "runbooks" / "probe-box.md").write_text(
        "---\njupytext:\n  text_representation: {extension: .md, format_name: myst}\n"
        "kernelspec: {display_name: Python 3, language: python, name: python3}\n"
        "factbook:\n  target: llm-two\n  description: Look at the box.\n---\n\n# Probe the box\n"
        "\n```{code-cell} ipython3\n---\nname: gpus\ntimeout: 30\nrequires: [hw.gpu.count]\n---\n"
        "print('nvidia-smi')\n```\n\n```{code-cell} ipython3\n---\nname: wipe\n"
        "destructive: true\n---\nprint('rm')\n```\n",
        encoding="utf-8",
    )
    run_dir = kb_root / "results/runbooks/probe-box/20261129T151000.000000Z-llm-two"
    run_dir.mkdir(parents=True)
    (run_dir / "record.json").write_text(
        json.dumps(
            {
                "runbook": "probe-box",
                "run_id": run_dir.name,
                "status": "failed",
                "started": "2026-11-29T15:10:00Z",
                "finished": "2026-11-29T15:10:09Z",
                "steps": [
                    {"name": "gpus", "status": "ok", "duration_s": 1.25},
                    {"name": "wipe", "status": "failed", "duration_s": 0.5},
                ],
            }
        ),
        encoding="utf-8",
    )
    status = kb_root / "docs" / "status"
    status.mkdir(parents=True, exist_ok=True)
    for old in status.glob("*.md"):
        old.unlink()
    (status / "status-3157.md").write_text("# Old\n", encoding="utf-8")
    (status / "status-4504.md").write_text("# Newer\n", encoding="utf-8")
    (status / "2026-11-29-status.md").write_text("# Now\n", encoding="utf-8")
    handbook = Generator().generate(kb_root, docs_dir=kb_root / "docs")
    books = handbook.pages["runbook-runs.md"]
    assert "Probe the box" in books and "{#runbook-probe-box}" in books
    assert "2 step(s), 1 destructive" in books and "(runbooks/probe-box.md)" in books
    assert "2026-11-29 15:10 UTC" in books and "1 failed, 1 ok" in books and "9.0 s" in books
    book = handbook.pages["runbooks/probe-box.md"]
    assert "### 1. gpus {#step-gpus}" in book and "(1.2 s)" in book
    assert '<span class="fb-badge fb-destructive"' in book.split("{#step-wipe}")[1]
    assert "**Needs:** [`hw.gpu.count`](../facts/hardware.md#hw.gpu.count)" in book
    listing = handbook.pages["status-history.md"]
    order = [
        listing.index(f"(status/{n}.md)")
        for n in ("2026-11-29-status", "status-4504", "status-3157")
    ]
    assert order == sorted(order)
    status_nav = next(e["Status documents"] for e in handbook.nav if "Status documents" in e)
    assert [next(iter(e.values())) for e in status_nav][-3:] == [
        "status/2026-11-29-status.md",
        "status/status-4504.md",
        "status/status-3157.md",
    ]


def test_benchmarks_chart_has_a_bar_per_numeric_figure(kb_root: Path) -> None:
    kb = load_kb(kb_root)
    numeric = [
        f
        for f in kb.facts.values()
        if f.category == "benchmarks"
        and isinstance(f.value, (int, float))
        and not isinstance(f.value, bool)
    ]
    if not numeric:
        pytest.skip("the shipped knowledge base has no numeric benchmark yet")
    page = Generator().generate(kb_root).pages["facts/benchmarks.md"]
    assert page.count('<rect class="fb-bar ') == len(numeric)
    assert "<svg" in page and "\n\n" not in page[page.index("<svg") : page.index("</svg>")]


def test_mkdocs_build_strict_from_shipped_kb(kb_root: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    proc = mkdocs_build(kb_root, "--strict", "-d", str(site), timeout=240)
    assert proc.returncode == 0, proc.stderr
    hardware = (site / "facts/hardware.html").read_text(encoding="utf-8")
    assert 'id="hw.gpu.count"' in hardware and "fb-badge" in hardware
    assert (site / "assets/factbook.css").is_file()
    assert "assets/factbook.css" in hardware
    index = json.loads((site / "search/search_index.json").read_text(encoding="utf-8"))
    locations = {d["location"] for d in index["docs"]}
    assert "facts/hardware.html#hw.gpu.count" in locations
    assert not (kb_root / "docs" / "index.md").exists()  # pages stay in memory
    # the pre-rendered indexes (prerender.py): fragments in, links resolved as MkDocs does
    every = "".join(p.read_text(encoding="utf-8") for p in site.rglob("*.html"))
    assert "factbook:html" not in every
    all_facts = (site / "facts/index.html").read_text(encoding="utf-8")
    assert '<a href="hardware.html#hw.gpu.count"><code>hw.gpu.count</code></a>' in all_facts
    assert 'href="facts/hardware.html#hw.gpu.count"' in (site / "tags.html").read_text("utf-8")
    # the two indexes only repeat what the category pages hold: left out of search (their
    # indexing was a third of a rebuild under serve), every fact still found on its own page
    pages = {loc.split("#")[0] for loc in locations}
    assert "facts/index.html" not in pages and "tags.html" not in pages
    shipped = load_kb(kb_root, strict=False)
    anchors = {loc.split("#")[1] for loc in locations if "#" in loc}
    assert set(shipped.facts) <= anchors


def test_docs_command_writes_a_complete_docs_dir(
    kb_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "handbook"
    assert cli(["--root", str(kb_root), "docs", "--out", str(out)]) == 0
    first = capsys.readouterr().out
    assert (out / "index.md").is_file() and (out / "fact-format.md").is_file()
    assert cli(["--root", str(kb_root), "docs", "--out", str(out)]) == 0
    assert "0 file(s) written" in capsys.readouterr().out and "0 file(s)" not in first
    config = {
        "site_name": "plain",
        "docs_dir": str(out),
        "site_dir": str(tmp_path / "site"),
        "theme": {"name": "material"},
        "markdown_extensions": EXTENSIONS,
    }
    (tmp_path / "plain.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    proc = mkdocs_build(tmp_path, "-f", str(tmp_path / "plain.yml"), timeout=240)
    assert proc.returncode == 0, proc.stderr  # plain Markdown: no hooks needed to render it
    assert (tmp_path / "site/facts/pitfalls/index.html").is_file()


def test_lint_problems_show_on_home_and_fail_strict(kb_root: Path, tmp_path: Path) -> None:
    edit_fact(kb_root, "hw.gpu.count", links={"see_also": ["no.such.fact"]})
    handbook = Generator().generate(kb_root)
    assert any("no.such.fact" in p for p in handbook.lint_problems)
    assert "lint problem(s) in the knowledge base" in handbook.pages["index.md"]
    assert "no.such.fact" in handbook.pages["index.md"]
    proc = mkdocs_build(kb_root, "--strict", "-d", str(tmp_path / "site"), timeout=240)
    assert proc.returncode == 1 and "no.such.fact" in proc.stderr


def test_a_generator_failure_becomes_a_page_not_a_stuck_server(
    kb_root: Path, tmp_path: Path
) -> None:
    shutil.rmtree(kb_root / "facts")  # the loader refuses a folder without facts/
    proc = mkdocs_build(kb_root, "-d", str(tmp_path / "site"), timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert "could not be generated" in proc.stderr
    home = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "The handbook could not be generated" in home and "no facts/ folder" in home


def test_expectations_read_as_sentences() -> None:
    assert expect_text({"each": {"contains": "RTX PRO 6000"}}) == "each contains RTX PRO 6000"
    assert expect_text({"path": "nvlink", "eq": False}) == "nvlink: eq false"
    assert expect_text({"version": ">=2.11,<2.12"}) == "version >=2.11,<2.12"
    assert expect_text({"any": [{"eq": 5}, {"eq": "5"}]}) == "any of (eq 5; eq 5)"


def test_numa_diagram_draws_each_gpu_in_its_node() -> None:
    svg = numa_diagram([0, 0, 0, 0, 1, 1, 1, 1], "No NVLink · PCIe Gen5")
    assert svg.count('class="fb-numa"') == 2 and svg.count('class="fb-gpu"') == 8
    node1 = svg.index("NUMA node 1")
    assert svg.index(">GPU 3<") < node1 < svg.index(">GPU 4<")
    assert "No NVLink · PCIe Gen5" in svg and "\n" not in svg


def test_the_hand_over_page_is_a_function_of_the_files_not_the_clock(tmp_path: Path) -> None:
    """Without milestones the dump is of 'now': dated by the last edit of the fact files, so a
    page served after an edit and a fresh build minutes later are the same bytes."""
    root = make_kb(tmp_path / "kb", local_trio())
    stamp = 1614834360  # 2021-03-04 05:06 UTC
    os.utime(root / "facts" / "facts.yaml", (stamp, stamp))
    page = Generator().generate(root).pages["status-handover.md"]
    assert 'generated: "2021-03-04 05:06 UTC"' in page
    assert "Status as of 2021-03-04" in page
    assert Generator().generate(root).pages["status-handover.md"] == page
    os.utime(root / "facts" / "facts.yaml", (stamp + 86400, stamp + 86400))
    assert (
        'generated: "2021-03-05 05:06 UTC"'
        in Generator().generate(root).pages["status-handover.md"]
    )


def test_a_page_past_the_sandbox_bound_is_refused_in_one_line(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A category of ~20,000 facts makes a page past the output the sandbox allows (16 MiB
    of text): the command says which page, and exits 2, instead of a traceback. The bound
    is lowered here so that the shipped facts reach it."""
    from factbook.errors import InputError
    from factbook.handbook import sandbox

    monkeypatch.setattr(sandbox, "MAX_OUTPUT", 20_000)
    with pytest.raises(
        InputError,
        match=r"handbook page \S+\.md: the document grew beyond 20000 characters; not generated",
    ):
        Generator().generate(kb_root)


def test_a_status_document_past_the_bound_asks_for_a_budget(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same bound on `factbook status`: a knowledge base that large needs --budget."""
    from factbook.handbook import sandbox

    monkeypatch.setattr(sandbox, "MAX_OUTPUT", 20_000)
    assert cli(["--root", str(kb_root), "status", "--out", "-"]) == 2
    said = capsys.readouterr().err
    assert "grew beyond 20000 characters; a knowledge base this large needs --budget" in said
    assert cli(["--root", str(kb_root), "status", "--budget", "3000", "--out", "-"]) == 0
