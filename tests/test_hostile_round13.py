# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile input, round 13 (issue 25, "Hardening III"): the commands earlier rounds reached
least (status templates' Python errors, completion, run records, discover --write, proposals
review, init's CI, the command line's time limits, bench import, export-ansible, runbooks,
mcp), in the table form of tests/test_hostile_kb.py and checked by its `run_case` (no
traceback, no file outside touched, no payload run), plus plain tests where a property needs
its own driver. Each group says what it found, or that it held (a guard).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_kb import (
    BENCH_FACT,
    BENCH_IMPORT,
    FIFO,
    PID,
    Case,
    Link,
    _in_process,
    bench_line,
    make_outside,
    plant,
    run_case,
)
from test_hostile_round9 import RUNBOOK
from test_hostile_round11 import proposal

TPL = "templates/status/status.md.j2"
INJECTED = "zz\n::error::pwned"  # a value the user passes on, holding a workflow command's line
SHOWN = "zz\\n::error::pwned"
BENCH = {"facts/bench.yaml": BENCH_FACT}
DISCOVER_WRITE = ["discover", "--target", "here", "--write"]
RUN = ["run", "rb", "--yes"]


def tpl(payload: str, **more: str | bytes | Link) -> dict[str, str | bytes | Link]:
    """The status template replaced by `payload`, with `more` files beside it."""
    return {TPL: payload, **{f"templates/status/{k.replace('_', '.')}": v for k, v in more.items()}}


