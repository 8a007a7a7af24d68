"""Command-line option groups shared by several commands (verify and discover reach boxes the
same way); here so that no command imports from another."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from factbook.errors import UsageError, visible
from factbook.verification.transports import knownhosts
from factbook.verification.transports.base import TransportOptions

MAX_SECONDS = 30 * 86400.0  # a time limit or delay on the command line: at most 30 days


def seconds(text: str) -> float:
    """An argparse type for a time limit in seconds: a finite number above 0 and at most
    MAX_SECONDS. float() takes `nan`, `inf` and `1e308`: --timeout nan made every check
    end at once as "no result within the run's nans bound" (a run recorded all errored),
    1e308 overflowed the watchdog's wait (a traceback in its thread) and `bench --timeout
    nan` was a ValueError traceback out of the socket."""
    value = _number(text)
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a number of seconds above 0 and at most {MAX_SECONDS:,.0f}"
        )
    return value


def delay_seconds(text: str) -> float:
    """As `seconds`, 0 allowed (no delay)."""
    value = _number(text)
    if not 0 <= value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a number of seconds from 0 to {MAX_SECONDS:,.0f}"
        )
    return value


def _number(text: str) -> float:
    """float(text); nan then fails every bound it is compared with."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a number of seconds") from None


def add_target_options(p: argparse.ArgumentParser) -> None:
    """--target and the connection options."""
    p.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="T",
        help=(
            "target name(s), comma separated or repeated, 'all', groups (@gpu-nodes), globs "
            "(node-*), tag:NAME, Ansible combinations (gpu:&h100:!node-17), "
            "or ssh://user@host:port?jump=..."
        ),
    )
    p.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="PATTERN",
        help="only targets this host pattern selects (as ansible --limit)",
    )
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="PATTERN",
        help="leave out the targets this host pattern selects",
    )
    p.add_argument(
        "--inventory",
        "-i",
        action="append",
        default=[],
        metavar="FILE",
        help=(
            "also read targets and groups from an Ansible inventory (INI, YAML, JSON of "
            "ansible-inventory --list, or a directory) or an ssh config (repeatable)"
        ),
    )
    p.add_argument(
        "--accept-new-host-keys",
        action="store_true",
        help="trust and record unknown host keys (changed keys are still refused)",
    )
    p.add_argument("--known-hosts", metavar="FILE")
    p.add_argument("--ssh-config", metavar="FILE")


def transport_options(args: argparse.Namespace) -> TransportOptions:
    """The connection options that add_target_options parsed. A `--known-hosts` file that
    cannot be one (a folder, a FIFO, past its size bound) is the command line's mistake,
    refused here (exit 2) before any box is tried, not a host-key error of every box."""
    if args.known_hosts:
        path = Path(os.path.expanduser(args.known_hosts))
        try:
            knownhosts.check(path)
        except OSError as exc:
            raise UsageError(f"--known-hosts {visible(str(path))}: {exc.strerror or exc}") from None
    return TransportOptions(
        accept_new_host_keys=args.accept_new_host_keys,
        known_hosts=args.known_hosts,
        ssh_config=args.ssh_config,
    )


def add_repeatable(p: argparse.ArgumentParser, *flags: str, **kwargs: Any) -> None:
    """An option given any number of times, collected in a list (empty when never given)."""
    p.add_argument(*flags, action="append", default=[], **kwargs)


def add_json_option(p: argparse.ArgumentParser, what: str) -> None:
    """--json: the command prints its `what` as JSON instead of text."""
    p.add_argument("--json", action="store_true", help=f"print the {what} as JSON")


def option_values(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The named options' values as keywords, for a callee whose parameters carry the
    options' own names (so a handler does not spell each one out twice)."""
    return {name: getattr(args, name) for name in names}


def warn_lint_problems(count: int, where: str = "") -> None:
    """The one warning a command that carries on despite lint problems prints (stderr)."""
    if count:
        scope = f" {where}" if where else ""
        print(f"warning: {count} lint problem(s){scope}; run `factbook lint`", file=sys.stderr)
