"""`factbook serve`: verify on an interval and answer Prometheus and health checks, as goss serve.

    GET /metrics   the last run as OpenMetrics (or classic text 0.0.4 when the scraper does not
                   ask for OpenMetrics); verify/openmetrics.py
    GET /healthz   200 when every check passed, 503 otherwise; the body is the summary table

A scrape never starts more than one run: `RunCache` holds the last run and a lock; a request
that finds it older than the interval takes the lock and runs (one batched agent per target),
and requests arriving meanwhile wait for that run instead of starting their own. A background
thread refreshes on the same interval, so scrapes usually find a fresh run and return at once.
The server listens on loopback unless told otherwise. One thread reads every request head
without blocking (selectors): a client gets `header_timeout` seconds in all to send its
request line and headers, however slowly it trickles them, and at most `max_pending`
connections wait for a head at once. A new connection is read the moment it is accepted, so
a scraper that sends its request at once is handed to a worker before any eviction can reach
it; over `max_pending`, the connection silent for longest is dropped (an idle socket, or a
trickler between bytes), never one whose head is complete, nor one accepted in the last
quarter second while fewer than twice `max_pending` wait. So slow or idle sockets cannot
keep a scraper out. Only complete requests reach the `threads` workers, and at most
`MAX_QUEUED_FACTOR * max_pending` wait for one (more are answered 503 at once). A worker
never writes to a client: it hands the answer to the reader thread, which sends it without
blocking and drops a client that has not taken all of it within `client_timeout` (at most
`MAX_SENDING_FACTOR * max_pending` answers in flight; over that, the oldest goes). A client
that never reads (a receive window of 1 kB) held a worker for `client_timeout` per request:
eight of them kept a 5 MB /metrics from a scraper for 22 s. The body of /metrics and /healthz
is made once per run and shared by every answer. The request log is one line per event, never
a traceback, with every character a client chose shown escaped (judging/sanitize.py).
The knowledge base is re-read before each run, so an edited fact is served from the next run;
its own probes (checks/*.py) run only with `run_kb_probes` (--run-kb-probes; kb_probes.py).
"""

from __future__ import annotations

import contextlib
import io
import math
import queue
import selectors
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

from factbook.errors import FactbookError, UsageError
from factbook.judging.outcomes import DRIFT, ERROR
from factbook.judging.sanitize import for_terminal
from factbook.store.results import ResultRecord

DEFAULT_PORT = 9798
# --interval: a shorter one re-verifies back to back; a longer one serves a stale run
MIN_INTERVAL = 1.0
MAX_INTERVAL = 7 * 86400.0
MAX_THREADS = 256


@dataclass
class ServeSettings:
    """What to verify and how often; `verify` is passed to verify.run as `verify-facts` would."""

    root: Path
    patterns: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    interval: float = 60.0
    save: bool = False
    transport: Any = None  # TransportOptions
    run_kb_probes: bool = False  # the knowledge base's checks/*.py too (issue 25: opt-in)


@dataclass
class Snapshot:
    """One finished run as served: the records, its header, when it ended, or why it failed."""

    records: list[ResultRecord]
    header: dict[str, Any]
    categories: dict[str, str]
    finished: float  # time.monotonic()
    problem: str = ""  # the knowledge base could not be loaded or planned
    bodies: dict[str, bytes] = field(default_factory=dict)  # answers made from it, by kind

    def body(self, kind: str, make: Callable[[], str]) -> bytes:
        """The answer `kind` made from this run, made once: a run's /metrics of 10,000 facts
        is 5 MB and 0.2 s of work, which every scrape (or a flood of them) repeated."""
        data = self.bodies.get(kind)
        if data is None:
            data = self.bodies[kind] = make().encode("utf-8", "backslashreplace")
        return data


