"""Ansible inventory readings the differential hunt found wrong (report c, items 10-13), with
real ansible-core as the oracle where Ansible connects on its own terms:

- ansible_connection paramiko / paramiko_ssh: Ansible's paramiko plugin never reads the ssh
  arguments; it reads ansible_paramiko_* over the ssh variables and runs
  ansible_paramiko_proxy_command (`%h`, `%p`, `%r` replaced) as shlex words, no shell. One
  `ansible -m ping -vvv` run (cached per machine, as the oracle's) says which address, port
  and user it would log in to (127.0.0.x port 1: refused at once) and, through a tracing
  proxy command, which argv it runs; factbook's openssh command line must run the same argv;
- `-F FILE` in the ssh arguments, two jumps, service-name ports and names Ansible accepts
  are compared with Ansible in test_fleet_ansible_oracle.py; here, what factbook refuses on
  purpose (a -F it cannot hand to ssh faithfully) and where an inventory name flows (`--target`
  patterns, verify, ssh-config aliases).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from build_cache import cached_entry
from helpers import cli, fact, make_kb, require

from factbook.errors import InputError
from factbook.knowledge.fleet.connection import field_problems
from factbook.knowledge.fleet.load import read_source
from factbook.knowledge.fleet.patterns import match, split_terms
from factbook.knowledge.kbfiles import confined
from factbook.knowledge.model import Target
from factbook.knowledge.names import name_problem
from factbook.verification.transports.base import TransportOptions
from factbook.verification.transports.openssh import OpenSSHTransport

TRACER = """#!{python}
import json, sys
open(sys.argv[1], "w").write(json.dumps(sys.argv[2:]))
"""

# Hosts Ansible's paramiko plugin reaches: 127.0.0.x port 1 (refused at once) or through
# the tracing proxy command (@CASE@: the folder the inventory is written to).
PARAMIKO_INI = (
    "[g]\n"
    "p1 ansible_connection=paramiko ansible_host=127.0.0.2 ansible_port=1 "
    "ansible_ssh_common_args='-J jumpuser@gw.example -l other -p 2' "
    "ansible_ssh_extra_args='-o ProxyCommand=\"nc %h %p\"'\n"
    "p2 ansible_connection=paramiko_ssh ansible_host=127.0.0.9 ansible_paramiko_host=127.0.0.3 "
    "ansible_port=5 ansible_paramiko_port=1 ansible_user=au ansible_paramiko_user=pu\n"
    "p3 ansible_connection=paramiko ansible_host=Box.Example ansible_paramiko_port=2222 "
    "ansible_paramiko_proxy_command='@CASE@/tracer @CASE@/p3.json %h:%p \"%r x\" 100%'\n"
    "p4 ansible_connection=ansible.builtin.paramiko_ssh ansible_user=u "
    "ansible_ssh_extra_args='-J gw' "
    "ansible_paramiko_proxy_command=\"@CASE@/tracer @CASE@/p4.json %h %p %r '$HOME;x'\"\n"
)
_ESTABLISH = re.compile(r"ESTABLISH PARAMIKO SSH CONNECTION FOR USER: (\S+) on PORT (\d+) TO (\S+)")


@pytest.fixture(scope="module")
def paramiko_oracle() -> Path:
    """PARAMIKO_INI written out and run once through `ansible all -m ping -vvv`: its output
    in ping.out, each proxy command's argv in HOST.json (moved to HOST.ansible.json)."""
    ansible = Path(sys.executable).with_name("ansible")
    require(None if ansible.exists() else "ansible-core (pip install -e '.[test]')")
    require(None if _has_paramiko() else "paramiko")
    digest = hashlib.sha256(PARAMIKO_INI.encode() + TRACER.encode())
    digest.update(importlib.metadata.version("ansible-core").encode())
    key = digest.hexdigest()[:24]
    return cached_entry(f"answer-paramiko-{key}", "answer-paramiko-*", _ask_paramiko)


def _has_paramiko() -> bool:
    try:
        import paramiko  # noqa: F401
    except ImportError:
        return False
    return True


