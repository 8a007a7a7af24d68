"""Atomic file writes and lock files: a reader sees the old file or the new one, never half.

A write goes through a temp file in the same folder (`.NAME.XXXX.tmp`) and a rename. The new
file gets the mode the umask gives (mkstemp's 0600 is not kept: results and status documents
are shared), or the mode of the file it replaces. A temp file left by a killed writer is
removed by the next write of the same file once it is older than STALE_TMP_S. A failed write
(a full disk, a read-only folder) leaves the old file as it was and raises `WriteFailed` with
one line. Lock files are opened without following a link and only inside the knowledge base.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from factbook.errors import InputError, UsageError, WriteFailed
from factbook.knowledge.kbfiles import require_inside

STALE_TMP_S = 60.0


def _umask() -> int:
    """The process umask, read without changing it (os.umask would race other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def clean_stale_tmp(path: Path, *, older_than: float = STALE_TMP_S) -> int:
    """Remove `.NAME.*.tmp` left beside `path` by a writer that was killed; how many."""
    removed = 0
    cutoff = time.time() - older_than
    try:
        siblings = list(path.parent.glob(f".{path.name}.*.tmp"))
    except OSError:
        return 0
    for tmp in siblings:
        try:
            if tmp.is_file() and not tmp.is_symlink() and tmp.stat().st_mtime < cutoff:
                tmp.unlink()
                removed += 1
        except OSError:
            continue
    return removed


# False inside throwaway_writes(): files written then are deleted by their writer
_DURABLE: contextvars.ContextVar[bool] = contextvars.ContextVar("durable", default=True)


@contextlib.contextmanager
def throwaway_writes() -> Iterator[None]:
    """Writes inside the block go to a copy its caller deletes (an import's scratch knowledge
    base): still atomic, but not forced to disk (fsync), which such a copy never needs and
    which cost an import a few percent of its time. Real writes outside stay durable."""
    token = _DURABLE.set(False)
    try:
        yield
    finally:
        _DURABLE.reset(token)


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` as UTF-8 (write_bytes_atomic)."""
    write_bytes_atomic(path, _utf8(path, text))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temp file in the same folder and a rename. A path
    that is itself a device, a pipe or a socket is refused, never renamed over (that would
    replace the device: a file a user names goes through `write_output`)."""
    tmp = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _refuse_special(path)
        clean_stale_tmp(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if _DURABLE.get():
                os.fsync(handle.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        if tmp:
            Path(tmp).unlink(missing_ok=True)
        why = exc.strerror or type(exc).__name__
        raise WriteFailed(f"{path}: could not save ({why}); the old file is unchanged") from None
    except BaseException:
        if tmp:
            Path(tmp).unlink(missing_ok=True)
        raise


def require_writable(folder: Path, display: str) -> None:
    """Refuse, before a write of several files, a folder one of them cannot be made in (a
    read-only or immutable folder, a full disk): a temp file is made there and removed.
    `verify` wrote its run file into a writable results/runs/, then failed on latest.json in
    a read-only results/, and the two disagreed; now neither is written (WriteFailed)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-check.", suffix=".tmp", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise WriteFailed(
            f"{display}: cannot write in this folder ({why}); nothing written"
        ) from None


def write_output(path: Path, text: str) -> bool:
    """Write a file the user named (`--out`, `-o`); whether it was written in place. A
    character device or a pipe, even through a link (`/dev/null`, `/dev/stdout`), is
    written in place, as a shell's `>` would; anything else atomically. Renamed over, the
    device itself was replaced: as root, `factbook status --out /dev/null` turned the
    machine's /dev/null into a regular file."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = 0
    if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        write_text_atomic(path, text)
        return False
    data = _utf8(path, text)
    try:
        with open(path, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        raise WriteFailed(f"{path}: could not write ({exc.strerror or exc})") from None
    return True


def check_output(path: Path, named: str) -> None:
    """Refuse, before any work is done, a file the user named (`named`: how, e.g.
    `-o report.txt`) that cannot be written: a folder, or a path under a file (UsageError,
    one line). A missing folder is made when the file is written."""
    if path.is_dir():
        raise UsageError(f"{named}: is a folder; name a file")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"{named}: {parent} is not a folder")
            return


def _utf8(path: Path, text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate, from JSON's \ud800
        why = f"U+{ord(text[exc.start]):04X} cannot be written as UTF-8"
        raise WriteFailed(f"{path}: could not save ({why}); the old file is unchanged") from None


def _refuse_special(path: Path) -> None:
    """A device, pipe or socket at `path` itself (not through a link, which is replaced)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode)):
        raise WriteFailed(f"{path}: not a regular file (a device or a pipe); not replaced")


@contextlib.contextmanager
def exclusive_lock(lock_path: Path, root: Path, display: str) -> Iterator[None]:
    """Hold an exclusive flock on `lock_path` (created if missing) inside `root`.

    A lock folder that leads out of the knowledge base, a lock path that is a folder or a
    link: one line, exit 2, instead of a traceback or a file created elsewhere."""
    require_inside(lock_path.parent, str(Path(display).parent), root)
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(lock_path, flags, 0o666)
    except IsADirectoryError:
        raise InputError(f"{display}: is a folder, not a lock file; remove it") from None
    except OSError as exc:
        why = "is a link; refusing to follow it" if lock_path.is_symlink() else exc.strerror
        raise InputError(f"{display}: cannot open the lock file: {why}") from None
    try:
        if os.name == "posix":
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock
