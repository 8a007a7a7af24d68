"""`factbook init DIR` makes a knowledge base that works at once (issue 14.2): in it, lint,
verify-facts --target local (its checks run and pass here), status and a real `mkdocs build`
through the `factbook` plugin all succeed; the plugin keeps a user's own nav (14.3)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from handbook_support import mkdocs_build
from helpers import cli

from factbook.commands.cli import run


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("init") / "team-kb"
    assert run(["init", str(root), "--name", "Team"]) == 0
    return root


def test_init_writes_the_starter_files(started: Path) -> None:
    for rel in (
        "targets.yaml",
        "milestones.yaml",
        "facts/team.yaml",
        "facts/discovered-local.yaml",
        "runbooks/hello.md",
        "mkdocs.yml",
        ".gitignore",
        ".github/workflows/factbook.yml",
    ):
        assert (started / rel).is_file(), rel
    targets = yaml.safe_load((started / "targets.yaml").read_text())
    assert targets["targets"]["local"] == {
        "transport": "local",
        "description": "the machine factbook runs on",
    }
    text = (started / "targets.yaml").read_text()
    assert "# gpu-box:" in text and "#   jump: bastion" in text  # commented SSH and jump
    config = yaml.safe_load((started / "mkdocs.yml").read_text())
    assert "factbook" in config["plugins"] and "hooks" not in config
    assert config["site_name"] == "Team handbook"
    ci = yaml.safe_load((started / ".github/workflows/factbook.yml").read_text())
    steps = [s.get("run", "") for job in ci["jobs"].values() for s in job["steps"]]
    assert any(s.startswith("factbook lint") for s in steps)
    assert any(s.startswith("verify-facts --target local") for s in steps)


def test_init_refuses_a_non_empty_folder(started: Path) -> None:
    code, _out, err = cli(started, "init", str(started))
    assert code == 2
    assert "exists and is not empty" in err


def test_lint_verify_status_in_the_new_kb(started: Path) -> None:
    code, out, err = cli(started, "lint")
    assert code == 0, out + err
    code, out, err = cli(started, "verify", "--target", "local", "--format", "json")
    assert code == 0, err
    records = json.loads(out)["results"]
    assert len(records) >= 5  # discovered facts about this machine, checked here
    assert {r["outcome"] for r in records} == {"pass"}
    code, out, err = cli(started, "status", "--out", "-")
    assert code == 0, err
    assert out.startswith("# ")
    assert "Run `verify-facts --target NAME` on a box before relying" in out


def _build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return mkdocs_build(root, "--strict", "-d", str(site), timeout=300)


def test_mkdocs_build_in_the_new_kb(started: Path, tmp_path: Path) -> None:
    built = _build(started, tmp_path / "site")
    assert built.returncode == 0, built.stderr
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "Team handbook" in index
    hardware = (tmp_path / "site" / "facts" / "hardware.html").read_text(encoding="utf-8")
    assert "discovered.local.cpu.cores" in hardware


def test_plugin_keeps_the_users_nav(started: Path, tmp_path: Path) -> None:
    config = yaml.safe_load((started / "mkdocs.yml").read_text())
    config["nav"] = [{"About us": "about.md"}, {"Facts": [{"Mine": "https://wiki.invalid/facts"}]}]
    (started / "mkdocs-nav.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    built = mkdocs_build(started, "-f", "mkdocs-nav.yml", "-d", str(tmp_path / "site"), timeout=300)
    (started / "mkdocs-nav.yml").unlink()
    assert built.returncode == 0, built.stderr
    index = (tmp_path / "site" / "about.html").read_text(encoding="utf-8")
    nav = index.split('class="md-nav md-nav--primary"', 1)[1]
    # the user's entries first and kept; the handbook's sections appended, except the
    # "Facts" title the user took
    assert nav.index("About us") < nav.index("Runbooks") < nav.index("Status documents")
    assert "Mine" in nav and "All facts" not in nav
