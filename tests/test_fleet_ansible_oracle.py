"""Table-driven oracle: factbook reads 52 inventories (INI, YAML, JSON, folders with group_vars/
and host_vars/) as ansible-core does. For every case, `ansible-inventory --list` gives the
groups, their hosts and children and each host's merged variables; for the cases with
connection variables, the ssh command line `ansible -m ping` builds (traced, nothing is
contacted) read back by `ssh -G` gives host, port, user, identity file, ProxyJump and
ProxyCommand: a target resolved through an ssh config given by `-F` is compared through
`ssh -G` of the command line factbook's openssh transport builds, and a command line ssh
refuses must be refused by factbook (field_problems). `@CASE@` in a case's text is the
folder the case is written to. All of Ansible's runs come from one Python start
(tests/ansible_oracle.py), once per machine for each content of the cases and each
ansible-core (the `oracle` fixture); factbook's reading and `ssh -G` run every time."""

from __future__ import annotations

import getpass
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from build_cache import cached_entry
from helpers import require

from factbook.knowledge.fleet.ansibleyaml import Unsafe, Vaulted
from factbook.knowledge.fleet.connection import field_problems
from factbook.knowledge.fleet.inventory import ALL
from factbook.knowledge.fleet.load import read_source
from factbook.knowledge.model import Target
from factbook.verification.transports.base import TransportOptions
from factbook.verification.transports.openssh import OpenSSHTransport

ORACLE = Path(__file__).with_name("ansible_oracle.py")

INI_BASE = """\
mail.example.com
[web]
www[01:05].example.com
foo.example.com:2222 ansible_user=admin
[lab]
cpu-[a:f].lab
n[0:10:2]
[lab:vars]
region=eu
"""

