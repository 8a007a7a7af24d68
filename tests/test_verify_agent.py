"""The agent for real: one `python3 -` per batch, forked calls, group kills, streaming results."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factbook.knowledge.kb import load_kb
from factbook.knowledge.model import Target
from factbook.verification.bundle import Call, agent_argv, build_script, builtin_index, merge_calls
from factbook.verification.engine import Engine, VerifyOptions
from factbook.verification.targets import PlannedCheck
from factbook.verification.transports.local import LocalTransport
from tests.helpers import fact, make_kb, pids_with_cmdline

LOCAL = Target(name="local", transport="local")

SLOW_PROBES = """
import os, time
def nap(seconds, tag=""):
    time.sleep(float(seconds))
    return os.getpid()
def count(log):
    with open(log, "a") as handle:
        handle.write(str(os.getpid()) + "\\n")
    return "counted"
def noisy():
    print("this must not reach the result stream")
    return "quiet"
def big(size):
    return "b" * int(size)
def needs_missing():
    import factbook_module_that_does_not_exist
def die():
    import signal
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(5)
def span(seconds, tag=""):
    start = time.time()
    time.sleep(float(seconds))
    return {"pid": os.getpid(), "span": [start, time.time()]}
def freeze_agent():
    import signal
    os.kill(os.getppid(), signal.SIGSTOP)
    return "frozen"
def crash():
    os._exit(3)
PROBES = {"t.nap": nap, "t.count": count, "t.noisy": noisy, "t.big": big,
          "t.needs_missing": needs_missing, "t.die": die, "t.crash": crash,
          "t.span": span, "t.freeze": freeze_agent}
"""


def _start(calls: list[Call], *, jobs: int = 16, checks_dir: Path | None = None):
    script = build_script(calls, jobs=jobs, checks_dir=checks_dir)
    return LocalTransport(LOCAL).start(agent_argv(sys.executable), script.encode(), {})


def _run(calls: list[Call], **kwargs) -> list[dict]:
    proc = _start(calls, **kwargs)
    lines = [json.loads(line) for line in proc.lines()]
    assert proc.wait(10) == 0, proc.stderr_text()
    return lines


def _checks_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "checks"
    folder.mkdir(exist_ok=True)
    (folder / "slow.py").write_text(SLOW_PROBES)
    return folder


def test_stream_header_results_done(tmp_path: Path) -> None:
    calls = merge_calls(
        [("a", "env.var", {"name": "PATH"}, None), ("b", "file.exists", {"path": "/"}, None)]
    )
    lines = _run(calls)
    assert "agent" in lines[0] and lines[0]["agent"]["python"]
    assert lines[-1]["done"] == 2
    results = {line["id"]: line for line in lines[1:-1]}
    assert results["c0"]["value"] == os.environ["PATH"]
    assert results["c1"] == {**results["c1"], "ok": True, "value": True}


def test_timeout_kills_the_whole_process_group() -> None:
    marker = "987.6543"
    calls = merge_calls(
        [("hang", "cmd", {"argv": ["sh", "-c", f"sleep {marker} & sleep {marker}"]}, 1)]
    )
    started = time.monotonic()
    lines = _run(calls)
    assert time.monotonic() - started < 5
    assert "timed out after 1.0s" in lines[1]["error"]
    deadline = time.monotonic() + 2
    while pids_with_cmdline(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_with_cmdline(f"sleep {marker}") == []


def test_agent_killed_mid_run_leaves_nothing_running() -> None:
    marker = "876.5432"
    calls = merge_calls([("hang", "cmd", {"argv": ["sleep", marker]}, 600)])
    proc = _start(calls)
    lines = proc.lines()
    assert "agent" in json.loads(next(lines))
    deadline = time.monotonic() + 5
    while not pids_with_cmdline(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_with_cmdline(f"sleep {marker}"), "the probe never started"
    proc.kill()
    deadline = time.monotonic() + 3
    while pids_with_cmdline(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_with_cmdline(f"sleep {marker}") == []


def test_output_over_4_mib_does_not_deadlock(tmp_path: Path) -> None:
    script = "head -c 6000000 /dev/zero | tr '\\0' x; echo; echo TAIL-MARK"
    calls = merge_calls(
        [
            ("cmd", "cmd", {"argv": ["sh", "-c", script]}, 30),
            ("big", "t.big", {"size": 5 * 1024 * 1024}, 30),
        ]
    )
    lines = _run(calls, checks_dir=_checks_dir(tmp_path))
    results = {line["id"]: line for line in lines[1:-1]}
    assert results["c0"]["value"]["exit_code"] == 0
    assert results["c0"]["value"]["stdout"].rstrip().endswith("TAIL-MARK")
    assert results["c0"]["value"]["truncated_bytes"]["stdout"] > 4_000_000
    assert len(results["c1"]["value"]) == 5 * 1024 * 1024


def _overlap(spans: list[list[float]]) -> int:
    """The most intervals open at one time."""
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    best = current = 0
    for _, step in edges:
        current += step
        best = max(best, current)
    return best


def test_concurrency_is_bounded_by_jobs(tmp_path: Path) -> None:
    """Measured from the probes' own start/end times, so a loaded machine cannot fool it."""
    folder = _checks_dir(tmp_path)
    calls = merge_calls(
        [(f"k{i}", "t.span", {"seconds": 0.3, "tag": str(i)}, 30) for i in range(40)]
    )
    bounded = [line["value"] for line in _run(calls, jobs=16, checks_dir=folder)[1:-1]]
    assert len(bounded) == 40
    assert _overlap([v["span"] for v in bounded]) <= 16
    assert len({v["pid"] for v in bounded}) <= 16  # workers are reused
    wide = [line["value"] for line in _run(calls, jobs=40, checks_dir=folder)[1:-1]]
    assert _overlap([v["span"] for v in wide]) > 16


