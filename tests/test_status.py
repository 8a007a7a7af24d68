"""`factbook status` on small knowledge bases built here: sections, marks, changes,
overrides, output files and redaction. The shipped knowledge base is tested in
test_status_seeds.py."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from factbook.commands.cli import run
from factbook.dumps.status import (
    Redactor,
    StatusOptions,
    default_path,
    prepare,
    redactor_for,
    render_status,
    write_status,
)
from factbook.dumps.status.redact import IPV4
from factbook.errors import UsageError
from factbook.knowledge.kb import load_kb
from factbook.store.results import ResultRecord, write_run

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)
SEED = "seed.txt"


def src(message: int) -> list[dict[str, Any]]:
    return [{"seed": SEED, "message": message}]


def fact(fid: str, category: str, statement: str, **extra: Any) -> dict[str, Any]:
    out = {
        "id": fid,
        "category": category,
        "title": extra.pop("title", fid),
        "statement": statement,
        "status": extra.pop("status", "verified"),
        "sources": extra.pop("sources", src(int(extra.get("since", "100")))),
    }
    out.update(extra)
    return out


FACTS = [
    fact("goal.main", "goal", "Serve the big model fast.", since="100"),
    fact(
        "instr.ssh",
        "instructions",
        "ssh alice@10.20.30.40 via bastion-7.example.org",
        tags=["access"],
        since="100",
    ),
    fact("instr.uv", "instructions", "Use uv, not pip.", since="100"),
    fact(
        "instr.quality", "instructions", "No precision cuts.", tags=["user-constraint"], since="100"
    ),
    fact(
        "hw.gpus",
        "hardware",
        "8 GPUs of 96 GB.",
        value=8,
        target="box",
        since="100",
        check={"probe": "gpu.count", "args": {}, "expect": {"eq": 8}},
    ),
    fact(
        "hw.swap",
        "hardware",
        "No swap.",
        value=0,
        target="box",
        since="100",
        check={"probe": "swap.total_gib", "args": {}, "expect": {"eq": 0}},
    ),
    fact(
        "hw.cpu",
        "hardware",
        "An EPYC CPU.",
        target="box",
        since="100",
        check={"probe": "cpu.model", "args": {}, "expect": {"contains": "EPYC"}},
    ),
    fact(
        "hw.probed",  # no `since`: valid from the start, but only known since today's run
        "hardware",
        "Probed today: 2 NUMA nodes.",
        status="assumed",
        sources=[{"run": "r0", "date": "2026-11-29", "target": "box"}],
    ),
    fact("sw.torch", "software", "torch 2.10.", tags=["version"], since="100"),
    fact("sw.hang", "software", "The server hangs after loading.", since="100", until="200"),
    fact("sw.serves", "software", "The server serves.", since="200"),
    fact("model.layers", "model", "61 layers.", since="100"),
    fact("model.draft", "model", "Draft has 1 layer.", tags=["draft"], since="100"),
    fact(
        "tok.think",
        "tokenizer",
        "<think> is 163606.",
        token="<think>",
        token_id=163606,
        since="100",
    ),
    fact(
        "dec.assume",
        "decisions",
        "Engine B will just work.",
        rationale="It is first-class.",
        status="refuted",
        since="100",
        history=[
            {"at": "100", "status": "assumed"},
            {"at": "300", "status": "refuted", "note": "it did not"},
        ],
        links={"replaced_by": ["pit.flag"]},
    ),
    fact(
        "pit.flag",
        "pitfalls",
        "The flag is silently overridden.",
        symptom="slow",
        cause="override",
        fix="set steps",
        since="300",
        sources=src(300),
    ),
    fact(
        "bench.base",
        "benchmarks",
        "Base runs at 63.6 tok/s.",
        status="stale",  # superseded at 300: current, so verified, as of 200
        value=63.6,
        unit="tok/s",
        metric="single_stream",
        config={"engine": "b", "tuned": False},
        tags=["baseline"],
        since="200",
        until="300",
        sources=src(200),
    ),
    fact(
        "bench.base2",
        "benchmarks",
        "Base runs at 90.0 tok/s.",
        value=90.0,
        unit="tok/s",
        metric="single_stream",
        config={"engine": "b", "tuned": False},
        tags=["baseline"],
        since="300",
        sources=src(300),
    ),
    fact(
        "bench.peak",
        "benchmarks",
        "Peak 2320 tok/s.",
        value=2320,
        unit="tok/s",
        metric="throughput",
        config={"concurrency": 128},
        since="200",
        sources=src(200),
    ),
    fact(
        "bench.spec",
        "benchmarks",
        "Spec runs at 54.8 tok/s.",
        value=54.8,
        unit="tok/s",
        metric="single_stream",
        config={"engine": "b", "spec": True},
        accept_len=1.8,
        since="300",
        sources=src(300),
    ),
    fact(
        "train.e1",
        "training",
        "Epoch 1.",
        metric="validation",
        epoch=1,
        value={"loss": 6.276, "acc": 74.0},
        since="200",
        sources=src(200),
    ),
    fact(
        "train.e2",
        "training",
        "Epoch 2.",
        metric="validation",
        epoch=2,
        value={"loss": 6.138, "acc": 74.4},
        since="200",
        sources=src(200),
    ),
    fact(
        "train.samples", "training", "10,000 samples.", metric="samples", value=10000, since="100"
    ),
    fact("prog.done", "progress", "Built the pipeline.", state="done", since="100"),
    fact("prog.failed", "progress", "Tried engine A.", state="failed", since="100"),
    fact(
        "prog.doing",
        "progress",
        "Debugging the hang.",
        state="in_progress",
        since="100",
        until="200",
    ),
    fact(
        "prog.later",
        "progress",
        "Tune later.",
        state="todo",
        priority=3,
        criterion="faster than 90",
        since="100",
    ),
    fact(
        "prog.first",
        "progress",
        "Check the log first.",
        state="todo",
        priority=1,
        criterion="log shows the stall",
        since="100",
    ),
    fact(
        "prog.second",
        "progress",
        "Then fix it.",
        state="todo",
        priority=2,
        criterion="port opens",
        since="100",
    ),
    fact(
        "inv.script",
        "inventory",
        "The training script.",
        path="/home/alice/train.py",
        kind="script",
        machine="box",
        purpose="trains the draft",
        since="100",
    ),
    fact(
        "inv.log",
        "inventory",
        "The debug log.",
        path="/data/debug.log",
        kind="log",
        machine="box",
        purpose="hang debug log",
        size="2 MB",
        since="100",
    ),
    fact(
        "inv.notes",
        "inventory",
        "Notes.",
        path="notes.md",
        kind="doc",
        machine="local",
        purpose="notes",
        since="100",
    ),
]
TARGETS = {
    "targets": {
        "bastion": {"host": "bastion-7.example.org", "user": "root"},
        "box": {
            "host": "10.20.30.40",
            "user": "alice",
            "jump": "bastion",
            "description": "the GPU box",
        },
        "local": {"transport": "local"},
    }
}
MILESTONES = {
    "milestones": [
        {"id": "100", "title": "first", "seed": SEED, "message": 100},
        {"id": "200", "title": "second", "seed": SEED, "message": 200},
        {"id": "300", "title": "third", "seed": SEED, "message": 300},
    ]
}


def make_kb(root: Path, facts: list[dict[str, Any]] = FACTS) -> Path:
    (root / "facts").mkdir(parents=True)
    (root / "facts" / "all.yaml").write_text(yaml.safe_dump({"facts": facts}, sort_keys=False))
    (root / "targets.yaml").write_text(yaml.safe_dump(TARGETS))
    (root / "milestones.yaml").write_text(yaml.safe_dump(MILESTONES))
    return root


@pytest.fixture()
def kb_root(tmp_path: Path) -> Path:
    return make_kb(tmp_path / "kb")


def render(root: Path, **options: Any) -> str:
    return render_status(load_kb(root), StatusOptions(**options), now=NOW)


def section(text: str, title: str) -> str:
    """The body of one `## title` section."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no section {title!r}"
    return match.group(1)


