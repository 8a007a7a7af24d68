"""Run a GitHub Actions workflow's jobs here as a hosted runner would, for the workflow that
`factbook init` writes: each job gets a fresh clone of the repository (actions/checkout), this
machine's Python as the runner's interpreter (actions/setup-python: the version it asks for,
with pip, nothing else installed into a venv for it), actions/cache against a folder that
stands for the cache service (restored before the job's steps, saved after a job that
passed, as the action's post step does), the workflow's and job's `env:`, `$GITHUB_PATH`,
and its `run:` steps with `bash -e` in the clone, stopping at the first failing step.

`hostname` gives the steps a UTS namespace with that hostname (`unshare --uts`, root only), so
the machine looks like another one, as a hosted runner is. Only what that workflow uses is
understood (its actions, `if: steps.ID.outputs.NAME != 'VALUE'`, `runner.os`, the steps'
outputs and `hashFiles(...)` in expressions); anything else is an error rather than silently
skipped or taken as true.
"""

from __future__ import annotations

import glob
import hashlib
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

KNOWN_ACTIONS = ("actions/checkout@", "actions/setup-python@", "actions/cache@")
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
CONDITION = re.compile(r"^steps\.([\w-]+)\.outputs\.([\w-]+) (==|!=) '([^']*)'$")


@dataclass
class StepRun:
    command: str
    returncode: int
    output: str


@dataclass
class JobRun:
    name: str
    checkout: Path
    path: list[Path] = field(default_factory=list)  # what steps added through $GITHUB_PATH
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)  # steps' outputs, by id
    steps: list[StepRun] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # `run:` steps whose `if:` was false

    @property
    def ok(self) -> bool:
        return all(s.returncode == 0 for s in self.steps)

    @property
    def venv(self) -> Path:
        """The venv whose bin/ a step put on PATH (the workflow's cached factbook venv)."""
        for entry in self.path:
            if (entry.parent / "pyvenv.cfg").is_file():
                return entry.parent
        raise LookupError(f"no step of job {self.name} put a venv on PATH")


def commit_repo(root: Path) -> None:
    """Make `root` a git repository with everything (as .gitignore allows) committed."""
    git = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.org"]
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "knowledge base"]):
        subprocess.run([*git, *argv], cwd=root, check=True, capture_output=True, timeout=60)


def _hash_files(checkout: Path, patterns: list[str]) -> str:
    """hashFiles(): one digest of the files the patterns match (none: the empty string)."""
    files = sorted(
        {
            Path(p)
            for pattern in patterns
            for p in glob.glob(str(checkout / pattern), recursive=True)
            if Path(p).is_file()
        }
    )
    if not files:
        return ""
    outer = hashlib.sha256()
    for path in files:
        outer.update(hashlib.sha256(path.read_bytes()).digest())
    return outer.hexdigest()


def expand(text: str, job: JobRun) -> str:
    """`${{ ... }}` in `text`, for the expressions the workflow uses; others are an error."""

    def one(match: re.Match[str]) -> str:
        expr = match.group(1)
        if expr == "runner.os":
            return "Linux"
        step = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
        if step:
            return job.outputs.get(step.group(1), {}).get(step.group(2), "")
        files = re.fullmatch(r"hashFiles\((.*)\)", expr)
        if files:
            return _hash_files(job.checkout, re.findall(r"'([^']*)'", files.group(1)))
        raise RuntimeError(f"expression not understood here: {expr}")

    return EXPRESSION.sub(one, text)


def _condition(text: str, job: JobRun) -> bool:
    match = CONDITION.match(text.strip())
    if match is None:
        raise RuntimeError(f"`if:` not understood here: {text}")
    step, name, op, value = match.groups()
    actual = job.outputs.get(step, {}).get(name, "")
    return (actual == value) == (op == "==")


