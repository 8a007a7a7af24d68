"""Every command in a knowledge base whose targets.yaml names a large Ansible inventory.

Times `factbook list` (wall seconds and peak RSS, a fresh interpreter each) in a knowledge
base whose `inventory:` is an INI file of N hosts, each with `ansible_host` and
`ansible_user`, under a group with `:vars`: parsed (FACTBOOK_CACHE=0), the first run that
parses and writes the cache, and a run that reads the cache. `--compare DIR` times another
checkout's src/ the same way, side by side (`git archive COMMIT src | tar -x -C /tmp/before`).

    .venv/bin/python bench/inventory_commands.py --hosts 20000 200000 --compare /tmp/before/src
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


def make_kb(root: Path, hosts: int) -> None:
    """A knowledge base of one fact whose targets.yaml names an inventory of `hosts` hosts."""
    (root / "facts").mkdir(parents=True)
    (root / "facts" / "a.yaml").write_text(
        "facts:\n  - {id: hw.a, category: hardware, title: a, statement: a, status: assumed,"
        " sources: [{seed: s}]}\n"
    )
    with open(root / "hosts.ini", "w") as out:
        out.write("[gpu]\n")
        for i in range(hosts):
            out.write(f"node{i} ansible_host=10.{i >> 16}.{(i >> 8) & 255}.{i & 255} ")
            out.write("ansible_user=ops\n")
        out.write("[gpu:vars]\nansible_port=2222\n")
    (root / "targets.yaml").write_text("inventory: hosts.ini\n")
    past = time.time() - 10  # written well before the load: the cache may keep it
    for path in root.rglob("*"):
        os.utime(path, (past, past))


def timed(root: Path, src: Path, cache: bool) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit code) of one `factbook list`."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    if not cache:
        env["FACTBOOK_CACHE"] = "0"
    argv = ["/usr/bin/time", "-f", "rss_kb %M", sys.executable, "-m", "factbook", "--root",
            str(root), "list"]  # fmt: skip
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - started
    found = re.search(r"rss_kb (\d+)", proc.stderr)
    return seconds, int(found.group(1)) / 1024 if found else 0.0, proc.returncode


def runs(root: Path, src: Path) -> list[tuple[str, float, float, int]]:
    """Parsed, first cached run (parses and writes), cache read: as a user meets them."""
    shutil.rmtree(root / ".factbook-cache", ignore_errors=True)
    out = [("parsed", *timed(root, src, cache=False))]
    out.append(("first run (writes the cache)", *timed(root, src, cache=True)))
    out.append(("cached", *timed(root, src, cache=True)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[20_000, 200_000])
    parser.add_argument("--compare", type=Path, help="another checkout's src/ to time too")
    args = parser.parse_args()
    sources = [("this tree", REPO / "src")]
    if args.compare:
        sources.append(("compared", args.compare))
    worst = 0
    for hosts in args.hosts:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "kb"
            make_kb(root, hosts)
            size = (root / "hosts.ini").stat().st_size / 1e6
            print(f"{hosts:,} hosts ({size:.1f} MB inventory):")
            results = {name: runs(root, src) for name, src in sources}
            for at, (label, *_) in enumerate(results["this tree"]):
                line = f"  {label:30s}"
                for name, _ in sources:
                    _, seconds, rss, code = results[name][at]
                    worst = max(worst, code)
                    line += f"  {name}: {seconds:6.2f} s {rss:5.0f} MB"
                if args.compare:
                    ratio = results["compared"][at][1] / results["this tree"][at][1]
                    line += f"  ({ratio:.1f}x)"
                print(line)
    return worst


if __name__ == "__main__":
    raise SystemExit(main())
