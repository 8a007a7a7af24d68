"""`factbook init DIR`: start a new knowledge base (factbook.knowledge.starter does the work)."""

from __future__ import annotations

import argparse

from factbook.knowledge.install_source import parse_spec
from factbook.knowledge.starter import create_kb


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "init",
        help="start a new knowledge base in DIR (targets, facts from this machine, handbook, CI)",
        description=(
            "Write a knowledge base that works at once: targets.yaml with `local`, facts "
            "proposed by `factbook discover --target local`, milestones.yaml, a sample "
            "runbook, mkdocs.yml using the factbook plugin, .gitignore and a CI workflow. "
            "The CI installs factbook the way this copy was installed (a wheel or sdist is "
            "copied into vendor/), unless --install-spec says otherwise."
        ),
    )
    p.add_argument("dir", metavar="DIR", help="a new or empty folder")
    p.add_argument("--name", help="the handbook's name (default: the folder's name)")
    p.add_argument("--no-discover", action="store_true", help="do not probe this machine for facts")
    p.add_argument(
        "--install-spec",
        metavar="SPEC",
        help="how the CI installs factbook: a wheel or sdist (copied into vendor/), a folder, "
        "a URL (git+https://...@TAG) or a requirement (factbook==0.1.0); default: as this "
        "copy was installed",
    )
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    install = parse_spec(args.install_spec) if args.install_spec else None
    started = create_kb(args.dir, name=args.name, discover=not args.no_discover, install=install)
    for note in started.notes:
        print(note)
    print(
        f"created {started.root}: {len(started.written)} files, "
        f"{started.discovered} facts discovered on this machine\n"
        f"the CI installs factbook {started.install.how}\n"
        "  (FACTBOOK_INSTALL in .github/workflows/factbook.yml; --install-spec chooses)\n"
        f"next: cd {started.root} && factbook lint && verify-facts --target local "
        "&& factbook status && mkdocs serve"
    )
    return 0