def _env(job: JobRun, extra: dict[str, str], github_path: Path) -> dict[str, str]:
    drop = ("PYTHONPATH", "FACTBOOK_ROOT", "VIRTUAL_ENV", "PYTEST_ADDOPTS")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    base = Path(getattr(sys, "_base_executable", sys.executable)).parent
    system = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
    # a runner's PATH: what steps added, setup-python's interpreter, the system
    env["PATH"] = os.pathsep.join([*map(str, reversed(job.path)), str(base), *system])
    env["CI"] = "true"
    env["GITHUB_ACTIONS"] = "true"
    env["GITHUB_PATH"] = str(github_path)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_job(
    workflow: dict,
    name: str,
    repo: Path,
    work: Path,
    *,
    cache: Path,
    hostname: str | None = None,
    timeout: float = 600,
) -> JobRun:
    """One job of `workflow` (parsed YAML), on a fresh clone of `repo` in `work`/NAME (what a
    previous run left there is removed first); `cache` is the folder standing for the cache
    service, shared between runs."""
    job_def = workflow["jobs"][name]
    # the same workspace path on every run, as a hosted runner's; a fresh machine each time
    runner = Path(os.path.realpath(work)) / name
    shutil.rmtree(runner, ignore_errors=True)
    checkout = runner / "checkout"
    job = JobRun(name, checkout)
    env_vars = {**(workflow.get("env") or {}), **(job_def.get("env") or {})}
    saves: list[tuple[Path, Path]] = []  # actions/cache misses: saved if the job passes
    for step in job_def["steps"]:
        if "if" in step and not _condition(step["if"], job):
            job.skipped.append(step.get("run") or step.get("uses", ""))
            continue
        uses = step.get("uses")
        if uses is None:
            done = run_step(
                step["run"],
                job,
                {**env_vars, **(step.get("env") or {})},
                hostname=hostname,
                timeout=timeout,
            )
            job.steps.append(done)
            if done.returncode != 0:
                break
            continue
        outputs = job.outputs.setdefault(str(step.get("id", "")), {})
        if uses.startswith("actions/checkout@"):
            subprocess.run(
                ["git", "clone", "-q", str(repo), str(checkout)],
                check=True,
                capture_output=True,
                timeout=60,
            )
        elif uses.startswith("actions/setup-python@"):
            wanted = str((step.get("with") or {}).get("python-version", ""))
            have = f"{sys.version_info[0]}.{sys.version_info[1]}"
            if wanted and wanted != have:
                raise RuntimeError(f"the workflow asks for Python {wanted}; this is {have}")
            outputs["python-version"] = platform.python_version()
        elif uses.startswith("actions/cache@"):
            with_ = step.get("with") or {}
            path = checkout / expand(str(with_["path"]), job)
            key = expand(str(with_["key"]), job)
            stored = cache / hashlib.sha256(key.encode()).hexdigest()
            hit = stored.is_dir()
            if hit:
                shutil.copytree(stored, path, symlinks=True)
            else:
                saves.append((path, stored))
            outputs["cache-hit"] = "true" if hit else "false"
        else:
            raise RuntimeError(f"step uses {uses}: only {', '.join(KNOWN_ACTIONS)} here")
    if job.ok:
        for path, stored in saves:
            if path.exists():
                shutil.copytree(path, stored, symlinks=True)
    return job


def run_step(
    command: str,
    job: JobRun,
    env_vars: dict[str, str],
    *,
    hostname: str | None = None,
    timeout: float = 600,
) -> StepRun:
    """One `run:` step in the job's checkout with what earlier steps put on PATH."""
    argv = ["bash", "-e", "-c", expand(command, job)]
    if hostname is not None:
        inner = f"hostname {shlex.quote(hostname)} && exec {shlex.join(argv)}"
        argv = ["unshare", "--uts", "sh", "-c", inner]
    github_path = job.checkout.parent / "github_path"
    github_path.touch()
    done = subprocess.run(
        argv,
        cwd=job.checkout,
        env=_env(job, env_vars, github_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )
    for line in github_path.read_text(encoding="utf-8").splitlines():
        if line.strip() and Path(line.strip()) not in job.path:
            job.path.append(Path(line.strip()))
    github_path.write_text("", encoding="utf-8")
    return StepRun(command, done.returncode, done.stdout)


def load_workflow(path: Path) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    # YAML 1.1 reads the key `on` as True; keep the jobs and env, which is all we run
    return {"env": data.get("env") or {}, "jobs": data["jobs"]}
