"""`factbook proposals list|show|accept|reject`: review what an assistant proposed over MCP.

A proposal file is written by whoever can write proposals/ (an assistant, anyone with write
access to the knowledge base): every field of it printed here goes through `_field`, so a
summary or reason cannot repaint the terminal or start a line of its own (`::error::` in CI).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from factbook.commands.cli_options import add_json_option
from factbook.errors import InputError
from factbook.judging.sanitize import for_line, for_terminal

if TYPE_CHECKING:
    from factbook.dumps.capture.review import Pending

# A proposal id as `new_pid` makes one and `proposals show/accept` takes one: ASCII letters,
# digits and '-'. A file named otherwise in proposals/ cannot be shown or accepted by name.
_PID = re.compile(r"[A-Za-z0-9-]{1,100}")
LIST_FIELD_CHARS = 120  # the most of a summary `proposals list` shows on its one line


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


def _field(value: Any, limit: int = 4000) -> str:
    """A field of a proposal file for one terminal line: controls, line breaks and bidi
    characters shown escaped, at most `limit` characters."""
    return for_terminal(value, limit=limit)


def _not_the_named(proposal: Pending) -> str | None:
    """Why a proposal file is not the proposal its name says, if it is not: a name that is
    no proposal id (a newline in it was listed as a proposal of its own), or an `id:` of
    another shape or naming another proposal (it was ignored: the file was shown and accepted
    under its name whatever it said). factbook writes `id:` as the file's name, always."""
    where = for_line(f"proposals/{proposal.path.name}", limit=200)
    if _PID.fullmatch(proposal.pid) is None:
        return f"{where}: not named by a proposal id (letters, digits and '-'); left out"
    said = proposal.data.get("id")
    if said != proposal.pid:
        shown = for_terminal(repr(said) if not isinstance(said, str) else said, limit=100)
        return f"{where}: its id: is {shown}, not {proposal.pid}; not a proposal of this name"
    return None


def _item_line(proposal: Pending) -> int:
    """The line of a proposal file's `item:` key (1 when it has none at the top level)."""
    try:
        text = proposal.path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 1
    for number, line in enumerate(text.splitlines()[:100_000], 1):
        if line.startswith(("item:", '"item":', "'item':")):
            return number
    return 1


@contextlib.contextmanager
def _proposal_named(proposal: Pending) -> Iterator[None]:
    """An InputError about what a proposal would do (it would not lint clean, its fact
    exists, nothing would change) names the proposal file and its `item:` line, as every
    other input error names its file: it said only `new fact x would not lint clean: ...`."""
    where = for_line(f"proposals/{proposal.path.name}", limit=200)
    try:
        yield
    except InputError as exc:
        if str(exc).startswith((where, str(proposal.path))):
            raise
        raise type(exc)(f"{where}:{_item_line(proposal)}: {exc}") from None


def _checked(root: Path, pid: str) -> Pending:
    """The pending proposal `pid`, InputError when its file says it is another one."""
    from factbook.dumps.capture.review import read

    found = read(root, pid)
    problem = _not_the_named(found)
    if problem is not None:
        raise InputError(problem)
    return found


def _one_line(value: Any, limit: int) -> str:
    """`value` as at most `limit` characters of one line (runs of white space as one
    space), then escaped for a terminal: `list` shows one bounded line per proposal."""
    text = " ".join(str(value if value is not None else "").split())
    return _field(text if len(text) <= limit else text[: limit - 3] + "...", limit + 400)


def handle_list(args: argparse.Namespace) -> int:
    from factbook.dumps.capture.review import pending

    unreadable: list[str] = []  # listed after the readable ones; the exit code says so
    found = []
    for proposal in pending(Path(args.root), unreadable):
        problem = _not_the_named(proposal)
        if problem is None:
            found.append(proposal)
        else:
            unreadable.append(problem)
    code = 2 if unreadable else 0
    for problem in unreadable:
        print(f"factbook: error: {_field(problem)}", file=sys.stderr)
    if args.json:
        rows = [
            {k: p.data.get(k) for k in ("id", "created", "origin", "summary", "reason")}
            for p in found
        ]
        print(json.dumps(rows, indent=1, default=str))
        return code
    for proposal in found:
        reason = _one_line(proposal.data.get("reason", ""), 70)
        origin = _one_line(proposal.data.get("origin"), 40)
        summary = _one_line(proposal.summary, LIST_FIELD_CHARS)
        print(f"{proposal.pid}  {summary}  ({origin}: {reason})")
    print(f"({len(found)} pending" + (f", {len(unreadable)} unreadable)" if unreadable else ")"))
    return code


def handle_show(args: argparse.Namespace) -> int:
    from factbook.dumps.capture.review import plan

    found = _checked(Path(args.root), args.pid)
    print(f"{_field(found.pid, 100)}: {_field(found.summary)}")
    for key in ("created", "origin", "reason"):
        if found.data.get(key):
            print(f"  {key}: {_field(found.data[key])}")
    with _proposal_named(found):
        applied, _ = plan(Path(args.root), found.item, found.pid)  # the diff it makes today
    sys.stdout.write("\n" + applied.diff)
    return 0


def handle_accept(args: argparse.Namespace) -> int:
    from factbook.dumps.capture.review import accept

    for pid in args.pids:
        with _proposal_named(_checked(Path(args.root), pid)):
            found, written, _ = accept(Path(args.root), pid)
        files = ", ".join(str(p.relative_to(Path(args.root).resolve())) for p in written)
        print(f"accepted {_field(found.pid, 100)}: {_field(found.summary)} -> {files}")
    return 0


def handle_reject(args: argparse.Namespace) -> int:
    from factbook.dumps.capture.review import reject

    for pid in args.pids:
        _checked(Path(args.root), pid)
        found = reject(Path(args.root), pid, args.why)
        print(f"rejected {_field(found.pid, 100)}: {_field(found.summary)}")
    return 0
