"""The runbook executor with a real ipykernel: steps, ranges, resume, Ctrl-C, kernel death,
destructive refusal, timeouts, requirements, managed servers and write-back into a tmp KB."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
import yaml
from helpers import free_port, pid_alive
from runbook_kit import (
    FACTBOOK,
    make_kb,
    run_cli,
    runs,
    start_run_until,
    steps_of,
    write_runbook,
)

from factbook.knowledge.kb import load_kb
from factbook.runbooks.executor import Executor, RunOptions
from factbook.runbooks.format import load_runbook

SETUP = (
    {"name": "setup", "setup": True},
    """
from pathlib import Path
from factbook.runbooks.api import fact, box, server, record, env_from, flags_from
work = Path(fact("inv.workdir").get("path"))
log = work / "steps.log"
def mark(name):
    with log.open("a") as handle:
        handle.write(name + "\\n")
""",
)


def step(name: str, code: str = "", **meta: object) -> tuple[dict, str]:
    return ({"name": name, **meta}, code or f"mark({name!r})\nprint('did', {name!r})")


def execute(root: Path, name: str, **options: object) -> tuple[int, dict]:
    """Run in-process; return the exit code and the newest run record."""
    kb = load_kb(root)
    runbook = load_runbook(root / "runbooks" / f"{name}.md", root)
    code = Executor(
        kb, runbook, RunOptions(live=False, **options), out=io.StringIO(), stdin_is_tty=False
    ).run()
    return code, runs(root, name)[-1]


def marks(root: Path) -> list[str]:
    log = root / "work" / "steps.log"
    return log.read_text().split() if log.exists() else []


# --- a plain run ------------------------------------------------------------------------


def test_run_executes_every_step_on_one_kernel_and_saves_the_run(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(
        root,
        "basic",
        [
            SETUP,
            step(
                "one", "mark('one')\nimport os\nkernel_pid = os.getpid()\nprint('pid', kernel_pid)"
            ),
            step("two", "mark('two')\nimport os\nassert os.getpid() == kernel_pid\nprint('same')"),
        ],
    )
    code, record = execute(root, "basic")
    assert code == 0
    assert record["status"] == "ok" and record["last_ok_step"] == "two"
    by_name = steps_of(record)
    assert [s["status"] for s in record["steps"]] == ["ok", "ok", "ok"]
    assert "same" in by_name["two"]["outputs"]
    assert by_name["one"]["duration_s"] >= 0 and by_name["one"]["started"]
    assert marks(root) == ["one", "two"]
    folder = root / "results" / "runbooks" / "basic" / record["run_id"]
    notebook = nbformat.read(folder / "executed.ipynb", as_version=4)
    code_cells = [c for c in notebook.cells if c.cell_type == "code"]
    assert code_cells[2].outputs[0].text == "same\n"
    assert code_cells[2].metadata["factbook_run"]["status"] == "ok"
    assert record["kernel_start_s"] > 0


def test_step_and_range_selection(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(root, "range", [SETUP, step("a"), step("b"), step("c"), step("d")])
    assert execute(root, "range", steps=["c"])[0] == 0
    assert marks(root) == ["c"]  # setup ran too (mark is defined there), a and b did not
    assert execute(root, "range", start="b", until="c")[0] == 0
    assert marks(root) == ["c", "b", "c"]
    code, record = execute(root, "range", until="a")
    assert code == 0 and marks(root)[-1] == "a"
    assert steps_of(record)["d"]["status"] == "skipped"


def test_unknown_step_is_a_usage_error(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(root, "range", [SETUP, step("a")])
    done = run_cli(root, "run", "range", "--step", "nope")
    assert done.returncode == 2
    assert "no step 'nope' (steps: setup, a)" in done.stderr


# --- failure and resume -----------------------------------------------------------------


def test_resume_continues_after_the_last_successful_step(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    flag = root / "work" / "fixed"
    write_runbook(
        root,
        "resume",
        [
            SETUP,
            step("a"),
            step("b", f"mark('b')\nassert Path({str(flag)!r}).exists(), 'injected failure'"),
            step("c"),
        ],
    )
    code, first = execute(root, "resume")
    assert code == 1
    assert first["status"] == "failed" and first["last_ok_step"] == "a"
    failed = steps_of(first)["b"]
    assert failed["status"] == "failed" and "injected failure" in failed["error"]
    assert steps_of(first)["c"]["status"] == "pending"
    flag.touch()  # the operator fixes the cause
    code, second = execute(root, "resume", resume="")
    assert code == 0
    assert second["resumed_from"] == first["run_id"]
    assert marks(root) == ["a", "b", "b", "c"]  # a did not run again; setup did
    by_name = steps_of(second)
    assert by_name["a"]["status"] == "ok" and first["run_id"] in by_name["a"]["error"]
    assert by_name["b"]["status"] == by_name["c"]["status"] == "ok"
    done = run_cli(root, "run", "resume", "--resume")  # nothing unfinished is left
    assert done.returncode == 2 and "no unfinished run" in done.stderr


def test_step_timeout_interrupts_the_kernel(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(
        root, "slow", [step("nap", "import time\ntime.sleep(30)", timeout=1), step("after")]
    )
    began = time.monotonic()
    code, record = execute(root, "slow")
    assert code == 1 and time.monotonic() - began < 15
    nap = steps_of(record)["nap"]
    assert record["status"] == "timeout" and nap["status"] == "timeout"
    assert "timed out after 1s" in nap["error"]


def test_whole_run_timeout(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(
        root,
        "slow",
        [step("n1", "import time; time.sleep(0.5)"), step("n2", "import time; time.sleep(30)")],
    )
    began = time.monotonic()
    code, record = execute(root, "slow", timeout=5)
    assert time.monotonic() - began < 12
    assert code == 1
    assert steps_of(record)["n1"]["status"] == "ok"
    assert steps_of(record)["n2"]["status"] == "timeout"
    assert "run's timeout" in steps_of(record)["n2"]["error"]


def test_kernel_death_exits_4_and_saves_the_record(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(
        root, "die", [SETUP, step("ok"), step("boom", "import os\nos._exit(1)"), step("never")]
    )
    done = run_cli(root, "run", "die")
    assert done.returncode == 4, done.stderr
    record = runs(root, "die")[-1]
    assert record["status"] == "kernel_died" and record["last_ok_step"] == "ok"
    assert steps_of(record)["boom"]["status"] == "kernel_died"


def test_ctrl_c_saves_the_state_and_exits_130(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(
        root,
        "nap",
        [
            SETUP,
            step("first"),
            step("nap", "mark('nap')\nprint('sleeping', flush=True)\nimport time\ntime.sleep(60)"),
            step("last"),
        ],
    )
    proc = start_run_until(root, "nap", "sleeping")  # live output, while the step runs
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    record = runs(root, "nap")[-1]
    assert record["status"] == "interrupted" and record["last_ok_step"] == "first"
    assert steps_of(record)["nap"]["status"] == "interrupted"
    assert "KeyboardInterrupt" in steps_of(record)["nap"]["outputs"]
    # --resume continues with the interrupted step
    (root / "work" / "steps.log").write_text("")
    write_runbook(root, "nap", [SETUP, step("first"), step("nap"), step("last")])
    assert execute(root, "nap", resume="")[0] == 0
    assert marks(root) == ["nap", "last"]


# --- destructive steps ------------------------------------------------------------------


def test_destructive_steps_are_refused_without_yes_when_stdin_is_not_a_terminal(
    tmp_path: Path,
) -> None:
    root = make_kb(tmp_path)
    write_runbook(root, "wipe", [SETUP, step("safe"), step("wipe", destructive=True)])
    done = run_cli(root, "run", "wipe")
    assert done.returncode == 2
    assert "destructive step(s) wipe need confirmation" in done.stderr
    assert "--yes" in done.stderr
    assert marks(root) == []  # refused before anything ran
    done = run_cli(root, "run", "wipe", "--yes")
    assert done.returncode == 0, done.stderr
    assert marks(root) == ["safe", "wipe"]


def test_destructive_step_asks_and_a_no_stops_the_run(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(
        root, "wipe", [SETUP, step("safe"), step("wipe", destructive=True), step("after")]
    )
    kb = load_kb(root)
    runbook = load_runbook(root / "runbooks" / "wipe.md", root)
    asked: list[str] = []

    def answer_no(s):  # what the terminal prompt returns when the operator types "n"
        asked.append(s.name)
        return False

    code = Executor(
        kb, runbook, RunOptions(live=False), out=io.StringIO(), confirm=answer_no, stdin_is_tty=True
    ).run()
    assert code == 2 and asked == ["wipe"]
    record = runs(root, "wipe")[-1]
    assert record["status"] == "refused" and steps_of(record)["wipe"]["status"] == "refused"
    assert marks(root) == ["safe"]


# --- requirements -----------------------------------------------------------------------


def test_requires_runs_the_facts_checks_before_the_step(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(
        root,
        "req",
        [SETUP, step("fine", requires=["inv.workdir"]), step("blocked", requires=["inv.missing"])],
    )
    code, record = execute(root, "req")
    assert code == 1
    by_name = steps_of(record)
    assert by_name["fine"]["status"] == "ok"
    assert by_name["blocked"]["status"] == "failed"
    assert "requirements not met: inv.missing (drift" in by_name["blocked"]["error"]
    assert marks(root) == ["fine"]
    latest = json.loads((root / "results" / "latest.json").read_text())
    assert latest["inv.workdir"]["local"]["outcome"] == "pass"


# --- managed servers --------------------------------------------------------------------


SERVER_STEP = """
import sys
port = {port}
argv = [sys.executable, "-m", "http.server", str(port), *flags_from("sw.server.config")]
srv = server.start("web", argv,
                   env=env_from("sw.server.config"), ready=f"http://127.0.0.1:{{port}}/",
                   deadline=20)