class RunCache:
    """The last run, refreshed at most once per interval; never two runs at once."""

    def __init__(self, settings: ServeSettings, runner: Callable[[ServeSettings], Snapshot]):
        self.settings = settings
        self.runner = runner
        self.lock = threading.Lock()
        self.snapshot: Snapshot | None = None
        self.runs = 0

    def get(self, *, max_age: float | None = None) -> Snapshot:
        """The last run when younger than `max_age` (default: the interval), else a new one."""
        limit = self.settings.interval if max_age is None else max_age
        with self.lock:
            current = self.snapshot
            if current is None or time.monotonic() - current.finished >= limit:
                self.runs += 1
                self.snapshot = current = self.runner(self.settings)
            return current


def verify_snapshot(settings: ServeSettings) -> Snapshot:
    """Load the knowledge base, run its selected checks once, and keep the outcome."""
    from factbook.integrations.kb_probes import run_guarded
    from factbook.knowledge.kb import load_kb_with_problems
    from factbook.verification.engine import VerifyOptions
    from factbook.verification.run import (
        Selection,
        VerifySettings,
        refuse_broken,
        run_verify,
        select_facts,
    )
    from factbook.verification.targets import plan_checks
    from factbook.verification.transports.base import TransportOptions

    try:
        kb, problems = load_kb_with_problems(settings.root)
        selection = Selection(settings.patterns, settings.categories, settings.tags)
        facts = select_facts(kb, selection)
        refuse_broken(facts, problems)
        plan = plan_checks(kb, facts, settings.targets)
        options = VerifyOptions(transport=settings.transport or TransportOptions())
        run = run_guarded(
            kb,
            plan,
            VerifySettings(options, save=settings.save, argv=["serve"]),
            lambda p, s: run_verify(kb, p, s),
            allow=settings.run_kb_probes,
        )
    except FactbookError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return Snapshot([], {}, {}, time.monotonic(), problem=first)
    categories = {f.id: f.category for f in kb.facts.values()}
    return Snapshot(run.records, run.header, categories, time.monotonic())


class _Handler(BaseHTTPRequestHandler):
    server: MetricsServer
    timeout = 10.0  # replaced per server by client_timeout
    protocol_version = "HTTP/1.0"

    def setup(self) -> None:
        """`request` is (socket, the request head already read by the server's reader); the
        socket is the reader's, never read or written here."""
        sock, head = self.request
        self.connection = sock
        self.rfile = io.BytesIO(head)
        self.wfile = _AnswerBuffer()

    def finish(self) -> None:
        self.rfile.close()

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._metrics()
        elif path == "/healthz":
            self._healthz()
        else:
            self._send(404, "text/plain; charset=utf-8", "not found: try /metrics or /healthz\n")

    def _metrics(self) -> None:
        from factbook.verification.openmetrics import (
            CLASSIC_CONTENT_TYPE,
            CONTENT_TYPE,
            to_openmetrics,
        )

        snap = self.server.cache.get()
        if snap.problem:
            self._send(503, "text/plain; charset=utf-8", f"factbook: {snap.problem}\n")
            return
        data = snap.body(
            "metrics", lambda: to_openmetrics(snap.records, snap.header, snap.categories)
        )
        wants_om = "application/openmetrics-text" in self.headers.get("Accept", "")
        self._send(200, CONTENT_TYPE if wants_om else CLASSIC_CONTENT_TYPE, data)

    def _healthz(self) -> None:
        from factbook.verification.report import table

        snap = self.server.cache.get()
        if snap.problem:
            self._send(503, "text/plain; charset=utf-8", f"factbook: {snap.problem}\n")
            return
        bad = any(r.outcome in (DRIFT, ERROR) for r in snap.records)
        elapsed = float(snap.header.get("elapsed_s", 0.0))
        data = snap.body("healthz", lambda: table(snap.records, elapsed, show_passed=False))
        self._send(503 if bad else 200, "text/plain; charset=utf-8", data)

    def _send(self, status: int, content_type: str, body: str | bytes) -> None:
        data = body if isinstance(body, bytes) else body.encode("utf-8", "backslashreplace")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        self.server.write_log(f"{self.address_string()} {format % args}")


LOG_BACKLOG = 1000  # request-log lines waiting for a slow reader; more are dropped, counted