# name -> ({relative path: text}, inventory path, trace ssh?)
CASES: dict[str, tuple[dict[str, str], str, bool]] = {
    "ini_ranges_anywhere": ({"hosts": INI_BASE}, "hosts", False),
    "ini_ranges_ssh": ({"h": "[g]\nwww[1:2].example.com\ncpu-[a:b].lab:2201\n"}, "h", True),
    "ini_range_with_port": ({"h.ini": "[db]\ndb[1:2]:2200\n10.0.0.[1:2]\n"}, "h.ini", True),
    "ini_upper_letters_and_two_ranges": (
        {"h.ini": "[r]\nrack[A:C]-u[01:02]\n"},
        "h.ini",
        False,
    ),
    "ini_values_as_literals": (
        {
            "h.ini": "[g]\nh1 a=1 b=True c='[1, 2]' d=\"{'k': 'v'}\" e=text f=1.5 g=\"a b\"\n"
            "[g:vars]\nlist=[1, (2, 3)]\nstr = spaced value \nnone=None\nell=...\n"
        },
        "h.ini",
        False,
    ),
    "ini_children_declared_later": (
        {"h.ini": "[top:children]\nmid\n[mid:children]\nleaf\n[leaf]\nx1\n[mid]\nx2\n"},
        "h.ini",
        False,
    ),
    "ini_depth_child_wins": (
        {
            "h.ini": "[parent:children]\nchild\n[parent:vars]\nv=parent\nw=parent\n"
            "[child]\nh1\n[child:vars]\nv=child\n[all:vars]\nv=all\nz=all\n"
        },
        "h.ini",
        False,
    ),
    "ini_priority_beats_name": (
        {
            "h.ini": "[a_first]\nh1\n[a_first:vars]\nv=a\nansible_group_priority=10\n"
            "[b_second]\nh1\n[b_second:vars]\nv=b\n"
        },
        "h.ini",
        False,
    ),
    "ini_same_depth_by_name": (
        {"h.ini": "[zz]\nh1\n[zz:vars]\nv=zz\n[aa]\nh1\n[aa:vars]\nv=aa\n"},
        "h.ini",
        False,
    ),
    "ini_host_in_two_groups_vars_merge": (
        {"h.ini": "[a]\nh1 x=1 y=1\n[b]\nh1 y=2 z=2\nh2:2022\n[b:vars]\nx=group\n"},
        "h.ini",
        True,
    ),
    "ini_comments_and_semicolons": (
        {"h.ini": "# c\n; c\n[g]  # trailing\nh1 # host comment\nh2 ansible_port=2201 # c\n"},
        "h.ini",
        True,
    ),
    "ini_legacy_ssh_names_win": (
        {
            "h.ini": "[g]\nh1 ansible_host=new.example ansible_ssh_host=old.example "
            "ansible_port=2201 ansible_ssh_port=2202 ansible_user=new ansible_ssh_user=old\n"
            "h2 ansible_ssh_host=only-old.example ansible_ssh_port=2203 ansible_ssh_user=o\n"
            "h3 ansible_host=only-new.example ansible_user=n\n"
        },
        "h.ini",
        True,
    ),
    "ini_common_args_jump": (
        {
            "h.ini": "[g]\nh1\nh2 ansible_ssh_extra_args='-oProxyJump=ops@gw2:2200'\n"
            "[g:vars]\nansible_ssh_common_args='-J admin@bastion.example.com:2200'\n"
        },
        "h.ini",
        True,
    ),
    "ini_proxy_command": (
        {
            "h.ini": "[g]\n"
            "h1 ansible_ssh_common_args='-o ProxyCommand=\"nc -X 5 -x p:1080 %h %p\"'\n"
            "h2 ansible_ssh_common_args='-o \"ProxyCommand ssh -W %h:%p gw\"'\n"
            "h3 ansible_ssh_common_args='-o ProxyJump=j1 -o ProxyCommand=\"nc %h %p\"'\n"
        },
        "h.ini",
        True,
    ),
    "ini_extra_args_after_ansible_options": (
        {
            "h.ini": "[g]\nh1 ansible_port=2201 ansible_ssh_extra_args='-p 2299 -l late'\n"
            "h2 ansible_ssh_extra_args='-p 2299 -l late -i /dev/null'\n"
            "h3 ansible_ssh_common_args='-o Port=2301 -o User=c' "
            "ansible_ssh_extra_args='-o Port=2302 -o User=e'\n"
        },
        "h.ini",
        True,
    ),
    "ini_keys": (
        {
            "h.ini": "[g]\n"
            "h1 ansible_ssh_private_key_file=/keys/a ansible_private_key_file=/keys/b\n"
            "h2 ansible_private_key_file=/keys/c\n"
        },
        "h.ini",
        True,
    ),
    "ini_all_hosts_section": ({"h.ini": "[all]\nh1\n[g]\nh2\n"}, "h.ini", False),
    "ini_empty_group": ({"h.ini": "[empty]\n[g]\nh1\n[p:children]\nempty\n"}, "h.ini", False),
    "ini_dash_group_names": (
        {"h.ini": "[gpu-nodes]\nn1\n[gpu-nodes:vars]\nx=1\n[fleet:children]\ngpu-nodes\n"},
        "h.ini",
        False,
    ),
    "ini_in_yml_suffix": ({"h.yml": "[g]\nh1\n"}, "h.yml", False),
    "ini_no_suffix_yaml_inside": (
        {"hosts": "all:\n  hosts:\n    y1:\n      a: 1\n"},
        "hosts",
        False,
    ),
    "yaml_ranges": (
        {
            "h.yml": "all:\n  children:\n    w:\n      hosts:\n        w[00:15].lan:\n"
            "        'db-[a:c]:2201':\n          role: db\n"
        },
        "h.yml",
        False,
    ),
    "yaml_ranges_ssh": (
        {"h.yml": "w:\n  hosts:\n    w[08:09].lan:\n    'db-[a:b]:2201':\n"},
        "h.yml",
        True,
    ),
    "yaml_string_sections": (
        {"h.yaml": "g:\n  hosts: single.example\n  children: kid\nkid:\n  hosts: k1\n"},
        "h.yaml",
        False,
    ),
    "yaml_unknown_key_and_bad_group_skipped": (
        {"h.yml": "g:\n  hosts: {h1: }\n  extra: {a: 1}\n  notes: text\nbad: [1, 2]\n"},
        "h.yml",
        False,
    ),
    "yaml_nested_depth_and_vars": (
        {
            "h.yml": "all:\n  vars: {v: all, w: all}\n  children:\n    a:\n      vars: {v: a}\n"
            "      children:\n        b:\n          vars: {v: b, w: b}\n          hosts:\n"
            "            h1: {w: host}\n            h2:\n"
        },
        "h.yml",
        False,
    ),
    "yaml_priority": (
        {
            "h.yml": "x_low:\n  vars: {ansible_group_priority: 5, v: x}\n  hosts: {h1: }\n"
            "y_high:\n  vars: {v: y}\n  hosts: {h1: }\n"
        },
        "h.yml",
        False,
    ),
    "yaml_group_declared_twice": (
        {
            "h.yml": "a:\n  hosts: {h1: {x: 1}}\n  vars: {g: 1}\nb:\n  children:\n"
            "    a:\n      hosts: {h2: }\n      vars: {g: 2}\n"
        },
        "h.yml",
        False,
    ),
    "yaml_connection_vars": (
        {
            "h.yml": "g:\n  vars:\n    ansible_user: ops\n    ansible_ssh_common_args: -J gw1,gw2\n"
            "  hosts:\n    h1: {ansible_host: 10.1.0.1, ansible_port: 2201}\n"
            "    h2: {ansible_ssh_host: 10.1.0.2, ansible_ssh_user: legacy}\n"
        },
        "h.yml",
        True,
    ),
    "yaml_json_suffix": (
        {"h.json": '{"g": {"hosts": {"j1": {"a": [1, 2]}}, "vars": {"b": {"c": 1}}}}'},
        "h.json",
        False,
    ),
    "yaml_hosts_in_all": (
        {"h.yml": "all:\n  hosts:\n    lone:\n  children:\n    g:\n      hosts: {h1: }\n"},
        "h.yml",
        False,
    ),
    "dir_group_vars_beat_inline": (
        {
            "inv/hosts.ini": "[g]\nh1\n[g:vars]\nv=inline\nonly_inline=1\n[all:vars]\na=inline\n",
            "inv/group_vars/g.yml": "v: file\n",
            "inv/group_vars/all.yml": "a: file\nb: file\n",
        },
        "inv",
        False,
    ),
    "dir_file_layer_over_child_inline": (
        {
            "inv/hosts.ini": "[parent:children]\nchild\n[child]\nh1\n"
            "[child:vars]\nv=child_inline\n",
            "inv/group_vars/parent.yml": "v: parent_file\n",
        },
        "inv",
        False,
    ),
    "dir_host_vars_beat_all": (
        {
            "inv/hosts.yml": "g:\n  hosts:\n    h1: {v: inline, w: inline}\n  vars: {v: g}\n",
            "inv/group_vars/g.yaml": "v: gfile\nw: gfile\n",
            "inv/host_vars/h1.yml": "v: hostfile\n",
        },
        "inv",
        False,
    ),
    "dir_first_vars_file_wins": (
        {
            "inv/hosts": "[g]\nh1\nh2\n",
            "inv/group_vars/g": "from: noext\n",
            "inv/group_vars/g.yml": "from: yml\nonly_yml: 1\n",
            "inv/host_vars/h1.yml": "h: yml\n",
            "inv/host_vars/h1.json": '{"h": "json", "j": 1}',
        },
        "inv",
        False,
    ),
    "dir_vars_folders": (
        {
            "inv/hosts.ini": "[g]\nh1\n",
            "inv/group_vars/g/10-a.yml": "a: 1\nx: a\n",
            "inv/group_vars/g/20-b.yaml": "b: 2\nx: b\n",
            "inv/group_vars/g/sub/c.json": '{"c": 3}',
            "inv/group_vars/g/notes.txt": "x: ignored\n",
            "inv/group_vars/g/.hidden.yml": "x: hidden\n",
            "inv/host_vars/h1/main.yml": "h: 1\n",
        },
        "inv",
        False,
    ),
    "dir_several_files_merge": (
        {
            "inv/01-a.ini": "[g]\nh1 x=1\n[g:vars]\nv=first\n",
            "inv/02-b.yml": "g:\n  hosts: {h1: {x: 2}, h2: }\n  vars: {v: second}\n",
            "inv/README.md": "# not an inventory\n",
            "inv/old.retry": "h9\n",
            "inv/sub/03-c.ini": "[sub]\nh3\n",
        },
        "inv",
        False,
    ),
    "dir_group_vars_beside_file": (
        {
            "hosts.ini": "[g]\nh1 ansible_user=inline\n",
            "group_vars/all.yml": "ansible_port: 2299\n",
            "group_vars/g.yml": "ansible_user: from_group_file\nansible_host: 10.9.9.9\n",
        },
        "hosts.ini",
        True,
    ),
    "dir_host_vars_connection": (
        {
            "inv/hosts.yml": "g:\n  hosts:\n    h1:\n    h2:\n  vars:\n    ansible_user: g\n",
            "inv/host_vars/h1.yml": "ansible_host: 10.2.0.1\nansible_ssh_extra_args: -J jumper\n",
            "inv/group_vars/g.yml": "ansible_port: 2022\n",
        },
        "inv",
        True,
    ),
    "dir_priority_in_inventory_only": (
        {
            "inv/hosts.ini": "[a]\nh1\n[b]\nh1\n[a:vars]\nansible_group_priority=3\nv=a\n"
            "[b:vars]\nv=b\n",
            "inv/group_vars/a.yml": "w: a\n",
            "inv/group_vars/b.yml": "w: b\n",
        },
        "inv",
        False,
    ),
    "dir_all_file_below_group_inline": (
        {
            "inv/hosts.ini": "[g]\nh1\n[g:vars]\nv=g_inline\n",
            "inv/group_vars/all.yml": "v: all_file\n",
        },
        "inv",
        False,
    ),
    "dir_empty_vars_file": (
        {"inv/hosts.ini": "[g]\nh1\n", "inv/group_vars/g.yml": "", "inv/host_vars/h1": "---\n"},
        "inv",
        False,
    ),
    "ini_big_fleet": (
        {"h.ini": "[gpu:children]\nh100\nb200\n[h100]\nnode-[001:120]\n[b200]\nnode-[121:200]\n"},
        "h.ini",
        False,
    ),
    "ini_stride_and_pad": ({"h.ini": "[g]\nn[00:20:5]\nm[1:9:4]\n"}, "h.ini", False),
    "ini_ipv4_ranges_and_ports": (
        {"h.ini": "[g]\n192.168.1.[10:11]\n192.168.2.1:2200\nweb:8022\n"},
        "h.ini",
        True,
    ),
    "ini_vars_replace_dicts": (
        {"h.ini": "[a]\nh1\n[a:vars]\nd={'x': 1, 'y': 2}\n[b:children]\na\n[b:vars]\nd={'z': 3}\n"},
        "h.ini",
        False,
    ),
    "yaml_anchors_and_merge_keys": (
        {
            "h.yml": "all:\n  vars:\n    common: &common\n      ansible_user: ubuntu\n"
            "      ansible_port: 2222\n  children:\n    gpus:\n      hosts:\n        gpu1:\n"
            "          <<: *common\n          ansible_host: 10.0.0.1\n        gpu2:\n"
            "          <<: *common\n          ansible_host: 10.0.0.2\n          ansible_port: 22\n"
            "        gpu3: *common\n      vars:\n        tags: &t [a, b]\n        again: *t\n",
            "group_vars/gpus.yml": "base: &b {x: 1, y: [1, 2]}\nmore:\n  <<: [*b, {z: 3}]\n"
            "  y: 9\n",
        },
        "h.yml",
        True,
    ),
    "yaml_vault_and_unsafe": (
        {
            "h.yml": "all:\n  hosts:\n    gpu1:\n      ansible_host: 10.0.0.1\n"
            "      ansible_become_password: !vault |\n"
            "          $ANSIBLE_VAULT;1.1;AES256\n"
            "          6231336539666234306139346433616338376437376461363365363430623138\n"
            "      motd: !unsafe '{{ not templated }}'\n"
            "      nested: !unsafe {a: '{{ x }}', b: [1, '{% y %}']}\n",
        },
        "h.yml",
        False,
    ),
    "ini_ssh_config_given_by_dash_f": (
        {
            "ssh.cfg": "Host 10.0.0.1\n  HostName real.internal\n  Port 2200\n  User cfguser\n"
            "  ProxyJump gw.internal\nHost h2\n  User h2user\n  Port 2300\n"
            "Host *\n  ProxyCommand nc %h %p\n",
            "other.cfg": "Host *\n  User other\n",
            "h.ini": "[g]\nh1 ansible_host=10.0.0.1\nh2 ansible_port=2201\n"
            "h3 ansible_ssh_extra_args='-F none'\n"
            "h4 ansible_ssh_common_args='-F @CASE@/ssh.cfg -F @CASE@/other.cfg'\n"
            "h5 ansible_ssh_args='-F @CASE@/other.cfg' ansible_user=u5\n"
            "[g:vars]\nansible_ssh_common_args='-F @CASE@/ssh.cfg'\n",
        },
        "h.ini",
        True,
    ),
    "ini_jumps_ssh_refuses_and_service_ports": (
        {
            "h.ini": "[g]\nh1 ansible_ssh_common_args='-J gw1' ansible_ssh_extra_args='-J gw2'\n"
            "h2 ansible_ssh_common_args='-o ProxyJump=gw1 -J gw2'\n"
            "h3 ansible_ssh_common_args='-o Port=http'\n"
            "h4 ansible_ssh_common_args='-p ssh -o ProxyJump=none -o ProxyCommand=\"nc %h\"'\n"
            "h5 ansible_ssh_common_args='-o ProxyJump=a -o ProxyJump=b'\n"
            "h6 ansible_ssh_extra_args='-p 0x10'\n"
            "h7 ansible_port=2200 ansible_ssh_extra_args='-o Port=nosuch'\n"
            "h8 ansible_port=2200 ansible_ssh_extra_args='-p nosuch -l late'\n"
            "h9 ansible_ssh_common_args='-o ProxyCommand=none -J gw'\n"
            "h10 ansible_ssh_common_args='-J none -o ProxyCommand=\"nc %h\" -o ProxyJump=j'\n"
            "h11 ansible_ssh_common_args='-o ProxyJump=none -J gw'\n"
            "h12 ansible_ssh_common_args='-o ProxyCommand=none -o ProxyJump=j -p 0'\n"
        },
        "h.ini",
        True,
    ),
    "ini_names_ansible_accepts": (
        {
            "h.ini": "[g]\nweb1\n[v6]\n2001:db8::10\n[v6:vars]\nansible_user=six\n"
            "[_private]\nweb2 ansible_port=2201\n"
            "[long]\nnode-0001.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example.com\n"
            "[_outer:children]\n_private\nv6\n"
        },
        "h.ini",
        True,
    ),
    "yaml_children_of_children_ungrouped": (
        {
            "h.yml": "all:\n  hosts: {solo: }\n  children:\n    p:\n      children:\n"
            "        c: {hosts: {h1: }}\n    ungrouped:\n      hosts: {u1: }\n"
        },
        "h.yml",
        False,
    ),
}


