"""Benchmark: what one `factbook verify` of 300 checks costs in CPU, on each side of the jump.

    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python bench/verify_cpu.py             # 7 runs
    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python bench/verify_cpu.py --against /path/to/main/src

The lab and knowledge base of bench/verify_ssh.py (a box sshd reachable only through a jump
sshd; a quarter each of file sha256, commands, pip versions and JSON values, all expected to
pass). Each run is a new `factbook verify --target box` (then `--target local`) process; for
each it records the wall time, the client's CPU (the process and its children), the box's CPU
(the box sshd's reaped children: the session, supervisor, agent, workers and checks) and the
jump's. Wall time moves 2-3x with the machine's load; CPU seconds move far less, so an A/B of
two source trees (`--against`, run alternately, first one then the other) reads them.
Medians of `--repeat` runs after one warm-up round (which also fills each tree's cache).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from sshd import start_lab  # noqa: E402
from verify_ssh import build_checks, ssh_out, write_kb  # noqa: E402


def ticks(pid: int) -> float:
    """CPU seconds of pid and its reaped children."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("-n", "--checks", type=int, default=300)
    parser.add_argument("--against", metavar="SRC", help="another source tree, alternated")
    parser.add_argument("--json", metavar="FILE", help="also write every sample here")
    args = parser.parse_args()
    trees = [str(ROOT / "src"), *([args.against] if args.against else [])]
    for tree in trees:  # bytecode, as an installed package has it
        subprocess.run([sys.executable, "-m", "compileall", "-q", tree], check=True,
                       capture_output=True)  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="factbook-cpu-"))
    lab = start_lab(work / "lab", skip_bashrc=True)
    samples: dict[str, list[list[float]]] = {}
    try:
        python = ssh_out(lab, "command -v python3").strip()
        code = "import importlib.metadata as m, json; "
        code += "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
        packages = json.loads(ssh_out(lab, shlex.join([python, "-c", code])))
        write_kb(work / "kb", build_checks(work / "data", args.checks, packages), python)
        # one copy of the knowledge base per tree: its cache is keyed on factbook's code, so a
        # shared one would be parsed again on every run that follows the other tree's
        kbs = {tree: work / "kb" if i == 0 else work / f"kb-{i}" for i, tree in enumerate(trees)}
        for kb in kbs.values():
            if not kb.exists():
                shutil.copytree(work / "kb", kb)
        assert lab.box.proc is not None and lab.jump.proc is not None
        for round_ in range(args.repeat + 1):
            for target in ("box", "local"):
                for tree in trees if round_ % 2 else trees[::-1]:
                    env = {**os.environ, "HOME": str(lab.home), "PYTHONPATH": tree}
                    env.pop("SSH_AUTH_SOCK", None)
                    env.pop("PYTHONDONTWRITEBYTECODE", None)
                    argv = [sys.executable, "-c", "from factbook.commands.cli import main; main()"]
                    argv += ["--root", str(kbs[tree]), "verify", "--target", target]
                    argv += ["--format", "json", "--no-save", "-q"]
                    box0, jump0 = ticks(lab.box.proc.pid), ticks(lab.jump.proc.pid)
                    cpu0, started = children_cpu(), time.monotonic()
                    done = subprocess.run(argv, env=env, capture_output=True, text=True)
                    wall, cpu = time.monotonic() - started, children_cpu() - cpu0
                    time.sleep(0.3)  # the box's session processes are reaped after we leave
                    box, jump = ticks(lab.box.proc.pid) - box0, ticks(lab.jump.proc.pid) - jump0
                    passed = json.loads(done.stdout)["summary"]["pass"] if done.stdout else 0
                    if passed != args.checks:
                        why = f"{tree} --target {target}: {passed} passed\n{done.stderr}"
                        raise SystemExit(why)
                    if round_:
                        samples.setdefault(f"{target} {tree}", []).append([wall, cpu, box, jump])
        print(f"{args.checks} checks, medians of {args.repeat}; load {os.getloadavg()[0]:.1f}")
        print(f"{'':40} {'wall s':>7} {'client':>7} {'box':>7} {'jump':>7} {'all CPU':>8}")
        for name, rows in samples.items():
            m = [statistics.median(r[i] for r in rows) for i in range(4)]
            print(f"{name:40} {m[0]:7.3f} {m[1]:7.3f} {m[2]:7.3f} {m[3]:7.3f} {sum(m[1:]):8.3f}")
        if args.json:
            Path(args.json).write_text(json.dumps(samples, indent=1))
    finally:
        lab.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
