"""A run reads each private key file once (sshconnect.KeyFiles), with paramiko's own loader,
and reads it again when the file or its certificate changes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import paramiko
import pytest

from factbook.verification.transports.base import TransportOptions
from factbook.verification.transports.sshconnect import KeyFiles


def _keygen(path: Path, kind: str = "ed25519") -> None:
    path.unlink(missing_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(path)], check=True)


def _reader(calls: list[tuple[str, type]]):
    client = paramiko.SSHClient()
    client._log = lambda *args: None  # paramiko logs through a transport it has not made yet

    def read(filename: str, klass: type, password: str | None) -> paramiko.PKey:
        calls.append((filename, klass))
        return client._key_from_filepath(filename, klass, password)

    return read


def test_each_key_file_is_read_once_per_run_and_again_when_it_changes(tmp_path: Path) -> None:
    key = tmp_path / "id"
    _keygen(key)
    calls: list[tuple[str, type]] = []
    read, keys = _reader(calls), KeyFiles()
    for _ in range(3):  # three logins: RSA fails, Ed25519 loads, as paramiko tries them
        with pytest.raises(paramiko.SSHException):
            keys.load(read, str(key), paramiko.RSAKey, None)
        loaded = keys.load(read, str(key), paramiko.Ed25519Key, None)
    assert len(calls) == 2
    assert loaded.get_base64() == (tmp_path / "id.pub").read_text().split()[1]

    _keygen(key)  # a new key in the same file
    os.utime(key, ns=(1, 1))  # a different mtime even on a coarse clock
    again = keys.load(read, str(key), paramiko.Ed25519Key, None)
    assert len(calls) == 3
    assert again.get_base64() == (tmp_path / "id.pub").read_text().split()[1] != loaded.get_base64()


def test_a_run_shares_one_set_a_lone_connection_gets_its_own() -> None:
    options = TransportOptions()
    assert KeyFiles.of(options) is not KeyFiles.of(options)
    options.sharing = True
    assert KeyFiles.of(options) is KeyFiles.of(options)
    options.close_shared()
    assert options.shared == {}