@pytest.fixture(scope="module")
def oracle() -> Path:
    """Every case written out and run through Ansible once (list for all, ssh for some): once
    per machine for each content of the cases, the oracle script and ansible-core
    (tests/build_cache.py; FACTBOOK_TEST_FRESH=1 asks Ansible again). `ssh -G` reads the
    traces live in every run."""
    python = Path(sys.executable)
    require(None if _has_ansible(python) else "ansible-core (pip install -e '.[test]')")
    require(None if shutil.which("ssh") else "the OpenSSH client (ssh -G)")
    return cached_entry(f"answer-ansible-{_answers_key(python)}", "answer-ansible-*", _ask)


def _answers_key(python: Path) -> str:
    """A hash of what Ansible's answers depend on: the cases, the oracle script, the
    interpreter and ansible-core as installed, the user and any ANSIBLE_* variable."""
    digest = hashlib.sha256()
    digest.update(ORACLE.read_bytes())
    digest.update(json.dumps(CASES, sort_keys=True).encode())
    core = importlib.metadata.distribution("ansible-core")
    digest.update(f"{sys.version}\0{python}\0{core.version}\0".encode())
    digest.update((core.read_text("RECORD") or "").encode())
    ansible_env = sorted((k, v) for k, v in os.environ.items() if k.startswith("ANSIBLE_"))
    digest.update(json.dumps([getpass.getuser(), ansible_env]).encode())
    return digest.hexdigest()[:24]


