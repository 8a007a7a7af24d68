"""`factbook verify` (and `verify-facts`): check facts live on their boxes.

Selection by id or glob, category, tag, status and target; one agent per target; progress on
stderr, the report on stdout (or --output); results kept in results/ (history + latest).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from factbook import api
from factbook.commands.cli_options import (
    add_target_options,
    delay_seconds,
    seconds,
    transport_options,
    warn_lint_problems,
)
from factbook.errors import EXIT_OK, UsageError
from factbook.knowledge.schema import CATEGORIES, STATUSES
from factbook.store.atomic import check_output, write_output
from factbook.verification.colour import MODES, enabled
from factbook.verification.engine import VerifyOptions, default_forks
from factbook.verification.report import FORMATS, Progress, render, render_plan, summary_line
from factbook.verification.run import VerifySettings

# the on/off options, in the order --help lists them
SWITCHES = (
    (
        "--skip-identity",
        "run even if a target's declared identity (targets.yaml) does not match this box",
    ),
    (
        "--skip-elsewhere",
        "skip (with the reason) a target whose declared identity does not match the machine "
        "reached, instead of refusing the run: a CI runner that is not the box",
    ),
    ("--dry-run", "show which check runs where; run none"),
    ("--no-save", "do not write results/"),
    ("--failed", "only facts whose latest result (on any target) drifted or errored"),
    ("--record", "mark facts that passed on every target as verified in facts/ (with a source)"),
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify",
        help="run facts' checks live on their targets (alias: verify-facts)",
        description=(
            "Run the checks of the selected facts on their targets: one agent per target, "
            "checks in parallel. Exit 0 all passed, 1 some failed, 3 some errored, 2 bad usage."
        ),
    )
    p.add_argument("patterns", nargs="*", metavar="ID_OR_GLOB", help="fact ids or globs (hw.*)")
    p.add_argument("-c", "--category", action="append", default=[], choices=CATEGORIES)
    p.add_argument("-t", "--tag", action="append", default=[])
    p.add_argument("-s", "--status", action="append", default=[], choices=STATUSES)
    add_target_options(p)
    p.add_argument("-j", "--jobs", type=int, default=16, help="checks at once per target (16)")
    p.add_argument(
        "-f",
        "--forks",
        type=int,
        default=default_forks(),
        help=f"targets at once (default {default_forks()} on this machine)",
    )
    p.add_argument("--timeout", type=seconds, help="seconds per check that sets none (60)")
    p.add_argument("--retry", type=int, default=0, metavar="N", help="rerun failed checks N times")
    p.add_argument("--retry-delay", type=delay_seconds, default=0.0, metavar="S")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report here, not stdout")
    p.add_argument(
        "--report",
        action="append",
        default=[],
        metavar="FORMAT:FILE",
        help="also write a report in FORMAT to FILE (repeatable), e.g. junit:report.xml",
    )
    for switch, help_text in SWITCHES:
        p.add_argument(switch, action="store_true", help=help_text)
    p.add_argument(
        "--color",
        choices=MODES,
        default=argparse.SUPPRESS,  # as the global option (verify-facts --color never)
        help="colour the table: auto (a terminal, unless NO_COLOR), always, never",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="a line per result on stderr")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.jobs < 1 or args.forks < 1 or args.retry < 0 or args.retry_delay < 0:
        raise UsageError("--jobs and --forks must be >= 1, --retry and --retry-delay >= 0")
    kb = api.load(args.root)
    planned = api.plan(
        kb,
        args.target,
        *args.patterns,
        categories=args.category,
        tags=args.tag,
        statuses=args.status,
        failed_only=args.failed,
        inventories=args.inventory,
        limit=args.limit,
        exclude=args.exclude,
    )
    warn_lint_problems(planned.problems_elsewhere, "in facts not selected")
    plan = planned.plan
    reports = _parse_reports(args.report)
    outputs = [(args.output, f"-o {args.output}")] if args.output else []
    outputs += [(path, f"--report {fmt}:{path}") for fmt, path in reports]
    for path, named in outputs:
        check_output(Path(path), named)  # before the checks run, not after them
    if plan.empty_selection is not None and not plan.checks:
        print(f"no targets: --target {plan.empty_selection!r} selects none", file=sys.stderr)
        return EXIT_OK
    if args.dry_run:
        sys.stdout.write(render_plan(plan))
        print(
            f"({len(plan.checks)} checks on {len({c.target for c in plan.checks})} targets)",
            file=sys.stderr,
        )
        return EXIT_OK
    per_target = Counter(c.target for c in plan.checks)
    progress = Progress(len(plan.checks), verbose=args.verbose, per_target=dict(per_target))
    quiet = args.quiet or (not progress.tty and not args.verbose)
    settings = VerifySettings(
        options=VerifyOptions(
            jobs=args.jobs,
            forks=args.forks,
            timeout=args.timeout,
            retry=args.retry,
            retry_delay=args.retry_delay,
            transport=transport_options(args),
        ),
        save=not args.no_save,
        record=args.record,
        argv=sys.argv[1:],
    )
    run = api.run_plan(
        kb,
        planned,
        settings,
        check_identity=not args.skip_identity,
        skip_elsewhere=args.skip_elsewhere,
        on_result=None if quiet else progress.result,
        on_note=progress.note,
    )
    progress.close()
    if run.saved is not None:
        print(f"results: {run.saved.relative_to(kb.root)}", file=sys.stderr)
    for line in run.recorded:
        print(line, file=sys.stderr)
    for line in run.record_problems:
        print(f"not recorded: {line}", file=sys.stderr)
    categories = {f.id: f.category for f in kb.facts.values()}
    for fmt, path in reports:
        text = render(fmt, run.records, run.header, run.elapsed, categories=categories)
        write_output(Path(path), text)
    colour = not args.output and enabled(sys.stdout)
    report = render(
        args.format, run.records, run.header, run.elapsed, categories=categories, colour=colour
    )
    if args.output:
        write_output(Path(args.output), report)
        print(summary_line(run.records, run.elapsed), file=sys.stderr)
    else:
        sys.stdout.write(report)
    if run.interrupted:
        print(f"factbook: interrupted; {len(run.records)} result(s) kept", file=sys.stderr)
    elif not run.records:
        print(api.nothing_selected(kb, args.target), file=sys.stderr)
    return run.exit_code()


def _parse_reports(specs: list[str]) -> list[tuple[str, str]]:
    """`junit:report.xml` -> ("junit", "report.xml"); a bad format is a usage error."""
    out = []
    for spec in specs:
        fmt, sep, path = spec.partition(":")
        if not sep or not path or fmt not in FORMATS:
            raise UsageError(
                f"--report {spec!r}: expected FORMAT:FILE, FORMAT one of {', '.join(FORMATS)}"
            )
        out.append((fmt, path))
    return out
