"""Caches kept inside a knowledge base, sealed with a key only this user can read.

`.factbook-cache/` (the parsed knowledge base, the parsed runbooks) lies inside the knowledge
base, and a shared knowledge base is writable by many people. Its stamps (sizes, times,
inodes, SHA-256 of the bytes read) say whether the files changed since the cache was made,
not who made it: anyone who can write the folder could plant a cache whose stamps match the
real files and whose contents do not (facts no file holds, checks verify would run), and no
review of the files would show it. So each user keeps their own cache file, sealed: its
first line is an HMAC-SHA256 of the rest under a random key kept in the user's own cache folder
(`$XDG_CACHE_HOME/factbook/cache-key`, else `~/.cache/factbook/cache-key`, mode 0600, made
on first use). A file without a valid seal is ignored (the knowledge base is parsed), and
where no key can be kept (no home, a key readable by others or not the user's) nothing is
cached at all.

    name = file_name("kb")     # kb-<16 hex>.json: this user's own file
    sealed = seal(body)        # None: no key here, do not write a cache
    body = unseal(sealed)      # None: not sealed by this user's key, parse instead
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
from functools import lru_cache
from pathlib import Path

KEY_FILE = "cache-key"
KEY_BYTES = 32


def key_path() -> Path:
    """Where this user's key is kept (outside any knowledge base)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "factbook" / KEY_FILE


def file_name(stem: str) -> str:
    """The name of this user's cache file `stem` (`kb-1f3a9c0e5b7d2468.json`): each user of a
    shared knowledge base keeps their own, so two of them do not undo each other's cache at
    every run. The suffix is derived from the key and tells nothing of it."""
    key = _key(key_path())
    if key is None:
        return f"{stem}.json"  # never written nor read: nothing seals it
    return f"{stem}-{hmac.new(key, b'file name', hashlib.sha256).hexdigest()[:16]}.json"


def seal(body: bytes) -> bytes | None:
    """`body` with its seal as a first line; None where this user has no key."""
    key = _key(key_path())
    if key is None:
        return None
    return _tag(key, body) + b"\n" + body


def unseal(data: bytes) -> bytes | None:
    """The body of a file `seal` made with this user's key; None for any other."""
    tag, newline, body = data.partition(b"\n")
    key = _key(key_path())
    if key is None or not newline or not hmac.compare_digest(tag, _tag(key, body)):
        return None
    return body


def _tag(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).hexdigest().encode("ascii")


@lru_cache(maxsize=4)
def _key(path: Path) -> bytes | None:
    """The key at `path`, made when missing; None when it cannot be kept for this user only.
    Made under a temporary name and linked into place, so a reader never sees half a key and
    two first runs at once agree on one."""
    key = _read_key(path)
    if key is not None:
        return key
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temp = path.with_name(f".{KEY_FILE}.{secrets.token_hex(8)}")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, secrets.token_bytes(KEY_BYTES))
        finally:
            os.close(fd)
        try:
            os.link(temp, path)  # fails where another process made it first: theirs is read
        except FileExistsError:
            pass
        finally:
            os.unlink(temp)
    return _read_key(path)


def _read_key(path: Path) -> bytes | None:
    """The key, if `path` is this user's regular file that no one else can read or write."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        private = stat.S_ISREG(info.st_mode) and not info.st_mode & 0o077
        if not private or info.st_uid != os.getuid() or info.st_size != KEY_BYTES:
            return None
        key = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    return key if len(key) == KEY_BYTES else None
