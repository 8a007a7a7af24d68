"""Stored XSS: a knowledge base full of payloads, a real `mkdocs build`, every page parsed.

Facts, targets, results and runbooks come from many hands and from boxes; the handbook is HTML
colleagues open. Every payload carries the marker `xss` so a leak is easy to read in a failure,
but the checks themselves are structural: no script other than MkDocs/Material's own, no event
handler attribute, no script-capable URL scheme, no embedding element, on any page.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from handbook_support import copy_kb, mkdocs_build

from factbook.commands.cli import run as cli
from factbook.handbook.safehtml import is_safe_url, safe_markdown_links, slug
from factbook.store.results import ResultRecord, write_run

PAYLOADS = [
    "<script>alert('xss1')</script>",
    '"><img src=x onerror=alert("xss2")>',
    "'><svg onload=alert('xss3')>",
    "<iframe src=javascript:alert('xss4')></iframe>",
    "[click](javascript:alert('xss5'))",
    "[click](jav&#x09;ascript:alert('xss6'))",
    "[click](JaVaScRiPt:alert('xss7'))",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgneHNzOCcpPC9zY3JpcHQ+)",
    "[vb](vbscript:msgbox('xss9'))",
    "![img](javascript:alert('xss10'))",
    "<javascript:alert('xss11')>",
    "[ref][xss12]\n\n[xss12]: javascript:alert('xss12')",
    "<a href=\"javascript:alert('xss13')\">x</a>",
    "<object data=javascript:alert('xss14')></object><embed src=x onload=alert('xss14')>",
    "{: onclick=alert('xss15') }",
    "x {#id onmouseover=alert('xss16')}",
    "<div onmouseover=\"alert('xss17')\">raw block</div>",
    "<form action=javascript:alert('xss18')><button formaction=javascript:alert(1)>x</button>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert('xss19')>",
    '<details open ontoggle=alert("xss20")>',
    "`code` <scr<script>ipt>alert('xss21')</script>",
    "&lt;script&gt;alert('xss22')&lt;/script&gt; &#60;script&#62;",
    "<meta http-equiv=refresh content='0;url=javascript:alert(`xss23`)'>",
]
HOSTILE_TARGETS = [
    "box\"><script>alert('xss30')</script>",
    "t onmouseover=alert('xss31')",
    "../../../tmp/xss32",
]


class _NoAliases(yaml.SafeDumper):
    """Repeated payload objects written out each time: factbook refuses YAML aliases."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def _dump(data: object, **options: object) -> str:
    return yaml.dump(data, Dumper=_NoAliases, allow_unicode=True, **options)


def _p(n: int) -> str:
    return PAYLOADS[n % len(PAYLOADS)]


def _hostile_facts() -> list[dict]:
    """One fact per category that renders extra fields, every text field a payload."""
    base_sources = [
        {"seed": _p(0), "message": 1, "quote": _p(1), "note": _p(4)},
        {"run": _p(2), "runbook": _p(3), "step": _p(5), "target": _p(6), "date": _p(7)},
    ]
    facts = []
    specials = {
        "hardware": {},
        "pitfalls": {"symptom": _p(8), "cause": _p(9), "fix": _p(10)},
        "decisions": {"rationale": _p(11)},
        "progress": {"state": "in_progress", "priority": 1, "criterion": _p(12)},
        "benchmarks": {"metric": _p(13), "config": {_p(14): _p(15)}},
        "inventory": {"kind": "file", "path": _p(16), "purpose": _p(17), "machine": "local"},
        "tokenizer": {"token": _p(18), "token_id": 5},
        "software": {},
        "goal": {},
    }
    for n, (category, extra) in enumerate(specials.items()):
        fact = {
            "id": f"xss.{category}.f{n}",
            "category": category,
            "title": _p(n),
            "statement": " ".join(PAYLOADS),
            "value": {_p(n + 1): [_p(n + 2), 5]},
            "unit": _p(n + 3),
            "status": "verified",
            "target": HOSTILE_TARGETS[n % 2],
            "tags": [_p(n + 4), "safe-tag"],
            "sources": base_sources,
            "check": {
                "probe": "env.var",
                "args": {"name": _p(n + 5)},
                "expect": {"eq": _p(n + 6)},
            },
            **extra,
        }
        facts.append(fact)
    return facts


def _hostile_results(root: Path) -> None:
    records = []
    for n, target in enumerate([*HOSTILE_TARGETS, "ssh://u@h#" + _p(1)]):
        for m, fact in enumerate(_hostile_facts()):
            records.append(
                ResultRecord(
                    fact["id"],
                    target,
                    # outcomes stay valid: a payload there makes results/latest.json
                    # unreadable, refused with its line (tests/test_hostile_inputs.py)
                    ["pass", "drift", "error", "skipped"][(n + m) % 4],
                    _p(n + m + 1),
                    observed={_p(m): _p(n)},
                    time="2026-11-29T15:00:01Z",
                    run=_p(n),
                    probe=_p(m + 2),
                )
            )
    write_run(root, "20261129T150000Z-xss", {"targets": HOSTILE_TARGETS}, records)


