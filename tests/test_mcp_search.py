"""The MCP server's parts that need no SDK: ranking, the question sets, status_brief's two
paths, factbook.yaml settings and `factbook mcp`'s refusals before it serves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from helpers import REPO, cli, local_trio, make_kb

from factbook import api
from factbook.errors import LintFailed, UsageError
from factbook.integrations.mcp.search import SearchIndex, rank, terms
from factbook.integrations.mcp.settings import load_settings
from factbook.integrations.mcp.tools import Toolbox
from factbook.knowledge.kb import load_kb


@pytest.fixture(scope="module")
def shipped() -> tuple:
    kb = load_kb(REPO, strict=False)
    return kb, SearchIndex.build(kb)


def _score(kb, index, path: Path) -> tuple[int, int, list[str]]:
    questions = yaml.safe_load(path.read_text())["questions"]
    misses = []
    for question in questions:
        assert all(i in kb.facts for i in question["expect"]), question
        hits = rank(index, question["ask"], kb.facts.values(), None, 3)
        good = [
            h
            for h in hits
            if h.fact.id in question["expect"]
            and ("value" not in question or str(h.fact.value) == str(question["value"]))
        ]
        if not good:
            misses.append(question["ask"])
    return len(questions) - len(misses), len(questions), misses


@pytest.mark.parametrize(
    ("name", "floor"), [("mcp_questions.yaml", 28), ("mcp_questions_heldout.yaml", 18)]
)
def test_question_sets_answered_from_the_top_three(shipped, name: str, floor: int) -> None:
    """bench/mcp_server.py reports the score; this keeps it from sliding (30/30 and 20/20
    when written, a little slack for ranking changes that help unseen questions)."""
    kb, index = shipped
    answered, _total, misses = _score(kb, index, REPO / "bench" / name)
    assert answered >= floor, misses


def test_terms_meet_the_ways_people_write() -> None:
    found = terms("The REAL <|im_end|> is 163586; use --speculative-eagle-topk 1 at 90.0 tok/s")
    for term in ("<|im_end|>", "im_end", "im", "end", "163586", "speculative-eagle-topk"):
        assert term in found, term
    assert "90" in found and "tok/s" in found and "real" in found
    assert "hang" in terms("the server hangs") and "token" in terms("tokens")
    assert {"llama", "causal", "eagle"} <= set(terms("LlamaForCausalLMEagle3"))
    assert "1536" in terms("1,536 tok/s") and "environment" in terms("NCCL_ALGO=Ring")


def test_refuted_and_past_facts_rank_below_current_ones(shipped) -> None:
    kb, index = shipped
    hits = rank(index, "<|im_end|> token id", kb.facts.values(), None, 5)
    ids = [h.fact.id for h in hits]
    assert ids.index("tok.im_end.id") < ids.index("tok.im_end.wrong_id")
    then = kb.milestone("3157")
    visible = kb.select(as_of=then)
    assert all(kb.visible(h.fact, then) for h in rank(index, "SGLang", visible, then, 10))


def _unstamped(document: str) -> str:
    """A status document without the minute it was made (two made a second apart may
    straddle a minute)."""
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", "<made>", document)


def test_status_brief_budgeted_or_whole(tmp_path: Path) -> None:
    root = make_kb(tmp_path / "kb", local_trio())
    box = Toolbox(root)
    kb = api.load(root)
    whole = box.status_brief()
    assert _unstamped(whole["document"]) == _unstamped(api.status(kb))
    assert "budget" not in whole and "<made>" in _unstamped(whole["document"])
    brief = box.status_brief(budget=400)
    assert brief["budget"] == 400
    assert _unstamped(brief["document"]) == _unstamped(api.status(kb, budget=400))
    assert "budget_tokens: 400" in brief["document"]
    with pytest.raises(UsageError, match="budget"):
        box.status_brief(budget=5)


def test_settings_are_checked_with_their_line(tmp_path: Path) -> None:
    root = make_kb(tmp_path / "kb", local_trio())
    assert load_settings(root).write_facts is False
    (root / "factbook.yaml").write_text(
        "other: kept for whoever reads it\nmcp:\n  write_facts: yes please\n"
        "  verify_timeout_s: -1\n  inventories: [../../etc/hosts]\n"
    )
    with pytest.raises(LintFailed) as caught:
        load_settings(root)
    lines = [str(p) for p in caught.value.problems]
    assert lines[0].startswith("factbook.yaml:3: mcp.write_facts")
    assert any(line.startswith("factbook.yaml:4: mcp.verify_timeout_s") for line in lines)
    assert any("leaves" in line for line in lines)
    code, _, err = cli(root, "mcp")
    assert code == 2 and "factbook.yaml:3" in err
    code, _, err = cli(tmp_path, "mcp")
    assert code == 2 and "not a knowledge base" in err


def test_verify_timeout_is_capped_by_the_setting(tmp_path: Path) -> None:
    root = make_kb(tmp_path / "kb", local_trio())
    (root / "factbook.yaml").write_text("mcp:\n  verify_timeout_s: 5\n")
    with pytest.raises(UsageError, match="at most 5"):
        Toolbox(root).verify_facts(["hw.cpu.threads"], timeout_s=30)
