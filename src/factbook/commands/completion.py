"""`factbook completion bash|zsh|fish [--install]`: shell completion
(factbook/integrations/completion.py), and the hidden `factbook __complete INDEX WORD...`
the shell functions call."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    from factbook.integrations.completion import SHELLS

    p = sub.add_parser(
        "completion",
        help="print or --install shell completion (bash, zsh, fish)",
        description=(
            "Print the completion script for SHELL, or write it where the shell loads it "
            "(--install). It completes subcommands, options, fact ids, targets, categories, "
            "tags, runbooks and step names of the knowledge base given by --root or "
            "$FACTBOOK_ROOT. See docs/integrations.md."
        ),
    )
    p.add_argument("shell", choices=SHELLS)
    p.add_argument("--install", action="store_true", help="write it to the user's completions")
    p.set_defaults(handler=handle)
    hidden = sub.add_parser("__complete")  # no help=: not listed
    hidden.add_argument("index", type=int)
    hidden.add_argument("words", nargs=argparse.REMAINDER)
    hidden.set_defaults(handler=handle_complete)


def handle(args: argparse.Namespace) -> int:
    from factbook.integrations.completion import SCRIPTS, install

    if not args.install:
        sys.stdout.write(SCRIPTS[args.shell])
        return 0
    for path in install(args.shell):
        print(f"wrote {path}", file=sys.stderr)
    if args.shell == "zsh":
        print(f"add to ~/.zshrc before compinit: fpath=({path.parent} $fpath)", file=sys.stderr)
    return 0


def handle_complete(args: argparse.Namespace) -> int:
    from factbook.integrations.completion import candidates

    if args.words:
        for word in candidates(args.words, args.index, parser=args.whole_parser()):
            print(word)
    return 0
