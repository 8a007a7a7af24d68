"""The shipped knowledge base: lints clean, quotes seeds verbatim, reads as of each milestone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from factbook.commands.cli import run
from factbook.knowledge.kb import KnowledgeBase, load_kb
from factbook.knowledge.schema import CATEGORIES

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return load_kb(ROOT)


def ids_as_of(kb: KnowledgeBase, milestone: str) -> set[str]:
    return {f.id for f in kb.select(as_of=kb.milestone(milestone))}


def test_lints_clean(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--root", str(ROOT), "lint"]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


def test_size_and_coverage(kb: KnowledgeBase) -> None:
    assert len(kb.facts) > 150
    assert {f.category for f in kb.facts.values()} == set(CATEGORIES)
    assert sum(1 for f in kb.facts.values() if f.check) > 50


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_every_seed_quote_is_verbatim(kb: KnowledgeBase) -> None:
    seeds = {p.name: _normalise(p.read_text()) for p in (ROOT / "seeds").glob("*.txt")}
    missing = []
    for fact in kb.facts.values():
        for source in fact.sources:
            if source.seed is None:
                continue
            assert source.seed in seeds, f"{fact.location}: unknown seed {source.seed}"
            milestone = next(m for m in kb.milestones.values() if m.seed == source.seed)
            assert source.message == milestone.message, fact.location
            if source.quote and _normalise(source.quote) not in seeds[source.seed]:
                missing.append(f"{fact.location}: {source.quote!r}")
    assert missing == []


def test_no_target_points_at_a_seed_address(kb: KnowledgeBase) -> None:
    for target in kb.targets.values():
        assert target.host is None or target.host.endswith(".invalid"), target
        assert not re.match(r"^\d+\.\d+\.\d+\.\d+$", target.host or "")


@pytest.mark.parametrize(
    ("fact_id", "value"),
    [
        ("tok.im_end.id", 163586),
        ("tok.im_end.wrong_id", 163533),
        ("bench.sglang.nccl_tuned.single_stream", 90.0),
        ("bench.vllm.single_stream", 82.5),
        ("hw.gpu.count", 8),
        ("model.vocab_size", 163840),
        ("model.hidden_size", 7168),
    ],
)
def test_seed_numbers_exactly(kb: KnowledgeBase, fact_id: str, value: object) -> None:
    assert kb.get(fact_id).value == value


def test_as_of_3157_knows_nothing_later(kb: KnowledgeBase) -> None:
    known = ids_as_of(kb, "3157")
    assert {"sw.sglang.sm120_hang", "bench.vllm.single_stream", "draft.aux_layers"} <= known
    assert "prog.3157.next.sglang-base-serving" in known
    later = {
        "bench.sglang.nccl_tuned.single_stream",  # 90.0 tok/s, 3478
        "bench.eagle3.6draft_steps5.single_stream",  # 54.8 tok/s, 4504
        "draft.hidden_state_mismatch",  # [embed,3,31] vs [3,31,59], 4504
        "pit.topk1-num-draft-tokens",
        "prog.3478.sglang-base-serving",
    }
    assert not later & known
    # facts without `since` learned from today's runs were not known at any seed milestone
    assert not {fid for fid in known if fid.startswith(("h200.", "eagle3.bench."))}
    assert "h200.gpu.model" in {f.id for f in kb.select()}


def test_as_of_3478(kb: KnowledgeBase) -> None:
    known = ids_as_of(kb, "3478")
    assert "bench.sglang.nccl_tuned.single_stream" in known
    assert "sw.sglang.sm120_hang" not in known  # fixed: SGLang serves at 3478
    assert "prog.3157.next.sglang-base-serving" not in known
    assert "bench.eagle3.6draft_steps5.single_stream" not in known
    assert "draft.aux_layers_embedding_fix" not in known
    fix = kb.get("train.sglang_hs.fixes_acceptance")
    assert kb.status_as_of(fix, kb.milestone("3478")) == "assumed"


def test_as_of_4504(kb: KnowledgeBase) -> None:
    known = ids_as_of(kb, "4504")
    assert {"bench.eagle3.6draft_steps5.single_stream", "draft.hidden_state_mismatch"} <= known
    assert "draft.aux_layers" not in known  # replaced by [-1, 2, 30]
    fix = kb.get("train.sglang_hs.fixes_acceptance")
    assert kb.status_as_of(fix, kb.milestone("4504")) == "refuted"
    assert "draft.hidden_state_mismatch" in fix.links["replaced_by"]


def test_refuted_assumptions_link_to_replacement(kb: KnowledgeBase) -> None:
    refuted = [f for f in kb.facts.values() if f.status == "refuted"]
    assert len(refuted) >= 4
    for fact in refuted:
        assert fact.links.get("replaced_by"), f"{fact.location}: refuted without replaced_by"


def test_list_and_show_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--root", str(ROOT), "list", "--as-of", "3157", "-c", "benchmarks"]) == 0
    out = capsys.readouterr().out
    assert "bench.vllm.single_stream" in out
    assert "nccl_tuned" not in out
    assert run(["--root", str(ROOT), "list", "tok.*", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {d["id"] for d in data} >= {"tok.im_end.id", "tok.im_end.wrong_id"}
    assert run(["--root", str(ROOT), "show", "tok.im_end.wrong_id"]) == 0
    out = capsys.readouterr().out
    assert "refuted" in out and "replaced_by: tok.im_end.id" in out
    assert run(["--root", str(ROOT), "show", "no.such.fact"]) == 2
    assert "no fact with id 'no.such.fact'" in capsys.readouterr().err
    assert run(["--root", str(ROOT), "list", "--as-of", "1234"]) == 2
    assert "unknown milestone '1234'" in capsys.readouterr().err


@pytest.mark.parametrize("which", ["facts", "targets", "milestones"])
def test_published_schema_matches_the_code(which: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Fact files point editors at schema/facts.schema.json: it must be what lint enforces."""
    assert run(["schema", which]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((ROOT / "schema" / f"{which}.schema.json").read_text())
