"""`factbook mcp`: serve the knowledge base to an AI assistant over MCP (stdio)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from factbook.commands import streams
from factbook.errors import UsageError
from factbook.knowledge import lasting


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve the knowledge base to AI assistants over MCP (stdio)",
        description=(
            "Run a Model Context Protocol server over stdin/stdout for one knowledge base: "
            "tools search_facts, show_fact, verify_facts, propose_fact, propose_change, "
            "status_brief, check_launch, match_pitfalls; resources factbook://status and "
            "factbook://fact/ID. Proposals wait in proposals/ for `factbook proposals accept` "
            "unless factbook.yaml sets mcp.write_facts. Register it with your assistant "
            "(docs/mcp.md); it is not meant to be run by hand."
        ),
    )
    p.add_argument(
        "--run-kb-probes",
        action="store_true",
        help="let verify_facts run the knowledge base's own code: its probes (checks/*.py) and "
        "the commands its targets name (exec:, ProxyCommand, its ssh configs, srun prologs, a "
        "local agent's python/env); without it only factbook's built-in probes run and the "
        "others are reported as errors (trust the knowledge base's code before giving it)",
    )
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    lasting.turn_off()  # a server: what each request makes is freed when it ends
    root = Path(args.root)
    if isinstance(sys.stdout, streams.ClosedOutput):  # on /dev/null: it would answer no one
        raise streams.OutputClosed()
    if not (root / "facts").is_dir():
        raise UsageError(f"{root}: not a knowledge base (no facts/ folder); give --root")
    from factbook.integrations.mcp.settings import load_settings

    settings = load_settings(root)  # a wrong factbook.yaml stops here, with its file:line
    from factbook.integrations.mcp.server import serve

    serve(root, settings=settings, run_kb_probes=args.run_kb_probes)
    return 0
