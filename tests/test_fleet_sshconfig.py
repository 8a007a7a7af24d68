"""`--inventory CONFIG` and the ssh config reader, item by item of issue 26 (OpenSSH part).

Each case is a config the way a team writes one; the expected values are what `ssh -G` says
for it (tests/test_sshconfig_oracle.py compares hundreds of generated ones directly).
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from factbook.errors import UsageError
from factbook.knowledge.fleet.load import read_source
from factbook.knowledge.model import Target
from factbook.verification.transports.base import TransportOptions, transport_for
from factbook.verification.transports.sshconfig import SSHConfigFile
from factbook.verification.transports.sshconnect import ChainResolver

ME = pwd.getpwuid(os.getuid()).pw_name


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config"
    path.write_text(text)
    return path


def _hops(path: Path, name: str) -> list[tuple[str, int, str]]:
    targets = read_source(path).targets
    hops = ChainResolver(targets, TransportOptions()).resolve(targets[name])
    return [(h.host, h.port, h.user) for h in hops]


def test_host_patterns_are_case_sensitive(tmp_path: Path) -> None:
    config = SSHConfigFile(_config(tmp_path, "Host MyBox\n  User fromupper\n"))
    assert config.lookup("mybox").user == ME
    assert (config.lookup("MyBox").user, config.lookup("MyBox").hostname) == ("fromupper", "mybox")


def test_tokens_in_proxyjump_hostname_identity_and_certificate(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        "Host *.lab\n  HostName %h.example\n  User ops\n  Port 2200\n"
        "  ProxyJump %r@%h-jump,%n-gw\n  IdentityFile /k/%r@%h:%p-%n-%%\n"
        "  CertificateFile /c/%h.crt\n  ProxyCommand none\n",
    )
    found = SSHConfigFile(path).lookup("A.lab")
    assert found.hostname == "a.lab.example"
    assert [(j.user, j.host) for j in found.jumps()] == [
        ("ops", "a.lab.example-jump"),
        (None, "A.lab-gw"),
    ]
    assert found.identity_paths() == ["/k/ops@a.lab.example:2200-A.lab-%"]
    assert found.certificate_paths() == ["/c/a.lab.example.crt"]
    path.write_text("Host x\n  ProxyCommand nc %h %p # %r %n %%\n  HostName h\n  User u\n")
    assert SSHConfigFile(path).lookup("x").proxy_command_expanded() == "nc h 22 # u x %"
    path.write_text("Host x\n  IdentityFile /k/%z\n")
    with pytest.raises(UsageError, match=rf"{path}:2: IdentityFile: unknown token %z"):
        SSHConfigFile(path).lookup("x").identity_paths()


@pytest.mark.parametrize(("port", "number"), [("ssh", 22), ("http", 80), ("=2022", 2022)])
def test_port_may_be_a_service_name(tmp_path: Path, port: str, number: int) -> None:
    path = _config(tmp_path, f"Host a\n  Port {port}\n")
    assert SSHConfigFile(path).lookup("a").port == number
    assert read_source(path).targets["a"].port == number


def test_bad_port_refuses_the_file_for_every_host_with_file_and_line(tmp_path: Path) -> None:
    """readconf.c checks a Port value in every block, active or not: `ssh -G -F FILE b`
    refuses the file for host b too (tests/test_ssh_config_readings.py asks ssh)."""
    path = _config(tmp_path, "Host a\n  Port nosuchservice\nHost b\n  User u\n")
    for host in ("a", "b"):
        with pytest.raises(UsageError, match=rf"{path}:2: Bad port 'nosuchservice'"):
            SSHConfigFile(path).lookup(host)


def test_hostname_is_not_matched_against_host_patterns_again(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        "Host 127.0.0.*\n  ProxyJump gw0\nHost gw0\n  HostName 127.0.0.1\n"
        "Host box\n  HostName 10.0.0.9\n  ProxyJump gw0\n",
    )
    assert _hops(path, "gw0") == [("127.0.0.1", 22, ME)]
    assert _hops(path, "box") == [("127.0.0.1", 22, ME), ("10.0.0.9", 22, ME)]
    # a host typed as the address does go through gw0, as `ssh 127.0.0.5` would
    options = TransportOptions(ssh_config=str(path))
    hops = ChainResolver({}, options).resolve(Target(name="t", host="127.0.0.5"))
    assert [h.host for h in hops] == ["127.0.0.1", "127.0.0.5"]


def test_missing_identity_files_are_skipped_for_the_host_and_those_behind_it(
    tmp_path: Path,
) -> None:
    key = tmp_path / "id_%h"
    real = tmp_path / "id_10.0.0.9"
    real.write_text("not read here")
    path = _config(
        tmp_path,
        f"Host jump\n  HostName 10.0.0.1\n  IdentityFile {tmp_path}/nope\n"
        f"Host box\n  HostName 10.0.0.9\n  ProxyJump jump\n  IdentityFile {key}\n"
        f"  IdentityFile ~/missing-%n\n",
    )
    targets = read_source(path).targets
    assert targets["box"].identity_file is None and targets["jump"].identity_file is None
    jump, box = ChainResolver(targets, TransportOptions()).resolve(targets["box"])
    assert (jump.identity_files, box.identity_files) == ([], [str(real)])


def test_a_bare_jump_name_without_a_block_is_a_host_name(tmp_path: Path) -> None:
    path = _config(tmp_path, "Host box\n  HostName 10.0.0.9\n  ProxyJump bastion.example\n")
    assert read_source(path).targets["box"].jump == ("bastion.example",)
    assert _hops(path, "box") == [("bastion.example", 22, ME), ("10.0.0.9", 22, ME)]
    path.write_text("Host box\n  ProxyJump bastion\n")  # no dot, no block: still a host name
    assert _hops(path, "box")[0] == ("bastion", 22, ME)


def test_quoted_host_aliases_become_targets(tmp_path: Path) -> None:
    path = _config(tmp_path, "Host \"alpha\" 'beta' gamma\n  HostName 10.0.0.7\n")
    assert list(read_source(path).targets) == ["alpha", "beta", "gamma"]


def test_a_host_behind_match_exec_is_refused_alone_and_nothing_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = _config(
        tmp_path,
        f'Host a b\n  HostName 10.0.0.1\nMatch originalhost b exec "touch {marker}"\n'
        f"  Port 2222\nHost c\n  HostName 10.0.0.3\n",
    )
    targets = read_source(path).targets
    assert list(targets) == ["a", "b", "c"]
    assert _hops(path, "a") == [("10.0.0.1", 22, ME)]
    assert _hops(path, "c") == [("10.0.0.3", 22, ME)]
    with pytest.raises(UsageError, match=rf"{path}:3: Match exec touch .* host b"):
        ChainResolver(targets, TransportOptions()).resolve(targets["b"])
    assert not marker.exists()


def test_match_final_matches_the_resolved_name(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        "Host box\n  HostName GPU7.internal\nMatch final host gpu7.internal\n  User late\n"
        "Host gpu7.internal\n  Port 2200\n  User never-first-pass\n",
    )
    found = SSHConfigFile(path).lookup("box")
    assert (found.hostname, found.user, found.port) == ("gpu7.internal", "late", 2200)


def test_certificate_file_reaches_the_hop(tmp_path: Path) -> None:
    cert = tmp_path / "certs" / "box.crt"
    cert.parent.mkdir()
    cert.write_text("ssh-ed25519-cert-v01@openssh.com AAAA")
    path = _config(tmp_path, f"Host box\n  CertificateFile {tmp_path}/certs/%n.crt\n")
    (hop,) = ChainResolver({}, TransportOptions(ssh_config=str(path))).resolve(
        Target(name="b", host="box")
    )
    assert hop.certificate_files == [str(cert)]


def test_a_config_starting_with_global_options_is_read_as_one(tmp_path: Path) -> None:
    path = _config(tmp_path, "# mine\nServerAliveInterval 30\nAddKeysToAgent=yes\nHost a\n")
    assert list(read_source(path).targets) == ["a"]


def test_a_proxy_command_host_runs_the_system_ssh_with_that_file(tmp_path: Path) -> None:
    path = _config(tmp_path, "Host iap\n  ProxyCommand gcloud start-iap-tunnel %h %p\n")
    target = read_source(path).targets["iap"]
    assert (target.transport, target.host) == ("openssh", "iap")
    argv = transport_for(target, {}, TransportOptions()).argv  # type: ignore[attr-defined]
    assert argv[argv.index("-F") + 1] == str(path) and argv[-1] == "iap"


def test_match_tagged_and_an_ansible_file_that_starts_like_ssh(tmp_path: Path) -> None:
    path = _config(tmp_path, "Host a\n  Tag gpu\nMatch tagged gpu\n  User tagged\n")
    assert SSHConfigFile(path).lookup("a").user == "tagged"
    path.write_text("user ansible_host=10.0.0.1\nport ansible_host=10.0.0.2\n")  # hosts so named
    assert sorted(read_source(path).targets) == ["port", "user"]
    assert read_source(path).targets["user"].vars["ansible_host"] == "10.0.0.1"
