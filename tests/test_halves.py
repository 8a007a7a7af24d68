"""Work split across two cores (factbook.halves): the same answers as in one piece, whatever
the child does, and an import's proposals identical either way; the CLI's quick exit keeps
the exit code, the output and the atexit functions."""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from factbook.dumps.capture import plan
from factbook.dumps.capture.plan import plan_import
from factbook.knowledge import halves
from factbook.knowledge.kb import parse_kb_with_problems
from factbook.knowledge.yamlsrc import sharing
from factbook.store.writeback import append_facts_to_files

REPO = Path(__file__).resolve().parents[1]
needs_two = pytest.mark.skipif(halves.cores() < 2, reason="one core: nothing is forked")


def _pids(part: list[int]) -> list[int]:
    return [os.getpid() for _ in part]


@pytest.fixture
def forks(monkeypatch) -> list[int]:
    """The pids of the children in_halves forks (each must be reaped when it returns). The
    test runner's worker threads (pytest-xdist) are not this test's: forking is allowed."""
    monkeypatch.setattr(halves, "only_thread", lambda: True)
    pids: list[int] = []
    fork = os.fork

    def recorded() -> int:
        pid = fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", recorded)
    return pids


def _reaped(pids: list[int]) -> bool:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        return False  # still ours: running, or a zombie nobody waited for
    return bool(pids)


@needs_two
def test_the_second_half_runs_in_a_child_and_comes_back_in_order(forks: list[int]) -> None:
    items = list(range(1001))
    squares = halves.in_halves(lambda part: [x * x for x in part], items, least=10)
    assert squares == [x * x for x in items]
    pids = halves.in_halves(_pids, items, least=10)
    assert pids[:500] == [os.getpid()] * 500
    assert len(set(pids[500:])) == 1 and pids[-1] != os.getpid()
    pids = halves.in_halves(_pids, items, least=10, child_share=0.3)  # 300 of 1001 there
    assert pids.count(os.getpid()) == 701 and len(pids) == 1001
    assert _reaped(forks)


def test_short_lists_serial_runs_and_threads_stay_in_this_process(monkeypatch) -> None:
    assert set(halves.in_halves(_pids, list(range(50)), least=100)) == {os.getpid()}
    monkeypatch.setenv(halves.SERIAL_ENV, "1")
    assert set(halves.in_halves(_pids, list(range(500)), least=10)) == {os.getpid()}
    monkeypatch.delenv(halves.SERIAL_ENV)
    # another thread alive (a fork would copy its locks but not the thread; pytest-xdist's
    # own thread may make it so already)
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert set(halves.in_halves(_pids, list(range(500)), least=10)) == {os.getpid()}


@needs_two
@pytest.mark.parametrize("how", ["raises", "killed", "garbage"])
def test_a_child_that_fails_is_replaced_by_the_parent(how: str, forks: list[int]) -> None:
    parent = os.getpid()

    def work(part: list[int]) -> list[int]:
        if os.getpid() != parent:
            if how == "raises":
                raise RuntimeError("the child's own failure")
            if how == "killed":
                os.kill(os.getpid(), signal.SIGKILL)
            return [-1]  # the wrong number of answers
        return [x + 1 for x in part]

    assert halves.in_halves(work, list(range(600)), least=10) == list(range(1, 601))
    assert _reaped(forks)


@needs_two
def test_an_error_in_the_parent_stops_the_child_and_propagates(forks: list[int]) -> None:
    parent = os.getpid()

    def work(part: list[int]) -> list[int]:
        if os.getpid() == parent:
            raise ValueError("mine")
        signal.pause()  # the child waits until it is stopped
        return list(part)

    with pytest.raises(ValueError, match="mine"):
        halves.in_halves(work, list(range(600)), least=10)
    assert _reaped(forks)


def _large_dump(tmp_path: Path, size: int) -> Path:
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import import_large
    finally:
        sys.path.remove(str(REPO / "bench"))
    dump = tmp_path / "dump.md"
    dump.write_text(import_large.large_dump(size), encoding="utf-8")
    return dump


