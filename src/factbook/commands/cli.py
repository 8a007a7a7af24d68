"""The `factbook` command line: one subcommand per module in factbook.commands.

Each command module exposes `register(subparsers)`; handlers import their heavy dependencies
themselves, so `factbook list` never pays for paramiko, nbclient or mkdocs, and a command
whose extra is not installed says which one to install (commands/extras.py). Every
FactbookError becomes a message and its exit code; no user error ends in a traceback.
`--root` is accepted before or after the subcommand; without it the knowledge base is found
upwards from the current directory (factbook.knowledge.locate).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import importlib
import os
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn

from factbook.commands import streams
from factbook.commands.extras import missing
from factbook.errors import (
    EXIT_INTERRUPTED,
    FactbookError,
    InputError,
    LintFailed,
    WriteFailed,
    visible,
)
from factbook.judging.sanitize import hide_url_passwords
from factbook.knowledge import lasting
from factbook.knowledge.locate import resolve_root
from factbook.store.stamps import FACTBOOK_VERSION as __version__
from factbook.verification import colour

# Which module registers each command name: a run that names its command imports only that
# module (the rest cost ~0.1 s of imports on every run). tests/test_cli_fast.py checks this
# table against what the modules register.
COMMAND_OF = {
    "init": "init",
    "lint": "lint",
    "list": "query",
    "show": "query",
    "schema": "schema_cmd",
    "verify": "verify",
    "discover": "discover",
    "status": "status",
    "docs": "docs",
    "run": "run",
    "eagle3": "eagle3",
    "bench": "bench",
    "launch-lint": "launch_lint",
    "import": "import_cmd",
    "proposals": "proposals",
    "mcp": "mcp_cmd",
    "serve": "serve",
    "export-ansible": "export_ansible",
    "completion": "completion",
    "__complete": "completion",
}
# every command module once, in the order --help lists their commands
COMMAND_MODULES = list(dict.fromkeys(COMMAND_OF.values()))
GLOBAL_WITH_VALUE = ("--root", "--color")

EPILOG = """\
exit codes: 0 ok, 1 some checks failed, 2 invalid input or usage (or a missing extra),
3 some checks errored, a target was unreachable or is not the box it claims, 4 a runbook
kernel died, 130 interrupted.

Start with `factbook init DIR` (a new knowledge base) or `factbook lint` in one, then
`factbook list --category pitfalls`, `factbook show ID`, `verify-facts --target NAME`,
`factbook status`, `mkdocs serve`.
"""

ROOT_HELP = "the knowledge base (a folder holding facts/); default: $FACTBOOK_ROOT, else upwards"
COLOR_CHOICES = ("auto", "always", "never")
COLOR_HELP = "colour in the terminal: auto (a terminal and no NO_COLOR), always, never"


def command_named(argv: Sequence[str]) -> str | None:
    """The subcommand argv names, when it is plain to see (global options spelled out in full
    before it); None otherwise, and then the whole parser is built."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in GLOBAL_WITH_VALUE:
            i += 2
        elif word.startswith(tuple(f"{o}=" for o in GLOBAL_WITH_VALUE)):
            i += 1
        elif word.startswith("-"):
            return None
        else:
            return word if word in COMMAND_OF else None
    return None


class _Parser(argparse.ArgumentParser):
    """argparse's parser whose own error lines (`invalid choice: 'ssh://ops:PASS@h'`) show
    what they quote as every other error line does: a URL's password as `***`, control and
    bidi characters escaped. Subparsers are made of the same class."""

    def error(self, message: str) -> NoReturn:
        super().error(visible(hide_url_passwords(message)))


