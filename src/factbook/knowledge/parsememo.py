"""Files parsed in this process, reused while their text is the same.

A long-lived process (`mkdocs serve`, `factbook mcp`, `factbook serve`) loads the knowledge
base again after every edit, and parsing and validating every fact file costs far more than
the one file an edit changed (about 0.5 s of CPU at 1,000 facts). The loader keeps each file's
result keyed on its path and compared on its whole text (read anyway; size and mtime are
never trusted), so only a file whose text changed is parsed again. A parse depends on nothing
but the text, its display name and factbook's code, which a running process does not change.

Bounded: past MAX_CHARS of kept text the least recently used files are dropped. Off with
FACTBOOK_CACHE=0, like the cache on disk (kbcache.py), and inside `transient()`: a throwaway
copy of a knowledge base (an import's scratch copy) is never read again.
"""

from __future__ import annotations

import contextvars
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

from factbook.knowledge import kbcache

T = TypeVar("T")
MAX_CHARS = 64 << 20  # the text of a few thousand fact files; the parse is several times that


_KEEP: contextvars.ContextVar[bool] = contextvars.ContextVar("keep_parses", default=True)


@contextmanager
def transient() -> Iterator[None]:
    """Inside the block nothing new is kept: the files read belong to a throwaway copy (an
    import's scratch knowledge base, under a new temporary path each time), whose parses
    nobody asks for again. Kept, they grew `factbook mcp` by ~4 MB a proposal."""
    token = _KEEP.set(False)
    try:
        yield
    finally:
        _KEEP.reset(token)


class TextMemo(Generic[T]):
    """(key, text) -> the value made from that text, for the most recently used keys."""

    def __init__(self, max_chars: int = MAX_CHARS) -> None:
        self._items: OrderedDict[str, tuple[str, T]] = OrderedDict()
        self._chars = 0
        self._max = max_chars
        self._lock = threading.Lock()  # a server may load from two threads at once
        self.hits = 0

    def get(self, key: str, text: str) -> T | None:
        """The value kept for `key` if it was made from exactly `text`."""
        if not kbcache.enabled():
            return None
        with self._lock:
            kept = self._items.get(key)
            if kept is None or kept[0] != text:
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return kept[1]

    def put(self, key: str, text: str, value: T) -> None:
        if not kbcache.enabled() or not _KEEP.get() or len(text) > self._max:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._chars -= len(old[0])
            self._items[key] = (text, value)
            self._chars += len(text)
            while self._chars > self._max:
                _, (dropped, _) = self._items.popitem(last=False)
                self._chars -= len(dropped)
