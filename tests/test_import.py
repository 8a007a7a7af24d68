"""`factbook import`: real dumps (the seeds, factbook's own status documents) through the real
CLI, written with writeback into real knowledge bases, then linted by `factbook lint`."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

from factbook.commands.cli import run
from factbook.dumps.capture import plan_import, write
from factbook.dumps.capture.match import norm
from factbook.dumps.status import StatusOptions, render_status
from factbook.dumps.status.items import effective_status, one_line
from factbook.errors import InputError
from factbook.knowledge.kb import load_kb

ROOT = Path(__file__).resolve().parents[1]
MILESTONES = ["3157", "3478", "4504"]
SEEDS = {m.id: m.seed for m in load_kb(ROOT, strict=False).milestones.values()}
HINT = re.compile(r" <!-- fb \{.*?\} -->")


def empty_kb(path: Path) -> Path:
    """A knowledge base with no facts: the repository's milestones and targets only."""
    (path / "facts").mkdir(parents=True)
    for name in ("milestones.yaml", "targets.yaml"):
        shutil.copy(ROOT / name, path / name)
    return path


def kb_copy(path: Path) -> Path:
    empty_kb(path)
    shutil.rmtree(path / "facts")
    shutil.copytree(ROOT / "facts", path / "facts")
    shutil.copytree(ROOT / "checks", path / "checks")
    return path


def status_doc(tmp_path: Path, milestone: str, *, hints: bool = True) -> Path:
    text = render_status(load_kb(ROOT, strict=False), StatusOptions(as_of=milestone))
    path = tmp_path / f"status-{milestone}.md"
    path.write_text(text if hints else HINT.sub("", text), encoding="utf-8")
    return path


