"""knownhosts.PlainIndex finds exactly the lines a scan of every line would, in file order.

A run over N boxes looks each box up once; the index keeps that a dictionary lookup for
literal names while wildcard, negated and hashed lines are still matched one by one.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import random
from pathlib import Path

import pytest

from factbook.verification.transports import knownhosts

KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
NAMES = ["box1", "BOX1", "box2", "[box1]:2222", "[10.0.0.5]:22", "10.0.0.5", "gpu-07", "gpu-7"]


def _hashed(name: str, salt: bytes) -> str:
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"


def _line(rng: random.Random, i: int) -> str:
    roll = rng.random()
    if roll < 0.15:
        names = _hashed(rng.choice(NAMES), bytes([i]) * 20)
    elif roll < 0.3:
        names = ",".join(rng.sample(["gpu-*", "!gpu-7", "box?", "*", "[box1]:*", "10.0.0.*"], 2))
    else:
        names = ",".join(rng.sample(NAMES, rng.randint(1, 3)))
    marker = rng.choice(["", "", "", "", "@revoked ", "@cert-authority "])
    return f"{marker}{names} ssh-ed25519 {KEY}"


def test_lookup_is_the_scan_in_file_order() -> None:
    rng = random.Random(29)
    for _ in range(40):
        lines = knownhosts.parse(
            "\n".join(_line(rng, i) for i in range(rng.randint(0, 30))), "known_hosts"
        )
        index = knownhosts.PlainIndex()
        cut = rng.randint(0, len(lines))
        index.add(lines[:cut])
        index.add(lines[cut:])  # lines appended later (accept-new) keep their place
        for name in [*NAMES, "gpu-8", "other"]:
            scan = [e for e in lines if e.marker is None and e.matches(name)]
            assert index.lookup(name) == scan, name


def test_a_known_hosts_file_past_the_bound_is_refused_not_read_whole(tmp_path: Path) -> None:
    """Any file may be named as UserKnownHostsFile; one of gigabytes was read whole into
    memory. Past KNOWN_HOSTS_MAX_BYTES it is an OSError (HostKeyError: `cannot read ...`)
    after reading no more than the bound (a sparse file: nothing is written to disk)."""
    from factbook.knowledge.limits import KNOWN_HOSTS_MAX_BYTES

    huge = tmp_path / "known_hosts"
    with huge.open("wb") as handle:
        handle.truncate(KNOWN_HOSTS_MAX_BYTES + 1)
    with pytest.raises(OSError, match=f"larger than {KNOWN_HOSTS_MAX_BYTES} bytes"):
        knownhosts.load(huge)
    at_bound = tmp_path / "at_bound"
    at_bound.write_text(f"h1 ssh-ed25519 {KEY}\n")
    assert len(knownhosts.load(at_bound)) == 1
