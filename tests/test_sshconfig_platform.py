"""A config written on a Mac (`UseKeychain yes`) is read as the ssh of the system reading it
reads it: Linux's ssh refuses the file unless IgnoreUnknown names the keyword, macOS's takes
it. Checked against the real `ssh -G` of this machine (Linux)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from factbook.errors import UsageError
from factbook.verification.transports.sshconfig import SSHConfigFile, known_keywords

MAC = "Host *\n  UseKeychain yes\n  AddKeysToAgent yes\nHost box\n  HostName box.invalid\n"


def test_apple_keywords_are_known_on_macos_only() -> None:
    assert "usekeychain" in known_keywords("darwin")
    assert "usekeychain" not in known_keywords("linux")
    assert known_keywords("linux") < known_keywords("darwin")


@pytest.mark.parametrize("ignore", [False, True])
def test_a_mac_config_is_read_here_as_this_ssh_reads_it(tmp_path: Path, ignore: bool) -> None:
    if shutil.which("ssh") is None:
        pytest.skip("no ssh client")
    path = tmp_path / "config"
    path.write_text(("IgnoreUnknown UseKeychain\n" if ignore else "") + MAC)
    ssh = subprocess.run(["ssh", "-G", "-F", str(path), "box"], capture_output=True, text=True)
    assert (ssh.returncode == 0) is ignore, ssh.stderr
    if ignore:
        assert SSHConfigFile(path).lookup("box").hostname == "box.invalid"
    else:
        with pytest.raises(UsageError, match=r"(?i)usekeychain"):
            SSHConfigFile(path).lookup("box")
