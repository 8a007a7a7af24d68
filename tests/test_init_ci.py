"""What `factbook init` makes works on a team's CI (issue 27.1).

The generated workflow installs factbook the way this copy was installed (PEP 610
direct_url.json: a wheel copied into vendor/, a folder, a VCS or other URL, an index), and its
verify job does not run this machine's discovered facts on another machine: they are skipped,
each with the reason. Run here as a hosted runner would (tests/ci_runner.py): a fresh clone per
run, the workflow's own venv (the wheel from this tree installed from the clone's vendor/, the
package index reachable for dependencies) cached between runs, and a hostname of its own.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from ci_runner import JobRun, commit_repo, expand, load_workflow, run_job, run_step
from helpers import cli, require
from lxml import etree

from factbook.commands.cli import run
from factbook.knowledge import install_source
from factbook.knowledge.install_source import InstallSource, from_direct_url, parse_spec
from factbook.knowledge.starter import create_kb, this_hostname

WORKFLOW = ".github/workflows/factbook.yml"


def _unshare_missing() -> str | None:
    if shutil.which("unshare") is None:
        return "unshare (util-linux) not installed"
    if os.geteuid() != 0:
        return "unshare --uts needs root"
    return None


@pytest.fixture(scope="module")
def kb(factbook_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A knowledge base started as a team installed from the wheel would start it."""
    root = tmp_path_factory.mktemp("ci") / "team-kb"
    create_kb(root, name="Team", install=parse_spec(str(factbook_wheel)))
    commit_repo(root)
    return root


def test_the_workflow_installs_the_vendored_wheel(kb: Path, factbook_wheel: Path) -> None:
    flow = load_workflow(kb / WORKFLOW)
    spec = flow["env"]["FACTBOOK_INSTALL"]
    assert spec == f"./vendor/{factbook_wheel.name}"
    assert (kb / "vendor" / factbook_wheel.name).read_bytes() == factbook_wheel.read_bytes()
    steps = [s for job in flow["jobs"].values() for s in job["steps"]]
    installs = [s for s in steps if '"$FACTBOOK_INSTALL"' in s.get("run", "")]
    assert len(installs) == 1  # one job, one install, and only when the cache missed
    assert installs[0]["if"] == "steps.venv.outputs.cache-hit != 'true'"
    assert "pip install factbook\n" not in (kb / WORKFLOW).read_text()
    assert any("--skip-elsewhere" in s.get("run", "") for s in steps)
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    # keyed on what FACTBOOK_INSTALL names: this file and the vendored wheel
    assert "hashFiles('.github/workflows/factbook.yml', 'vendor/**')" in cache["with"]["key"]
    assert ".factbook-venv/" in (kb / ".gitignore").read_text().splitlines()
    targets = yaml.safe_load((kb / "targets.yaml").read_text())["targets"]
    assert targets["local"]["identity"] == {"hostname": this_hostname()}


