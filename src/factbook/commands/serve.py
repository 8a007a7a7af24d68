"""`factbook serve`: /metrics and /healthz over the facts, re-verified on an interval (serve.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from factbook.commands.cli_options import add_target_options, transport_options
from factbook.knowledge import lasting
from factbook.knowledge.schema import CATEGORIES


def register(sub: argparse._SubParsersAction) -> None:
    from factbook.integrations.serve import DEFAULT_PORT

    p = sub.add_parser(
        "serve",
        help="serve /metrics (OpenMetrics) and /healthz, re-verifying on an interval",
        description=(
            "Verify the selected facts every --interval seconds and serve the last run: "
            "/metrics for Prometheus, /healthz (200 all passed, 503 otherwise) like goss serve. "
            "A scrape never starts a second run while one is going. Loopback unless --listen."
        ),
    )
    p.add_argument("patterns", nargs="*", metavar="ID_OR_GLOB", help="fact ids or globs (hw.*)")
    p.add_argument("-c", "--category", action="append", default=[], choices=CATEGORIES)
    p.add_argument("-t", "--tag", action="append", default=[])
    add_target_options(p)
    p.add_argument(
        "--listen",
        default=f"127.0.0.1:{DEFAULT_PORT}",
        metavar="HOST:PORT",
        help=f"address to listen on (default 127.0.0.1:{DEFAULT_PORT}; 0.0.0.0 opens it to all)",
    )
    # read as text and checked in handle(): a bad value is one `factbook: error:` line
    p.add_argument("--interval", default="60", metavar="S", help="seconds, 1 to 604800 (60)")
    p.add_argument("--threads", default="4", metavar="N", help="requests at once, 1-256 (4)")
    p.add_argument("--save", action="store_true", help="keep every run in results/ too")
    p.add_argument(
        "--run-kb-probes",
        action="store_true",
        help="also run the knowledge base's own code: its probes (checks/*.py) and the commands "
        "its targets name (exec:, ProxyCommand, its ssh configs, srun prologs, a local "
        "agent's python/env); without it only factbook's built-in probes run and the others "
        "are served as errors (trust the knowledge base's code before giving it)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no request log on stderr")
    p.set_defaults(handler=handle)


def parse_listen(text: str) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:PORT` for IPv6) -> (host, port), or a UsageError saying why."""
    from factbook.errors import UsageError
    from factbook.knowledge.limits import PORT_MAX_DIGITS

    host, sep, port = text.rpartition(":")
    host = host.strip("[]") if host.startswith("[") else host
    if not sep or not host or not (port.isascii() and port.isdigit()):
        raise UsageError(f"--listen {text!r}: expected HOST:PORT, e.g. 127.0.0.1:9798")
    if not host.isprintable() or any(c.isspace() for c in host):
        raise UsageError(f"--listen {text!r}: no host name holds control or space characters")
    if len(port) > PORT_MAX_DIGITS or int(port) > 65535:  # int() refuses 4,300 digits
        raise UsageError(f"--listen {text!r}: the port must be from 0 to 65535")
    return host, int(port)


def parse_number(flag: str, text: str, kind: type[float] | type[int]) -> float:
    """`text` as a number for `flag`, or a UsageError naming the flag."""
    from factbook.errors import UsageError

    try:
        return kind(text)
    except ValueError:
        noun = "a whole number" if kind is int else "a number of seconds"
        raise UsageError(f"{flag} {text!r}: expected {noun}") from None


def handle(args: argparse.Namespace) -> int:
    lasting.turn_off()  # a server: what each request makes is freed when it ends
    from factbook.integrations.serve import (
        ServeSettings,
        check_interval,
        check_threads,
        start_service,
    )

    host, port = parse_listen(args.listen)
    interval = check_interval(parse_number("--interval", args.interval, float))
    threads = check_threads(int(parse_number("--threads", args.threads, int)))
    settings = ServeSettings(
        root=Path(args.root),
        patterns=args.patterns,
        categories=args.category,
        tags=args.tag,
        targets=args.target,
        interval=interval,
        save=args.save,
        transport=transport_options(args),
        run_kb_probes=args.run_kb_probes,
    )
    log = None if args.quiet else lambda line: print(line, file=sys.stderr, flush=True)
    service = start_service(settings, host=host, port=port, threads=threads, log=log)
    print(f"serving {service.server.url}/metrics and /healthz", file=sys.stderr, flush=True)
    try:
        service.wait()
    except KeyboardInterrupt:  # the normal way to stop a server started by hand
        print("factbook: serve stopped", file=sys.stderr)
    finally:
        service.close()
    return 0