def _ask_paramiko(root: Path) -> None:
    root.mkdir(parents=True)
    tracer = root / "tracer"
    tracer.write_text(TRACER.format(python=sys.executable))
    tracer.chmod(0o755)
    (root / "h.ini").write_text(PARAMIKO_INI.replace("@CASE@", str(root)))
    home = root / ".ansible-home"
    env = {
        **os.environ,
        "ANSIBLE_HOME": str(home),
        "ANSIBLE_CONFIG": str(root / "none.cfg"),
        "ANSIBLE_LOCAL_TEMP": str(home / "tmp"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_HOST_KEY_CHECKING": "False",
    }
    ansible = str(Path(sys.executable).with_name("ansible"))
    done = subprocess.run(
        [ansible, "-i", "h.ini", "all", "-m", "ping", "-vvv", "-f", "4"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (root / "ping.out").write_text(done.stdout + done.stderr)
    for host in ("p3", "p4"):
        (root / f"{host}.json").rename(root / f"{host}.ansible.json")


def test_paramiko_reads_its_own_variables_never_the_ssh_arguments(paramiko_oracle: Path) -> None:
    text = (paramiko_oracle / "ping.out").read_text()
    theirs = {m[3]: (m[1], int(m[2])) for m in _ESTABLISH.finditer(text)}
    targets = read_source(paramiko_oracle / "h.ini").finish()
    for name in ("p1", "p2"):
        target = targets[name]
        assert field_problems(target) == [], name
        assert theirs[target.host or name] == (target.user or "None", target.port or 22), name
        assert (target.jump, target.proxy_command, target.transport) == ((), None, "ssh"), name
        assert target.ssh_config == os.devnull, name  # paramiko reads no ~/.ssh/config


def test_paramiko_proxy_command_runs_the_same_argv(paramiko_oracle: Path) -> None:
    """factbook hands the command to the system ssh as a ProxyCommand: ssh expands its
    tokens and runs it with sh, which must give the argv paramiko ran."""
    targets = read_source(paramiko_oracle / "h.ini").finish()
    for name in ("p3", "p4"):
        target = targets[name]
        assert field_problems(target) == [] and target.transport == "openssh", name
        assert target.jump == (), name
        ours = paramiko_oracle / f"{name}.json"
        ours.unlink(missing_ok=True)
        argv = OpenSSHTransport(target, targets, TransportOptions(connect_timeout=5)).argv
        subprocess.run([*argv, "true"], capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        theirs = json.loads((paramiko_oracle / f"{name}.ansible.json").read_text())
        assert json.loads(ours.read_text()) == theirs, name


def test_paramiko_proxy_command_that_cannot_be_split_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "h.ini"
    path.write_text("[g]\np ansible_connection=paramiko ansible_paramiko_proxy_command='nc \"%h'\n")
    target = read_source(path).finish()["p"]
    assert field_problems(target) == [
        "ansible_paramiko_proxy_command cannot be split into words: No closing quotation"
    ]


def _finished(tmp_path: Path, text: str) -> dict[str, Target]:
    path = tmp_path / "h.ini"
    path.write_text(text.replace("@TMP@", str(tmp_path)))
    return read_source(path).finish()


def test_dash_f_goes_to_the_system_ssh_with_that_file(tmp_path: Path) -> None:
    """The last -F wins (ssh.c keeps the last); the host stays the address Ansible passes,
    which ssh looks up in that file."""
    (tmp_path / "a.cfg").write_text("Host *\n  User a\n")
    targets = _finished(
        tmp_path,
        "[g]\nh1 ansible_host=10.0.0.1 ansible_ssh_common_args='-F /nowhere -F @TMP@/a.cfg'\n"
        "h2 ansible_ssh_extra_args='-F none'\n",
    )
    h1, h2 = targets["h1"], targets["h2"]
    assert (h1.transport, h1.host, h1.ssh_config) == ("openssh", "10.0.0.1", f"{tmp_path}/a.cfg")
    assert (h2.transport, h2.ssh_config) == ("openssh", os.devnull)
    assert field_problems(h1) == field_problems(h2) == []


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ("-F ssh.cfg", "-F ssh.cfg: a relative path, which ssh opens from the folder Ansible"),
        ("-F ~/ssh.cfg", "-F ~/ssh.cfg: a relative path"),
        ("-F @TMP@/a.cfg -J gw", "with a jump (-J, ProxyJump) in the ssh arguments: factbook"),
        ("-o ProxyJump=gw -F @TMP@/a.cfg", "with a jump (-J, ProxyJump) in the ssh arguments"),
        ("-F @TMP@/a.cfg -o HostName=real", "with -o HostName in the ssh arguments"),
    ],
)
def test_dash_f_that_cannot_be_handed_over_is_refused(
    tmp_path: Path, args: str, problem: str
) -> None:
    (tmp_path / "a.cfg").write_text("Host *\n  User a\n")
    target = _finished(tmp_path, f"[g]\nh1 ansible_ssh_common_args='{args}'\n")["h1"]
    found = field_problems(target)
    assert len(found) == 1 and problem.replace("@TMP@", str(tmp_path)) in found[0], found


def test_dash_f_outside_the_knowledge_base_is_refused(tmp_path: Path) -> None:
    """A shared knowledge base must not make ssh echo a file outside it (kbfiles.py)."""
    (tmp_path / "kb").mkdir()
    (tmp_path / "secret").write_text("root:x:0:0\n")
    target = _finished(tmp_path / "kb", f"[g]\nh1 ansible_ssh_common_args='-F {tmp_path}/secret'\n")
    with confined(tmp_path / "kb"):
        found = field_problems(target["h1"])
    assert found == [
        f"-F {tmp_path}/secret: resolves to {tmp_path}/secret, outside the knowledge base; "
        "refusing it"
    ]
    assert field_problems(target["h1"]) == []  # --inventory FILE: the user's own choice


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ("-J gw1 -J gw2", "ssh refuses -J gw2 after a first jump: only a single -J is permitted"),
        (
            "-o ProxyJump=none -J gw",
            "ssh refuses -J gw after a first jump: only a single -J is permitted",
        ),
        ("-o ProxyCommand=none -J gw", "ssh refuses -J after a ProxyCommand"),
        ("-p 0x10", "ssh refuses port '0x10' (-p): not a port number or service"),
        ("-p 0", "ssh refuses port '0' (-p): not a port number or service"),
        (
            "-p 22 -o Port=nosuch",
            "ssh refuses port 'nosuch' (-o Port=nosuch): not a port number or service",
        ),
    ],
)
def test_what_ssh_refuses_on_its_command_line_is_refused(
    args: str, problem: str, tmp_path: Path
) -> None:
    target = _finished(tmp_path, f"[g]\nh1 ansible_ssh_common_args='{args}'\n")["h1"]
    assert field_problems(target) == [problem]


