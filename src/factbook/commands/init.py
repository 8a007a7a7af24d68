"""`factbook init DIR`: start a new knowledge base (factbook.knowledge.starter does the work)."""

from __future__ import annotations

import argparse

from factbook.knowledge.starter import create_kb


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "init",
        help="start a new knowledge base in DIR (targets, facts from this machine, handbook, CI)",
        description=(
            "Write a knowledge base that works at once: targets.yaml with `local`, facts "
            "proposed by `factbook discover --target local`, milestones.yaml, a sample "
            "runbook, mkdocs.yml using the factbook plugin, .gitignore and a CI workflow."
        ),
    )
    p.add_argument("dir", metavar="DIR", help="a new or empty folder")
    p.add_argument("--name", help="the handbook's name (default: the folder's name)")
    p.add_argument("--no-discover", action="store_true", help="do not probe this machine for facts")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    started = create_kb(args.dir, name=args.name, discover=not args.no_discover)
    for note in started.notes:
        print(note)
    print(
        f"created {started.root}: {len(started.written)} files, "
        f"{started.discovered} facts discovered on this machine\n"
        f"next: cd {started.root} && factbook lint && verify-facts --target local "
        "&& factbook status && mkdocs serve"
    )
    return 0