def lint_ok(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = run(["--root", str(root), "lint"])
    out = capsys.readouterr()
    assert code == 0, out.out + out.err


# --- item 3: the round trip --------------------------------------------------------------------


@pytest.mark.parametrize("milestone", MILESTONES)
@pytest.mark.parametrize("hints", [True, False], ids=["hinted", "visible-text-only"])
def test_status_document_into_same_kb_proposes_nothing(
    tmp_path: Path, milestone: str, hints: bool
) -> None:
    kb = load_kb(ROOT, strict=False)
    result = plan_import(ROOT, status_doc(tmp_path, milestone, hints=hints), milestone)
    assert result.document.generated
    assert [f"{p.verdict} {p.entry.quote}" for p in result.actionable] == []
    assert not result.unplaced
    visible = [f for f in kb.facts.values() if kb.visible(f, kb.milestones[milestone])]
    assert result.count("unchanged") >= len(visible)  # every fact's line was read and matched
    assert result.applied.diff == ""


def test_redacted_documents_carry_no_hints() -> None:
    """Ids and values may name hosts (`instr.ssh.kpro6`): a document for sharing has none."""
    kb = load_kb(ROOT, strict=False)
    assert "<!-- fb" in render_status(kb, StatusOptions(as_of="4504"))
    assert "<!-- fb" not in render_status(kb, StatusOptions(as_of="4504", redact=True))


def test_kept_status_documents_carry_hints_that_read_back() -> None:
    """The documents kept in docs/status/ (regenerated with the hint) import like fresh ones."""
    for milestone in MILESTONES:
        text = (ROOT / "docs" / "status" / f"status-{milestone}.md").read_text(encoding="utf-8")
        assert text.count("<!-- fb {") >= 100
        # a person reading the rendered page sees nothing of it: each hint is one HTML comment
        assert all(h.endswith("} -->") for h in re.findall(r"<!-- fb .*?-->", text))
        result = plan_import(ROOT, ROOT / "docs" / "status" / f"status-{milestone}.md", milestone)
        assert not result.actionable


@pytest.mark.parametrize("milestone", MILESTONES)
def test_status_document_into_empty_kb_recovers_the_facts(
    tmp_path: Path, milestone: str, capsys: pytest.CaptureFixture[str]
) -> None:
    kb = load_kb(ROOT, strict=False)
    at = kb.milestones[milestone]
    target = empty_kb(tmp_path / "kb")
    doc = status_doc(tmp_path, milestone)
    code = run(["--root", str(target), "import", str(doc), "--milestone", milestone, "--write"])
    capsys.readouterr()
    assert code == 0
    lint_ok(target, capsys)
    got = load_kb(target)
    visible = [f for f in kb.facts.values() if kb.visible(f, at)]
    assert sorted(got.facts) == sorted(f.id for f in visible)
    for fact in visible:
        back = got.facts[fact.id]
        assert one_line(back.statement) == one_line(fact.statement), fact.id
        assert back.category == fact.category, fact.id
        assert (back.value, back.unit) == (fact.value, fact.unit), fact.id
        assert back.since == (fact.since or milestone), fact.id
        assert got.status_as_of(back, at) == effective_status(kb, fact, at), fact.id
    # the recovered knowledge base renders the same sections (what changed since the previous
    # milestone needs the earlier facts, which this one document does not hold)
    again = render_status(got, StatusOptions(as_of=milestone))
    original = doc.read_text(encoding="utf-8")
    assert _section_titles(again) == _section_titles(original)


def _section_titles(text: str) -> list[str]:
    body = text.split("## Changed since the previous status")[0]
    return [line for line in body.splitlines() if line.startswith("#")]


# --- items 1 and 4: the seeds ------------------------------------------------------------------


def test_seeds_import_one_by_one_and_lint_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = empty_kb(tmp_path / "kb")
    kb = load_kb(ROOT, strict=False)
    for milestone in MILESTONES:
        seed = ROOT / "seeds" / SEEDS[milestone]
        started = time.perf_counter()
        result = plan_import(target, seed, milestone)
        elapsed = time.perf_counter() - started
        assert elapsed < 5, f"{seed.name} took {elapsed:.2f}s (budget 1 s, bench/import_seeds.py)"
        assert not result.document.generated
        text = seed.read_text(encoding="utf-8")
        assert result.actionable
        for proposal in result.actionable:
            assert proposal.entry.quote in text  # verbatim, so a reviewer can find it
            assert proposal.clean or all(proposal.problems)  # names why it cannot lint clean
            if proposal.fact:
                assert proposal.fact["since"] == milestone
                assert proposal.fact["sources"][0]["seed"] == seed.name
        # most proposals say what a hand-written fact of the same seed quotes
        hand = [norm(s.quote) for f in kb.facts.values() for s in f.sources if s.seed == seed.name]
        matched = [p for p in result.actionable if any(h in norm(p.entry.quote) for h in hand if h)]
        assert len(matched) >= len(result.actionable) // 2
        write(result.applied)
        lint_ok(target, capsys)
    facts = load_kb(target).facts
    gpu = [f for f in facts.values() if f.check and f.check.probe == "gpu.count"]
    assert gpu and gpu[0].value == 8 and gpu[0].check.expect == {"eq": 8}
    torch_like = {
        f.check.args["name"]: f.value
        for f in facts.values()
        if f.check and f.check.probe == "pkg.version"
    }
    assert torch_like.get("vllm") == "0.16.0rc2.dev344+gea5f903f8"
    assert torch_like.get("sgl-kernel") == "0.3.21"
    drivers = [f for f in facts.values() if f.check and f.check.probe == "gpu.driver"]
    assert not drivers or drivers[0].check.expect == {"version": "==590.48.01"}
    files = [f for f in facts.values() if f.category == "inventory"]
    assert any(f.get("path") == "/data/eagle3/output_10k/4/" for f in files)
    bench = {f.title: f.value for f in facts.values() if f.category == "benchmarks"}
    assert bench["SGLang + NCCL tuning + continuous decode"] == 90.0
    todo = [f for f in facts.values() if f.get("state") == "todo"]
    assert any("Beat 90 tok/s" in f.statement for f in todo)
    epochs = [f for f in facts.values() if f.category == "training"]
    assert sorted(f.get("epoch") for f in epochs) == [1, 2, 3]


def test_reimporting_a_seed_proposes_nothing(tmp_path: Path) -> None:
    target = empty_kb(tmp_path / "kb")
    seed = ROOT / "seeds" / SEEDS["3157"]
    write(plan_import(target, seed, "3157").applied)
    again = plan_import(target, seed, "3157")
    assert again.actionable == []
    assert again.count("unchanged") > 100


# --- item 2: changed and contradicted ------------------------------------------------------------

BENCH_KB = """\
# yaml-language-server: $schema=../schema/facts.schema.json
facts:
  # the first measurement, kept by hand
  - id: bench.sglang.single
    category: benchmarks
    title: Single-stream
    statement: SGLang single-stream decode is 82.4 tok/s.  # measured with NCCL defaults
    value: 82.4
    unit: tok/s
    status: verified
    since: "3157"
    sources:
      - {seed: 002_a75f8a1785cf11fa.txt, message: 3157, quote: "Single-stream: 82.4 tok/s"}

  - id: tok.im_end.old
    category: tokenizer
    title: im_end id
    statement: "<|im_end|> is token 163533."
    token: "<|im_end|>"
    value: 163533
    status: assumed
    since: "3157"
    sources:
      - {seed: 002_a75f8a1785cf11fa.txt, message: 3157, quote: "<|im_end|> = token 163533"}
"""

DUMP = """\
## Discoveries

### Performance Baselines - Single-stream: 90.0 tok/s (11.1ms TPOT)

### Tokenizer - <|im_end|> has TWO token IDs: 163586 = the REAL <|im_end|> token. \
DO NOT use 163533 (decodes to 'chas')
"""


def bench_kb(tmp_path: Path) -> tuple[Path, Path]:
    root = empty_kb(tmp_path / "kb")
    (root / "facts" / "bench.yaml").write_text(BENCH_KB, encoding="utf-8")
    dump = tmp_path / "dump.md"
    dump.write_text(DUMP, encoding="utf-8")
    return root, dump


def test_changed_and_contradicted_are_proposed_as_a_diff_and_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, dump = bench_kb(tmp_path)
    code = run(["--root", str(root), "import", str(dump), "--milestone", "4504"])
    out = capsys.readouterr().out
    assert code == 0
    assert re.search(r"p1 changed +bench\.single-stream, bench\.sglang\.single", out)
    assert re.search(r"p2 contradicted +tok\.\S+, tok\.im_end\.old", out)
    assert "--- a/facts/bench.yaml" in out and "+    until: '4504'" in out
    before = (root / "facts" / "bench.yaml").read_text(encoding="utf-8")
    assert "until" not in before  # without --write nothing changed
    code = run(["--root", str(root), "import", str(dump), "--milestone", "4504", "--write"])
    capsys.readouterr()
    assert code == 0
    text = (root / "facts" / "bench.yaml").read_text(encoding="utf-8")
    assert "# the first measurement, kept by hand" in text  # comments kept
    assert "# measured with NCCL defaults" in text
    lint_ok(root, capsys)
    kb = load_kb(root)
    old = kb.facts["bench.sglang.single"]
    new_id = old.links["replaced_by"][0]
    assert old.until == "4504" and kb.facts[new_id].value == 90.0
    assert kb.facts[new_id].links["replaces"] == ["bench.sglang.single"]
    refuted = kb.facts["tok.im_end.old"]
    assert kb.status_as_of(refuted, kb.milestones["3478"]) == "assumed"
    assert kb.status_as_of(refuted, kb.milestones["4504"]) == "refuted"
    replacement = kb.facts[refuted.links["replaced_by"][0]]
    assert replacement.value == 163586 and replacement.get("token") == "<|im_end|>"
    # the status document now tells the move and the refutation
    doc = render_status(kb, StatusOptions(as_of="4504"))
    changes = doc.split("## Changed since the previous status")[1]
    assert "82.4 tok/s" in changes and "90.0 tok/s" in changes
    assert "### Refuted assumptions" in changes
    # and importing the same dump again proposes nothing
    assert plan_import(root, dump, "4504").actionable == []


def test_accept_applies_only_the_named_proposals(tmp_path: Path) -> None:
    root, dump = bench_kb(tmp_path)
    result = plan_import(root, dump, "4504", accept=["tok.im_end.old"])
    assert [p.verdict for p in result.accepted] == ["contradicted"]
    write(result.applied)
    kb = load_kb(root)
    assert kb.facts["bench.sglang.single"].until is None
    assert kb.facts["tok.im_end.old"].status == "refuted"


def test_refuted_line_of_a_status_document_refutes_the_fact(tmp_path: Path) -> None:
    """Status 4504 into the knowledge base as it stood before: its struck-through lines
    refute facts that were still believed, naming what replaced them."""
    root = kb_copy(tmp_path / "kb")
    doc = status_doc(tmp_path, "4504")
    kb = load_kb(root)
    refuted_at_4504 = [
        f
        for f in kb.facts.values()
        if any(h.at == "4504" and h.status == "refuted" for h in f.history)
    ]
    assert refuted_at_4504
    fact = refuted_at_4504[0]
    path = ROOT / fact.file
    text = path.read_text(encoding="utf-8")
    # forget the refutation: the fact as believed at 3478
    start = text.index(f"- id: {fact.id}\n")
    end = text.find("\n  - id:", start)
    block = text[start : end if end > 0 else len(text)]
    forgotten = re.sub(r"\n +history:\n(?: +- .*\n)+", "\n", block + "\n").rstrip("\n")
    forgotten = forgotten.replace("status: refuted", "status: verified")
    (root / fact.file).write_text(text.replace(block, forgotten), encoding="utf-8")
    result = plan_import(root, doc, "4504")
    mine = [p for p in result.actionable if p.old_id == fact.id]
    assert [p.verdict for p in mine] == ["contradicted"]
    write(result.applied)
    again = load_kb(root)
    assert again.status_as_of(again.facts[fact.id], again.milestones["4504"]) == "refuted"
    assert again.status_as_of(again.facts[fact.id], again.milestones["3478"]) == "verified"


# --- errors and safety ----------------------------------------------------------------------


def test_user_errors_are_one_line_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, dump = bench_kb(tmp_path)
    cases = [
        (["import", str(tmp_path / "nope.md"), "--milestone", "4504"], "nope.md: no such file"),
        (["import", str(dump), "--milestone", "9999"], "unknown milestone '9999'"),
        (["import", str(dump), "--milestone", "4504", "--accept", "p99"], "--accept p99"),
    ]
    for argv, message in cases:
        code = run(["--root", str(root), *argv])
        err = capsys.readouterr().err
        assert code == 2, err
        assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_write_refuses_a_file_changed_since_it_was_read(tmp_path: Path) -> None:
    root, dump = bench_kb(tmp_path)
    result = plan_import(root, dump, "4504")
    path = root / "facts" / "bench.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "\n# edited meanwhile\n", encoding="utf-8")
    with pytest.raises(InputError, match="changed since it was read") as refused:
        write(result.applied)
    assert str(refused.value).startswith("facts/bench.yaml: "), (
        "named as the knowledge base names it"
    )
    assert "until" not in path.read_text(encoding="utf-8")


def test_a_pitfall_missing_cause_and_fix_is_imported_assumed_and_flagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Never dropped: what the dump does not say is marked, the fact stays assumed."""
    root = empty_kb(tmp_path / "kb")
    dump = tmp_path / "dump.md"
    dump.write_text("## Known pitfalls\n\n- Zombie vLLM workers hold GPU memory\n", "utf-8")
    code = run(["--root", str(root), "import", str(dump), "--milestone", "3157", "--write"])
    out = capsys.readouterr().out
    assert code == 0
    assert "cause, fix not stated in the dump" in out
    lint_ok(root, capsys)
    [fact] = load_kb(root).facts.values()
    assert (fact.category, fact.status) == ("pitfalls", "assumed")
    assert fact.get("symptom") == "Zombie vLLM workers hold GPU memory"
    assert fact.get("cause") == fact.get("fix") == "not stated in the dump"
    assert "incomplete" in fact.tags


# --- values and checks from the seeds' own lines ---------------------------------------------

EXTRACTIONS = [
    # (category, a seed's text, value, unit, probe, expectation)
    (
        "software",
        "sgl-kernel: 0.3.21 — rebuilt from source for SM120",
        "0.3.21",
        None,
        "pkg.version",
        {"version": "==0.3.21"},
    ),
    (
        "software",
        "vLLM: 0.16.0rc2.dev344+gea5f903f8 (nightly)",
        "0.16.0rc2.dev344+gea5f903f8",
        None,
        "pkg.version",
        {"version": "==0.16.0rc2.dev344+gea5f903f8"},
    ),
    (
        "hardware",
        "GPUs: 8x NVIDIA RTX PRO 6000 Blackwell Server Edition",
        8,
        None,
        "gpu.count",
        {"eq": 8},
    ),
    (
        "inventory",
        "/data/eagle3/output_10k/4/ — Our trained EAGLE-3 drafter",
        None,
        None,
        "file.exists",
        {"eq": True},
    ),
    ("benchmarks", "Peak throughput: 1,536 tok/s at C=128", 1536, "tok/s", None, None),
    ("tokenizer", "163586 = the REAL <|im_end|> token", 163586, None, None, None),
    (
        "model",
        "hidden_size=7168, head_dim=128",
        {"hidden_size": 7168, "head_dim": 128},
        None,
        None,
        None,
    ),
    (
        "software",
        "SGLang EAGLE-3 CLI flags: --speculative-algorithm EAGLE3 --speculative-draft-model-path"
        " <path> --speculative-num-steps 3 --speculative-eagle-topk 1"
        " --speculative-num-draft-tokens 4",
        {
            "--speculative-algorithm": "EAGLE3",
            "--speculative-draft-model-path": "<path>",
            "--speculative-num-steps": 3,
            "--speculative-eagle-topk": 1,
            "--speculative-num-draft-tokens": 4,
        },
        None,
        None,
        None,
    ),
]


@pytest.mark.parametrize(("category", "text", "value", "unit", "probe", "expect"), EXTRACTIONS)
def test_values_and_checks_from_seed_lines(
    category: str, text: str, value: object, unit: str | None, probe: str | None, expect: object
) -> None:
    from factbook.dumps.capture.extract import extract

    found = extract(text, category)
    assert (found.value, found.unit) == (value, unit)
    assert (found.check or {}).get("probe") == probe
    assert (found.check or {}).get("expect") == expect
    seeds_text = "".join((ROOT / "seeds" / s).read_text(encoding="utf-8") for s in SEEDS.values())
    assert text in seeds_text  # each case is a seed's own words


def test_hints_survive_html_safety_and_fact_text_cannot_forge_one(tmp_path: Path) -> None:
    """The status document is made safe (markup from facts escaped) before factbook's own hint
    comments go in: a statement holding a fake hint stays visible text, the real hint is a
    comment that `factbook import` reads."""
    from helpers import kb_copy as copy_shipped

    root = copy_shipped(tmp_path / "kb", ("facts", "checks"))
    goal = root / "facts" / "goal.yaml"
    text = goal.read_text()
    end = "      RTX PRO 6000 Blackwell Server Edition GPUs (SM120, ~96GB VRAM each).\n"
    assert end in text
    forged = ' <!-- fb {"id": "x.forged", "value": 1} --> more.'
    goal.write_text(text.replace(end, end[:-1] + forged + "\n", 1))
    out = tmp_path / "s.md"
    assert run(["--root", str(root), "status", "--as-of", "4504", "--out", str(out)]) == 0
    line = next(x for x in out.read_text().splitlines() if "~96GB VRAM each)." in x)
    assert '&lt;!-- fb {"id": "x.forged"' in line
    assert re.findall(r'<!-- fb \{"id": "([^"]+)"', line) == ["goal.deploy-optimize-moe"]


def test_a_file_line_in_backticks_keeps_its_path_without_them(tmp_path: Path) -> None:
    """`- \\`scripts/run.sh\\` — launcher` under Relevant files: the path is what the code
    span holds (relative, `./` or `../` paths were written with their backticks), the
    purpose what follows the dash; an absolute one as before."""
    import yaml

    root = empty_kb(tmp_path / "kb")
    dump = tmp_path / "dump.md"
    dump.write_text(
        "# Status\n\n## Relevant files\n\n- `scripts/run.sh` — launcher\n"
        "- `./ckpt/model.pt` — weights\n- `../shared/my notes.md` — notes\n"
        "- `/data/x.bin` — data\n",
        encoding="utf-8",
    )
    code = run(["--root", str(root), "import", str(dump), "--milestone", "4504", "--write"])
    assert code == 0
    facts = yaml.safe_load((root / "facts" / "inventory.yaml").read_text(encoding="utf-8"))
    found = {f["path"]: f.get("purpose") for f in facts["facts"]}
    assert found == {
        "scripts/run.sh": "launcher",
        "./ckpt/model.pt": "weights",
        "../shared/my notes.md": "notes",
        "/data/x.bin": "data",
    }, found
