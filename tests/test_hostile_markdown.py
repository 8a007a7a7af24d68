"""Markdown from a hostile knowledge base renders in linear time, without a traceback (issue 25).

Python-Markdown rebuilds a block's text for each inline match and recurses per level of
nesting; Python's HTMLParser, which it runs over the page first, rescans from every
tag-like `<` it cannot close. Statements, status documents, runbook prose and values reach
the handbook as Markdown, so each payload below once cost `mkdocs build` seconds to minutes
or a RecursionError (the figures are each payload's before the fix, on this machine). Every
one is rendered here with the shipped site's Markdown extensions under a time limit, and a
real `mkdocs build` of a knowledge base holding them must succeed.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import markdown
import pytest
import yaml
from handbook_support import mkdocs_build

from factbook.commands.cli import run as cli
from factbook.handbook.markup import PARTS_SHOWN, capped, code, md, prose
from factbook.handbook.nesting import MAX_INDENT, MAX_NEST, bounded, code_span
from factbook.handbook.safehtml import code_spans, safe_markdown

REPO = Path(__file__).resolve().parents[1]
SITE_EXTENSIONS = [
    next(iter(e)) if isinstance(e, dict) else e
    for e in yaml.safe_load((REPO / "mkdocs.yml").read_text())["markdown_extensions"]
]

# name -> payload: inline (one block)
INLINE = {
    "star run": "*" * 2000 + "a" + "*" * 2000,  # toc's walk: RecursionError in mkdocs build
    "star words": "*a " * 1000 + "b" + " a*" * 1000,  # RecursionError (6 kB)
    "underscore words": "_a " * 1000 + "b" + " a_" * 1000,  # RecursionError
    "strong words": "**a " * 1000 + "b" + " a**" * 1000,  # RecursionError
    "strong em words": "***a " * 1000 + "b" + " a***" * 1000,  # RecursionError
    "emphasis across code": "*a `x` " * 1000 + "b" + " a*" * 1000,  # RecursionError
    "links": "[a](b) " * 4000,  # 28 kB: 31.5 s
    "tags": "<a " * 20000,  # 60 kB: 12 s at 200 kB
    "emphasis pairs": "a*b* " * 12000,  # 60 kB: 9 s at 200 kB
    "code spans": "`a` " * 15000,  # 60 kB: 2.7 s at 200 kB
    "escapes": "\\* " * 20000,  # 60 kB: 5 s at 200 kB
    "tags in code": "`" + "<a " * 8000 + "x`",  # HTMLParser: 1.2 s at 12 kB, 18 s at 48 kB
}
# name -> payload: blocks (several lines)
BLOCKS = {
    "nested admonitions": "".join("    " * i + "!!! note\n" for i in range(450)),  # Recursion
    "nested quote lines": "".join(">" * i + " x\n" for i in range(600)),  # 1,500: 9 s
    "quote list mix": "".join("> - " * i + "x\n" for i in range(0, 800, 10)),  # 0.9 s, 31 kB
    "nested lists": "".join("  " * i + "- x\n" for i in range(700)),  # 3,000: 23 s
}


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Fail (not hang) when the block runs past `seconds`."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def render(text: str) -> str:
    """The page Python-Markdown makes of `text` with the shipped site's extensions."""
    return markdown.markdown("# Page\n\n" + text, extensions=[*SITE_EXTENSIONS, "toc"])


@pytest.mark.parametrize("name", [*INLINE, *BLOCKS])
def test_safe_markdown_renders_each_payload_quickly(name: str) -> None:
    payload = INLINE.get(name) or BLOCKS[name]
    text = "- " + safe_markdown(payload) if name in INLINE else safe_markdown(payload)
    started = time.perf_counter()
    with time_limit(20):
        html = render(text)
    assert time.perf_counter() - started < 10, name
    assert html.startswith("<h1")


@pytest.mark.parametrize("shown", [md, code, prose], ids=["md", "code", "prose"])
@pytest.mark.parametrize("name", [n for n in INLINE if n != "tags in code"])
def test_escaped_values_render_quickly_in_a_table(shown: Callable[[str], str], name: str) -> None:
    """Values and statements in the fact pages' tables (markup.md/code/prose): thousands of
    escapes or entities in one cell were as many inline matches."""
    cell = shown(INLINE[name])
    started = time.perf_counter()
    with time_limit(20):
        html = render(f"| Value |\n|---|\n| {cell} |\n")
    assert time.perf_counter() - started < 10, name
    assert "<td>" in html