def test_sections_follow_the_seed_structure(kb_root: Path) -> None:
    text = render(kb_root)
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings == [
        "Goal",
        "Instructions",
        "Discoveries",
        "Known pitfalls",
        "Benchmarks",
        "Training metrics",
        "Accomplished",
        "In progress",
        "Not yet done / next steps",
        "Relevant files",
        "Changed since the previous status",
    ]
    instructions = section(text, "Instructions")
    assert instructions.index("### Access") < instructions.index("### Environment rules")
    assert instructions.index("### Environment rules") < instructions.index("### User constraints")
    assert "ssh alice@10.20.30.40 via bastion-7" in instructions.split("### Access")[1]
    discoveries = section(text, "Discoveries")
    for sub in (
        "Hardware",
        "Software on the box",
        "Model architecture",
        "Draft model architecture",
        "Tokenizer",
        "Performance baselines",
        "Engine notes",
        "Decisions and working assumptions",
    ):
        assert f"### {sub}\n" in discoveries
    assert "&lt;think> is 163606" in discoveries  # escaped, or Markdown would eat it


def test_next_steps_in_priority_order_with_criteria(kb_root: Path) -> None:
    steps = section(render(kb_root), "Not yet done / next steps")
    lines = [ln for ln in steps.splitlines() if re.match(r"\d+\. ", ln)]
    assert [ln.split("**")[1] for ln in lines] == ["prog.first", "prog.second", "prog.later"]
    assert "success criterion: log shows the stall" in steps
    done = section(render(kb_root), "Accomplished")
    assert "prog.done" in done and "**prog.failed** (FAILED)" in done