# fmt: off
CASES: list[Case] = [
    # --- 1/6. a status template's own Python error (arithmetic, a codec, a name of no template) was a traceback, not `status template:` ---
    *[Case(f"status template {payload}", tpl(payload), ["status", "--out", "-"], 2, f"status template: {name}") for name, payload in (
        ("ZeroDivisionError", "{{ 1 // 0 }}"),
        ("ZeroDivisionError", "{{ [1, 2]|slice(0)|list }}"),
        ("ZeroDivisionError", "{{ 1 / 0 }}"),
        ("LookupError", "{{ 'x'.encode('no-such-codec') }}"),
        ("AttributeError", "{% extends none %}"),
    )],
    # ... and what already held (guards): recursion, links out, folders, bad bytes, deep nesting
    Case("status template extends a template extending it", tpl("{% extends 'b.j2' %}", b_j2="{% extends 'status.md.j2' %}"), ["status", "--out", "-"], 2, "status template: RecursionError"),
    Case("_macros.j2 importing itself", {"templates/_macros.j2": "{% import '_macros.j2' as m %}{% macro line(i) %}{% endmacro %}"}, ["status", "--out", "-"], 2, "status template: RecursionError"),
    Case("status template including a folder", tpl("{% include 'd.j2' %}", **{"d_j2/x": "x"}), ["status", "--out", "-"], 2, "templates/status/d.j2:1: is a folder, not a file"),
    Case("status template including a non-UTF-8 file", tpl("{% include 'd.j2' %}", d_j2=b"\xff\xfe"), ["status", "--out", "-"], 2, "templates/status/d.j2:1: not UTF-8"),
    Case("status template importing a macro linked outside", tpl("{% from 'd.j2' import m %}{{ m() }}", d_j2=Link("{out}/shadow")), ["status", "--out", "-"], 2, "templates/status/d.j2:1: resolves to {out}/shadow, outside the knowledge base"),
    Case("status template including an absolute path", tpl("{% include '{out}/shadow' %}"), ["status", "--out", "-"], 2, "status template: {out}/shadow"),
    Case("status template including ../ with ignore missing", tpl("{% include ['../../outside/shadow', 'x'] ignore missing %}ok"), ["status", "--out", "-"], 0, "ok"),
    Case("status template 5,000 nested parentheses", tpl("{{" + "(" * 5000 + "1" + ")" * 5000 + "}}"), ["status", "--out", "-"], 2, "templates/status/status.md.j2:1: status template: nested more than 48 levels deep"),
    # --- 5/6. `__complete INDEX`: an index far past the words padded the line with that many empty words (2.3 GB); a negative one was an IndexError ---
    Case("__complete with an index of 10**11", {}, ["__complete", "99999999999", "factbook"], 0, "", isolated=True, max_s=20, max_rss_mb=200),
    Case("__complete with a negative index", {}, ["__complete", "-7", "factbook", "verify"], 0, ""),
    Case("__complete with an index one past the words", {}, ["__complete", "2", "factbook", "verif"], 0, ""),
    # --- 8. an error quoting what the user typed kept its line breaks: a line of `::error::` for GitHub Actions ---
    *[Case(f"a newline in {' '.join(argv[:2])} starts no workflow command", {"d.md": "# S\n\n- x\n"}, argv, 2, SHOWN, absent=("\n::error::",)) for argv in (
        ["show", INJECTED],
        ["list", "--as-of", INJECTED],
        ["status", "--as-of", INJECTED, "--out", "-"],
        ["status", "--since", INJECTED, "--out", "-"],
        ["verify", INJECTED],
        ["import", "{kb}/d.md", "--milestone", INJECTED],
        ["run", INJECTED, "--dry-run"],
        ["export-ansible", "--target", INJECTED],
        ["eagle3", "keys", INJECTED],
        ["verify", "--dry-run", "--inventory", INJECTED],
    )],
    Case("a ##[error] line after a newline", {}, ["show", "zz\n  ##[error]pwned"], 2, "zz\\n  ##[error]pwned", absent=("\n  ##[error]",)),
    # --- 4. proposals accept wrote the facts, then could not file the proposal: it stayed pending, its change applied ---
    Case("proposals accept: proposals/accepted is a file", {"proposals/accepted": "x", **proposal()}, ["proposals", "accept", PID], 2, "proposals/accepted: not a folder; the proposal could not be filed there", then=["proposals", "show", PID]),
    Case("proposals accept: proposals/accepted linked outside", {"proposals/accepted": Link("{out}/proposals"), **proposal()}, ["proposals", "accept", PID], 2, "proposals/accepted: resolves to {out}/proposals, outside the knowledge base", then=["proposals", "show", PID]),
    Case("proposals accept: the filed name is a folder", {f"proposals/accepted/{PID}.yaml/x": "x", **proposal()}, ["proposals", "accept", PID], 2, f"proposals/accepted/{PID}.yaml: not a regular file", then=["proposals", "show", PID]),
    Case("proposals reject: proposals/rejected is a file", {"proposals/rejected": "x", **proposal()}, ["proposals", "reject", PID], 2, "proposals/rejected: not a folder", then=["proposals", "show", PID]),
    # ... held (guards): an id that climbs out, a --why of ESC and a line break
    Case("proposals show ../", proposal(), ["proposals", "show", "../../outside/proposal"], 2, "bad proposal id '../../outside/proposal'"),
    Case("proposals reject --why with ESC and a line break", proposal(), ["proposals", "reject", PID, "--why", "w\x1b[2J\u202e\n::error::x"], 0, f"rejected {PID}", absent=("\x1b", "\u202e", "\n::error::")),
    # --- 8. init --install-spec went into the CI workflow as typed: CR and U+2028 end a YAML line, ESC makes it unreadable, ${{ }} is evaluated by Actions ---
    *[Case(f"init --install-spec holding {name}", {}, ["init", "{kb}/n", "--no-discover", "--install-spec", spec], 2, "--install-spec", absent=("\x1b",)) for name, spec in (
        ("a carriage return", "git+https://example.invalid/r\rjobs: {}"),
        ("U+2028", "factbook==1\u2028jobs: {}"),
        ("ESC", "https://example.invalid/f.whl#x\x1b[2J"),
        ("${{ }}", "factbook==1 ${{ secrets.GITHUB_TOKEN }}"),
        ("a double quote", 'factbook==1"'),
    )],
    # ... held (guards): a FIFO, a device
    Case("init into a FIFO", {"p": FIFO}, ["init", "{kb}/p", "--no-discover"], 2, "exists and is not empty"),
    Case("init into /dev/null", {}, ["init", "/dev/null", "--no-discover"], 2, "/dev/null: exists and is not empty"),
    # --- 6. a time limit of nan, inf or 1e308 on the command line: a run of errors, an OverflowError in the watchdog, a ValueError ---
    *[Case(f"{' '.join(argv[:1])} {flag} {value}", {"runbooks/rb.md": RUNBOOK}, [*argv, flag, value], 2, f"argument {flag}: '{value}': a number of seconds") for argv, flag, value in (
        (["verify", "hw.gpu.count"], "--timeout", "nan"),
        (["verify", "hw.gpu.count"], "--timeout", "1e308"),
        (["verify", "hw.gpu.count"], "--timeout", "inf"),
        (["verify", "hw.gpu.count", "--retry", "1"], "--retry-delay", "nan"),
        (["discover", "--target", "here"], "--timeout", "nan"),
        (["run", "rb", "--yes"], "--timeout", "nan"),
        (["bench", "--url", "http://127.0.0.1:1"], "--timeout", "nan"),
    )],
    Case("verify --timeout 0.5 still works", {}, ["verify", "hw.gpu.count", "--timeout", "0.5"], 0, "1 passed"),
    # --- 2. discover --write appended to facts/ as it found it: a facts/ or discovered-T.yaml linked outside was written there (with a lock folder) ---
    Case("discover --write: facts/ linked outside", {"facts": Link("{out}/facts")}, DISCOVER_WRITE, 2, "facts: resolves to {out}/facts, outside the knowledge base", max_s=90),
    Case("discover --write: discovered-here.yaml linked outside", {"facts/discovered-here.yaml": Link("{out}/facts/x.yaml")}, DISCOVER_WRITE, 2, "facts/discovered-here.yaml: resolves to {out}/facts/x.yaml", max_s=90),
    # --- 2. a run's record went where results/ or results/runbooks/ led, outside the knowledge base ---
    Case("run: results/runbooks linked outside", {"runbooks/rb.md": RUNBOOK, "results/runbooks": Link("{out}/runbooks")}, RUN, 2, "results/runbooks/rb: resolves to {out}/runbooks/rb, outside the knowledge base", max_s=60),
    Case("run: results linked outside", {"runbooks/rb.md": RUNBOOK, "results": Link("{out}")}, RUN, 2, "results/runbooks/rb: resolves to {out}/runbooks/rb", max_s=60),
    Case("run: the runbook's results folder linked outside", {"runbooks/rb.md": RUNBOOK, "results/runbooks/rb": Link("{out}/runbooks/rb")}, RUN, 2, "results/runbooks/rb: resolves to {out}/runbooks/rb", max_s=60),
    # --- held (guards): bench import of files no benchmark writes ---
    Case("bench import /dev/zero", BENCH, ["bench", "import", "/dev/zero", "--record", "bench.x"], 2, "/dev/zero:1: not a regular file", isolated=True, max_s=20),
    Case("bench import a FIFO", {**BENCH, "p.jsonl": FIFO}, ["bench", "import", "{kb}/p.jsonl", "--record", "bench.x"], 2, "p.jsonl:1: not a regular file", isolated=True, max_s=20),
    Case("bench import a line nested 100,000 deep", {**BENCH, "run.jsonl": "[" * 100_000 + "\n"}, BENCH_IMPORT, 2, "run.jsonl:1: not JSON: maximum recursion depth"),
    Case("bench import not UTF-8", {**BENCH, "run.jsonl": b'{"backend": "sglang\xff"}\n'}, BENCH_IMPORT, 2, "run.jsonl:1: not UTF-8 (byte 0xff)"),
    Case("bench import a folder", {**BENCH, "run.jsonl/x": "x"}, BENCH_IMPORT, 2, "run.jsonl:1: is a folder, not a file"),
    Case("bench import a million blank lines", {**BENCH, "run.jsonl": "\n" * 1_000_000 + bench_line()}, BENCH_IMPORT, 0, "recorded bench.x = 123.4 tok/s", then="lint"),
    Case("bench import --line of 30 digits", {**BENCH, "run.jsonl": bench_line()}, [*BENCH_IMPORT, "--line", "9" * 30], 2, "no run on line 999"),
    # --- 8. export-ansible -o - (and --out -, a prefix of --output) wrote a file named `-` in the current folder ---
    Case("export-ansible -o - is standard output", {}, ["export-ansible", "-o", "-"], 0, '"facts": {', absent=("wrote",)),
    Case("export-ansible --out - is standard output", {}, ["export-ansible", "--out", "-"], 0, '"hw.gpu.count": {', absent=("wrote",)),
    # --- held (guards): export-ansible ---
    Case("export-ansible -o: factbook.fact linked outside is replaced, not written through", {"fd/factbook.fact": Link("{out}/shadow")}, ["export-ansible", "-o", "{kb}/fd/"], 0, "fd/factbook.fact"),
    Case("export-ansible: a results target of ESC and RLO", {"results/latest.json": '{"hw.gpu.count": {"h\\u001b[2J\\u202e": {"fact": "hw.gpu.count", "target": "h", "outcome": "pass", "reason": "r"}}}'}, ["export-ansible", "--target", "zz"], 2, "h\\x1b[2J\\u202e", absent=("\x1b", "\u202e")),
    # --- held (guards): a user's regex anywhere a host pattern is taken, a glob of many stars ---
    *[Case(f"{flag} ~REGEX backtracking, {argv[0]}", {"targets.yaml": "targets:\n  here: {transport: local}\n  " + "a" * 40 + "b: {transport: local}\n"}, [*argv, flag, "~^(a|aa)+$"], 2, f"{flag}: regex '^(a|aa)+$' stopped after 1 s on 41 characters", isolated=True, max_s=30) for argv, flag in (
        (["verify", "--dry-run", "--target", "all"], "--limit"),
        (["verify", "--dry-run", "--target", "all"], "--exclude"),
        (["list"], "--target"),
    )],
    Case("list: a glob of 20 stars", {}, ["list", "*a" * 20 + "*b"], 0, "(0 facts)", max_s=5),
    # --- held (guards): runbooks ---
    Case("run --list: factbook.title of ESC, RLO and a line break", {"runbooks/rb.md": RUNBOOK.replace("factbook: {target: here}", 'factbook: {target: here, title: "x\\e[31m\\u202e\\n::error::pwned"}')}, ["run", "--list"], 0, "x\\x1b[31m\\u202e ::error::pwned", absent=("\x1b", "\u202e", "\n::error::")),
    Case("run --dry-run: a step target of ESC", {"runbooks/rb.md": RUNBOOK.replace(":name: hello", ':name: hello\n:target: "a\\e[2J"')}, ["run", "rb", "--dry-run"], 2, "unknown target 'a\\x1b[2J'", absent=("\x1b",)),
    Case("lint: a step timeout of .nan", {"runbooks/rb.md": RUNBOOK.replace(":name: hello", ":name: hello\n:timeout: .nan")}, "lint", 2, "step 'hello': timeout must be a positive number of seconds"),
    Case("run --list: front matter of a python tag", {"runbooks/rb.md": RUNBOOK.replace("factbook: {target: here}", "factbook: !!python/object/apply:os.system ['touch {out}/MARKER']")}, ["run", "--list"], 2, "could not determine a constructor"),
    Case("__complete: runbook steps of a runbook nested 50,000 deep", {"runbooks/rb.md": "---\nx: " + "[" * 50_000 + "\n---\n"}, ["__complete", "4", "factbook", "run", "rb", "--step", ""], 0, ""),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round13(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize(
    "files",
    [
        {"proposals/accepted": "x"},
        {"proposals/accepted": Link("{out}/proposals")},
        {f"proposals/accepted/{PID}.yaml/x": "x"},
    ],
    ids=["a file", "linked outside", "a folder of its name"],
)
def test_a_proposal_that_cannot_be_filed_is_not_applied(
    tmp_path: Path, files: dict[str, str | Link]
) -> None:
    """The facts are left as they were and the proposal pending: before, accept wrote its
    change (value 8 -> 3) and then stopped at filing it, so accepting again applied it twice."""
    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, {**files, **proposal()})
    before = (root / "facts" / "good.yaml").read_bytes()
    code, output, _ = _in_process(["--root", str(root), "proposals", "accept", PID], 30)
    assert code == 2 and "Traceback" not in output, output
    assert (root / "facts" / "good.yaml").read_bytes() == before
    assert (root / "proposals" / f"{PID}.yaml").is_file()


@pytest.mark.parametrize("how", ['/home/a"b/factbook', "/srv/x\r\njobs: {}", "/srv/\u2028x\x1b"])
def test_init_writes_a_workflow_yaml_reads_whatever_the_install_source(
    tmp_path: Path, how: str
) -> None:
    """A source detected from this copy's installation (not --install-spec, which refuses
    them) is written escaped: a folder named `a"b` closed the workflow's string early, a
    line break in the comment began a line of YAML of its own."""
    import yaml

    from factbook.knowledge.install_source import InstallSource
    from factbook.knowledge.starter import create_kb

    def workflow(folder: str, source: str) -> tuple[str, dict]:
        install = InstallSource("path", source, f"from {source}")
        create_kb(tmp_path / folder, discover=False, install=install)
        text = (tmp_path / folder / ".github" / "workflows" / "factbook.yml").read_text()
        return text, yaml.safe_load(text)

    text, written = workflow("n", how)
    _, plain = workflow("plain", "/srv/plain")
    assert written["env"]["FACTBOOK_INSTALL"] == how
    assert written.keys() == plain.keys() and written["jobs"] == plain["jobs"]  # no key added
    assert "\x1b" not in text and "\r" not in text and "\u2028" not in text


def test_mcp_write_back_is_refused_before_writing_what_lint_would_refuse(tmp_path: Path) -> None:
    """Held (a guard): propose_fact values no fact file may hold (NaN, 1e999, 10**400, an ESC
    in a title, 45-deep nesting, a 5,000-character key read back) are refused with one line
    and no proposal written, and one that is written is accepted and lints clean."""
    import importlib.util
    import json

    if importlib.util.find_spec("mcp") is None:
        pytest.skip("the mcp extra is not installed")
    from test_mcp_stdio import Wire

    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, {})
    base = '"category": "hardware", "title": "T", "statement": "S.", "reason": "r"'
    refused = [
        '"id": "hw.a", ' + base + ', "value": NaN',
        '"id": "hw.b", ' + base + ', "value": 1e999',
        '"id": "hw.c", ' + base + ', "value": 1' + "0" * 400,
        '"id": "hw.d", "category": "hardware", "title": "T\\u001b[2J", "statement": "S.", "reason": "r"',
        '"id": "hw.e", ' + base + ', "value": ' + "[" * 45 + "]" * 45,
    ]
    server = Wire(root)
    try:
        server.initialize()
        for ident, arguments in enumerate(refused, 1):
            message = '{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "propose_fact", "arguments": {%s}}}'
            server.send((message % (ident, arguments)).encode() + b"\n")
            answer = server.answer(60)
            assert answer["result"]["isError"], answer
            assert "would not lint clean" in answer["result"]["content"][0]["text"], answer
        server.request(9, "tools/call", {"name": "propose_fact", "arguments": {"id": "hw.k", "category": "hardware", "title": "T", "statement": "S.", "reason": "r", "value": {"k" * 5000: 1}}})  # fmt: skip
        answer = server.answer(60)
        assert not answer["result"]["isError"], answer
        pid = json.loads(answer["result"]["content"][0]["text"])["proposal"]
    finally:
        server.close()
    assert [p.stem for p in (root / "proposals").glob("*.yaml")] == [pid]
    for argv in (["proposals", "accept", pid], ["lint"]):
        code, output, _ = _in_process(["--root", str(root), *argv], 60)
        assert code == 0 and "Traceback" not in output, (argv, output[-2000:])


