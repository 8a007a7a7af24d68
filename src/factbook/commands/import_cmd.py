"""`factbook import DUMP.md --milestone M`: propose facts from a status dump, as a diff."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import",
        help="propose facts from a status document (a seed or `factbook status` output)",
        description=(
            "Read a status document in the seeds' structure and propose one fact per bullet or "
            "table row, matched against the knowledge base: new, changed (the old fact ends at "
            "the milestone), contradicted (the old fact is refuted) or unchanged (nothing "
            "proposed). Prints the proposals and a unified diff of the fact files; --write "
            "applies them (comments kept), and the result lints clean."
        ),
    )
    p.add_argument("dump", metavar="DUMP.md", help="the status document to import")
    p.add_argument(
        "--milestone", required=True, metavar="M", help="the milestone the dump describes"
    )
    p.add_argument("--write", action="store_true", help="apply the proposals to facts/")
    p.add_argument(
        "--accept",
        nargs="+",
        metavar="ID",
        help="apply only these proposals (p<N> from the list, or a fact id)",
    )
    p.add_argument("--quiet", action="store_true", help="print the summary line only, no diff")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from factbook.dumps.capture import counts_line, plan_import, summary, write
    from factbook.judging.sanitize import for_document
    from factbook.knowledge.yamlsrc import sharing

    with sharing():  # --write checks the very texts the plan parsed: no second pass
        result = plan_import(Path(args.root), Path(args.dump), args.milestone, accept=args.accept)
        # the dump's text is shown escaped already (parse.py); the diff's context lines are
        # the knowledge base's own, where lint names a hidden character but a terminal would
        # act on it
        print(for_document(counts_line(result) if args.quiet else summary(result)))
        if not args.quiet and result.applied.diff:
            sys.stdout.write("\n" + for_document(result.applied.diff))
        written = write(result.applied) if args.write else []
    if args.write:
        applied = sum(1 for p in result.accepted if p.clean)
        print(f"wrote {applied} proposal(s) to {len(written)} file(s)", file=sys.stderr)
    return 0
