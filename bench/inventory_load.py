"""How long reading an Ansible inventory takes, and how a huge one is refused.

    python bench/inventory_load.py            # 60 groups x 500 hosts, then 60 x 2,000
    python bench/inventory_load.py --full     # also 60 x 3,000 (180,000 hosts)

Prints, per size: hosts, seconds to read the INI file, seconds to merge variables
(Inventory.finish), peak RSS; then the time to refuse 60 ranges of 100,000 hosts each.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

from factbook.errors import InputError
from factbook.knowledge.fleet.load import read_source


def _write(folder: Path, groups: int, per_group: int, width: int) -> Path:
    path = folder / f"fleet-{groups}x{per_group}.ini"
    first = "1".zfill(width)
    path.write_text(
        "".join(f"[g{i}]\nh{i}-[{first}:{per_group}] rack={i}\n" for i in range(groups))
    )
    return path


def main(full: bool) -> None:
    sizes = [500, 2000] + ([3000] if full else [])
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for per_group in sizes:
            path = _write(folder, 60, per_group, len(str(per_group)))
            began = time.perf_counter()
            inventory = read_source(path)
            read = time.perf_counter() - began
            began = time.perf_counter()
            inventory.finish()
            merged = time.perf_counter() - began
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
            print(
                f"{len(inventory.targets):>7} hosts: read {read:.2f} s, "
                f"merge {merged:.2f} s, {rss} MB"
            )
        huge = _write(folder, 60, 100_000, 6)
        began = time.perf_counter()
        try:
            read_source(huge)
        except InputError as exc:
            print(f"60 x 100,000 refused in {time.perf_counter() - began:.2f} s: {exc}")


if __name__ == "__main__":
    main("--full" in sys.argv[1:])
