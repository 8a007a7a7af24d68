"""`status --budget`'s selection is n log n and chooses as the plain greedy loop did.

`choose` rescanned every pitfall per pitfall claimed and every chosen line per line shown
(`_drop_covered`): 5,000 facts at a 100,000-token budget took 47 s of CPU. The plain loop is
kept here, verbatim, as the oracle (with the module's own claim order and coverage test,
which it did not change): the indexed one must choose the same lines, as fully, in
the same order, on the shipped knowledge base (read only), a small one with every rank, and
synthetic ones of 1,500 and 5,000 facts whose grouped lines cover each other.
"""

from __future__ import annotations

import heapq
import random
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO
from test_status_budget import FACTS, MILESTONES, TARGETS

from factbook.dumps.status import selection
from factbook.dumps.status.budget import CHARS_PER_TOKEN
from factbook.dumps.status.compact import Line, place
from factbook.dumps.status.grouping import GROUPED_SECTIONS, SOLO_GROUPS, assign_topics
from factbook.dumps.status.quotes import use_quotes
from factbook.dumps.status.render import StatusOptions, prepare
from factbook.dumps.status.selection import (
    FULL_BONUS,
    FULL_RANKS,
    ITEM_BONUS,
    PITFALL_SHARE,
    STRICT_RANKS,
    WHOLE_REASONS,
    _claim_order,
    _covered,
    _gain,
    _heading_costs,
    _open,
    _weight,
    choose,
    line_information,
    rank_lines,
)
from factbook.knowledge.kb import load_kb

Info = dict[str, tuple[dict[str, float], dict[str, float]]]
CATEGORIES = [
    "hardware",
    "software",
    "inventory",
    "benchmarks",
    "pitfalls",
    "decisions",
    "progress",
    "instructions",
]


# --- the plain greedy loop, as it was (the oracle) ----------------------------------------


def old_choose(
    lines: list[Line],
    room: int,
    info: dict[str, tuple[dict[str, float], dict[str, float]]],
) -> dict[str, bool]:
    """{id: full?} of the lines to show within `room` characters (see the module docstring).
    `lines` come ranked (rank_lines); `info` from line_information."""
    chosen: dict[str, bool] = {}
    known: set[str] = set()
    opened: set[tuple[str, ...]] = set()
    for ln in lines:
        if ln.rank not in STRICT_RANKS:
            continue
        full = ln.reason in WHOLE_REASONS
        cost = ln.cost(full=full) + sum(_heading_costs(ln, opened).values())
        if cost <= room:
            room -= cost
            chosen[ln.id] = full
            opened |= _open(ln)
            known |= set(info[ln.id][1 if full else 0])
    recencies = [-ln.order[0] for ln in lines if ln.rank == 7 and ln.order]
    newest = max(recencies, default=0)
    by_id = {ln.id: ln for ln in lines}
    weight = {ln.id: _weight(ln, newest) for ln in lines}
    sharing: dict[tuple[str, ...], int] = {}  # heading -> the facts that may stand under it
    for ln in lines:
        for key in _open(ln):
            sharing[key] = sharing.get(key, 0) + 1

    def value(fid: str, full: bool) -> tuple[float, int, bool]:
        """(worth per character, characters, shown full?): a heading (section, group, a
        topic line's head) is shared by the facts that may stand under it, so each is charged
        its share when judging worth. A fact whose brief line adds nothing the dump holds but
        whose full line does is offered in full at once: a brief line that adds nothing only
        costs room."""
        ln = by_id[fid]
        if full:
            cost = judged = ln.cost(full=True) - ln.cost(full=False)
            gain = _gain(info[fid][1], known)
            if ln.rank in FULL_RANKS and gain >= 1:
                gain += FULL_BONUS
            as_full = True
        else:
            headings = _heading_costs(ln, opened)
            shared = sum(c / sharing[k] for k, c in headings.items())
            gain = _gain(info[fid][0], known)
            as_full = gain <= 0
            if as_full:
                gain = _gain(info[fid][1], known)
            cost = ln.cost(full=as_full) + sum(headings.values())
            judged = ln.cost(full=as_full) + shared
            gain = gain + ITEM_BONUS if gain > 0 else 0.0
        if gain <= 0 or cost <= 0:
            return 0.0, cost, as_full
        return weight[fid] * gain / judged, cost, as_full

    # Pitfalls that still apply (rank 4) have the first claim on a share of what is left:
    # each is a sentence (symptom ← cause → fix), longer than a figure or a name, so on
    # information per character alone a dump of short details would crowd them out.
    claim = int(room * PITFALL_SHARE)
    while claim > 0:
        offers = [(value(ln.id, False), ln) for ln in lines if ln.rank == 4 and ln.id not in chosen]
        offers = [(v, ln) for v, ln in offers if v[0] > 0 and v[1] <= min(claim, room)]
        if not offers:
            break
        (_, cost, as_full), ln = max(offers, key=_claim_order)
        room -= cost
        claim -= cost
        chosen[ln.id] = as_full
        known |= set(info[ln.id][1 if as_full else 0])
        opened |= _open(ln)

    heap: list[tuple[float, int, str, bool]] = []
    for n, ln in enumerate(lines):
        full = ln.id in chosen
        if full or ln.rank not in STRICT_RANKS:
            score = value(ln.id, full)[0]
            if score > 0:
                heap.append((-score, n, ln.id, full))
    heapq.heapify(heap)
    order = {ln.id: n for n, ln in enumerate(lines)}
    while heap:
        _, n, fid, full = heapq.heappop(heap)
        if full != (fid in chosen) or chosen.get(fid):
            continue  # dropped since (covered by a later line), or already full
        score, cost, as_full = value(fid, full)
        if score <= 0 or cost > room:
            continue
        if heap and score < -heap[0][0]:
            heapq.heappush(heap, (-score, n, fid, full))
            continue
        ln = by_id[fid]
        room -= cost
        chosen[fid] = as_full
        said = info[fid][1 if as_full else 0]
        known |= set(said)
        if not full:
            opened |= _open(ln)
            if not as_full:
                follow = value(fid, True)[0]
                if follow > 0:
                    heapq.heappush(heap, (-follow, order[fid], fid, True))
        room += _drop_covered(by_id, chosen, info, ln, said)
    return chosen


