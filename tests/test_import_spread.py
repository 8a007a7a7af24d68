"""An import with more facts of one category than one fact file may hold spreads them over
the file's numbered family (`software.yaml`, `software-2.yaml`, ...) instead of refusing
them all, each file within the bytes factbook reads; and matching a dump against a
knowledge base with many facts of one key (a fleet's `torch` on every box) is linear."""

from __future__ import annotations

import random
import shutil
import sys
from pathlib import Path

import pytest

from factbook.dumps.capture import match, propose
from factbook.dumps.capture.plan import plan_import
from factbook.dumps.capture.propose import spread, write
from factbook.knowledge import limits
from factbook.knowledge.kb import parse_kb_with_problems

REPO = Path(__file__).resolve().parents[1]


def _short_dump(path: Path, size: int) -> Path:
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import import_large
    finally:
        sys.path.remove(str(REPO / "bench"))
    path.write_text(import_large.short_dump(size), encoding="utf-8")
    return path


def _empty_kb(root: Path) -> Path:
    (root / "facts").mkdir(parents=True)
    for name in ("milestones.yaml", "targets.yaml"):
        shutil.copy(REPO / name, root / name)
    return root


def _fact(n: int, words: int = 8) -> dict:
    return {"id": f"sw.f{n}", "category": "software", "statement": "word " * words}


