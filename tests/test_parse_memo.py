"""Fact files parsed in a long-lived process are reused while their text is unchanged
(knowledge/parsememo.py): `mkdocs serve` parses the one file an edit changed. Every test
compares with a parse of the same files that reuses nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helpers import fact, make_kb

from factbook.knowledge import kb as kbmod
from factbook.knowledge.kb import load_kb_with_problems
from factbook.knowledge.parsememo import TextMemo


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The fact files actually parsed (not reused) during the test, by display name."""
    seen: list[str] = []
    real = kbmod._parse_fact_file

    def counting(text: str, display: str):
        seen.append(display)
        return real(text, display)

    monkeypatch.setattr(kbmod, "_parse_fact_file", counting)
    monkeypatch.delenv("FACTBOOK_CACHE", raising=False)
    return seen


def _kb(root: Path) -> Path:
    make_kb(root, [fact(f"hw.a{n}", "cpu.threads", {"ge": 1}, target="local") for n in range(3)])
    other = [fact(f"sw.b{n}", "cpu.threads", {"ge": 1}, target="local") for n in range(3)]
    (root / "facts" / "other.yaml").write_text(yaml.safe_dump({"facts": other}), "utf-8")
    return root


def _fresh(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, list]:
    with monkeypatch.context() as m:
        m.setenv("FACTBOOK_CACHE", "0")  # no memo, no disk cache: a parse of every file
        kb, problems = load_kb_with_problems(root, live=True)
    return kb.facts, problems


def test_an_edit_parses_one_file_and_loads_what_a_parse_loads(
    tmp_path: Path, parsed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _kb(tmp_path / "kb")
    kb, _ = load_kb_with_problems(root, live=True)
    assert sorted(parsed) == ["facts/facts.yaml", "facts/other.yaml"]
    parsed.clear()
    load_kb_with_problems(root, live=True)
    assert parsed == []
    path = root / "facts" / "other.yaml"
    path.write_text(path.read_text("utf-8").replace("title: sw.b1", "title: new sw.b1", 1), "utf-8")
    kb, problems = load_kb_with_problems(root, live=True)
    assert parsed == ["facts/other.yaml"]
    assert (kb.facts, problems) == _fresh(root, monkeypatch)
    assert any(f.title.startswith("new") for f in kb.facts.values())
    assert not (root / ".factbook-cache").exists()  # live loads leave the disk cache alone


def test_problems_come_and_go_with_the_text(
    tmp_path: Path, parsed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _kb(tmp_path / "kb")
    path = root / "facts" / "other.yaml"
    good = path.read_text("utf-8")
    load_kb_with_problems(root, live=True)
    path.write_text(good.replace("id: sw.b1", "id: hw.a0"), "utf-8")  # a duplicate id
    _, problems = load_kb_with_problems(root, live=True)
    assert any("duplicate id 'hw.a0'" in p.message for p in problems), problems
    assert problems == _fresh(root, monkeypatch)[1]
    path.write_text(good, "utf-8")
    parsed.clear()
    _, problems = load_kb_with_problems(root, live=True)
    assert problems == [] and parsed == ["facts/other.yaml"]


def test_factbook_cache_0_parses_every_file_every_time(
    tmp_path: Path, parsed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _kb(tmp_path / "kb")
    monkeypatch.setenv("FACTBOOK_CACHE", "0")
    load_kb_with_problems(root, live=True)
    load_kb_with_problems(root, live=True)
    assert len(parsed) == 4


def test_the_memo_keeps_the_most_recently_used_within_its_bound() -> None:
    memo: TextMemo[int] = TextMemo(max_chars=10)
    memo.put("a", "aaaa", 1)
    memo.put("b", "bbbb", 2)
    assert memo.get("a", "aaaa") == 1  # a is now the most recent
    memo.put("c", "cccc", 3)  # 12 chars: b goes
    assert memo.get("b", "bbbb") is None
    assert memo.get("a", "aaaa") == 1 and memo.get("c", "cccc") == 3
    assert memo.get("a", "aaab") is None  # another text is another parse
    memo.put("huge", "x" * 11, 4)
    assert memo.get("huge", "x" * 11) is None
