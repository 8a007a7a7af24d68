# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile input, round 9 (issue 25): files written by whoever can write the knowledge base
or hand one over (proposal files, run records, dumps, inventories), read back by the
commands that only read them, in the table form of tests/test_hostile_kb.py and checked by
its `run_case` (no traceback, no file outside touched, no payload run), plus plain tests
where a property needs its own driver.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_hostile_kb import (
    BASE,
    BENCH_FACT,
    BENCH_IMPORT,
    PID,
    RUN,
    RUNBOOK,
    Case,
    bench_line,
    run_case,
)

RAW = ("\x1b", "\u202e", "\n::error::")  # a raw ESC or bidi control, a workflow command's line
PROPOSAL = f"id: {PID}\ncreated: '2026-01-01T00:00:00Z'\norigin: ORIGIN\nsummary: SUMMARY\nreason: REASON\nitem:\n  change: {{id: hw.gpu.count, set: {{value: 3}}}}\n"
INJECT = '"x\\e[31m\\u202e\\n::error::pwned"'  # YAML escapes: ESC, RLO, a line break
BIG = "1" + "0" * 400  # an integer Python parses and prints, and no float holds
HUGE_DIGITS = "1" * 5000  # more digits than Python's int() reads (4,300)
GOOD = BASE["facts/good.yaml"]
DOCS = ["docs", "--out", "_site_md"]
HINTED = '# Status as of 2026-12-07\n\n## Discoveries\n\n### Engine notes\n\n- torch 2.5.1 is installed. <!-- fb {"id": "sw.x", "value": VALUE} -->\n'

INVENTORY = "inventory: FILE\ntargets:\n  here: {transport: local}\n"
FLAGS_RUNBOOK = RUNBOOK.replace(
    "print('hi')",
    "from factbook.runbooks.api import box, flags_from\nargv = [box.python, '-m', 'sglang.launch_server', '--model-path', 'm', *flags_from('sw.flags')]",
)
FLAGS_FACT = "facts:\n  - id: sw.flags\n    category: software\n    title: F\n    statement: S.\n    status: assumed\n    value: {flags: FLAGS}\n    sources: [{seed: a.txt}]\n"


def cell(code: str) -> dict[str, str | bytes]:
    """RUNBOOK with its one cell's code replaced by `code` (target `here`, a local one)."""
    return {"runbooks/rb.md": RUNBOOK.replace("print('hi')", code)}


LAUNCH = "argv = ['python', '-m', 'sglang.launch_server', '--model-path', MODEL, '--tp', '8']"
EAGLE = "argv = ['python', '-m', 'sglang.launch_server', '--model-path', '{kb}/tgt', '--speculative-algorithm', 'EAGLE3', '--speculative-draft-model-path', '{kb}/draft', '--tp', '8']"
TARGET_CONFIG = '{"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 61}'


def draft(config: str, target: str = TARGET_CONFIG) -> dict[str, str | bytes]:
    """A runbook launching an EAGLE-3 draft whose config.json is `config` (JSON text)."""
    return {**cell(EAGLE), "draft/config.json": config, "tgt/config.json": target}


DEAD = "results/runbooks/rb/20250101T000000Z-here-1"  # a run whose executor died
DEAD_RECORD = {
    "run_id": "20250101T000000Z-here-1",
    "runbook": "rb",
    "target": "here",
    "status": "running",
    "steps": [],
    "executor": {"pid": 4_000_000, "started": "1", "host": socket.gethostname()},
}


def dead_run(registry: str | bytes | None = None, **fields: object) -> dict[str, str | bytes]:
    """RUNBOOK and a `running` record of it whose executor is gone (every `run` reclaims it),
    with `fields` over the record and `registry` as its servers.jsonl."""
    files: dict[str, str | bytes] = {
        "runbooks/rb.md": RUNBOOK,
        f"{DEAD}/record.json": json.dumps({**DEAD_RECORD, **fields}),
    }
    if registry is not None:
        files[f"{DEAD}/servers.jsonl"] = registry
    return files


def record(**fields: str) -> dict[str, str | bytes]:
    """RUNBOOK and one run record of it with `fields` added as raw JSON text."""
    extra = "".join(f', "{key}": {value}' for key, value in fields.items())
    text = (
        '{"run_id": "20260101T000000Z-here", "runbook": "rb", "target": "here", "status": "ok", "steps": []'
        + extra
        + "}"
    )
    return {"runbooks/rb.md": RUNBOOK, f"{RUN}/record.json": text}