def _kb(tmp_path: Path, name: str) -> Path:
    kb = tmp_path / name
    for folder in ("facts", "checks"):
        shutil.copytree(REPO / folder, kb / folder)
    for file in ("milestones.yaml", "targets.yaml"):
        shutil.copy(REPO / file, kb / file)
    return kb


def _answers(result: plan.ImportResult) -> list[tuple]:
    return [
        (p.pid, p.verdict, p.old_id, p.fact, p.updates, p.problems, p.notes, p.missing, p.how)
        for p in result.proposals
    ]


@needs_two
def test_an_import_proposes_the_same_on_two_cores_as_on_one(
    tmp_path: Path, monkeypatch, forks: list[int]
) -> None:
    dump = _large_dump(tmp_path, 250_000)
    seen: list[int] = []
    split = plan.in_halves

    def counted(work, items, *, least, **how):  # how many entries went to the split
        seen.append(len(items) if len(items) >= least else 0)
        return split(work, items, least=least, **how)

    monkeypatch.setattr(plan, "in_halves", counted)
    forked = plan_import(_kb(tmp_path, "a"), dump, "4504")
    monkeypatch.setenv(halves.SERIAL_ENV, "1")
    serial = plan_import(_kb(tmp_path, "b"), dump, "4504")
    assert seen[0] >= plan._PARALLEL_FROM and len(forks) == 1  # only the first was split
    assert _answers(forked) == _answers(serial)
    assert forked.duplicates == serial.duplicates and forked.duplicates > 0
    assert forked.applied.diff.replace("/a/", "/b/") == serial.applied.diff.replace("/a/", "/b/")
    assert len(forked.proposals) > 500


def test_the_cli_exit_keeps_the_code_the_output_and_atexit(tmp_path: Path) -> None:
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('atexit ran', flush=True))\n"
        "from factbook.commands.cli import leave\n"
        "sys.stdout.write('x' * 200000)\n"  # buffered: flushed before leaving
        "leave(3)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 3
    assert done.stdout == "x" * 200000 + "atexit ran\n"
    with_thread = script.replace(  # a thread still running is joined, as at a normal exit
        "leave(3)",
        "import threading, time\n"
        "def late(): time.sleep(0.3); print('thread done', flush=True)\n"
        "threading.Thread(target=late).start()\n"
        "leave(4)",
    )
    done = subprocess.run([sys.executable, "-c", with_thread], capture_output=True, text=True)
    assert done.returncode == 4 and done.stdout.endswith("atexit ran\nthread done\n")


def _batches(kb: Path) -> list[tuple[Path, list[dict]]]:
    files = sorted((kb / "facts").glob("*.yaml"))[:5]
    batches = []
    for n, path in enumerate(files):
        facts = [
            {"id": f"t{n}.fact-{i}", "title": f"Fact {i}", "statement": f"{path.stem} {i} GB"}
            for i in range(120)
        ]
        # a problem deep inside a fact: its line is one a portable parse does not keep
        facts.append({"id": f"t{n}.deep", "sources": [{"msg": 1, "quote": 5}]})
        # and one the lint's rules across facts find (a link to no fact), also deep
        valid = dict(yaml.safe_load(path.read_text(encoding="utf-8"))["facts"][0])
        valid.update(id=f"t{n}.linked", links={"replaces": [f"t{n}.nothing"]})
        facts.append(valid)
        batches.append((path, facts))
    known = yaml.safe_load(files[-1].read_text(encoding="utf-8"))["facts"][0]["id"]
    batches[-1][1].append({"id": known, "title": "again", "statement": "a clash"})
    batches.append((kb / "facts" / "new-file.yaml", [{"id": "n.one", "statement": "x: 1"}]))
    return batches


