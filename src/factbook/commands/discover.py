"""`factbook discover --target T`: snapshot a live box, show proposed facts, --write to apply."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from factbook.commands.cli_options import add_target_options, seconds, transport_options
from factbook.errors import EXIT_ERRORED, EXIT_OK, UsageError
from factbook.knowledge.fleet.load import add_inventories
from factbook.knowledge.kb import load_kb
from factbook.store.stamps import new_run_id
from factbook.verification.discover import apply, discover, render
from factbook.verification.engine import VerifyOptions
from factbook.verification.targets import resolve_targets


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "discover",
        help="snapshot a live box and propose new or changed facts (--write applies)",
        description=(
            "Observe hardware, versions and paths on a target and compare with facts/: "
            "+ new fact, ~ changed value, = unchanged. --write appends new facts to "
            "facts/discovered-TARGET.yaml and updates changed values in place (comments and "
            "order kept; statements never overwritten)."
        ),
    )
    add_target_options(p)
    p.add_argument("--write", action="store_true", help="apply the proposals to facts/")
    p.add_argument("--all", action="store_true", help="also list unchanged and absent items")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("-j", "--jobs", type=int, default=16)
    p.add_argument("--timeout", type=seconds, default=60.0)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    kb = load_kb(args.root, strict=False)
    if not args.target:
        raise UsageError("discover needs --target NAME (or ssh://user@host)")
    kb.targets, kb.groups = add_inventories(kb.targets, kb.groups, args.inventory)
    targets, names = resolve_targets(kb, args.target, limit=args.limit, exclude=args.exclude)
    run_id = new_run_id(names, suffix="discover")
    options = VerifyOptions(jobs=args.jobs, timeout=args.timeout, transport=transport_options(args))
    proposals = discover(kb, targets, names, options, run_id=run_id)
    if args.format == "json":
        print(json.dumps([asdict(p) for p in proposals], indent=1, default=str))
    else:
        sys.stdout.write(render(proposals, show_same=args.all))
    if args.write:
        for note in apply(Path(kb.root), proposals, run_id):
            print(note, file=sys.stderr)
    elif any(p.kind in ("new", "changed") for p in proposals) and args.format == "text":
        print("(dry run: --write applies these)", file=sys.stderr)
    if proposals and all(p.kind == "error" for p in proposals):
        return EXIT_ERRORED
    return EXIT_OK
