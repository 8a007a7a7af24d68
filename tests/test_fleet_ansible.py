"""Ansible inventories read as targets, cross-checked against the real `ansible-inventory
--list` of ansible-core: the same hosts, the same groups (direct hosts and children) and the
same merged variables for every host, in INI, YAML, directory and --list JSON form."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import cli, fact, make_kb

from factbook.errors import InputError
from factbook.knowledge.fleet.ansible import read_ansible
from factbook.knowledge.fleet.connection import field_problems
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
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
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
        ("[gpu]\nno/slash\n", "hosts.ini:2: host: bad inventory name"),
        ("[gpu:weird]\n", "hosts.ini:1: section [gpu:weird] has unknown type"),
    ],
)
def test_bad_ini_names_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text(text)
    with pytest.raises(InputError, match=re.escape(message)):
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
    assert gpu.ssh_config == str(config)  # its keys come from there, as `ssh -F config gpu-1`
    assert (inv.targets["bastion"].port, inv.targets["bastion"].user) == (2200, "fallback")


# Malformed inventories of every format: one line naming the file (and line where the format
# has lines), InputError (exit 2), never a traceback. (file name, text, message fragment)
MALFORMED = [
    ("h.yml", "g:\n  vars: [a, b]\n", "group 'g': 'vars' must be a mapping, not a list"),
    ("h.yml", "g:\n  hosts: 5\n", "group 'g': 'hosts' must be a mapping, not a int"),
    ("h.yml", "g:\n  children: [a]\n", "group 'g': 'children' must be a mapping, not a list"),
    ("h.yml", "g:\n  hosts:\n    5:\n", "host pattern 5 must be a string"),
    ("h.yml", "g:\n  hosts:\n    h1: [1, 2]\n", "host 'h1': variables must be a mapping"),
    ("h.yml", "5:\n  hosts: {h1: }\n", "group name 5 is not a string"),
    ("h.yml", "g:\n  vars: {ansible_group_priority: high}\n", "ansible_group_priority 'high'"),
    ("h.yml", "plugin: aws_ec2\nregions: [x]\n", "an inventory plugin configuration"),
    ("h.yml", "g: {hosts: {'n[1:0:0]': }}\n", "the step of a host range is a positive number"),
    ("h.yml", "g: {hosts: {'n[01:100]': }}\n", "a zero-padded range needs equal-length bounds"),
    ("h.yml", "g: {hosts: {'n[1:9999999]': }}\n", "expands to more than 100000 hosts"),
    ("h.yml", "g: {hosts: {'-oProxyCommand=x': }}\n", "host: bad inventory name"),
    ("h.json", '{"_meta": {"hostvars": [1]}, "g": {"hosts": ["a"]}}', "_meta.hostvars must be"),
    ("h.json", '{"_meta": {}, "g": {"hosts": 3}}', "group 'g': 'hosts' must be a list"),
    ("h.json", '{"_meta": {}, "g": {"vars": [1]}}', "group 'g': 'vars' must be an object"),
    ("h.json", '{"_meta": {"hostvars": {"a": 7}}}', "hostvars of 'a' must be an object"),
    ("h.json", '{"_meta": {}, "g": 5}', "group 'g': expected an object"),
    ("h.json", "[1, 2]", "h.json"),
    ("h.ini", "[g:children]\n-oProxyCommand=x\n", "h.ini:2: child group: bad inventory name"),
    ("h.ini", "[g:children]\n../../etc\n", "h.ini:2: child group: bad inventory name"),
    ("h.ini", "[g:children]\nkid\n", "h.ini:2: section [g:children] names undefined group 'kid'"),
    ("h.ini", "[g:vars]\nx=1\n", "h.ini:1: section [g:vars] names a group declared nowhere"),
    ("h.ini", "[-g]\nh1\n", "h.ini:1: group: bad inventory name"),
    ("h.ini", "[../x]\nh1\n", "h.ini:1: group: bad inventory name"),
    ("h.ini", "[g]\nh1:\n", "h.ini:2: host pattern 'h1:' ends in ':'"),
    ("h.ini", "[g]\nh1 novalue\n", "h.ini:2: expected key=value host variable"),
    ("h.ini", "[g]\nn[1:2:x]\n", "h.ini:2: 'n[1:2:x]': the step of a host range is a number"),
    ("h.ini", "[g]\nn[a:B:1:2]\n", "h.ini:2: 'n[a:B:1:2]': a host range is [begin:end]"),
    ("h.ini", "[g:vars]\nansible_group_priority=x\n[g]\n", "h.ini:2: ansible_group_priority"),
    ("h.toml", "[g]\n", "TOML inventories are not read"),
]


@pytest.mark.parametrize(("name", "text", "message"), MALFORMED)
def test_malformed_inventory_is_one_line(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        read_source(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).startswith(str(path))


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"group_vars/g.yml": "[1, 2]\n"}, "group_vars/g.yml: variables must be a mapping"),
        ({"group_vars/g.json": '{"a": '}, "group_vars/g.json:1: "),
        ({"host_vars/h1.yml": "a: [\n"}, "host_vars/h1.yml:2: YAML syntax error"),
        ({"host_vars/h1": "just text\n"}, "host_vars/h1: variables must be a mapping, not a str"),
        ({"host_vars/h1.yml": b"a: \xff\n"}, "host_vars/h1.yml:1: "),
        ({"group_vars/all/x.yml": "- 1\n"}, "group_vars/all/x.yml: variables must be a mapping"),
    ],
)
def test_bad_vars_file_is_one_line(tmp_path: Path, files: dict[str, Any], message: str) -> None:
    (tmp_path / "hosts.ini").write_text("[g]\nh1\n")
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        data = text if isinstance(text, bytes) else text.encode()
        (tmp_path / rel).write_bytes(data)
    with pytest.raises(InputError, match=re.escape(message)):
        read_source(tmp_path / "hosts.ini")


def test_malformed_inventory_through_the_cli_exits_2(tmp_path: Path) -> None:
    root = make_kb(tmp_path / "kb", [fact("sw.driver", "env.var", args={"name": "X"})])
    bad = tmp_path / "bad.yml"
    bad.write_text("g:\n  hosts: 5\n")
    code, out, err = cli(root, "verify", "--inventory", str(bad), "--target", "g", "--dry-run")
    # an inventory named on the command line: the message quotes none of the file's words
    assert code == 2 and "must be a mapping" in err and "Traceback" not in out + err
    assert "'hosts'" not in err and len(err.strip().splitlines()) == 1
    (root / "targets.yaml").write_text(f"inventory: {bad}\ntargets: {{}}\n")
    code, out, err = cli(root, "lint")
    assert code == 2 and "targets.yaml:1: inventory" in out + err and "Traceback" not in out + err


def test_huge_inventory_is_refused_fast_and_a_large_one_loads_linearly(tmp_path: Path) -> None:
    huge = tmp_path / "huge.ini"
    huge.write_text("".join(f"[g{i}]\nh{i}-[000001:100000]\n" for i in range(60)))
    started = time.perf_counter()
    with pytest.raises(InputError, match="more than 200000 hosts in one inventory"):
        read_source(huge)
    refused = time.perf_counter() - started

    def load(per_group: int) -> float:
        """CPU seconds of this process for one read (not wall time: the suite's other
        workers share the cores, and a busy moment must not read as quadratic work)."""
        path = tmp_path / f"fleet{per_group}.ini"
        path.write_text("".join(f"[g{i}]\nh{i}-[1:{per_group}]\n" for i in range(60)))
        began = time.process_time()
        assert len(read_source(path).targets) == 60 * per_group
        return time.process_time() - began

    runs = [(load(250), load(1000)) for _ in range(2)]  # 15k and 60k hosts, alternated
    small, large = min(r[0] for r in runs), min(r[1] for r in runs)
    assert refused < 15
    assert large < 8 * small + 0.5  # 4x the hosts: linear (quadratic would be 16x)


def test_empty_group_selects_nothing_unless_checks_were_asked_for(tmp_path: Path) -> None:
    root = make_kb(tmp_path / "kb", [fact("sw.driver", "env.var", args={"name": "X"})])
    (root / "inv.ini").write_text("[empty]\n[gpu]\nn1\n[fleet:children]\nempty\n")
    (root / "targets.yaml").write_text("inventory: inv.ini\ntargets: {}\n")
    for spec in ("@empty", "empty", "fleet", "gpu:&empty"):
        code, out, err = cli(root, "verify", "--target", spec)
        assert (code, out) == (0, ""), err
        assert err.strip() == f"no targets: --target '{spec}' selects none"
    assert not (root / "results").exists()
    code, _, err = cli(root, "verify", "--target", "@empty", "sw.driver")
    assert code == 2 and "checks asked for (sw.driver) have nowhere to run" in err
    code, _, err = cli(root, "verify", "--target", "nosuch")
    assert code == 2 and "unknown target 'nosuch'" in err


def _finished(path: Path, text: str) -> dict[str, Any]:
    """The targets of the inventory `text`, written at `path`, with their fields set."""
    path.write_text(text)
    return read_source(path).finish()


def test_connection_variables_refused_where_factbook_cannot_honour_them(tmp_path: Path) -> None:
    path = tmp_path / "h.ini"
    targets = _finished(
        path,
        "[g]\nwin ansible_connection=winrm\n"
        "tpl ansible_host='{{ inventory_hostname }}.example.com'\n"
        "badj ansible_ssh_common_args='-o ProxyCommand=nc -J j'\n"
        "loc ansible_connection=ansible.builtin.local\n"
        "pc ansible_ssh_extra_args='-o ProxyCommand=\"nc %h %p\"'\n",
    )
    assert field_problems(targets["win"]) == [
        "ansible_connection=winrm: factbook connects over ssh or locally only"
    ]
    assert "ansible_host is a Jinja2 template, which factbook does not evaluate" in (
        field_problems(targets["tpl"])
    )
    assert field_problems(targets["badj"]) == ["ssh refuses -J after a ProxyCommand"]
    assert targets["loc"].transport == "local" and field_problems(targets["loc"]) == []
    assert (targets["pc"].transport, targets["pc"].proxy_command) == ("openssh", "nc %h %p")
    root = make_kb(tmp_path / "kb", [fact("sw.driver", "env.var", args={"name": "X"})])
    code, _, err = cli(root, "verify", "--inventory", str(path), "--target", "win", "--dry-run")
    assert code == 2 and "target 'win': ansible_connection=winrm" in err


def test_aliases_expanding_past_the_bound_or_into_themselves_are_refused(tmp_path: Path) -> None:
    """Anchors and aliases are read as Ansible reads them (test_fleet_ansible_oracle.py), but
    what they expand to is bounded: nine lines of "billion laughs" (10**9 values for whoever
    walks them) and a value that contains itself are refused in one line, quickly."""
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for n in range(1, 10):
        refs = ", ".join([f"*{chr(96 + n)}"] * 10)
        laughs += f"{chr(97 + n)}: &{chr(97 + n)} [{refs}]\n"
    bomb = tmp_path / "bomb.yml"
    bomb.write_text("all:\n  vars:\n" + "".join("    " + line for line in laughs.splitlines(True)))
    started = time.perf_counter()
    with pytest.raises(InputError, match="aliases expand to more than 2000000 values; not read"):
        read_source(bomb)
    assert time.perf_counter() - started < 5
    loop = tmp_path / "loop.yml"
    loop.write_text("all:\n  vars:\n    a: &a [1, *a]\n")
    with pytest.raises(InputError, match="a value contains itself through an alias"):
        read_source(loop)
    fine = tmp_path / "fine.yml"
    head = "".join("    " + line for line in laughs.splitlines(True)[:4])
    fine.write_text("all:\n  vars:\n" + head)
    assert read_source(fine).groups["all"].vars["d"][0][0][0] == ["x"] * 10


VAULTED = """\
all:
  hosts:
    gpu1:
      ansible_host: !vault |
          $ANSIBLE_VAULT;1.1;AES256
          6231336539666234
    gpu2:
      ansible_host: !unsafe 'gpu{{2}}.lab'
      secret: !vault |
          $ANSIBLE_VAULT;1.1;AES256
          62313365