def test_spread_fills_each_file_of_the_family_in_turn(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(limits, "YAML_MAX_BYTES", 4000)
    facts = tmp_path / "facts"
    facts.mkdir()
    (facts / "software-2.yaml").write_text("facts:\n" + "#" * 3500 + "\n")  # already full
    items = [(n, _fact(n)) for n in range(60)]
    placed = spread(facts / "software.yaml", items)
    names = [path.name for path, _ in placed]
    assert names[0] == "software.yaml" and "software-2.yaml" not in names
    assert names[1:3] == ["software-3.yaml", "software-4.yaml"]
    assert [n for _, part in placed for n, _ in part] == list(range(60))  # each once, in order
    budget = 4000 * propose.SPREAD_FILL
    for _, part in placed:
        assert sum(propose._block_bytes(fact) for _, fact in part) <= budget


def test_a_fact_larger_than_a_file_goes_alone_to_a_new_one(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(limits, "YAML_MAX_BYTES", 4000)
    items = [(0, _fact(0)), (1, _fact(1, words=2000)), (2, _fact(2))]
    placed = spread(tmp_path / "facts" / "software.yaml", items)
    assert [(path.name, [n for n, _ in part]) for path, part in placed] == [
        ("software.yaml", [0]),
        ("software-2.yaml", [1]),  # the writer refuses it, with the reason
        ("software-3.yaml", [2]),
    ]


def test_a_chosen_numbered_file_continues_with_its_family(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(limits, "YAML_MAX_BYTES", 4000)
    items = [(n, _fact(n)) for n in range(80)]
    placed = spread(tmp_path / "facts" / "software-2.yaml", items)
    assert [path.name for path, _ in placed][:3] == [
        "software-2.yaml",
        "software.yaml",
        "software-3.yaml",
    ]


def test_an_import_past_one_file_writes_every_fact_and_lints_clean(tmp_path: Path):
    """At the real bound: ~3,000 short items make ~1.3 MB of software facts."""
    kb = _empty_kb(tmp_path / "kb")
    dump = _short_dump(tmp_path / "dump.md", 140_000)
    result = plan_import(kb, dump, "4504")
    new = [p for p in result.proposals if p.verdict == "new"]
    assert len(new) > 2800 and all(p.clean for p in new)
    write(result.applied)
    files = sorted((kb / "facts").glob("*.yaml"))
    assert [f.name for f in files] == ["software-2.yaml", "software.yaml"]
    assert all(f.stat().st_size <= limits.YAML_MAX_BYTES for f in files)
    loaded, problems = parse_kb_with_problems(kb)
    assert problems == []
    assert {p.fact["id"] for p in new} == set(loaded.facts)
    for proposal in new:  # the review names the file each fact went to
        assert loaded.facts[proposal.fact["id"]].file == proposal.file
    again = plan_import(kb, dump, "4504")
    assert {p.verdict for p in again.proposals} == {"unchanged"}


def test_matching_many_facts_of_one_key_is_linear(tmp_path: Path, monkeypatch):
    """A knowledge base holding 1,200 `torch` version facts, a dump of the same 1,200 lines:
    every line is compared with the few facts that can hold its value, not with all."""
    kb = _empty_kb(tmp_path / "kb")
    dump = _short_dump(tmp_path / "dump.md", 55_000)
    write(plan_import(kb, dump, "4504").applied)
    calls = 0
    real = match.same_value

    def counted(a, b):
        nonlocal calls
        calls += 1
        return real(a, b)

    monkeypatch.setattr(match, "same_value", counted)
    again = plan_import(kb, dump, "4504")
    lines = len(again.proposals)
    assert lines > 1100 and {p.verdict for p in again.proposals} == {"unchanged"}
    assert calls <= 2 * lines
    # every version moved on: no known fact holds the value, which a scan of the key's facts
    # learned from all 1,200 of them, for each line
    moved = tmp_path / "moved.md"
    moved.write_text(dump.read_text(encoding="utf-8").replace("torch 2.", "torch 3."))
    calls = 0
    later = plan_import(kb, moved, "4504")
    assert {p.verdict for p in later.proposals} == {"changed"}
    assert calls <= 2 * lines


_VALUES = [
    True,
    False,
    0,
    1,
    1.0,
    2,
    2.0000000001,
    "2",
    "2%",
    " 2 ",
    "1",
    "True",
    "torch",
    "Torch ",
    None,
    [],
    [1],
    (1,),
    {},
    {"a": 1},
    {"b": 1},
    {"a": "1"},
    "2.5.0",
    "2.5.0 ",
    1e-12,
    0.0,
    -0.0,
    "",
]


def test_the_value_index_finds_what_a_scan_finds():
    rng = random.Random(7)
    for _ in range(300):
        values = [rng.choice(_VALUES) for _ in range(rng.randint(1, 40))]
        index = match.ValueIndex(values)
        for query in _VALUES:
            scanned = next((n for n, v in enumerate(values) if match.same_value(query, v)), None)
            indexed = next(
                (n for n in index.candidates(query) if match.same_value(query, values[n])), None
            )
            assert indexed == scanned, (query, values)


@pytest.mark.parametrize("query", _VALUES, ids=repr)
def test_every_value_equal_to_a_query_is_a_candidate(query):
    index = match.ValueIndex(_VALUES)
    equal = [n for n, v in enumerate(_VALUES) if match.same_value(query, v)]
    assert set(equal) <= set(index.candidates(query))
    assert index.candidates(query) == sorted(index.candidates(query))


def test_no_free_name_keeps_the_facts_on_the_file_named(tmp_path: Path, monkeypatch):
    """Every name of the family taken (a facts/ folder that leaves the knowledge base): the
    facts stay on the file named, which the import then refuses to write; no endless search."""
    monkeypatch.setattr(limits, "YAML_MAX_BYTES", 4000)
    items = [(n, _fact(n)) for n in range(80)]
    placed = spread(tmp_path / "software.yaml", items, taken=lambda _: True)
    assert {path.name for path, _ in placed} == {"software.yaml"}
    assert [n for _, part in placed for n, _ in part] == list(range(80))


def _torch_fact(box: str, version: str) -> str:
    """One box's torch version fact, as a fleet's knowledge base holds one per box."""
    return (
        f"  - id: sw.torch.{box}\n    category: software\n    title: torch on {box}\n"
        f"    statement: torch {version} on {box}.\n    value: {version}\n    status: assumed\n"
        f'    target: {box}\n    since: "1"\n'
        f"    sources: [{{seed: fleet.md, quote: torch {version}}}]\n"
        "    check: {probe: pkg.version, args: {name: torch}, "
        f"expect: {{version: =={version}}}}}\n"
    )


@pytest.mark.parametrize("many", [False, True], ids=["two boxes", "forty boxes"])
def test_a_line_about_one_box_matches_that_boxs_fact_of_the_key(tmp_path: Path, many: bool):
    """A fleet holds `torch` once per box: `torch 2.6.0` said of box-a is box-a's torch
    (changed), not box-b's fact that happens to hold 2.6.0; with no box, the value decides."""
    from factbook.knowledge.kb import load_kb

    root = tmp_path / "kb"
    (root / "facts").mkdir(parents=True)
    (root / "milestones.yaml").write_text('milestones:\n  - {id: "1", title: first}\n')
    others = [f"box-{n}" for n in range(40)] if many else []
    targets = ["box-a", "box-b", "box-c", *others]
    (root / "targets.yaml").write_text(
        "targets:\n" + "".join(f"  {t}: {{host: {t}.invalid}}\n" for t in targets)
    )
    facts = [_torch_fact("box-a", "2.5.0"), _torch_fact("box-b", "2.6.0")]
    facts += [_torch_fact(box, "2.6.0") for box in others]  # more of the key, all at 2.6.0
    (root / "facts" / "software.yaml").write_text("facts:\n" + "".join(facts))
    kb = load_kb(root)
    index = match.Index(kb, kb.milestone("1"))
    key = ("pkg", "torch")

    def found(target: str | None) -> str:
        hit = index.find(None, "torch 2.6.0", key, "torch 2.6.0", "2.6.0", target=target)
        assert hit is not None and hit.how == "key"
        return hit.fact.id

    assert found("box-a") == "sw.torch.box-a"  # its own box's fact: a change
    assert found("box-b") == "sw.torch.box-b"
    assert found(None) == "sw.torch.box-b"  # no box: the fact holding the value
    assert found("box-c") == "sw.torch.box-b"  # a box with no fact of the key: the same


def test_each_new_facts_size_counted_where_it_was_built_is_its_size_when_spread(
    tmp_path: Path,
) -> None:
    """The repr's bytes of a new fact are counted on the core that built it (the id then
    still ''): with its id, they are what `spread` would count of the fact itself, so the
    files are split where they were. Dumps with non-ASCII text, hinted ids and table rows."""
    dumps = sorted((REPO / "tests" / "data" / "dumps").glob("*.md"))
    kb = _empty_kb(tmp_path / "kb")
    seen = 0
    for dump in [*dumps, _short_dump(tmp_path / "short.md", 60_000)]:
        result = plan_import(kb, dump, "4504")
        for proposal in result.proposals:
            if proposal.verdict == "new":
                assert proposal.repr_bytes == propose.repr_bytes(proposal.fact), proposal.fact
                seen += 1
    assert seen > 1000
