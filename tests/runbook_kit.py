"""Helpers for the runbook tests: a small knowledge base and runbooks written into tmp_path.

Nothing here is faked: the KB is loaded by the real loader, runbooks are run by the real
executor on a real ipykernel, and commands reach the box through the real transports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

FACTBOOK = str(Path(sys.executable).with_name("factbook"))  # the installed console script

FACTS = """\
# yaml-language-server: $schema=../schema/facts.schema.json
# Facts of the runbook tests. This comment must survive write-back.
facts:
  - id: inv.workdir
    category: inventory
    title: A work directory
    statement: the directory steps write into
    status: verified
    path: {workdir}
    kind: dir
    sources: [{{note: test}}]
    check:
      probe: file.exists
      args: {{path: {workdir}}}
      expect: {{eq: true}}

  - id: inv.missing
    category: inventory
    title: A directory that is not there
    statement: steps requiring it must not run
    status: verified
    path: {workdir}/not-there
    kind: dir
    sources: [{{note: test}}]
    check:
      probe: file.exists
      args: {{path: {workdir}/not-there}}
      expect: {{eq: true}}

  - id: sw.server.config   # the env and flags a launch step uses
    category: software
    title: Server config
    statement: env and flags of the test server
    status: verified
    value: {{env: {{GREETING: hello, NCCL_PROTO: LL}}, flags: ["--bind 127.0.0.1"]}}
    sources: [{{note: test}}]

  - id: bench.speed        # measured by the runbook; keep this comment
    category: benchmarks
    title: Speed
    statement: how fast the test step is
    value: 1.0
    unit: tok/s
    metric: speed
    status: assumed
    sources: [{{note: seed value}}]

  - id: bench.latency
    category: benchmarks
    title: Latency
    statement: how long the test step waits
    value: 9.0
    unit: ms
    metric: latency
    status: assumed
    sources: [{{note: seed value}}]

  - id: pit.trap
    category: pitfalls
    title: A trap
    statement: a pitfall the runbook links
    status: verified
    symptom: it hurts
    cause: a trap
    fix: avoid it
    sources: [{{note: test}}]
"""

FRONT = """\
---
jupytext:
  text_representation: {{extension: .md, format_name: myst}}
kernelspec: {{display_name: Python 3, language: python, name: python3}}
factbook:
  target: {target}
  pitfalls: [pit.trap]
{extra}---

# Test runbook

Steps for the tests.
"""


def make_kb(root: Path, *, targets: dict[str, Any] | None = None) -> Path:
    """A knowledge base under `root` with a local target (and any extra targets)."""
    workdir = root / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    (root / "facts").mkdir(parents=True, exist_ok=True)
    (root / "runbooks").mkdir(exist_ok=True)
    (root / "facts" / "test.yaml").write_text(FACTS.format(workdir=workdir), encoding="utf-8")
    all_targets = {"local": {"transport": "local"}, **(targets or {})}
    (root / "targets.yaml").write_text(yaml.safe_dump({"targets": all_targets}), encoding="utf-8")
    return root


def write_runbook(
    root: Path,
    name: str,
    steps: list[tuple[dict[str, Any], str]],
    *,
    target: str = "local",
    extra: str = "",
) -> Path:
    """runbooks/NAME.md with one code cell per (metadata, code)."""
    parts = [FRONT.format(target=target, extra=extra)]
    for meta, code in steps:
        front = yaml.safe_dump(meta, default_flow_style=None, sort_keys=False).strip()
        parts.append(f"\n```{{code-cell}} ipython3\n---\n{front}\n---\n{code.strip()}\n```\n")
    path = root / "runbooks" / f"{name}.md"
    path.write_text("".join(parts), encoding="utf-8")
    return path


def run_cli(
    root: Path,
    *args: str,
    timeout: float = 120,
    stdin: str | None = "",
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`factbook --root ROOT ARGS` as a subprocess (stdin is a pipe: never a terminal)."""
    return subprocess.run(
        [FACTBOOK, "--root", str(root), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def runs(root: Path, runbook: str) -> list[dict[str, Any]]:
    """Run records of a runbook, oldest first."""
    base = root / "results" / "runbooks" / runbook
    return (
        [
            json.loads((d / "record.json").read_text())
            for d in sorted(base.iterdir())
            if (d / "record.json").exists()
        ]
        if base.exists()
        else []
    )


def steps_of(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in record["steps"]}


def start_run_until(root: Path, runbook: str, line: str) -> subprocess.Popen[str]:
    """`factbook run RUNBOOK` as its own process, returned once a step printed `line` (live
    output, not the echoed source): the run is mid-step, ready to be signalled or killed."""
    proc = subprocess.Popen(
        [FACTBOOK, "--root", str(root), "run", runbook],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    for printed in proc.stdout:
        if printed.strip() == line:
            break
    return proc
