"""The whole path as a new user takes it (issue 14, last paragraph): build the wheel, install
it with the handbook extra into a fresh venv outside the repository, `factbook init`, lint,
verify, status, `mkdocs build` (the plugin found through its entry point, not a path), open
the built site from disk in Chromium; and a command whose extra is missing says which one.

pip installs with its own configuration (this machine: a local wheel cache and index, else
PyPI). Minutes on a loaded 2-core box, so it is marked slow; it still runs in the suite. The
wheel and both venvs are made once per machine for each content of the tree, pip's version
and configuration (tests/build_cache.py): a fresh clone of the same source reuses them, any
change to src/, pyproject.toml or README.md makes them again, FACTBOOK_TEST_FRESH=1 too.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from build_cache import cached_venv
from helpers import CHROMIUM, REPO, require_chromium

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(900)]


def _env() -> dict[str, str]:
    """No PYTHONPATH, no FACTBOOK_ROOT: only what the venv installed is importable."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FACTBOOK_ROOT")}
    env["NO_MKDOCS_2_WARNING"] = "1"
    return env


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def wheel(factbook_wheel: Path) -> Path:
    """This tree's wheel (conftest.py), the one the venvs below installed."""
    return factbook_wheel


@pytest.fixture(scope="module")
def venv() -> Path:
    """factbook[handbook] from the wheel: a fresh venv, made once per machine for each content
    of the tree (tests/build_cache.py; FACTBOOK_TEST_FRESH=1 makes it again)."""
    return cached_venv("handbook", _env())[0]


@pytest.fixture(scope="module")
def core() -> Path:
    """factbook alone: facts, lint, verify, status."""
    return cached_venv(None, _env())[0]


def test_wheel_to_handbook(venv: Path, tmp_path: Path) -> None:
    bin_ = venv / "bin"
    kb = tmp_path / "our-kb"
    step = _run([str(bin_ / "factbook"), "init", str(kb)], tmp_path)
    assert step.returncode == 0, step.stderr
    inner = kb / "facts"  # commands find the knowledge base upwards, like git
    for argv in (
        [str(bin_ / "factbook"), "lint"],
        [str(bin_ / "verify-facts"), "--target", "local"],
        [str(bin_ / "factbook"), "status"],
        [str(bin_ / "python"), "-m", "factbook", "list"],
    ):
        step = _run(argv, inner)
        assert step.returncode == 0, f"{argv}: {step.stdout}\n{step.stderr}"
    step = _run([str(bin_ / "mkdocs"), "build", "--strict"], kb)
    assert step.returncode == 0, step.stderr
    assert "factbook:" in step.stderr  # the plugin ran (its page count line)
    # the engine came from the wheel, not from this repository
    where = _run([str(bin_ / "python"), "-c", "import factbook; print(factbook.__file__)"], kb)
    assert str(venv) in where.stdout and str(REPO) not in where.stdout
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto((kb / "site" / "index.html").as_uri(), wait_until="load")
        assert "our-kb handbook" in page.title()
        link = page.locator("a[href$='facts/hardware.html']").first
        link.scroll_into_view_if_needed()
        page.goto(link.evaluate("a => a.href"), wait_until="load")  # relative link, from disk
        assert page.url.startswith("file://") and page.url.endswith("/facts/hardware.html")
        assert page.locator("[id='discovered.local.cpu.cores']").count() == 1
        browser.close()


def test_a_missing_extra_is_named(venv: Path, wheel: Path, tmp_path: Path) -> None:
    """The venv has the handbook extra only: `factbook run` needs runbooks."""
    kb = tmp_path / "kb"
    assert (
        _run(
            [str(venv / "bin" / "factbook"), "init", str(kb), "--no-discover"], tmp_path
        ).returncode
        == 0
    )
    step = _run([str(venv / "bin" / "factbook"), "run", "hello", "--yes"], kb)
    assert step.returncode == 2, step.stdout + step.stderr
    assert "needs the 'runbooks' extra" in step.stderr
    # from where this venv installed factbook: the wheel, not an index that lacks it
    assert f"pip install '{wheel}[runbooks]'" in step.stderr, step.stderr
    assert "Traceback" not in step.stderr


def test_the_core_install_lints_and_verifies(core: Path, wheel: Path, tmp_path: Path) -> None:
    """No MkDocs, no Jupyter: init, lint (runbooks skipped, said so), verify, status work;
    `factbook run` names the extra it needs."""
    bin_ = core / "bin"
    listed = _run([str(bin_ / "python"), "-m", "pip", "list", "--format", "freeze"], tmp_path)
    names = {line.split("==")[0].lower() for line in listed.stdout.splitlines()}
    assert {"mkdocs", "nbclient", "jupytext", "torch"}.isdisjoint(names), names
    kb = tmp_path / "kb"
    assert _run([str(bin_ / "factbook"), "init", str(kb)], tmp_path).returncode == 0
    step = _run([str(bin_ / "factbook"), "lint"], kb)
    assert step.returncode == 0, step.stderr
    assert "1 runbook(s) not checked" in step.stderr
    assert f"pip install '{wheel}[runbooks]'" in step.stderr
    for argv in (
        [str(bin_ / "verify-facts"), "--target", "local"],
        [str(bin_ / "factbook"), "status"],
    ):
        step = _run(argv, kb)
        assert step.returncode == 0, f"{argv}: {step.stderr}"
    assert not (bin_ / "mkdocs").exists()
    step = _run([str(bin_ / "factbook"), "run", "hello", "--yes"], kb)
    assert step.returncode == 2, step.stdout + step.stderr
    assert "needs the 'runbooks' extra" in step.stderr and "Traceback" not in step.stderr


def test_each_venv_names_only_itself(venv: Path, core: Path) -> None:
    """Both venvs are copies of a venv holding the dependencies alone (tests/build_cache.py):
    every script's interpreter, activate and pyvenv.cfg name the copy, never the original."""
    for root in (venv, core):
        scripts = [p for p in (root / "bin").iterdir() if p.is_file() and not p.is_symlink()]
        shebangs = {
            p.name: p.read_bytes().split(b"\n", 1)[0].decode()
            for p in scripts
            if p.read_bytes().startswith(b"#!")
        }
        assert {"factbook", "verify-facts", "pip"} <= set(shebangs)
        wrong = {n: s for n, s in shebangs.items() if not s.startswith(f"#!{root}/bin/python")}
        assert wrong == {}
        assert f'VIRTUAL_ENV="{root}"' in (root / "bin" / "activate").read_text()
        assert "/deps-" not in (root / "pyvenv.cfg").read_text()  # 3.11+ names its venv there
