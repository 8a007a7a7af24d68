"""Network probes: HTTP endpoints (status and a JSON path) and listening ports.

Stdlib only: this source is shipped to the box and executed there by the agent, so
`localhost` means the box itself (the SGLang server's /get_server_info, port 8000).
"""

from __future__ import annotations

import json
import re
import socket
import urllib.error
import urllib.request
from typing import Any

TEXT_CAP = 65536
# the most of an answer read: a server's JSON (/health, /get_server_info) is a few kB
BODY_MAX_BYTES = 16 << 20
_PART = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")


def _lookup(data: Any, path: str) -> Any:
    current = data
    for name, index in _PART.findall(path):
        try:
            current = current[int(index)] if index else current[name]
        except (KeyError, IndexError, TypeError):
            return None
    return current


def http_get(url: str, headers: dict | None = None, json_path: str | None = None) -> dict:
    """`{status, json, text}` of a GET (`json` is the value at `json_path`); `localhost` is
    the box; an answer over 16 MiB is an error.
    """
    request = urllib.request.Request(
        str(url), headers={str(k): str(v) for k, v in (headers or {}).items()}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, body = response.status, response.read(BODY_MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read(BODY_MAX_BYTES + 1)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise RuntimeError(f"cannot reach {url}: {reason}") from None
    if len(body) > BODY_MAX_BYTES:  # a server on the box may answer without end
        raise RuntimeError(f"{url}: the answer is larger than {BODY_MAX_BYTES} bytes")
    text = body.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        parsed = None
    if json_path and parsed is not None:
        parsed = _lookup(parsed, str(json_path))
    return {"status": status, "json": parsed, "text": text[:TEXT_CAP]}


def _proc_listening(port: int) -> bool | None:
    """LISTEN sockets from /proc/net/tcp{,6}; None when /proc is not there."""
    seen_any = False
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        seen_any = True
        for line in lines:
            fields = line.split()
            if (
                len(fields) > 3
                and fields[3] == "0A"
                and int(fields[1].rsplit(":", 1)[1], 16) == port
            ):
                return True
    return False if seen_any else None


def port_listening(port: int, host: str | None = None) -> bool:
    """True when something listens on the port: LISTEN sockets from /proc/net/tcp (or a
    connect to `host`).
    """
    port = int(port)
    if host is None:
        found = _proc_listening(port)
        if found is not None:
            return found
        host = "127.0.0.1"
    try:
        with socket.create_connection((str(host), port), timeout=3):
            return True
    except OSError:
        return False


PROBES = {
    "http.get": http_get,
    "port.listening": port_listening,
}
