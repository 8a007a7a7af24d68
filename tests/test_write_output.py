"""A file the user names is written as a shell's `>` writes it; nothing is renamed over a
device or a pipe.

Every write went through a temp file and a rename, so `factbook status --out /dev/null`,
run as root, replaced the machine's /dev/null with a regular file (found when the test
suite then failed in every test that ran ssh with `-F /dev/null`), `--out /dev/stdout`
replaced the /dev/stdout link, and `export-ansible -o /dev/null` also chmodded it 0644.
The tests make their own device node (root only, as in CI) and never touch /dev/null."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from helpers import REPO, cli, fact, make_kb

from factbook.errors import WriteFailed
from factbook.store.atomic import write_output, write_text_atomic

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root (CI runs as root)")


def _null_device(folder: Path) -> Path:
    node = folder / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # the null device, as /dev/null
    os.chmod(node, 0o666)  # past the umask
    return node


def _is_device(path: Path) -> bool:
    return stat.S_ISCHR(os.lstat(path).st_mode)


@needs_root
def test_status_and_export_into_a_device_leave_it_a_device(tmp_path: Path) -> None:
    node = _null_device(tmp_path)
    link = tmp_path / "stdout-like"
    link.symlink_to(node)
    for target in (node, link):
        code, _, err = cli(REPO, "status", "--out", str(target))
        assert code == 0, err
    code, _, err = cli(REPO, "export-ansible", "-o", str(node))
    assert code == 0, err
    assert _is_device(node) and link.is_symlink() and os.readlink(link) == str(node)
    assert stat.S_IMODE(os.lstat(node).st_mode) == 0o666  # not chmodded 0644


def test_status_into_a_pipe_reaches_its_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    code, _, err = cli(REPO, "status", "--out", str(fifo))
    reader.join(timeout=30)
    assert code == 0, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got and got[0].startswith(b"#") and len(got[0]) > 10_000


def test_an_internal_write_refuses_to_replace_a_pipe(tmp_path: Path) -> None:
    fifo = tmp_path / "latest.json"
    os.mkfifo(fifo)
    with pytest.raises(WriteFailed, match=r"not a regular file .*; not replaced"):
        write_text_atomic(fifo, "{}")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    plain = tmp_path / "plain.txt"
    assert write_output(plain, "x") is False and plain.read_text() == "x"


def test_verify_refuses_an_unwritable_report_before_running_and_writes_into_a_pipe(
    tmp_path: Path,
) -> None:
    """`verify -o FOLDER` and `--report junit:FOLDER` ran every check and then died with an
    IsADirectoryError traceback (FileNotFoundError for a path under a file): refused now in
    one line, exit 2, before any check runs or any result is written."""
    root = make_kb(tmp_path / "kb", [fact("sw.home", "env.var", args={"name": "HOME"})])
    (tmp_path / "afile").write_text("x")
    for argv in (
        ("-o", str(tmp_path)),
        ("--report", f"junit:{tmp_path}"),
        ("-o", str(tmp_path / "afile" / "report.txt")),
    ):
        code, out, err = cli(root, "verify", *argv)
        assert code == 2 and "Traceback" not in out + err, (argv, err)
        assert ("is a folder" in err or "is not a folder" in err) and len(err.splitlines()) == 1
        assert not (root / "results").exists()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    code, _, err = cli(root, "verify", "--report", f"junit:{fifo}")
    reader.join(timeout=30)
    assert code == 0, err
    assert got and b"<testsuite" in got[0] and stat.S_ISFIFO(os.lstat(fifo).st_mode)