@pytest.fixture(scope="module")
def cache_service(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache-service")


@pytest.fixture(scope="module")
def runner_work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runner")


@pytest.fixture(scope="module")
def hosted(kb: Path, runner_work: Path, cache_service: Path) -> JobRun:
    """The job in a fresh clone on a machine named `ci-runner`, the cache service empty."""
    require(_unshare_missing())
    flow = load_workflow(kb / WORKFLOW)
    assert list(flow["jobs"]) == ["factbook"]
    return run_job(flow, "factbook", kb, runner_work, cache=cache_service, hostname="ci-runner")


def _check_hosted_run(kb: Path, job: JobRun) -> None:
    assert job.ok, job.steps[-1].output
    lint, verify = job.steps[-2], job.steps[-1]
    assert lint.command.startswith("factbook lint") and "ok: " in lint.output, lint.output
    # factbook came from the clone's vendor/ copy of the wheel, not from this repository
    record = json.loads(
        next(
            job.venv.glob("lib/python*/site-packages/factbook-*.dist-info/direct_url.json")
        ).read_text(encoding="utf-8")
    )
    assert record["url"].startswith("file://") and "/vendor/factbook-" in record["url"]
    out = verify.output
    discovered = len(yaml.safe_load((kb / "facts" / "discovered-local.yaml").read_text())["facts"])
    assert f"0 passed, 0 failed, 0 errored, {discovered} skipped" in out, out
    assert "this machine is not local: hostname is 'ci-runner', targets.yaml says " in out
    junit = etree.parse(str(job.checkout / "verify.xml"))
    skipped = junit.findall(".//testcase/skipped")
    assert len(skipped) == discovered
    assert all("this machine is not local" in s.get("message") for s in skipped)
    assert not junit.findall(".//failure") and not junit.findall(".//error")


def test_the_ci_on_a_hosted_runner(kb: Path, hosted: JobRun) -> None:
    """The job passes on a machine named otherwise; verify skips every discovered fact and
    says why, in its table and its JUnit report."""
    assert hosted.outputs["venv"]["cache-hit"] == "false" and not hosted.skipped
    assert '"$FACTBOOK_INSTALL"' in hosted.steps[0].command
    assert hosted.venv == hosted.checkout / ".factbook-venv"
    _check_hosted_run(kb, hosted)


def test_the_cache_key_follows_the_install_source(kb: Path, hosted: JobRun) -> None:
    """Another wheel in vendor/ (or another FACTBOOK_INSTALL in the workflow) is another key."""
    flow = load_workflow(kb / WORKFLOW)
    step = next(s for s in flow["jobs"]["factbook"]["steps"] if s.get("id") == "venv")
    key = expand(step["with"]["key"], hosted)
    assert key.startswith(f"factbook-venv-Linux-py{platform.python_version()}-")
    wheel = next((hosted.checkout / "vendor").glob("factbook-*.whl"))
    original = wheel.read_bytes()
    try:
        wheel.write_bytes(original + b"\0")
        assert expand(step["with"]["key"], hosted) != key
    finally:
        wheel.write_bytes(original)
    assert expand(step["with"]["key"], hosted) == key


def test_the_ci_on_the_box_itself(kb: Path, hosted: JobRun) -> None:
    """A self-hosted runner on the machine the facts describe verifies them: the job's last
    step again, in the same clone and venv, with this machine's hostname."""
    flow = load_workflow(kb / WORKFLOW)
    last = flow["jobs"]["factbook"]["steps"][-1]["run"]
    step = run_step(last, hosted, flow["env"])
    assert step.returncode == 0, step.output
    junit = etree.parse(str(hosted.checkout / "verify.xml"))
    cases = junit.findall(".//testcase")
    assert cases and not junit.findall(".//skipped") and not junit.findall(".//failure")


# how PEP 610 records map to what the CI installs; the records are the PEP's own shapes


@pytest.mark.parametrize(
    ("record", "kind", "arg"),
    [
        (
            {"url": "file:///src/factbook", "dir_info": {"editable": True}},
            "editable",
            "/src/factbook",
        ),
        ({"url": "file:///src/factbook", "dir_info": {}}, "path", "/src/factbook"),
        (
            {"url": "file:///dl/factbook-0.1.0-py3-none-any.whl", "archive_info": {}},
            "file",
            "/dl/factbook-0.1.0-py3-none-any.whl",
        ),
        (
            {
                "url": "https://files.example.org/factbook-0.1.0.tar.gz",
                "archive_info": {"hash": "sha256=ab12"},
            },
            "url",
            "factbook @ https://files.example.org/factbook-0.1.0.tar.gz#sha256=ab12",
        ),
        (
            {
                "url": "https://git.example.org/team/factbook.git",
                "vcs_info": {"vcs": "git", "commit_id": "1b2c3d", "requested_revision": "v0.1"},
            },
            "vcs",
            "factbook @ git+https://git.example.org/team/factbook.git@1b2c3d",
        ),
    ],
)
def test_direct_url_records(record: dict, kind: str, arg: str) -> None:
    source = from_direct_url(record, record["url"])
    assert (source.kind, source.pip_arg()) == (kind, arg)


def test_missing_extra_hints_name_the_source() -> None:
    assert InstallSource("file", "/w/factbook-0.1.0-py3-none-any.whl", "").requirement(
        ("runbooks",)
    ) == ("'/w/factbook-0.1.0-py3-none-any.whl[runbooks]'")
    assert InstallSource("editable", "/src/factbook", "").requirement(("ml",)) == (
        "-e '/src/factbook[ml]'"
    )
    assert InstallSource("vcs", "git+https://h/f.git@abc", "").requirement(("pytest",)) == (
        "'factbook[pytest] @ git+https://h/f.git@abc'"
    )
    assert InstallSource("index", "factbook==0.1.0", "").requirement(("handbook",)) == (
        "'factbook[handbook]==0.1.0'"
    )


def test_detect_reads_this_installation() -> None:
    """The running copy: what its own direct_url.json says (the shared venv: editable)."""
    raw = metadata.distribution("factbook").read_text("direct_url.json")
    source = install_source.detect()
    if raw is None:
        assert source.kind == "index"
    else:
        record = json.loads(raw)
        assert source == from_direct_url(record, record["url"])


def test_init_install_spec_choices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = "git+https://git.example.org/team/factbook.git@v0.1.0"
    assert run(["init", str(tmp_path / "a"), "--no-discover", "--install-spec", url]) == 0
    flow = load_workflow(tmp_path / "a" / WORKFLOW)
    assert flow["env"]["FACTBOOK_INSTALL"] == f"factbook @ {url}"
    assert (
        "identity"
        not in yaml.safe_load((tmp_path / "a" / "targets.yaml").read_text())["targets"]["local"]
    )  # nothing discovered: `local` is whatever machine runs factbook
    capsys.readouterr()
    folder = tmp_path / "src"
    folder.mkdir()
    assert run(["init", str(tmp_path / "b"), "--no-discover", "--install-spec", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "only a runner on this machine reaches" in out
    assert load_workflow(tmp_path / "b" / WORKFLOW)["env"]["FACTBOOK_INSTALL"] == str(folder)
    assert (
        run(["init", str(tmp_path / "c"), "--no-discover", "--install-spec", "factbook==0.1.0"])
        == 0
    )
    assert load_workflow(tmp_path / "c" / WORKFLOW)["env"]["FACTBOOK_INSTALL"] == (
        "factbook==0.1.0"
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("/nowhere/factbook.whl", "no such file or folder"),
        ("README.md", "not a wheel or sdist"),
        ("x'y", "no quotes"),
    ],
)
def test_bad_install_specs(
    tmp_path: Path, spec: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "README.md").write_text("x")
    monkeypatch.chdir(tmp_path)
    code, _out, err = cli(tmp_path, "init", str(tmp_path / "kb"), "--install-spec", spec)
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "kb").exists()


def test_init_and_hints_in_an_installed_copy(hosted: JobRun, tmp_path: Path) -> None:
    """The runner's venv installed factbook from the clone's vendor/ wheel: a missing extra's
    hint names that wheel, `init` there vendors it again, and with the wheel gone `init`
    falls back to the index, saying so."""
    job = hosted
    bin_ = job.venv / "bin"
    wheel = next((job.checkout / "vendor").glob("factbook-*.whl"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FACTBOOK_ROOT")}

    def factbook(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(bin_ / "factbook"), *argv], cwd=tmp_path, env=env, capture_output=True, text=True
        )

    done = factbook("run", "hello", "--yes", "--root", str(job.checkout))
    assert done.returncode == 2, done.stderr
    assert f"pip install '{wheel}[runbooks]'" in done.stderr and "Traceback" not in done.stderr
    done = factbook("init", "kb1", "--no-discover")
    assert done.returncode == 0, done.stderr
    assert load_workflow(tmp_path / "kb1" / WORKFLOW)["env"]["FACTBOOK_INSTALL"] == (
        f"./vendor/{wheel.name}"
    )
    moved = tmp_path / wheel.name
    wheel.rename(moved)
    try:
        done = factbook("init", "kb2", "--no-discover")
    finally:
        moved.rename(wheel)
    assert done.returncode == 0, done.stderr
    assert f"note: {wheel}, which factbook was installed from, is gone" in done.stdout
    version = metadata.version("factbook")
    assert load_workflow(tmp_path / "kb2" / WORKFLOW)["env"]["FACTBOOK_INSTALL"] == (
        f"factbook=={version}"
    )


def test_the_next_run_restores_the_venv(
    kb: Path, hosted: JobRun, runner_work: Path, cache_service: Path
) -> None:
    """The next run, on a fresh machine at the same workspace path: the cache hit skips the
    install and the same commands pass from the restored venv. (Last in this file: it
    replaces the first run's folder, as a new runner would.)"""
    assert hosted.ok
    flow = load_workflow(kb / WORKFLOW)
    again = run_job(flow, "factbook", kb, runner_work, cache=cache_service, hostname="ci-runner")
    assert again.outputs["venv"]["cache-hit"] == "true"
    assert len(again.skipped) == 1 and '"$FACTBOOK_INSTALL"' in again.skipped[0]
    assert not any('"$FACTBOOK_INSTALL"' in s.command for s in again.steps)
    _check_hosted_run(kb, again)
