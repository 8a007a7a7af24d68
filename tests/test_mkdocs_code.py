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


def build(kb: Path, trust: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != TRUST_ENV}
    env["NO_MKDOCS_2_WARNING"] = "1"
    if trust:
        env[TRUST_ENV] = "1"
    return subprocess.run(
        [str(MKDOCS), "build", "-q", "-d", str(kb / "site")],
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
