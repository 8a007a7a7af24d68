"""The pytest plugin, run by pytest's own `pytester` against a real knowledge base whose facts
are checked on this machine (local transport): passes, drifts, skips, markers, -k, batching."""

from __future__ import annotations

import json
import os
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import factbook.integrations.pytest_plugin
from tests.helpers import REPO, fact, local_trio, make_kb

pytest_plugins = ["pytester"]

PID_PROBE = '''
import os
def agent_pid():
    """The agent's process id: equal across checks that ran in one batch."""
    return os.getpid()
PROBES = {"t.agent_pid": agent_pid}
'''


def _kb(root: Path) -> Path:
    facts = [
        *local_trio(),
        fact("sw.pid.local", "t.agent_pid", {"ge": 1}, category="software", target="local"),
        fact("sw.pid.local2", "t.agent_pid", {"ge": 1}, category="software", target="local"),
        fact("sw.pid.other", "t.agent_pid", {"ge": 1}, category="software", target="other"),
    ]
    return make_kb(root, facts, checks={"pid.py": PID_PROBE})


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run pytest in the pytester dir; the plugin comes from the entry point when installed."""
    installed = any(ep.name == "factbook" for ep in entry_points(group="pytest11"))
    plugins = [] if installed else [factbook.integrations.pytest_plugin]
    return pytester.runpytest("-p", "no:cacheprovider", *args, plugins=plugins)


@pytest.fixture
def kb(pytester: pytest.Pytester) -> Path:
    return _kb(pytester.path)


def test_one_item_per_fact_and_target_with_pass_and_drift(
    pytester: pytest.Pytester, kb: Path
) -> None:
    result = _run(pytester, "--factbook", "-rA")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ hw.cpu.too_many @ local _*",
            "drift: expected eq 100000, observed *",
            "  fact:     hw.cpu.too_many  (hw.cpu.too_many)",
            '  expected: {"eq": 100000}',
            f"  observed: {os.cpu_count()}",
            "  at:       facts/facts.yaml:*",
        ]
    )
    # results saved like any run, history and latest
    latest = json.loads((kb / "results" / "latest.json").read_text())
    assert latest["hw.cpu.too_many"]["local"]["outcome"] == "drift"


def test_one_batched_run_per_target(pytester: pytest.Pytester, kb: Path) -> None:
    result = _run(pytester, "--factbook", "-k", "pid")
    result.assert_outcomes(passed=3)
    latest = json.loads((kb / "results" / "latest.json").read_text())
    pids = {k: latest[k][t]["observed"] for k, t in [
        ("sw.pid.local", "local"), ("sw.pid.local2", "local"), ("sw.pid.other", "other")
    ]}  # fmt: skip
    assert pids["sw.pid.local"] == pids["sw.pid.local2"]  # one agent for both local checks
    assert pids["sw.pid.other"] != pids["sw.pid.local"]  # a separate agent for `other`
    runs = list((kb / "results" / "runs").glob("*.jsonl"))
    assert len(runs) == 2  # one run per target, not per check


def test_markers_by_category_and_tag_and_keyword(pytester: pytest.Pytester, kb: Path) -> None:
    _run(pytester, "--factbook", "-m", "software", "--factbook-no-save").assert_outcomes(passed=4)
    _run(pytester, "--factbook", "-m", "shell_env", "--factbook-no-save").assert_outcomes(passed=1)
    result = _run(pytester, "--factbook", "-m", "cpu and not software", "--factbook-no-save")
    result.assert_outcomes(passed=1, failed=1)
    result = _run(pytester, "--factbook", "-k", "threads", "--factbook-no-save", "--strict-markers")
    result.assert_outcomes(passed=1)
    assert not (kb / "results").exists()


def test_target_option_and_teams_own_tests_beside(pytester: pytest.Pytester, kb: Path) -> None:
    pytester.makepyfile(test_own="def test_mine():\n    assert 1 + 1 == 2\n")
    result = _run(pytester, "--factbook", "--factbook-target", "other", "--factbook-no-save")
    result.assert_outcomes(passed=2)  # the team's test and sw.pid.other
    result.stdout.no_fnmatch_line("*@local*")


def test_inert_without_the_flag_and_clear_usage_errors(pytester: pytest.Pytester, kb: Path) -> None:
    pytester.makepyfile(test_own="def test_mine():\n    pass\n")
    _run(pytester).assert_outcomes(passed=1)
    result = _run(pytester, "--factbook", "--factbook-target", "nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*factbook: unknown target 'nowhere'*"])


def test_unreachable_target_is_a_pytest_error(pytester: pytest.Pytester) -> None:
    facts = [fact("hw.cpu.threads", "cpu.threads", {"ge": 1}, target="gone")]
    targets = {"targets": {"gone": {"host": "127.0.0.1", "port": 1, "user": "nobody"}}}
    make_kb(pytester.path, facts, targets=targets)
    result = _run(pytester, "--factbook", "--factbook-no-save")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["error: *", "  at:       facts/facts.yaml:*"])


def test_entry_point_declared() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {
        "factbook": "factbook.integrations.pytest_plugin"
    }


def test_header_and_collect_only_count_fact_items(pytester: pytest.Pytester, kb: Path) -> None:
    result = _run(pytester, "--factbook", "--factbook-no-save", "-k", "pid")
    result.stdout.fnmatch_lines(["collected 6 items / 3 deselected / 3 selected"])
    result = _run(pytester, "--factbook", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "facts/facts.yaml::hw.cpu.threads@local",
            "facts/facts.yaml::sw.pid.other@other",
            "6 tests collected in *",
        ]
    )
    assert result.ret == 0


def test_a_printed_node_id_runs_again(pytester: pytest.Pytester, kb: Path) -> None:
    result = _run(pytester, "--factbook", "--factbook-no-save", "-rf")
    failed = [ln.split()[1] for ln in result.stdout.lines if ln.startswith("FAILED ")]
    assert failed == ["facts/facts.yaml::hw.cpu.too_many@local"]
    again = _run(pytester, "--factbook", "--factbook-no-save", failed[0])
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["collected 1 item"])
    one = _run(pytester, "--factbook", "--factbook-no-save", "facts/facts.yaml::sw.pid.other@other")
    one.assert_outcomes(passed=1)
    whole = _run(pytester, "--factbook", "--factbook-no-save", "facts/facts.yaml")
    whole.assert_outcomes(passed=5, failed=1)
    missing = _run(pytester, "--factbook", "--factbook-no-save", "facts/facts.yaml::nope@local")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR  # pytest's own "not found"


def test_facts_run_beside_the_teams_tests_given_as_a_path(
    pytester: pytest.Pytester, kb: Path
) -> None:
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_own.py").write_text("def test_mine():\n    pass\n")
    result = _run(pytester, "--factbook", "--factbook-no-save", "tests")
    result.assert_outcomes(passed=6, failed=1)
    result.stdout.fnmatch_lines(["collected 7 items"])


NAP_PROBE = '''
import time
def nap(seconds):
    """Sleeps `seconds`, then returns them."""
    time.sleep(seconds)
    return seconds
PROBES = {"t.nap": nap}
'''


def test_junit_gives_each_item_its_own_time(pytester: pytest.Pytester) -> None:
    from lxml import etree

    facts = [
        fact("t.quick", "t.nap", {"ge": 0}, args={"seconds": 0}, target="local"),
        fact("t.slow", "t.nap", {"ge": 0}, args={"seconds": 0.6}, target="local"),
    ]
    make_kb(pytester.path, facts, checks={"nap.py": NAP_PROBE})
    report = pytester.path / "report.xml"
    result = _run(pytester, "--factbook", "--factbook-no-save", f"--junitxml={report}")
    result.assert_outcomes(passed=2)
    root = etree.parse(str(report))
    schema = etree.XMLSchema(etree.parse(str(REPO / "tests" / "data" / "junit-10.xsd")))
    schema.assertValid(root)
    times = {c.get("name"): float(c.get("time")) for c in root.iter("testcase")}
    assert times["t.slow@local"] >= 0.55  # the check's own time on the box
    assert times["t.quick@local"] < 0.3  # ran the batch first, but does not carry it
