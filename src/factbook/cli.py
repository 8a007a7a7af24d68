"""The `factbook` command line: one subcommand per module in factbook.commands.

Each command module exposes `register(subparsers)`; handlers import their heavy dependencies
themselves, so `factbook list` never pays for paramiko, nbclient or mkdocs. Every
FactbookError becomes a message and its exit code; no user error ends in a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from . import __version__, colour
from .errors import EXIT_INTERRUPTED, FactbookError, LintFailed

COMMAND_MODULES = [
    "lint",
    "query",
    "schema_cmd",
    "verify",
    "discover",
    "status",
    "docs",
    "run",
    "eagle3",
    "bench",
    "launch_lint",
    "import_cmd",
    "serve",
    "export_ansible",
    "completion",
]

EPILOG = """\
exit codes: 0 ok, 1 some checks failed, 2 invalid input or usage, 3 some checks errored
or a target was unreachable, 4 a runbook kernel died, 130 interrupted.

Start with `factbook lint`, then `factbook list --category pitfalls`, `factbook show ID`,
`verify-facts --target NAME`, `factbook status --as-of 4504`, `mkdocs serve`.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="factbook",
        description="A living, verifiable handbook: facts in YAML, checked live on the box.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"factbook {__version__}")
    parser.add_argument(
        "--root",
        default=os.environ.get("FACTBOOK_ROOT", "."),
        help="the knowledge base folder (holding facts/); default: $FACTBOOK_ROOT or .",
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour in the terminal: auto (unless NO_COLOR is set), always, never",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"factbook.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"factbook.commands.{name}":
                continue  # a command this installation does not ship
            raise
        module.register(sub)
    return parser


def run(argv: Sequence[str] | None = None) -> int:
    """Parse and dispatch; return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    colour.set_mode(args.color)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        return int(args.handler(args) or 0)
    except LintFailed as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        print(f"{len(exc.problems)} problem(s)", file=sys.stderr)
        return exc.exit_code
    except FactbookError as exc:
        print(f"factbook: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("factbook: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0


def main() -> None:
    sys.exit(run())


def verify_facts_main() -> None:
    """`verify-facts ...` is `factbook verify ...`."""
    argv = sys.argv[1:]
    root_args: list[str] = []
    if argv[:1] and argv[0].startswith("--root"):
        root_args = argv[:2] if argv[0] == "--root" else argv[:1]
        argv = argv[len(root_args) :]
    sys.exit(run([*root_args, "verify", *argv]))


if __name__ == "__main__":
    main()
