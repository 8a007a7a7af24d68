"""Ansible inventories read as targets, cross-checked against the real `ansible-inventory
--list` of ansible-core: the same hosts, the same groups (direct hosts and children) and the
same merged variables for every host, in INI, YAML, directory and --list JSON form."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import cli, fact, make_kb

from factbook.errors import InputError
from factbook.knowledge.fleet.ansible import read_ansible
from factbook.knowledge.fleet.hostpattern import expand_range
from factbook.knowledge.fleet.load import read_source

ANSIBLE_INVENTORY = shutil.which("ansible-inventory") or str(
    Path(sys.executable).with_name("ansible-inventory")
)

INI = """\
# as in the Ansible docs: ungrouped hosts first, then groups, :children and :vars
mail.example.com

[webservers]
foo.example.com
bar.example.com:2222 ansible_user=admin

[gpu_h100]
node-[01:04] ansible_host=10.0.0.1
node-17 gpu_count=7 broken=True

[gpu_b200]
node-[a:c]
node-[08:12:2]

[gpu:children]
gpu_h100
gpu_b200

[gpu:vars]
driver=580.95.05
gpu_count=8
ansible_ssh_common_args='-J admin@bastion.example.com:2200'
ansible_python_interpreter=/opt/venv/bin/python3

[gpu_b200:vars]
gpu_count=4
"""

YAML = """\
all:
  vars:
    ansible_user: ops
  hosts:
    mail.example.com:
  children:
    webservers:
      hosts:
        foo.example.com:
        bar.example.com:
          ansible_port: 2222
    gpu:
      vars:
        driver: 580.95.05
        gpu_count: 8
      children:
        h100:
          hosts:
            node-[01:03]:
              ansible_ssh_private_key_file: ~/.ssh/fleet
        b200:
          vars: {gpu_count: 4, memory: {per_gpu_gib: 180}}
          hosts:
            node-b[1:2]:
            node-17:
              gpu_count: 7
"""


def _ansible(path: Path, tmp_path: Path) -> dict[str, Any]:
    if not os.path.exists(ANSIBLE_INVENTORY):
        pytest.fail("ansible-core is a test dependency: pip install -e '.[test]'")
    env = {**os.environ, "ANSIBLE_HOME": str(tmp_path / "ansible-home"), "ANSIBLE_CONFIG": ""}
    done = subprocess.run(
        [ANSIBLE_INVENTORY, "-i", str(path), "--list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _cross_check(
    path: Path, tmp_path: Path, theirs: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Assert factbook reads `path` as ansible-core does (or as `theirs` lists it); return
    ansible's view."""
    theirs = theirs or _ansible(path, tmp_path)
    ours = read_source(path)
    targets = ours.finish()
    hostvars = theirs["_meta"]["hostvars"]
    their_hosts = set(hostvars) | {
        h for name, g in theirs.items() if name != "_meta" for h in g.get("hosts", [])
    }
    assert set(targets) == their_hosts
    for host in their_hosts:
        assert targets[host].vars == hostvars.get(host, {}), host
    for name, group in theirs.items():
        if name == "_meta":
            continue
        assert ours.groups[name].targets == group.get("hosts", []), name
        assert set(ours.groups[name].children) == set(group.get("children", [])), name
    for name, group in ours.groups.items():  # and nothing more than ansible sees
        if group.targets or group.children:
            assert name in theirs, name
    return theirs


def test_ini_matches_ansible(tmp_path: Path) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text(INI)
    theirs = _cross_check(path, tmp_path)
    assert len(theirs["_meta"]["hostvars"]) >= 8  # ranges expanded on both sides
    targets = read_ansible(path).finish()
    node = targets["node-02"]
    assert (node.host, node.jump, node.python) == (
        "10.0.0.1",
        ("admin@bastion.example.com:2200",),
        "/opt/venv/bin/python3",
    )
    assert targets["node-17"].vars["gpu_count"] == 7 and targets["node-17"].vars["broken"] is True
    assert targets["node-a"].vars["gpu_count"] == 4  # the child's :vars win over the parent's
    bar = targets["bar.example.com"]
    assert (bar.host, bar.port, bar.user, bar.jump) == ("bar.example.com", 2222, "admin", ())
    assert targets["node-10"].groups == ("gpu", "gpu_b200")


