"""Import a large status dump: seconds and peak RSS of `factbook import` (issue 25, class 5).

The dump is the shipped knowledge base's own status document (`factbook status --as-of
4504`), its sections repeated until the file reaches the size asked for, every item made
unique (a copy number in its text, its numbers changed) and the import hints stripped, so
each line is parsed, extracted and matched as a hand-written one would be. It is imported
into an empty knowledge base (milestones.yaml and targets.yaml only), the case where every
item becomes a proposal, in a fresh interpreter whose own peak RSS is reported.

    .venv/bin/python bench/import_large.py              # 1 MB
    .venv/bin/python bench/import_large.py --mb 1 10    # the issue's sizes
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HINT = re.compile(r"\s*<!-- fb .*?-->")
NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")
MEASURE = (
    "import resource, sys\n"
    "from factbook.commands.cli import run\n"
    "code = run(sys.argv[1:])\n"
    "use = resource.getrusage(resource.RUSAGE_SELF)\n"
    "print('maxrss_kb', use.ru_maxrss, 'cpu_s', use.ru_utime + use.ru_stime, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


SRC = [REPO / "src"]  # --src: another checkout's factbook, to compare


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC[0])}


def base_document() -> str:
    """The shipped knowledge base's status document at its last milestone, hints removed."""
    out = subprocess.run(
        [sys.executable, "-m", "factbook", "--root", str(REPO), "status", "--as-of", "4504",
         "--out", "-"],
        capture_output=True, text=True, check=True, env=env(),
    )  # fmt: skip
    return HINT.sub("", out.stdout)


def large_dump(size: int) -> str:
    """`base_document`'s sections repeated to `size` bytes, every item line unique."""
    text = base_document()
    head, _, body = text.partition("\n## ")
    body = "## " + body
    parts = [head.rstrip() + "\n\n"]
    total, copy = len(parts[0]), 0
    while total < size:
        copy += 1
        for line in body.splitlines(keepends=True):
            if line.startswith("- "):
                line = NUMBER.sub(f"\\g<0>{copy % 97}", line, count=1)
                line = line.rstrip("\n") + f" (copy {copy})\n"
            parts.append(line)
            total += len(line)
            if total >= size:
                break
    return "".join(parts)


def run_import(dump: Path, kb: Path) -> tuple[int, float, float, float, str]:
    """(exit code, wall seconds, CPU seconds, peak RSS in MB, last output line) of one import
    (CPU seconds: what the import itself took on a machine shared with other work)."""
    argv = ["--root", str(kb), "import", str(dump), "--milestone", "4504", "--quiet"]
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", MEASURE, *argv], capture_output=True, text=True, env=env()
    )
    seconds = time.monotonic() - started
    rss = cpu = 0.0
    match = re.search(r"maxrss_kb (\d+) cpu_s ([\d.]+)", proc.stderr)
    if match:
        rss, cpu = int(match.group(1)) / 1024, float(match.group(2))
    said = (proc.stdout + proc.stderr).strip().splitlines()
    last = next((line for line in said if not line.startswith("maxrss_kb")), "")
    return proc.returncode, seconds, cpu, rss, last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, nargs="+", default=[1.0])
    parser.add_argument("--src", type=Path, help="the src/ folder of the factbook to time")
    parser.add_argument(
        "--into", choices=("empty", "shipped"), default="empty",
        help="import into an empty knowledge base, or a copy of this repository's",
    )  # fmt: skip
    args = parser.parse_args()
    if args.src:
        SRC[0] = args.src.resolve()
    worst = 0
    with tempfile.TemporaryDirectory() as tmp:
        for mb in args.mb:
            kb = Path(tmp) / f"kb-{mb}"
            if args.into == "shipped":
                shutil.copytree(REPO / "facts", kb / "facts")
                shutil.copytree(REPO / "checks", kb / "checks")
            else:
                (kb / "facts").mkdir(parents=True)
            for name in ("milestones.yaml", "targets.yaml"):
                shutil.copy(REPO / name, kb / name)
            dump = Path(tmp) / f"dump-{mb}.md"
            dump.write_text(large_dump(int(mb * 1_000_000)), encoding="utf-8")
            lines = dump.read_text(encoding="utf-8").count("\n")
            code, seconds, cpu, rss, last = run_import(dump, kb)
            print(
                f"{mb:g} MB ({lines} lines): exit {code}, {seconds:.1f} s wall, {cpu:.1f} s CPU, "
                f"peak RSS {rss:.0f} MB; {last}"
            )
            worst = max(worst, code if code not in (0, 1) else 0)
            if cpu > max(2.0, mb * 2.0 + 1.0):  # 2 s of CPU per MB, plus start-up
                worst = max(worst, 1)
    return worst


if __name__ == "__main__":
    sys.exit(main())