def test_as_of_shows_that_moment_only(kb_root: Path) -> None:
    first = render(kb_root, as_of="100")
    assert "The server hangs after loading." in first
    assert "The server serves." not in first
    assert "63.6" not in first and "90.0" not in first and "silently overridden" not in first
    assert "Debugging the hang." in section(first, "In progress")
    assert "◻ Engine B will just work." in first  # assumed then, refuted at 300
    assert "(no earlier milestone to compare with)" in first
    second = render(kb_root, as_of="200")
    assert "63.6 tok/s" in section(second, "Benchmarks") and "90.0" not in second
    assert "- ✅ Base runs at 63.6 tok/s. *(msg 200)*" in section(second, "Discoveries")
    assert "The server hangs" not in section(second, "Discoveries")
    third = render(kb_root, as_of="300")
    assert "~~Engine B will just work.~~" in third
    assert "refuted msg 300: it did not; replaced by pit.flag" in third


def test_facts_learned_later_without_since_stay_out_of_milestone_documents(
    kb_root: Path,
) -> None:
    for milestone in ("100", "200", "300"):
        assert "Probed today" not in render(kb_root, as_of=milestone)
    now = render(kb_root)
    assert "- ◻ Probed today: 2 NUMA nodes. *(2026-11-29 box)*" in now
    new = section(now, "Changed since the previous status").split("### New facts")[1]
    assert "`hw.probed`" in new


def test_benchmarks_table_and_training_metrics(kb_root: Path) -> None:
    text = render(kb_root, as_of="300")
    bench = section(text, "Benchmarks")
    row = next(ln for ln in bench.splitlines() if ln.startswith("| bench.spec"))
    assert "| 54.8 tok/s |" in row and "engine=b, spec=true" in row and "| 1.8 |" in row
    assert "| 2,320 tok/s |" in bench  # grouped as the seeds print figures
    training = section(text, "Training metrics")
    assert "| Epoch | loss | acc | Mark |" in training
    assert "| 1 | 6.276 | 74.0 |" in training and "| 2 | 6.138 | 74.4 |" in training
    assert "10,000 samples." in training


def test_files_grouped_by_machine_and_kind(kb_root: Path) -> None:
    files = section(render(kb_root), "Relevant files")
    assert "### box — the GPU box" in files and "### local" in files
    box = files.split("### box")[1].split("### local")[0]
    assert box.index("Scripts:") < box.index("Logs:")
    assert "`/data/debug.log` — hang debug log (2 MB) ✅ msg 100" in box


