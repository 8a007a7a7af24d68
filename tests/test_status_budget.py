"""`factbook status --budget`: dense dumps within a token budget, chosen by priority.

The shipped knowledge base is measured against the seed items (tests/data/seed_items.yaml):
what each seed article says its hand-written dump held. Priority rules, the left-out list,
JSON, the API, redaction, output paths and the handbook page are checked on small knowledge
bases built here.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO, cli, items_missing, make_kb, seed_items

import factbook.api
from factbook.dumps.capture.parse import parse_text
from factbook.dumps.capture.sections import resolve
from factbook.dumps.status import StatusOptions, render_status
from factbook.dumps.status.budget import count_tokens, render_budgeted
from factbook.handbook import generate
from factbook.knowledge.kb import load_kb

SEED_BUDGET = 2300
# Measured (bench/status_budget.py): the share of seed items kept at 2,300 tokens. The issue
# asks for 95% at each milestone (3157 keeps 138 of 145, 3478 49 of 49, 4504 55 of 56), so a
# change that loses items fails here (docs/performance.md: the curve, what is still missing).
FLOORS = {"3157": 0.95, "3478": 0.95, "4504": 0.95}
LATER = {  # first learned after the milestone: in no dump of it, at any budget
    "3157": ["midlayer", "layers.0.", "fix_eagle3_keys", "[-1, 2, 30]", "capture_embedding"],
    "3478": ["midlayer", "layers.0.", "fix_eagle3_keys", "[-1, 2, 30]", "capture_embedding"],
}


@pytest.fixture(scope="module")
def shipped() -> Any:
    return load_kb(REPO, strict=False)


@pytest.fixture(scope="module")
def seed_dumps(shipped: Any) -> dict[str, Any]:
    return {m: render_budgeted(shipped, StatusOptions(as_of=m), SEED_BUDGET) for m in FLOORS}


def front_matter(text: str) -> dict[str, Any]:
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert match, "no front matter"
    return yaml.safe_load(match.group(1))


@pytest.mark.parametrize("milestone", list(FLOORS))
def test_seed_items_kept_within_2300_tokens(
    shipped: Any, seed_dumps: dict[str, Any], milestone: str
) -> None:
    items = seed_items()[milestone]
    full = render_status(shipped, StatusOptions(as_of=milestone))
    assert items_missing(full, items) == []  # every item is in the knowledge base
    dump = seed_dumps[milestone]
    assert dump.tokens <= SEED_BUDGET
    missing = items_missing(dump.text, items)
    kept = 1 - len(missing) / len(items)
    assert kept >= FLOORS[milestone], f"{kept:.1%} kept; missing {missing}"
    assert len(dump.text) * 5 < len(full)  # the point: a fraction of the full document


@pytest.mark.parametrize("milestone", list(LATER))
@pytest.mark.parametrize("budget", [1000, SEED_BUDGET, 8000])
def test_nothing_learned_later(shipped: Any, milestone: str, budget: int) -> None:
    dump = render_budgeted(shipped, StatusOptions(as_of=milestone), budget)
    for text in (dump.text, dump.json()):
        for later in LATER[milestone]:
            assert later not in text, f"{later!r} in the {milestone} dump at {budget}"
    moment = shipped.milestone(milestone)
    named = [ln.id for ln in dump.shown + dump.left_out]
    assert all(shipped.visible(shipped.facts[i], moment) for i in named)
    if milestone == "3478":
        assert "embedding capture" not in dump.text.lower()
        assert "eagle3.ckpt.midlayer_keys" not in dump.json()


def test_token_count_rule_and_front_matter(shipped: Any) -> None:
    for budget in (400, 1000, 4000, 8000):
        dump = render_budgeted(shipped, StatusOptions(as_of="4504", since="3157"), budget)
        meta = front_matter(dump.text)
        assert meta["tokens"] == math.ceil(len(dump.text) / 4) == dump.tokens <= budget
        assert meta["budget_tokens"] == budget and meta["token_rule"] == "ceil(characters / 4)"
        assert meta["since"] == "3157" and meta["as_of"] == "4504"
        facts = meta["facts"]
        assert facts["shown"] + facts["left_out"] == facts["known"]
        assert facts["shown"] == len(dump.shown)
    assert count_tokens("abcde") == 2


# --- a small knowledge base: every rank once --------------------------------------------------


def fact(fid: str, category: str, statement: str, **extra: Any) -> dict[str, Any]:
    since = extra.pop("since", "100")
    out = {
        "id": fid,
        "category": category,
        "title": extra.pop("title", fid),
        "statement": statement,
        "status": extra.pop("status", "verified"),
        "since": since,
        "sources": [{"seed": "seed.txt", "message": int(since)}],
    }
    return out | extra


FILLER = [
    fact(
        f"hw.detail{n:02d}",
        "hardware",
        f"Hardware detail {n}: sensor {n} on the mainboard reads {n * 7} units at idle.",
        title=f"Sensor {n} on the mainboard reads {n * 7} units at idle",
    )
    for n in range(40)
]
FACTS = [
    fact("goal.main", "goal", "Serve the big model at 100 tok/s.", title="Serve the model fast"),
    fact("instr.uv", "instructions", "Use uv, never pip.", title="Use uv"),
    fact(
        "instr.ssh",
        "instructions",
        "ssh root@gpu-box-7 through the bastion.",
        title="ssh to gpu-box-7",
        tags=["access"],
    ),
    fact(
        "pit.flag",
        "pitfalls",
        "The draft flag is silently overridden.",
        title="Draft flag overridden",
        symptom="accept length 1.0",
        cause="topk 1 override",
        fix="set steps = draft - 1",
        since="200",
    ),
    fact(
        "bench.first",
        "benchmarks",
        "Engine A runs at 80.0 tok/s.",
        title="Engine A single-stream",
        value=80.0,
        unit="tok/s",
        metric="single_stream",
        config={"engine": "a"},
        tags=["baseline"],
    ),
    fact(
        "bench.best",
        "benchmarks",
        "Engine B tuned runs at 95.5 tok/s.",
        title="Engine B tuned single-stream",
        value=95.5,
        unit="tok/s",
        metric="single_stream",
        config={"engine": "b", "tuned": True},
        since="200",
    ),
    fact(
        "bench.mid",
        "benchmarks",
        "Engine B untuned runs at 61.0 tok/s.",
        title="Engine B untuned",
        value=61.0,
        unit="tok/s",
        metric="single_stream",
        config={"engine": "b"},
        tags=["baseline"],
    ),
    fact(
        "dec.believed",
        "decisions",
        "Engine B needs no tuning.",
        title="Assumption: B needs no tuning",
        rationale="B's defaults looked good",
        status="refuted",
        history=[
            {"at": "100", "status": "assumed"},
            {"at": "200", "status": "refuted", "note": "tuning gave +57%"},
        ],
        links={"replaced_by": ["bench.best"]},
    ),
    fact(
        "prog.doing",
        "progress",
        "Debugging the draft.",
        title="Debug the draft",
        state="in_progress",
        since="200",
    ),
    fact(
        "prog.second",
        "progress",
        "Then sweep steps.",
        title="Sweep steps",
        state="todo",
        priority=2,
        since="200",
    ),
    fact(
        "prog.first",
        "progress",
        "Restart with debug on.",
        title="Restart with debug",
        state="todo",
        priority=1,
        since="200",
    ),
    fact(
        "inv.log",
        "inventory",
        "The debug log.",
        title="debug log",
        path="/data/run/debug.log",
        kind="log",
        machine="box",
        purpose="the draft debug log",
    ),
    fact("sw.later", "software", "Engine C exists.", title="Engine C", since="300"),
    *FILLER,
]
MILESTONES = {
    "milestones": [
        {"id": str(m), "title": f"m{m}", "seed": "seed.txt", "message": m} for m in (100, 200, 300)
    ]
}
TARGETS = {"targets": {"box": {"host": "gpu-box-7.example.org", "user": "alice"}}}


@pytest.fixture()
def small(tmp_path: Path) -> Path:
    root = make_kb(tmp_path / "kb", FACTS, targets=TARGETS)
    (root / "milestones.yaml").write_text(yaml.safe_dump(MILESTONES))
    return root


def dump_of(root: Path, budget: int, **options: Any) -> Any:
    return render_budgeted(load_kb(root), StatusOptions(**options), budget)


def section(text: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    return match.group(1) if match else ""


def test_priority_rules_in_the_issue_order(small: Path) -> None:
    everything = dump_of(small, 20000, as_of="200")
    assert not everything.left_out
    ranks = {ln.id: ln.rank for ln in everything.shown}
    assert ranks["goal.main"] == 1
    assert ranks["instr.uv"] == ranks["instr.ssh"] == 2
    assert ranks["prog.doing"] == ranks["prog.first"] == ranks["prog.second"] == 3
    assert ranks["pit.flag"] == 4
    assert ranks["bench.best"] == ranks["bench.first"] == 5  # best figure and first baseline
    assert ranks["bench.mid"] == 7  # a baseline, neither best nor first
    assert ranks["dec.believed"] == 6  # refuted since the previous dump
    assert ranks["hw.detail00"] == 7
    # a tight budget keeps the top ranks and leaves the rest out
    tight = dump_of(small, 450, as_of="200")
    shown = {ln.id for ln in tight.shown}
    assert {"goal.main", "instr.uv", "instr.ssh", "prog.doing", "prog.first"} <= shown
    assert "pit.flag" in shown and "bench.best" in shown
    assert len([i for i in shown if i.startswith("hw.detail")]) < len(FILLER)
    assert tight.tokens <= 450
    for budget in (250, 330, 450, 700):  # a higher rank never drops while a lower one stays
        lines = dump_of(small, budget, as_of="200").shown
        top = {ln.rank for ln in lines}
        if 7 in top:
            assert {1, 2, 3} <= top


def test_compact_layout_marks_and_lines(small: Path) -> None:
    text = dump_of(small, 3000, as_of="200").text
    titles = re.findall(r"^## (.+)$", text, re.M)
    assert titles[:6] == [
        "Goal",
        "Instructions",
        "Discoveries",
        "In progress",
        "Next steps",
        "Relevant files",
    ]
    assert text.count("✓ verified") == 1  # the legend, once
    assert "+ new since 100" in text
    steps = section(text, "Next steps")
    assert steps.index("1. ✓+") < steps.index("Restart") < steps.index("2. ✓+")
    refuted = re.search(r"^- ✗\+? .*$", text, re.M)
    assert refuted and "→" in refuted.group(0) and "Engine B tuned" in refuted.group(0)
    pitfall = re.search(r"^- ✓\+ Draft flag overridden.*$", text, re.M)
    assert pitfall and "`pit.flag`" in pitfall.group(0)
    assert "accept length 1.0" in pitfall.group(0) and "→ set steps" in pitfall.group(0)
    figure = re.search(r"^- ✓\+? .*95\.5 tok/s \[engine=b, tuned=true\].*$", text, re.M)
    # one line under its topic (`bench.*`, which `factbook import` reads back), no ids
    assert figure and figure.group(0).startswith("- ✓ Engine `bench.*`: ")
    with_ids = dump_of(small, 3000, as_of="200", ids=True).text
    figure = re.search(r"^- ✓\+? .*95\.5 tok/s \[engine=b, tuned=true\].*$", with_ids, re.M)
    assert figure and "`bench.{first,best,mid}`:" in figure.group(0)  # --ids: every id
    body = text.split("## Goal", 1)[1]
    assert "msg 100" not in body and "msg 200" not in body  # no stamps where nothing is at stake
    for line in text.splitlines():  # one fact per line, one-character mark first
        if line.startswith("- ") and "## Not in this dump" not in text.split(line)[0]:
            assert line[2] in "✓?~!E✗"


def test_left_out_facts_counted_and_named_with_link(small: Path) -> None:
    dump = dump_of(small, 700, as_of="200")
    assert dump.left_out
    rest = section(dump.text, "Not in this dump")
    assert f"{len(dump.left_out)} more facts" in rest and "facts/CATEGORY.md#ID" in rest
    hardware = [ln for ln in dump.left_out if ln.item.category == "hardware"]
    assert (
        f"- hardware {len(hardware)}: hw.{{" in rest or f"- hardware {len(hardware)}: hw." in rest
    )
    data = dump.data["left_out"]
    assert data["count"] == len(dump.left_out)
    listed = [i for group in data["by_category"] for i in group["ids"]]
    assert sorted(listed) == sorted(ln.id for ln in dump.left_out)
    assert {g["page"] for g in data["by_category"]} >= {"facts/hardware.md"}


def test_json_holds_the_same_selection(small: Path) -> None:
    code, out, err = cli(small, "status", "--as-of", "200", "--budget", "700", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    dump = dump_of(small, 700, as_of="200")
    ids = [row["id"] for s in data["sections"] for g in s["groups"] for row in g["lines"]]
    assert ids == [ln.id for ln in dump.shown]
    assert data["tokens"] == dump.tokens <= 700
    assert {row["rank"] for s in data["sections"] for g in s["groups"] for row in g["lines"]}
    code, _, err = cli(small, "status", "--format", "json")
    assert code == 2 and "needs --budget" in err


def test_cli_paths_errors_and_as_of(small: Path) -> None:
    code, out, err = cli(small, "status", "--as-of", "200", "--budget", "1000")
    assert code == 0, err
    path = small / "docs" / "status" / "status-200-budget-1000.md"
    assert out.strip() == str(path) and path.is_file()
    assert "status-200-budget-1000.md" in (path.parent / "index.md").read_text()
    code, _, err = cli(small, "status", "--budget", "30")
    assert code == 2 and "too small" in err and "Traceback" not in err
    code, _, err = cli(small, "status", "--budget", "lots")
    assert code == 2 and "not a number of tokens" in err
    code, out, _ = cli(small, "status", "--as-of", "100", "--budget", "5000", "--out", "-")
    assert "Engine B tuned" not in out and "Draft flag" not in out  # learned at 200
    code, out, _ = cli(
        small, "status", "--as-of", "300", "--since", "100", "--budget", "5000", "--out", "-"
    )
    assert "✓+ Engine C" in out and "✓+ Draft flag" in out  # new since 100, not just since 200


def test_api_redaction_and_importable(small: Path) -> None:
    kb = load_kb(small)
    text = factbook.api.status(kb, as_of="200", budget=600)
    assert front_matter(text)["tokens"] <= 600
    data = json.loads(factbook.api.status(kb, as_of="200", budget=600, format="json"))
    assert data["budget_tokens"] == 600
    redacted = factbook.api.status(kb, budget=800, redact=True)
    assert "gpu-box-7" not in redacted and front_matter(redacted)["tokens"] <= 800
    # `factbook import` reads it as a generated dump, each line under a section it knows
    doc = parse_text(text)
    assert doc.generated and doc.entries
    cats = {resolve(e.headings).category for e in doc.entries if resolve(e.headings)}
    assert {"goal", "instructions", "pitfalls", "progress"} <= cats


def test_handbook_offers_the_newest_milestone_dump(small: Path) -> None:
    book = generate(small)
    page = book.pages["status-handover.md"]
    assert "milestone 300" in page and "## The dump as text" in page
    assert "Status as of milestone 300" in page and "tokens" in page
    nav = next(entry["Status documents"] for entry in book.nav if "Status documents" in entry)
    assert {"Hand-over dump": "status-handover.md"} in nav


def test_facts_sharing_a_topic_share_a_line(small: Path) -> None:
    plain = dump_of(small, 3000, as_of="200")
    hardware = section(plain.text, "Discoveries").split("### Hardware\n", 1)[1]
    line = hardware.splitlines()[0]
    assert line.startswith("- ✓ Sensor `hw.*`: ") and "detail01" not in line  # words once
    dump = dump_of(small, 3000, as_of="200", ids=True)
    hardware = section(dump.text, "Discoveries").split("### Hardware\n", 1)[1]
    line = hardware.splitlines()[0]
    # --ids: mark once, title words once, every id (the prefix once, the rest in braces)
    assert line.startswith("- ✓ Sensor `hw.{detail00,detail01,")
    assert line.count("on the mainboard") == len(FILLER) and line.count("✓") == 1
    assert "Sensor 7 " not in line and "; 7 on the mainboard reads 49 units" in line
    rows = [r for s in dump.data["sections"] for g in s["groups"] for r in g["lines"]]
    sensors = [r for r in rows if r["id"].startswith("hw.detail")]
    assert len(sensors) == len(FILLER) and {r["line"] for r in sensors} == {"Sensor `hw.*`"}
    # a part whose mark differs carries its own; the line keeps the most common one
    facts = [f | {"status": "assumed"} if f["id"] == "hw.detail03" else f for f in FACTS]
    root = make_kb(small.parent / "kb2", facts, targets=TARGETS)
    (root / "milestones.yaml").write_text(yaml.safe_dump(MILESTONES))
    text = dump_of(root, 3000, as_of="200", ids=True).text
    assert "; ? 3 on the mainboard reads 21 units at idle;" in text


@pytest.mark.parametrize(
    ("milestone", "lines"),
    [
        ("3157", ["- ✓ GPU `hw.gpu.*`: count: 8; ", "`/data/eagle3/synth_10k/`: "]),
        ("3478", ["61 layers", "384 routed experts", "hidden_size=7168", "q_lora_rank=1536"]),
    ],
)
def test_seed_dumps_group_as_the_seeds_do(
    seed_dumps: dict[str, Any], milestone: str, lines: list[str]
) -> None:
    text = seed_dumps[milestone].text
    for piece in lines:
        assert piece in text
    grouped = [ln for ln in text.splitlines() if re.match(r"^- \S+ .*`[\w./{},*-]+`: .*; ", ln)]
    assert len(grouped) >= 8  # many values per line, not one fact per bullet