"""


def test_a_vaulted_connection_variable_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "h.yml"
    targets = _finished(path, VAULTED)
    assert field_problems(targets["gpu1"]) == [
        "ansible_host is encrypted with ansible-vault, which factbook does not decrypt"
    ]
    # an `!unsafe` text is used as written, not refused as a template (its braces are then
    # what ssh refuses in a host name, as it would from Ansible); a vaulted variable that is
    # not a connection variable is kept, opaque, and shown without its ciphertext
    assert targets["gpu2"].host == "gpu{{2}}.lab"
    assert field_problems(targets["gpu2"]) == [
        "host 'gpu{{2}}.lab' is not a host or user name ssh accepts"
    ]
    assert repr(targets["gpu2"].vars["secret"]) == "<vaulted>"
    root = make_kb(tmp_path / "kb", [fact("sw.driver", "env.var", args={"name": "X"})])
    code, out, err = cli(root, "verify", "--inventory", str(path), "--target", "gpu1", "--dry-run")
    assert code == 2 and "target 'gpu1': ansible_host is encrypted with ansible-vault" in err
    assert "ANSIBLE_VAULT" not in out + err and "Traceback" not in out + err


def test_an_ini_inventory_with_a_byte_order_mark_is_refused_as_ansible_misreads_it(
    tmp_path: Path,
) -> None:
    """Ansible's INI plugin keeps a leading U+FEFF in the first line: `[gpu]` becomes a host
    range it refuses, `host1` a host named "\\ufeffhost1". factbook refuses such a file."""
    first_section = tmp_path / "a.ini"
    first_section.write_bytes(b"\xef\xbb\xbf[gpu]\nn1 ansible_port=2200\n")
    first_host = tmp_path / "b.ini"
    first_host.write_bytes(b"\xef\xbb\xbfhost1\n[gpu]\nn1\n")
    for path in (first_section, first_host):
        with pytest.raises(InputError, match=r":1: starts with a UTF-8 byte order mark"):
            read_source(path)
    ansible = Path(sys.executable).with_name("ansible-inventory")
    if not ansible.exists():
        return
    env = {**os.environ, "ANSIBLE_HOME": str(tmp_path / ".ansible")}
    listed = subprocess.run(
        [str(ansible), "-i", str(first_host), "--list"], capture_output=True, text=True, env=env
    )
    assert json.loads(listed.stdout)["ungrouped"]["hosts"] == ["\ufeffhost1"]