def test_marks_from_latest_results_only_for_now(kb_root: Path) -> None:
    records = [
        ResultRecord(
            "hw.gpus",
            "box",
            "drift",
            "expected 8",
            observed=7,
            time="2026-11-28T10:00:00Z",
            run="r1",
        ),
        ResultRecord(
            "hw.swap",
            "box",
            "error",
            "ssh: connection refused",
            time="2026-11-28T10:00:00Z",
            run="r1",
        ),
        ResultRecord(
            "hw.cpu",
            "box",
            "pass",
            "ok",
            observed="AMD EPYC 9335",
            time="2026-11-28T10:00:00Z",
            run="r1",
        ),
    ]
    write_run(kb_root, "r1", {"started": "2026-11-28T10:00:00Z"}, records)
    now = render(kb_root)
    assert "⚠️ 8 GPUs of 96 GB. *(2026-11-28 box: expected 8, observed 7)*" in now
    assert "❌ No swap. *(2026-11-28 box: ssh: connection refused)*" in now
    assert "✅ An EPYC CPU. *(2026-11-28 box)*" in now
    drifted = section(now, "Changed since the previous status").split("### Drifted checks")[1]
    assert "`hw.gpus`" in drifted and "`hw.swap`" in drifted and "`hw.cpu`" not in drifted
    then = render(kb_root, as_of="300")
    assert "✅ 8 GPUs of 96 GB. *(msg 100 box)*" in then and "❌ No swap" not in then
    forced = render(kb_root, as_of="300", results=True)
    assert "⚠️ 8 GPUs of 96 GB." in forced


def test_changes_between_milestones(kb_root: Path) -> None:
    text = render(kb_root, as_of="300")
    changes = section(text, "Changed since the previous status")
    assert "Compared with milestone 200" in changes
    new = changes.split("### New facts")[1].split("###")[0]
    assert "`pit.flag`" in new and "`bench.base2`" in new and "`hw.gpus`" not in new
    refuted = changes.split("### Refuted assumptions")[1].split("###")[0]
    assert "`dec.assume`" in refuted
    moved = changes.split("### Moved benchmark figures")[1].split("###")[0]
    assert re.search(
        r"\| single_stream \| engine=b, tuned=false \| 63.6 tok/s \(`bench.base`\) "
        r"\| 90.0 tok/s \(`bench.base2`\) \|",
        moved,
    )
    assert "bench.spec" not in moved  # a new configuration is not a moved figure
    gone = changes.split("### No longer holds")[1]
    assert "`bench.base`" in gone


def test_since_overrides_the_previous_milestone(kb_root: Path) -> None:
    changes = section(
        render(kb_root, as_of="300", since="100"), "Changed since the previous status"
    )
    assert "Compared with milestone 100" in changes
    assert "`sw.serves`" in changes.split("### New facts")[1].split("###")[0]
    assert "`sw.hang`" in changes.split("### No longer holds")[1]
    now = prepare(load_kb(kb_root), StatusOptions(), now=NOW)
    assert now.previous is not None and now.previous.id == "300"
    with pytest.raises(UsageError, match="not before"):
        render(kb_root, as_of="200", since="300")
    with pytest.raises(UsageError, match="unknown milestone"):
        render(kb_root, as_of="999")


def test_knowledge_base_templates_override_the_shipped_ones(kb_root: Path) -> None:
    override = kb_root / "templates" / "status"
    override.mkdir(parents=True)
    (override / "status.md.j2").write_text(
        "# Custom {{ as_of.id }}\n"
        "{% for step in next_steps %}{{ step.id }}={{ step.get('criterion') }};{% endfor %}\n"
        "{{ changes.new|length }} new, {{ counts.total }} facts, {{ discoveries|length }} groups\n"
    )
    text = render(kb_root, as_of="300")
    assert text.startswith("# Custom 300\n")
    assert "prog.first=log shows the stall;prog.second=port opens;" in text
    (override / "status.md.j2").unlink()
    (kb_root / "templates" / "status" / "_macros.j2").write_text(
        "{% macro line(item) %}LINE {{ item.id }}{% endmacro %}"
        "{% macro items(list) %}{% for i in list %}\n- {{ line(i) }}{% endfor %}{% endmacro %}"
        "{% macro progress(list, numbered=false) %}{{ items(list) }}{% endmacro %}"
    )
    partial = render(kb_root, as_of="300")
    assert "- LINE goal.main" in partial and "## Benchmarks" in partial


