"""`factbook serve`: /metrics and /healthz over the facts, re-verified on an interval (serve.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from factbook.commands.cli_options import add_target_options, transport_options
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
    p.add_argument("--interval", type=float, default=60.0, metavar="S", help="seconds (60)")
    p.add_argument("--threads", type=int, default=4, help="requests handled at once (4)")
    p.add_argument("--save", action="store_true", help="keep every run in results/ too")
    p.add_argument("-q", "--quiet", action="store_true", help="no request log on stderr")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from factbook.errors import UsageError
    from factbook.integrations.serve import ServeSettings, start_service

    host, sep, port = args.listen.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise UsageError(f"--listen {args.listen!r}: expected HOST:PORT, e.g. 127.0.0.1:9798")
    settings = ServeSettings(
        root=Path(args.root),
        patterns=args.patterns,
        categories=args.category,
        tags=args.tag,
        targets=args.target,
        interval=args.interval,
        save=args.save,
        transport=transport_options(args),
    )
    log = None if args.quiet else lambda line: print(line, file=sys.stderr, flush=True)
    service = start_service(
        settings, host=host.strip("[]"), port=int(port), threads=args.threads, log=log
    )
    print(f"serving {service.server.url}/metrics and /healthz", file=sys.stderr, flush=True)
    try:
        service.wait()
    except KeyboardInterrupt:  # the normal way to stop a server started by hand
        print("factbook: serve stopped", file=sys.stderr)
    finally:
        service.close()
    return 0