def test_probe_printing_does_not_corrupt_the_stream_and_missing_modules_skip(
    tmp_path: Path,
) -> None:
    calls = merge_calls(
        [
            ("n", "t.noisy", {}, None),
            ("m", "t.needs_missing", {}, None),
            ("u", "no.such.probe", {}, None),
        ]
    )
    lines = _run(calls, checks_dir=_checks_dir(tmp_path))
    results = {line["id"]: line for line in lines[1:-1]}
    assert results["c0"]["value"] == "quiet"
    assert results["c1"]["skipped"] == (
        "module missing on target: factbook_module_that_does_not_exist"
    )
    assert "not available on the target" in results["c2"]["error"]


def test_broken_custom_module_is_named_in_the_error(tmp_path: Path) -> None:
    folder = tmp_path / "checks"
    folder.mkdir()
    (folder / "broken.py").write_text("raise ValueError('boom at import')\nPROBES = {'b.x': len}\n")
    lines = _run(merge_calls([("x", "b.x", {}, None)]), checks_dir=folder)
    assert "checks/broken.py failed to load: ValueError: boom at import" in lines[1]["error"]


def test_identical_calls_run_once_per_batch(tmp_path: Path) -> None:
    """Five facts reading the same probe share one call (torch imports once, not five times)."""
    log = tmp_path / "calls.log"
    facts = [
        fact(f"x.same{i}", "t.count", {"eq": "counted"}, args={"log": str(log)}, target="local")
        for i in range(5)
    ]
    root = make_kb(tmp_path / "kb", facts, checks={"slow.py": SLOW_PROBES})
    kb = load_kb(root)
    plan = [PlannedCheck(f, "local") for f in kb.facts.values()]
    records = Engine(kb, kb.targets, VerifyOptions(), run_id="r").run(plan)
    assert [r.outcome for r in records] == ["pass"] * 5
    assert len(log.read_text().splitlines()) == 1


def test_dropped_agent_keeps_results_received_and_errors_the_rest(tmp_path: Path) -> None:
    facts = [
        fact("x.first", "env.var", {"exists": False}, args={"name": "FB_UNSET_1"}, target="local"),
        fact("x.killer", "t.die", None, target="local"),
        fact("x.after", "env.var", {"exists": False}, args={"name": "FB_UNSET_2"}, target="local"),
    ]
    root = make_kb(tmp_path / "kb", facts, checks={"slow.py": SLOW_PROBES})
    kb = load_kb(root)
    plan = [PlannedCheck(f, "local") for f in kb.facts.values()]
    records = Engine(kb, kb.targets, VerifyOptions(jobs=1), run_id="r").run(plan)
    by_fact = {r.fact: r for r in records}
    assert by_fact["x.first"].outcome == "pass"
    for lost in ("x.killer", "x.after"):
        assert by_fact[lost].outcome == "error"
        assert "after 1 of 3 results" in by_fact[lost].reason
        assert "facts/facts.yaml:" in by_fact[lost].reason