def _ask(root: Path) -> None:
    """Write every case under `root` and let Ansible answer each (tests/ansible_oracle.py)."""
    for name, (files, inventory, _) in CASES.items():
        case = root / name
        case.mkdir(parents=True)
        for rel, text in files.items():
            (case / rel).parent.mkdir(parents=True, exist_ok=True)
            (case / rel).write_text(text.replace("@CASE@", str(case)))
        (case / "inventory").write_text(inventory)
    home = root / ".ansible-home"
    env = {
        **os.environ,
        "ANSIBLE_HOME": str(home),
        "ANSIBLE_CONFIG": str(root / "none.cfg"),
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(home / "cp"),
        "ANSIBLE_LOCAL_TEMP": str(home / "tmp"),
    }
    ssh = [name for name, (_, _, trace) in CASES.items() if trace]
    done = subprocess.run(
        [sys.executable, str(ORACLE), str(root), "--ssh", *ssh],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def _has_ansible(python: Path) -> bool:
    probe = [str(python), "-c", "import ansible.cli.inventory"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def test_enough_cases() -> None:
    """At least 40 inventories of every kind, a dozen of them traced through ssh."""
    assert len(CASES) >= 40
    assert sum(trace for _, _, trace in CASES.values()) >= 12
    kinds = {
        "dir" if any(rel.startswith(inv + "/") for rel in files) else Path(inv).suffix
        for files, inv, _ in CASES.values()
    }
    assert {".ini", ".yml", ".yaml", ".json", "", "dir"} <= kinds
    beside = [f for f, inv, _ in CASES.values() if any(r.startswith("group_vars/") for r in f)]
    assert beside  # group_vars/ next to an inventory file, not only inside a folder


@pytest.mark.parametrize("name", list(CASES))
def test_groups_members_and_vars_as_ansible_inventory(oracle: Path, name: str) -> None:
    case = oracle / name
    assert (case / "list.rc").read_text() == "0", (case / "list.err").read_text()[-1500:]
    theirs = json.loads((case / "list.json").read_text())
    ours = read_source(case / CASES[name][1])
    targets = ours.finish()
    hostvars = theirs["_meta"]["hostvars"]
    their_hosts = set(hostvars) | {
        h for g, body in theirs.items() if g != "_meta" for h in body.get("hosts", [])
    }
    assert set(targets) == their_hosts
    for host in their_hosts:
        assert _as_ansible_json(targets[host].vars) == hostvars.get(host, {}), host
    for group, body in theirs.items():
        if group == "_meta":
            continue
        assert ours.groups[group].targets == body.get("hosts", []), group
        assert set(ours.groups[group].children) == set(body.get("children", [])), group
    for group, found in ours.groups.items():
        if group != ALL and (found.targets or found.children):
            assert group in theirs, group


def _as_ansible_json(value: Any) -> Any:
    """A value as `ansible-inventory --list` writes it: a vaulted one as
    {"__ansible_vault": ciphertext}, an `!unsafe` text as {"__ansible_unsafe": text}."""
    if isinstance(value, Vaulted):
        return {"__ansible_vault": value.ciphertext}
    if isinstance(value, Unsafe):
        return {"__ansible_unsafe": str(value)}
    if isinstance(value, dict):
        return {k: _as_ansible_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_ansible_json(v) for v in value]
    return value


def _ssh_g(argv: list[str]) -> dict[str, list[str]] | str:
    """`ssh -G` over the argv Ansible built (its remote command left off): what ssh uses, or
    ssh's refusal (its stderr)."""
    done = subprocess.run(
        ["ssh", "-G", "-F", "/dev/null", *argv[:-1]],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if done.returncode != 0:
        return done.stderr.strip() or f"ssh -G exited {done.returncode}"
    out: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        out.setdefault(key, []).append(value)
    return out


SSH_CASES = [name for name, (_, _, trace) in CASES.items() if trace]


@pytest.mark.parametrize("name", SSH_CASES)
def test_host_port_user_jump_as_ansible_ssh(oracle: Path, name: str) -> None:
    case = oracle / name
    targets = read_source(case / CASES[name][1]).finish()
    traces = sorted((case / "ssh").glob("*.json"))
    assert {t.stem for t in traces} == set(targets), (case / "ssh.err").read_text()[-1500:]
    me = getpass.getuser()
    for trace in traces:
        target = targets[trace.stem]
        seen = _ssh_g(json.loads(trace.read_text()))
        problems = field_problems(target)
        if isinstance(seen, str):  # ssh refuses Ansible's command line: so must factbook
            assert problems, (trace.stem, seen)
            continue
        assert problems == [], trace.stem
        if target.ssh_config:
            assert target.transport == "openssh", trace.stem
            theirs, ours = _resolved(seen), _resolved(_ssh_g(_factbook_argv(target, targets)))
            assert ours == theirs, trace.stem
            continue
        got: dict[str, Any] = {
            "host": target.host or target.name,
            "port": str(target.port or 22),
            "user": target.user or me,
            "jump": ",".join(target.jump) or None,
            "proxycommand": target.proxy_command,
        }
        want = {
            "host": seen["hostname"][0],
            "port": seen["port"][0],
            "user": seen["user"][0],
            "jump": seen.get("proxyjump", [None])[0],
            "proxycommand": seen.get("proxycommand", [None])[0],
        }
        assert got == want, trace.stem
        if target.identity_file:
            assert target.identity_file in seen["identityfile"], trace.stem
        assert target.transport == ("openssh" if target.proxy_command else "ssh")


def _resolved(seen: dict[str, list[str]] | str) -> dict[str, Any]:
    """What a connection resolves to, from `ssh -G`."""
    assert isinstance(seen, dict), seen
    keys = ("hostname", "port", "user", "proxyjump", "proxycommand", "identityfile")
    return {key: seen.get(key) for key in keys}


def _factbook_argv(target: Target, targets: dict[str, Target]) -> list[str]:
    """The ssh command line factbook's openssh transport runs for `target`, with a stand-in
    remote command in the place Ansible's has one (_ssh_g leaves the last word off)."""
    transport = OpenSSHTransport(target, targets, TransportOptions())
    return [*transport.argv[1:], "true"]
