"""Import a large status dump: seconds and peak RSS of `factbook import` (issue 25, class 5).

The dump is the shipped knowledge base's own status document (`factbook status --as-of
4504`), its sections repeated until the file reaches the size asked for, every item made
unique (a copy number in its text, its numbers changed) and the import hints stripped, so
each line is parsed, extracted and matched as a hand-written one would be. It is imported
into an empty knowledge base (milestones.yaml and targets.yaml only), the case where every
item becomes a proposal, in a fresh interpreter whose own peak RSS is reported.

    .venv/bin/python bench/import_large.py              # 1 MB
    .venv/bin/python bench/import_large.py --mb 1 10    # the issue's sizes

`--repeat N` imports each size N times (a fresh copy of the knowledge base each time) and
prints the medians; `--compare DIR` alternates every import with another checkout's src/
(`git archive main | tar -x -C /tmp/before`), the A/B on a shared machine. At 10 MB most
facts go to category files the 1 MiB fact-file bound refuses (not written, not linted);
`--writable` imports the dump instead as one dump per MB, each into its own fresh knowledge
base, where every fact is written and linted, and reports their sum per MB (each pays the
start-up an import pays once). `--short` imports a dump of short one-line bullets instead
(`short_dump`: six times the items per MB). The knowledge base is a fresh copy, so its parsed cache
(knowledge/kbcache.py) is cold; `--warm` times a second import into the same copy.
`--shape NAME` imports one of the shapes in `SHAPES` instead: those that were quadratic (a
table quoted on one line, written `| a | b |` or `|a|b|`, a numbered list flattened onto one
line, an access line per box) and the densest one (`fact-lines`: `- fact N: value N`).

    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python bench/import_large.py --mb 1 \
        --into shipped --repeat 5 --compare /tmp/before/src
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DUMPS = REPO / "tests" / "data" / "dumps"  # --mixed: hand-written dumps of other bring-ups
HINT = re.compile(r"\s*<!-- fb .*?-->")
NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")
MEASURE = (  # the `factbook` command as a user runs it (its own exit), measured as it ends
    "import atexit, resource, sys\n"
    "def report():\n"
    "    me = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # a helper on the other core\n"
    "    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime\n"
    "    print('maxrss_kb', max(me.ru_maxrss, kids.ru_maxrss), 'cpu_s', cpu, file=sys.stderr)\n"
    "atexit.register(report)\n"
    "from factbook.commands.cli import main\n"
    "main()\n"
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
    head, _, body = base_document().partition("\n## ")

    def unique(line: str, copy: int) -> str:
        if not line.startswith("- "):
            return line
        line = NUMBER.sub(f"\\g<0>{copy % 97}", line, count=1)
        return line.rstrip("\n") + f" (copy {copy})\n"

    return _copies(head.rstrip() + "\n\n", ["## " + body], size, unique)


def _copies(head: str, texts: list[str], size: int, mark: Callable[[str, int], str]) -> str:
    """`head`, then the texts in turn (copy N is texts[N % len(texts)]) to `size`
    characters, each line as `mark(line, N)` makes it."""
    parts, total, copy = [head], len(head), 0
    while total < size:
        copy += 1
        for line in texts[copy % len(texts)].splitlines(keepends=True):
            parts.append(mark(line, copy))
            total += len(parts[-1])
            if total >= size:
                break
    return "".join(parts)


def short_dump(size: int) -> str:
    """A hand-written dump of short one-line bullets (~46 bytes each, 22,000 to the MB,
    against ~3,500 in `large_dump`): each names a path and a version, so each is a fact about
    a box (the dump names none: the first makes a placeholder box) with a check."""
    parts, total, i = ["# Status\n\n## Discoveries\n\n"], 0, 0
    while total < size:
        parts.append(f"- item {i} uses /data/x{i} and torch 2.{i % 9}.0\n")
        total += len(parts[-1])
        i += 1
    return "".join(parts)


def _filled(head: str, unit: Callable[[int], str], size: int) -> str:
    parts, total, n = [head], len(head), 0
    while total < size:
        parts.append(unit(n))
        total += len(parts[-1])
        n += 1
    return "".join(parts)


SHAPES: dict[str, Callable[[int], str]] = {
    "table-line": lambda size: _filled(
        "# Status\n\n## Hardware\n\n| Name | Value | |",
        lambda n: f' gpu{n} | "quoted {n} text" | |',
        size,
    ),
    "table-compact": lambda size: _filled(
        "# Status\n\n## Hardware\n\n|Name|Value||", lambda n: f'gpu{n}|"q {n}"||', size
    ),
    "numbered-line": lambda size: _filled(
        "# Status\n\n## Discoveries\n\n1. ", lambda n: f"item {n} uses x {n + 2}. ", size
    ),
    "access": lambda size: _filled(
        "# S\n\n## Access\n\n", lambda n: f"- ssh root@host{n} -p 22{n % 10} runs here\n", size
    ),
    # the densest hand-written shape: a short `key: value` line, 39,000 to the MB (the
    # issue's "40k lines take 32 s"), each a new fact with no check
    "fact-lines": lambda size: _filled(
        "# Status\n\n## Discoveries\n\n", lambda n: f"- fact {n}: value {n}\n", size
    ),
    # two boxes a line: targets.yaml outgrows what factbook reads, and the facts wait
    "access-jump": lambda size: _filled(
        "# S\n\n## Access\n\n",
        lambda n: f"- ssh u{n}@h{n}.example.invalid -J j{n}@k{n}.invalid\n",
        size,
    ),
}


def mixed_dump(size: int) -> str:
    """The six hand-written dumps of other bring-ups (tests/data/dumps) in turn, to `size`
    bytes, every bullet made unique: sections, tables, access lines, pitfalls and versions
    as people write them (~8,000 items to the MB, against 22,000 in `short_dump`)."""
    sources = [p.read_text(encoding="utf-8") for p in sorted(DUMPS.glob("*.md"))]

    def unique(line: str, copy: int) -> str:
        bullet = line.lstrip().startswith("- ")
        return line.rstrip("\n") + f" (copy {copy})\n" if bullet else line

    return _copies("", sources, size, unique)


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


def make_kb(kb: Path, into: str) -> None:
    """A fresh knowledge base: a copy of this repository's facts, or an empty one."""
    if kb.exists():
        shutil.rmtree(kb)
    if into == "shipped":
        shutil.copytree(REPO / "facts", kb / "facts")
        shutil.copytree(REPO / "checks", kb / "checks")
    else:
        (kb / "facts").mkdir(parents=True)
    for name in ("milestones.yaml", "targets.yaml"):
        shutil.copy(REPO / name, kb / name)


