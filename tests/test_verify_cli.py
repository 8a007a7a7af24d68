"""`factbook verify` end to end on a throwaway knowledge base with the local transport."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from factbook.store.results import list_runs, load_latest
from tests.helpers import cli, fact, local_trio, make_kb

FLAKY = '''
import os
def flaky(state):
    """Fails until called a third time (counts calls in a file)."""
    n = int(open(state).read()) if os.path.exists(state) else 0
    open(state, "w").write(str(n + 1))
    return n + 1
PROBES = {"t.flaky": flaky}
'''


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    facts = [
        *local_trio(),
        fact("sw.gpu.count", "gpu.count", {"eq": 8}, category="software", target="local"),
        fact(
            "inv.untargeted", "file.exists", {"eq": True}, args={"path": "/"}, category="inventory"
        ),
        fact("hw.other.threads", "cpu.threads", {"ge": 1}, target="other"),
    ]
    return make_kb(tmp_path / "kb", facts)


def test_exit_codes_pass_fail_error(kb: Path) -> None:
    assert cli(kb, "verify", "hw.cpu.threads", "--target", "local")[0] == 0
    code, out, _ = cli(kb, "verify", "hw.cpu.too_many")
    assert code == 1
    assert re.search(r"expected eq 100000, observed \d+ \[facts/facts\.yaml:\d+\]", out)
    if not Path("/usr/bin/nvidia-smi").exists():
        code, out, _ = cli(kb, "verify", "sw.gpu.count")
        assert code == 3 and "nvidia-smi not found on target" in out
    code, out, _ = cli(kb, "verify", "hw.*")
    assert code == 1


def test_usage_errors_exit_2(kb: Path) -> None:
    code, _, err = cli(kb, "verify", "no.such.fact")
    assert code == 2 and "no fact with id 'no.such.fact'" in err
    code, _, err = cli(kb, "verify", "--target", "nowhere")
    assert code == 2 and "unknown target 'nowhere'" in err
    code, _, err = cli(kb, "verify", "zz.*")
    assert code == 2 and "no fact matches" in err
    assert cli(kb, "verify", "--category", "nonsense")[0] == 2
    code, _, err = cli(kb, "verify", "--target", "ftp://x")
    assert code == 2 and "unsupported target URL scheme" in err


def test_selection_by_glob_category_tag_and_target(kb: Path) -> None:
    def ran(*argv: str) -> set[tuple[str, str]]:
        _, out, _ = cli(kb, "verify", "--format", "json", "--no-save", *argv)
        return {(r["fact"], r["target"]) for r in json.loads(out)["results"]}

    assert ran("hw.cpu.*") == {("hw.cpu.threads", "local"), ("hw.cpu.too_many", "local")}
    assert ran("--category", "software", "--target", "local") == {
        ("sw.env.home", "local"),
        ("sw.gpu.count", "local"),
    }
    assert ran("--tag", "cpu") == {("hw.cpu.threads", "local"), ("hw.cpu.too_many", "local")}
    # Facts without a target run on the --target given; facts of other targets do not.
    assert ran("--category", "inventory", "--target", "other") == {("inv.untargeted", "other")}
    assert ran("--target", "other") == {("inv.untargeted", "other"), ("hw.other.threads", "other")}
    # Several names: untargeted facts run on each.
    assert ran("inv.untargeted", "--target", "local,other") == {
        ("inv.untargeted", "local"),
        ("inv.untargeted", "other"),
    }
    # all: each fact on its own target; untargeted ones are reported as skipped.
    assert ("hw.other.threads", "other") in ran("--target", "all")
    assert ("inv.untargeted", "-") in ran("--target", "all")


def test_formats_parse_back(kb: Path) -> None:
    sel = ["hw.cpu.*", "sw.env.home", "--no-save"]
    _, out, _ = cli(kb, "verify", *sel, "--format", "json")
    data = json.loads(out)
    assert data["summary"] == {"pass": 2, "drift": 1, "error": 0, "skipped": 0}
    drift = next(r for r in data["results"] if r["outcome"] == "drift")
    assert drift["extra"]["location"].startswith("facts/facts.yaml:")
    assert drift["extra"]["expect"] == {"eq": 100000}

    _, out, _ = cli(kb, "verify", *sel, "--format", "junit")
    suite = ET.fromstring(out).find("testsuite")
    assert suite is not None and suite.get("name") == "local"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "0")
    failure = suite.find("testcase[@name='hw.cpu.too_many']/failure")
    assert failure is not None and "expected eq 100000" in failure.get("message", "")

    _, out, _ = cli(kb, "verify", *sel, "--format", "tap")
    lines = out.splitlines()
    assert lines[:2] == ["TAP version 13", "1..3"]
    assert sum(line.startswith("ok ") for line in lines) == 2
    assert [line for line in lines if line.startswith("not ok")] == [
        "not ok 2 - hw.cpu.too_many @ local"
    ]

    _, out, _ = cli(kb, "verify", *sel, "--format", "markdown")
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert rows[0] == "| outcome | fact | target | reason |" and len(rows) == 4

    code, out, _ = cli(kb, "verify", *sel)
    assert code == 1 and out.splitlines()[0].startswith("FAIL  hw.cpu.too_many")
    assert "3 checks: 2 passed, 1 failed, 0 errored, 0 skipped" in out


def test_results_history_and_latest(kb: Path, tmp_path: Path) -> None:
    cli(kb, "verify", "hw.cpu.threads", "sw.env.home")
    cli(kb, "verify", "hw.cpu.threads", "hw.cpu.too_many")
    runs = list_runs(kb)
    assert len(runs) == 2 and all(r["summary"] for r in runs)
    files = sorted((kb / "results" / "runs").glob("*.jsonl"))
    assert len(files) == 2
    records = [json.loads(line) for line in files[-1].read_text().splitlines()[1:]]
    assert {r["fact"] for r in records} == {"hw.cpu.threads", "hw.cpu.too_many"}
    latest = load_latest(kb)
    assert set(latest) == {"hw.cpu.threads", "sw.env.home", "hw.cpu.too_many"}
    assert latest["hw.cpu.threads"]["local"]["run"] == runs[0]["id"]  # newest run
    assert latest["sw.env.home"]["local"]["run"] == runs[1]["id"]
    assert latest["hw.cpu.too_many"]["local"]["outcome"] == "drift"
    # --output writes the report to a file; --no-save leaves results/ alone.
    report = tmp_path / "report.xml"
    cli(kb, "verify", "hw.cpu.threads", "--no-save", "--format", "junit", "-o", str(report))
    assert ET.parse(report).getroot().tag == "testsuites"
    assert len(list_runs(kb)) == 2


def test_retry_runs_failing_checks_again(tmp_path: Path) -> None:
    state = tmp_path / "state"
    facts = [fact("x.flaky", "t.flaky", {"ge": 3}, args={"state": str(state)}, target="local")]
    root = make_kb(tmp_path / "kb", facts, checks={"flaky.py": FLAKY})
    code, out, _ = cli(root, "verify", "--retry", "1", "--format", "json", "--no-save")
    assert code == 1 and json.loads(out)["results"][0]["attempts"] == 2
    state.unlink()
    code, out, err = cli(
        root, "verify", "--retry", "2", "--retry-delay", "0.1", "--format", "json", "-v"
    )
    result = json.loads(out)["results"][0]
    assert code == 0 and result["attempts"] == 3 and result["outcome"] == "pass"
    assert "retrying 1 check(s)" in err


def test_per_check_timeout_from_the_fact(tmp_path: Path) -> None:
    facts = [
        fact("x.hang", "cmd", None, args={"argv": ["sleep", "30"]}, target="local", timeout=0.5)
    ]
    root = make_kb(tmp_path / "kb", facts)
    code, out, _ = cli(root, "verify", "--no-save")
    assert code == 3 and "timed out after 0.5s" in out


def test_target_env_reaches_the_agent(tmp_path: Path) -> None:
    targets = {"targets": {"box": {"transport": "local", "env": {"FB_TARGET_ENV": "from-target"}}}}
    facts = [
        fact(
            "x.env", "env.var", {"eq": "from-target"}, args={"name": "FB_TARGET_ENV"}, target="box"
        )
    ]
    root = make_kb(tmp_path / "kb", facts, targets=targets)
    assert cli(root, "verify", "--no-save")[0] == 0


def test_target_python_runs_the_agent(tmp_path: Path) -> None:
    import sys

    targets = {
        "targets": {
            "box": {"transport": "local", "python": sys.executable},
            "gone": {"transport": "local", "python": "~/no/such/python3"},
        }
    }
    facts = [
        fact("x.py", "python.version", {"exists": True}, target="box"),
        fact("x.gone", "python.version", {"exists": True}, target="gone"),
    ]
    root = make_kb(tmp_path / "kb", facts, targets=targets)
    code, out, err = cli(root, "verify", "--no-save", "--format", "json")
    assert code == 0
    agents = json.loads(out)["run"]["agents"]
    assert agents["box"]["python"] == sys.executable
    assert "no/such/python3 not found on target; using python3" in err


def test_lint_problems_in_selected_facts_stop_the_run(tmp_path: Path) -> None:
    facts = [
        fact("x.bad", "no.such.probe", {"eq": 1}, target="local"),
        fact("x.good", "cpu.threads", {"ge": 1}, target="local"),
    ]
    root = make_kb(tmp_path / "kb", facts)
    code, _, err = cli(root, "verify", "x.bad", "--no-save")
    assert code == 2 and "unknown probe 'no.such.probe'" in err
    code, _, err = cli(root, "verify", "x.good", "--no-save")
    assert code == 0 and "1 lint problem(s) in facts not selected" in err


def test_verify_facts_console_script(kb: Path) -> None:
    """The installed `verify-facts` entry point, as a user runs it (non-TTY: no progress)."""
    import shutil
    import subprocess
    import sys

    exe = shutil.which("verify-facts", path=str(Path(sys.executable).parent))
    assert exe, "verify-facts is not installed in this environment"
    done = subprocess.run(
        [exe, "--root", str(kb), "hw.cpu.threads", "--target", "local", "--no-save"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok    hw.cpu.threads") and done.stderr == ""


def test_progress_on_a_terminal_rewrites_one_line(kb: Path) -> None:
    import io

    from factbook.store.results import ResultRecord
    from factbook.verification.report import Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    progress = Progress(2, stream=screen)
    progress.result(ResultRecord("a.b", "local", "pass", "ok"))
    progress.result(ResultRecord("a.c", "local", "drift", "expected eq 1, observed 2"))
    progress.close()
    text = screen.getvalue()
    assert "\n" not in text and text.count("\r\x1b[K") == 3
    assert "[2/2] 1 ok, 1 not ok  a.c@local" in text


def test_errors_with_one_cause_collapse_in_the_table(tmp_path: Path) -> None:
    facts = [
        fact(
            f"x.e{i}",
            "cmd",
            None,
            args={"argv": ["echo", str(i)], "cwd": "/factbook/nope"},
            target="local",
        )
        for i in range(5)
    ]
    facts.append(
        fact("x.lone", "cmd", None, args={"argv": ["true"], "cwd": "/other/nope"}, target="local")
    )
    root = make_kb(tmp_path / "kb", facts)
    code, out, _ = cli(root, "verify", "--no-save")
    lines = out.splitlines()
    assert code == 3
    assert [line.split()[:3] for line in lines[:-1]] == [
        ["ERROR", "(5", "checks)"],
        ["ERROR", "x.lone", "local"],
    ]
    assert "cwd does not exist: /factbook/nope" in lines[0]
    assert lines[-1].startswith("6 checks: 0 passed, 0 failed, 6 errored")


OLD_PYTHON = Path("/root/.pyenv/versions/3.6.15/bin/python3")


@pytest.mark.skipif(not OLD_PYTHON.exists(), reason="no Python 3.6 here")
def test_too_old_python_on_the_box_is_a_clear_error(tmp_path: Path) -> None:
    targets = {"targets": {"old": {"transport": "local", "python": str(OLD_PYTHON)}}}
    facts = [fact("x.one", "cpu.threads", {"ge": 1}, target="old")]
    root = make_kb(tmp_path / "kb", facts, targets=targets)
    code, out, err = cli(root, "verify", "--no-save")
    assert code == 3
    assert "agent exited with status 3 after 0 of 1 results" in out
    assert "the agent needs Python 3.7+ on the target" in out
    assert "note: old: the agent needs Python 3.7+" in err


def test_dry_run_and_extra_reports(kb: Path, tmp_path: Path) -> None:
    code, out, _ = cli(kb, "verify", "hw.cpu.*", "inv.untargeted", "--dry-run")
    assert code == 0
    assert out.splitlines() == [
        "hw.cpu.threads  on local: cpu.threads {}",
        "hw.cpu.too_many  on local: cpu.threads {}",
        "inv.untargeted  on -: no target (pass --target)",
    ]
    assert not (kb / "results").exists()
    junit, tap = tmp_path / "r.xml", tmp_path / "r.tap"
    code, out, _ = cli(
        kb,
        "verify",
        "hw.cpu.*",
        "--no-save",
        "--report",
        f"junit:{junit}",
        "--report",
        f"tap:{tap}",
        "--format",
        "json",
    )
    assert code == 1 and json.loads(out)["summary"]["drift"] == 1
    assert ET.parse(junit).getroot().find("testsuite").get("failures") == "1"
    assert tap.read_text().startswith("TAP version 13\n1..2\n")
    assert cli(kb, "verify", "--report", "pdf:x.pdf")[0] == 2


def test_failed_reruns_only_what_failed_last_time(kb: Path) -> None:
    cli(kb, "verify", "hw.cpu.*", "sw.env.home")
    code, out, _ = cli(kb, "verify", "--failed", "--format", "json", "--no-save")
    assert code == 1
    assert [r["fact"] for r in json.loads(out)["results"]] == ["hw.cpu.too_many"]


def test_record_marks_passing_facts_verified_in_place(kb: Path) -> None:
    from factbook.knowledge.kb import load_kb

    path = kb / "facts" / "facts.yaml"
    path.write_text("# hand-written header\n" + path.read_text())
    code, _, err = cli(kb, "verify", "hw.cpu.*", "--target", "local", "--record")
    assert code == 1
    assert "recorded hw.cpu.threads: assumed -> verified" in err
    facts = load_kb(kb).facts
    assert facts["hw.cpu.threads"].status == "verified"
    assert facts["hw.cpu.threads"].sources[-1].note == "verify-facts passed on local"
    assert facts["hw.cpu.threads"].sources[-1].target == "local"
    assert facts["hw.cpu.too_many"].status == "assumed"  # drifted: left alone
    assert path.read_text().startswith("# hand-written header\n")
    # Already verified: a second run records nothing more.
    _, _, err = cli(kb, "verify", "hw.cpu.threads", "--record", "--no-save")
    assert "recorded" not in err
    assert len(load_kb(kb).facts["hw.cpu.threads"].sources) == 2
