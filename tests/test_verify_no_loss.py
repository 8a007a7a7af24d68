"""No silent data loss in verify: unreadable results are refused, Ctrl-C keeps what arrived,
`--record` writes back every fact style the loader accepts (and reports, not stops at, the
rest), in one pass per file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from factbook.knowledge.kb import load_kb
from factbook.store.results import list_runs, load_latest
from factbook.store.writeback import FactUpdate, update_fact, update_facts
from tests.helpers import cli, fact, make_kb

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    facts = [
        fact("hw.cpu.threads", "cpu.threads", {"ge": 1}, target="local"),
        fact("hw.root.exists", "file.exists", {"eq": True}, args={"path": "/"}, target="local"),
    ]
    root = make_kb(tmp_path / "kb", facts)
    assert cli(root, "verify", "--target", "local")[0] == 0  # a good latest.json to protect
    return root


BROKEN_LATEST = [
    pytest.param(
        b'{\n<<<<<<< HEAD\n "a": {}\n=======\n "b": {}\n>>>>>>> other\n}\n',
        "results/latest.json:2: not valid JSON",
        id="merge-conflict",
    ),
    pytest.param(b'{"hw.x": {"local": {"reason": "\xff\xfe"}}}', "not UTF-8", id="not-utf8"),
    pytest.param(
        b"[1, 2]", "results/latest.json:1: expected a mapping {fact: {target: record}}", id="a-list"
    ),
    pytest.param(
        b'{"hw.x": [1]}',
        "results/latest.json:1: hw.x: expected a mapping {target: record}",
        id="bad-fact",
    ),
    pytest.param(
        b'{"hw.x": {"local": "pass"}}', "hw.x.local: expected a mapping (a record)", id="bad-rec"
    ),
    pytest.param(b"", "not valid JSON", id="empty"),
]


@pytest.mark.parametrize(("content", "message"), BROKEN_LATEST)
def test_unreadable_latest_is_refused_and_left_alone(
    kb: Path, content: bytes, message: str
) -> None:
    latest = kb / "results" / "latest.json"
    latest.write_bytes(content)
    runs_before = sorted((kb / "results" / "runs").iterdir())
    code, _, err = cli(kb, "verify", "--target", "local")
    assert code == 2, err
    assert message in err and "not overwritten" in err
    # each problem on one line naming the file (and a count line), no traceback
    assert err.count("results/latest.json:") == err.count("\n") - 1 and "Traceback" not in err
    assert latest.read_bytes() == content  # nothing changed
    assert sorted((kb / "results" / "runs").iterdir()) == runs_before
    code, _, err = cli(kb, "verify", "--failed")
    assert code == 2 and message in err
    # --no-save does not touch results/, so it still runs
    assert cli(kb, "verify", "--target", "local", "--no-save")[0] == 0


def test_a_readable_latest_is_merged_not_replaced(kb: Path) -> None:
    before = load_latest(kb)
    assert cli(kb, "verify", "hw.cpu.threads", "--target", "local")[0] == 0
    after = load_latest(kb)
    assert set(after) == set(before) == {"hw.cpu.threads", "hw.root.exists"}
    assert after["hw.root.exists"] == before["hw.root.exists"]


def test_ctrl_c_keeps_the_results_already_received(tmp_path: Path) -> None:
    """A real SIGINT to a real `factbook verify` process while one check is still running."""
    facts = [
        fact("hw.cpu.threads", "cpu.threads", {"ge": 1}, target="local"),
        fact("hw.root.exists", "file.exists", {"eq": True}, args={"path": "/"}, target="local"),
        fact(
            "sw.slow",
            "cmd",
            {"path": "exit_code", "eq": 0},
            args={"argv": ["sleep", "60"]},
            category="software",
            target="local",
            timeout=120,
        ),
    ]
    root = make_kb(tmp_path / "kb", facts)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    argv = [sys.executable, "-m", "factbook.commands.cli", "--root", str(root), "verify", "-v"]
    proc = subprocess.Popen(
        argv, stderr=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
    )
    seen: list[str] = []
    assert proc.stderr is not None
    while len([line for line in seen if line.startswith("[")]) < 2:
        line = proc.stderr.readline()
        assert line, f"verify ended early: {seen}"
        seen.append(line)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert time.monotonic() - started < 30  # it did not wait for the slow check
    assert "interrupted; 2 result(s) kept" in err
    runs = list_runs(root)
    assert len(runs) == 1 and runs[0]["interrupted"] is True
    assert runs[0]["summary"]["pass"] == 2
    latest = load_latest(root)
    assert set(latest) == {"hw.cpu.threads", "hw.root.exists"}
    assert "hw.cpu.threads" in out  # the report of what was received is still printed


MIXED_FILE = """\
# facts in every style the loader accepts
facts:
  # a block fact
  - id: hw.block
    category: hardware
    title: Block
    statement: A block fact.
    status: assumed   # keep me
    sources:
      - {note: seed}
    check: {probe: file.exists, args: {path: /}, expect: {eq: true}}
  - {id: hw.flow, category: hardware, title: Flow, statement: A flow fact., status: assumed, sources: [{note: seed}], check: {probe: file.exists, args: {path: /}, expect: {eq: true}}}
  - {id: hw.flow_lines,
     category: hardware, title: Flow over lines, statement: "Flow, with a comma.",
     status: assumed, sources: [
       {note: seed}
     ], check: {probe: file.exists, args: {path: /}, expect: {eq: true}}}  # tail
  - id: hw.block_flow_sources
    category: hardware
    title: Block with flow sources
    statement: Sources in flow style.
    status: assumed
    sources: [{note: a}, {note: b}]
    check: {probe: file.exists, args: {path: /}, expect: {eq: true}}