server_pid = srv.pid
Path(work / "server.pid").write_text(str(server_pid))
"""


def test_managed_server_is_ready_then_torn_down_at_the_end(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    port = free_port()
    write_runbook(
        root,
        "srv",
        [
            SETUP,
            step("launch", SERVER_STEP.format(port=port)),
            step(
                "use",
                f"import urllib.request\nbody = urllib.request.urlopen("
                f"'http://127.0.0.1:{port}/').read()\nprint(len(body), 'bytes')\n"
                "r = box.run(['cat', f'/proc/{server_pid}/environ'], check=True, quiet=True)\n"
                "assert 'GREETING=hello' in r.stdout",
            ),
        ],
    )
    code, record = execute(root, "srv")
    assert code == 0, record
    pid = int((root / "work" / "server.pid").read_text())
    assert not pid_alive(pid)
    assert record["servers"][0]["state"].startswith("stopped")
    log = Path(record["servers"][0]["log"])
    assert log.parent == root / "results" / "runbooks" / "srv" / record["run_id"] / "servers"
    assert "GET / HTTP" in log.read_text()


def test_managed_server_is_torn_down_when_the_kernel_dies(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    port = free_port()
    write_runbook(
        root,
        "srv",
        [
            SETUP,
            step("launch", SERVER_STEP.format(port=port)),
            step("boom", "import os\nos._exit(3)"),
        ],
    )
    done = run_cli(root, "run", "srv")
    assert done.returncode == 4
    pid = int((root / "work" / "server.pid").read_text())
    assert not pid_alive(pid), "the server outlived its run"
    assert runs(root, "srv")[-1]["servers"][0]["state"].startswith("stopped")


def test_server_that_dies_before_ready_fails_fast_with_its_log(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(
        root,
        "srv",
        [
            SETUP,
            step(
                "launch",
                """