def proposal(**fields: str) -> dict[str, str | bytes]:
    """A pending proposal of a change to hw.gpu.count with `fields` (origin, summary,
    reason) replaced by YAML text."""
    text = PROPOSAL
    for key, value in {"origin": "mcp", "summary": "s", "reason": "r", **fields}.items():
        text = text.replace(key.upper(), value)
    return {f"proposals/{PID}.yaml": text}


# fmt: off
CASES: list[Case] = [
    # a proposal's summary, reason and origin went raw to the terminal: ESC repainted it, a line break started `::error::` in CI
    Case("proposals list: summary with ESC, RLO and a line break", proposal(summary=INJECT), ["proposals", "list"], 0, "x\\x1b[31m\\u202e ::error::pwned", absent=RAW),
    Case("proposals list: origin with ESC", proposal(origin=INJECT), ["proposals", "list"], 0, "(x\\x1b[31m", absent=RAW),
    Case("proposals show: reason with ESC, RLO and a line break", proposal(reason=INJECT), ["proposals", "show", PID], 0, "reason: x\\x1b[31m\\u202e ::error::pwned", absent=RAW),
    Case("proposals show: summary with ESC, RLO and a line break", proposal(summary=INJECT), ["proposals", "show", PID], 0, f"{PID}: x\\x1b[31m", absent=RAW),
    Case("proposals reject: summary with ESC, RLO and a line break", proposal(summary=INJECT), ["proposals", "reject", PID], 0, f"rejected {PID}: x\\x1b[31m", absent=RAW),
    # a proposal's item of the wrong shape was a TypeError/ValueError traceback in show and accept; one unreadable file hid every other proposal
    Case("proposals show: set is a list", {f"proposals/{PID}.yaml": PROPOSAL.replace("{value: 3}", "[1, 2]")}, ["proposals", "show", PID], 2, "item: change: set must map field names to values"),
    Case("proposals accept: set is a string", {f"proposals/{PID}.yaml": PROPOSAL.replace("{value: 3}", "ab")}, ["proposals", "accept", PID], 2, "item: change: set must map field names to values"),
    Case("proposals accept: set has a number as a key", {f"proposals/{PID}.yaml": PROPOSAL.replace("{value: 3}", "{1: 3}")}, ["proposals", "accept", PID], 2, "item: change: set must map field names to values"),
    Case("proposals show: source is a list", {f"proposals/{PID}.yaml": PROPOSAL.replace("set: {value: 3}", "set: {value: 3}, source: [1]")}, ["proposals", "show", PID], 2, "item: change: source must be a mapping"),
    Case("proposals accept: a new fact whose id is a list", {f"proposals/{PID}.yaml": PROPOSAL.replace("change: {id: hw.gpu.count, set: {value: 3}}", "new: {id: [1], category: hardware}")}, ["proposals", "accept", PID], 2, "item: new: id must be a string"),
    Case("proposals show: a change naming a 100,000-character id", {f"proposals/{PID}.yaml": PROPOSAL.replace("id: hw.gpu.count", "id: " + "z" * 100_000)}, ["proposals", "show", PID], 2, "no fact with id 'zzzz", absent=("z" * 200,)),
    Case("proposals list: one unreadable proposal among good ones", {**proposal(summary="the good one"), "proposals/20260101-000000-zzzzzz.yaml": "item: [\n"}, ["proposals", "list"], 2, "(1 pending, 1 unreadable)"),
    # a run record's status went raw into `run --list`
    Case("run --list: record status with ESC, RLO and a line break", record(status='"ok\\u001b[31m\\u202e\\n::error::pwned"'), ["run", "--list"], 0, "ok\\x1b[31m\\u202e ::error::pwned", absent=RAW),
    # numbers no float holds: JSON's Infinity/NaN and a 400-digit integer in a run record stopped `docs` with an OverflowError
    Case("docs: run record duration Infinity", record(duration_s="Infinity"), DOCS, 0, "pages generated"),
    Case("docs: run record duration NaN", record(duration_s="NaN"), DOCS, 0, "pages generated"),
    Case("docs: run record duration of 400 digits", record(duration_s=BIG), DOCS, 0, "pages generated"),
    Case("docs: run record step duration Infinity", record(steps='[{"name": "hello", "status": "ok", "duration_s": Infinity}]'), DOCS, 0, "pages generated"),
    Case("docs: run record step duration of 400 digits", record(steps='[{"name": "hello", "status": "ok", "duration_s": ' + BIG + "}]"), DOCS, 0, "pages generated"),
    # ... and a 400-digit integer in the knowledge base's YAML passed lint, then stopped what used it as a float
    Case("lint: runbook step timeout of 400 digits", {"runbooks/rb.md": RUNBOOK.replace(":name: hello", ":name: hello\n:timeout: " + BIG)}, "lint", 2, "runbooks/rb.md:8: step 'hello': timeout must be a positive number of seconds"),
    Case("lint: benchmark value of 400 digits", {"facts/b.yaml": BENCH_FACT.replace("value: 1.0", "value: " + BIG)}, "lint", 2, "facts/b.yaml:7: invalid value: Exceeds the limit of a number"),
    Case("docs: benchmark value of 400 digits", {"facts/b.yaml": BENCH_FACT.replace("value: 1.0", "value: " + BIG)}, DOCS, 0, "facts/b.yaml:7: invalid value: Exceeds the limit of a number"),
    Case("lint: benchmark value 0x + 256 hex digits", {"facts/b.yaml": BENCH_FACT.replace("value: 1.0", "value: 0x" + "f" * 256)}, "lint", 2, "facts/b.yaml:7: invalid value: Exceeds the limit of a number"),
    Case("verify: check timeout of 400 digits", {"facts/good.yaml": GOOD.replace("expect: {exists: true}", "expect: {exists: true}, timeout: " + BIG)}, ["verify", "hw.gpu.count"], 2, "facts/good.yaml:10: invalid value: Exceeds the limit of a number"),
    # ... so every writer refuses such an integer before writing, as the reader would (no self-lockout)
    Case("import --write: a hint's value of 400 digits", {"dump.md": HINTED.replace("VALUE", BIG)}, ["import", "{kb}/dump.md", "--milestone", "1", "--write"], 0, "facts/software.yaml:8: would be refused when read back: invalid value: Exceeds the limit of a number", then="lint"),
    Case("bench import --record: a concurrency of 400 digits", {"facts/b.yaml": BENCH_FACT, "run.jsonl": bench_line(max_concurrency=int(BIG))}, BENCH_IMPORT, 2, "would be refused when read back: invalid value: Exceeds the limit of a number", then="lint"),
    # a benchmark file's figure of 400 digits: math.isfinite() of it was an OverflowError
    Case("bench import --record: a throughput of 400 digits", {"facts/b.yaml": BENCH_FACT, "run.jsonl": bench_line(output_throughput=int(BIG))}, BENCH_IMPORT, 2, "has no figure 'output_throughput'", then="lint"),
    # shlex builds a word a character at a time: a long word in what factbook splits like a shell took the square of its length
    Case("lint: an inventory host line of one 2 MB word", {"inv": "[g]\nn1 x=" + "a" * 2_000_000 + "\n", "targets.yaml": INVENTORY.replace("FILE", "inv")}, "lint", 2, "inv:2: cannot split host line: 2,000,005 characters to split; at most 65,536"),
    Case("lint: ansible_ssh_common_args of one 900 kB word", {"inv.yml": "all:\n  hosts:\n    n1:\n      ansible_host: 10.0.0.1\n      ansible_ssh_common_args: '-o" + "a" * 900_000 + "'\n", "targets.yaml": INVENTORY.replace("FILE", "inv.yml")}, "lint", 2, "ansible_ssh_common_args cannot be split into words: 900,002 characters to split"),
    Case("lint: a fact's flags of one 900 kB word, used by a runbook", {"runbooks/rb.md": FLAGS_RUNBOOK, "facts/f.yaml": FLAGS_FACT.replace("FLAGS", "'--x " + "a" * 900_000 + "'")}, "lint", 0, "ok: 2 facts"),
    # a fact's flags with an unclosed quote, used by a runbook: lint's constant propagation split them unguarded
    Case("lint: a fact's flags with an unclosed quote, used by a runbook", {"runbooks/rb.md": FLAGS_RUNBOOK, "facts/f.yaml": FLAGS_FACT.replace("FLAGS", "'\"--tp 8'")}, "lint", 0, "ok: 2 facts"),
    Case("lint: a fact's flags list with an unclosed quote, used by a runbook", {"runbooks/rb.md": FLAGS_RUNBOOK, "facts/f.yaml": FLAGS_FACT.replace("FLAGS", "['\"--tp']")}, "lint", 0, "ok: 2 facts"),
    Case("run --dry-run: a fact's flags of one 900 kB word", {"runbooks/rb.md": FLAGS_RUNBOOK, "facts/f.yaml": FLAGS_FACT.replace("FLAGS", "'--x " + "a" * 900_000 + "'")}, ["run", "rb", "--dry-run"], 2, "fact sw.flags: flags cannot be split into words: 900,004 characters to split"),
    # an ssh config's Host line of 20,000 names was matched name by name for each of them (80 s)
    Case("lint: an ssh config Host line of 20,000 names", {"ssh_config": "Host " + " ".join(f"h{i}" for i in range(20_000)) + "\n  User ops\nHost n1 !h1\n  HostName 10.0.0.1\n", "targets.yaml": INVENTORY.replace("FILE", "ssh_config")}, ["list", "--target", "h19999"], 0, "(0 facts)"),
    # numbers of 5,000 digits (Python's int() refuses over 4,300): a port, a range bound, an ssh option were ValueError tracebacks
    Case("lint: an INI host:port of 5,000 digits", {"inv": f"[g]\nn1:{HUGE_DIGITS}\n", "targets.yaml": INVENTORY.replace("FILE", "inv")}, "lint", 2, "inv:2: host pattern 'n1:1111", absent=(HUGE_DIGITS,)),
    Case("lint: ansible_port of 5,000 digits", {"inv": f"[g]\nn1 ansible_host=10.0.0.1 ansible_port={HUGE_DIGITS}\n", "targets.yaml": INVENTORY.replace("FILE", "inv")}, "lint", 2, "target 'n1': port '1111", absent=(HUGE_DIGITS,)),
    Case("lint: a host range bound of 5,000 digits", {"inv": f"[g]\nn[1:{HUGE_DIGITS}]\n", "targets.yaml": INVENTORY.replace("FILE", "inv")}, "lint", 2, "a host range's bounds have at most 18 digits", absent=(HUGE_DIGITS,)),
    Case("lint: an ssh config Port of 5,000 digits", {"ssh_config": f"Host n1\n  HostName 10.0.0.1\n  Port {HUGE_DIGITS}\n", "targets.yaml": INVENTORY.replace("FILE", "ssh_config")}, "lint", 2, "ssh_config:3: Bad port '1111", absent=(HUGE_DIGITS,)),
    Case("list: an ssh config CanonicalizeMaxDots of 5,000 digits", {"ssh_config": f"Host n1\n  HostName a.b.c\n  CanonicalizeHostname yes\n  CanonicalDomains example.org\n  CanonicalizeMaxDots {HUGE_DIGITS}\n", "targets.yaml": INVENTORY.replace("FILE", "ssh_config")}, ["list", "--target", "n1"], 0, "(0 facts)"),
    # lint's constant propagation over runbook cells: any list holding a non-string, deep nesting, or values that double
    Case("lint: a cell assigning a list of numbers", cell("x = [1, 2]"), "lint", 0, "ok: 1 facts"),
    Case("lint: a launch with a number among its flags", cell("argv = ['python', '-m', 'sglang.launch_server', '--model-path', 'm', '--tp', 8]"), "lint", 0, "ok: 1 facts"),
    Case("lint: a string doubled 40 times", cell("a = 'xx'\n" + "a = a + a\n" * 40), "lint", 0, "ok: 1 facts", max_rss_mb=300, isolated=True),
    Case("lint: a list doubled 40 times by unpacking", cell("a = [1, 2]\n" + "a = [*a, *a]\n" * 40), "lint", 0, "ok: 1 facts", max_rss_mb=300, isolated=True),
    Case("lint: a list comprehension over a list comprehension", cell("a = ['x'] * 2\na = " + " + ".join(["['a', 'b']"] * 100) + "\n" + "a = a + a\n" * 9 + "b = [[y for y in a] for x in a]"), "lint", 0, "ok: 1 facts"),
    Case("lint: 50,000 chained +", cell("a = " + " + ".join(["'x'"] * 50_000)), "lint", 2, "runbooks/rb.md:8: step 'hello': nested too deeply to compile"),
    Case("run --dry-run: 50,000 chained +", cell("a = " + " + ".join(["'x'"] * 50_000)), ["run", "rb", "--dry-run"], 2, "step 'hello': nested too deeply to compile"),
    Case("lint: 15,000 launches in one cell", {"runbooks/rb.md": RUNBOOK.replace("print('hi')", "a = ['python', '-m', 'sglang.launch_server', '--tp', '8']\n" * 15_000)}, "lint", 2, "runbooks/rb.md:15009: step 'hello': sglang launch error", max_s=15),
    # ... and the model folders a local launch names: paths no filesystem call takes, config.json files of any shape
    Case("lint: a local launch's model path too long for a file name", cell(LAUNCH.replace("MODEL", repr("/" + "x" * 300))), "lint", 0, "ok: 1 facts"),
    Case("lint: a local launch's model path of an unknown ~user", cell(LAUNCH.replace("MODEL", "'~nosuchuser-r9/m'")), "lint", 0, "ok: 1 facts"),
    Case("lint: a draft config's layer ids that are no numbers", draft('{"architectures": ["LlamaForCausalLMEagle3"], "eagle_config": {"eagle_aux_hidden_state_layer_ids": ["a", null]}}'), "lint", 2, "has no eagle_aux_hidden_state_layer_ids"),
    Case("lint: a draft config of 100,000 layer ids", draft('{"architectures": ["LlamaForCausalLMEagle3"], "eagle_aux_hidden_state_layer_ids": [' + ", ".join(map(str, range(100_000))) + "]}"), "lint", 2, "has no eagle_aux_hidden_state_layer_ids", absent=("99999",)),
    Case("lint: a draft config whose architectures is a number", draft('{"architectures": 5}'), "lint", 2, "has no eagle_aux_hidden_state_layer_ids"),
    Case("lint: a target config whose text_config is a list", draft('{"architectures": ["LlamaForCausalLMEagle3"]}', '{"architectures": ["X"], "text_config": [1]}'), "lint", 0, "ok: 1 facts"),
    Case("lint: a draft config nested 100,000 deep", draft("[" * 100_000 + "]" * 100_000), "lint", 0, "ok: 1 facts"),
    # init into a folder no filesystem call takes: OSError and RecursionError tracebacks
    Case("init: a folder name too long for the filesystem", {}, ["init", "--no-discover", "--name", "x", "{kb}/new/" + "d" * 300], 2, "cannot create it (File name too long)"),
    Case("init: a folder 2,000 levels deep", {}, ["init", "--no-discover", "{kb}/new/" + "/".join(["d"] * 2000)], 2, "too many folders to create at once"),
    # a draft config handed to `eagle3`: read whole and unguarded
    Case("eagle3 summary: a config nested 100,000 deep", {"deep.json": "[" * 100_000 + "]" * 100_000}, ["eagle3", "summary", "{kb}/deep.json"], 2, "deep.json:1: invalid JSON: nested too deeply"),
    Case("eagle3 summary: a folder", {"draft/config.json": "{}"}, ["eagle3", "summary", "{kb}/draft"], 2, "draft:1: is a folder, not a file"),
    Case("eagle3 summary: /dev/zero", {}, ["eagle3", "summary", "/dev/zero"], 2, "/dev/zero:1: not a regular file", isolated=True, max_s=30),
    Case("eagle3 capture: a config nested 100,000 deep", {"deep.json": "[" * 100_000 + "]" * 100_000}, ["eagle3", "capture", "{kb}/deep.json"], 2, "deep.json:1: invalid JSON: nested too deeply"),
    # a dead run's record and server registry, read by every `run` to reclaim it: one planted file stopped every run
    Case("run: a dead run's registry line nested 100,000 deep", dead_run("[" * 100_000 + "]" * 100_000 + "\n"), ["run", "rb", "--yes"], 0, "hello: ok"),
    Case("run: a dead run's registry line that is a list", dead_run("[1, 2]\n"), ["run", "rb", "--yes"], 0, "hello: ok"),
    Case("run: a dead run's server named by a list", dead_run('{"event": "start", "name": [1], "target": "here"}\n'), ["run", "rb", "--yes"], 0, "hello: ok"),
    Case("run: a dead run's server of pid 'abc'", dead_run('{"event": "start", "name": "s", "target": "here", "pid": "abc", "started": null, "log": "l", "pidfile": null, "step": "hello"}\n'), ["run", "rb", "--yes"], 0, "hello: ok", absent=("Traceback",)),
    Case("run: a dead run's registry not UTF-8", dead_run(b"\xff\xfe\n"), ["run", "rb", "--yes"], 0, "hello: ok"),
    Case("run: a record.json that is no JSON", {"runbooks/rb.md": RUNBOOK, f"{DEAD}/record.json": "{half"}, ["run", "rb", "--yes"], 0, "hello: ok"),
    Case("run --resume: a record whose resumed_from is a list", dead_run(status="failed", resumed_from=[1]), ["run", "rb", "--resume"], 2, "no unfinished run to resume"),
    Case("run --resume ID: a record whose resumed_from is a list", dead_run(status="failed", resumed_from=[1]), ["run", "rb", "--resume", "20250101T000000Z-here-1"], 2, "unreadable run record (resumed_from must be a string)"),
    Case("run --resume: a record naming a target targets.yaml lacks", dead_run(status="failed", target="../../x"), ["run", "rb", "--resume", "--yes"], 2, "unknown target '../../x'"),
    # a box's value holding a hidden character was written by discover --write, and lint then refused the fact file
    Case("discover --write: an observed value holding ESC", {}, ["discover", "--target", "here", "--write"], 0, "here:cuda.home: the observed value holds U+001B, which no fact may hold; not proposed", env={"CUDA_HOME": "/usr/local\x1b[31m\n::error::x"}, absent=RAW, then="lint", max_s=60),
    Case("bench import --record: a server version holding ESC and RLO", {"facts/b.yaml": BENCH_FACT, "run.jsonl": bench_line(server_info={"version": "0.5\x1b[31m\u202e"})}, BENCH_IMPORT, 0, "server_version: holds control or bidi characters; recorded with them shown escaped", absent=RAW, then="lint"),
    Case("run: a cell records a value holding ESC and RLO", {"runbooks/rb.md": RUNBOOK.replace(":name: hello", ":name: hello\n:records: [hw.gpu.count]").replace("print('hi')", "from factbook.runbooks.api import record\nrecord('hw.gpu.count', 'x\\x1b[31m\\u202e\\n::error::y')")}, ["run", "rb", "--yes"], 0, "wrote hw.gpu.count = x\\x1b[31m\\u202e", then="lint"),
    Case("lint: the largest float is a number", {"facts/b.yaml": BENCH_FACT.replace("value: 1.0", "value: " + str(int(1.7976931348623157e308)))}, "lint", 0, "ok: 2 facts"),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round9(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


def _npy(array: object) -> bytes:
    """`array` saved as .npy (pickled when it holds objects, as a hostile file would be)."""
    import io

    import numpy

    buffer = io.BytesIO()
    numpy.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


VOCAB_MAP = ["eagle3", "vocab-map", "--target-vocab", "100", "--draft-vocab", "10"]


def test_token_id_files_handed_to_eagle3_are_one_line_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`eagle3 vocab-map` read a .npy with numpy.load (an object array, a broken header:
    ValueError tracebacks; a header claiming 10**12 ids: a 7 TiB MemoryError) and a .jsonl
    line by line unguarded (nested 100,000 deep: RecursionError; a string or float id:
    TypeError/RuntimeError out of torch). Each is one line naming the file now."""
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("numpy") is None:
        pytest.skip("the ml extra (torch, numpy) is not installed")
    import numpy

    ok = _npy(numpy.array([1, 2, 3]))
    cases = [
        ("deep.jsonl", "[" * 100_000 + "]" * 100_000 + "\n", "deep.jsonl:1: invalid JSON: nested too deeply"),
        ("ids.jsonl", '{"input_ids": [1, "a", 2.5]}\n', "ids.jsonl:1: 'input_ids' holds a value that is no token id"),
        ("neg.jsonl", '{"input_ids": [1, -5]}\n', "neg.jsonl:1: 'input_ids' holds a value that is no token id"),
        ("obj.npy", _npy(numpy.array([{"a": 1}], dtype=object)), "obj.npy: cannot read as .npy"),
        ("garbage.npy", b"\x93NUMPY garbage", "garbage.npy: cannot read as .npy"),
        ("huge.npy", ok.replace(b"(3,)", b"(999999999999,)"), "huge.npy: cannot read as .npy"),
        ("float.npy", _npy(numpy.array([1.5, 2.0])), "float.npy: float64 values, not integer token ids"),
    ]  # fmt: skip
    for name, content, fragment in cases:
        files = {name: content}
        case = Case(f"vocab-map {name}", files, [*VOCAB_MAP, "{kb}/" + name], 2, fragment, max_rss_mb=400, isolated=True, max_s=60)  # fmt: skip
        run_case(case, tmp_path / name, monkeypatch)


def test_hint_search_matches_the_regex_it_replaces() -> None:
    """split_hint's linear search finds what `re.search(r"\\s*<!-- fb (\\{.*?\\}) -->")` found
    (the replaced pattern, word for word) in 20,000 random lines of its own pieces, and the
    line without the hint is the same."""
    import random
    import re

    from factbook.dumps.status.hint import find_hint, split_hint

    pattern = re.compile(r"\s*<!-- fb (\{.*?\}) -->")
    pieces = [
        " ",
        "\t",
        "\u00a0",
        "<!-- fb ",
        "{",
        "}",
        " -->",
        "} -->",
        "\n",
        "x",
        '"a"',
        ":",
        "1",
        "-->",
    ]
    rng = random.Random(20261207)
    for _ in range(20_000):
        line = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 24)))
        found, mine = pattern.search(line), find_hint(line)
        assert (found is None) == (mine is None), line
        if found is None or mine is None:
            continue
        assert found.group(1) == line[mine[0] + len("<!-- fb ") : mine[1] + 1], line
        assert found.start() == len(line[: mine[0]].rstrip()), line
        data = None
        with contextlib.suppress(ValueError):
            data = json.loads(found.group(1))
        if isinstance(data, dict):
            assert split_hint(line) == (
                (line[: found.start()] + line[found.end() :]).rstrip(),
                data,
            )


def test_a_dump_line_of_20000_hint_openers_is_read_in_linear_time() -> None:
    """`<!-- fb {} ` 20,000 times in one line (240 kB) took 55 s through `factbook import`:
    the regex tried each opener against the rest of the line."""
    from factbook.dumps.status.hint import split_hint

    line = "- \u2705 torch is installed." + " <!-- fb {} " * 100_000 + " " * 100_000 + "<!-- fb "
    started = time.monotonic()
    assert split_hint(line) == (line, None)
    assert time.monotonic() - started < 1.0


@contextlib.contextmanager
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """A live process no run started (in its own session, as a server's group would be):
    whatever the test plants must leave it running."""
    victim = subprocess.Popen(["sleep", "120"], start_new_session=True)
    try:
        yield victim
        time.sleep(0.2)
        assert victim.poll() is None, "a process the planted files named was killed"
    finally:
        victim.kill()
        victim.wait(10)


def test_a_planted_dead_run_kills_no_process_that_is_not_its_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `running` record whose executor is gone names a kernel by pid and start time; the
    next `factbook run` of any runbook SIGKILLed it. A record is a file of the knowledge base:
    naming a live process that is no kernel of that run (here a `sleep`) had it killed."""
    from factbook.runbooks.reclaim import identity

    with bystander() as victim:
        kernel = identity(victim.pid)
        executor = {**DEAD_RECORD["executor"], "kernel": kernel}  # type: ignore[dict-item]
        case = Case("run: a dead run naming a live process as its kernel", dead_run(executor=executor), ["run", "rb", "--yes"], 0, "cleaned up")  # fmt: skip
        run_case(case, tmp_path, monkeypatch)


def test_a_planted_server_of_a_dead_run_is_not_stopped_nor_its_files_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dead run's registry names a server with no start time (the box helper then signals
    whatever process group has the pid) and a pidfile outside the run (the helper deleted
    it, here a file outside the knowledge base, which run_case checks is unchanged)."""
    with bystander() as victim:
        server = {"event": "start", "name": "s", "target": "here", "pid": victim.pid, "started": None, "log": "{out}/shadow", "pidfile": "{out}/shadow", "step": "hello"}  # fmt: skip
        case = Case("run: a planted server of a dead run", dead_run(json.dumps(server) + "\n"), ["run", "rb", "--yes"], 0, "not stopped")  # fmt: skip
        run_case(case, tmp_path, monkeypatch)
