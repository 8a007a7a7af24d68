"""`factbook lint`: every problem in the knowledge base, as file:line: message."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import EXIT_INVALID, Problem
from ..kb import KnowledgeBase


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "lint",
        help="check every fact file, milestones.yaml, targets.yaml and checks/",
        description="Report every problem at once as FILE:LINE: MESSAGE; exit 2 if any.",
    )
    p.set_defaults(handler=handle)


def collect_problems(root: Path) -> tuple[KnowledgeBase, list[Problem]]:
    """factbook.linters.collect_problems, imported when `lint` runs (not at CLI start)."""
    from ..linters import collect_problems as collect

    return collect(root)


def handle(args: argparse.Namespace) -> int:
    kb, problems = collect_problems(Path(args.root))
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s) in {args.root}", file=sys.stderr)
        return EXIT_INVALID
    print(
        f"ok: {len(kb.facts)} facts, {len(kb.milestones)} milestones, "
        f"{len(kb.targets)} targets, {sum(1 for f in kb.facts.values() if f.check)} checks"
    )
    return 0
