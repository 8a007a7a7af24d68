"""`factbook serve` on 127.0.0.1, scraped by a real HTTP client (urllib) and read back by
prometheus_client's parsers: one run however many scrapes arrive at once, re-verified on the
interval, /healthz as goss serve, bounded workers, the CLI end to end."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
from prometheus_client.parser import text_string_to_metric_families as classic_parse

from factbook.integrations.serve import ServeSettings, start_service
from tests.helpers import fact, free_port, make_kb

SLOW_PROBE = '''
import json, os, time
def slow(log, seconds):
    """Sleeps, and appends its start and end times to `log` (one JSON line per call)."""
    start = time.time()
    time.sleep(seconds)
    with open(log, "a") as handle:
        handle.write(json.dumps([start, time.time(), os.getpid()]) + "\\n")
    return 1
PROBES = {"t.slow": slow}
'''


def _kb(root: Path, seconds: float = 0.2) -> tuple[Path, Path]:
    log = root / "calls.jsonl"
    args = {"log": str(log), "seconds": seconds}
    facts = [
        fact("t.slow.one", "t.slow", {"eq": 1}, args=args, target="local"),
        fact("hw.cpu.threads", "cpu.threads", {"ge": 1}, target="local"),
        fact("hw.cpu.too_many", "cpu.threads", {"eq": 100000}, target="local"),
    ]
    return make_kb(root / "kb", facts, checks={"slow.py": SLOW_PROBE}), log


def _get(url: str, accept: str = "") -> tuple[int, str, str]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def _calls(log: Path) -> list[list[float]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def service(tmp_path: Path):
    kb, log = _kb(tmp_path)
    started = []

    def start(**kwargs):
        interval = kwargs.pop("interval", 300.0)
        settings = ServeSettings(root=kb, interval=interval, run_kb_probes=True)  # t.slow
        svc = start_service(settings, port=free_port(), **kwargs)
        started.append(svc)
        return svc, log

    yield start
    for svc in started:
        svc.close()


def test_concurrent_scrapes_share_one_run(service) -> None:
    svc, log = service(threads=8)
    url = svc.server.url + "/metrics"
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: _get(url), range(8)))
    assert {a[0] for a in answers} == {200}
    assert len({a[2] for a in answers}) == 1  # every scraper got the same run
    assert len(_calls(log)) == 1  # one run for 8 scrapes and the refresher
    assert svc.server.cache.runs == 1
    samples = {
        (s.name, frozenset(s.labels.items())): s.value
        for family in classic_parse(answers[0][2])
        for s in family.samples
    }
    key = {"fact": "t.slow.one", "target": "local", "category": "hardware"}
    assert samples[("factbook_check_observed", frozenset(key.items()))] == 1
    assert samples[("factbook_checks", frozenset({("outcome", "drift")}))] == 1
    assert answers[0][1].startswith("text/plain; version=0.0.4")


def test_openmetrics_on_request_and_healthz_like_goss(service) -> None:
    svc, _ = service()
    status, ctype, body = _get(svc.server.url + "/metrics", "application/openmetrics-text")
    assert status == 200 and ctype.startswith("application/openmetrics-text; version=1.0.0")
    assert any(f.name == "factbook_check_status" for f in om_parse(body))
    status, _, body = _get(svc.server.url + "/healthz")
    assert status == 503  # hw.cpu.too_many drifts
    assert "hw.cpu.too_many" in body and "hw.cpu.threads" not in body
    assert _get(svc.server.url + "/nope")[0] == 404


def test_healthz_200_when_all_pass(tmp_path: Path) -> None:
    kb, _ = _kb(tmp_path)
    settings = ServeSettings(root=kb, patterns=["hw.cpu.threads"], interval=300)
    svc = start_service(settings, port=free_port())
    try:
        status, _, body = _get(svc.server.url + "/healthz")
    finally:
        svc.close()
    assert status == 200 and "1 checks: 1 passed" in body


def test_reverifies_on_the_interval_never_two_runs_at_once(service) -> None:
    svc, log = service(interval=1.0, threads=4)
    url = svc.server.url + "/metrics"
    deadline = time.monotonic() + 20
    with ThreadPoolExecutor(4) as pool:
        while len(_calls(log)) < 2 and time.monotonic() < deadline:
            list(pool.map(lambda _: _get(url), range(4)))
            time.sleep(0.2)
    calls = sorted(_calls(log))
    assert len(calls) >= 2
    for (_, end, _), (start, _, _) in itertools.pairwise(calls):
        assert start >= end  # runs one after another, never overlapping


def test_an_idle_client_holds_no_worker(service) -> None:
    svc, _ = service(threads=1, client_timeout=1.0)
    _get(svc.server.url + "/healthz")  # the first run, out of the timing below
    host, port = svc.server.server_address[:2]
    idle = socket.create_connection((host, port))  # sends nothing; the only worker stays free
    try:
        started = time.monotonic()
        assert _get(svc.server.url + "/healthz")[0] == 503
        assert time.monotonic() - started < 0.8
    finally:
        idle.close()


def _timed_scrape(url: str) -> float:
    started = time.monotonic()
    status, _, body = _get(url + "/metrics")
    assert status == 200 and "factbook_check_status" in body
    return time.monotonic() - started


def _trickle(host: str, port: int, stop: threading.Event, dropped: list[float]) -> None:
    """A slowloris client: one byte of a request head every 3 s, never finishing it."""
    started = time.monotonic()
    with socket.create_connection((host, port)) as sock:
        for byte in itertools.cycle(b"GET /metrics HTTP/1.1\r\nX-Slow: "):
            try:
                sock.sendall(bytes([byte]))
                sock.settimeout(3.0)
                if sock.recv(1) == b"":  # the server closed it
                    dropped.append(time.monotonic() - started)
                    return
            except TimeoutError:
                pass
            except OSError:
                dropped.append(time.monotonic() - started)
                return
            if stop.is_set():
                return


def test_slow_clients_do_not_keep_scrapers_out(service) -> None:
    """8 clients trickling a header byte every 3 s, then 200 idle sockets: /metrics answers
    in well under a second throughout; the slow ones are dropped at the header deadline,
    and the log has one line each, no traceback."""
    lines: list[str] = []
    svc, _ = service(threads=4, log=lines.append)
    host, port = svc.server.server_address[:2]
    _timed_scrape(svc.server.url)  # the first run, out of the timing below
    stop, dropped = threading.Event(), []
    tricklers = [
        threading.Thread(target=_trickle, args=(host, port, stop, dropped), daemon=True)
        for _ in range(8)
    ]
    for thread in tricklers:
        thread.start()
    try:
        times = []
        for _ in range(4):  # over ~6 s: before and after the header deadline (5 s)
            time.sleep(1.5)
            times.append(_timed_scrape(svc.server.url))
        idle = [socket.create_connection((host, port)) for _ in range(200)]
        time.sleep(0.5)  # all accepted: the oldest waiting ones were dropped for newer ones
        try:
            times += [_timed_scrape(svc.server.url) for _ in range(3)]
        finally:
            for sock in idle:
                sock.close()
    finally:
        stop.set()
    for thread in tricklers:
        thread.join(10)
    print(f"/metrics under slow clients: {max(times):.3f} s at most ({len(times)} scrapes)")
    assert max(times) < 2.0, times
    assert len(dropped) == 8 and all(4.0 < t < 9.0 for t in dropped), dropped
    assert any("no complete request head within 5 s" in line for line in lines)
    assert any("more than 64 waiting" in line for line in lines)
    assert not any("Traceback" in line for line in lines)


def test_unloadable_knowledge_base_is_503_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "bad.yaml").write_text("facts:\n  - id: [\n")
    svc = start_service(ServeSettings(root=tmp_path), port=free_port())
    try:
        status, _, body = _get(svc.server.url + "/metrics")
    finally:
        svc.close()
    assert status == 503 and body.startswith("factbook: facts/bad.yaml:")


def test_cli_serves_on_loopback_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    kb, _ = _kb(tmp_path, seconds=0)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "factbook.commands.cli",
            "--root",
            str(kb),
            "serve",
            "-q",
            "--listen",
            f"127.0.0.1:{port}",
            "hw.cpu.threads",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status = _get(f"http://127.0.0.1:{port}/healthz")[0]
                break
            except urllib.error.URLError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.2)
        assert status == 200
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert f"serving http://127.0.0.1:{port}/metrics" in err


def test_cli_refuses_a_bad_listen_address(tmp_path: Path) -> None:
    from tests.helpers import cli

    kb, _ = _kb(tmp_path)
    code, _, err = cli(kb, "serve", "--listen", "nowhere")
    assert code == 2 and "expected HOST:PORT" in err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        code, _, err = cli(kb, "serve", "--listen", f"127.0.0.1:{taken.getsockname()[1]}")
    assert code == 2 and "cannot listen on 127.0.0.1:" in err
