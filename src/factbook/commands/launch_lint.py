"""`factbook launch-lint -- python -m sglang.launch_server ...`: lint one SGLang command line.

Prints what sglang 0.5.23 will actually run with (after its silent adjustments; sglang's own
resolution where it imports, see --sglang-python) and every finding; exit 0 clean, 1 warnings
only, 2 errors. Model and draft folders are read here, so run it on the box (or where the
folders are) to get the draft-config checks.
"""

from __future__ import annotations

import argparse
import json

from factbook.commands.cli_options import add_json_option
from factbook.errors import EXIT_FAILED, EXIT_INVALID, UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "launch-lint",
        help="lint an SGLang launch command line against the known pitfalls",
        description="Resolve the speculative flags as sglang 0.5.23 does and report the "
        "pitfalls: EAGLE vs EAGLE3, topk=1 num_draft_tokens, draft path, hidden-state ids.",
    )
    add_json_option(p, "report")
    p.add_argument(
        "--capture-convention",
        choices=("0.5.23", "plus-one"),
        default="0.5.23",
        help="hidden-state capture rule: sglang 0.5.23 (default) or plus-one (older sglang, "
        "e.g. the seeds' dev checkout, which added 1 on DeepSeek targets too)",
    )
    p.add_argument(
        "--sglang-python",
        metavar="PATH",
        help="an interpreter where sglang imports: sglang itself resolves the flags "
        "(default: this one, when sglang is installed in it)",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="the launch command (after --)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from factbook.serving.sglang.flags import UNKNOWN
    from factbook.serving.sglang.launch import check_command
    from factbook.serving.sglang.reference import local_sglang_python

    argv = [a for a in args.command if a != "--"] if args.command[:1] == ["--"] else args.command
    if len(argv) == 1:
        argv = argv[0]  # one quoted string: split like a shell
    if not argv:
        raise UsageError("give the launch command after --")
    report = check_command(
        argv,
        convention=args.capture_convention,
        sglang_python=args.sglang_python or local_sglang_python(),
    )
    if report is None:
        raise UsageError("not an SGLang launch (python -m sglang.launch_server / sglang serve)")
    resolved = {k: (None if v is UNKNOWN else v) for k, v in report.resolved.as_dict().items()}
    if args.json:
        findings = [
            {"severity": f.severity, "message": f.message, "pitfall": f.pitfall}
            for f in report.findings
        ]
        print(json.dumps({"resolved": resolved, "findings": findings}, indent=2))
    else:
        shown = {k: v for k, v in resolved.items() if v is not None}
        print("sglang will run with: " + ", ".join(f"{k}={v}" for k, v in shown.items()))
        for finding in report.findings:
            print(finding)
    if report.errors:
        return EXIT_INVALID
    return EXIT_FAILED if report.findings else 0
