"""The caches inside a knowledge base (.factbook-cache/) are written through a temp file of a
fresh random name (issue 25, class 2: nothing outside the knowledge base is touched).

Both caches used to write `.NAME.<pid>.tmp` with a plain open and rename it: anyone with
write access to a shared knowledge base could plant that name as a link to a file outside
it for the pids a CI container hands out, and the next `factbook lint` wrote the cache's
JSON into the link's target. Now they go through store.atomic (mkstemp, O_EXCL)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from factbook.commands.cli import run
from factbook.handbook.runbookcache import RunbookCache
from factbook.knowledge.kbcache import CACHE_DIR, CLOCK_SLACK_NS, cache_path

PRECIOUS = "precious, outside the knowledge base\n"


def _kb(tmp_path: Path) -> tuple[Path, Path]:
    kb, outside = tmp_path / "kb", tmp_path / "outside"
    (kb / "facts").mkdir(parents=True)
    outside.mkdir()
    (kb / "milestones.yaml").write_text('milestones:\n  - {id: "1", title: first}\n')
    (kb / "targets.yaml").write_text("targets:\n  here: {transport: local}\n")
    (kb / "facts" / "good.yaml").write_text(
        "facts:\n  - id: hw.gpu.count\n    category: hardware\n    title: GPU count\n"
        "    statement: The box has 8 GPUs.\n    value: 8\n    status: assumed\n"
        "    target: here\n    sources: [{seed: a.txt}]\n"
    )
    return kb, outside


def _plant(folder: Path, name: str, victim: Path) -> list[Path]:
    """`.NAME.<pid>.tmp` links to `victim` for this process's pid and those around it."""
    folder.mkdir(exist_ok=True)
    links = []
    for pid in range(max(1, os.getpid() - 50), os.getpid() + 50):
        link = folder / f".{name}.{pid}.tmp"
        link.symlink_to(victim)
        links.append(link)
    return links


def test_lint_never_writes_its_cache_through_a_planted_temp_link(tmp_path: Path) -> None:
    kb, outside = _kb(tmp_path)
    victim = outside / "victim"
    victim.write_text(PRECIOUS)
    _plant(kb / CACHE_DIR, cache_path(kb).name, victim)
    time.sleep(CLOCK_SLACK_NS / 1e9 + 0.02)  # files this old are cached (kbcache.store)
    assert run(["--root", str(kb), "lint"]) == 0
    assert victim.read_text() == PRECIOUS
    cache = cache_path(kb)
    assert cache.is_file() and not cache.is_symlink()


def test_the_runbook_cache_is_never_written_through_a_planted_temp_link(tmp_path: Path) -> None:
    kb, outside = _kb(tmp_path)
    victim = outside / "victim"
    victim.write_text(PRECIOUS)
    _plant(kb / CACHE_DIR, RunbookCache(kb).path.name, victim)
    cache = RunbookCache(kb)
    cache.changed = True
    cache.save()
    assert victim.read_text() == PRECIOUS
    written = cache.path
    assert written.is_file() and not written.is_symlink()