_SPAWNED: list[list[str]] | None = None  # argv of each process started while a test listens


def _count_spawns(event: str, args: tuple) -> None:
    if _SPAWNED is not None and event == "subprocess.Popen":
        _SPAWNED.append([str(a) for a in (args[1] or [])])


sys.addaudithook(_count_spawns)  # audit hooks cannot be removed: it listens only when asked


def test_300_checks_share_one_agent(tmp_path: Path) -> None:
    """Bundle, start, fork 300 calls, stream, evaluate: the run's cost is one agent start
    for all of them, not a process per check (bench/verify_ssh.py measures the time)."""
    global _SPAWNED
    facts = [
        fact(
            f"x.env{i}", "env.var", {"exists": False}, args={"name": f"FB_NOPE_{i}"}, target="local"
        )
        for i in range(300)
    ]
    kb = load_kb(make_kb(tmp_path / "kb", facts))
    plan = [PlannedCheck(f, "local") for f in kb.facts.values()]
    _SPAWNED = []
    try:
        records = Engine(kb, kb.targets, VerifyOptions(), run_id="r").run(plan)
    finally:
        spawned, _SPAWNED = _SPAWNED, None
    assert [r.outcome for r in records] == ["pass"] * 300
    assert len(spawned) == 1, spawned


OLD_PYTHONS = sorted(Path("/root/.pyenv/versions").glob("3.[789]*/bin/python3")) + sorted(
    Path("/root/.pyenv/versions").glob("3.1[0-9]*/bin/python3")
)


@pytest.mark.skipif(not OLD_PYTHONS, reason="no other Python interpreters here")
@pytest.mark.parametrize("python", OLD_PYTHONS, ids=lambda p: p.parent.parent.name)
def test_every_builtin_probe_loads_and_runs_on_older_pythons(python: Path, tmp_path: Path) -> None:
    """The box may run 3.7+: every probe module must load and answer there."""
    args = {
        "disk.usage": {"path": "/"},
        "env.var": {"name": "HOME"},
        "pkg.version": {"name": "pip"},
        "cmd": {"argv": ["true"]},
        "gpu.query": {"field": "name"},
        "port.listening": {"port": 1},
        "http.get": {"url": "http://127.0.0.1:1/"},
        "systemd.state": {"unit": "x"},
    }
    for name in (
        "file.exists",
        "file.size",
        "file.sha256",
        "file.read",
        "config.value",
        "safetensors.shard_count",
        "safetensors.tensors",
    ):
        args[name] = {"path": str(tmp_path)}
    for name in ("file.glob_count", "file.total_size"):
        args[name] = {"pattern": str(tmp_path / "*")}
    args["measure.read"] = {"path": str(tmp_path)}
    args["tokenizer.token_id"] = {"path": str(tmp_path), "token": "a"}
    args["tokenizer.decode"] = {"path": str(tmp_path), "ids": [1]}
    calls = merge_calls([(n, n, args.get(n, {}), 20) for n in builtin_index()])
    proc = LocalTransport(LOCAL).start(agent_argv(str(python)), build_script(calls).encode(), {})
    lines = [json.loads(line) for line in proc.lines()]
    assert proc.wait(10) == 0, proc.stderr_text()
    assert lines[0]["agent"]["python"].startswith(str(python.parent.parent))
    results = lines[1:-1]
    assert len(results) == len(calls)
    # Expected failures here (no GPU, no server) are clean messages, never tracebacks.
    crashes = [r for r in results if "error" in r and "Error:" in r["error"]]
    assert crashes == [], crashes


def test_out_of_file_descriptors_lowers_concurrency_instead_of_failing() -> None:
    """With `ulimit -n 12` only a few pipes fit: calls wait for a free slot, none is lost."""
    calls = merge_calls([(f"k{i}", "env.var", {"name": f"FB_NONE_{i}"}, 10) for i in range(30)])
    argv = ["sh", "-c", f"ulimit -n 12; exec {sys.executable} -"]
    proc = LocalTransport(LOCAL).start(argv, build_script(calls, jobs=16).encode(), {})
    lines = [json.loads(line) for line in proc.lines()]
    assert proc.wait(10) == 0, proc.stderr_text()
    results = lines[1:-1]
    assert len(results) == 30
    assert [r for r in results if not r.get("ok")] == []


