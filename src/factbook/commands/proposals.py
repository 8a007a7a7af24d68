"""`factbook proposals list|show|accept|reject`: review what an assistant proposed over MCP.

A proposal file is written by whoever can write proposals/ (an assistant, anyone with write
access to the knowledge base): every field of it printed here goes through `_field`, so a
summary or reason cannot repaint the terminal or start a line of its own (`::error::` in CI).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from factbook.commands.cli_options import add_json_option
from factbook.judging.sanitize import for_terminal


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "proposals",
        help="review proposed facts and changes (from `factbook mcp`): list, show, accept, reject",
        description=(
            "Proposals wait in proposals/ as YAML files, each with who proposed it, why, and "
            "the diff it makes. accept applies it to the facts as they are now (comments "
            "kept, lint clean, or refused with the problems) and files it under "
            "proposals/accepted/; reject files it under proposals/rejected/ with your reason."
        ),
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="the pending proposals, oldest first")
    add_json_option(listing, "proposals")
    listing.set_defaults(handler=handle_list)
    show = actions.add_parser("show", help="one proposal: why, and the diff it makes now")
    show.add_argument("pid", metavar="ID")
    show.set_defaults(handler=handle_show)
    accept = actions.add_parser("accept", help="apply proposals to facts/ (lint clean)")
    accept.add_argument("pids", nargs="+", metavar="ID")
    accept.set_defaults(handler=handle_accept)
    reject = actions.add_parser("reject", help="set proposals aside, with why")
    reject.add_argument("pids", nargs="+", metavar="ID")
    reject.add_argument("--why", default="", help="the reason, kept with the proposal")
    reject.set_defaults(handler=handle_reject)


def _field(value: Any, limit: int = 4000) -> str:
    """A field of a proposal file for one terminal line: controls, line breaks and bidi
    characters shown escaped, at most `limit` characters."""
    return for_terminal(value, limit=limit)


def handle_list(args: argparse.Namespace) -> int:
    from factbook.dumps.capture.review import pending

    unreadable: list[str] = []  # listed after the readable ones; the exit code says so
    found = pending(Path(args.root), unreadable)
    code = 2 if unreadable else 0
    for problem in unreadable:
        print(f"factbook: error: {_field(problem)}", file=sys.stderr)
    if args.json:
        rows = [
            {k: p.data.get(k) for k in ("id", "created", "origin", "summary", "reason")}
            for p in found
        ]
        print(json.dumps(rows, indent=1, default=str))
        return code
    for proposal in found:
        reason = " ".join(str(proposal.data.get("reason", "")).split())
        reason = _field(reason if len(reason) <= 70 else reason[:67] + "...")
        origin = _field(proposal.data.get("origin"), 100)
        print(f"{_field(proposal.pid, 100)}  {_field(proposal.summary)}  ({origin}: {reason})")
    print(f"({len(found)} pending" + (f", {len(unreadable)} unreadable)" if unreadable else ")"))
    return code


def handle_show(args: argparse.Namespace) -> int:
    from factbook.dumps.capture.review import plan, read

    found = read(Path(args.root), args.pid)
    print(f"{_field(found.pid, 100)}: {_field(found.summary)}")
    for key in ("created", "origin", "reason"):
        if found.data.get(key):
            print(f"  {key}: {_field(found.data[key])}")
    applied, _ = plan(Path(args.root), found.item, found.pid)  # the diff it makes today
    sys.stdout.write("\n" + applied.diff)
    return 0


def handle_accept(args: argparse.Namespace) -> int:
    from factbook.dumps.capture.review import accept

    for pid in args.pids:
        found, written, _ = accept(Path(args.root), pid)
        files = ", ".join(str(p.relative_to(Path(args.root).resolve())) for p in written)
        print(f"accepted {_field(found.pid, 100)}: {_field(found.summary)} -> {files}")
    return 0


def handle_reject(args: argparse.Namespace) -> int:
    from factbook.dumps.capture.review import reject

    for pid in args.pids:
        found = reject(Path(args.root), pid, args.why)
        print(f"rejected {_field(found.pid, 100)}: {_field(found.summary)}")
    return 0
