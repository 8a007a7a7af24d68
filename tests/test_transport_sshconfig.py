"""Conformance oracle: the paramiko path resolves ssh_config exactly as `ssh -G` (issue 13.2).

For every file of tests/data/ssh_config (its first line: `# hosts: a b ...`) and every host,
with and without a command-line user and port: the host name, port, user, identity files,
ProxyJump, ProxyCommand and HostKeyAlias that factbook's SSHConfigFile resolves equal what
OpenSSH's `ssh -G` prints, and the jump chain ChainResolver builds equals the one `ssh -G`
gives hop by hop. `@DIR@` in the corpus is replaced by the copy's directory (Include paths).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from factbook.errors import UsageError
from factbook.knowledge.model import Target
from factbook.verification.transports.base import TransportOptions
from factbook.verification.transports.sshconfig import SSHConfigFile
from factbook.verification.transports.sshconnect import ChainResolver, split_jump_spec

CORPUS = Path(__file__).parent / "data" / "ssh_config"
FILES = sorted(CORPUS.glob("*.conf"))
CLI = [(None, None), ("cliuser", 2999)]

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="OpenSSH client missing")


def _hosts(path: Path) -> list[str]:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# hosts:"), path
    return first.split(":", 1)[1].split()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("ssh_config")
    for src in CORPUS.rglob("*.conf"):
        out = dest / src.relative_to(CORPUS)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(src.read_text().replace("@DIR@", str(dest)))
    return dest


class SshRefused(Exception):
    """`ssh -G` refused the configuration (a jump loop, say)."""


def ssh_g(config: Path, host: str, user: str | None = None, port: int | None = None) -> dict:
    argv = ["ssh", "-G", "-F", str(config)]
    argv += ["-l", user] if user else []
    argv += ["-p", str(port)] if port else []
    done = subprocess.run([*argv, host], capture_output=True, text=True)
    if done.returncode != 0:
        raise SshRefused(done.stderr.strip())
    out = done.stdout
    seen: dict = {"identityfile": []}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        if key == "identityfile":
            seen[key].append(value)
        else:
            seen.setdefault(key, value)
    return seen


def test_the_corpus_is_big_enough() -> None:
    assert len(FILES) >= 40
    assert sum(len(_hosts(f)) for f in FILES) >= 70


@pytest.mark.parametrize("cli", CLI, ids=["plain", "cli-user-port"])
@pytest.mark.parametrize("name", [f.name for f in FILES])
def test_resolution_equals_ssh_G(corpus: Path, name: str, cli) -> None:
    config = corpus / name
    ours = SSHConfigFile(config)
    user, port = cli
    for host in _hosts(config):
        want = ssh_g(config, host, user, port)
        got = ours.lookup(host, user=user, port=port)
        where = f"{name} {host} {cli}"
        assert got.hostname == want["hostname"], where
        assert got.port == int(want["port"]), where
        assert got.user == want["user"], where
        assert got.identity_files == want["identityfile"], where
        assert got.proxy_jump == want.get("proxyjump"), where  # ssh -G omits `none`
        assert got.proxy_command == want.get("proxycommand"), where
        assert got.get("hostkeyalias") == want.get("hostkeyalias"), where


def _chain_by_ssh(config: Path, host: str, user=None, port=None, follow=True) -> list[tuple]:
    seen = ssh_g(config, host, user, port)
    hops: list[tuple] = []
    jump = seen.get("proxyjump")
    if follow and jump and jump != "none":
        for i, spec in enumerate(jump.split(",")):
            juser, jhost, jport = split_jump_spec(spec)
            hops += _chain_by_ssh(config, jhost, juser, jport, follow=i == 0)
    return [*hops, (seen["hostname"], int(seen["port"]), seen["user"])]


@pytest.mark.parametrize("name", [f.name for f in FILES if "proxyjump" in f.read_text().lower()])
def test_jump_chain_equals_ssh_G(corpus: Path, name: str) -> None:
    config = corpus / name
    resolver = ChainResolver({}, TransportOptions(ssh_config=str(config)))
    for host in _hosts(config):
        try:
            want = _chain_by_ssh(config, host)
        except SshRefused as exc:  # e.g. "jumphost loop via bastion": we refuse it too
            with pytest.raises(UsageError, match="loop"):
                resolver.resolve(Target(name=host, host=host))
            assert "loop" in str(exc)
            continue
        hops = resolver.resolve(Target(name=host, host=host))
        assert [(h.host, h.port, h.user) for h in hops] == want, host


def test_proxy_command_and_options_reach_the_hop(corpus: Path) -> None:
    config = corpus / "teleport.conf"
    (hop,) = ChainResolver({}, TransportOptions(ssh_config=str(config))).resolve(
        Target(name="n", host="node1.cluster")
    )
    assert hop.proxy_command == "tsh proxy ssh --cluster=main tele@node1.cluster:3022"
    config = corpus / "hostkeyalias.conf"
    (hop,) = ChainResolver({}, TransportOptions(ssh_config=str(config))).resolve(
        Target(name="a", host="a")
    )
    assert (hop.host, hop.known_hosts_name) == ("10.1.1.1", "a-key")
    config = corpus / "identitiesonly.conf"
    (hop,) = ChainResolver({}, TransportOptions(ssh_config=str(config))).resolve(
        Target(name="a", host="a")
    )
    assert hop.identities_only


def test_match_exec_is_refused_with_file_and_line_for_the_hosts_it_decides(
    tmp_path: Path,
) -> None:
    """Never run: a host whose settings hang on the outcome is refused (file:line); a host
    the block cannot change (its User already set) or a Match it never reaches is not."""
    marker = tmp_path / "ran"
    config = tmp_path / "config"
    config.write_text(
        f'Host a\n  User u\nMatch exec "touch {marker}"\n  User other\n'
        f'Match host c exec "touch {marker}"\n  Port 2222\n'
    )
    ours = SSHConfigFile(config)
    with pytest.raises(UsageError, match=rf"{config}:3: Match exec .*host b.*transport: openssh"):
        ours.lookup("b")
    assert ours.lookup("a").user == "u"
    with pytest.raises(UsageError, match=rf"{config}:3: Match exec"):
        ours.lookup("c")  # line 3 decides its user first
    assert not marker.exists()
