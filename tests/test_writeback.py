"""In-place fact edits: only the edited spans change; concurrent writers lose nothing."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest
import yaml

from factbook.knowledge.kb import load_kb
from factbook.store.writeback import WritebackError, append_facts, update_fact

FACT_FILE = """\
# yaml-language-server: $schema=../schema/facts.schema.json
# Benchmarks of the tuned server.   (a comment that must survive)
facts:
  # --- single stream ---------------------------------------------------------
  - id: bench.single
    category: benchmarks
    title: Single-stream decode   # trailing comment
    statement: >-
      Single-stream decode reached 90.0 tok/s
      after NCCL tuning.
    value: 90.0          # tok/s, measured twice
    unit: tok/s
    status: assumed
    metric: decode_tok_s
    sources:
      - {seed: 003.txt, message: 3478, quote: "90.0 tok/s"}

  - id: bench.batch
    category: benchmarks
    title: Batch decode
    statement: |
      Batch of 8 reached 400 tok/s.
    status: assumed
    metric: decode_tok_s
    sources: [{seed: 003.txt, message: 3478}]
    # a comment between facts
"""

TARGETS = "targets:\n  local: {transport: local}\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "bench.yaml").write_text(FACT_FILE)
    (tmp_path / "targets.yaml").write_text(TARGETS)
    return tmp_path


def _lines_changed(before: str, after: str) -> list[tuple[str, str]]:
    import difflib

    diff = difflib.ndiff(before.splitlines(), after.splitlines())
    return sorted((d[0], d[2:]) for d in diff if d[0] in "+-")


def test_value_and_status_change_in_place(root: Path) -> None:
    path = update_fact(root, "bench.single", value=92.5, status="verified")
    after = path.read_text()
    assert _lines_changed(FACT_FILE, after) == sorted(
        [
            ("-", "    value: 90.0          # tok/s, measured twice"),
            ("-", "    status: assumed"),
            ("+", "    value: 92.5          # tok/s, measured twice"),
            ("+", "    status: verified"),
        ]
    )
    kb = load_kb(root, strict=False)
    assert kb.get("bench.single").value == 92.5
    assert kb.get("bench.single").statement.startswith("Single-stream decode reached 90.0")


def test_add_source_and_new_fields_as_whole_lines(root: Path) -> None:
    update_fact(
        root,
        "bench.single",
        add_source={"run": "20261129T1510Z-h200", "date": "2026-11-29", "step": "bench"},
        set_fields={"accept_len": 2.1},
    )
    update_fact(root, "bench.batch", value=410, add_source={"run": "r2", "date": "2026-11-29"})
    after = (root / "facts" / "bench.yaml").read_text()
    assert _lines_changed(FACT_FILE, after) == sorted(
        [
            ("+", "    accept_len: 2.1"),
            ("+", "      - {run: 20261129T1510Z-h200, date: '2026-11-29', step: bench}"),
            ("+", "    value: 410"),
            ("-", "    sources: [{seed: 003.txt, message: 3478}]"),
            ("+", "    sources: [{seed: 003.txt, message: 3478}, {run: r2, date: '2026-11-29'}]"),
        ]
    )
    batch = yaml.safe_load(after)["facts"][1]
    assert list(batch)[:5] == ["id", "category", "title", "statement", "value"]
    assert batch["statement"] == "Batch of 8 reached 400 tok/s.\n"


def test_block_value_replaced_and_handwritten_keys_refused(root: Path) -> None:
    update_fact(root, "bench.batch", set_fields={"config": {"tp": 8, "ep": True}})
    update_fact(root, "bench.batch", set_fields={"config": {"tp": 4}})
    assert load_kb(root, strict=False).get("bench.batch").get("config") == {"tp": 4}
    with pytest.raises(WritebackError, match="hand-written"):
        update_fact(root, "bench.batch", set_fields={"statement": "new words"})


def test_awkward_values_round_trip(root: Path) -> None:
    for value in [
        "line one\nline two: x # not a comment",
        "a: b # c",
        "",
        None,
        [1, {"k": "v"}],
        "2026-11-29",
        "yes",
        1e-5,
        "ünïcode",
    ]:
        update_fact(root, "bench.single", value=value)
        assert load_kb(root, strict=False).get("bench.single").value == value
    assert "# trailing comment" in (root / "facts" / "bench.yaml").read_text()


NESTED = """\
facts:
  - id: bench.nested
    category: benchmarks
    title: Nested
    statement: Nested blocks.
    value: 1
    status: assumed
    config:
      engine: sglang
      env:
        NCCL_PROTO: LL
      # a comment inside the block, after its last entry
    metric: |
      decode tok/s
      (two lines)
    sources:
      - {note: x}