@needs_two
def test_appending_to_many_files_on_two_cores_writes_what_one_core_writes(
    tmp_path: Path, monkeypatch, forks: list[int]
) -> None:
    written = {}
    for name, serial in (("a", "0"), ("b", "1")):
        monkeypatch.setenv(halves.SERIAL_ENV, serial)
        kb = _kb(tmp_path, name)
        batches = _batches(kb)
        with sharing():
            refused = append_facts_to_files(batches)
            _, problems = parse_kb_with_problems(kb)  # the lint an import runs next
        texts = {p.name: p.read_text(encoding="utf-8") for p in (kb / "facts").glob("*.yaml")}
        said = sorted(str(p) for p in problems)
        written[name] = ([r and r.replace(str(kb), "KB") for r in refused], texts, said)
    assert len(forks) == 1  # the first was split, the serial one not
    assert written["a"] == written["b"]
    refused, texts, said = written["a"]
    for n, name in enumerate(sorted(texts)[:4]):  # files grown here and in the child
        lines = texts[name].splitlines()
        quoted = next(i for i, line in enumerate(lines, 1) if "quote: 5" in line)
        assert lines[quoted - 3].endswith(f"id: t{n}.deep")  # the deep value's own line
        deep = [line for line in said if f"t{n}.deep" in line and "quote" in line]
        assert deep and all(line.startswith(f"facts/{name}:{quoted}:") for line in deep)
        linked = next(i for i, line in enumerate(lines, 1) if f"t{n}.nothing" in line)
        assert f"facts/{name}:{linked}: fact 't{n}.linked': link replaces" in "\n".join(said)
    assert refused[:4] == [None] * 4 and refused[5] is None
    assert "ids already present" in refused[4]  # in the child's part or not: reported
    assert texts["new-file.yaml"].count("n.one") == 1


@needs_two
def test_the_child_sends_what_send_makes_of_its_answers(forks: list[int]) -> None:
    items = list(range(100))
    answers = halves.in_halves(_pids, items, least=10, send=lambda pid: -pid)
    assert answers[:50] == [os.getpid()] * 50  # this process's own: as work made them
    assert all(a < 0 and -a != os.getpid() for a in answers[50:])
    assert _reaped(forks)


def test_a_portable_parse_answers_every_line_as_the_whole_one() -> None:
    """An appended file's parse sent from the child keeps only its facts' own lines; a
    deeper line (a lint problem's) is read from the text again, the same as the whole."""
    from factbook.knowledge.yamlsrc import located_answer, portable

    text = (
        "# header\nfacts:\n"
        "  - id: a.one\n    check:\n      probe: file.exists\n      args: {path: /x}\n"
        "    tags: [a,\n      b]\n"
        "  - id: a.two\n    history:\n      - at: '3157'\n        status: verified\n"
        "extra:\n  nested: {deep: [1, 2]}\n"
    )
    whole = located_answer(text)
    light = pickle.loads(pickle.dumps(portable(whole, text)))
    assert light[0].data == whole[0].data and light[1:] == whole[1:]
    assert len(light[0].lines) < len(whole[0].lines)  # the deep lines were left behind
    paths = [*whole[0].lines, *whole[0].key_lines, ("facts", 1, "history", 0, "nope")]
    shallow = sorted((p for p in paths if len(p) <= 2), key=len)
    assert [light[0].line(p) for p in shallow] == [whole[0].line(p) for p in shallow]
    assert light[0].source is not None  # shallow questions: nothing read again
    assert [light[0].line(p) for p in paths] == [whole[0].line(p) for p in paths]
    assert light[0].source is None


def _bare_kb(tmp_path: Path, name: str) -> Path:
    """A knowledge base with milestones and no fact or target yet."""
    kb = tmp_path / name
    (kb / "facts").mkdir(parents=True)
    shutil.copy(REPO / "milestones.yaml", kb / "milestones.yaml")
    return kb


