"""A knowledge base's mkdocs.yml cannot make `mkdocs build` run the knowledge base's code:
the factbook plugin stops the build before MkDocs imports `hooks:` or renders a `custom_dir`
(real MkDocs, real hook files), unless whoever builds sets FACTBOOK_TRUST_MKDOCS_CODE=1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, local_trio, make_kb

from factbook.knowledge.mkdocscode import TRUST_ENV, code_in

MKDOCS = Path(sys.executable).parent / "mkdocs"
CONFIG = """\
site_name: hostile
docs_dir: docs
theme: {name: material, font: false}
plugins: [factbook]
"""


def build(kb: Path, trust: bool, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != TRUST_ENV}
    env["NO_MKDOCS_2_WARNING"] = "1"
    if trust:
        env[TRUST_ENV] = "1"
    return subprocess.run(
        [str(MKDOCS), "build", *(flags or ("-q",)), "-d", str(kb / "site")],
        cwd=kb,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def hooked_kb(tmp_path: Path) -> tuple[Path, Path]:
    kb = make_kb(tmp_path / "kb", local_trio())
    (kb / "docs").mkdir()
    marker = tmp_path / "hook-ran"
    (kb / "hook.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (kb / "mkdocs.yml").write_text(CONFIG + "hooks:\n  - hook.py\n")
    return kb, marker


def test_build_stops_before_the_hook_is_imported(hooked_kb: tuple[Path, Path]) -> None:
    kb, marker = hooked_kb
    refused = build(kb, trust=False)
    assert refused.returncode != 0
    assert "mkdocs.yml:6: hooks: MkDocs imports these Python files" in refused.stderr
    assert TRUST_ENV in refused.stderr
    assert not marker.exists() and not (kb / "site" / "index.html").exists()


def test_whoever_builds_can_trust_the_hook(hooked_kb: tuple[Path, Path]) -> None:
    kb, marker = hooked_kb
    trusted = build(kb, trust=True)
    assert trusted.returncode == 0, trusted.stderr[-2000:]
    assert marker.read_text() == "ran"  # the check, not MkDocs, is what stopped it before
    assert (kb / "site" / "index.html").exists()


def test_custom_dir_is_stopped_before_its_templates_render(tmp_path: Path) -> None:
    kb = make_kb(tmp_path / "kb", local_trio())
    (kb / "docs").mkdir()
    (kb / "overrides").mkdir()
    (kb / "overrides" / "main.html").write_text(
        "{% extends 'base.html' %}{% block content %}"
        f"{{{{ cycler.__init__.__globals__.os.system('touch {tmp_path}/ran') }}}}"
        "{% endblock %}"
    )
    (kb / "mkdocs.yml").write_text(
        CONFIG.replace(
            "theme: {name: material, font: false}",
            "theme:\n  name: material\n  custom_dir: overrides",
        )
    )
    refused = build(kb, trust=False)
    assert refused.returncode != 0 and "theme.custom_dir" in refused.stderr
    assert not (tmp_path / "ran").exists()


def test_shipped_and_starter_configs_run_nothing(tmp_path: Path) -> None:
    assert code_in(REPO / "mkdocs.yml", "mkdocs.yml", root=REPO) == []
    from factbook.commands.cli import run

    assert run(["init", "--no-discover", str(tmp_path / "new")]) == 0
    assert code_in(tmp_path / "new" / "mkdocs.yml", "mkdocs.yml", root=tmp_path / "new") == []


def test_an_inherit_loop_is_named_once(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text("INHERIT: b.yml\nhooks: [h.py]\n")
    (tmp_path / "b.yml").write_text("INHERIT: a.yml\n")
    problems = code_in(tmp_path / "a.yml", "a.yml", root=tmp_path)
    assert [str(p) for p in problems] == [
        "a.yml:2: hooks: MkDocs imports these Python files; review it, then set "
        f"{TRUST_ENV}=1 where you build to allow it"
    ]


def test_templates_and_nested_projects_are_stopped_before_they_run(tmp_path: Path) -> None:
    """`extra_templates` (a plain jinja2.Template) and Material's projects plugin (nested
    mkdocs.yml read with MkDocs' unsafe loader) are refused: neither payload runs."""
    kb = make_kb(tmp_path / "kb", local_trio())
    (kb / "docs").mkdir()
    ran = tmp_path / "ran"
    (kb / "docs" / "x.html").write_text(
        f"{{{{ cycler.__init__.__globals__.os.system('touch {ran}') }}}}"
    )
    (kb / "projects" / "p1" / "docs").mkdir(parents=True)
    (kb / "projects" / "p1" / "docs" / "index.md").write_text("# p\n")
    (kb / "projects" / "p1" / "mkdocs.yml").write_text(
        f"site_name: p1\nextra: !!python/object/apply:os.system ['touch {ran}']\n"
    )
    plugins = "plugins: [factbook, material/projects]\nextra_templates: [x.html]\n"
    (kb / "mkdocs.yml").write_text(CONFIG.replace("plugins: [factbook]\n", plugins))
    refused = build(kb, trust=False)
    assert refused.returncode != 0
    assert "mkdocs.yml:4: plugins: material/projects: builds projects/" in refused.stderr
    assert "mkdocs.yml:5: extra_templates: MkDocs renders these files" in refused.stderr
    assert not ran.exists() and not (kb / "site" / "index.html").exists()