def test_ports_as_ssh_reads_them(tmp_path: Path) -> None:
    targets = _finished(
        tmp_path,
        "[g]\nh1 ansible_ssh_common_args='-o Port=http'\nh2 ansible_ssh_common_args='-p ssh'\n"
        "h3 ansible_port=2200 ansible_ssh_extra_args='-p nosuch'\n",
    )
    assert [targets[h].port for h in ("h1", "h2", "h3")] == [80, 22, 2200]
    assert not any(field_problems(t) for t in targets.values())


INVENTORY_NAMES = ["2001:db8::10", "::1", "_private", "10.0.0.1", "a" * 253, "n.example.com"]
REFUSED_NAMES = ["a" * 254, "-oProxyCommand=x", ".hidden", "../x", "a/b", "a b", "a;b", "x\n"]
REFUSED_NAMES += ["$(id)", "a`b", "a'b", 'a"b', "a,b", "a*b", "a!b", "a@b", "nöde", "fe80::1%eth0"]


@pytest.mark.parametrize("name", INVENTORY_NAMES)
def test_names_ansible_accepts_are_inventory_names(name: str) -> None:
    assert name_problem("inventory name", name) is None


@pytest.mark.parametrize("name", REFUSED_NAMES)
def test_names_that_could_escape_or_inject_stay_refused(name: str, tmp_path: Path) -> None:
    assert name_problem("inventory name", name) is not None
    path = tmp_path / "h.yml"
    path.write_text(json.dumps({"g": {"hosts": {name: None}}}))
    with pytest.raises(InputError, match="bad inventory name"):
        read_source(path)


def test_ipv6_and_underscore_names_are_selected_and_verified(tmp_path: Path) -> None:
    """Where an inventory name goes: `--target` patterns (an IPv6 address between commas is
    one name, as Ansible's split_host_pattern keeps it) and a verify plan."""
    assert split_terms("web,2001:db8::10,!::1") == ["web", "2001:db8::10", "!::1"]
    assert split_terms("a:b:c") == ["a", "b", "c"]
    root = make_kb(tmp_path / "kb", [fact("sw.driver", "env.var", args={"name": "X"})])
    (root / "hosts.ini").write_text("[v6]\n2001:db8::10\n::1\n[_private]\nweb2\n")
    inventory = read_source(root / "hosts.ini")
    assert match(inventory, "2001:db8::10") == ["2001:db8::10"]
    assert match(inventory, "v6,!::1") == ["2001:db8::10"]
    assert match(inventory, "_private") == ["web2"]
    for selection, want in (("2001:db8::10", ["2001:db8::10"]), ("@_private", ["web2"])):
        argv = ["--inventory", str(root / "hosts.ini"), "--target", selection, "--dry-run"]
        code, out, err = cli(root, "verify", *argv)
        assert code == 0, err
        assert [line.split(" on ")[1].split(": ")[0] for line in out.splitlines()] == want


def test_ssh_config_aliases_are_inventory_names(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("Host _bastion 2001:db8::10\n  User ops\n")
    assert list(read_source(config).targets) == ["_bastion", "2001:db8::10"]