"""  # noqa: E501


def test_record_writes_back_block_and_flow_facts(tmp_path: Path) -> None:
    root = make_kb(tmp_path / "kb", [])
    path = root / "facts" / "facts.yaml"
    path.write_text(MIXED_FILE, encoding="utf-8")
    assert cli(root, "lint")[0] == 0
    code, _, err = cli(root, "verify", "--target", "local", "--record")
    assert code == 0, err
    assert "not recorded" not in err
    kb = load_kb(root)
    assert {f.id: f.status for f in kb.facts.values()} == dict.fromkeys(kb.facts, "verified")
    for f in kb.facts.values():
        assert f.sources[-1].run, f.id  # this run became a source
    text = path.read_text(encoding="utf-8")
    assert "status: verified   # keep me" in text and "}}  # tail" in text
    assert "# facts in every style the loader accepts" in text
    flow_line = next(line for line in text.splitlines() if "id: hw.flow," in line)
    assert flow_line.startswith("  - {") and "status: verified" in flow_line


def test_record_reports_what_it_cannot_write_and_records_the_rest(tmp_path: Path) -> None:
    """A fact that inherits its sources through a YAML merge key cannot get a source added in
    place (a new `sources:` would hide the inherited ones): it is reported, and the other
    facts of the same file are still recorded, in the same write."""
    root = make_kb(tmp_path / "kb", [])
    path = root / "facts" / "facts.yaml"
    good = yaml.safe_dump(
        [fact("hw.good", "file.exists", {"eq": True}, args={"path": "/"}, target="local")],
        sort_keys=False,
    )
    path.write_text(
        "defaults: &defaults\n"
        "  category: hardware\n"
        "  status: assumed\n"
        "  sources: [{note: seed}]\n"
        "facts:\n"
        + "".join("  " + line + "\n" for line in good.splitlines())
        + "  - <<: *defaults\n"
        "    id: hw.merged\n"
        "    title: Merged\n"
        "    statement: Inherits its sources.\n",
        encoding="utf-8",
    )
    before = path.read_text(encoding="utf-8")
    notes, problems = _record(root, ["hw.merged", "hw.good"])
    assert notes == ["hw.good"]
    assert len(problems) == 1 and problems[0].startswith("hw.merged: ")
    assert "would change other data" in problems[0]
    after = path.read_text(encoding="utf-8")
    assert after.replace("status: verified", "status: assumed", 1) != before  # a source added
    data = yaml.safe_load(after)
    assert [f["status"] for f in data["facts"]] == ["verified", "assumed"]
    assert data["facts"][1]["sources"] == [{"note": "seed"}]


def _record(root: Path, ids: list[str]) -> tuple[list[str], list[str]]:
    source = {"run": "r1", "note": "test"}
    done, problems = update_facts(
        root, [FactUpdate(i, status="verified", add_source=source) for i in ids]
    )
    return [u.fact_id for u in done], problems


def _synthetic(root: Path, n: int) -> None:
    facts = [
        fact(f"hw.f{i:04d}", "file.exists", {"eq": True}, args={"path": "/"}, target="local")
        for i in range(n)
    ]
    make_kb(root, facts[: n // 2])
    body = yaml.safe_dump({"facts": facts[n // 2 :]}, sort_keys=False)
    (root / "facts" / "more.yaml").write_text("# second file\n" + body, encoding="utf-8")


def test_batch_write_back_equals_one_fact_at_a_time(tmp_path: Path) -> None:
    """update_facts (one pass per file) writes exactly what update_fact would, fact by fact."""
    ids = [f"hw.f{i:04d}" for i in range(40)]
    _synthetic(tmp_path / "one", 40)
    _synthetic(tmp_path / "batch", 40)
    source = {"run": "r1", "date": "2026-11-30", "note": "verify-facts passed on local"}
    for fact_id in ids:
        update_fact(tmp_path / "one", fact_id, status="verified", add_source=source)
    done, problems = update_facts(
        tmp_path / "batch",
        [FactUpdate(i, status="verified", add_source=source) for i in [*ids, "hw.missing"]],
    )
    assert problems == [
        f"hw.missing: no fact with id 'hw.missing' in {tmp_path / 'batch' / 'facts'}"
    ]
    assert [u.fact_id for u in done] == ids
    for name in ("facts.yaml", "more.yaml"):
        one = (tmp_path / "one" / "facts" / name).read_text(encoding="utf-8")
        assert (tmp_path / "batch" / "facts" / name).read_text(encoding="utf-8") == one


def test_recording_a_thousand_facts_is_linear(tmp_path: Path) -> None:
    """1,000 facts recorded through the CLI: each file written once, in seconds, not minutes
    (fact-by-fact write-back took 13 s for 150 and 200 s for 600)."""
    _synthetic(tmp_path / "kb", 1000)
    inodes = {p.name: p.stat().st_ino for p in (tmp_path / "kb" / "facts").iterdir()}
    started = time.monotonic()
    code, _, err = cli(tmp_path / "kb", "verify", "--target", "local", "--record", "--no-save")
    elapsed = time.monotonic() - started
    assert code == 0, err[-2000:]
    assert err.count("recorded hw.f") == 1000
    statuses = {f.status for f in load_kb(tmp_path / "kb").facts.values()}
    assert statuses == {"verified"}
    # each file was replaced (atomic write) and is valid JSON-compatible YAML still
    for p in (tmp_path / "kb" / "facts").iterdir():
        assert p.stat().st_ino != inodes[p.name]
    assert elapsed < 30, f"verify --record of 1,000 facts took {elapsed:.1f}s"
    json.dumps(yaml.safe_load((tmp_path / "kb" / "facts" / "more.yaml").read_text()))