def _hostile_runbook(root: Path) -> None:
    name = "rb-xss"
    front = {
        "jupytext": {"text_representation": {"extension": ".md", "format_name": "myst"}},
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "factbook": {
            # a title leaves the heading for <title> and the navigation: break out of both
            "title": _p(0) + " </title></a><script>alert('xss50')</script> &lt;b&gt;",
            "target": HOSTILE_TARGETS[0],
            "description": _p(4) + " " + _p(16),
            "facts": [_p(1)],
            "pitfalls": [_p(2)],
        },
    }
    step_meta = "---\nname: \"x onclick=alert('xss40')\"\ntimeout: 5\n---\n"
    text = (
        "---\n"
        + _dump(front)
        + "---\n\n# "
        + _p(3)
        + "\n\n```{code-cell} ipython3\n"
        + step_meta
        + "print(1)\n```\n"
    )
    (root / "runbooks" / f"{name}.md").write_text(text, encoding="utf-8")
    # the same runbook under a hostile file name, and run records with hostile fields
    (root / "runbooks" / "x onclick=alert('xss41').md").write_text(text, encoding="utf-8")
    record_dir = root / "results" / "runbooks" / name / "r1"
    record_dir.mkdir(parents=True)
    record = {
        "run_id": _p(5),
        "status": _p(1),
        "started": _p(6),
        "finished": "",
        "steps": [{"name": "x onclick=alert('xss42')", "status": _p(2), "duration_s": 1}],
    }
    (record_dir / "record.json").write_text(json.dumps(record), encoding="utf-8")
    orphan = root / "results" / "runbooks" / "y onclick=alert('xss43')" / "r2"
    orphan.mkdir(parents=True)
    (orphan / "record.json").write_text(json.dumps(record), encoding="utf-8")