def test_template_errors_are_reported_not_raised_raw(kb_root: Path) -> None:
    override = kb_root / "templates"
    override.mkdir()
    (override / "status.md.j2").write_text("{{ no_such_variable }}")
    from factbook.errors import InputError

    with pytest.raises(InputError, match="no_such_variable"):
        render(kb_root)


def test_output_names_writes_and_index(kb_root: Path) -> None:
    kb = load_kb(kb_root)
    assert default_path(kb, StatusOptions(as_of="200")) == kb_root / "docs/status/status-200.md"
    dated = default_path(kb, StatusOptions(), now=NOW)
    assert dated == kb_root / "docs/status/2026-11-29-status.md"
    assert default_path(kb, StatusOptions(as_of="200", redact=True)).name == (
        "status-200-redacted.md"
    )
    assert run(["--root", str(kb_root), "status", "--as-of", "100"]) == 0
    assert run(["--root", str(kb_root), "status", "--as-of", "300"]) == 0
    written = kb_root / "docs/status/status-300.md"
    assert written.read_text().startswith("# Status as of milestone 300 (msg 300)")
    index = (kb_root / "docs/status/index.md").read_text()
    assert index.index("(status-300.md)") < index.index("(status-100.md)")
    assert not list((kb_root / "docs/status").glob(".*.tmp"))
    elsewhere = kb_root / "out" / "s.md"
    write_status(elsewhere, "x\n", kb_root=kb_root)
    assert (
        elsewhere.read_text() == "x\n"
        and "(s.md)" not in (kb_root / "docs/status/index.md").read_text()
    )


def test_cli_stdout_and_usage_errors(kb_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--root", str(kb_root), "status", "--as-of", "200", "--out", "-"]) == 0
    assert "# Status as of milestone 200" in capsys.readouterr().out
    assert run(["--root", str(kb_root), "status", "--as-of", "nope", "--out", "-"]) == 2
    assert "unknown milestone 'nope'" in capsys.readouterr().err


# --- redaction -------------------------------------------------------------------


def test_redactor_placeholders_are_consistent() -> None:
    redact = Redactor(hosts=["kpro6.example", "kpro6"], users=["theuser"], secrets=["s3cr3t"])
    text = redact(
        "ssh root@10.1.230.174; again 10.1.230.174 and 10.0.0.2. kpro6 is kpro6.example; "
        "/home/theuser/x and /home/bob/y; bob@10.0.0.2; token s3cr3t; fe80::1 and "
        "2001:db8::8a2e:370:7334; torch 2.10.0+cu128, driver 590.48.01, at 14:53:07, "
        "std::vector, torch@2.10"
    )
    assert text == (
        "ssh root@ip-1; again ip-1 and ip-2. host-1 is host-1; "
        "/home/user-1/x and /home/user-2/y; user-2@ip-2; token secret-1; ip-3 and "
        "ip-4; torch 2.10.0+cu128, driver 590.48.01, at 14:53:07, "
        "std::vector, torch@2.10"
    )


def test_redaction_config_file_and_environment(kb_root: Path) -> None:
    (kb_root / "redact.yaml").write_text("secrets: [hunter2]\nhosts: [gpu-farm]\n")
    redactor = redactor_for(load_kb(kb_root), env={"FACTBOOK_SECRETS": "tok-123, other"})
    assert redactor("hunter2 gpu-farm tok-123 other") == "secret-1 host-1 secret-2 secret-3"
    (kb_root / "redact.yaml").write_text("passwords: [x]\n")
    from factbook.errors import InputError

    with pytest.raises(InputError, match="unknown key 'passwords'"):
        redactor_for(load_kb(kb_root), env={})


def test_redacted_document_keeps_no_target_address(kb_root: Path) -> None:
    plain = render(kb_root)
    assert "alice@10.20.30.40 via bastion-7.example.org" in plain
    text = render(kb_root, redact=True)
    for target in TARGETS["targets"].values():
        for key in ("host", "user"):
            value = target.get(key)
            if value and value != "root":
                assert value not in text
    assert "bastion-7" not in text and "alice" not in text
    assert not IPV4.search(text)
    assert "ssh user-1@host-1 via host-2" in text  # a target's IP is that target's host
    assert "/home/user-1/train.py" in text  # alice is user-1 throughout
    assert text.count("user-1") >= 2
