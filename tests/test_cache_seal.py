"""Caches inside a knowledge base are sealed with the user's own key (knowledge/cachekey.py).

Anyone who can write a shared knowledge base can write its `.factbook-cache/`. The stamps
there (sizes, times, inodes, SHA-256 of the bytes read) say whether the files changed, not
who made the cache: a planted kb.json whose stamps match the real files and whose facts do
not was served to every reading command (and its checks to verify), with nothing in the
files for a review to see. Each test plants such a cache and checks that what is read is
what the files say.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import fact, make_kb

from factbook.handbook.runbookcache import RunbookCache
from factbook.knowledge import cachekey, kbcache
from factbook.knowledge.kb import load_kb_with_problems

REAL = "the statement the file holds"
FORGED = "a statement no file holds"


@pytest.fixture
def key_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of the user's own for the key, fresh for the test."""
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("FACTBOOK_CACHE", raising=False)
    return home


def _kb(tmp_path: Path) -> Path:
    one = fact("t.one", "file.exists", {"eq": True}, args={"path": "/"})
    one["statement"] = REAL
    root = make_kb(tmp_path / "kb", [one])
    time.sleep(kbcache.CLOCK_SLACK_NS / 1e9 + 0.02)  # files this fresh are not cached
    return root.resolve()


def _forged(body: bytes) -> bytes:
    """The cache body with the fact's statement changed, its stamps left as they are."""
    head, _, data = body.partition(b"\n")
    changed = data.replace(REAL.encode(), FORGED.encode())
    assert changed != data
    return head + b"\n" + changed


def _sealed_by_another_key(body: bytes) -> bytes:
    tag = hmac.new(secrets.token_bytes(32), body, hashlib.sha256).hexdigest().encode()
    return tag + b"\n" + body


@pytest.mark.parametrize("how", ["unsealed", "another key", "seal line kept"])
def test_a_planted_cache_is_never_read(tmp_path: Path, key_home: Path, how: str) -> None:
    root = _kb(tmp_path)
    load_kb_with_problems(root)  # a process's first load may build the probe catalog first
    load_kb_with_problems(root)
    path = kbcache.cache_path(root)
    sealed = path.read_bytes()
    body = cachekey.unseal(sealed)
    assert body is not None, "the load wrote no cache sealed by this user's key"
    forged = _forged(body)
    planted = {
        "unsealed": forged,
        "another key": _sealed_by_another_key(forged),
        "seal line kept": sealed.partition(b"\n")[0] + b"\n" + forged,
    }[how]
    path.write_bytes(planted)
    kb, _ = load_kb_with_problems(root)
    assert kb.facts["t.one"].statement == REAL
    env = {**os.environ, "XDG_CACHE_HOME": str(key_home)}
    shown = subprocess.run(
        [sys.executable, "-m", "factbook", "--root", str(root), "show", "t.one"],
        capture_output=True, text=True, env=env, timeout=60, check=True,
    )  # fmt: skip
    assert REAL in shown.stdout and FORGED not in shown.stdout


def test_the_users_own_cache_is_read_and_its_key_is_private(tmp_path: Path, key_home: Path) -> None:
    root = _kb(tmp_path)
    load_kb_with_problems(root)
    load_kb_with_problems(root)
    key = key_home / "factbook" / cachekey.KEY_FILE
    assert key.stat().st_mode & 0o777 == 0o600 and key.stat().st_size == cachekey.KEY_BYTES
    path = kbcache.cache_path(root)
    path.write_bytes(cachekey.seal(_forged(cachekey.unseal(path.read_bytes()))))
    kb, _ = load_kb_with_problems(root)  # what this user sealed is this user's: read
    assert kb.facts["t.one"].statement == FORGED


@pytest.mark.parametrize("how", ["readable by others", "a link", "wrong size"])
def test_no_private_key_no_cache(tmp_path: Path, key_home: Path, how: str) -> None:
    """A key others can read (or change), a link, a damaged key: nothing is sealed or read."""
    folder = key_home / "factbook"
    folder.mkdir(parents=True)
    key = folder / cachekey.KEY_FILE
    if how == "a link":
        (tmp_path / "elsewhere").write_bytes(secrets.token_bytes(cachekey.KEY_BYTES))
        os.chmod(tmp_path / "elsewhere", 0o600)
        key.symlink_to(tmp_path / "elsewhere")
    else:
        key.write_bytes(secrets.token_bytes(cachekey.KEY_BYTES + (how == "wrong size")))
        os.chmod(key, 0o644 if how == "readable by others" else 0o600)
    assert cachekey.seal(b"x") is None and cachekey.unseal(b"tag\nx") is None
    root = _kb(tmp_path)
    kb, _ = load_kb_with_problems(root)
    assert kb.facts["t.one"].statement == REAL
    assert not kbcache.cache_path(root).exists()


def test_a_planted_runbook_cache_is_never_read(tmp_path: Path, key_home: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    cache = RunbookCache(root)
    cache.put("runbooks/a.md", "sha-of-a", {"title": REAL})
    cache.save()
    assert RunbookCache(root).get("runbooks/a.md", "sha-of-a") == {"title": REAL}
    path = cache.path
    body = json.loads(cachekey.unseal(path.read_bytes()))
    body["entries"]["runbooks/a.md"][1]["title"] = FORGED
    path.write_bytes(_sealed_by_another_key(json.dumps(body).encode()))
    assert RunbookCache(root).get("runbooks/a.md", "sha-of-a") is None


def test_two_users_keep_their_own_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key_home: Path
) -> None:
    """Each user of a shared knowledge base reads and writes a file of their own: one user's
    run does not undo the other's cache (both sealed, neither parsed again)."""
    root = _kb(tmp_path)
    load_kb_with_problems(root)
    load_kb_with_problems(root)
    mine = kbcache.cache_path(root)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other-user"))
    load_kb_with_problems(root)
    theirs = kbcache.cache_path(root)
    assert mine != theirs and mine.is_file() and theirs.is_file()
    assert cachekey.unseal(theirs.read_bytes()) is not None
    assert cachekey.unseal(mine.read_bytes()) is None  # not theirs to read