def test_ordinary_documents_pass_unchanged() -> None:
    """The bounds are far from prose as people write it: every dump, seed, runbook and page
    shipped here passes through `bounded` byte for byte."""
    paths = [
        *sorted((REPO / "tests" / "data" / "dumps").glob("*.md")),
        *sorted((REPO / "runbooks").glob("*.md")),
        *sorted((REPO / "docs").glob("*.md")),
        *sorted((REPO / "seeds").glob("*.md")),
    ]
    assert len(paths) > 20
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert bounded(text, code_spans(text)) == text, path


def test_a_heavy_block_is_code_line_by_line_and_keeps_its_structure() -> None:
    heavy = "*a " * 150 + "b" + " a*" * 150
    out = bounded(f"- {heavy}\n  more *text*\n\nplain *prose*\n", [])
    lines = out.split("\n")
    assert lines[0] == "- " + code_span(heavy)
    assert lines[1] == "  `more *text*`"  # the same block: a list item's continuation
    assert lines[3] == "plain *prose*"  # another block: untouched


def test_a_heavy_table_row_is_code_cell_by_cell() -> None:
    row = "| " + "[a](b) " * 120 + " | x |"
    out = bounded(row, [])
    assert out == f"| {code_span('[a](b) ' * 120)} | `x` |"
    assert "<td><code>x</code></td>" in render(f"| A | B |\n|---|---|\n{out}\n")


def test_code_spans_and_fences_are_left_as_typed() -> None:
    fenced = "```\n" + "*a " * 500 + "\n```\n"
    assert bounded(fenced, code_spans(fenced)) == fenced
    spans = "`" + "*" * 10 + "` and `**` " * 3
    assert bounded(spans, code_spans(spans)) == spans


def test_code_span_fences_past_the_backticks_inside() -> None:
    assert code_span("a ``` b") == "````a ``` b````"
    assert code_span("`edge`") == "`` `edge` ``"
    assert "<code>`edge`</code>" in render(code_span("`edge`"))
    assert code_span("<script>") == "`\u2039script>`"  # no tag for HTMLParser to scan from


def test_indentation_and_nesting_markers_are_bounded() -> None:
    deep = " " * 1000 + "- x"
    assert bounded(deep, []) == " " * MAX_INDENT + "- x"
    line = "> " * 50 + "x"
    out = bounded(line, [])
    assert out.startswith("> " * MAX_NEST)
    assert out.count(">") == 50 and "`" in out  # the markers past the bound, as code


