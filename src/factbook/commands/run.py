"""`factbook run RUNBOOK`: execute a runbook's steps on one kernel, or show them (--dry-run).

Exit codes: 0 every step ran, 1 a step failed or timed out, 2 invalid runbook / usage /
destructive step refused, 4 the kernel died, 130 Ctrl-C (the run record is saved; continue
with --resume).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from factbook.commands.cli_options import (
    add_repeatable,
    option_values,
    seconds,
    warn_lint_problems,
)
from factbook.errors import EXIT_INVALID, EXIT_OK, UsageError
from factbook.knowledge.names import known_names, shown

# RunOptions fields that take the option of the same name as it was given
OPTIONS_AS_GIVEN = ("start", "until", "resume", "yes", "target", "timeout", "skip_requires")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run a runbook step by step (or --dry-run, --step, --from/--until, --resume)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "runbook",
        metavar="RUNBOOK",
        nargs="?",
        help="a name in runbooks/ (sglang-base) or a path to a .md runbook",
    )
    p.add_argument("--list", action="store_true", help="list runbooks and their last run")
    add_repeatable(
        p,
        "--step",
        metavar="NAME",
        help="run only this step (repeatable); earlier setup steps run too",
    )
    p.add_argument("--from", dest="start", metavar="NAME", help="start at this step")
    p.add_argument("--until", metavar="NAME", help="stop after this step")
    p.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="RUN_ID",
        help="continue after the last successful step of RUN_ID "
        "(default: the newest unfinished run)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print each step with the facts it uses resolved; execute nothing",
    )
    p.add_argument(
        "--yes", "-y", action="store_true", help="run destructive steps without asking (CI)"
    )
    p.add_argument("--target", help="run on this target instead of the runbook's")
    add_repeatable(
        p, "--inventory", "-i", metavar="FILE",
        help="also read targets from an Ansible inventory or ssh config",
    )  # fmt: skip
    p.add_argument("--timeout", type=seconds, metavar="SECONDS", help="limit for the whole run")
    p.add_argument(
        "--skip-requires", action="store_true", help="do not verify the steps' required facts first"
    )
    p.add_argument("--quiet", action="store_true", help="do not stream step output")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from factbook.knowledge.fleet.load import add_inventories
    from factbook.knowledge.kb import load_kb_with_problems
    from factbook.runbooks.dryrun import print_dry_run
    from factbook.runbooks.executor import Executor, RunOptions
    from factbook.runbooks.format import find_runbook, load_runbook, select_steps
    from factbook.runbooks.lint import lint_runbook

    root = Path(args.root).resolve()
    kb, kb_problems = load_kb_with_problems(root)
    kb.targets, kb.groups = add_inventories(kb.targets, kb.groups, args.inventory)
    if args.list or not args.runbook:
        return _list(kb)
    runbook = load_runbook(find_runbook(root, args.runbook), root)
    problems = lint_runbook(kb, runbook)
    if problems:
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"{len(problems)} problem(s) in {runbook.display}; not running it", file=sys.stderr)
        return EXIT_INVALID
    warn_lint_problems(len(kb_problems), "in the knowledge base")
    options = RunOptions(
        steps=args.step, live=not args.quiet, **option_values(args, *OPTIONS_AS_GIVEN)
    )
    executor = Executor(kb, runbook, options)
    if args.dry_run:
        if args.resume is not None:
            steps, _ = executor.plan()
        else:
            steps = select_steps(runbook, only=args.step, start=args.start, until=args.until)
        target = args.target or runbook.target
        if target is not None and target not in kb.targets:  # the CLI's one error line
            known = known_names(kb.targets)  # (escaped, a URL's password hidden), as run's
            raise UsageError(f"unknown target '{shown(target)}' (known: {known})")
        unresolved = print_dry_run(kb, runbook, steps, target, sys.stdout)
        return EXIT_INVALID if unresolved else EXIT_OK
    return executor.run()


def _list(kb: object) -> int:
    """One line per runbook; a run record is anyone's file, so its status and run id (and
    the runbook's title and target) are shown escaped: an ESC or a line break in a record
    repainted the terminal or started a line of its own (`::error::` in CI)."""
    from factbook.judging.sanitize import for_terminal
    from factbook.runbooks.format import load_runbook, runbook_paths
    from factbook.runbooks.record import list_runs

    root = kb.root  # type: ignore[attr-defined]
    for path in runbook_paths(root):
        runbook = load_runbook(path, root)
        runs = list_runs(root, runbook.name)
        last = f"{runs[0].status} {runs[0].run_id}" if runs else "never run"
        target = for_terminal(runbook.target or "-", limit=200)
        print(
            f"{for_terminal(runbook.name, limit=200):28} {len(runbook.steps):2} steps  "
            f"{target:10} {for_terminal(last, limit=200):40} {for_terminal(runbook.title)}"
        )
    return EXIT_OK