class _LogWriter:
    """The request log, written by a thread of its own from a bounded queue.

    Every thread of the server used to write its log line itself: with stderr a pipe that
    is not read (a supervisor's, `2>fifo`) or a terminal on XOFF, the reader thread blocked
    in the write once a client's flood of bad requests filled the pipe, and nothing was
    served; with the pipe's reader gone, each write raised BrokenPipeError inside the
    request's handling, and every request got an empty answer while the server lived on.
    Now a line that does not fit in the queue is dropped (the next line written says how
    many were), and a log that cannot be written any more is given up: serving goes on."""

    def __init__(self, write: Callable[[str], None]):
        self._write: Callable[[str], None] | None = write
        self._lines: queue.Queue[str | None] = queue.Queue(maxsize=LOG_BACKLOG)
        self._dropped = 0
        self._thread = threading.Thread(target=self._run, name="factbook-log", daemon=True)
        self._thread.start()

    def put(self, line: str) -> None:
        if self._write is None:
            return
        try:
            self._lines.put_nowait(line)
        except queue.Full:
            self._dropped += 1  # read and reset by the writer thread: a count, not a record

    def _run(self) -> None:
        while (line := self._lines.get()) is not None and self._write is not None:
            dropped, self._dropped = self._dropped, 0
            if dropped:
                line = f"({dropped} log line(s) dropped: the log was not read fast enough) {line}"
            try:
                self._write(line)
            except (OSError, ValueError):  # its reader went away, or it was closed
                self._write = None

    def close(self, wait: float = 2.0) -> None:
        """Write what is queued (for up to `wait` seconds), then stop."""
        with contextlib.suppress(queue.Full):
            self._lines.put(None, timeout=wait)
        self._thread.join(wait)


MAX_HEAD_BYTES = 64 << 10
# complete requests waiting for a worker, and answers being sent, per max_pending: each holds
# a socket; past the first bound a request is answered 503 at once, past the second the
# oldest unfinished answer is dropped (a flood of requests that never read their answers)
MAX_QUEUED_FACTOR = 4
MAX_SENDING_FACTOR = 4
SEND_ROUND_BYTES = 1 << 20  # the most sent to one client before the others get their turn
_BUSY_BODY = b"factbook: busy, too many requests wait for an answer\n"
BUSY = (
    b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Retry-After: 1\r\nContent-Length: %d\r\n\r\n%s" % (len(_BUSY_BODY), _BUSY_BODY)
)


_GRACE = 0.25  # seconds a new connection has to start its request before it can be dropped


@dataclass
class _Pending:
    """A connection whose request head is still arriving; `heard` is when it last sent."""

    address: Any
    started: float
    heard: float
    head: bytearray = field(default_factory=bytearray)


