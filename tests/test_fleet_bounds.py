"""Fleet inventories of hostile or merely large shape are read in bounded time, as ansible-core
and ssh read them: inventory folders with links back up (`a -> .`, `up -> ..`), folders
leading out of the knowledge base, children chains thousands of groups deep, a ring of
children, 100,000 hosts in 100 groups, an ssh config of 5,000 Host aliases.

Times are CPU seconds of this process (`time.process_time`): the suite shares the cores, and a
busy moment must not read as slow code. A walk that may not end runs in a subprocess with a
wall-clock limit, so a hang fails the test instead of the suite."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import cli, fact, make_kb
from test_fleet_ansible import _ansible  # ansible-inventory --list, as ansible-core reads it

from factbook.errors import InputError, UsageError
from factbook.knowledge.fleet import ansible as fleet_ansible
from factbook.knowledge.fleet.load import read_source
from factbook.knowledge.fleet.patterns import match
from factbook.knowledge.kbfiles import confined
from factbook.verification.transports import sshconfig


def _same_as_ansible(path: Path, tmp_path: Path) -> None:
    """factbook's hosts, groups (hosts and children) and merged host vars are Ansible's."""
    theirs = _ansible(path, tmp_path)
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
        if name != "_meta":
            assert ours.groups[name].targets == group.get("hosts", []), name
            assert set(ours.groups[name].children) == set(group.get("children", [])), name


def _looping_folders(base: Path) -> dict[str, Path]:
    """Inventory folders with links back up: `a -> .`; `sub/up -> ..`; `a -> .` and
    `b -> .` (2**40 paths to Ansible); a group_vars/ folder linking to itself twice."""
    one = base / "one"
    one.mkdir()
    (one / "hosts").write_text("[g]\nh1\n")
    (one / "a").symlink_to(".")
    up = base / "up"
    (up / "sub").mkdir(parents=True)
    (up / "sub" / "hosts").write_text("[g]\nh2 v=sub\n")
    (up / "sub" / "up").symlink_to("..")
    (up / "top").write_text("[k]\nh3\n[g:vars]\nw=top\n")
    two = base / "two"
    two.mkdir()
    (two / "hosts").write_text("[g]\nh1\n")
    (two / "a").symlink_to(".")
    (two / "b").symlink_to(".")
    vars_loop = base / "vars_loop"
    (vars_loop / "group_vars" / "g").mkdir(parents=True)
    (vars_loop / "hosts").write_text("[g]\nh1\n")
    (vars_loop / "group_vars" / "g" / "main.yml").write_text("x: 1\n")
    (vars_loop / "group_vars" / "g" / "a").symlink_to(".")
    (vars_loop / "group_vars" / "g" / "b").symlink_to(".")
    return {"one": one, "up": up, "two": two, "vars_loop": vars_loop}


def test_a_folder_linking_back_up_reads_as_ansible_reads_it(tmp_path: Path) -> None:
    folders = _looping_folders(tmp_path)
    # Ansible walks `a/a/a/...` until the path no longer opens (a warning), the same hosts
    _same_as_ansible(folders["one"], tmp_path)
    _same_as_ansible(folders["up"], tmp_path)


def test_links_back_up_are_walked_once_not_2_to_the_40_times(tmp_path: Path) -> None:
    """Two links back up (in the inventory folder, in a group_vars/NAME folder) made the walk
    exponential: it never ended (a 20 s limit here; ansible-inventory hangs too)."""
    folders = _looping_folders(tmp_path)
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from factbook.knowledge.fleet.load import read_source\n"
        "out = {}\n"
        "for path in sys.argv[1:]:\n"
        "    done = read_source(Path(path)).finish()\n"
        "    out[Path(path).name] = {n: t.vars for n, t in done.items()}\n"
        "print(json.dumps(out))\n"
    )
    paths = [str(folders["two"]), str(folders["vars_loop"])]
    done = subprocess.run(
        [sys.executable, "-c", script, *paths], capture_output=True, text=True, timeout=20
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == {"two": {"h1": {}}, "vars_loop": {"h1": {"x": 1}}}


def test_a_folder_leading_out_of_the_knowledge_base_is_never_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_kb(tmp_path / "kb", [fact("sw.driver", "env.var", args={"name": "X"})])
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "hosts").write_text("[g]\nsecret-host\n")
    inv = root / "inv"
    inv.mkdir()
    (inv / "hosts").write_text("[g]\nh1\n")
    (inv / "out").symlink_to(outside)
    listed: list[str] = []
    real_listdir, real_scandir = os.listdir, os.scandir

    def listdir(path: Any = ".") -> list[str]:
        listed.append(os.path.realpath(path))
        return real_listdir(path)

    def scandir(path: Any = ".") -> Any:
        listed.append(os.path.realpath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "listdir", listdir)
    monkeypatch.setattr(os, "scandir", scandir)
    with confined(root), pytest.raises(InputError) as caught:
        read_source(inv)
    monkeypatch.undo()
    message = str(caught.value)
    assert message.startswith(f"{inv / 'out'}: resolves to {outside.resolve()}, outside")
    assert not [p for p in listed if p.startswith(str(outside.resolve()))]
    (root / "targets.yaml").write_text("inventory: inv\ntargets: {}\n")
    code, out, err = cli(root, "lint")
    assert code == 2 and "Traceback" not in out + err and "secret-host" not in out + err
    line = next(x for x in (out + err).splitlines() if "outside the knowledge base" in x)
    assert "targets.yaml:1" in line and f"{inv / 'out'}:" in line


def test_an_inventory_folder_of_too_many_files_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fleet_ansible, "MAX_INVENTORY_FILES", 5)
    inv = tmp_path / "inv"
    inv.mkdir()
    for i in range(6):
        (inv / f"part{i}").write_text(f"[g]\nh{i}\n")
    with pytest.raises(InputError, match=f"^{inv}: more than 5 files; not read$"):
        read_source(inv)
    (inv / "part5").unlink()
    assert len(read_source(inv).targets) == 5


def _chain(length: int, *, reverse: bool) -> str:
    """g0 -> g1 -> ... -> g{length-1}, each with its own vars, one host at the bottom;
    `reverse`: the deepest group declared first (the order that recursed deepest)."""
    last = length - 1
    sections = [f"[g{i}:children]\ng{i + 1}\n[g{i}:vars]\nv={i}\nw{i}={i}\n" for i in range(last)]
    bottom = f"[g{last}]\nh1\n[g{last}:vars]\nv={last}\n"
    return bottom + "".join(reversed(sections)) if reverse else "".join(sections) + bottom


def test_a_chain_300_groups_deep_reads_as_ansible_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "chain.ini"
    path.write_text(_chain(300, reverse=True))
    _same_as_ansible(path, tmp_path)
    assert read_source(path).finish()["h1"].vars["v"] == 299  # the deepest group wins


def test_a_chain_1500_groups_deep_is_no_traceback(tmp_path: Path) -> None:
    """A RecursionError traceback before (depths() recursed once per level)."""
    root = make_kb(tmp_path / "kb", [fact("sw.driver", "env.var", args={"name": "X"})])
    path = tmp_path / "chain.ini"
    path.write_text(_chain(1500, reverse=True))
    code, out, err = cli(root, "verify", "--inventory", str(path), "--target", "h1", "--dry-run")
    assert code == 0 and "Traceback" not in out + err, err[-2000:]
    done = read_source(path).finish()["h1"]
    assert done.vars["v"] == 1499 and len(done.groups) == 1500


def test_thousands_of_groups_resolve_in_linear_time(tmp_path: Path) -> None:
    """A chain of 8,000 groups: every check, the merge and a `g*` pattern took ~20 CPU
    seconds (each group's descendants walked again for each group); 100,000 hosts in 100
    child groups of one group."""
    chain = tmp_path / "chain.ini"
    chain.write_text(_chain(8000, reverse=False))
    wide = tmp_path / "wide.ini"
    children = "".join(f"c{i}\n" for i in range(100))
    groups = "".join(f"[c{i}]\nh{i}-[1:1000]\n[c{i}:vars]\nc={i}\n" for i in range(100))
    wide.write_text(f"[p:children]\n{children}[p:vars]\nc=p\np=1\n{groups}")
    for path, pattern, selected in ((chain, "g*", 1), (wide, "c*,p", 100_000)):
        inventory = read_source(path)
        began = time.process_time()
        assert inventory.problems() == []
        done = inventory.finish()
        assert len(match(inventory, pattern)) == selected
        spent = time.process_time() - began
        assert spent < 5, f"{path.name}: {spent:.1f} CPU seconds"
    assert done["h7-1000"].vars == {"c": 7, "p": 1} and done["h7-1000"].groups == ("p", "c7")


def test_a_ring_of_children_is_one_line_not_a_hang(tmp_path: Path) -> None:
    """Ansible refuses it ('creates a recursive dependency loop'); factbook names the group,
    in one line, exit 2; a ring of 5,000 took seconds per check before."""
    root = make_kb(tmp_path / "kb", [fact("sw.driver", "env.var", args={"name": "X"})])
    ring = tmp_path / "ring.ini"
    size = 5000
    ring.write_text(
        "[g0]\nh1\n" + "".join(f"[g{i}:children]\ng{(i + 1) % size}\n" for i in range(size))
    )
    inventory = read_source(ring)
    began = time.process_time()
    found = inventory.problems()
    inventory.finish()
    assert time.process_time() - began < 5
    assert len(found) == size and found[0] == (
        "g0",
        "group 'g0': it contains itself through its children",
    )
    code, out, err = cli(root, "verify", "--inventory", str(ring), "--target", "h1", "--dry-run")
    assert code == 2 and "Traceback" not in out + err
    assert err.strip().splitlines() == [
        f"factbook: error: --inventory {ring}: group 'g0': it contains itself through its children"
    ]


def test_an_ssh_config_of_5000_aliases_reads_in_linear_time(tmp_path: Path) -> None:
    """Each alias walked the whole file: 5,000 aliases took ~20 CPU seconds."""
    path = tmp_path / "config"
    blocks = "".join(
        f"Host h{i}\n  HostName 10.0.{i // 250}.{i % 250}\n  User u{i % 7}\n" for i in range(5000)
    )
    tail = "Host h1*\n  ProxyJump bastion\nHost *\n  Port 2222\n"
    path.write_text(f"Host bastion\n  HostName 192.0.2.1\n{blocks}{tail}")
    began = time.process_time()
    targets = read_source(path).targets
    spent = time.process_time() - began
    assert len(targets) == 5001 and spent < 5, f"{spent:.1f} CPU seconds"
    h12 = targets["h12"]
    assert (h12.host, h12.port, h12.user, h12.jump) == ("10.0.0.12", 2222, "u5", ("bastion",))


_PATTERNS = ("a", "b", "c", "A", "10.0.0.1", "!a", "!b", "a*", "?", "*", "!c*", '""')
_SETTINGS = (
    "HostName 10.0.0.1",
    "HostName %h.example",
    "HostName c",
    "User u1",
    "User u2",
    "Port 2201",
    "Port 2202",
    "IdentityFile ~/.ssh/k1",
    "IdentityFile ~/.ssh/k2",
    "ProxyJump b",
    "ProxyCommand nc %h %p",
    "ConnectTimeout 7",
    "Tag t1",
)
_MATCHES = (
    "Match host 10.0.0.1",
    "Match originalhost a,b",
    "Match final host c",
    "Match canonical all",
    "Match user u1",
    "Match tagged t1",
    "Match all",
    "Match !host a*",
)


def _random_config(rng: random.Random, folder: Path, depth: int = 0) -> str:
    """A config of literal and wildcard Host blocks, Match blocks and an Include."""
    lines = [rng.choice(_SETTINGS)] if rng.random() < 0.3 else []
    for _ in range(rng.randint(1, 9)):
        roll = rng.random()
        if roll < 0.6:
            lines.append("Host " + " ".join(rng.sample(_PATTERNS, rng.randint(1, 3))))
        elif roll < 0.8:
            lines.append(rng.choice(_MATCHES))
        elif depth < 2:
            included = folder / f"inc{depth}-{rng.randrange(1 << 30)}"
            included.write_text(_random_config(rng, folder, depth + 1))
            lines.append(f"Include {included}")
        lines += rng.sample(_SETTINGS, rng.randint(0, 3))
    return "\n".join(lines) + "\n"


def _lookups(path: Path) -> dict[str, Any]:
    config = sshconfig.SSHConfigFile(path, ssh_dir=str(path.parent))
    out: dict[str, Any] = {}
    for host in ("a", "b", "c", "A", "d", "10.0.0.1"):
        try:
            out[host] = config.lookup(host).settings()
        except UsageError as exc:
            out[host] = str(exc)
    return out


def test_ssh_config_lookups_are_the_same_with_and_without_the_literal_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index of literal Host blocks changes no outcome: 300 random configs (literal,
    negated and wildcard patterns, Match host/originalhost/final/tagged, Includes inside
    blocks) give the same settings, or the same refusal, for every host as the plain
    line-by-line walk."""
    rng = random.Random(20261206)
    for i in range(300):
        folder = tmp_path / str(i)
        folder.mkdir()
        path = folder / "config"
        path.write_text(_random_config(rng, folder))
        fast = _lookups(path)
        with monkeypatch.context() as patched:
            patched.setattr(sshconfig, "_literal_runs", lambda lines: {})
            assert _lookups(path) == fast, path.read_text()