import sys
server.start("bad", [sys.executable, "-c", "import sys; print('bad flag --foo'); sys.exit(2)"],
             ready=free_port_here(), deadline=60)
""".replace("free_port_here()", str(free_port())),
            ),
        ],
    )
    began = time.monotonic()
    code, record = execute(root, "srv")
    assert code == 1 and time.monotonic() - began < 20
    error = steps_of(record)["launch"]["error"]
    assert "exited before it was ready" in error and "bad flag --foo" in error


def test_keep_true_server_survives_a_successful_run(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    port = free_port()
    code = SERVER_STEP.format(port=port).replace("deadline=20", "deadline=20, keep=True")
    write_runbook(root, "srv", [SETUP, step("launch", code)])
    status, record = execute(root, "srv")
    pid = int((root / "work" / "server.pid").read_text())
    try:
        assert status == 0 and pid_alive(pid)
        assert record["servers"][0]["state"] == "left running (keep=True)"
        assert Path(record["servers"][0]["pidfile"]).read_text().strip() == str(pid)
    finally:
        import os

        os.killpg(pid, signal.SIGKILL)


# --- write-back -------------------------------------------------------------------------


def test_record_writes_the_value_back_with_provenance_keeping_comments(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(
        root,
        "bench",
        [
            SETUP,
            step(
                "measure",
                "record('bench.speed', 42.5, unit='tok/s', note='test run')",
                records=["bench.speed"],
            ),
        ],
    )
    code, record = execute(root, "bench")
    assert code == 0
    assert steps_of(record)["measure"]["recorded"] == [
        {"fact": "bench.speed", "value": 42.5, "unit": "tok/s"}
    ]
    text = (root / "facts" / "test.yaml").read_text()
    assert "# Facts of the runbook tests. This comment must survive write-back." in text
    assert "# measured by the runbook; keep this comment" in text
    fact = load_kb(root).get("bench.speed")
    assert fact.value == 42.5 and fact.status == "verified"
    source = fact.sources[-1]
    assert (source.runbook, source.step, source.run, source.target) == (
        "bench",
        "measure",
        record["run_id"],
        "local",
    )
    assert fact.sources[0].note == "seed value"
    ids = [f["id"] for f in yaml.safe_load(text)["facts"]]
    assert ids == [
        "inv.workdir",
        "inv.missing",
        "sw.server.config",
        "bench.speed",
        "bench.latency",
        "pit.trap",
    ]


def test_concurrent_runs_write_back_into_the_same_file_without_losing_updates(
    tmp_path: Path,
) -> None:
    root = make_kb(tmp_path)
    for name, fid, value in (("speed", "bench.speed", 11.5), ("latency", "bench.latency", 3.25)):
        write_runbook(
            root,
            name,
            [
                SETUP,
                step(
                    "measure",
                    f"import time\ntime.sleep(0.3)\nrecord({fid!r}, {value})",
                    records=[fid],
                ),
            ],
        )
    procs = [
        subprocess.Popen(
            [FACTBOOK, "--root", str(root), "run", name, "--quiet"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("speed", "latency")
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    kb = load_kb(root)
    assert kb.get("bench.speed").value == 11.5 and kb.get("bench.latency").value == 3.25
    assert kb.get("bench.speed").sources[-1].runbook == "speed"
    assert kb.get("bench.latency").sources[-1].runbook == "latency"
    assert (
        "# measured by the runbook; keep this comment" in (root / "facts" / "test.yaml").read_text()
    )


def test_record_of_an_undeclared_fact_fails_the_step(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(root, "bench", [SETUP, step("measure", "record('bench.speed', 1)")])
    # the linter refuses it statically...
    done = run_cli(root, "run", "bench")
    assert done.returncode == 2 and "record('bench.speed') is not declared" in done.stderr
    # ...and the API refuses it at run time when the id is computed
    write_runbook(
        root, "bench", [SETUP, step("measure", "fid = 'bench.' + 'speed'\nrecord(fid, 1)")]
    )
    code, record = execute(root, "bench")
    assert code == 1
    assert "does not declare it in `records:`" in steps_of(record)["measure"]["error"]
    assert load_kb(root).get("bench.speed").value == 1.0


# --- box commands -----------------------------------------------------------------------


def test_box_run_is_bounded_and_kills_the_whole_process_group(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    write_runbook(
        root,
        "boxrun",
        [
            SETUP,
            step(
                "bounded",
                """
