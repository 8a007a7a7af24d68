"""ssh_config read as OpenSSH reads it, case by case against `ssh -G` (other people's files
read exactly as their own tools read them; a differential test of 2026-12-02 found these).

Each case is a config and a host; `ssh -G -F CONFIG HOST` is the reference. When ssh refuses
the file, factbook must refuse it too; otherwise the fields factbook connects with (host
name, port, user, identity files, whether a jump is used, IdentitiesOnly, HostKeyAlias,
UserKnownHostsFile) must be ssh's. Before the fix factbook read `[bw]eb` as a character
class, split Match lines as Host lines, crashed on `Port ²`, accepted Arabic-Indic digits,
refused `Port +2222`, checked values only in the blocks that applied, ignored IdentityFile2,
took `IdentitiesOnly true` for no, looked up a HostKeyAlias in its written case, kept one
word of UserKnownHostsFile, kept a numeric host name as written, refused a folder an Include
glob matched and read a world-writable included file."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from factbook.errors import UsageError
from factbook.knowledge.kbfiles import confined
from factbook.verification.transports.sshconfig import SSHConfigFile, flag
from factbook.verification.transports.sshwords import (
    WordError,
    a2port,
    match_pattern,
    parse_jump_host,
)

SSH = shutil.which("ssh")
pytestmark = pytest.mark.skipif(SSH is None, reason="OpenSSH client missing")

# (name, config text, hosts); {tmp} is the case's folder
CASES: list[tuple[str, str, tuple[str, ...]]] = [
    (
        "brackets are literal in Host",
        "Host [bw]eb\n  HostName evil.example\n  Port 2222\n",
        ("web", "beb", "[bw]eb"),
    ),
    (
        "brackets are literal in Match host",
        "Match host db[0-9]\n  User admin\n  ProxyJump gw.example\n",
        ("db1", "db[0-9]"),
    ),
    ("a star and a question mark", "Host g?u-*\n  User ops\n", ("gpu-a1", "gu-a", "g-u-")),
    ("negation wins", "Host gpu-* !gpu-9\n  User ops\n", ("gpu-1", "gpu-9")),
    (
        "single quotes are literal in Match",
        "Match host 'web'\n  HostName q.example\n  User deploy\n",
        ("web",),
    ),
    (
        "quotes inside a Match list",
        "Match originalhost web,'db'\n  HostName q.example\n",
        ("db", "web"),
    ),
    ("Match with =", "Match host=web\n  HostName q.example\n", ("web", "db")),
    ("Match double quotes group", 'Match host "web,db"\n  User q\n', ("db", "x")),
    ("Match all with another first", "Match all host web\n  HostName q.example\n", ("web",)),
    ("Match all last after one", "Match host web all\n  HostName q.example\n", ("web", "db")),
    ("Match !all", "Match !all\n  HostName q.example\n", ("web",)),
    ("Match comment ends it", "Match host web # a note\n  User c\n", ("web", "db")),
    ("Port superscript", "Host web\n  Port \u00b2\n", ("web",)),
    ("Port Arabic-Indic", "Host web\n  Port \u0662\u0662\n", ("web",)),
    ("Port with a sign", "Host web\n  Port +2222\n", ("web",)),
    ("Port a service", "Host web\n  Port ssh\n", ("web",)),
    ("Port zero", "Host web\n  Port 0\n", ("web",)),
    ("a bad Port in another block", "Host other\n  Port 99999\nHost web\n  User u\n", ("web",)),
    (
        "a bad ProxyJump in another block",
        "Host other\n  ProxyJump a:b:c\nHost web\n  User u\n",
        ("web",),
    ),
    ("a later bad ProxyJump", "Host web\n  ProxyJump gw1\n  ProxyJump gw2:nosuchsvc\n", ("web",)),
    (
        "a bad flag in another block",
        "Host other\n  IdentitiesOnly maybe\nHost web\n  User u\n",
        ("web",),
    ),
    (
        "StrictHostKeyChecking accept-new",
        "Host web\n  StrictHostKeyChecking accept-new\n",
        ("web",),
    ),
    (
        "IdentityFile2",
        "Host web\n  IdentitiesOnly yes\n  IdentityFile2 /keys/web_ed25519\n",
        ("web",),
    ),
    ("IdentitiesOnly true", "Host web\n  IdentitiesOnly TRUE\n", ("web",)),
    ("HostKeyAlias in capitals", "Host web\n  HostKeyAlias WebAlias\n", ("web",)),
    (
        "UserKnownHostsFile of two words",
        'Host web\n  UserKnownHostsFile "{tmp}/dir with space/kh" {tmp}/kh2\n',
        ("web",),
    ),
    (
        "ProxyJump none with a comment",
        "Host web\n  ProxyJump none # direct\n  ProxyCommand nc %h %p\n",
        ("web",),
    ),
    ("ProxyJump none", "Host web\n  ProxyJump none\n  ProxyCommand nc %h %p\n", ("web",)),
    ("ProxyJump with a space after the comma", "Host web\n  ProxyJump a, b\n", ("web",)),
    (
        "ProxyJump URI with a bracketed address",
        "Host web\n  ProxyJump ssh://[2001:db8::7]:2022\n",
        ("web",),
    ),
    ("ProxyJump URI with two @", "Host web\n  ProxyJump ssh://a@b@jump.example\n", ("web",)),
    ("ProxyJump URI with a path", "Host web\n  ProxyJump ssh://jump.example/x\n", ("web",)),
    ("ProxyJump plain with two @", "Host web\n  ProxyJump a@b@jump.example\n", ("web",)),
    (
        "an address written long",
        "Host web\n  HostName 2001:DB8:0:0::1\n"
        "Match final host 2001:db8::1\n  User ops\n  Port 2201\n",
        ("web",),
    ),
    ("an address in capitals stays", "Host web\n  HostName 2001:DB8::1\n", ("web",)),
    (
        "inet_aton forms",
        "Host web\n  HostName 127.1\nMatch final host 127.0.0.1\n  ProxyJump gw.example\n",
        ("web", "0x7f.1", "010.0.0.1"),
    ),
    ("an Include glob matching a folder", "Include {tmp}/conf.d/*\n", ("web",)),
]


def _ssh_g(config: Path, host: str) -> dict[str, object] | None:
    done = subprocess.run(
        [SSH or "ssh", "-G", "-F", str(config), host],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30,
    )  # fmt: skip
    if done.returncode != 0:
        return None
    seen: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        seen.setdefault(key, []).append(value)
    return {
        "hostname": seen["hostname"][0],
        "port": int(seen["port"][0]),
        "user": seen["user"][0],
        "identityfile": seen.get("identityfile", []),
        "jump": "proxyjump" in seen,
        "identitiesonly": seen["identitiesonly"][0] == "yes",
        "hostkeyalias": seen.get("hostkeyalias", [None])[0],
        "userknownhostsfile": seen["userknownhostsfile"][0],
    }


def _factbook(config: Path, host: str) -> dict[str, object] | None:
    try:
        found = SSHConfigFile(config).lookup(host)
        jumps = found.jumps()
    except UsageError:
        return None
    known = found.words.get("userknownhostsfile", ["~/.ssh/known_hosts", "~/.ssh/known_hosts2"])
    return {
        "hostname": found.hostname,
        "port": found.port,
        "user": found.user,
        "identityfile": found.identity_files,
        "jump": bool(jumps),
        "identitiesonly": flag(found.get("identitiesonly")),
        "hostkeyalias": found.get("hostkeyalias"),
        "userknownhostsfile": " ".join(found.expand(word, "UserKnownHostsFile") for word in known),
    }


def _plant(tmp: Path) -> None:
    """What some cases include: a folder and a file under conf.d/."""
    (tmp / "conf.d" / "archive").mkdir(parents=True)
    (tmp / "conf.d" / "10-web.conf").write_text("Host web\n  HostName inc.example\n")


@pytest.mark.parametrize(("name", "text", "hosts"), CASES, ids=[c[0] for c in CASES])
def test_a_config_reads_as_ssh_G_reads_it(
    tmp_path: Path, name: str, text: str, hosts: tuple[str, ...]
) -> None:
    _plant(tmp_path)
    config = tmp_path / "config"
    config.write_text(text.replace("{tmp}", str(tmp_path)), encoding="utf-8")
    for host in hosts:
        ours, theirs = _factbook(config, host), _ssh_g(config, host)
        assert ours == theirs, f"{name}, host {host!r}: factbook {ours}, ssh {theirs}"


def test_an_included_file_others_may_write_is_refused_as_ssh_refuses_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "conf.d").mkdir()
    included = tmp_path / "conf.d" / "10-web.conf"
    included.write_text("Host web\n  ProxyJump gw\n")
    config = tmp_path / "config"
    config.write_text(f"Include {tmp_path}/conf.d/*\n")
    for mode, refused in ((0o644, False), (0o666, True), (0o646, True)):
        os.chmod(included, mode)
        assert (_ssh_g(config, "web") is None) is refused, oct(mode)
        assert (_factbook(config, "web") is None) is refused, oct(mode)


def test_ports_are_read_as_strtonum_then_a_service_name() -> None:
    assert a2port("22") == 22 and a2port("+22") == 22 and a2port("ssh") == 22
    assert a2port("\u00b2") is None and a2port("\u0662\u0662") is None
    assert a2port("65536") is None and a2port("-1") is None and a2port("2\x000") is None
    assert a2port("\udcff") is None  # a byte that was no UTF-8: no traceback


def test_jump_hosts_are_parsed_as_readconf_parse_jump_parses_them() -> None:
    """The URI forms a traced `ssh -J` run showed (repro of 2026-12-02): a URI user is
    URL-decoded, the scheme is case-sensitive (`SSH://alice` is a user), a plain spec's user
    runs to the last `@`, a URI's to the first."""
    assert parse_jump_host("ssh://al%69ce@jump.example") == ("alice", "jump.example", None)
    assert parse_jump_host("SSH://alice@jump.example") == ("SSH://alice", "jump.example", None)
    assert parse_jump_host("a@b@jump.example:2200") == ("a@b", "jump.example", 2200)
    assert parse_jump_host("[2001:db8::7]:2022") == (None, "2001:db8::7", 2022)
    assert parse_jump_host("ssh://u;fp=x@gw.example:ssh/") == ("u", "gw.example", 22)
    for bad in ("ssh://a%zz@gw", "ssh://gw/path", "gw/x", "[gw", "[gw]x", "gw:0", " gw", ""):
        with pytest.raises(WordError):
            parse_jump_host(bad)


