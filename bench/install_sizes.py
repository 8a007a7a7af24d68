"""How much each factbook install costs: a fresh venv per extra, timed, sized and counted.

    python bench/install_sizes.py [--extras core,handbook,runbooks,sglang,pytest,ml,all]
                                   [--json FILE]

Builds the wheel once (`pip wheel . --no-deps`), then for each extra: `python -m venv`, `pip
install factbook-*.whl[extra]` (pip's own configuration decides the index; the figures are
for that index and a warm pip cache), and reports seconds, MB added to the venv and packages
added (pip itself excluded). `ml` and `all` name the CPU torch beside the extra, as
scripts/test does. docs/performance.md quotes its output.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ["core", "handbook", "runbooks", "sglang", "mcp", "pytest", "ml", "all"]
CPU_TORCH = "torch==2.13.0"


def du_mb(path: Path) -> float:
    """Bytes of regular files under path, in MB (10^6), links not followed."""
    total = sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    return total / 1e6


def packages(python: Path) -> set[str]:
    out = subprocess.run(
        [str(python), "-m", "pip", "list", "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {d["name"].lower() for d in json.loads(out)}


def measure(wheel: Path, extra: str, work: Path) -> dict[str, object]:
    venv = work / f"venv-{extra}"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    base_mb, base_pkgs = du_mb(venv), packages(python)
    spec = str(wheel) if extra == "core" else f"{wheel}[{extra}]"
    # the ml extra asks torch>=2.4 (a serving engine's torch satisfies it); alone, pip would
    # take the newest CUDA build (GBs), so the CPU build the tests use is named, as scripts/test
    torch = [CPU_TORCH] if extra in ("ml", "all") else []
    started = time.monotonic()
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", spec, *torch],
        check=True,
    )
    seconds = time.monotonic() - started
    added = packages(python) - base_pkgs
    return {
        "extra": extra,
        "seconds": round(seconds, 1),
        "mb": round(du_mb(venv) - base_mb, 1),
        "packages": len(added),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", default=",".join(EXTRAS))
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="factbook-install-") as tmp:
        work = Path(tmp)
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(work), str(ROOT)],
            check=True,
        )
        wheel = next(work.glob("factbook-*.whl"))
        for extra in args.extras.split(","):
            row = measure(wheel, extra, work)
            rows.append(row)
            print(
                f"{extra:10} {row['seconds']:6.1f} s {row['mb']:8.1f} MB "
                f"{row['packages']:4} packages"
            )
            sys.stdout.flush()
            shutil.rmtree(work / f"venv-{extra}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
