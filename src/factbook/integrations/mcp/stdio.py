"""The stdio wire of `factbook mcp`: bounded lines in, a JSON-RPC error for what is no message.

The SDK's stdio transport reads a line whole (a 256 MiB line took a gigabyte) and drops what
does not parse without a word, so a client never learns why it got no answer. Here fd 0 is
read in chunks (LineReader): a line longer than `limit` bytes is refused with an Invalid
Request error (id null) as soon as it crosses the limit, and the rest of it is skipped as it
arrives, never held. Each complete line is judged (judge) as JSON-RPC 2.0 says: bytes that
are not UTF-8, JSON that does not parse or holds a lone surrogate get a Parse error (-32700),
JSON that is not a message object an Invalid Request (-32600); the server goes on with the
next line. Messages go on, unchanged, to the SDK's stdio_server, which parses them again.

While serving, fd 0 reads /dev/null and fd 1 writes to stderr (as the SDK's own transport
arranges), so no child process or stray print reads the client's messages or breaks a line.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import anyio
from mcp.server.stdio import stdio_server
from mcp_types import INVALID_REQUEST, PARSE_ERROR, jsonrpc_message_adapter
from pydantic import ValidationError

from factbook.judging.sanitize import json_hidden_escaped, strings_in

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

CHUNK = 1 << 16
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Refusal:
    """A line that is no message: the JSON-RPC error to answer it with."""

    code: int
    message: str
    id: int | str | None = None

    def json(self) -> str:
        error = {"code": self.code, "message": self.message}
        return json.dumps({"jsonrpc": "2.0", "id": self.id, "error": error})


class LineReader:
    """Splits a byte stream into lines of at most `limit` bytes; memory stays within
    `limit` plus one chunk whatever arrives. A longer line yields one Refusal when it
    crosses the limit, and its remaining bytes are dropped up to the next newline."""

    def __init__(self, limit: int):
        self.limit = limit
        self.buffer = bytearray()
        self.skipping = False

    def feed(self, chunk: bytes) -> list[bytes | Refusal]:
        out: list[bytes | Refusal] = []
        start = 0
        while start <= len(chunk):
            end = chunk.find(b"\n", start)
            stop = len(chunk) if end < 0 else end
            if not self.skipping:
                self.buffer += chunk[start:stop]
                if len(self.buffer) > self.limit:
                    self.buffer = bytearray()  # released, not just emptied
                    self.skipping = True
                    out.append(_too_long(self.limit))
            if end < 0:
                break
            if not self.skipping:
                out.append(bytes(self.buffer))
            self.buffer.clear()
            self.skipping = False
            start = end + 1
        return out

    def finish(self) -> list[bytes | Refusal]:
        """The last line, when the stream ends without a newline."""
        return self.feed(b"\n") if self.buffer else []


def _too_long(limit: int) -> Refusal:
    return Refusal(
        INVALID_REQUEST,
        f"Invalid Request: message over {limit} bytes (mcp.max_message_bytes in "
        "factbook.yaml); the rest of the line is skipped",
    )


def judge(line: bytes) -> str | Refusal | None:
    """A line as the text of a JSON-RPC message, the error answering it, or None (blank)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Refusal(PARSE_ERROR, f"Parse error: not UTF-8 (byte {exc.start} of the line)")
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except RecursionError:
        return Refusal(PARSE_ERROR, "Parse error: JSON nested too deeply")
    except ValueError as exc:  # JSONDecodeError, or an integer of more than 4300 digits
        return Refusal(PARSE_ERROR, f"Parse error: {str(exc)[:200]}")
    if "\\u" in text and _has_lone_surrogate(value):
        return Refusal(PARSE_ERROR, "Parse error: a lone surrogate (\\ud800-\\udfff) is no text")
    if isinstance(value, list):
        return Refusal(INVALID_REQUEST, "Invalid Request: batches are not part of MCP")
    if not isinstance(value, dict):
        return Refusal(INVALID_REQUEST, "Invalid Request: a message is a JSON object")
    if "method" in value and "id" in value and _id(value) is None:
        # `"id": {"a": 1}`, 1.5, true or null validated as a notification, which the SDK
        # dropped unanswered: the client waited for ever (round 24)
        return Refusal(INVALID_REQUEST, "Invalid Request: id: a string or an integer (MCP)")
    try:
        jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"])[:200] or "message"
        return Refusal(
            INVALID_REQUEST, f"Invalid Request: {where}: {exc.errors()[0]['msg']}", _id(value)
        )
    return text


