"""Budgeted dumps say each thing once and in words that keep their meaning.

Each test builds a small knowledge base with the shape of a defect seen in the shipped dumps
(a part repeating another part of its line, a quote cut from its subject, a comparison that
keeps one side, a list value dropped from its line, a pitfall whose cause names what the
reader searches for) and checks the dump's text, so the rule holds for any wording.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from dump_checklist import fresh_kb
from helpers import make_kb

from factbook.dumps.capture import plan_import, write
from factbook.dumps.status import StatusOptions
from factbook.dumps.status.budget import render_budgeted
from factbook.dumps.status.compact import forms
from factbook.dumps.status.items import make_item
from factbook.dumps.status.selection import information
from factbook.knowledge.kb import load_kb

MILESTONES = {
    "milestones": [
        {"id": "100", "title": "m100", "seed": "s.txt", "message": 100},
        {"id": "200", "title": "m200", "seed": "s.txt", "message": 200},
    ]
}


def fact(fid: str, category: str, statement: str, **extra: Any) -> dict[str, Any]:
    quote = extra.pop("quote", None)
    source: dict[str, Any] = {"seed": "s.txt", "message": 100}
    if quote:
        source["quote"] = quote
    return {
        "id": fid,
        "category": category,
        "title": extra.pop("title", fid),
        "statement": statement,
        "status": "verified",
        "since": "100",
        "sources": [source],
    } | extra


BASE = [
    fact("goal.main", "goal", "Serve the model well."),
    fact("instr.uv", "instructions", "Use uv, not pip."),
]


def dump(
    tmp_path: Path, facts: list[dict[str, Any]], budget: int = 4000, as_of: str = "100"
) -> str:
    root = make_kb(tmp_path / "kb", BASE + facts)
    (root / "milestones.yaml").write_text(yaml.safe_dump(MILESTONES))
    return render_budgeted(load_kb(root), StatusOptions(as_of=as_of), budget).text


def short_pitfalls(prefix: str, since: str, count: int = 40) -> list[dict[str, Any]]:
    """`count` one-line pitfalls: short enough to crowd a longer one out on value alone."""
    return [
        fact(
            f"pit.{prefix}{n}",
            "pitfalls",
            f"Tool T{n} breaks on flag F{n}.",
            title=f"T{n} breaks on F{n}",
            symptom=f"E{n} exit",
            cause=f"F{n} unsupported",
            fix=f"Use G{n}",
            since=since,
        )
        for n in range(count)
    ]


def test_a_number_and_its_unit_are_one_piece() -> None:
    assert information("547GB") == information("547 GB") == {"547gb": 1.0}
    assert "3" not in information("/data volume: 3 TB")  # `3 TB` is not what `3` says
    # a setting counts its name and its value, not the pair as a third piece
    assert information("hidden_size=7168") == {"hidden_size": 1.0, "7168": 1.0}


def test_a_part_repeated_by_another_part_of_its_line_goes(tmp_path: Path) -> None:
    quote = "512 routed experts top-4"
    text = dump(
        tmp_path,
        [
            fact(
                "model.experts",
                "model",
                "The model has 512 routed experts.",
                value=512,
                title="Routed experts",
                quote=quote,
            ),
            fact(
                "model.topk",
                "model",
                "The router picks the top-4 of 512.",
                value=4,
                title="Experts per token",
                quote=quote,
            ),
            fact("model.layers", "model", "The model has 48 layers.", value=48, title="Layers"),
        ],
    )
    assert "512" in text and "top-4" in text, text
    for line in text.splitlines():  # no part of a grouped line says what another part says
        parts = [p.strip() for p in line.split(": ", 1)[-1].split("; ")]
        for n, part in enumerate(parts):
            assert not any(part in other for m, other in enumerate(parts) if m != n), line


def test_a_quote_cut_from_its_subject_is_not_a_line(tmp_path: Path) -> None:
    text = dump(
        tmp_path,
        [
            fact(
                "sw.engine_a.load",
                "software",
                "Engine A loads the weights in 19 min.",
                value=19,
                unit="min",
                title="Engine A weight load time",
                quote="(vs 19 min in Engine A!)",
            ),
        ],
    )
    assert "vs 19 min" not in text
    assert "19 min" in text


def test_a_comparison_keeps_both_sides(tmp_path: Path) -> None:
    text = dump(
        tmp_path,
        [
            fact(
                "tok.vocab_vs_other",
                "tokenizer",
                "Model A has vocab_size=151,000 vs model B's vocab_size=99,000.",
                value=151000,
                title="Model A vs model B vocab",
                quote="Model A vocab_size=151,000 vs Model B vocab_size=99,000",
            ),
        ],
    )
    assert "99,000" in text or "99000" in text, text


def test_a_list_of_paths_reads_as_names(tmp_path: Path) -> None:
    files = ["/opt/env/site/engine/config/spec.py", "/opt/env/site/engine/models/big_model.py"]
    text = dump(
        tmp_path,
        [
            fact(
                "sw.engine.patches",
                "software",
                "Two engine files were patched.",
                value=files,
                title="Engine patches",
            )
        ],
    )
    assert "Engine patches: spec.py, big_model.py" in text, text


def test_a_pitfall_brief_keeps_the_cause_that_names_something(tmp_path: Path) -> None:
    pitfall = fact(
        "pit.stop-id",
        "pitfalls",
        "Token 4242 is not the stop token.",
        title="The stop token is 5151, not 4242",
        symptom="Replies never end.",
        cause="4242 decodes to 'zork'; only 5151 is the special token.",
        fix="Use 5151 as the stop id.",
    )
    plain = fact(
        "pit.slow",
        "pitfalls",
        "Builds are slow.",
        title="Builds are slow",
        symptom="The build takes an hour.",
        cause="Too many jobs at once.",
        fix="Build with fewer jobs.",
    )
    root = make_kb(tmp_path / "kb", [*BASE, pitfall, plain])
    (root / "milestones.yaml").write_text(yaml.safe_dump(MILESTONES))
    result = render_budgeted(load_kb(root), StatusOptions(as_of="100"), 4000)
    brief = {ln.id: ln.brief for ln in result.shown + result.left_out}
    assert "← 4242 decodes to 'zork' → Use 5151" in brief["pit.stop-id"]
    assert "←" not in brief["pit.slow"]  # a cause naming nothing new stays in the full line


def test_the_first_dump_shows_what_was_accomplished_before_old_details(tmp_path: Path) -> None:
    """With no previous dump, what was done so far is what changed: the reader picking the
    work up must not redo it, so it goes before details of the same age."""
    done = [
        fact(
            f"prog.step{n}",
            "progress",
            f"Step {n} finished: the run completed and wrote its outputs where the team keeps "
            f"them ({n * 11} GB).",
            title=f"Step {n} finished",
            state="done",
        )
        for n in range(1, 4)
    ]
    details = [
        fact(
            f"hw.part{n}",
            "hardware",
            f"Part {n} of the box: model X{n}00, rated {n * 13} W, serial S{n:04d}.",
            title=f"Part {n}",
            value=f"X{n}00 {n * 13}W S{n:04d} s{n * 3} B{n * 7}",
        )
        for n in range(1, 40)
    ]
    text = dump(tmp_path, done + details, budget=300)
    assert "## Accomplished" in text
    for n in range(1, 4):
        assert f"Step {n} finished" in text, text
    assert "hardware" in text.split("## Not in this dump", 1)[1]  # details made room


def test_a_pitfall_that_replaced_a_refuted_assumption_goes_first(tmp_path: Path) -> None:
    """'What was believed, what is true': the pitfall that refuted an assumption since the
    previous dump has the first turn at the pitfalls' room, before shorter ones."""
    believed = fact(
        "dec.assumption.steps",
        "decisions",
        "Assumption: num_steps and num_draft_tokens are independent.",
        rationale="the flags looked independent",
        status="refuted",
        history=[
            {"at": "100", "status": "assumed", "note": "believed"},
            {"at": "200", "status": "refuted", "note": "topk=1 ties them"},
        ],
    )
    replacing = fact(
        "pit.topk1",
        "pitfalls",
        "With topk=1 the server silently sets num_draft_tokens to num_steps + 1.",
        title="With topk=1 the server forces num_draft_tokens = num_steps + 1",
        symptom="A run meant to use 16 draft tokens behaves like 2, with no warning printed",
        cause="server_args.py (lines ~2443-2449) overrides num_draft_tokens when topk is 1",
        fix="Set num_steps to the wanted depth minus one (num_steps=15 for 16 tokens)",
        since="200",
        links={"replaces": ["dec.assumption.steps"]},
    )
    text = dump(tmp_path, [believed, replacing, *short_pitfalls("short", "200")], 500, "200")
    assert "`pit.topk1`" in text.split("## Not in this dump", 1)[0], text