@pytest.fixture(scope="module")
def hostile_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_kb(tmp_path_factory.mktemp("xss") / "kb")
    (root / "facts" / "hostile.yaml").write_text(
        _dump({"facts": _hostile_facts()}, sort_keys=False), encoding="utf-8"
    )
    targets = yaml.safe_load((root / "targets.yaml").read_text(encoding="utf-8"))
    for name in HOSTILE_TARGETS:
        targets["targets"][name] = {"transport": "local", "description": _p(len(name))}
    (root / "targets.yaml").write_text(_dump(targets), encoding="utf-8")
    (root / "milestones.yaml").write_text(
        (root / "milestones.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    _hostile_results(root)
    _hostile_runbook(root)
    return root


@pytest.fixture(scope="module")
def status_doc(hostile_kb: Path) -> str:
    out = hostile_kb / "docs" / "status" / "2026-11-30-status.md"
    assert cli(["--root", str(hostile_kb), "status", "--out", str(out)]) in (0, 1, 2)
    assert out.is_file()
    return out.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def site(hostile_kb: Path, status_doc: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("xss-site")
    proc = mkdocs_build(hostile_kb, "-d", str(site), timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return site


# --- what executable markup is ---------------------------------------------------------

URL_ATTRS = {"href", "src", "action", "formaction", "xlink:href", "poster", "background", "data"}
BANNED_TAGS = {"iframe", "object", "embed", "frame", "frameset", "applet", "base", "meta"}
# Material's own scripts; anything else with a src is foreign.
# MkDocs/Material's own scripts, and the factbook plugin's file:// search shim (a fixed file
# shipped in the package, see handbook/plugin.py)
KNOWN_SCRIPT_SRC = re.compile(
    r"^(/|(\.\./)*)"
    r"(assets/javascripts/[\w./-]+\.js|search/main\.js|assets/factbook-file-worker\.js)$"
)


def _material_inline_scripts() -> list[re.Pattern[str]]:
    """Material's inline scripts, read from its own templates (template holes match a value)."""
    import material

    folder = Path(material.__file__).parent / "templates" / "partials" / "javascripts"
    patterns = []
    for template in folder.glob("*.html"):
        for body in re.findall(r"<script>(.*?)</script>", template.read_text(encoding="utf-8")):
            parts = re.split(r"\{\{.*?\}\}", body)
            patterns.append(re.compile('[^"<>]*'.join(re.escape(p) for p in parts), re.S))
    assert patterns, folder
    return patterns


MATERIAL_INLINE = _material_inline_scripts()


class ExecutableMarkup(HTMLParser):
    """Collects every construct of a page that could run script."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in_script = False
        self._script: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        where = f"<{tag} {attrs}>"
        if tag in BANNED_TAGS and not (tag == "meta" and _harmless_meta(attrs)):
            self.found.append(f"banned element {where}")
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"event handler {where}")
            if name in URL_ATTRS and value is not None and not is_safe_url(value):
                self.found.append(f"unsafe URL {where}")
            if name == "style" and value and re.search(r"expression|javascript|url\(", value, re.I):
                self.found.append(f"script in style {where}")
            if name == "srcdoc":
                self.found.append(f"srcdoc {where}")
        if tag == "script":
            src = dict(attrs).get("src")
            kind = dict(attrs).get("type")
            if src is not None and not KNOWN_SCRIPT_SRC.match(src):
                self.found.append(f"foreign script {where}")
            config = kind == "application/json" and dict(attrs).get("id") == "__config"
            self._in_script = src is None and not config
            self._script = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._in_script:
            body = "".join(self._script)
            if not any(p.fullmatch(body) for p in MATERIAL_INLINE):
                self.found.append(f"inline script not Material's own: {body[:200]!r}")
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self._script.append(data)


def _harmless_meta(attrs: list[tuple[str, str | None]]) -> bool:
    names = {k for k, _ in attrs}
    return "http-equiv" not in names or dict(attrs).get("http-equiv", "").lower() != "refresh"


def executable_markup(page: str) -> list[str]:
    parser = ExecutableMarkup()
    parser.feed(page)
    parser.close()
    return parser.found


# --- the checker itself must catch what it claims to -------------------------------------


@pytest.mark.parametrize(
    "page",
    [
        "<p><script>alert(1)</script></p>",
        '<img src="x" onerror="alert(1)">',
        '<a href="jav&#x09;ascript:alert(1)">x</a>',
        '<a href="  JAVASCRIPT:alert(1)">x</a>',
        '<a href="data:text/html,x">x</a>',
        '<a href="vbscript:x">x</a>',
        "<iframe src=x></iframe>",
        "<svg onload=alert(1)>",
        '<form><button formaction="javascript:alert(1)">x</button></form>',
        '<form action="javascript:alert(1)"></form>',
        '<script src="https://evil.example/x.js"></script>',
        '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    ],
)
def test_the_checker_finds_executable_markup(page: str) -> None:
    assert executable_markup(page)


def test_the_checker_accepts_plain_markup() -> None:
    page = (
        '<p><a href="facts/x.html#a.b">x</a> <a href="https://example.org">e</a> '
        '<a href="mailto:a@b.c">m</a> <code>&lt;script&gt;</code></p>'
        '<svg viewBox="0 0 1 1"><rect class="fb-bar" /></svg>'
        '<script src="assets/javascripts/bundle.123.min.js"></script>'
    )
    assert executable_markup(page) == []


# --- the site --------------------------------------------------------------------------


def test_no_page_of_the_built_site_holds_executable_markup(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 10
    problems = {}
    for page in pages:
        found = executable_markup(page.read_text(encoding="utf-8"))
        if found:
            problems[page.relative_to(site).as_posix()] = found[:5]
    assert problems == {}


def test_the_payloads_reached_the_site_as_text(site: Path) -> None:
    """The payloads were rendered (escaped), not dropped: the test saw real hostile pages."""
    hostile = (site / "facts" / "pitfalls.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(" in hostile
    assert "onerror=alert(" in hostile  # as text
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "xss30" in home or "xss31" in home  # hostile target names shown, escaped


def test_status_document_links_have_safe_schemes(status_doc: str) -> None:
    assert "xss" in status_doc  # the statements reached the document
    import markdown

    rendered = markdown.markdown(
        status_doc, extensions=["attr_list", "md_in_html", "tables", "admonition", "toc"]
    )
    assert executable_markup(rendered) == []


# --- the helpers, on the cases a parser-level test could hide -----------------------------


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        " javascript:alert(1)",
        "JaVaScRiPt:x",
        "jav&#x09;ascript:x",
        "jav\tascript:x",
        "java\nscript:x",
        "&#106;avascript:x",
        "&#x6A;avascript:x",
        "javascript&colon;x",
        "data:text/html,x",
        "vbscript:x",
        "file:///etc/passwd",
        "\x00javascript:x",
    ],
)
def test_unsafe_urls_are_refused(url: str) -> None:
    assert not is_safe_url(url)


@pytest.mark.parametrize(
    "url", ["https://x.org/a?b=c", "http://x", "mailto:a@b.c", "facts/x.md#id", "#a", "../x.html"]
)
def test_safe_urls_pass(url: str) -> None:
    assert is_safe_url(url)


def test_markdown_links_keep_safe_and_drop_unsafe_targets() -> None:
    text = "[a](https://x.org) [b](javascript:alert(1)) ![c](data:x) [d](jav&#x09;ascript:y)"
    out = safe_markdown_links(text)
    assert "[a](https://x.org)" in out
    assert "javascript" not in out.lower().replace("&#x09;", "") and "data:" not in out


@pytest.mark.parametrize(
    "name", ['box"><script>', "a onclick=x", "../../etc", "ünï cödé", "", "a}{#b"]
)
def test_slugs_are_ids(name: str) -> None:
    assert re.fullmatch(r"[a-z0-9][a-z0-9._-]*", slug(name))
