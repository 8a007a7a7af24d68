"""Parsed runbooks kept on disk, so a handbook build parses only runbooks that changed.

Parsing a runbook goes through jupytext and nbformat (the runner's own parser): importing them
and validating every cell costs a cold `mkdocs build` a few hundred milliseconds for 20
runbooks, every build, though they rarely change. What the handbook takes from each parse
(sources.Runbook without its runs, which are read apart) is kept in
`ROOT/.factbook-cache/runbooks-ID.json` (ID: the user's, cachekey.py), keyed on the file's
name and the SHA-256 of its bytes, and stamped with factbook's code (kbcache.code_stamp),
jupytext's and nbformat's versions: any of them changing parses afresh. The file is sealed
with this user's key (cachekey.py): one someone else planted is not read. A damaged or
hand-edited cache is ignored (a parse), never trusted past the shapes checked here; writes
are atomic; FACTBOOK_CACHE=0 turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from importlib import metadata
from pathlib import Path
from typing import Any

from factbook.errors import WriteFailed
from factbook.knowledge import cachekey, kbcache
from factbook.knowledge.kbfiles import escapes, read_bytes
from factbook.store.atomic import throwaway_writes, write_bytes_atomic

CACHE_STEM = "runbooks"  # runbooks-<the user's key id>.json
FORMAT = 2  # 2: sealed (cachekey)
MAX_CACHE_BYTES = 64 << 20


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _stamp() -> list[Any]:
    versions = []
    for name in ("jupytext", "nbformat"):
        try:
            versions.append(metadata.version(name))
        except metadata.PackageNotFoundError:
            versions.append(None)
    return [FORMAT, versions, kbcache.code_stamp()]


class RunbookCache:
    """{runbook file name: [sha, JSON data]} of one knowledge base, read once per build."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / kbcache.CACHE_DIR / cachekey.file_name(CACHE_STEM)
        self.enabled = kbcache.enabled()
        self._stamp: list[Any] | None = None
        self._entries: dict[str, list[Any]] = {}
        self._used: dict[str, list[Any]] = {}
        self.changed = False
        if self.enabled:
            self._entries = self._read()

    def stamp(self) -> list[Any]:
        if self._stamp is None:
            self._stamp = json.loads(json.dumps(_stamp()))  # as it reads back
        return self._stamp

    def _read(self) -> dict[str, list[Any]]:
        try:
            body = cachekey.unseal(read_bytes(self.path, root=self.root, limit=MAX_CACHE_BYTES))
            if body is None:  # not sealed by this user (cachekey): someone else's, not read
                return {}
            blob = json.loads(body)
        except (OSError, ValueError):  # none yet, refused (a link out), damaged
            return {}
        if not isinstance(blob, dict) or blob.get("stamp") != self.stamp():
            return {}
        entries = blob.get("entries")
        return entries if isinstance(entries, dict) else {}

    def get(self, name: str, sha: str) -> Any | None:
        """What put() kept for these bytes of `name`, or None."""
        entry = self._entries.get(name)
        if not (isinstance(entry, list) and len(entry) == 2 and entry[0] == sha):
            return None
        self._used[name] = entry
        return entry[1]

    def put(self, name: str, sha: str, data: Any) -> None:
        """Keep `data` (JSON values only: anything else is not kept) for these bytes."""
        if not self.enabled:
            return
        try:
            kept = json.loads(json.dumps(data))
        except (TypeError, ValueError):
            return
        if kept != data:  # a tuple or a non-string key would not read back the same
            return
        self._used[name] = [sha, kept]
        self.changed = True

    def save(self) -> None:
        """Keep what this build used (runbooks since removed drop out), if anything changed."""
        if not (self.enabled and (self.changed or set(self._used) != set(self._entries))):
            return
        if escapes(self.path.parent, self.root) is not None:
            return  # a cache folder that leads out of the knowledge base is never written
        data = json.dumps({"stamp": self.stamp(), "entries": self._used})
        sealed = cachekey.seal(data.encode("utf-8"))
        if sealed is None or len(sealed) > MAX_CACHE_BYTES:
            return
        # mkstemp's fresh name: a link planted as a temp file is never written through
        with throwaway_writes(), contextlib.suppress(WriteFailed):  # read-only: parsed again
            write_bytes_atomic(self.path, sealed)