"""


def test_block_mappings_and_block_scalars_replaced_without_eating_what_follows(
    tmp_path: Path,
) -> None:
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "n.yaml").write_text(NESTED)
    update_fact(
        tmp_path,
        "bench.nested",
        set_fields={"config": {"engine": "vllm", "env": {}}, "metric": "tok/s"},
        add_source={"run": "r"},
    )
    after = (tmp_path / "facts" / "n.yaml").read_text()
    assert "    config: {engine: vllm, env: {}}\n" in after
    assert "      # a comment inside the block, after its last entry\n    metric: tok/s\n" in after
    nested = load_kb(tmp_path, strict=False).get("bench.nested")
    assert nested.get("config") == {"engine": "vllm", "env": {}} and nested.get("metric") == "tok/s"


def test_every_shipped_fact_can_be_edited_in_place(tmp_path: Path) -> None:
    """value, status, every mapping/list field and a source, on a copy of the real facts/."""
    import shutil

    repo = Path(__file__).resolve().parent.parent
    for name in ("facts", "targets.yaml", "milestones.yaml"):
        source = repo / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name)
        elif source.exists():
            shutil.copy(source, tmp_path / name)
    from factbook.knowledge.kb import load_kb_with_problems

    kb, before = load_kb_with_problems(tmp_path)
    originals = {p: p.read_text() for p in (tmp_path / "facts").glob("*.yaml")}
    for f in kb.facts.values():
        fields = {
            k: ({**v, "edited": True} if isinstance(v, dict) else [*v, "edited"])
            for k, v in f.extra.items()
            if isinstance(v, (dict, list))
        }
        update_fact(
            tmp_path,
            f.id,
            value={"edited": [1, 2]},
            status="stale",
            set_fields=fields or None,
            add_source={"run": "edit-test"},
        )
    after_kb, after = load_kb_with_problems(tmp_path)
    assert len(after) == len(before)
    for f in after_kb.facts.values():
        assert (f.value, f.status, f.sources[-1].run) == ({"edited": [1, 2]}, "stale", "edit-test")
        assert f.statement == kb.facts[f.id].statement
    for path, text in originals.items():  # every comment line survives
        comments = [line for line in text.splitlines() if line.lstrip().startswith("#")]
        new_lines = set(path.read_text().splitlines())
        assert [c for c in comments if c not in new_lines] == []


INDENTLESS = """\
# written by yaml.safe_dump: list items at their key's indentation
facts:
- id: x.one
  category: hardware
  title: One
  statement: >-
    folded
    statement
  status: assumed
  sources:
  - note: first
    date: '2026-11-28'
  check:
    probe: cpu.threads
    args: {}
"""


def test_indentless_lists_and_block_items(tmp_path: Path) -> None:
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "i.yaml").write_text(INDENTLESS)
    update_fact(tmp_path, "x.one", value=3, status="verified", add_source={"run": "r"})
    after = (tmp_path / "facts" / "i.yaml").read_text()
    assert "    statement\n  value: 3\n  status: verified\n" in after
    assert "    date: '2026-11-28'\n  - {run: r}\n  check:\n" in after
    one = load_kb(tmp_path, strict=False).get("x.one")
    assert [s.run for s in one.sources] == [None, "r"] and one.check is not None


def test_unknown_fact_is_a_usage_error(root: Path) -> None:
    from factbook.errors import UsageError

    with pytest.raises(UsageError, match="no fact with id 'nope'"):
        update_fact(root, "nope", value=1)


def test_append_keeps_existing_text_and_creates_files(root: Path) -> None:
    new = {
        "id": "bench.new",
        "category": "benchmarks",
        "title": "New",
        "statement": "A new one.",
        "value": [1, 2],
        "status": "assumed",
        "sources": [{"run": "r", "date": "2026-11-29"}],
    }
    path = append_facts(root / "facts" / "bench.yaml", [new])
    assert path.read_text().startswith(FACT_FILE)
    assert load_kb(root, strict=False).get("bench.new").value == [1, 2]
    with pytest.raises(WritebackError, match="already present"):
        append_facts(root / "facts" / "bench.yaml", [new])
    created = append_facts(root / "facts" / "fresh.yaml", [{**new, "id": "bench.fresh"}])
    assert created.read_text().startswith("# yaml-language-server")
    assert load_kb(root, strict=False).get("bench.fresh").title == "New"


def _bump(root: str, worker: int, rounds: int) -> None:
    for i in range(rounds):
        update_fact(root, "bench.single", add_source={"run": f"w{worker}-{i}"})


def test_concurrent_threads_and_processes_lose_nothing(root: Path) -> None:
    threads = [threading.Thread(target=_bump, args=(str(root), w, 10)) for w in range(4)]
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_bump, args=(str(root), 10 + w, 10)) for w in range(3)]
    for worker in [*threads, *procs]:
        worker.start()
    for worker in [*threads, *procs]:
        worker.join()
    assert all(p.exitcode == 0 for p in procs)
    sources = load_kb(root, strict=False).get("bench.single").sources
    runs = {s.run for s in sources if s.run}
    assert len(runs) == 70 and len(sources) == 71
    # Comments survived every one of the 70 writes.
    text = (root / "facts" / "bench.yaml").read_text()
    assert "# a comment between facts" in text and "# trailing comment" in text