def build_parser(prog: str = "factbook", *, only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with prog='verify-facts' the verify command is named so.

    `only` (a command name) registers just the module of that command: what a run needs to
    parse its own arguments, with the same usage lines and messages."""
    parser = _Parser(
        prog="factbook",
        description="A living, verifiable handbook: facts in YAML, checked live on the box.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"factbook {__version__}")
    parser.add_argument("--root", default=None, help=ROOT_HELP)
    parser.add_argument("--color", choices=COLOR_CHOICES, default="auto", help=COLOR_HELP)
    # a handler that needs every command's options (shell completion) builds them on demand
    parser.set_defaults(whole_parser=build_parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in [COMMAND_OF[only]] if only in COMMAND_OF else COMMAND_MODULES:
        try:
            module = importlib.import_module(f"factbook.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"factbook.commands.{name}":
                continue  # a command this installation does not ship
            raise
        module.register(sub)
    if only is not None and only not in sub.choices:  # not shipped here: the whole parser
        return build_parser(prog)
    for command in sub.choices.values():
        _accept_root(command)
    if prog == "verify-facts":
        sub.choices["verify"].prog = prog
    return parser


def _accept_root(parser: argparse.ArgumentParser) -> None:
    """`--root` and `--color` after the subcommand too (and after a sub-subcommand):
    pre-commit hooks and users put them there. SUPPRESS keeps a value given before it."""
    options = {o for action in parser._actions for o in action.option_strings}
    if "--root" not in options:
        parser.add_argument("--root", default=argparse.SUPPRESS, help=ROOT_HELP)
    if "--color" not in options:
        parser.add_argument(
            "--color", choices=COLOR_CHOICES, default=argparse.SUPPRESS, help=COLOR_HELP
        )
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _accept_root(child)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def run(argv: Sequence[str] | None = None, *, prog: str = "factbook") -> int:
    """Parse and dispatch; return the exit code."""
    streams.guard()  # a closed stream, an output that cannot encode: before anything prints
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(prog, only=command_named(words))
    args, unknown = parser.parse_known_args(words)
    if unknown:  # the subcommand's usage line (verify-facts' own), not the top-level one
        chosen = _subparsers(parser).get(getattr(args, "command", None) or "", parser)
        chosen.error(f"unrecognized arguments: {' '.join(unknown)}")  # _Parser hides passwords
    colour.set_mode(args.color)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    args.root = str(resolve_root(args.root))
    try:
        try:
            return int(args.handler(args) or 0)
        except ModuleNotFoundError as exc:
            what = prog if prog == "verify-facts" else f"{prog} {args.command}"
            error = missing(exc, f"`{what}`")
            if error is None:
                raise
            raise error from exc
    except LintFailed as exc:
        for problem in exc.problems:
            print(hide_url_passwords(str(problem)), file=sys.stderr)
        print(f"{len(exc.problems)} problem(s)", file=sys.stderr)
        return exc.exit_code
    except FactbookError as exc:
        # a URL's password the message quotes (`--target ssh://ops:PASS@h`, `bench --url`,
        # `run --target`, --limit) is `***` here, whatever command or check quoted it
        message = _no_command_lines(visible(hide_url_passwords(str(exc)), keep="\n"))
        print(f"{prog}: error: {message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except RecursionError:  # the floor under the bounded walks and parsers: never a traceback
        print(f"{prog}: error: {_TOO_DEEP}", file=sys.stderr)
        return InputError.exit_code
    except OSError as exc:
        if isinstance(exc, streams.OutputClosed) or (
            exc.filename is None and exc.errno in _STREAM_FULL  # the output: > /dev/full
        ):
            return _output_failed(prog, exc)
        print(f"{prog}: error: {_refused(exc)}", file=sys.stderr)
        return WriteFailed.exit_code


# what a RecursionError says: Python's own recursion (pathlib's rglob over a folder tree
# thousands deep, a parser over thousands of nested brackets) met something no bound before it
# caught; each one found is bounded where it is read (knowledge/walk.py, yamlsrc's depth)
_TOO_DEEP = (
    "a folder tree or a value nested too deeply to read (RecursionError); "
    "look for folders nested thousands deep in the knowledge base"
)


# what writing the standard output meets on a full disk (`factbook list > /dev/full`, a report
# redirected to a full volume): a traceback from the handler's print, or Python's own
# "Exception ignored" and exit 120 when the buffered rest failed at exit
_STREAM_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}


def _output_failed(prog: str, exc: OSError) -> int:
    """One line for output that could not be written, exit 2 (WriteFailed's code)."""
    with contextlib.suppress(OSError, ValueError):
        print(f"{prog}: error: cannot write the output ({exc.strerror})", file=sys.stderr)
        sys.stderr.flush()
    return WriteFailed.exit_code


# a line a CI runner takes as a command, not text: GitHub Actions' `::error::` and its older
# `##[error]`, each recognised after any leading whitespace
_RUNNER_COMMAND = ("::", "##[")


def _no_command_lines(message: str) -> str:
    """An error message with its line breaks kept where they begin a line of text, and shown
    as `\\n` where the next line would begin with a CI runner's command: a message quoting
    what the user typed (`show 'x<newline>::error::pwned'`, `--target`, `--as-of`, a path)
    printed a line that GitHub Actions runs as a workflow command."""
    lines = message.split("\n")
    out = [lines[0]]
    for line in lines[1:]:
        joint = "\\n" if line.lstrip().startswith(_RUNNER_COMMAND) else "\n"
        out.append(joint + line)
    return "".join(out)


def _refused(exc: OSError) -> str:
    """One line for a file-system refusal that names a path, whichever command met it (a
    read-only or immutable folder, a full disk, a name too long): `export-ansible -o DIR/`
    into a read-only folder was a PermissionError traceback. Only a command's known writes
    say more (WriteFailed); this is the floor under all of them. One that names no path (no
    temporary folder left to write in, a full disk under `import`'s scratch copy) is its
    reason alone."""
    if exc.filename is None:
        return visible(exc.strerror or str(exc) or type(exc).__name__)
    names = [exc.filename] + ([exc.filename2] if exc.filename2 is not None else [])
    where = " -> ".join(visible(os.fsdecode(n) if isinstance(n, bytes) else str(n)) for n in names)
    return f"{where}: {exc.strerror or type(exc).__name__}"


def main() -> None:
    lasting.turn_on()
    leave(run())


def verify_facts_main() -> None:
    """`verify-facts ...` is `factbook verify ...`, under its own name in usage and errors."""
    lasting.turn_on()
    leave(run(["verify", *sys.argv[1:]], prog="verify-facts"))


def leave(code: int) -> NoReturn:
    """`sys.exit(code)` without the interpreter's teardown, which frees every object one by
    one: after an import of 1 MB that was 0.07-0.1 s of a 1.3 s command, spent on nothing
    the user sees. What an exit must still do is done first: the atexit functions (logging,
    temporary directories' finalizers), then both streams flushed. With another thread alive
    (it is joined at a normal exit) or a stream that cannot be flushed (a closed pipe), the
    exit is the normal one."""
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError as exc:
        if exc.errno in _STREAM_FULL:  # the output's buffered rest: never written, so say so
            os._exit(_output_failed("factbook", exc))
        sys.exit(code)  # a closed pipe: Python's own exit handles it
    except ValueError:  # a closed stream
        sys.exit(code)
    if threading.active_count() > 1:
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    main()
