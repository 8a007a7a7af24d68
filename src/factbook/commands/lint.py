"""`factbook lint`: every problem in the knowledge base, as file:line: message (or JSON,
SARIF, GitHub annotations: `factbook.commands.lint_output`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from factbook.commands.lint_output import FORMATS, render
from factbook.errors import EXIT_INVALID, Problem
from factbook.knowledge.kb import KnowledgeBase


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "lint",
        help="check every fact file, milestones.yaml, targets.yaml, checks/, runbooks, results",
        description="Report every problem at once as FILE:LINE: MESSAGE; exit 2 if any.",
    )
    # also after the command, so a pre-commit hook's `args: [--root, kb]` works
    p.add_argument("--root", default=argparse.SUPPRESS, help="the knowledge base folder")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text (FILE:LINE: MESSAGE), json, sarif (SARIF 2.1.0) or github (::error annotations)",
    )
    p.set_defaults(handler=handle)


def collect_problems(root: Path) -> tuple[KnowledgeBase, list[Problem]]:
    """factbook.knowledge.linters.collect_problems, imported when `lint` runs (not at CLI start)."""
    from factbook.knowledge.linters import collect_problems as collect

    return collect(root)


def handle(args: argparse.Namespace) -> int:
    kb, problems = collect_problems(Path(args.root))
    from factbook.runbooks.lint import runbooks_unchecked

    unchecked = runbooks_unchecked(kb)
    if unchecked:
        from factbook.knowledge.install_source import hint

        print(
            f"warning: {unchecked} runbook(s) not checked: runbook lint needs the 'runbooks' "
            f"extra: {hint('runbooks')}",
            file=sys.stderr,
        )
    fmt = getattr(args, "format", "text")
    sys.stdout.write(render(fmt, problems, root=Path(args.root)))
    if problems:
        print(f"{len(problems)} problem(s) in {args.root}", file=sys.stderr)
        return EXIT_INVALID
    print(
        f"ok: {len(kb.facts)} facts, {len(kb.milestones)} milestones, "
        f"{len(kb.targets)} targets, {sum(1 for f in kb.facts.values() if f.check)} checks",
        # machine formats keep stdout for the document
        file=sys.stdout if fmt == "text" else sys.stderr,
    )
    return 0
