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
    p.add_argument(
        "--budget",
        metavar="TOKENS",
        type=_tokens,
        help="a dense dump within TOKENS tokens (characters / 4), chosen by priority; what does "
        "not fit is counted and named by id (docs/status-documents.md#budgeted-dumps)",
    )
    p.add_argument(
        "--format",
        choices=("markdown", "json"),
        default="markdown",
        help="json: the budgeted dump's selection as data (needs --budget; default: stdout)",
    )
    p.add_argument(
        "--ids",
        action="store_true",
        help="with --budget: name every fact's id in its group line (longer; `factbook import` "
        "into another knowledge base then keeps the ids)",
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


def _tokens(text: str) -> int:
    """A token budget: a positive whole number (argparse reports anything else, exit 2)."""
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of tokens: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 token, not {value}")
    return value


def handle_status(args: argparse.Namespace) -> int:
    from factbook.dumps.status import StatusOptions, default_path, render_status, write_status
    from factbook.dumps.status.budget import budget_path, render_budgeted
    from factbook.errors import UsageError

    if args.format == "json" and args.budget is None:
        raise UsageError("--format json needs --budget TOKENS (the selection it describes)")
    kb, problems = load_kb_with_problems(Path(args.root))
    warn_lint_problems(len(problems))
    if args.ids and args.budget is None:
        raise UsageError("--ids needs --budget TOKENS (the full document names every id)")
    options = StatusOptions(
        as_of=args.as_of, since=args.since, redact=args.redact, results=args.results, ids=args.ids
    )
    if args.budget is not None:
        dump = render_budgeted(kb, options, args.budget)
        if args.format == "json":
            text = dump.json()
            if args.out is None:
                args.out = "-"
        else:
            text = dump.text
    else:
        text = render_status(kb, options)
    if args.out == "-":
        sys.stdout.write(text)
        return 0
    if args.out:
        path = Path(args.out)
    elif args.budget is not None:
        path = budget_path(default_path(kb, options), args.budget)
    else:
        path = default_path(kb, options)
    write_status(path, text, kb_root=kb.root)
    print(path)
    return 0
