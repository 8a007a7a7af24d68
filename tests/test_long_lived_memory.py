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
from collections.abc import Callable
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
    grown = kept_by_factbook(lambda: [_propose(root, n) for n in range(1, 5)])
    kept = list(kbmodule._PARSED._items)
    assert not [key for key in kept if "factbook-import-" in key], kept
    assert grown < 2 << 20, f"{grown >> 10} KiB kept by 4 proposals"


def kept_by_factbook(work: Callable[[], object]) -> int:
    """Bytes allocated while `work` ran, by a call through factbook's own code, and still
    alive after it: what the process keeps of the work. Allocations of other threads (a
    kernel client's, a server's left by an earlier test of the same pytest worker) pass
    through no factbook frame and are not counted."""
    gc.collect()
    tracemalloc.start(8)
    try:
        work()
        gc.collect()
        snapshot = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    ours = snapshot.filter_traces([tracemalloc.Filter(True, "*/factbook/*", all_frames=True)])
    return sum(stat.size for stat in ours.statistics("filename"))


def test_linting_runbooks_keeps_no_cell_tree(tmp_path: Path) -> None:
    """Lint reads each cell once for all its readers (shared_cells) and lets the trees go
    after each runbook: kept for the process, a cell of 15,000 lines held ~100 MB."""
    from test_hostile_kb import RUNBOOK

    from factbook.knowledge.kb import load_kb
    from factbook.runbooks.lint import lint_runbooks

    root = _kb(tmp_path)
    (root / "runbooks").mkdir()
    book = root / "runbooks" / "rb.md"

    def cell(tp: int) -> str:
        return RUNBOOK.replace(
            "print('hi')", f"a = ['python', '-m', 'sglang.launch_server', '--tp', '{tp}']\n" * 1000
        )

    book.write_text(cell(8))
    kb = load_kb(root, strict=False)
    lint_runbooks(kb)  # imports and caches of a first run
    book.write_text(cell(4))  # a cell never read before
    grown = kept_by_factbook(lambda: lint_runbooks(kb))
    assert grown < 256 << 10, f"{grown >> 10} KiB kept by a runbook lint"