@pytest.mark.parametrize(
    "argv",
    [
        ["schema"],
        ["list"],
        ["show", "hw.gpu.count"],
        ["lint", "--format", "sarif"],
        ["status", "--out", "-"],
        ["export-ansible"],
        ["proposals", "list"],
    ],
)
def test_standard_output_on_a_full_disk_is_one_line(tmp_path: Path, argv: list[str]) -> None:
    """`factbook CMD > /dev/full` (a report redirected to a full volume) was a traceback out of
    the handler's print, exit 1, or Python's "Exception ignored" when the buffered rest failed
    at exit; now one line, exit 2. Held (guards): -o / --out /dev/full name the device."""
    import os
    import subprocess
    import sys

    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, {})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "factbook", "--root", str(root), *argv],
            stdout=full, stderr=subprocess.PIPE, text=True, env=env, timeout=120,
        )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "factbook: error: cannot write the output (No space left on device)\n"


def test_serve_goes_on_serving_when_its_log_is_not_read_or_gone(tmp_path: Path) -> None:
    """`factbook serve` with stderr a pipe nobody reads: 1,500 requests for a page that is not
    there (a log line each, more than the pipe holds) blocked the thread that reads requests
    in its log write, and /metrics was never answered; with the pipe's reader gone, each
    request got an empty answer (BrokenPipeError in its handling) while the server lived on.
    Both answer now: the log is written from a bounded queue by a thread of its own."""
    import os
    import socket
    import subprocess
    import sys
    import time

    from helpers import free_port

    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, {})
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    argv = ["serve", "--listen", f"127.0.0.1:{port}", "--interval", "60"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "factbook", "--root", str(root), *argv],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip

    def get(path: str, timeout: float = 10.0) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
            return answer

    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                assert get("/metrics").startswith(b"HTTP/1.0 200"), "no first answer"
                break
            except OSError:
                assert time.monotonic() < deadline, "serve did not start"
                time.sleep(0.2)
        for _ in range(1500):  # ~100 bytes of log each: far more than a pipe holds
            get("/" + "n" * 40, timeout=10)
        assert get("/metrics").startswith(b"HTTP/1.0 200")
        assert proc.stderr is not None
        proc.stderr.close()  # the log's reader is gone
        for _ in range(3):
            assert get("/metrics").startswith(b"HTTP/1.0 200")
    finally:
        proc.kill()
        proc.wait(10)