def _drop_covered(
    by_id: dict[str, Line],
    chosen: dict[str, bool],
    info: dict[str, tuple[dict[str, float], dict[str, float]]],
    shown: Line,
    said: dict[str, float],
) -> int:
    """Drop the lines of `shown`'s group whose words `shown` now all says (`384 routed
    experts` once `384 routed experts top-8` is in): a grouped line should not repeat itself.
    Only facts of grouped groups (not pitfalls, not what ranks 1-3 put in); returns the
    characters freed."""
    if shown.section not in GROUPED_SECTIONS or shown.group in SOLO_GROUPS:
        return 0
    freed = 0
    for other in [i for i in chosen if i != shown.id]:
        ln = by_id[other]
        if ln.section != shown.section or ln.group != shown.group or ln.rank in STRICT_RANKS:
            continue
        full = chosen[other]
        if _covered(info[other][1 if full else 0], said):
            freed += ln.cost(full=full)
            del chosen[other]
    return freed


# --- knowledge bases -----------------------------------------------------------------------


def synthetic_facts(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """`n` facts of every category: figures per metric, pitfalls of three milestones, files
    under shared folders, and hardware lines that repeat each other (covered lines)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        cat = CATEGORIES[i % len(CATEGORIES)] if i % 10 else rng.choice(CATEGORIES[:4])
        since = str(rng.choice([100, 200, 300]))
        fact: dict[str, Any] = {
            "id": f"{cat[:3]}.g{i % 37}.item{i}",
            "category": cat,
            "title": f"{cat} item {i} on node{i % 13}",
            "statement": f"The {cat} item {i} reads {rng.randint(1, 9999)} units with "
            f"flag_{i % 50}=on at /data/run{i % 90}/x{i}.bin",
            "status": rng.choice(["verified", "verified", "assumed"]),
            "since": since,
            "sources": [{"seed": "seed.txt", "message": int(since)}],
        }
        fact |= _extra(cat, i, rng)
        out.append(fact)
    return out


def _extra(cat: str, i: int, rng: random.Random) -> dict[str, Any]:
    if cat == "benchmarks":
        return {
            "value": float(rng.randint(10, 500)),
            "unit": "tok/s",
            "metric": f"m{i % 20}",
            "config": {"engine": f"e{i % 3}"},
        }
    if cat == "pitfalls":
        return {
            "symptom": f"error {i % 40} at step",
            "cause": f"bad setting {i % 17}",
            "fix": f"set knob_{i % 23} = {i}",
        }
    if cat == "decisions":
        return {"rationale": f"because option {i % 11} was faster"}
    if cat == "inventory":
        return {
            "path": f"/data/run{i % 90}/file{i}.log",
            "kind": "log",
            "machine": "box",
            "purpose": f"log of run {i}",
        }
    if cat == "progress":
        return {"state": "in_progress" if i % 97 == 0 else rng.choice(["todo", "done", "done"])}
    if cat == "hardware":  # a node's line, then one saying more: the first is covered
        node = (i // 16) % 60
        more = f" {node * 10 + 7}GB" if (i // 8) % 2 else ""
        return {"title": f"Node{node} GPUs{more}", "statement": f"Node{node} has 8 GPUs{more}."}
    return {}


def write_kb(root: Path, facts: list[dict[str, Any]]) -> Path:
    """A knowledge base of `facts`, a thousand a file (a fact file holds at most 1 MiB)."""
    (root / "facts").mkdir(parents=True)
    for at in range(0, len(facts), 1000):
        text = yaml.safe_dump({"facts": facts[at : at + 1000]}, sort_keys=False)
        (root / "facts" / f"facts{at // 1000}.yaml").write_text(text)
    (root / "targets.yaml").write_text(yaml.safe_dump(TARGETS))
    (root / "milestones.yaml").write_text(yaml.safe_dump(MILESTONES))
    return root


def ranked(root: Path, as_of: str | None = None) -> tuple[list[Line], Info]:
    """The ranked lines and their information, as render_budgeted makes them."""
    kb = load_kb(root, strict=False)
    ctx = prepare(kb, StatusOptions(as_of=as_of))
    placed = place(ctx, live=ctx.uses_results)
    use_quotes(kb, placed.lines, ctx.as_of)
    assign_topics(placed.lines, placed.parents, ids=False)
    lines = rank_lines(kb, placed.lines, ctx)
    return lines, line_information(lines)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[list[Line], Info]]:
    base = tmp_path_factory.mktemp("selection")
    return {n: ranked(write_kb(base / f"kb{n}", synthetic_facts(n))) for n in (1500, 5000)}


def same_choice(lines: list[Line], info: Info, budgets: list[int]) -> None:
    for budget in budgets:
        room = budget * CHARS_PER_TOKEN
        assert list(choose(lines, room, info).items()) == list(
            old_choose(lines, room, info).items()
        ), budget


# --- the checks ----------------------------------------------------------------------------


@pytest.mark.parametrize("as_of", [None, "3157", "3478", "4504"])
def test_the_shipped_knowledge_base_gets_the_same_choice(as_of: str | None) -> None:
    lines, info = ranked(REPO, as_of)  # only read
    same_choice(lines, info, [300, 1000, 2300, 4000, 8000, 30000])


def test_a_small_knowledge_base_with_every_rank_gets_the_same_choice(tmp_path: Path) -> None:
    lines, info = ranked(write_kb(tmp_path / "kb", FACTS))
    same_choice(lines, info, [50, 100, 150, 200, 300, 500, 1000, 4000])


def test_synthetic_knowledge_bases_get_the_same_choice(synthetic: Any) -> None:
    lines, info = synthetic[1500]
    same_choice(lines, info, [500, 2300, 8000, 20000, 60000])
    lines, info = synthetic[5000]
    same_choice(lines, info, [2300, 8000])


def test_covered_lines_are_dropped_in_the_synthetic_knowledge_base(
    synthetic: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The comparison with the oracle means something: pitfalls are claimed, and a node's
    line (`Node3 GPUs`) is dropped once its sibling saying more (`Node3 GPUs 37GB`) is in."""
    freed: list[int] = []
    drop = selection._Choice.drop_covered

    def counted(self: Any, shown: Line, said: dict[str, float]) -> int:
        freed.append(drop(self, shown, said))
        return freed[-1]

    monkeypatch.setattr(selection._Choice, "drop_covered", counted)
    lines, info = synthetic[1500]
    chosen = choose(lines, 60000 * CHARS_PER_TOKEN, info)
    assert sum(1 for ln in lines if ln.rank == 4 and ln.id in chosen) > 50
    assert sum(1 for n in freed if n > 0) >= 10


def test_five_thousand_facts_are_chosen_in_bounded_time(synthetic: Any) -> None:
    """The whole document's worth of room (every fact fits): the plain loop took 47 s of
    CPU here (20 s at 30,000 tokens); the indexed one well under a second. Two shared
    cores: the bound is loose."""
    lines, info = synthetic[5000]
    started = time.process_time()
    chosen = choose(lines, 100_000 * CHARS_PER_TOKEN, info)
    assert time.process_time() - started < 5.0
    assert len(chosen) > 4000