class _AnswerBuffer(io.RawIOBase):
    """wfile for a handler: what it writes is kept (a body by reference, not copied), and
    sent by the server's reader thread once the handler returns; a worker never waits on a
    client that does not read."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.chunks.append(data if isinstance(data, bytes) else bytes(data))
        return len(data)


@dataclass
class _Sending:
    """An answer being sent: its pieces, how much of the first is gone, its deadline."""

    address: Any
    chunks: list[bytes]
    deadline: float
    offset: int = 0


class MetricsServer(HTTPServer):
    """An HTTP server that reads request heads on one non-blocking thread, with a deadline
    and a bound on waiting connections, and handles complete requests on `threads` workers."""

    daemon_threads = True
    # the listen backlog: room for a flood of reconnecting sockets without the kernel dropping
    # a scraper's SYN (a retry costs it 1 s, then 3 s); the reader accepts all that are ready
    request_queue_size = 1024

    def __init__(
        self,
        address: tuple[str, int],
        cache: RunCache,
        *,
        threads: int = 4,
        client_timeout: float = 10.0,
        header_timeout: float = 5.0,
        max_pending: int = 64,
        log: Callable[[str], None] | None = None,
    ):
        handler = type("Handler", (_Handler,), {"timeout": client_timeout})
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="factbook-serve")
        try:
            super().__init__(address, handler)
        except (OSError, ValueError, TypeError, OverflowError) as exc:  # the API's callers:
            # a NUL in the host is a TypeError, a bad IDNA label a UnicodeError (ValueError)
            why = getattr(exc, "strerror", None) or str(exc)
            raise UsageError(f"cannot listen on {address[0]}:{address[1]}: {why}") from None
        self.cache = cache
        self.log = _LogWriter(log) if log is not None else None
        self.header_timeout = header_timeout
        self.client_timeout = client_timeout
        self.max_pending = max_pending
        self.pending: dict[socket.socket, _Pending] = {}
        self.sending: dict[socket.socket, _Sending] = {}
        self.queued = 0  # complete requests handed to the workers and not answered yet
        self._queued_lock = threading.Lock()
        self._answers: queue.SimpleQueue[tuple[socket.socket, Any, list[bytes]]]
        self._answers = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()

    def serve_forever(self, poll_interval: float = 0.25) -> None:
        """Accept, read heads without blocking, expire slow ones; until `shutdown()`."""
        self._stopped.clear()
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self.socket, selectors.EVENT_READ)
                selector.register(self._wake_r, selectors.EVENT_READ)
                while not self._stop.is_set():
                    for key, _ in selector.select(timeout=min(poll_interval, 0.25)):
                        if key.fileobj is self.socket:
                            self._accept(selector)
                        elif key.fileobj is self._wake_r:
                            self._take_answers(selector)
                        elif key.fileobj in self.sending:
                            self._write(selector, key.fileobj)  # type: ignore[arg-type]
                        else:
                            self._read(selector, key.fileobj)  # type: ignore[arg-type]
                    self._expire(selector)
                for conn in [*self.pending, *self.sending]:
                    self._drop(selector, conn, "")
                self._take_answers(None)
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        self._stop.set()
        self._stopped.wait()

    def write_log(self, line: str) -> None:
        """One line of the request log: a client's bytes cannot repaint the terminal, and
        writing it never waits (the log's own thread writes it; _LogWriter)."""
        if self.log is not None:
            self.log.put(for_terminal(line))

    def _note(self, address: Any, message: str) -> None:
        if message:
            host = address[0] if isinstance(address, tuple) else str(address)
            self.write_log(f"{host} {message}")

    def _accept(self, selector: selectors.BaseSelector) -> None:
        self.socket.setblocking(False)
        # at most max_pending at a time: between two rounds the selector reads what the
        # connections taken so far have sent (a burst of 1,000 reconnecting idle sockets in
        # one round evicted a scraper whose request had already arrived, unread)
        for _ in range(min(self.request_queue_size, self.max_pending)):
            try:
                conn, address = self.socket.accept()
            except OSError:
                return
            self._admit(selector, conn, address)

    def _admit(self, selector: selectors.BaseSelector, conn: socket.socket, address: Any) -> None:
        """Take a new connection and read what it has sent already: a complete request goes
        to a worker at once and never waits among the pending ones."""
        conn.setblocking(False)
        now = time.monotonic()
        self.pending[conn] = _Pending(address, now, now)
        selector.register(conn, selectors.EVENT_READ)
        self._read(selector, conn)
        while len(self.pending) > self.max_pending:
            # the one silent longest goes (a fresh connection has just been heard from), once
            # a last read shows it has sent nothing since: a request that arrived meanwhile
            # is served, a head still coming in is heard from, and another one is picked.
            # A connection taken in the last _GRACE seconds is spared while the waiting are
            # under twice the bound: "silent longest" among connections a few microseconds
            # old dropped a scraper before its request could arrive (a reconnecting flood
            # on a loaded machine); the flood's older sockets go instead.
            settled = [c for c in self.pending if now - self.pending[c].started >= _GRACE]
            if not settled and len(self.pending) <= 2 * self.max_pending:
                break
            idle = min(settled or self.pending, key=lambda c: self.pending[c].heard)
            heard = self.pending[idle].heard
            self._read(selector, idle)
            if idle in self.pending and self.pending[idle].heard == heard:
                self._drop(selector, idle, f"dropped: more than {self.max_pending} waiting")

    def _read(self, selector: selectors.BaseSelector, conn: socket.socket) -> None:
        state = self.pending.get(conn)
        if state is None:
            return
        try:
            data = conn.recv(4096)
        except BlockingIOError:
            return
        except OSError as exc:
            self._drop(selector, conn, f"closed: {exc.strerror or exc}")
            return
        if not data:
            self._drop(selector, conn, "")
            return
        state.head += data
        state.heard = time.monotonic()
        if len(state.head) > MAX_HEAD_BYTES:
            self._drop(selector, conn, f"dropped: request head over {MAX_HEAD_BYTES} bytes")
            return
        # only the bytes that can end the head now are searched: a head trickled a byte at a
        # time is scanned once, not once per byte
        start = max(0, len(state.head) - len(data) - 3)
        if state.head.find(b"\r\n\r\n", start) >= 0 or state.head.find(b"\n\n", start) >= 0:
            selector.unregister(conn)
            del self.pending[conn]
            with self._queued_lock:
                busy = self.queued >= MAX_QUEUED_FACTOR * self.max_pending
                self.queued += not busy
            if busy:
                self._note(state.address, "answered 503: too many requests wait for a worker")
                self._start_sending(selector, conn, state.address, [BUSY])
            else:
                self.pool.submit(self._handle, conn, state.address, bytes(state.head))

    def _expire(self, selector: selectors.BaseSelector) -> None:
        now = time.monotonic()
        limit = now - self.header_timeout
        for conn, state in list(self.pending.items()):
            if state.started < limit:
                why = f"dropped: no complete request head within {self.header_timeout:g} s"
                self._drop(selector, conn, why)
        for conn, answer in list(self.sending.items()):
            if answer.deadline < now:
                why = f"dropped: the answer was not read within {self.client_timeout:g} s"
                self._drop(selector, conn, why)

    def _drop(self, selector: selectors.BaseSelector, conn: socket.socket, why: str) -> None:
        state = self.pending.pop(conn, None) or self.sending.pop(conn, None)
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(conn)
        with contextlib.suppress(OSError):
            conn.close()
        if state is not None:
            self._note(state.address, why)

    def _handle(self, conn: socket.socket, address: Any, head: bytes) -> None:
        """A worker: the answer to one complete request, made and handed to the reader
        thread to send (never sent here: a client that does not read cannot hold a worker)."""
        chunks: list[bytes] = []
        try:
            handler = self.RequestHandlerClass((conn, head), address, self)  # type: ignore[arg-type]
            chunks = handler.wfile.chunks  # type: ignore[attr-defined]
        except Exception as exc:  # a handler's own failure: one line, the client is closed
            self._note(address, f"error: {type(exc).__name__}: {exc}")
        finally:
            with self._queued_lock:
                self.queued -= 1
            self._answers.put((conn, address, chunks))
            with contextlib.suppress(OSError):  # full: the reader is woken already
                self._wake_w.send(b"\0")

    def _take_answers(self, selector: selectors.BaseSelector | None) -> None:
        """Start sending the answers the workers have made (close them all without one)."""
        with contextlib.suppress(OSError):
            while self._wake_r.recv(4096):
                pass
        while True:
            try:
                conn, address, chunks = self._answers.get_nowait()
            except queue.Empty:
                return
            if selector is None or not chunks:
                with contextlib.suppress(OSError):
                    conn.close()
            else:
                self._start_sending(selector, conn, address, chunks)

    def _start_sending(
        self, selector: selectors.BaseSelector, conn: socket.socket, address: Any, chunks: list
    ) -> None:
        deadline = time.monotonic() + self.client_timeout
        self.sending[conn] = _Sending(address, [c for c in chunks if c], deadline)
        selector.register(conn, selectors.EVENT_WRITE)
        self._write(selector, conn)
        while len(self.sending) > MAX_SENDING_FACTOR * self.max_pending:
            oldest = min(self.sending, key=lambda c: self.sending[c].deadline)
            bound = MAX_SENDING_FACTOR * self.max_pending
            self._drop(selector, oldest, f"dropped: more than {bound} answers unread")

    def _write(self, selector: selectors.BaseSelector, conn: socket.socket) -> None:
        """Send what the client's socket takes now, up to SEND_ROUND_BYTES; close it once
        the whole answer is gone."""
        answer = self.sending[conn]
        sent = 0
        while answer.chunks and sent < SEND_ROUND_BYTES:
            piece = memoryview(answer.chunks[0])[answer.offset : answer.offset + SEND_ROUND_BYTES]
            try:
                count = conn.send(piece)
            except BlockingIOError:
                return
            except OSError as exc:
                self._drop(selector, conn, f"closed: {exc.strerror or exc}")
                return
            sent += count
            answer.offset += count
            if answer.offset >= len(answer.chunks[0]):
                answer.chunks.pop(0)
                answer.offset = 0
        if answer.chunks:
            return
        del self.sending[conn]
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(conn)
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_WR)
        with contextlib.suppress(OSError):
            conn.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        self._note(client_address, "error while handling the request")

    def server_close(self) -> None:
        super().server_close()
        self.pool.shutdown(wait=False, cancel_futures=True)
        for end in (getattr(self, "_wake_r", None), getattr(self, "_wake_w", None)):
            if end is not None:
                end.close()
        log = getattr(self, "log", None)  # none yet when listening failed in __init__
        if log is not None:
            log.close()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


