"""ssh_config and known_hosts cut into lines and words as OpenSSH cuts them (issue 25, class 2:
other people's files read exactly as their own tools read them).

OpenSSH reads both files with getline: a line ends at a newline only, and at a NUL (a C
string). factbook used str.splitlines, which also cuts at a vertical tab, a form feed, the
file separators, NEL, LS, PS and a lone CR: `# note<VT>HostName evil.example` was a
HostName line to factbook and a comment to ssh, so factbook connected to a host that ssh
never would. Each case is asked of `ssh -G` (the reference) and of factbook; a config ssh
refuses, factbook refuses. known_hosts lines are asked of `ssh-keygen -F`."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path

import pytest

from factbook.errors import UsageError
from factbook.verification.transports import knownhosts
from factbook.verification.transports.sshconfig import SSHConfigFile

SSH = shutil.which("ssh")
KEYGEN = shutil.which("ssh-keygen")
pytestmark = pytest.mark.skipif(SSH is None or KEYGEN is None, reason="OpenSSH client missing")

BREAKS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r", "\x00"]
TEMPLATES = {
    "after a value": "Host box\n  User alice{c}HostName evil.example\n  HostName good.example\n",
    "in a Host line": "Host box{c}HostName evil.example\n  HostName good.example\n"
    "Host *\n  User bob\n",
    "in a comment": "Host box\n  # note{c}HostName evil.example\n  HostName good.example\n",
    "before a keyword": "Host box\n{c}  HostName evil.example\n  Port 2222\n",
    "at a line's end": "Host box\n  HostName good.example{c}\n  Port 2200{c}\n",
    "two words": "Host box\n  HostName good.example\n  User alice bob{c}\n",
}


def _ssh_g(config: Path) -> tuple[str, str, str] | None:
    done = subprocess.run(
        [SSH or "ssh", "-G", "-F", str(config), "box"], capture_output=True, text=True
    )
    if done.returncode != 0:
        return None
    seen = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    return seen["hostname"], seen["user"], seen["port"]


def _factbook(config: Path, local_user: str) -> tuple[str, str, str] | None:
    try:
        found = SSHConfigFile(config).lookup("box")
    except UsageError:
        return None
    return found.hostname, found.user or local_user, str(found.port)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_a_config_holding_line_break_characters_reads_as_ssh_reads_it(
    tmp_path: Path, name: str
) -> None:
    config = tmp_path / "config"
    local_user = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    for char in BREAKS:
        config.write_bytes(TEMPLATES[name].replace("{c}", char).encode("utf-8"))
        assert _factbook(config, local_user) == _ssh_g(config), (name, char)


def test_known_hosts_fields_end_at_a_space_or_tab_only(tmp_path: Path) -> None:
    key = tmp_path / "key"
    subprocess.run(
        [KEYGEN or "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True
    )
    key_type, blob = key.with_suffix(".pub").read_text().split()[:2]
    known = tmp_path / "known_hosts"
    shapes = [
        "good.example{c}{t} {b}\n",  # a separator only to str.split (a NUL: to OpenSSH too)
        "good.example {t}{c} {b}\n",  # no key type OpenSSH knows
        "{c}good.example {t} {b}\n",
        "@cert-authority{c}good.example {t} {b}\n",
        "# good.example{c}good.example {t} {b}\n",
    ]
    names = ("good.example", "other.example")
    for shape in shapes:
        for char in BREAKS:
            text = shape.format(c=char, t=key_type, b=blob) + f"other.example\t{key_type} {blob}\n"
            known.write_bytes(text.encode("utf-8"))
            lines = knownhosts.load(known)
            ours = {n for n in names if any(h.matches(n) and not h.marker for h in lines)}
            theirs = {n for n in names if _keygen_finds(known, n)}
            assert ours == theirs, (shape, char, ours, theirs)
            assert "other.example" in ours
    # after the key, b64_pton passes over C whitespace (a CRLF file's \r) and a NUL ends the
    # C string; anything else makes the key unreadable (ssh-keygen -F lists such lines all
    # the same, so it is no oracle here)
    for char in BREAKS:
        known.write_bytes(f"good.example {key_type} {blob}{char}\n".encode())
        usable = [h for h in knownhosts.load(known) if h.matches("good.example")]
        assert bool(usable) == (char in "\r\x0b\x0c\x00"), repr(char)
        assert all(h.blob == base64.b64decode(blob) for h in usable)


def _keygen_finds(known: Path, name: str) -> bool:
    """Whether `ssh-keygen -F` lists a plain (unmarked) key line for `name`."""
    done = subprocess.run(
        [KEYGEN or "ssh-keygen", "-F", name, "-f", str(known)], capture_output=True, text=True
    )
    return any(line and not line.startswith(("#", "@")) for line in done.stdout.splitlines())
