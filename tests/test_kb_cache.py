"""The knowledge-base cache: a second load of unchanged files parses nothing, any change to
what the load read (bytes, names, files appearing) parses again, and a damaged or hostile
cache file only ever costs a parse. Every test compares with a real parse of the same files."""

from __future__ import annotations

import datetime
import json
import os
import time
from pathlib import Path

import pytest
from helpers import fact, make_kb

from factbook.knowledge import cachekey, kbcache
from factbook.knowledge import kb as kbmod
from factbook.knowledge.kb import load_kb_with_problems, parse_kb_with_problems


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The roots actually parsed (not served from the cache) during the test."""
    seen: list[Path] = []
    real = kbmod.parse_kb_with_problems

    def counting(root: Path):
        seen.append(root)
        return real(root)

    monkeypatch.setattr(kbmod, "parse_kb_with_problems", counting)
    monkeypatch.delenv("FACTBOOK_CACHE", raising=False)
    return seen


def _settle() -> None:
    """Files written just before a load are not cached (their bytes may still change within
    the clock tick); wait that out, as a user's files usually have."""
    time.sleep(kbcache.CLOCK_SLACK_NS / 1e9 + 0.02)


def _same_as_parse(root: Path) -> None:
    kb, problems = load_kb_with_problems(root)
    fresh, fresh_problems = parse_kb_with_problems(root.resolve())
    assert list(kb.facts.values()) == list(fresh.facts.values())
    assert kb.targets == fresh.targets and list(kb.targets) == list(fresh.targets)
    assert kb.milestones == fresh.milestones and kb.groups == fresh.groups
    assert kb.probes == fresh.probes
    assert problems == fresh_problems


def _kb(tmp_path: Path) -> Path:
    facts = [fact(f"t.f{i}", "file.exists", {"eq": True}, args={"path": "/"}) for i in range(5)]
    root = make_kb(tmp_path / "kb", facts)
    (root / "milestones.yaml").write_text("milestones:\n  - {id: '1', title: one}\n")
    _settle()
    return root


def test_second_load_parses_nothing_and_equals_a_parse(tmp_path: Path, parses: list) -> None:
    root = _kb(tmp_path)
    first, _ = load_kb_with_problems(root)
    assert len(parses) == 1 and kbcache.cache_path(root.resolve()).is_file()
    second, _ = load_kb_with_problems(root)
    assert len(parses) == 1, "unchanged files were parsed again"
    assert second.facts["t.f3"] == first.facts["t.f3"]
    assert second.facts("t.f*") == first.facts("t.f*")  # the FactIndex works on a cached kb
    _same_as_parse(root)


@pytest.mark.parametrize(
    "change",
    ["same_size_edit", "new_fact_file", "removed_file", "targets", "milestones_gone", "checks"],
)
def test_any_change_to_the_inputs_parses_again(tmp_path: Path, parses: list, change: str) -> None:
    root = _kb(tmp_path)
    load_kb_with_problems(root)
    load_kb_with_problems(root)
    assert len(parses) == 1
    facts = root / "facts" / "facts.yaml"
    if change == "same_size_edit":  # same size, at once: the mtime may not even move
        text = facts.read_text()
        facts.write_text(text.replace("t.f3", "t.f9"))
    elif change == "new_fact_file":
        (root / "facts" / "more.yaml").write_text(
            "facts:\n  - {id: t.new, category: hardware, title: x, statement: x,"
            " status: assumed, sources: [{note: n}]}\n"
        )
    elif change == "removed_file":
        (root / "milestones.yaml").unlink()
    elif change == "targets":
        (root / "targets.yaml").write_text("targets:\n  other: {transport: local}\n")
    elif change == "milestones_gone":
        (root / "milestones.yaml").rename(root / "facts" / "notes.txt")
    else:
        (root / "checks").mkdir()
        (root / "checks" / "mine.py").write_text(
            'def probe():\n    """one"""\n    return 1\n\nPROBES = {"my.probe": probe}\n'
        )
    load_kb_with_problems(root)
    assert len(parses) == 2, f"{change} was served from the cache"
    _same_as_parse(root)
    kb, _ = load_kb_with_problems(root)
    if change == "same_size_edit":
        assert "t.f9" in kb.facts and "t.f3" not in kb.facts
    if change == "checks":
        assert "my.probe" in kb.probes