r = box.run(["sh", "-c", "sleep 30 & echo $! > " + str(work / "child.pid") + "; wait"], timeout=1)
assert r.timed_out and not r.ok
r2 = box.run("echo out; echo err >&2; exit 3")
assert (r2.rc, r2.stdout, r2.stderr) == (3, "out\\n", "err\\n")
print("checked")
""",
            ),
        ],
    )
    code, record = execute(root, "boxrun")
    assert code == 0, steps_of(record)["bounded"]
    child = int((root / "work" / "child.pid").read_text())
    time.sleep(0.2)
    assert not pid_alive(child)


# --- the launch + benchmark + record workflow against a real OpenAI-compatible server -------

BENCH_WORKFLOW = '''
import json, sys
port = {port}
srv = server.start("llm", [sys.executable, {server!r}, "--port", str(port), "--spec-steps", "2"],
                   ready=f"http://127.0.0.1:{{port}}/health", deadline=120)
BENCH = """
import json, sys
from factbook.serving.benchclient import run_benchmark, to_fact_values
base, concurrency, config = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
result = run_benchmark(base, None, max_tokens=24, concurrency=concurrency, num_requests=4)
print(json.dumps(to_fact_values(result, config)))
"""
'''


def test_launch_benchmark_and_record_with_the_bench_client_shipped_to_the_box(
    tmp_path: Path,
) -> None:
    pytest.importorskip("transformers")
    root = make_kb(tmp_path)
    server_py = str(Path(__file__).with_name("openai_server.py"))
    measure = """
