"""Hostile knowledge bases, round 6 (issue 25): what tests/test_hostile_kb.py's corpus and
tests/test_handbook_xss.py did not reach yet. A handbook case is a real `mkdocs build` of a
small knowledge base whose every page is parsed for executable markup (test_handbook_xss's
checker): `factbook docs` exits 0 either way, so only the built HTML tells.
"""

from __future__ import annotations

from pathlib import Path

from handbook_support import mkdocs_build
from test_handbook_xss import executable_markup
from test_hostile_kb import BASE

MKDOCS_YML = (
    "site_name: x\nuse_directory_urls: false\ntheme: {name: material, font: false}\n"
    "plugins: [search, factbook]\n"
)
MILESTONE = "milestones:\n  - {id: '1', title: \"<script>alert('ms')</script>\"}\n"
STATUS_DOC = "---\ntitle: \"<img src=x onerror=alert('sd')>\"\n---\n# H\n"


def test_milestone_and_status_titles_are_text_in_the_built_site(tmp_path: Path) -> None:
    """The home page listed milestones as `**{id}** — {title}` and linked the newest status
    document as `[{title}](uri)` unescaped, and the navigation named each status document by
    its front matter's title: `<script>` there ran on every page of the site."""
    root = tmp_path / "kb"
    files = {
        **BASE,
        "mkdocs.yml": MKDOCS_YML,
        "milestones.yaml": MILESTONE,
        "docs/status/2026-01-01-status.md": STATUS_DOC,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    built = mkdocs_build(root, timeout=120)
    assert built.returncode == 0, built.stderr[-3000:]
    found = {}
    for page in (root / "site").rglob("*.html"):
        hits = executable_markup(page.read_text(encoding="utf-8"))
        if hits:
            found[page.relative_to(root).as_posix()] = hits
    assert not found, found
    home = (root / "site" / "index.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert('ms')" in home  # shown, as text
    assert "onerror=alert('sd')" in home.replace("&#x27;", "'")