def _id(message: dict[str, Any]) -> int | str | None:
    """The request's id where it is one JSON-RPC allows, so the error can name it."""
    ident = message.get("id")
    if isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool)):
        return ident
    return None


def _has_lone_surrogate(value: Any) -> bool:
    """Whether any string (key or value) in a parsed JSON value holds a lone surrogate."""
    return any(_SURROGATE.search(text) for text in strings_in(value))


class Wire:
    """The client's two pipes, on private descriptors: chunked reads, whole-line writes."""

    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.lock = threading.Lock()

    def read(self) -> bytes:
        return os.read(self.read_fd, CHUNK)

    def write(self, text: str) -> None:
        """One line, whole: answers and errors come from two tasks, never interleaved."""
        data = memoryview(text.encode("utf-8"))
        with self.lock:
            while data:
                data = data[os.write(self.write_fd, data) :]


class Incoming:
    """The SDK transport's stdin: an async iterator over the lines that are messages. Any
    other line is answered on the wire here and never reaches the SDK."""

    def __init__(self, wire: Wire, limit: int):
        self.wire = wire
        self.reader = LineReader(limit)
        self.ready: deque[bytes | Refusal] = deque()
        self.ended = False

    def __aiter__(self) -> AsyncIterator[str]:
        return self

    async def __anext__(self) -> str:
        while True:
            while not self.ready:
                if self.ended:
                    raise StopAsyncIteration
                chunk = await anyio.to_thread.run_sync(self.wire.read, abandon_on_cancel=True)
                self.ended = not chunk
                self.ready.extend(self.reader.feed(chunk) if chunk else self.reader.finish())
            item = self.ready.popleft()
            verdict = judge(item) if isinstance(item, bytes) else item
            if isinstance(verdict, str):
                return verdict
            if verdict is not None:
                await anyio.to_thread.run_sync(self.wire.write, verdict.json() + "\n")


class Outgoing:
    """The SDK transport's stdout: each write is one whole line on the wire."""

    def __init__(self, wire: Wire):
        self.wire = wire

    async def write(self, text: str) -> None:
        """The SDK's JSON line with every control, bidi and line-separator character written
        as a `\\uXXXX` escape: the same message when parsed, and none raw on the wire (the
        SDK writes U+202E and U+2028 as they are)."""
        await anyio.to_thread.run_sync(self.wire.write, json_hidden_escaped(text))

    async def flush(self) -> None:
        return None


@contextlib.contextmanager
def claimed_stdio() -> Iterator[Wire]:
    """The process's stdin and stdout as a Wire, fd 0 on /dev/null and fd 1 on stderr
    meanwhile; both restored after."""
    sys.stdout.flush()
    read_fd, write_fd = os.dup(0), os.dup(1)  # not inherited by children (PEP 446)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        yield Wire(read_fd, write_fd)
    finally:
        os.close(null)
        os.dup2(read_fd, 0)
        os.dup2(write_fd, 1)
        os.close(read_fd)
        os.close(write_fd)


async def serve_stdio(server: MCPServer, limit: int) -> None:
    """Run `server` over this process's stdin and stdout, messages bounded to `limit` bytes."""
    lowlevel = getattr(server, "_lowlevel_server", None)
    if lowlevel is None:  # the SDK's own server object: what its run_stdio_async runs
        raise RuntimeError("this mcp SDK has no MCPServer._lowlevel_server; factbook needs it")
    with claimed_stdio() as wire:
        incoming, outgoing = cast(Any, Incoming(wire, limit)), cast(Any, Outgoing(wire))
        async with stdio_server(incoming, outgoing) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
