"""`factbook proposals list|show|accept|reject`: review what an assistant proposed over MCP."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from factbook.commands.cli_options import add_json_option


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


def handle_list(args: argparse.Namespace) -> int:
    from factbook.dumps.capture.review import pending

    found = pending(Path(args.root))
    if args.json:
        rows = [
            {k: p.data.get(k) for k in ("id", "created", "origin", "summary", "reason")}
            for p in found
        ]
        print(json.dumps(rows, indent=1, default=str))
        return 0
    for proposal in found:
        reason = " ".join(str(proposal.data.get("reason", "")).split())
        reason = reason if len(reason) <= 70 else reason[:67] + "..."
        print(f"{proposal.pid}  {proposal.summary}  ({proposal.data.get('origin')}: {reason})")
    print(f"({len(found)} pending)")
    return 0


def handle_show(args: argparse.Namespace) -> int:
    from factbook.dumps.capture.review import plan, read

    found = read(Path(args.root), args.pid)
    print(f"{found.pid}: {found.summary}")
    for key in ("created", "origin", "reason"):
        if found.data.get(key):
            print(f"  {key}: {found.data[key]}")
    applied, _ = plan(Path(args.root), found.item, found.pid)  # the diff it makes today
    sys.stdout.write("\n" + applied.diff)
    return 0


def handle_accept(args: argparse.Namespace) -> int:
    from factbook.dumps.capture.review import accept

    for pid in args.pids:
        found, written, _ = accept(Path(args.root), pid)
        files = ", ".join(str(p.relative_to(Path(args.root).resolve())) for p in written)
        print(f"accepted {found.pid}: {found.summary} -> {files}")
    return 0


def handle_reject(args: argparse.Namespace) -> int:
    from factbook.dumps.capture.review import reject

    for pid in args.pids:
        found = reject(Path(args.root), pid, args.why)
        print(f"rejected {found.pid}: {found.summary}")
    return 0
