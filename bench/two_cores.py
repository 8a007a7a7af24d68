"""How much of a second core this machine gives now: one CPU loop alone, then two side by
side (forked), timed; a ratio of 1.0 means two cores, 2.0 one. Parallel figures (an import's
forked halves) are worth reading next to it: a shared machine's second core comes and goes.

    .venv/bin/python bench/two_cores.py --tries 5
"""

from __future__ import annotations

import argparse
import os
import time


def spin(n: int) -> None:
    total = 0
    for i in range(n):
        total += i


def alone(n: int) -> float:
    started = time.perf_counter()
    spin(n)
    return time.perf_counter() - started


def side_by_side(n: int) -> float:
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        spin(n)
        os._exit(0)
    spin(n)
    os.waitpid(pid, 0)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=5)
    parser.add_argument("--loop", type=int, default=3_000_000, help="iterations of the loop")
    args = parser.parse_args()
    ratios = []
    for n in range(args.tries):
        one, two = alone(args.loop), side_by_side(args.loop)
        ratios.append(two / one)
        print(f"try {n + 1}: alone {one:.3f} s, two side by side {two:.3f} s, {two / one:.2f}x")
    print(f"ratio min {min(ratios):.2f} max {max(ratios):.2f} (1.0: two free cores; 2.0: one)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
