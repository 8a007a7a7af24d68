"""`factbook mcp`'s stdio wire, driven byte by byte: what is not a message gets a JSON-RPC
error (never silence), a line over the size limit is refused without being held in memory,
and the server answers the next message either way.

The server is a real `python -m factbook mcp` subprocess; the client writes raw bytes to its
stdin and reads the lines it answers, as a misbehaving client would.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, local_trio, make_kb, module_or_skip

module_or_skip("mcp", reason="the mcp extra is not installed")


class Wire:
    """A `factbook mcp` process and its raw stdin / stdout."""

    def __init__(self, root: Path, *extra: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "factbook", "mcp", "--root", str(root), *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(REPO / "src"), "NO_COLOR": "1"},
            cwd=str(root),
        )
        self.pending = b""

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def answer(self, timeout: float = 20.0) -> dict[str, Any]:
        """The next line the server writes, as JSON; fails after `timeout` seconds."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            assert left > 0, f"no answer within {timeout} s; stderr: {self.stderr_tail()}"
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 16)
                assert chunk, f"the server closed stdout; stderr: {self.stderr_tail()}"
                self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def request(self, ident: int, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        self.send(json.dumps(message).encode() + b"\n")

    def initialize(self) -> None:
        self.request(
            0,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        )
        assert self.answer()["id"] == 0
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def ping(self, ident: int) -> None:
        """A ping that must be answered: the server is still serving."""
        self.request(ident, "ping")
        assert self.answer() == {"jsonrpc": "2.0", "id": ident, "result": {}}

    def peak_rss_mib(self) -> float:
        """The server's high-water resident memory (VmHWM), MiB."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmHWM in /proc")

    def stderr_tail(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")[-2000:]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def wire(tmp_path: Path) -> Iterator[Any]:
    started: list[Wire] = []

    def start(*extra: str, settings: str = "") -> Wire:
        root = make_kb(tmp_path / "kb", local_trio())
        if settings:
            (root / "factbook.yaml").write_text(settings)
        server = Wire(root, *extra)
        started.append(server)
        server.initialize()
        return server

    yield start
    for server in started:
        server.close()


def _error(answer: dict[str, Any], code: int, ident: Any = None) -> str:
    assert answer["jsonrpc"] == "2.0" and answer["id"] == ident, answer
    assert answer["error"]["code"] == code, answer
    return str(answer["error"]["message"])


PARSE_ERRORS = [
    pytest.param(b"{not json", id="unparseable"),
    pytest.param(b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"\\ud800"}}', id="lone"),
    pytest.param(b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"\\udfff":1}}', id="key"),
    pytest.param(b'{"jsonrpc":"2.0","id":6,"method":"ping","params":{"x":"\xff"}}', id="not-utf8"),
    pytest.param(
        b'{"jsonrpc":"2.0","id":6,"method":"ping","params":{"x":"\xed\xa0\x80"}}', id="cesu"
    ),
    pytest.param(b"[" * 200_000, id="deep"),
]
INVALID_REQUESTS = [
    pytest.param(b"42", None, id="number"),
    pytest.param(b'"ping"', None, id="string"),
    pytest.param(b"null", None, id="null"),
    pytest.param(b"[]", None, id="empty-batch"),
    pytest.param(b'[{"jsonrpc":"2.0","id":8,"method":"ping"}]', None, id="batch"),
    pytest.param(b'{"a":1}', None, id="not-jsonrpc"),
    pytest.param(b'{"jsonrpc":"2.0","id":9,"method":5}', 9, id="bad-method"),
]


def test_what_is_not_a_message_is_answered_and_serving_goes_on(wire) -> None:
    """JSON-RPC 2.0: -32700 for what does not parse (bad JSON, bytes that are not UTF-8, a
    lone surrogate), -32600 for JSON that is not a request object; a ping after each."""
    server = wire()
    for n, param in enumerate(PARSE_ERRORS):
        server.send(param.values[0] + b"\n")
        message = _error(server.answer(), -32700)
        assert message.startswith("Parse error"), (param.id, message)
        server.ping(100 + n)
    for n, param in enumerate(INVALID_REQUESTS):
        line, ident = param.values
        server.send(line + b"\n")
        assert _error(server.answer(), -32600, ident).startswith("Invalid Request"), param.id
        server.ping(200 + n)
    server.send(b"\n  \r\n")  # blank lines are nothing to answer
    server.ping(300)
    # a valid surrogate pair is text, not an error
    server.request(301, "ping", {"x": "\ud83d\ude00"})
    assert server.answer()["id"] == 301


def test_an_oversized_line_is_refused_without_holding_it(wire) -> None:
    """256 MiB on one line: an Invalid Request answer (id null), memory stays flat (the SDK
    read the line whole: >512 MiB and no answer), and the next message is answered."""
    server = wire()
    server.ping(1)
    before = server.peak_rss_mib()
    server.send(b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"')
    for _ in range(8):
        server.send(b"a" * (1 << 20))
    answer = server.answer()  # refused as soon as the limit is crossed, not at the line's end
    assert "over" in _error(answer, -32600) and "4194304 bytes" in answer["error"]["message"]
    for _ in range(248):
        server.send(b"a" * (1 << 20))
    server.send(b'"}}\n')
    server.ping(3)
    grown = server.peak_rss_mib() - before
    print(f"peak RSS grew {grown:.1f} MiB over a 256 MiB line")
    assert grown < 48, grown


def test_the_limit_comes_from_factbook_yaml(wire) -> None:
    server = wire(settings="mcp:\n  max_message_bytes: 65536\n")
    text = "x" * 40_000
    server.request(1, "tools/call", {"name": "match_pitfalls", "arguments": {"text": text}})
    assert "result" in server.answer()
    server.request(2, "tools/call", {"name": "match_pitfalls", "arguments": {"text": text * 2}})
    assert "65536 bytes" in _error(server.answer(), -32600)
    server.ping(3)


@pytest.mark.parametrize("value", ["1000", "true", "999999999999", "'4 MiB'"])
def test_a_wrong_limit_in_factbook_yaml_stops_the_server_with_its_line(
    tmp_path: Path, value: str
) -> None:
    from helpers import cli

    root = make_kb(tmp_path / "kb", local_trio())
    (root / "factbook.yaml").write_text(f"mcp:\n  max_message_bytes: {value}\n")
    code, _, err = cli(root, "mcp")
    assert code == 2 and "factbook.yaml:2: mcp.max_message_bytes" in err, err


def test_line_reader_bounds_each_line_across_chunks() -> None:
    """A line of exactly `limit` bytes passes, one byte more is refused once, wherever the
    chunks split it; the bytes after a refused line's newline are a line of their own."""
    from factbook.integrations.mcp.stdio import LineReader, Refusal

    stream = b"a" * 8 + b"\n" + b"b" * 9 + b"\nc\n" + b"tail"
    for size in (1, 3, 8, 9, len(stream)):
        reader = LineReader(8)
        out = []
        for start in range(0, len(stream), size):
            out += reader.feed(stream[start : start + size])
        out += reader.finish()
        assert [x if isinstance(x, bytes) else "refused" for x in out] == [
            b"a" * 8, "refused", b"c", b"tail"
        ], size  # fmt: skip
        assert all(isinstance(x, (bytes, Refusal)) for x in out)
        assert len(reader.buffer) == 0


def test_a_request_its_handler_refuses_is_one_escaped_log_line_not_a_traceback(wire) -> None:
    """The SDK logs a handler's error with its traceback (rich's boxed frames on the client's
    log) and the client's own text raw: an unknown prompt named with an ESC repainted the
    terminal the log went to. One line now, escaped, and the server goes on."""
    server = wire()
    server.request(1, "prompts/get", {"name": "nope\x1b[31m"})
    assert "Unknown prompt" in server.answer()["error"]["message"]
    server.ping(2)
    server.close()
    assert server.proc.stderr is not None
    said = server.proc.stderr.read().decode()
    assert said.splitlines() == [
        "factbook mcp: error: handler for 'prompts/get' raised: ValueError: Unknown prompt: "
        "nope\\x1b[31m"
    ], said
