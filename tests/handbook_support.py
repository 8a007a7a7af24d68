"""Helpers shared by the handbook and browser tests (no tests here).

Tests never touch the repository's files: they copy the shipped knowledge base into a temp
folder and write results, runbooks and status documents there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from helpers import free_port

REPO = Path(__file__).resolve().parents[1]
PLUGIN_ENTRY = "factbook = factbook.handbook.plugin:FactbookPlugin"
KB_PARTS = ("facts", "milestones.yaml", "targets.yaml", "checks", "runbooks", "docs")


def copy_kb(dest: Path) -> Path:
    """The shipped knowledge base and docs under `dest`, with an mkdocs.yml that works there."""
    dest.mkdir(parents=True, exist_ok=True)
    for part in KB_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.is_file():
            shutil.copy2(src, dest / part)
    (dest / "docs").mkdir(exist_ok=True)
    shutil.copy2(REPO / "mkdocs.yml", dest / "mkdocs.yml")  # `plugins: [factbook]`: no paths
    return dest


def plugin_entry_point_dir() -> Path | None:
    """A folder to put on PYTHONPATH when the installed factbook's metadata predates the
    `mkdocs.plugins` entry point (an editable install made from an older pyproject.toml):
    a dist-info declaring only that entry point. None when the installed one has it; the
    wheel test (test_wheel_path) always checks the real entry point."""
    from importlib.metadata import entry_points

    if any(ep.name == "factbook" for ep in entry_points(group="mkdocs.plugins")):
        return None
    shim = REPO / ".factbook-cache" / "plugin-entry-point"
    info = shim / "factbook_plugin_entry_point-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: factbook-plugin-entry-point\nVersion: 0\n",
        encoding="utf-8",
    )
    (info / "entry_points.txt").write_text(f"[mkdocs.plugins]\n{PLUGIN_ENTRY}\n", encoding="utf-8")
    return shim


def mkdocs_env() -> dict[str, str]:
    env = dict(os.environ)
    env["NO_MKDOCS_2_WARNING"] = "1"
    env.pop("FACTBOOK_ROOT", None)
    shim = plugin_entry_point_dir()
    if shim is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(shim), env.get("PYTHONPATH")) if p)
    return env


def mkdocs_bin() -> str:
    return str(Path(sys.executable).with_name("mkdocs"))


def mkdocs_build(root: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """`mkdocs build ARGS` run in `root`, the plugin importable, output captured as text."""
    return subprocess.run(
        [mkdocs_bin(), "build", *args],
        cwd=root,
        env=mkdocs_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class Served:
    """`mkdocs serve` on a free port in `root`; its log is kept for assertions."""

    def __init__(self, root: Path, log: Path) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        self._log = log.open("wb")
        self.proc = subprocess.Popen(
            [mkdocs_bin(), "serve", "-a", f"127.0.0.1:{self.port}"],
            cwd=root,
            env=mkdocs_env(),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mkdocs serve exited:\n{self.log()}")
            try:
                with urllib.request.urlopen(self.url + "/", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise TimeoutError(f"mkdocs serve not ready after {timeout} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def builds(self) -> int:
        """How many times the site was built so far (the first build included): the first
        build's "Documentation built in", then a "Reloading browsers" after each rebuild.
        Not the count of "Documentation built in": MkDocs' DuplicateFilter drops that line
        when a rebuild takes as long as an earlier one, to the hundredth of a second."""
        log = self.log()
        return ("Documentation built in" in log) + log.count("Reloading browsers")

    def wait_builds(self, at_least: int, timeout: float = 60) -> int:
        """builds(), once it is `at_least`: MkDocs logs a build after writing its pages, so a
        page can show an edit before the log says the build is done."""
        deadline = time.monotonic() + timeout
        while self.builds() < at_least and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.builds()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()


def edit_fact(root: Path, fact_id: str, **changes: Any) -> Path:
    """Change keys of one fact in place, in whichever facts/*.yaml file holds it."""
    for path in sorted((root / "facts").rglob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for fact in data.get("facts") or []:
            if fact.get("id") == fact_id:
                fact.update(changes)
                path.write_text(
                    yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8"
                )
                return path
    raise KeyError(fact_id)


def search_and_open_fact(page: Any, page_path: str, *, timeout: float) -> str:
    """Type into Material's search until a result deep-linking into `page_path` shows, follow
    it, and return the anchor reached. A query typed before the search worker has built its
    index is dropped (tens of seconds on a loaded 2-core box), so it is re-typed, changed,
    until `timeout`; typed key by key because the theme listens to keyup."""
    box = page.locator("input.md-search__input")
    result = page.locator(f".md-search-result__item a[href*='{page_path}'][href*='#']").first
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        box.click()
        box.fill("")
        box.type(("NUMA", "NUMA node")[attempt % 2])
        attempt += 1
        try:
            result.wait_for(state="attached", timeout=5_000)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
    href = result.get_attribute("href") or ""
    anchor = href.split("#", 1)[1]
    result.click()  # search results deep-link to the fact's anchor
    page.wait_for_url(f"**#{anchor}")
    return anchor
