"""Under `mkdocs serve`, notice an edit to the knowledge base as it is saved.

MkDocs watches by polling every 0.5 s (it works on every filesystem), so a saved fact waits
0.25 s on average, up to 0.5 s, before the rebuild even starts, and every watched folder is
walked twice a second. The knowledge base's folders are watched here twice over: by the
kernel (inotify, through watchdog), which reports a save at once, and by the same 0.5 s
polling, for filesystems whose changes the kernel does not report (some network and
virtual-machine mounts). A polled change to a file the kernel reported in the last few
seconds is the same save seen late and is dropped, so an edit still makes one rebuild.

Where the kernel's watch cannot be set up (another OS, the inotify limit reached) only the
polling runs, as MkDocs' own does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers.polling import PollingObserver

log = logging.getLogger("mkdocs.plugins.factbook")
POLL_S = 0.5  # MkDocs' own interval
SAME_SAVE_S = 5.0  # a polled change this soon after the kernel's report of that file


def _native_observer() -> Any | None:
    try:
        from watchdog.observers.inotify import InotifyObserver
    except ImportError:  # not Linux
        return None
    return InotifyObserver()


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: KBWatcher, native: bool) -> None:
        self._watcher = watcher
        self._native = native

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type in ("opened", "closed", "closed_no_write"):
            return
        paths = {str(event.src_path)}
        if getattr(event, "dest_path", ""):
            paths.add(str(event.dest_path))
        self._watcher.changed(paths, native=self._native)


class KBWatcher:
    """Calls `notify` once per change under the watched folders (see the module's doc)."""

    def __init__(self, notify: Callable[[], None], *, native: bool = True) -> None:
        """`native=False`: polling alone, as on a filesystem whose changes go unreported."""
        self._notify = notify
        self._lock = threading.Lock()
        self._reported: dict[str, float] = {}  # path -> when the kernel reported it
        self._poll = PollingObserver(timeout=POLL_S)
        self._native = _native_observer() if native else None

    def watch(self, path: str, *, recursive: bool = True) -> None:
        self._poll.schedule(_Handler(self, False), path, recursive=recursive)
        if self._native is None:
            return
        try:
            self._native.schedule(_Handler(self, True), path, recursive=recursive)
        except OSError as exc:  # the inotify limit: polling alone from here on
            log.info("factbook: watching %s by polling only (%s)", path, exc)
            self._native.unschedule_all()
            self._native = None

    @property
    def native(self) -> bool:
        """Whether the kernel reports changes (else polling alone)."""
        return self._native is not None

    def start(self) -> None:
        self._poll.start()
        if self._native is not None:
            self._native.start()

    def stop(self) -> None:
        for observer in (self._poll, self._native):
            if observer is not None and observer.is_alive():
                observer.stop()
                observer.join(timeout=5)

    def changed(self, paths: set[str], *, native: bool) -> bool:
        """A change to `paths` reported (by the kernel or the poller); whether it asked for
        a rebuild."""
        now = time.monotonic()
        with self._lock:
            if native:
                for path in paths:
                    self._reported[path] = now
                self._reported = {p: t for p, t in self._reported.items() if now - t < SAME_SAVE_S}
            elif all(now - self._reported.get(p, -SAME_SAVE_S) < SAME_SAVE_S for p in paths):
                return False  # the kernel reported this save already
        self._notify()
        return True


def server_notifier(server: Any) -> Callable[[], None] | None:
    """What MkDocs' own watch callback does (livereload.LiveReloadServer.watch): ask its build
    loop for a rebuild. None when this MkDocs has no such loop (then server.watch is used)."""
    cond = getattr(server, "_rebuild_cond", None)
    if cond is None or not hasattr(server, "_want_rebuild"):
        return None

    def notify() -> None:
        with cond:
            server._want_rebuild = True
            cond.notify_all()

    return notify
