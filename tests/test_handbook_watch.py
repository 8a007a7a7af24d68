"""The knowledge base watcher under `mkdocs serve` (handbook/watch.py), on real folders: a
save is reported at once by the kernel, a filesystem that reports nothing is still polled,
and the poller seeing the same save late does not ask for a second rebuild."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from factbook.handbook.watch import POLL_S, KBWatcher

DEBOUNCE_S = 0.1  # mkdocs.livereload.LiveReloadServer.build_delay


class Calls:
    def __init__(self) -> None:
        self.times: list[float] = []
        self.event = threading.Event()

    def __call__(self) -> None:
        self.times.append(time.monotonic())
        self.event.set()


class Watcher(KBWatcher):
    """Records what the poller reported and whether each report asked for a rebuild."""

    polled: list[tuple[set[str], bool]]

    def changed(self, paths: set[str], *, native: bool) -> bool:
        asked = super().changed(paths, native=native)
        if not native:
            self.polled.append((paths, asked))
        return asked


def _watching(tmp_path: Path, *, native: bool) -> tuple[Watcher, Calls, Path]:
    (tmp_path / "facts").mkdir()
    target = tmp_path / "facts" / "a.yaml"
    target.write_text("facts: []\n", encoding="utf-8")
    calls = Calls()
    watcher = Watcher(calls, native=native)
    watcher.polled = []
    watcher.watch(str(tmp_path / "facts"))
    watcher.watch(str(tmp_path), recursive=False)
    watcher.start()
    time.sleep(POLL_S * 2)  # the poller's first snapshot holds the file as it was
    return watcher, calls, target


@pytest.mark.skipif(not Path("/proc/sys/fs/inotify").is_dir(), reason="inotify is Linux's")
def test_a_save_is_reported_at_once_and_only_once(tmp_path: Path) -> None:
    watcher, calls, target = _watching(tmp_path, native=True)
    try:
        assert watcher.native
        saved = time.monotonic()
        temp = target.with_name(".a.yaml.tmp")  # an editor's atomic save: write, rename
        temp.write_text("facts: [] # edited\n", encoding="utf-8")
        os.replace(temp, target)
        assert calls.event.wait(5)
        assert calls.times[0] - saved < POLL_S / 2, "not reported before the poller's turn"
        deadline = time.monotonic() + POLL_S * 8
        while not watcher.polled and time.monotonic() < deadline:
            time.sleep(0.05)  # the poller sees the same save in its own time
        assert watcher.polled, "the poller never saw the save"
        # a poll that catches the save before the kernel's report arrives is harmless: MkDocs
        # waits DEBOUNCE_S for changes to stop; a report after that would build again
        late = [
            round(t - calls.times[0], 3) for t in calls.times if t - calls.times[0] > DEBOUNCE_S
        ]
        assert late == [], f"asked to rebuild again {late} s after the save was reported"
    finally:
        watcher.stop()


def test_a_filesystem_that_reports_nothing_is_still_polled(tmp_path: Path) -> None:
    watcher, calls, target = _watching(tmp_path, native=False)
    try:
        assert not watcher.native
        target.write_text("facts: [] # edited with no report\n", encoding="utf-8")
        assert calls.event.wait(POLL_S * 6), "the poller never saw the change"
        (tmp_path / "milestones.yaml").write_text("milestones: []\n", encoding="utf-8")
        deadline = time.monotonic() + POLL_S * 6
        while len(calls.times) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(calls.times) >= 2, "a new file at the root was not seen"
    finally:
        watcher.stop()


def test_a_new_file_nobody_reported_is_not_dropped(tmp_path: Path) -> None:
    """Only a file the kernel reported is deduplicated: another file's polled change counts."""
    watcher, calls, _ = _watching(tmp_path, native=True)
    try:
        a, b = str(tmp_path / "facts" / "a.yaml"), str(tmp_path / "facts" / "b.yaml")
        assert watcher.changed({a}, native=True)
        assert not watcher.changed({a}, native=False)
        assert watcher.changed({a, b}, native=False)  # b: nobody reported it
        assert len(calls.times) == 2
    finally:
        watcher.stop()
