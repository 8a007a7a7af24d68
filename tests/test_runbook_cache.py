"""Parsed runbooks kept on disk (handbook/runbookcache.py): a build parses only runbooks whose
bytes changed, never imports jupytext when none did, and a damaged or hostile cache only
costs a parse. Every test compares with a parse of the same files."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from handbook_support import REPO

from factbook.handbook import sources
from factbook.handbook.runbookcache import RunbookCache
from factbook.knowledge import cachekey


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Runbooks actually parsed during the test (no in-process reuse between loads)."""
    seen: list[str] = []
    real = sources._parse_runbook

    def counting(path: Path, root: Path):
        seen.append(path.name)
        return real(path, root)

    monkeypatch.setattr(sources, "_parse_runbook", counting)
    monkeypatch.setattr(sources, "_PARSED", {})
    monkeypatch.delenv("FACTBOOK_CACHE", raising=False)
    return seen


def _kb(root: Path) -> Path:
    shutil.copytree(REPO / "runbooks", root / "runbooks")
    (root / "facts").mkdir()
    return root


def _load(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[sources.Runbook]:
    monkeypatch.setattr(sources, "_PARSED", {})  # as a new process starts
    return sources.load_runbooks(root)


def _parse(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[sources.Runbook]:
    with monkeypatch.context() as m:
        m.setenv("FACTBOOK_CACHE", "0")
        return _load(root, monkeypatch)


def test_unchanged_runbooks_are_not_parsed_again(
    tmp_path: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _kb(tmp_path / "kb")
    first = _load(root, monkeypatch)
    count = len(parses)
    assert count == len(first) > 2
    assert _load(root, monkeypatch) == first and len(parses) == count
    one = sorted((root / "runbooks").glob("*.md"))[0]
    one.write_text(one.read_text("utf-8").replace("\n# ", "\n# Edited: ", 1), "utf-8")
    gone = sorted((root / "runbooks").glob("*.md"))[-1]
    gone.unlink()
    again = _load(root, monkeypatch)
    assert parses[count:] == [one.name]
    assert again == _parse(root, monkeypatch)
    kept = json.loads(cachekey.unseal(RunbookCache(root).path.read_bytes()))["entries"]
    assert f"runbooks/{gone.name}" not in kept and f"runbooks/{one.name}" in kept


@pytest.mark.parametrize(
    "damage",
    [
        "not json",
        '{"stamp": [1], "entries": {}}',
        "[]",
        "HOSTILE",  # the right stamp, entries of the wrong shapes
    ],
)
def test_a_damaged_cache_costs_a_parse(
    tmp_path: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    root = _kb(tmp_path / "kb")
    first = _load(root, monkeypatch)
    path = RunbookCache(root).path
    if damage == "HOSTILE":
        blob = json.loads(cachekey.unseal(path.read_bytes()))
        for n, name in enumerate(blob["entries"]):
            sha, data = blob["entries"][name]
            bad = [{**data, "steps": "x"}, {**data, "title": 7}, {**data, "runs": [1]}, [sha]]
            blob["entries"][name] = [sha, bad[n % 4]] if n % 4 != 3 else bad[3]
        damage = json.dumps(blob)
    path.write_bytes(cachekey.seal(damage.encode("utf-8")))  # sealed: its shapes are checked
    parses.clear()
    assert _load(root, monkeypatch) == first
    assert len(parses) == len(first)


def test_factbook_cache_0_writes_nothing(
    tmp_path: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _kb(tmp_path / "kb")
    _parse(root, monkeypatch)
    assert not RunbookCache(root).path.exists()


def test_a_new_process_reuses_them_without_importing_jupytext(tmp_path: Path) -> None:
    root = _kb(tmp_path / "kb")
    code = (
        "import pickle, sys; from pathlib import Path; from factbook.handbook import sources; "
        "books = sources.load_runbooks(Path(sys.argv[1])); "
        "sys.stdout.buffer.write(pickle.dumps(('jupytext' in sys.modules, books)))"
    )

    def run(**env: str) -> tuple[bool, list[sources.Runbook]]:
        proc = subprocess.run(
            [sys.executable, "-c", code, str(root)],
            capture_output=True,
            env={**os.environ, **env},
            timeout=120,
            check=True,
        )
        return pickle.loads(proc.stdout)

    imported, parsed = run(FACTBOOK_CACHE="0")
    assert imported
    run()  # writes the cache
    imported, cached = run()
    assert not imported and cached == parsed