def test_a_crashing_probe_loses_only_its_own_call(tmp_path: Path) -> None:
    calls = merge_calls(
        [("a", "t.crash", {}, 10)]
        + [(f"k{i}", "t.nap", {"seconds": 0, "tag": str(i)}, 10) for i in range(5)]
    )
    lines = _run(calls, jobs=1, checks_dir=_checks_dir(tmp_path))
    results = {line["id"]: line for line in lines[1:-1]}
    assert results["c0"]["error"] == "the probe process died without a result"
    assert all(results[f"c{i}"]["ok"] for i in range(1, 6))


def test_what_a_finished_call_left_running_dies_with_the_batch() -> None:
    marker = "543.2109"
    calls = merge_calls(
        [("bg", "cmd", {"argv": f"sleep {marker} >/dev/null 2>&1 &", "shell": True}, 10)]
    )
    lines = _run(calls)
    assert lines[1]["value"]["exit_code"] == 0
    deadline = time.monotonic() + 2
    while pids_with_cmdline(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_with_cmdline(f"sleep {marker}") == []


def test_a_frozen_agent_is_stopped_by_the_watchdog(tmp_path: Path) -> None:
    facts = [fact("x.freeze", "t.freeze", None, target="local", timeout=1)]
    root = make_kb(tmp_path / "kb", facts, checks={"slow.py": SLOW_PROBES})
    kb = load_kb(root)
    plan = [PlannedCheck(f, "local") for f in kb.facts.values()]
    started = time.monotonic()
    records = Engine(kb, kb.targets, VerifyOptions(stall_grace=1.0), run_id="r").run(plan)
    assert time.monotonic() - started < 10
    assert records[0].outcome == "error"
    assert "no result within the run's 2s bound; agent stopped" in records[0].reason


def test_slow_starters_are_sent_first() -> None:
    """torch.info (4 s of CUDA init on the H200) starts before the quick checks queue up."""
    calls = merge_calls(
        [(f"k{i}", "env.var", {"name": f"X{i}"}, None) for i in range(20)]
        + [("t", "torch.info", {}, None)]
    )
    script = build_script(calls)
    literal = script.split("BATCH = json.loads(")[1].split(")\nscope")[0]
    batch = json.loads(ast.literal_eval(literal))
    assert batch["calls"][0]["probe"] == "torch.info"
    assert [c["id"] for c in batch["calls"][1:]] == [f"c{i}" for i in range(20)]


def test_shared_helpers_travel_with_the_probes_to_a_box_without_factbook(tmp_path: Path) -> None:
    """Built-in probes (`from .common import`) and checks/*.py (`from factbook.probes.common
    import`) run on an interpreter that cannot import factbook: `python -S` has no site-packages."""
    header = json.dumps({"w": {"dtype": "F32", "shape": [2, 3], "data_offset": [0, 24]}}).encode()
    blob = tmp_path / "model.safetensors"
    blob.write_bytes(len(header).to_bytes(8, "little") + header + bytes(24))
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "shapes.py").write_text(
        "from factbook.probes.common import read_safetensors_header\n\n"
        "def first_shape(path):\n"
        "    return read_safetensors_header(path)[0]['w']['shape']\n\n"
        'PROBES = {"kb.first_shape": first_shape}\n'
    )
    calls = [
        Call("c0", "safetensors.tensors", {"path": str(blob)}, 30),
        Call("c1", "python.version", {"python": sys.executable}, 30),
        Call("c2", "kb.first_shape", {"path": str(blob)}, 30),
    ]
    script = build_script(calls, checks_dir=checks)
    proc = subprocess.run(
        [sys.executable, "-S", "-"], input=script.encode(), capture_output=True, timeout=60
    )
    lines = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    by_id = {line["id"]: line for line in lines if "id" in line}
    assert lines[0]["agent"]["broken"] == {}, proc.stderr
    assert by_id["c0"] == {**by_id["c0"], "ok": True, "value": {"w": [2, 3]}}
    assert by_id["c1"]["value"] == ".".join(map(str, sys.version_info[:3]))
    assert by_id["c2"]["value"] == [2, 3]
