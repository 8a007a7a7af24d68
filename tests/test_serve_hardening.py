"""`factbook serve` against hostile clients and a hostile knowledge base, on 127.0.0.1 with
the real verify runner: a flood of idle sockets and tricklers does not evict a scraper, the
request log escapes what a client sends, bad options are one line and exit 2, and the
knowledge base's own probes (checks/*.py) run only with --run-kb-probes (issue 25)."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from factbook.integrations.serve import (
    MetricsServer,
    RunCache,
    ServeSettings,
    Service,
    start_service,
    verify_snapshot,
)
from tests.helpers import SHADOW_PROBE, TOUCH_PROBE, cli, fact, free_port, make_kb


def _get(url: str, timeout: float = 30.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _plain_kb(root: Path) -> Path:
    return make_kb(root / "kb", [fact("hw.cpu.threads", "cpu.threads", {"ge": 1}, target="local")])


# --- a flood of idle connections ------------------------------------------------------------


def _service(root: Path, **kwargs) -> Service:
    settings = ServeSettings(root=_plain_kb(root), interval=300.0)
    return start_service(settings, port=free_port(), **kwargs)


def test_a_prompt_scraper_is_never_evicted_by_the_connections_behind_it(tmp_path: Path) -> None:
    """The scraper's complete request and 100 idle sockets wait in the listen backlog before
    the server reads any: the scraper is answered (it was the oldest pending connection and
    was dropped for the 65th idle one, unread)."""
    settings = ServeSettings(root=_plain_kb(tmp_path), interval=300.0)
    server = MetricsServer(("127.0.0.1", free_port()), RunCache(settings, verify_snapshot))
    host, port = server.server_address[:2]
    scraper = socket.create_connection((host, port))
    scraper.sendall(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
    idle = [socket.create_connection((host, port)) for _ in range(100)]
    service = Service(server, 300.0).start()
    try:
        scraper.settimeout(30)
        answer = b""
        while chunk := scraper.recv(65536):
            answer += chunk
    finally:
        scraper.close()
        for sock in idle:
            sock.close()
        service.close()
    assert answer.startswith(b"HTTP/1.0 200"), answer[:200]
    assert b"factbook_check_status" in answer


class Flood:
    """`count` idle sockets; with `reconnect`, one the server drops is opened again at once."""

    def __init__(self, host: str, port: int, count: int, *, reconnect: bool):
        self.address = (host, port)
        self.count = count
        self.reconnect = reconnect
        self.stop = threading.Event()
        self.reopened = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _open(self, selector: selectors.BaseSelector) -> None:
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex(self.address)
        selector.register(sock, selectors.EVENT_READ)

    def _run(self) -> None:
        with selectors.DefaultSelector() as selector:
            for _ in range(self.count):
                self._open(selector)
            while not self.stop.is_set():
                for key, _ in selector.select(0.05):
                    sock = key.fileobj
                    try:
                        data = sock.recv(1024)  # type: ignore[union-attr]
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data:  # dropped: come straight back
                        selector.unregister(sock)
                        sock.close()  # type: ignore[union-attr]
                        self.reopened += 1
                        if self.reconnect:
                            self._open(selector)
            for key in list(selector.get_map().values()):
                key.fileobj.close()  # type: ignore[union-attr]

    def __enter__(self) -> Flood:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


def _trickle(host: str, port: int, stop: threading.Event) -> None:
    """A slowloris client: one byte of a request head every 3 s, never finishing it."""
    while not stop.is_set():
        try:
            sock = socket.create_connection((host, port))
        except OSError:
            return  # the server is gone
        with sock:
            sock.settimeout(3.0)
            for byte in itertools.cycle(b"GET /metrics HTTP/1.1\r\nX-Slow: "):
                try:
                    sock.sendall(bytes([byte]))
                    if sock.recv(1) == b"":
                        break  # dropped at the header deadline: start again
                except TimeoutError:
                    pass
                except OSError:
                    break
                if stop.is_set():
                    return


@pytest.mark.parametrize("reconnect", [False, True], ids=["idle", "reconnecting"])
def test_scrapes_answered_under_a_flood_and_tricklers(tmp_path: Path, reconnect: bool) -> None:
    """200 idle sockets (that reconnect the moment they are dropped, in the harder case) and
    8 tricklers (a header byte every 3 s): each /metrics GET is answered within 2 s."""
    lines: list[str] = []
    svc = _service(tmp_path, threads=4, log=lines.append)
    host, port = svc.server.server_address[:2]
    assert _get(svc.server.url + "/metrics")[0] == 200  # the first run, out of the timing
    stop = threading.Event()
    tricklers = [
        threading.Thread(target=_trickle, args=(host, port, stop), daemon=True) for _ in range(8)
    ]
    times: list[float] = []
    failures: list[str] = []
    try:
        for thread in tricklers:
            thread.start()
        with Flood(host, port, 200, reconnect=reconnect) as flood:
            time.sleep(1.0)
            for _ in range(12):
                started = time.monotonic()
                try:
                    status, body = _get(svc.server.url + "/metrics", timeout=5)
                    assert status == 200 and "factbook_check_status" in body
                except (OSError, AssertionError) as exc:
                    failures.append(f"{type(exc).__name__}: {exc}")
                times.append(time.monotonic() - started)
                time.sleep(0.25)
    finally:
        stop.set()
        svc.close()
    print(
        f"/metrics under 200 {'reconnecting' if reconnect else 'idle'} sockets + 8 tricklers: "
        f"max {max(times):.3f} s, {len(failures)} of {len(times)} failed, "
        f"{flood.reopened} idle sockets dropped and reopened"
    )
    assert not failures, failures
    assert max(times) < 2.0, times
    assert flood.reopened > 0  # the flood did fill the pending connections
    assert any("more than 64 waiting" in line for line in lines)


# --- the request log -----------------------------------------------------------------------


HOSTILE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def test_the_request_log_shows_what_a_client_sent_escaped(tmp_path: Path) -> None:
    """ESC sequences, BEL, C1 controls and bidi overrides in the request line and headers
    never reach the terminal raw: the log shows them escaped, one line per event."""
    lines: list[str] = []
    svc = _service(tmp_path, log=lines.append)
    host, port = svc.server.server_address[:2]
    requests = [
        b"GET /\x1b]0;owned\x07\x1b[2J HTTP/1.0\r\n\r\n",  # 404, logged with its line
        "GET /\u202eevil HTTP/1.0\r\n\r\n".encode(),  # a bidi override, as UTF-8 bytes
        b"\x1b[31mBOGUS\r\n\r\n",  # 400: bad request syntax, quoting the line
        b"GET / HTTP/1.\x1b[0m\r\n\r\n",  # 400: bad version
        b"GET / HTTP/1.0\r\nX\x1b[1m: \x9b\r\n" + b"Y: " + b"\x1b" * 70000 + b"\r\n\r\n",
    ]
    try:
        for raw in requests:
            with socket.create_connection((host, port)) as sock:
                sock.sendall(raw)
                sock.settimeout(10)
                with contextlib.suppress(ConnectionResetError):  # the head over 64 KiB
                    while sock.recv(65536):
                        pass
        deadline = time.monotonic() + 5
        while len(lines) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        svc.close()
    assert len(lines) >= 4, lines
    for line in lines:
        assert not HOSTILE.search(line), repr(line)
        assert "\n" not in line and "Traceback" not in line
    assert any("\\x1b]0;owned\\x07\\x1b[2J" in line for line in lines), lines
    assert any("\\x1b[31mBOGUS" in line for line in lines), lines


# --- options -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--interval", "inf", "--interval inf: seconds from 1 to 604800"),
        ("--interval", "nan", "--interval nan: seconds from 1"),
        ("--interval", "-1", "--interval -1: seconds from 1"),
        ("--interval", "0", "--interval 0: seconds from 1"),
        ("--interval", "1e-300", "--interval 1e-300: seconds from 1"),
        ("--interval", "1e400", "--interval inf: seconds"),
        ("--interval", "soon", "--interval 'soon': expected a number of seconds"),
        ("--threads", "0", "--threads 0: from 1 to 256"),
        ("--threads", "99999999", "--threads 99999999: from 1 to 256"),
        ("--threads", "2.5", "--threads '2.5': expected a whole number"),
        ("--listen", ":99999", "expected HOST:PORT"),
        ("--listen", "127.0.0.1:99999", "the port must be from 0 to 65535"),
        ("--listen", "127.0.0.1:65536", "the port must be from 0 to 65535"),
        ("--listen", "host:abc", "expected HOST:PORT"),
        ("--listen", "127.0.0.1:-1", "expected HOST:PORT"),
        ("--listen", "127.0.0.1:\u0669", "expected HOST:PORT"),  # an Arabic-Indic nine
        ("--listen", "a\x00b:9798", "'a\\x00b:9798': no host name holds control"),
        ("--listen", "a b:9798", "no host name holds control or space"),
        ("--listen", "\u202e1.0.0.127:9798", "no host name holds control"),
        ("--listen", "a" * 300 + ":9798", "cannot listen on"),
    ],
)
def test_a_bad_option_is_one_line_and_exit_2(
    tmp_path: Path, option: str, value: str, says: str
) -> None:
    code, out, err = cli(_plain_kb(tmp_path), "serve", "-q", option, value)
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("factbook: error: "), err
    assert says in err, err
    assert "Traceback" not in err and out == ""


def test_start_service_refuses_unusable_numbers(tmp_path: Path) -> None:
    from factbook.errors import UsageError

    settings = ServeSettings(root=_plain_kb(tmp_path), interval=float("nan"))
    with pytest.raises(UsageError, match="--interval nan"):
        start_service(settings, port=free_port())
    settings.interval = 60.0
    for bad in ({"client_timeout": float("inf")}, {"header_timeout": -1.0}, {"max_pending": 0}):
        with pytest.raises(UsageError):
            start_service(settings, port=free_port(), **bad)


# --- the knowledge base's own probes -------------------------------------------------------


def _probe_kb(root: Path) -> tuple[Path, Path, Path]:
    """A knowledge base whose checks/ would leave marker files: touch.py when its probe runs,
    shadow.py (declaring the built-in cpu.threads) when it is merely shipped."""
    touched, shadowed = root / "touched", root / "shadowed"
    facts = [
        fact("kb.touch", "t.touch", {"eq": 1}, args={"path": str(touched)}, target="local"),
        fact("hw.cpu.threads", "cpu.threads", {"ge": 1}, target="local"),
        fact("sw.env.home", "env.var", {"exists": True}, args={"name": "HOME"}, target="local"),
    ]
    checks = {"touch.py": TOUCH_PROBE, "shadow.py": SHADOW_PROBE % str(shadowed)}
    return make_kb(root / "kb", facts, checks=checks), touched, shadowed


def test_kb_probes_run_only_when_serve_is_told_to(tmp_path: Path) -> None:
    kb, touched, shadowed = _probe_kb(tmp_path)
    svc = start_service(ServeSettings(root=kb, interval=300.0), port=free_port())
    try:
        status, body = _get(svc.server.url + "/healthz")
        outcomes = {r.fact: r for r in svc.server.cache.get().records}
    finally:
        svc.close()
    assert not touched.exists() and not shadowed.exists()  # nothing of checks/ ran
    assert status == 503 and "--run-kb-probes" in body
    assert outcomes["kb.touch"].outcome == "error"
    assert (
        "the knowledge base's own probe 't.touch' (checks/touch.py)" in outcomes["kb.touch"].reason
    )
    assert "--run-kb-probes" in outcomes["kb.touch"].reason
    assert outcomes["hw.cpu.threads"].outcome == "error"  # shadowed by checks/shadow.py
    assert "(checks/shadow.py)" in outcomes["hw.cpu.threads"].reason
    assert outcomes["sw.env.home"].outcome == "pass"  # a built-in still runs

    settings = ServeSettings(root=kb, interval=300.0, run_kb_probes=True)
    svc = start_service(settings, port=free_port())
    try:
        status, _ = _get(svc.server.url + "/healthz")
    finally:
        svc.close()
    assert status == 200 and touched.exists() and shadowed.exists()


@pytest.mark.parametrize("opt_in", [False, True])
def test_cli_run_kb_probes_flag(tmp_path: Path, opt_in: bool) -> None:
    kb, touched, _ = _probe_kb(tmp_path)
    port = free_port()
    argv = [sys.executable, "-m", "factbook", "--root", str(kb), "serve", "-q"]
    argv += ["--listen", f"127.0.0.1:{port}", "kb.touch"]
    argv += ["--run-kb-probes"] if opt_in else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status, body = _get(f"http://127.0.0.1:{port}/metrics")
                break
            except urllib.error.URLError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert status == 200
    assert touched.exists() is opt_in
    outcome = "pass" if opt_in else "error"
    assert (
        f'factbook_check_status{{category="hardware",fact="kb.touch",outcome="{outcome}"' in body
        or (re.search(rf'fact="kb.touch"[^}}]*outcome="{outcome}"', body))
    ), body


def test_a_probe_file_added_after_the_vetting_is_never_shipped(tmp_path: Path) -> None:
    """The plan is vetted against checks/ as it was; a file that appears there before the
    engine builds the agent (here: written by the run itself) must not travel with it: serve
    and mcp tell the engine to take no probe of the knowledge base at all."""
    from factbook.integrations.kb_probes import run_guarded
    from factbook.knowledge.kb import load_kb
    from factbook.verification.run import VerifySettings, run_verify
    from factbook.verification.targets import plan_checks

    kb_root = make_kb(
        tmp_path / "kb", [fact("hw.cpu.threads", "cpu.threads", {"ge": 1}, target="local")]
    )
    marker = tmp_path / "shipped"
    kb = load_kb(kb_root)
    plan = plan_checks(kb, list(kb.facts.values()), [])

    def late_file_then_run(plan, settings):  # type: ignore[no-untyped-def]
        (kb_root / "checks").mkdir(exist_ok=True)
        (kb_root / "checks" / "late.py").write_text(SHADOW_PROBE % str(marker))
        return run_verify(kb, plan, settings)

    run = run_guarded(kb, plan, VerifySettings(save=False), late_file_then_run, allow=False)
    assert not marker.exists()  # the built-in ran; checks/late.py never left this machine
    assert [r.outcome for r in run.records] == ["pass"]
    run = run_guarded(kb, plan, VerifySettings(save=False), late_file_then_run, allow=True)
    assert marker.exists()  # with --run-kb-probes it is the knowledge base's to run