def test_a_setting_is_named_as_the_statement_writes_it(tmp_path: Path) -> None:
    """`INT4 group size: 32` says less than `INT4 group_size=32`, the name a reader greps a
    config for, when the statement writes it so; a title without such a name keeps its form."""
    group = fact(
        "model.group_size",
        "model",
        "The INT4 weights use group_size=32.",
        title="INT4 group size",
        value=32,
    )
    other = fact("model.layers", "model", "The model has 61 layers (n_layers=61).", value=61)
    other["title"] = "Layer count"
    root = make_kb(tmp_path / "kb", [*BASE, group, other])
    (root / "milestones.yaml").write_text(yaml.safe_dump(MILESTONES))
    kb = load_kb(root)
    brief = {
        fid: forms(make_item(kb, kb.facts[fid], None, None), "line", {})[0]
        for fid in ("model.group_size", "model.layers")
    }
    assert brief == {"model.group_size": "INT4 group_size=32", "model.layers": "Layer count: 61"}


def acceptance(config: dict[str, Any]) -> dict[str, Any]:
    """A figure that matters now (the best of its metric), with its configuration."""
    return fact(
        "bench.spec.accept",
        "benchmarks",
        "With the drafter the engine accepts 15% of draft tokens.",
        title="Drafter acceptance",
        value=15,
        unit="%",
        metric="acceptance",
        config=config,
    )