r = box.run_python(BENCH, modules=["factbook.errors", "factbook.serving.benchclient"],
                   args=[f"http://127.0.0.1:{{port}}", "{c}", json.dumps({{"engine": "tiny"}})],
                   timeout=300, quiet=True)
values = json.loads(r.stdout.strip().splitlines()[-1])
record("{fid}", values["value"], unit=values["unit"],
       fields={{"accept_len": values["accept_len"], "config": values["config"]}})
"""
    write_runbook(
        root,
        "bench",
        [
            SETUP,
            step("launch", BENCH_WORKFLOW.format(port=free_port(), server=server_py)),
            step("single", measure.format(c=1, fid="bench.speed"), records=["bench.speed"]),
            step("c4", measure.format(c=4, fid="bench.latency"), records=["bench.latency"]),
        ],
    )
    code, record = execute(root, "bench")
    assert code == 0, {s["name"]: s["error"] for s in record["steps"]}
    kb = load_kb(root)
    single, c4 = kb.get("bench.speed"), kb.get("bench.latency")
    assert single.value > 0 and single.unit == "tok/s" and single.status == "verified"
    assert single.get("config")["concurrency"] == 1 and c4.get("config")["concurrency"] == 4
    assert single.get("config")["engine"] == "tiny"
    assert 1.0 <= single.get("accept_len") <= 3.0  # spec_steps=2: at most 3 tokens a round
    assert single.sources[-1].step == "single" and c4.sources[-1].step == "c4"
    assert record["servers"][0]["state"].startswith("stopped")
    assert not pid_alive(record["servers"][0]["pid"])


def test_second_ctrl_c_stops_a_step_that_ignores_the_interrupt(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    port = free_port()
    write_runbook(
        root,
        "stubborn",
        [
            SETUP,
            step("launch", SERVER_STEP.format(port=port)),
            step(
                "stubborn",
                "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                "print('ignoring', flush=True)\ntime.sleep(60)",
            ),
        ],
    )
    proc = start_run_until(root, "stubborn", "ignoring")
    proc.send_signal(signal.SIGINT)
    time.sleep(1.5)
    assert proc.poll() is None  # the kernel ignored the first interrupt
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    record = runs(root, "stubborn")[-1]
    assert record["status"] == "interrupted" and record["last_ok_step"] == "launch"
    assert steps_of(record)["stubborn"]["status"] == "interrupted"
    pid = int((root / "work" / "server.pid").read_text())
    assert not pid_alive(pid) and record["servers"][0]["state"].startswith("stopped")