class Service:
    """The server, its refresher thread and its cache, started and stopped together."""

    def __init__(self, server: MetricsServer, interval: float):
        self.server = server
        self.interval = interval
        self.stopping = threading.Event()
        self.threads = [
            threading.Thread(target=server.serve_forever, name="factbook-http", daemon=True),
            threading.Thread(target=self._refresh, name="factbook-refresh", daemon=True),
        ]

    def start(self) -> Service:
        for thread in self.threads:
            thread.start()
        return self

    def _refresh(self) -> None:
        while not self.stopping.is_set():
            self.server.cache.get()
            self.stopping.wait(self.interval)

    def wait(self) -> None:
        while not self.stopping.wait(0.5):
            pass

    def close(self, wait: float = 60.0) -> None:
        """Stop listening, then let a run in progress finish (its agents end with it)."""
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self.threads[1].join(wait)


def start_service(
    settings: ServeSettings,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    threads: int = 4,
    client_timeout: float = 10.0,
    header_timeout: float = 5.0,
    max_pending: int = 64,
    log: Callable[[str], None] | None = None,
    runner: Callable[[ServeSettings], Snapshot] = verify_snapshot,
) -> Service:
    """Listen, start refreshing, and return the running service (`.close()` stops it)."""
    check_interval(settings.interval)
    check_threads(threads)
    for name, value in (("client_timeout", client_timeout), ("header_timeout", header_timeout)):
        if not (math.isfinite(value) and value > 0):
            raise UsageError(f"{name} must be a positive number of seconds, not {value!r}")
    if max_pending < 1:
        raise UsageError(f"max_pending must be at least 1, not {max_pending}")
    cache = RunCache(settings, runner)
    server = MetricsServer(
        (host, port),
        cache,
        threads=threads,
        client_timeout=client_timeout,
        header_timeout=header_timeout,
        max_pending=max_pending,
        log=log,
    )
    return Service(server, settings.interval).start()


def check_interval(seconds: float) -> float:
    """`seconds` when it is a usable --interval: finite, MIN_INTERVAL to MAX_INTERVAL (inf
    overflowed the refresher's wait, nan never refreshed, a tiny one verified back to back)."""
    if not (math.isfinite(seconds) and MIN_INTERVAL <= seconds <= MAX_INTERVAL):
        raise UsageError(
            f"--interval {seconds:g}: seconds from {MIN_INTERVAL:g} to {MAX_INTERVAL:g} (7 days)"
        )
    return seconds


def check_threads(count: int) -> int:
    """`count` when it is a usable --threads: 1 to MAX_THREADS."""
    if not 1 <= count <= MAX_THREADS:
        raise UsageError(f"--threads {count}: from 1 to {MAX_THREADS}")
    return count