def test_mkdocs_build_of_a_hostile_knowledge_base(tmp_path: Path) -> None:
    """A real build: the statements (status document and hand-over page included) and a
    runbook holding the payloads. Before the fix: a RecursionError traceback, exit 1."""
    root = tmp_path / "kb"
    assert cli(["init", str(root)]) == 0
    facts = [
        {
            "id": f"hw.hostile-{i}",
            "category": "hardware",
            "title": name,
            "statement": INLINE[name],
            "status": "assumed",
            "sources": [{"seed": "hostile.md", "quote": INLINE[name][:2000]}],
        }
        for i, name in enumerate(["star run", "star words", "links", "tags", "escapes"])
    ]
    (root / "facts" / "hostile.yaml").write_text(yaml.safe_dump({"facts": facts}, width=10**9))
    hello = (root / "runbooks" / "hello.md").read_text()  # the template's: one step
    head, _, steps = hello.partition("```{code-cell}")
    parts = [INLINE["strong words"], BLOCKS["nested admonitions"], BLOCKS["quote list mix"]]
    prose = "\n\n".join(parts)
    (root / "runbooks" / "hello.md").write_text(f"{head}{prose}\n\n```{{code-cell}}{steps}")
    assert cli(["--root", str(root), "lint"]) == 0
    started = time.perf_counter()
    proc = mkdocs_build(root, "-d", str(tmp_path / "site"), timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert time.perf_counter() - started < 60
    pages = "\n".join(p.read_text() for p in (tmp_path / "site").rglob("*.html"))
    assert "[a](b) [a](b)" in pages  # the links statement, shown as text
    assert 'box.run(["uname"' in pages.replace("&quot;", '"')  # the runbook's step


def test_front_matter_is_data_and_left_as_it_is() -> None:
    """A budgeted status document opens with YAML front matter, which MkDocs reads as data:
    however heavy a value in it, it is not turned into code (that would end the YAML)."""
    heavy = "*a " * 300
    text = f'---\ntitle: "{heavy}"\n---\n# H\n\n{heavy}\n'
    lines = bounded(text, code_spans(text)).split("\n")
    assert lines[:3] == ["---", f'title: "{heavy}"', "---"]
    assert lines[5] == code_span(heavy)


def test_a_heavy_status_line_keeps_its_import_hint_outside_the_code(tmp_path: Path) -> None:
    """`factbook status` writes each item's import hint after the document is made safe, in
    a placeholder at the end of its line: a heavy line shown as code keeps it outside the
    code span, so the hint stays a comment and `import` reads the item back as unchanged."""
    root = tmp_path / "kb"
    (root / "facts").mkdir(parents=True)
    (root / "targets.yaml").write_text("targets:\n  here: {transport: local}\n")
    (root / "milestones.yaml").write_text("milestones:\n  - {id: '1', title: first}\n")
    fact = {
        "id": "hw.x",
        "category": "hardware",
        "title": "x",
        "statement": INLINE["star words"],
        "status": "assumed",
        "since": "1",
        "sources": [{"seed": "a"}],
    }
    (root / "facts" / "a.yaml").write_text(yaml.safe_dump({"facts": [fact]}, width=10**9))
    out = tmp_path / "status.md"
    assert cli(["--root", str(root), "status", "--as-of", "1", "--out", str(out)]) == 0
    [line] = [x for x in out.read_text().splitlines() if "hw.x" in x]
    assert line.endswith('` <!-- fb {"id": "hw.x", "since": "1"} -->'), line[-80:]
    assert line.startswith("- `")
    assert cli(["--root", str(root), "import", str(out), "--milestone", "1", "--quiet"]) == 0


def test_lists_a_fact_card_shows_are_capped_and_the_tag_cloud_is_split(tmp_path: Path) -> None:
    """One table cell is one text for Python-Markdown: a fact's 3,000 tags, the 1,000 facts
    linking to one fact and a history of 300 entries each made one cell of thousands of
    links (12 facts of 10,000 tags: `mkdocs build` still running after 10 minutes). A cell
    shows PARTS_SHOWN of them and counts the rest; the tag index keeps every tag, in
    paragraphs of PARAGRAPH_PARTS."""
    root = tmp_path / "kb"
    assert cli(["init", str(root)]) == 0
    milestones = [{"id": f"m{i}", "title": f"m{i}"} for i in range(300)]
    (root / "milestones.yaml").write_text(yaml.safe_dump({"milestones": milestones}))
    hub = {
        "id": "hw.hub",
        "category": "hardware",
        "title": "hub",
        "statement": "the hub",
        "status": "assumed",
        "tags": [f"t{i}" for i in range(3000)],
        "history": [{"at": f"m{i}", "status": "assumed"} for i in range(300)],
        "sources": [{"seed": "a"}],
    }
    spokes = [
        {
            "id": f"hw.s{i}",
            "category": "hardware",
            "title": f"s{i}",
            "statement": f"spoke {i}",
            "status": "assumed",
            "links": {"see_also": ["hw.hub"]},
            "sources": [{"seed": "a"}],
        }
        for i in range(1000)
    ]
    (root / "facts" / "hub.yaml").write_text(yaml.safe_dump({"facts": [hub, *spokes]}))
    assert cli(["--root", str(root), "lint"]) == 0
    started = time.perf_counter()
    proc = mkdocs_build(root, "-d", str(tmp_path / "site"), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert time.perf_counter() - started < 120
    card = "".join(p.read_text() for p in (tmp_path / "site" / "facts").glob("hardware*.html"))
    assert f"… {3000 - PARTS_SHOWN:,} more" in card  # the tags
    assert f"… {1000 - PARTS_SHOWN:,} more" in card  # linked from
    assert f"… {300 - PARTS_SHOWN:,} earlier" in card  # the history, its last entries
    tags = (tmp_path / "site" / "tags.html").read_text()
    assert tags.count('class="fb-tag"') >= 3000  # every tag in the cloud


def test_capped_counts_what_it_leaves_out() -> None:
    parts = [str(n) for n in range(PARTS_SHOWN + 5)]
    assert capped(parts[:3], ", ") == "0, 1, 2"
    assert capped(parts, ", ").endswith(f"{PARTS_SHOWN - 1}, … 5 more")
    assert capped(parts, " → ", last=True).startswith("… 5 earlier → 5 → 6")