def test_a_count_in_a_configuration_reads_as_one(tmp_path: Path) -> None:
    """`3 patches`, the words a hand-written dump uses, not `patches=3`; a setting, a flag
    and a plain value keep the `name=value` form."""
    text = dump(tmp_path, [acceptance({"engine": "x", "patches": 3, "concurrency": 8,
                                       "nvlink": False, "status": 2})])  # fmt: skip
    assert "3 patches" in text and "patches=3" not in text, text
    assert "concurrency=8" in text and "nvlink=false" in text and "status=2" in text, text


def test_a_number_is_said_again_only_next_to_its_words(tmp_path: Path) -> None:
    """A part is dropped as said by another part of its group only when every number stands
    there next to one of its own words: `128 threads` is not said by `VM 128`, while `2
    sockets` is said by `2 sockets x 32 cores`."""
    hardware = [
        fact(
            "hw.cpu.threads",
            "hardware",
            "With SMT the box has 128 threads.",
            value=128,
            title="CPU threads",
        ),
        fact(
            "hw.cpu.sockets", "hardware", "The box has 2 CPU sockets.", value=2, title="CPU sockets"
        ),
        fact(
            "hw.cpu.cores",
            "hardware",
            "64 physical cores in total (2 sockets x 32 cores).",
            value=64,
            title="CPU cores",
        ),
        fact(
            "hw.box.layout",
            "hardware",
            "The host runs container CT 129 for inference and VM 128 for the desktop.",
            title="Box layout",
        ),
    ]
    text = dump(tmp_path, hardware, budget=8000)
    assert "128 threads" in text, text
    assert "`hw.cpu.sockets`" not in text.split("## Not in this dump", 1)[0] or (
        "2 sockets x 32 cores" not in text
    ), text


def test_work_that_failed_says_so_once(tmp_path: Path) -> None:
    """Failed or blocked work is tagged so a reader does not take it for done, unless its
    own words already say it."""
    progress = [
        fact(
            "prog.vllm",
            "progress",
            "Engine testing (failed, 15% acceptance): the drafter is rejected.",
            title="Engine testing (failed, 15% acceptance)",
            state="failed",
        ),
        fact(
            "prog.port",
            "progress",
            "Porting waits on the vendor's kernel.",
            title="Port to the new GPU",
            state="blocked",
        ),
    ]
    text = dump(tmp_path, progress)
    assert "(FAILED)" not in text, text
    assert text.count("(BLOCKED)") == 1, text


def test_counts_and_states_said_in_words_import_back(tmp_path: Path) -> None:
    """`factbook import` reads what these forms write: `3 patches` as `patches: 3` in the
    figure's configuration, `(failed, ...)` in a progress item's words as its state."""
    bench = acceptance({"engine": "x", "patches": 3, "concurrency": 8})
    failed = fact(
        "prog.engine",
        "progress",
        "Engine testing (failed, 15% acceptance): the drafter is rejected.",
        title="Engine testing (failed, 15% acceptance)",
        state="failed",
    )
    doc = tmp_path / "dump.md"
    doc.write_text(dump(tmp_path, [bench, failed]), encoding="utf-8")
    fresh = fresh_kb(tmp_path / "fresh", "100")
    result = plan_import(fresh, doc, "100")
    write(result.applied)
    back = [f for f in load_kb(fresh).facts.values() if f.sources and f.sources[0].seed == doc.name]
    configs = [f.extra.get("config") for f in back if f.category == "benchmarks"]
    states = [f.extra.get("state") for f in back if f.category == "progress"]
    assert configs == [{"engine": "x", "patches": 3, "concurrency": 8}], configs
    assert states == ["failed"], states


def test_the_pitfall_learned_last_goes_before_older_shorter_ones(tmp_path: Path) -> None:
    """The pitfall learned since the previous dump is the likeliest to bite the next
    session: it has the pitfalls' room before older ones, however short they are."""
    newest = fact(
        "pit.hidden-states-differ",
        "pitfalls",
        "A drafter trained on engine A's hidden states fails under engine B.",
        title="Hidden states differ between engine A and engine B (INT4 dequant paths)",
        symptom="25% accept rate (accept_len 1.00) with the custom drafter on engine B",
        cause="Different INT4 dequantization paths give different hidden state values",
        fix="Extract the training hidden states with engine B itself and retrain on them",
        since="200",
    )
    text = dump(tmp_path, [*short_pitfalls("old", "100"), newest], 500, "200")
    shown = text.split("## Not in this dump", 1)[0]
    assert "`pit.hidden-states-differ`" in shown, text