def _no_box_dump(tmp_path: Path) -> Path:
    """A dump naming no box: 300 lines about no box, then 900 about one (its first makes the
    placeholder box), with repeats on both sides of it."""
    lines = ["# Status", "", "## Key decisions", ""]
    lines += [f"- We decided to keep batch size {i % 40} since it was stable" for i in range(300)]
    lines += ["", "## Discoveries", ""]
    for i in range(900):
        lines.append(f"- The file /data/run{i % 300}/out.log shows torch 2.{i % 7}.1")
        if i % 10 == 0:
            lines.append(f"- We decided to keep batch size {i % 40} since it was stable")
    dump = tmp_path / "no-box.md"
    dump.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dump


@needs_two
def test_a_dump_naming_no_box_is_split_after_its_placeholder(
    tmp_path: Path, monkeypatch, forks: list[int]
) -> None:
    dump = _no_box_dump(tmp_path)
    split: list[int] = []
    in_halves = plan.in_halves

    def counted(work, items, **how):  # the entries after the placeholder: two processes
        split.append(len(items))
        return in_halves(work, items, **how)

    monkeypatch.setattr(plan, "in_halves", counted)
    forked = plan_import(_bare_kb(tmp_path, "a"), dump, "4504")
    assert forks and split and plan._PARALLEL_FROM <= split[0] < 1290  # not the 300 before
    monkeypatch.setenv(halves.SERIAL_ENV, "1")
    serial = plan_import(_bare_kb(tmp_path, "b"), dump, "4504")
    assert _answers(forked) == _answers(serial)
    assert forked.duplicates == serial.duplicates > 0
    assert [b.name for b in forked.boxes.proposed] == [b.name for b in serial.boxes.proposed]
    assert any(b.placeholder for b in forked.boxes.proposed)
    assert forked.applied.diff.replace("/a/", "/b/") == serial.applied.diff.replace("/a/", "/b/")
    assert _reaped(forks)


@needs_two
def test_the_lint_of_a_scratch_copy_finds_what_the_whole_parse_finds(
    tmp_path: Path, forks: list[int], monkeypatch
) -> None:
    """kb.lint_problems, each half of the facts built and checked on its own core, reports
    parse_kb_with_problems's problems in its order: 3,000 facts, a fifth of them with a
    problem only the other facts or files show (a link to a fact of the other half, or to
    none; an unknown milestone, target or probe; a repeated id; a key of another category)."""
    from factbook.knowledge.kb import lint_problems

    kb = tmp_path / "kb"
    (kb / "facts").mkdir(parents=True)
    for name in ("milestones.yaml", "targets.yaml"):
        shutil.copy(REPO / name, kb / name)
    facts = []
    for i in range(3000):
        fact = {
            "id": f"sw.f{i}",
            "category": "software",
            "title": f"f {i}",
            "statement": f"fact {i}",
            "status": "assumed",
            "sources": [{"seed": "x.md", "message": 4504}],
        }
        kind = i % 35
        if kind == 1:
            fact["links"] = {"fixes": [f"sw.f{2999 - i}"]}  # in the other half: fine
        elif kind == 2:
            fact["links"] = {"fixes": ["sw.nowhere"]}
        elif kind == 3:
            fact["since"] = "no-such-milestone"
        elif kind == 4:
            fact["target"] = "no-such-box"
        elif kind == 5:
            fact["check"] = {"probe": "no.such.probe"}
        elif kind == 6:
            fact["id"] = f"sw.f{i - 1}"
        elif kind == 7:
            fact["path"] = "/x"  # inventory's key
        facts.append(fact)
    for part in range(3):
        text = yaml.safe_dump({"facts": facts[part * 1000 : (part + 1) * 1000]}, sort_keys=False)
        (kb / "facts" / f"software-{part}.yaml").write_text(text)
    _, expected = parse_kb_with_problems(kb)
    said = "\n".join(p.message for p in expected)
    for kind in ("no such fact", "unknown milestone", "unknown target", "unknown probe"):
        assert kind in said, kind
    assert "duplicate id" in said and "is only for category" in said
    assert lint_problems(kb) == expected
    assert len(forks) == 1 and _reaped(forks)
    monkeypatch.setenv(halves.SERIAL_ENV, "1")
    assert lint_problems(kb) == expected
    assert len(forks) == 1
