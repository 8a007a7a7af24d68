"""`factbook import` on dumps it was not written for: other engines, GPUs and models, other
shapes (Context/Findings/Problems/TODO/Files, numbered sections with tables, bold labels with
`pct exec`, no headings at all, a budgeted status document), each against its own checklist
(tests/data/dumps/*.checklist.yaml, scored by tests/dump_checklist.py). Every knowledge base
is made by the real `factbook init` (which discovers this machine into
facts/discovered-local.yaml); every import is written and linted; the seeds' own wrong checks
named by issue 28 are checked gone; verify runs for real on `local`."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from dump_checklist import DUMPS, checklists, fresh_kb, import_dump, load_checklist, score

from factbook.commands.cli import run
from factbook.dumps.capture import plan_import, write
from factbook.dumps.capture.pitfall import split_pitfall
from factbook.knowledge.kb import load_kb

ROOT = Path(__file__).resolve().parents[1]
CHECKLISTS = checklists()


@pytest.mark.parametrize("path", CHECKLISTS, ids=[p.name.split(".")[0] for p in CHECKLISTS])
def test_dump_meets_its_checklist(path: Path, tmp_path: Path) -> None:
    checklist = load_checklist(path)
    discovered = None
    result, kb = import_dump(checklist, tmp_path / "kb")
    discovered = (tmp_path / "kb" / "facts" / "discovered-local.yaml").read_text("utf-8")
    found = score(checklist, result, kb)
    problems = "\n".join(found.problems)
    assert found.proposed >= 0.9 * found.items, problems
    assert found.checks and found.valid_checks == found.checks, problems
    assert found.wrong_file == 0, problems
    assert found.targeted == found.box_bound, problems
    assert found.local_runs == 0, problems
    assert found.targets_ok == found.targets_expected, problems
    # init's own file is untouched; every quote is the dump's own words
    text = (DUMPS / checklist["dump"]).read_text("utf-8")
    assert all(p.entry.quote in text for p in result.accepted)
    assert discovered == (tmp_path / "kb" / "facts" / "discovered-local.yaml").read_text("utf-8")


def test_seeds_into_a_new_kb_check_nothing_on_this_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 28's report: seeds imported after `factbook init` turned a green `verify
    --target local` red (46 checks, 31 failed, exit 3), and wrote into discovered-local.yaml."""
    root = fresh_kb(tmp_path / "kb", "unused")
    shutil.copy(ROOT / "milestones.yaml", root / "milestones.yaml")
    discovered = (root / "facts" / "discovered-local.yaml").read_text("utf-8")
    for seed, milestone in (
        ("002_a75f8a1785cf11fa.txt", "3157"),
        ("000_7c5116ce2779eb5c.txt", "4504"),
    ):
        result = plan_import(root, ROOT / "seeds" / seed, milestone)
        write(result.applied)
    assert (root / "facts" / "discovered-local.yaml").read_text("utf-8") == discovered
    kb = load_kb(root)
    imported = [f for f in kb.facts.values() if any(s.seed for s in f.sources)]
    checks = [f for f in imported if f.check]
    assert len(checks) >= 30
    for fact in checks:
        assert fact.target in ("llm-two", "kpro6", "llm-one", "workstation"), fact.id
        if fact.check.probe == "pkg.version":
            assert fact.check.args["name"] in (
                [
                    "vllm",
                    "sgl-kernel",
                    "flashinfer-python",
                    "torch",
                    "transformers",
                    "triton",
                    "speculators",
                ]
            ), fact.id
        if fact.check.probe == "file.exists":
            assert re.fullmatch(r"/[\w./+-]+", fact.check.args["path"]), fact.id
            assert "think" not in fact.check.args["path"]
    versions = {f.check.args.get("name"): f.check.expect for f in checks}
    assert versions["flashinfer-python"] == {"version": "==0.6.4"}
    assert "result" not in versions
    targets = (root / "targets.yaml").read_text("utf-8")
    assert "llm-two:\n    host: llm-two.invalid" in targets
    # the verify that went red now runs only this machine's own discovered facts: green
    code = run(["--root", str(root), "verify", "--target", "local"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert not any(f.id in out for f in checks)


def test_review_says_where_each_goes_and_why_no_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = fresh_kb(tmp_path / "kb", "m1")
    dump = tmp_path / "dump.md"
    dump.write_text(
        "## Access\n\n- GPU node (gpu-7): ssh alice@[REDACTED] -p 2222\n\n"
        "## Software\n\n- NCCL: 2.27.7\n- Result: 0.66x throughput\n- ROCm 6.2\n"
        "- Reasoning ends at </think>; the parser drops it\n\n"
        "## Known pitfalls\n\n- MTP with num_speculative_tokens=2 crashes during CUDA graph "
        "capture with illegal memory access; capping --max-num-seqs 256 avoids it\n",
        "utf-8",
    )
    code = run(["--root", str(root), "import", str(dump), "--milestone", "m1", "--write"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "→ facts/software.yaml" in out and "→ facts/pitfalls.yaml" in out
    assert "no check: no probe reads the ROCm version" in out
    assert "no check: the line names no version, GPU count or path" in out  # `0.66x`
    assert "targets.yaml: 1 proposed" in out
    assert "+ gpu-7: ssh alice@gpu-7.invalid -p 2222" in out and "placeholder host" in out
    kb = load_kb(root)
    by_quote = {f.sources[0].quote: f for f in kb.facts.values() if f.sources[0].quote}
    nccl = by_quote["NCCL: 2.27.7"]
    assert (nccl.check.probe, nccl.check.expect) == (
        "torch.info",
        {"path": "nccl", "version": "==2.27.7"},
    )
    assert nccl.target == "gpu-7"
    assert by_quote["Result: 0.66x throughput"].check is None
    assert by_quote["Reasoning ends at </think>; the parser drops it"].check is None
    pitfall = next(f for f in kb.facts.values() if f.category == "pitfalls")
    assert pitfall.get("symptom") == "crashes during CUDA graph capture with illegal memory access"
    assert pitfall.get("cause") == "MTP with num_speculative_tokens=2"
    assert pitfall.get("fix") == "capping --max-num-seqs 256 avoids it"
    assert kb.targets["gpu-7"].port == 2222 and "placeholder" in kb.targets["gpu-7"].tags


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (
            "vLLM OOMs at startup with --gpu-memory-utilization 0.95 when max_model_len=131072",
            {
                "symptom": "vLLM OOMs at startup",
                "cause": "with --gpu-memory-utilization 0.95 when max_model_len=131072",
            },
        ),
        (
            "Custom all-reduce is slower than NCCL at batch 1 because of the P2P check; "
            "pass --disable-custom-all-reduce",
            {
                "symptom": "Custom all-reduce is slower than NCCL at batch 1",
                "cause": "because of the P2P check",
                "fix": "pass --disable-custom-all-reduce",
            },
        ),
        (
            "Symptom: NCCL timeout at init. Cause: IB disabled in the container. Workaround: "
            "NCCL_IB_DISABLE=0",
            {
                "symptom": "NCCL timeout at init",
                "cause": "IB disabled in the container",
                "fix": "NCCL_IB_DISABLE=0",
            },
        ),
        ("Output gets cut at 8192 tokens", {"symptom": "Output gets cut at 8192 tokens"}),
        (
            "disk full ← checkpoints written every 50 steps → keep the last 3",
            {
                "symptom": "disk full",
                "cause": "checkpoints written every 50 steps",
                "fix": "keep the last 3",
            },
        ),
    ],
)
def test_pitfall_prose_is_split_as_the_sentence_gives_it(text: str, want: dict) -> None:
    assert split_pitfall(text) == want


TARGETS = """\
# our fleet; keep this comment
targets:
  local:
    transport: local
  # the old box
  old-box: {host: old.example.org, user: ops}

groups:
  gpu: {targets: [old-box]}
"""


def test_targets_from_jump_chains_pct_and_docker_keep_targets_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = fresh_kb(tmp_path / "kb", "m1")
    (root / "targets.yaml").write_text(TARGETS, "utf-8")
    dump = tmp_path / "dump.md"
    dump.write_text(
        "## Access\n\n"
        "- Bastion: `ssh admin@bastion.example.net`\n"
        "- Trainer (trn-1): `ssh -J admin@bastion.example.net root@trn-1.lab.example`\n"
        "- Proxmox host (pve2): ssh root@[REDACTED]\n"
        "- The inference container is CT 140 on pve2: `pct exec 140 -- bash`\n"
        "- The container `vllm-dev` on trn-1: `docker exec -it vllm-dev bash`\n\n"
        "## Files (CT 140)\n\n- /srv/models/llama/ — weights\n\n"
        "## Files (vllm-dev)\n\n- /workspace/bench.py — the benchmark script\n\n"
        "## Hardware (trn-1)\n\n- 8x NVIDIA A100 80GB SXM\n",
        "utf-8",
    )
    code = run(["--root", str(root), "import", str(dump), "--milestone", "m1", "--write"])
    capsys.readouterr()
    assert code == 0
    text = (root / "targets.yaml").read_text("utf-8")
    assert text.startswith("# our fleet; keep this comment") and "# the old box" in text
    assert "groups:\n  gpu: {targets: [old-box]}" in text
    kb = load_kb(root)
    t = kb.targets
    assert (t["trn-1"].host, t["trn-1"].user, t["trn-1"].jump) == (
        "trn-1.lab.example",
        "root",
        ("bastion",),
    )
    assert t["bastion"].host == "bastion.example.net" and t["bastion"].user == "admin"
    assert (t["ct140"].exec, t["ct140"].via) == (("pct", "exec", "140", "--"), "pve2")
    assert t["pve2"].host == "pve2.invalid" and "placeholder" in t["pve2"].tags
    assert (t["vllm-dev"].exec, t["vllm-dev"].via) == (
        ("docker", "exec", "-i", "vllm-dev"),
        "trn-1",
    )
    facts = {f.sources[0].quote: f for f in kb.facts.values()}
    assert facts["/srv/models/llama/ — weights"].target == "ct140"
    assert facts["/workspace/bench.py — the benchmark script"].target == "vllm-dev"
    assert facts["8x NVIDIA A100 80GB SXM"].target == "trn-1"


def test_status_round_trip_of_an_imported_dump(tmp_path: Path) -> None:
    """A dump imported, `factbook status` of the result, that document imported back: into
    the same knowledge base nothing, into a new one every fact with its target."""
    checklist = load_checklist(DUMPS / "vllm-llama70b-h100.checklist.yaml")
    _, kb = import_dump(checklist, tmp_path / "kb")
    doc = tmp_path / "status.md"
    assert (
        run(["--root", str(tmp_path / "kb"), "status", "--as-of", "day3", "--out", str(doc)]) == 0
    )
    again = plan_import(tmp_path / "kb", doc, "day3")
    assert again.actionable == []
    fresh = fresh_kb(tmp_path / "fresh", "day3")
    shutil.copy(tmp_path / "kb" / "targets.yaml", fresh / "targets.yaml")
    write(plan_import(fresh, doc, "day3").applied)
    back = load_kb(fresh)
    mine = [
        f for f in kb.facts.values() if not f.file.endswith(("discovered-local.yaml", "team.yaml"))
    ]
    for fact in mine:
        got = back.facts[fact.id]
        assert (got.category, got.value, got.target) == (fact.category, fact.value, fact.target)


def test_budgeted_status_reimports_to_nothing(tmp_path: Path) -> None:
    checklist = load_checklist(DUMPS / "budget-qwen3-h100.checklist.yaml")
    result, kb = import_dump(checklist, tmp_path / "kb")
    assert result.document.generated  # read as factbook's own output: legend, marks, ids
    assert "goal.qwen3-serve" in kb.facts and kb.facts["dec.kv-fp8-rejected"].status == "refuted"
    again = plan_import(tmp_path / "kb", DUMPS / checklist["dump"], checklist["milestone"])
    assert again.actionable == []


@pytest.mark.parametrize(("milestone", "budget"), [("3157", 2300), ("4504", 8000)])
def test_budgeted_status_of_the_shipped_kb_reimports_to_nothing(
    tmp_path: Path, milestone: str, budget: int
) -> None:
    """`factbook status --budget` (compact marks, `✓+`, titles with values, `[config]`,
    `(done when: …)`, files under `In `dir`:`, refuted `believed → true`) read back by
    `factbook import` into the knowledge base it came from: every line matched, nothing
    proposed."""
    doc = tmp_path / "brief.md"
    argv = ["--root", str(ROOT), "status", "--as-of", milestone, "--budget", str(budget)]
    assert run([*argv, "--out", str(doc)]) == 0
    result = plan_import(ROOT, doc, milestone)
    assert result.document.generated
    assert [p.entry.quote for p in result.actionable] == []
    assert result.count("unchanged") >= 50 and not result.unplaced


def test_budgeted_status_into_an_empty_kb_keeps_ids_categories_and_marks(tmp_path: Path) -> None:
    """The same dump into a knowledge base that knows none of it: every fact of a group line
    comes back as its own fact under the id its head names, with the category and status the
    dump came from; every file under its directory comes back with its whole path; every
    shown fact becomes one fact, none lost to a line that holds several."""
    doc = tmp_path / "brief.md"
    argv = ["--root", str(ROOT), "status", "--as-of", "4504", "--budget", "3000", "--ids"]
    assert run([*argv, "--out", str(doc), "--no-results"]) == 0
    assert run([*argv, "--out", str(tmp_path / "brief.json"), "--format", "json"]) == 0
    text = doc.read_text(encoding="utf-8")
    assert re.search(r"^- \S+ [^`\n]*`[a-z0-9_.]+\.\{[^`]+,[^`]+\}`: [^\n]+; ", text, re.M)
    assert re.search(r"^- \S+ `/[^`]+/`: `[^`]+`[^\n]*; ", text, re.M)
    source = load_kb(ROOT, strict=False)
    shown = [
        line
        for section in json.loads((tmp_path / "brief.json").read_text("utf-8"))["sections"]
        for group in section["groups"]
        for line in group["lines"]
    ]
    fresh = fresh_kb(tmp_path / "fresh", "4504")
    shutil.copy(ROOT / "targets.yaml", fresh / "targets.yaml")
    result = plan_import(fresh, doc, "4504")
    assert not result.unplaced and all(p.clean for p in result.actionable)
    write(result.applied)
    back = load_kb(fresh)
    imported = [f for f in back.facts.values() if f.sources and f.sources[0].seed == "brief.md"]
    assert len(imported) == len(shown)
    grouped = [line for line in shown if line["line"] and line["category"] != "inventory"]
    assert len(grouped) >= 20
    for line in grouped:
        fact = back.facts[line["id"]]
        assert fact.category == source.facts[line["id"]].category, line["id"]
        if "incomplete" not in fact.tags:  # a decision without its rationale stays assumed
            assert fact.status == line["status"].replace("drifted", "assumed"), line["id"]
    paths = {str(f.extra.get("path")) for f in imported if f.category == "inventory"}
    for line in shown:
        if line["category"] == "inventory":
            assert source.facts[line["id"]].extra["path"] in paths


GROUPED = """---
tokens: 120
---
# Status as of milestone m2

> Made by `factbook status` for milestone m2. Marks: ✓ verified · ? assumed · ~ stale · + new.

## Discoveries

### Hardware
- ✓+ GPU `hw.gpu.{count,memory,power}`: count: 8; ? VRAM per GPU: 97887 MiB (est, rounded); \
~ 600 W (held at msg 3)

### Benchmarks
- ✓ vLLM `bench.vllm.single`: 82.5 tok/s [engine=vllm, concurrency=1]

### Software on the box
- ✓ Use `uv`: never pip

## Relevant files

### box
- ✓ `/data/run/`: `./` (3 TB); ?+ `ckpt/` — epoch 4 (4.7 GB); `a.log`
"""


def test_group_lines_read_back_part_by_part() -> None:
    """Each part of a group line: its id from the head's braces (or its path under the
    head's directory), its own mark where it has one (else the line's), a stale stamp and a
    `[k=v]` configuration taken off the text."""
    from factbook.dumps.capture.parse import parse_text

    entries = parse_text(GROUPED).entries
    got = [
        (e.fields.get("id") or e.fields.get("path"), e.mark.status if e.mark else None, e.text)
        for e in entries
    ]
    assert got == [
        ("hw.gpu.count", "verified", "GPU count: 8"),
        ("hw.gpu.memory", "assumed", "VRAM per GPU: 97887 MiB (est, rounded)"),
        ("hw.gpu.power", "stale", "GPU 600 W"),
        ("bench.vllm.single", "verified", "vLLM 82.5 tok/s"),
        (None, "verified", "Use `uv`: never pip"),
        ("/data/run/", "verified", "/data/run/"),
        ("/data/run/ckpt/", "assumed", "epoch 4"),
        ("/data/run/a.log", "verified", "/data/run/a.log"),
    ]
    assert entries[3].fields["config"] == "engine=vllm, concurrency=1"
    assert entries[5].fields["size"] == "3 TB" and entries[6].fields["size"] == "4.7 GB"
