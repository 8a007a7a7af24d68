"""`factbook verify` (and `verify-facts`): check facts live on their boxes.

Selection by id or glob, category, tag, status and target; one agent per target; progress on
stderr, the report on stdout (or --output); results kept in results/ (history + latest).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import socket
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from .. import __version__
from ..errors import EXIT_OK, LintFailed, Problem, UsageError
from ..kb import KnowledgeBase, load_kb_with_problems
from ..model import Fact
from ..results import ResultRecord, load_latest, write_run
from ..schema import CATEGORIES, STATUSES
from ..transports.base import TransportOptions
from ..verify.engine import Engine, VerifyOptions, now_iso
from ..verify.report import FORMATS, Progress, exit_code, render, summary_line
from ..verify.targets import plan_checks


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
    p.add_argument("--timeout", type=float, help="seconds per check that sets none (60)")
    p.add_argument("--retry", type=int, default=0, metavar="N", help="rerun failed checks N times")
    p.add_argument("--retry-delay", type=float, default=0.0, metavar="S")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report here, not stdout")
    p.add_argument(
        "--report",
        action="append",
        default=[],
        metavar="FORMAT:FILE",
        help="also write a report in FORMAT to FILE (repeatable), e.g. junit:report.xml",
    )
    p.add_argument("--dry-run", action="store_true", help="show which check runs where; run none")
    p.add_argument("--no-save", action="store_true", help="do not write results/")
    p.add_argument(
        "--failed",
        action="store_true",
        help="only facts whose latest result (on any target) drifted or errored",
    )
    p.add_argument(
        "--record",
        action="store_true",
        help="mark facts that passed on every target as verified in facts/ (with a source)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="a line per result on stderr")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress")
    p.set_defaults(handler=handle)


def add_target_options(p: argparse.ArgumentParser) -> None:
    """--target and the connection options (shared with `discover`)."""
    p.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="T",
        help="target name(s), comma separated or repeated, 'all', or ssh://user@host:port?jump=...",
    )
    p.add_argument(
        "--accept-new-host-keys",
        action="store_true",
        help="trust and record unknown host keys (changed keys are still refused)",
    )
    p.add_argument("--known-hosts", metavar="FILE")
    p.add_argument("--ssh-config", metavar="FILE")


def transport_options(args: argparse.Namespace) -> TransportOptions:
    return TransportOptions(
        accept_new_host_keys=args.accept_new_host_keys,
        known_hosts=args.known_hosts,
        ssh_config=args.ssh_config,
    )


def select_facts(kb: KnowledgeBase, args: argparse.Namespace) -> list[Fact]:
    """The facts with checks that the patterns and filters name; naming nothing is an error."""
    for pattern in args.patterns:
        if any(ch in pattern for ch in "*?["):
            if not any(fnmatch.fnmatchcase(i, pattern) for i in kb.facts):
                raise UsageError(f"no fact matches '{pattern}'")
        else:
            fact = kb.get(pattern)
            if fact.check is None:
                raise UsageError(f"fact '{pattern}' has no check to run ({fact.location})")
    facts = kb.select(
        patterns=args.patterns, categories=args.category, tags=args.tag, statuses=args.status
    )
    if getattr(args, "failed", False):
        latest = load_latest(kb.root)
        bad = {
            fact_id
            for fact_id, by_target in latest.items()
            if any(r.get("outcome") in ("drift", "error") for r in by_target.values())
        }
        facts = [f for f in facts if f.id in bad]
    return [f for f in facts if f.check is not None]


def _refuse_broken(facts: list[Fact], problems: list[Problem]) -> None:
    """Lint problems in the selected facts stop the run (exit 2); others only warn."""
    selected = {f.id for f in facts}
    mine = [p for p in problems if _problem_fact(p) in selected or _problem_fact(p) is None]
    if mine:
        raise LintFailed(mine)
    if problems:
        print(
            f"warning: {len(problems)} lint problem(s) in facts not selected; run `factbook lint`",
            file=sys.stderr,
        )


def _problem_fact(problem: Problem) -> str | None:
    match = re.match(r"fact '([^']+)'", problem.message)
    return match.group(1) if match else None


def new_run_id(targets: list[str]) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    label = "-".join(sorted(set(targets)))[:40] or "none"
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label)
    return f"{stamp}-{safe}-{os.getpid()}"


def handle(args: argparse.Namespace) -> int:
    if args.jobs < 1 or args.retry < 0 or args.retry_delay < 0:
        raise UsageError("--jobs must be >= 1, --retry and --retry-delay >= 0")
    started = time.monotonic()
    kb, problems = load_kb_with_problems(Path(args.root))
    facts = select_facts(kb, args)
    _refuse_broken(facts, problems)
    plan = plan_checks(kb, facts, args.target)
    reports = _parse_reports(args.report)
    if args.dry_run:
        for check in plan.checks:
            assert check.fact.check is not None
            print(
                f"{check.fact.id}  on {check.target}: {check.fact.check.probe} "
                f"{json.dumps(check.fact.check.args)}"
            )
        for fact in plan.unplaced:
            print(f"{fact.id}  on -: no target (pass --target)")
        print(
            f"({len(plan.checks)} checks on {len({c.target for c in plan.checks})} targets)",
            file=sys.stderr,
        )
        return EXIT_OK
    run_id = new_run_id([c.target for c in plan.checks])
    progress = Progress(len(plan.checks), verbose=args.verbose)
    quiet = args.quiet or (not progress.tty and not args.verbose)
    engine = Engine(
        kb,
        plan.targets,
        VerifyOptions(
            jobs=args.jobs,
            timeout=args.timeout,
            retry=args.retry,
            retry_delay=args.retry_delay,
            transport=transport_options(args),
        ),
        run_id=run_id,
        on_result=None if quiet else progress.result,
        on_note=progress.note,
    )
    header = {
        "id": run_id,
        "started": now_iso(),
        "factbook": __version__,
        "host": socket.gethostname(),
        "argv": sys.argv[1:],
        "targets": sorted({c.target for c in plan.checks}),
    }
    records = engine.run(plan.checks)
    records += [_unplaced(f, run_id) for f in plan.unplaced]
    progress.close()
    elapsed = time.monotonic() - started
    header.update(
        finished=now_iso(),
        elapsed_s=round(elapsed, 3),
        agents=engine.agents,
        summary={
            k: sum(r.outcome == k for r in records) for k in ("pass", "drift", "error", "skipped")
        },
    )
    if not args.no_save and records:
        path = write_run(kb.root, run_id, header, records)
        print(f"results: {path.relative_to(kb.root)}", file=sys.stderr)
    if args.record:
        for note in record_verified(kb, records, run_id):
            print(note, file=sys.stderr)
    for fmt, path in reports:
        Path(path).write_text(render(fmt, records, header, elapsed), encoding="utf-8")
    report = render(args.format, records, header, elapsed)
    if args.output:
        Path(args.output).write_text(report, encoding="utf-8")
        print(summary_line(records, elapsed), file=sys.stderr)
    else:
        sys.stdout.write(report)
    if not records:
        print("no checks selected", file=sys.stderr)
        return EXIT_OK
    return exit_code(records)


def record_verified(kb: KnowledgeBase, records: list[ResultRecord], run_id: str) -> list[str]:
    """Set status `verified` (and add this run as a source) on facts that passed everywhere
    they ran and were not verified yet; comments and order of the fact files are kept."""
    from ..writeback import update_fact

    outcomes: dict[str, set[str]] = {}
    targets: dict[str, list[str]] = {}
    for r in records:
        outcomes.setdefault(r.fact, set()).add(r.outcome)
        targets.setdefault(r.fact, []).append(r.target)
    notes = []
    for fact_id, seen in outcomes.items():
        fact = kb.facts.get(fact_id)
        if fact is None or seen != {"pass"} or fact.status == "verified":
            continue
        where = ", ".join(sorted(set(targets[fact_id])))
        source = {"run": run_id, "date": now_iso()[:10], "note": f"verify-facts passed on {where}"}
        if len(set(targets[fact_id])) == 1:
            source["target"] = targets[fact_id][0]
        update_fact(kb.root, fact_id, status="verified", add_source=source)
        notes.append(f"recorded {fact_id}: {fact.status} -> verified")
    return notes


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


def _unplaced(fact: Fact, run_id: str) -> ResultRecord:
    return ResultRecord(
        fact=fact.id,
        target="-",
        outcome="skipped",
        reason="no target: the fact names none; pass --target",
        time=now_iso(),
        run=run_id,
        probe=fact.check.probe if fact.check else "",
        extra={"location": fact.location},
    )
