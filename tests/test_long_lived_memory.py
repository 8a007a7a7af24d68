"""A long-lived process (`factbook mcp`, `mkdocs serve`, `factbook serve`) does not grow
with the work it is asked to do again and again.

Every proposal over MCP is checked by applying it to a scratch copy of the knowledge base
under a new temporary folder and linting that copy; the in-process parse memo
(knowledge.parsememo) kept each copy's files under their never-seen-again paths: ~4 MB of
memory per proposal, up to its 64 MiB-of-text bound (over a gigabyte of parses)."""

from __future__ import annotations

import gc
import shutil
import tracemalloc
from pathlib import Path

from helpers import REPO

from factbook.dumps.capture.review import NewFact, submit
from factbook.knowledge import kb as kbmodule


def _kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    for part in ("facts", "checks"):
        shutil.copytree(REPO / part, root / part)
    for name in ("milestones.yaml", "targets.yaml"):
        shutil.copy(REPO / name, root / name)
    return root


def _propose(root: Path, n: int) -> None:
    fact = {
        "id": f"sw.memory-{n}",
        "category": "software",
        "title": f"memory {n}",
        "statement": f"memory {n} holds",
        "status": "assumed",
        "sources": [{"note": "a test", "date": "2026-12-02"}],
    }
    done = submit(root, NewFact(fact), origin="mcp", reason="a test", write_facts=False)
    assert done.pid, done.summary


def test_proposals_keep_no_parse_of_their_scratch_copies(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    _propose(root, 0)  # the real knowledge base's files are parsed and kept once
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for n in range(1, 5):
            _propose(root, n)
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    kept = list(kbmodule._PARSED._items)
    assert not [key for key in kept if "factbook-import-" in key], kept
    assert after - before < 2 << 20, f"{(after - before) >> 10} KiB kept by 4 proposals"