def test_links_out_of_the_knowledge_base_are_not_published(tmp_path: Path) -> None:
    """A docs/ file and a pymdownx.snippets include that are links out of the knowledge base:
    the build goes on, names each on one line, and the site holds nothing of them."""
    secret = "s3cr3t-0f-the-0utside"
    (tmp_path / "shadow").write_text(f"root:{secret}:19000\n")
    kb = make_kb(tmp_path / "kb", local_trio())
    (kb / "docs").mkdir()
    (kb / "docs" / "leak.txt").symlink_to(tmp_path / "shadow")
    (kb / "inc.txt").symlink_to(tmp_path / "shadow")
    (kb / "docs" / "guide.md").write_text('# Guide\n\n--8<-- "inc.txt"\n')
    (kb / "mkdocs.yml").write_text(CONFIG + "markdown_extensions: [pymdownx.snippets]\n")
    built = build(kb, False, "--no-strict")
    assert built.returncode == 0, built.stderr[-2000:]
    said = built.stderr
    assert f"leak.txt resolves to {tmp_path}/shadow, outside the knowledge base" in said
    assert f"snippet inc.txt resolves to {tmp_path}/shadow, outside" in said
    assert (kb / "site" / "guide.html").exists() and not (kb / "site" / "leak.txt").exists()
    assert not any(secret in p.read_text(errors="replace") for p in _files(kb / "site"))


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and p.stat().st_size < (1 << 22)]


def test_vetted_plugins_and_extensions_pass(tmp_path: Path) -> None:
    """The allow-list keeps what a handbook uses: Material's harmless plugins, extensions of
    Markdown and PyMdown, the functions they name, and paths inside the root."""
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: x\ntheme: {name: material}\n"
        "plugins:\n  - search\n  - tags\n  - offline\n  - typeset\n  - meta\n"
        "  - material/privacy: {assets_fetch: false, cache_dir: .cache/privacy}\n"
        "  - blog: {blog_dir: blog}\n  - factbook: {root: .}\n"
        "markdown_extensions:\n  - toc:\n"
        "      slugify: !!python/name:markdown.extensions.toc.slugify_unicode\n"
        "  - pymdownx.emoji:\n      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"
        "      emoji_generator: !!python/name:material.extensions.emoji.to_svg\n"
        "  - pymdownx.snippets:\n      base_path: [docs, !relative $config_dir]\n"
        "      check_paths: true\n"
        "  - pymdownx.superfences\n  - admonition\n  - markdown.extensions.tables:TableExtension\n"
    )
    assert code_in(tmp_path / "mkdocs.yml", "mkdocs.yml", root=tmp_path) == []