def per_mb_parts(text: str, mb: float) -> list[str]:
    """`text` cut at section headings into parts of about one MB each (`--writable`)."""
    head, _, body = text.partition("\n## ")
    sections = ["## " + s for s in body.split("\n## ")]
    parts, current = [], head.rstrip() + "\n\n"
    size = max(1, round(mb))
    for section in sections:
        if len(current) + len(section) > len(text) / size and len(parts) < size - 1:
            parts.append(current)
            current = head.rstrip() + "\n\n"
        current += section if section.endswith("\n") else section + "\n"
    return [*parts, current]


def timed(
    dumps: list[Path], kb: Path, into: str, src: Path, warm: bool = False
) -> tuple[int, float, float, float, str]:
    """The imports of `dumps`, each into a fresh `kb`, with the factbook at `src`: the worst
    exit code, summed wall and CPU seconds, the largest peak RSS, the last output line.
    `warm`: an import runs first, untimed, so the knowledge base's parsed cache is filled."""
    SRC[0] = src
    worst, wall, cpu, rss, last = 0, 0.0, 0.0, 0.0, ""
    for dump in dumps:
        make_kb(kb, into)
        if warm:
            run_import(dump, kb)
        code, seconds, used, peak, last = run_import(dump, kb)
        worst = max(worst, 0 if code in (0, 1) else code)
        wall, cpu, rss = wall + seconds, cpu + used, max(rss, peak)
    return worst, wall, cpu, rss, last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, nargs="+", default=[1.0])
    parser.add_argument("--src", type=Path, help="the src/ folder of the factbook to time")
    parser.add_argument(
        "--into", choices=("empty", "shipped"), default="empty",
        help="import into an empty knowledge base, or a copy of this repository's",
    )  # fmt: skip
    parser.add_argument("--repeat", type=int, default=1, help="imports per size (medians)")
    parser.add_argument("--compare", type=Path, help="another src/ folder, alternated with it")
    parser.add_argument(
        "--warm", action="store_true",
        help="time a second import into the same knowledge base (its parsed cache filled)",
    )  # fmt: skip
    parser.add_argument(
        "--short", action="store_true",
        help="a dump of short one-line bullets (short_dump) instead of the status document's",
    )  # fmt: skip
    parser.add_argument(
        "--mixed", action="store_true",
        help="the hand-written test dumps in turn (mixed_dump) instead of the status document's",
    )  # fmt: skip
    parser.add_argument(
        "--shape", choices=sorted(SHAPES),
        help="a shape of SHAPES (quadratic once, or the densest) instead of the status document's",
    )  # fmt: skip
    parser.add_argument(
        "--writable", action="store_true",
        help="one dump per MB, each into its own knowledge base: every fact written",
    )  # fmt: skip
    args = parser.parse_args()
    trees = [(args.src or SRC[0]).resolve()]
    if args.compare:
        trees.append(args.compare.resolve())
    worst = 0
    with tempfile.TemporaryDirectory() as tmp:
        for mb in args.mb:
            kb = Path(tmp) / f"kb-{mb}"
            make = short_dump if args.short else mixed_dump if args.mixed else large_dump
            make = SHAPES[args.shape] if args.shape else make
            text = make(int(mb * 1_000_000))
            pieces = per_mb_parts(text, mb) if args.writable else [text]
            dumps = []
            for n, piece in enumerate(pieces):
                dumps.append(Path(tmp) / f"dump-{mb}-{n}.md")
                dumps[-1].write_text(piece, encoding="utf-8")
            lines = text.count("\n")
            how = f" in {len(dumps)} imports, each into its own KB" if args.writable else ""
            runs: dict[Path, list[tuple[float, float]]] = {tree: [] for tree in trees}
            for _ in range(args.repeat):
                for tree in trees:
                    code, seconds, cpu, rss, last = timed(dumps, kb, args.into, tree, args.warm)
                    runs[tree].append((seconds, cpu))
                    label = f" [{tree}]" if len(trees) > 1 else ""
                    print(
                        f"{mb:g} MB ({lines} lines){how}: exit {code}, {seconds:.2f} s wall, "
                        f"{cpu:.2f} s CPU, {cpu / mb:.2f} s CPU/MB, peak RSS {rss:.0f} MB; "
                        f"{last}{label}",
                        flush=True,
                    )
                    worst = max(worst, code)
                    # 2 s of CPU per MB, plus start-up (each import of --writable pays it)
                    limit = 3.0 * len(dumps) if args.writable else max(2.0, mb * 2.0 + 1.0)
                    if tree == trees[0] and cpu > limit:
                        worst = max(worst, 1)
            if args.repeat > 1 or len(trees) > 1:
                for tree, got in runs.items():
                    wall = statistics.median(w for w, _ in got)
                    cpu = statistics.median(c for _, c in got)
                    print(
                        f"{mb:g} MB median of {len(got)}: {wall:.2f} s wall, {cpu:.2f} s CPU "
                        f"({cpu / mb:.2f} s/MB) [{tree}]"
                    )
    return worst


if __name__ == "__main__":
    sys.exit(main())
