"""Runbook executor overhead next to nbclient and papermill on the same notebook.

    .venv/bin/python bench/runbook_overhead.py [--cells 20] [--repeat 5] [--json out.json]

Measures, each as the median of --repeat runs:
- factbook: `Executor.run()` of a runbook of N trivial steps and of N steps sleeping 50 ms
  (kernel start, total, marginal cost per step = (T(N) - T(1)) / (N - 1) - own work);
  also the kernel pid of every step, to show one kernel serves the whole run.
- nbclient low-level: start a kernel, `execute_cell` per cell, shut down.
- nbclient `execute()`: the whole notebook in one call.
- papermill CLI: `papermill in.ipynb out.ipynb` as a process (what an operator would type).
- factbook CLI: `factbook run NAME --yes` as a process, to compare with papermill's CLI.
- box.run on the local target: one bounded command through the transport and box helper.

The goal (issue 6): executor overhead per step at most 50 ms beyond the step's own work, one
kernel per run.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import nbformat
import yaml

TRIVIAL = "x = 1"
SLEEP = "import time; time.sleep(0.05)"
PIDS = "import os; print(os.getpid())"


def make_kb(root: Path) -> Path:
    (root / "facts").mkdir(parents=True)
    (root / "runbooks").mkdir()
    (root / "facts" / "f.yaml").write_text(
        "facts:\n  - {id: inv.x, category: inventory, title: x, statement: x, status: verified,"
        " path: /tmp, sources: [{note: bench}]}\n"
    )
    (root / "targets.yaml").write_text(
        yaml.safe_dump({"targets": {"local": {"transport": "local"}}})
    )
    return root


def write_runbook(root: Path, name: str, codes: list[str]) -> Path:
    head = (
        "---\njupytext:\n  text_representation: {extension: .md, format_name: myst}\n"
        "kernelspec: {display_name: Python 3, language: python, name: python3}\n"
        "factbook:\n  target: local\n---\n\n# bench\n"
    )
    cells = "".join(
        f"\n```{{code-cell}} ipython3\n---\nname: s{i}\n---\n{code}\n```\n"
        for i, code in enumerate(codes)
    )
    path = root / "runbooks" / f"{name}.md"
    path.write_text(head + cells)
    return path


def notebook(codes: list[str]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(c) for c in codes]
    return nb


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, list[float]]:
    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples), samples


def factbook_run(root: Path, name: str) -> dict:
    from factbook.knowledge.kb import load_kb
    from factbook.runbooks.executor import Executor, RunOptions
    from factbook.runbooks.format import load_runbook

    kb = load_kb(root)
    runbook = load_runbook(root / "runbooks" / f"{name}.md", root)
    code = Executor(
        kb, runbook, RunOptions(live=False), out=io.StringIO(), stdin_is_tty=False
    ).run()
    assert code == 0
    folder = sorted((root / "results" / "runbooks" / name).iterdir())[-1]
    return json.loads((folder / "record.json").read_text())


def factbook_cli(root: Path, name: str) -> None:
    """`factbook run NAME --yes` as a process, as an operator types it."""
    factbook = str(Path(sys.executable).with_name("factbook"))
    subprocess.run(
        [factbook, "--root", str(root), "run", name, "--yes"], check=True, capture_output=True
    )


def nbclient_low_level(codes: list[str]) -> float:
    """Seconds per cell of the execute_cell loop alone (kernel start/stop excluded)."""
    from nbclient import NotebookClient

    nb = notebook(codes)
    client = NotebookClient(nb, kernel_name="python3", timeout=60)
    with client.setup_kernel():
        began = time.perf_counter()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        return (time.perf_counter() - began) / len(codes)


def per_step(record: dict) -> float:
    """Seconds per step from the first step's start to the last step's end, in one run."""
    from datetime import datetime

    def at(text: str) -> float:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()

    steps = record["steps"]
    span = at(steps[-1]["started"]) + steps[-1]["duration_s"] - at(steps[0]["started"])
    return span / len(steps)


def nbclient_execute(codes: list[str]) -> None:
    from nbclient import NotebookClient

    NotebookClient(notebook(codes), kernel_name="python3", timeout=60).execute()


def papermill_cli(codes: list[str], folder: Path) -> None:
    source, out = folder / "in.ipynb", folder / "out.ipynb"
    nbformat.write(notebook(codes), source)
    papermill = str(Path(sys.executable).with_name("papermill"))
    subprocess.run(
        [papermill, "-k", "python3", "--log-level", "ERROR", str(source), str(out)],
        check=True,
        capture_output=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    n, repeat = args.cells, args.repeat
    work = Path(tempfile.mkdtemp(prefix="fb-bench-"))
    try:
        root = make_kb(work / "kb")
        write_runbook(root, "trivial", [TRIVIAL] * n)
        write_runbook(root, "sleepy", [SLEEP] * n)
        write_runbook(root, "pids", [PIDS] * n)
        factbook_run(root, "trivial")  # warm imports and caches, like the other engines get
        out: dict[str, object] = {"cells": n, "repeat": repeat}

        total, samples = timed(lambda: factbook_run(root, "trivial"), repeat)
        trivial = [factbook_run(root, "trivial") for _ in range(repeat)]
        sleepy = [factbook_run(root, "sleepy") for _ in range(repeat)]
        step_fb = statistics.median(per_step(r) for r in trivial)
        step_sleep = statistics.median(per_step(r) for r in sleepy)
        own = statistics.median(s["duration_s"] for r in trivial for s in r["steps"])
        cell_nb = statistics.median(nbclient_low_level([TRIVIAL] * n) for _ in range(repeat))
        sleep_nb = statistics.median(nbclient_low_level([SLEEP] * n) for _ in range(repeat))
        pids = {s["outputs"].strip() for s in factbook_run(root, "pids")["steps"]}
        out["factbook"] = {
            "total_s": round(total, 3),
            "samples_s": [round(x, 3) for x in samples],
            "kernel_start_s": statistics.median(r["kernel_start_s"] for r in trivial),
            "per_trivial_step_ms": round(step_fb * 1000, 1),
            "execute_cell_in_step_ms": round(own * 1000, 1),
            "per_50ms_step_ms": round(step_sleep * 1000, 1),
            "kernels_per_run": len(pids),
        }
        out["nbclient_low_level"] = {
            "per_trivial_cell_ms": round(cell_nb * 1000, 1),
            "per_50ms_cell_ms": round(sleep_nb * 1000, 1),
        }
        out["overhead_vs_nbclient_ms"] = {
            "trivial": round((step_fb - cell_nb) * 1000, 1),
            "50ms": round((step_sleep - sleep_nb) * 1000, 1),
            "50ms_beyond_own_work": round((step_sleep - 0.05) * 1000, 1),
        }
        ex, _ = timed(lambda: nbclient_execute([TRIVIAL] * n), repeat)
        out["nbclient_execute"] = {"total_s": round(ex, 3)}
        pm, _ = timed(lambda: papermill_cli([TRIVIAL] * n, work), repeat)
        out["papermill_cli"] = {"total_s": round(pm, 3)}
        # like with like: `factbook run` as a process too (start-up, imports, kernel, steps)
        fbc, _ = timed(lambda: factbook_cli(root, "trivial"), repeat)
        out["factbook_cli"] = {"total_s": round(fbc, 3), "vs_papermill_cli": round(fbc / pm, 2)}

        from factbook.knowledge.model import Target
        from factbook.runbooks.remote import BoxClient

        box = BoxClient(Target(name="local", transport="local"), {})
        box.run(["true"])
        br, _ = timed(lambda: box.run(["true"]), max(repeat, 10))
        out["box_run_local_ms"] = round(br * 1000, 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    fb = out["factbook"]
    assert isinstance(fb, dict)
    over = out["overhead_vs_nbclient_ms"]
    assert isinstance(over, dict)
    ok = over["trivial"] <= 50 and over["50ms_beyond_own_work"] <= 50 and fb["kernels_per_run"] == 1
    print(
        f"goal (<= 50 ms per step beyond its work, 1 kernel per run): {'met' if ok else 'MISSED'}",
        file=sys.stderr,
    )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    main()