def test_yaml_matches_ansible(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text(YAML)
    _cross_check(path, tmp_path)
    targets = read_ansible(path).finish()
    assert targets["node-b2"].vars["memory"] == {"per_gpu_gib": 180}
    assert targets["node-01"].identity_file == "~/.ssh/fleet"
    assert targets["mail.example.com"].user == "ops"  # `all` vars reach every host


def test_directory_with_group_and_host_vars_matches_ansible(tmp_path: Path) -> None:
    inv = tmp_path / "inventory"
    (inv / "group_vars" / "gpu").mkdir(parents=True)
    (inv / "host_vars").mkdir()
    (inv / "10-hosts.ini").write_text(INI)
    (inv / "20-extra.yml").write_text("lab:\n  hosts:\n    node-99:\n    node-01:\n")
    (inv / "group_vars" / "all.yml").write_text("site: lab-a\nntp: [a, b]\n")
    (inv / "group_vars" / "gpu" / "driver.yml").write_text("driver: 575.57.08\n")
    (inv / "group_vars" / "lab.yaml").write_text("gpu_count: 2\n")
    (inv / "host_vars" / "node-17").write_text("dead_gpu: 3\n")
    (inv / "host_vars" / "node-99.json").write_text('{"gpu_count": 1}')
    _cross_check(inv, tmp_path)
    targets = read_ansible(inv).finish()
    assert targets["node-17"].vars["dead_gpu"] == 3
    assert (
        targets["node-03"].vars["driver"] == "575.57.08"
    )  # group_vars/ wins over :vars, as in ansible


def test_list_json_reads_back_the_same(tmp_path: Path) -> None:
    ini = tmp_path / "hosts.ini"
    ini.write_text(INI)
    listed = tmp_path / "list.json"
    theirs = _ansible(ini, tmp_path)
    listed.write_text(json.dumps(theirs))
    _cross_check(listed, tmp_path, theirs)  # ansible reads no --list JSON back; we do
    assert read_source(listed).finish()["node-03"].jump == ("admin@bastion.example.com:2200",)


def test_ranges() -> None:
    assert expand_range("n[01:03]") == ["n01", "n02", "n03"]
    assert expand_range("n[8:12:2]") == ["n8", "n10", "n12"]
    assert expand_range("r[a:b]-[1:2]") == ["ra-1", "ra-2", "rb-1", "rb-2"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[gpu\nnode-1\n", "hosts.ini:1: '[gpu': '[' without ']'"),
        ("[gpu:vars]\ndriver\n", "hosts.ini:2: expected key=value"),
        ("[gpu]\nnode-1 'unclosed\n", "hosts.ini:2: "),
        ("[gpu]\nno/slash\n", "hosts.ini:2: host: bad target name"),
        ("[gpu:weird]\n", "hosts.ini:1: section [gpu:weird] has unknown type"),
    ],
)
def test_bad_ini_names_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text(text)
    with pytest.raises(InputError, match=message.replace(".", r"\.")):
        read_source(path)


def test_inventory_key_and_option_reach_verify(tmp_path: Path) -> None:
    root = make_kb(tmp_path / "kb", [fact("sw.driver", "env.var", args={"name": "X"})])
    (root / "inv").mkdir()
    (root / "inv" / "hosts.ini").write_text(INI)
    inventory = str(root / "inv" / "hosts.ini")
    argv = ["--target", "gpu:!node-17", "--limit", "gpu_h100", "--dry-run"]
    code, out, err = cli(root, "verify", "--inventory", inventory, *argv)
    assert code == 0, err
    assert [line.split(" on ")[1].split(":")[0] for line in out.splitlines()] == [
        "node-01",
        "node-02",
        "node-03",
        "node-04",
    ]
    (root / "targets.yaml").write_text(
        "inventory: inv/hosts.ini\ntargets:\n  here: {transport: local}\n"
        "groups:\n  gpu_b200: {vars: {gpu_count: 5}}\n"
    )
    code, out, err = cli(root, "verify", "--target", "@gpu_b200", "--dry-run")
    assert code == 0, err
    assert len(out.splitlines()) == 6
    code, out, err = cli(root, "lint")
    assert code == 0, out + err
    (root / "targets.yaml").write_text("inventory: inv/missing.ini\ntargets: {}\n")
    code, out, err = cli(root, "lint")
    assert code == 2 and "targets.yaml:1: inventory inv/missing.ini: " in out + err


def test_ssh_config_hosts_become_targets(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(
        "Host bastion\n  HostName 192.0.2.1\n  Port 2200\n\n"
        "Host gpu-1 gpu-2\n  HostName 10.1.0.5\n  User ml\n  ProxyJump bastion\n"
        "  IdentityFile ~/.ssh/gpu\n\nHost *.internal !skip\n  User x\n\n"
        "Host *\n  User fallback\n"
    )
    inv = read_source(config)
    assert list(inv.targets) == ["bastion", "gpu-1", "gpu-2"]
    gpu = inv.targets["gpu-1"]
    assert (gpu.host, gpu.user, gpu.jump) == ("10.1.0.5", "ml", ("bastion",))
    assert gpu.identity_file and gpu.identity_file.endswith("/.ssh/gpu")
    assert (inv.targets["bastion"].port, inv.targets["bastion"].user) == (2200, "fallback")
