"""`factbook schema`: the JSON Schema of fact files, for editors."""

from __future__ import annotations

import argparse
import json

from factbook.knowledge.schema import FACT_FILE_SCHEMA, MILESTONES_SCHEMA, TARGETS_SCHEMA

SCHEMAS = {"facts": FACT_FILE_SCHEMA, "milestones": MILESTONES_SCHEMA, "targets": TARGETS_SCHEMA}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "schema",
        help="print the JSON Schema of fact files (or milestones/targets)",
        description=(
            "Print a JSON Schema. Save it as schema/facts.schema.json and start fact files with "
            "'# yaml-language-server: $schema=../schema/facts.schema.json' for completion."
        ),
    )
    p.add_argument("which", nargs="?", choices=sorted(SCHEMAS), default="facts")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    print(json.dumps(SCHEMAS[args.which], indent=2))
    return 0