def test_touch_keeps_the_cache_and_refreshes_it(tmp_path: Path, parses: list) -> None:
    root = _kb(tmp_path)
    load_kb_with_problems(root)
    facts = root / "facts" / "facts.yaml"
    later = time.time_ns() - 10**9
    os.utime(facts, ns=(later, later))  # a checkout or `touch`: same bytes, new mtime
    load_kb_with_problems(root)
    assert len(parses) == 1, "a touched file with the same bytes was parsed again"
    body = cachekey.unseal(kbcache.cache_path(root.resolve()).read_bytes())
    head = json.loads(body.split(b"\n")[0])
    assert [e[2] for e in head["inputs"] if e[0] == "facts/facts.yaml"] == [later]


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"\x00\xff garbage",
        b'{"format": 1}\n',
        b"[1, 2]\n{}",
        "unknown class",
        "wrong field",
        "bad date",
        "wrong part type",
        "truncated",
    ],
)
def test_a_damaged_or_hostile_cache_only_costs_a_parse(
    tmp_path: Path, parses: list, damage: bytes | str
) -> None:
    root = _kb(tmp_path)
    load_kb_with_problems(root)
    path = kbcache.cache_path(root.resolve())
    head, data = cachekey.unseal(path.read_bytes()).split(b"\n", 1)
    if isinstance(damage, bytes):  # unsealed: not even read
        path.write_bytes(damage)
    else:
        text = data.decode()
        text = {
            "unknown class": text.replace('"~class": "Source"', '"~class": "Popen"', 1),
            "wrong field": text.replace('"~class": "Fact", "id"', '"~class": "Fact", "cmd"', 1),
            "bad date": text.replace('"facts": {', '"facts": {"x": {"~date": "nope"}, ', 1),
            "wrong part type": text.replace('"~class": "Target"', '"~class": "Milestone"', 1),
            "truncated": text[: len(text) // 2],
        }[damage]
        assert text != data.decode()
        path.write_bytes(cachekey.seal(head + b"\n" + text.encode()))  # sealed, then checked
    _same_as_parse(root)
    assert len(parses) >= 2  # parsed, not served


def test_odd_yaml_values_load_from_the_cache_as_parsed(tmp_path: Path, parses: list) -> None:
    root = make_kb(tmp_path / "kb", [fact("t.x", "file.exists", {"eq": True}, args={"path": "/"})])
    (root / "facts" / "odd.yaml").write_text(ODD_FACT)
    _settle()
    load_kb_with_problems(root)
    kb, problems = load_kb_with_problems(root)
    assert len(parses) == 1, "the odd values were not cached"
    fresh, fresh_problems = parse_kb_with_problems(root.resolve())
    assert kb.facts["t.odd"] == fresh.facts["t.odd"]
    assert problems == fresh_problems and problems  # the loader refuses the non-JSON values


ODD_FACT = """facts:
  - id: t.odd
    category: hardware
    title: odd values
    statement: every kind of value YAML can give
    status: assumed
    sources: [{note: n, date: 2026-11-29}]
    value:
      when: 2026-11-29
      blob: !!binary aGVsbG8=
      8: int key
      "~t": tilde key
      huge: 123456789012345678901234567890
      text: "line\\nwith \\u00e9 and \\t"
"""


def test_the_codec_keeps_every_value_yaml_can_give_exactly() -> None:
    """What the loader lets through today is JSON-clean; the codec does not rely on it."""
    from factbook.knowledge.model import Check, Source, Target

    value = {
        "when": datetime.date(2026, 11, 29),
        "at": datetime.datetime(2026, 11, 29, 10, 11, 12, tzinfo=datetime.timezone.utc),
        "blob": b"\x00hello",
        "members": {"a", "b"},
        "pairs": [("one", 1), ("two", 2)],
        8: "int key",
        True: "bool key",
        None: "null key",
        datetime.date(2026, 1, 1): "date key",
        "~class": "looks like a tag",
        "~t": {"~map": "nested look-alikes"},
        "huge": 123456789012345678901234567890,
        "inf": float("-inf"),
        "text": "line\nwith \u00e9",
        "objects": [Source(note="n"), Check("p", {"a": (1, 2)}), Target("t", jump=("j",))],
    }
    back = kbcache.from_json(kbcache.to_json(value))
    assert back == value
    assert [type(k) for k in back] == [type(k) for k in value]
    assert type(back["objects"][2].jump) is tuple
    nan = kbcache.from_json(kbcache.to_json([float("nan")]))[0]
    assert nan != nan
    with pytest.raises(kbcache.Unsupported):
        kbcache.to_json({"x": object()})
    with pytest.raises((TypeError, KeyError)):
        kbcache.from_json(b'{"~class": "Popen", "args": ["sh"]}')


def test_problems_are_cached_as_found(tmp_path: Path, parses: list) -> None:
    root = _kb(tmp_path)
    (root / "facts" / "bad.yaml").write_text("facts:\n  - {id: Bad Id, category: nope}\n")
    (root / "facts" / "wrong.yml").write_text("facts: []\n")
    _settle()
    _, first = load_kb_with_problems(root)
    _, second = load_kb_with_problems(root)
    assert len(parses) == 1 and first == second and len(first) >= 3


def test_reads_outside_the_knowledge_base_are_never_cached(
    tmp_path: Path, parses: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one file a load may read outside its root (`inventory: ~/.ssh/config`) is never
    vouched for by the cache: each load reads it again."""
    root = _kb(tmp_path)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    config = home / ".ssh" / "config"
    config.write_text("Host node1\n  HostName 10.0.0.1\n")
    monkeypatch.setenv("HOME", str(home))
    (root / "targets.yaml").write_text("inventory: [~/.ssh/config]\ntargets: {}\n")
    _settle()
    kb, problems = load_kb_with_problems(root)
    assert "node1" in kb.targets, problems
    assert not kbcache.cache_path(root.resolve()).exists()
    config.write_text("Host node2\n  HostName 10.0.0.2\n")
    kb, _ = load_kb_with_problems(root)
    assert "node2" in kb.targets and "node1" not in kb.targets
    assert len(parses) == 2


def test_files_written_during_the_load_window_are_not_cached(tmp_path: Path, parses: list) -> None:
    root = make_kb(tmp_path / "kb", [fact("t.x", "file.exists", {"eq": True})])
    load_kb_with_problems(root)  # written a moment ago: not trusted yet
    assert not kbcache.cache_path(root.resolve()).exists()
    _settle()
    load_kb_with_problems(root)
    load_kb_with_problems(root)
    assert len(parses) == 2


def test_factbook_cache_0_turns_it_off(
    tmp_path: Path, parses: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _kb(tmp_path)
    monkeypatch.setenv("FACTBOOK_CACHE", "0")
    load_kb_with_problems(root)
    load_kb_with_problems(root)
    assert len(parses) == 2 and not kbcache.cache_path(root.resolve()).exists()


def test_a_code_change_invalidates(
    tmp_path: Path, parses: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _kb(tmp_path)
    load_kb_with_problems(root)
    stamp = kbcache.code_stamp()
    assert any(str(p).endswith("knowledge/kb.py") for p, *_ in stamp[2:])
    monkeypatch.setattr(kbcache, "code_stamp", lambda: [*stamp, ["new.py", 1, 1]])
    load_kb_with_problems(root)
    assert len(parses) == 2


def test_the_cache_never_leads_out_of_the_knowledge_base(tmp_path: Path, parses: list) -> None:
    """A cache folder linked outside is never written; a FIFO cache file never blocks; a
    cache naming inputs outside the root (or a FIFO input) is not read, only parsed past."""
    root = _kb(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / kbcache.CACHE_DIR).symlink_to(outside)
    load_kb_with_problems(root)
    load_kb_with_problems(root)
    assert list(outside.iterdir()) == [] and len(parses) == 2
    (root / kbcache.CACHE_DIR).unlink()
    (root / kbcache.CACHE_DIR).mkdir()
    os.mkfifo(kbcache.cache_path(root))
    started = time.monotonic()
    _same_as_parse(root)  # would block forever on open() of the FIFO
    assert time.monotonic() - started < 10
    kbcache.cache_path(root).unlink()
    load_kb_with_problems(root)  # writes a good cache
    path = kbcache.cache_path(root)
    head, _, data = cachekey.unseal(path.read_bytes()).partition(b"\n")
    blob = json.loads(head)
    secret = tmp_path / "secret"
    secret.write_text("x")
    os.mkfifo(root / "facts" / "pipe")
    for bad in ("../secret", "facts/pipe"):
        hostile = {**blob, "inputs": [[bad, *blob["inputs"][0][1:]]]}
        path.write_bytes(cachekey.seal(json.dumps(hostile).encode() + b"\n" + data))
        before = len(parses)
        _same_as_parse(root)
        assert len(parses) > before
