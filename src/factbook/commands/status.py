"""`factbook status`: render a status document (Goal … Relevant files) as of any milestone."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from factbook.commands.cli_options import warn_lint_problems
from factbook.knowledge.kb import load_kb_with_problems


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "status",
        help="render a status document in the seeds' structure (as of a milestone, redacted)",
        description=(
            "Render a status document: goal, instructions, discoveries, pitfalls, benchmarks, "
            "training, progress, files, and what changed since the previous status. Written to "
            "docs/status/status-<milestone>.md (--as-of) or docs/status/<date>-status.md."
        ),
    )
    p.add_argument("--as-of", metavar="MILESTONE", help="reproduce that moment (3157, 3478, 4504)")
    p.add_argument(
        "--since",
        metavar="PREVIOUS",
        help="milestone to compare with (default: the one before --as-of; for now: the latest)",
    )
    p.add_argument("--out", metavar="PATH", help="where to write; '-' for stdout")
    p.add_argument(
        "--redact",
        action="store_true",
        help="replace hosts, IPs, users, key paths, secrets and credential-shaped tokens",
    )
    live = p.add_mutually_exclusive_group()
    live.add_argument(
        "--results",
        dest="results",
        action="store_true",
        default=None,
        help="use results/latest.json for marks even with --as-of",
    )
    live.add_argument(
        "--no-results", dest="results", action="store_false", help="ignore results/latest.json"
    )
    p.set_defaults(handler=handle_status)


def handle_status(args: argparse.Namespace) -> int:
    from factbook.dumps.status import StatusOptions, default_path, render_status, write_status

    kb, problems = load_kb_with_problems(Path(args.root))
    warn_lint_problems(len(problems))
    options = StatusOptions(
        as_of=args.as_of, since=args.since, redact=args.redact, results=args.results
    )
    text = render_status(kb, options)
    if args.out == "-":
        sys.stdout.write(text)
        return 0
    path = Path(args.out) if args.out else default_path(kb, options)
    write_status(path, text, kb_root=kb.root)
    print(path)
    return 0
