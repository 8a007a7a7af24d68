"""Run a GitHub Actions workflow's jobs here as a hosted runner would, for the workflow that
`factbook init` writes: each job gets a fresh clone of the repository (actions/checkout), a
fresh venv of this Python (actions/setup-python), the workflow's and job's `env:`, and runs its
`run:` steps with `bash -e` in the clone, stopping at the first failing step.

`hostname` gives the steps a UTS namespace with that hostname (`unshare --uts`, root only), so
the machine looks like another one, as a hosted runner is. Only what that workflow uses is
understood; any other `uses:` is an error rather than silently skipped.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

KNOWN_ACTIONS = ("actions/checkout@", "actions/setup-python@")


@dataclass
class StepRun:
    command: str
    returncode: int
    output: str


@dataclass
class JobRun:
    name: str
    checkout: Path
    venv: Path
    steps: list[StepRun] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.returncode == 0 for s in self.steps)


def commit_repo(root: Path) -> None:
    """Make `root` a git repository with everything (as .gitignore allows) committed."""
    git = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.org"]
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "knowledge base"]):
        subprocess.run([*git, *argv], cwd=root, check=True, capture_output=True, timeout=60)


def _env(venv: Path, extra: dict[str, str]) -> dict[str, str]:
    drop = ("PYTHONPATH", "FACTBOOK_ROOT", "VIRTUAL_ENV", "PYTEST_ADDOPTS")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    base = Path(getattr(sys, "_base_executable", sys.executable)).parent
    system = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
    env["PATH"] = os.pathsep.join([str(venv / "bin"), str(base), *system])  # a runner's PATH
    env["VIRTUAL_ENV"] = str(venv)
    env["CI"] = "true"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_job(
    workflow: dict,
    name: str,
    repo: Path,
    work: Path,
    *,
    hostname: str | None = None,
    timeout: float = 600,
) -> JobRun:
    """One job of `workflow` (parsed YAML), on a fresh clone of `repo` under `work`."""
    job = workflow["jobs"][name]
    checkout, venv = work / f"{name}-checkout", work / f"{name}-venv"
    run = JobRun(name, checkout, venv)
    env_vars = {**(workflow.get("env") or {}), **(job.get("env") or {})}
    for step in job["steps"]:
        uses = step.get("uses")
        if uses is not None:
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
                base = getattr(sys, "_base_executable", sys.executable)
                subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=timeout)
            else:
                raise RuntimeError(f"step uses {uses}: only {', '.join(KNOWN_ACTIONS)} here")
            continue
        done = run_step(
            step["run"],
            run,
            {**env_vars, **(step.get("env") or {})},
            hostname=hostname,
            timeout=timeout,
        )
        run.steps.append(done)
        if done.returncode != 0:
            break
    return run


def run_step(
    command: str,
    job: JobRun,
    env_vars: dict[str, str],
    *,
    hostname: str | None = None,
    timeout: float = 600,
) -> StepRun:
    """One `run:` step in the job's checkout with its venv on PATH (again, if need be)."""
    argv = ["bash", "-e", "-c", command]
    if hostname is not None:
        inner = f"hostname {shlex.quote(hostname)} && exec {shlex.join(argv)}"
        argv = ["unshare", "--uts", "sh", "-c", inner]
    done = subprocess.run(
        argv,
        cwd=job.checkout,
        env=_env(job.venv, env_vars),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )
    return StepRun(command, done.returncode, done.stdout)


def load_workflow(path: Path) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    # YAML 1.1 reads the key `on` as True; keep the jobs and env, which is all we run
    return {"env": data.get("env") or {}, "jobs": data["jobs"]}