def test_patterns_know_only_star_and_question_mark_and_stay_fast() -> None:
    assert match_pattern("[bw]eb", "[bw]eb") and not match_pattern("web", "[bw]eb")
    assert match_pattern("gpu-12", "gpu-*") and match_pattern("a", "*") and match_pattern("", "*")
    assert not match_pattern("gpu", "gpu?") and match_pattern("abcabd", "*ab?")
    # a pattern of many stars against a long name that never matches: no exponential walk
    assert not match_pattern("a" * 2000, "*a" * 200 + "b")


def test_include_globs_find_what_ssh_finds(tmp_path: Path) -> None:
    """Sub-folders, hidden names (a `*` skips them, as glob(3) does), classes and a
    literal path, against `ssh -G`."""
    conf = tmp_path / "conf.d"
    for rel, host in (("a/10.conf", "a"), ("b/10.conf", "b"), (".hidden/10.conf", "h"),
                      ("c/.10.conf", "c"), ("d1/10.conf", "d")):  # fmt: skip
        (conf / rel).parent.mkdir(parents=True, exist_ok=True)
        (conf / rel).write_text(f"Host {host}\n  HostName {host}.inc.example\n")
    config = tmp_path / "config"
    config.write_text(
        f"Include {conf}/*/10.conf\nInclude {conf}/*/.10.conf\nInclude {conf}/d[0-9]/*\n"
    )
    for host in ("a", "b", "h", "c", "d"):
        assert _factbook(config, host) == _ssh_g(config, host), host


def test_a_knowledge_base_config_never_lists_folders_outside_it(tmp_path: Path) -> None:
    """In a knowledge base's own ssh config, an Include whose fixed folder lies outside, or
    whose walk would enter a link leading out, is refused before anything is listed (a
    `/*/*/*/*/*/*/*/*/x` walked the whole machine, and a match named what exists outside)."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "up").symlink_to("/")
    for pattern in ("/*/*/*/*/*/*/*/*/nothing", f"{tmp_path}/o*/s*", f"{kb}/*/*/*/*/*/x"):
        config = kb / "config"
        config.write_text(f"Include {pattern}\n")
        started = time.monotonic()
        with confined(kb), pytest.raises(UsageError, match="outside the knowledge base"):
            SSHConfigFile(config).lookup("web")
        assert time.monotonic() - started < 2, pattern
