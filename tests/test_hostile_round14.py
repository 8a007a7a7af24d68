# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile input, round 14 (issue 25, "Hardening III"): other people's files (OpenSSH client
configs, Ansible inventories, other teams' benchmark results) read exactly as their own
tools read them and never as a way in, in the table form of tests/test_hostile_kb.py and
checked by its `run_case` (no traceback, no file outside touched, no payload run, no secret
shown). Each group says what it found, or that it held (a guard).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_kb import BENCH_FACT, BENCH_IMPORT, Case, Link, bench_line, run_case

INV = "inventory: FILE\ntargets:\n  here: {transport: local}\n"
SSHC = {"targets.yaml": INV.replace("FILE", "ssh_config")}
INI = {"targets.yaml": INV.replace("FILE", "inv.ini")}
INV_YML = {"targets.yaml": INV.replace("FILE", "inv.yml")}
DRY = ["verify", "--dry-run", "--target", "all"]
BENCH = {"facts/bench.yaml": BENCH_FACT}


N1_FACT = "facts:\n  - id: sw.n1\n    category: software\n    title: T\n    statement: S.\n    status: assumed\n    target: n1\n    sources: [{seed: a.txt}]\n    check: {probe: env.var, args: {name: HOME}, expect: {exists: true}}\n"
ON_N1 = ["verify", "sw.n1", "--timeout", "2"]


def ssh_config(text: str) -> dict[str, str | bytes | Link]:
    """The knowledge base's targets read from an ssh config holding `text`, and a fact
    checked on its host n1."""
    return {**SSHC, "ssh_config": text, "facts/n1.yaml": N1_FACT}


def ini(text: str) -> dict[str, str | bytes | Link]:
    return {**INI, "inv.ini": text}


# fmt: off
CASES: list[Case] = [
    # --- 5. an Include naming one file ten times, sixteen deep: 10**16 reads (`ssh -G` itself runs until killed); 40,000 Include lines of one file ---
    Case("ssh config: Include fan-out 10 wide, 16 deep", {**SSHC, "ssh_config": "Include {kb}/i1 {kb}/i1 {kb}/i1 {kb}/i1 {kb}/i1 {kb}/i1 {kb}/i1 {kb}/i1 {kb}/i1 {kb}/i1\nHost n1\n  HostName n1.invalid\n", **{f"i{k}": (f"Include {{kb}}/i{k + 1} " * 10 + "\n") for k in range(1, 16)}, "i16": "Host n2\n  User ops\n"}, "lint", 2, "Include: more than 16384 files read for one host", isolated=True, max_s=30),
    Case("ssh config: 40,000 Include lines of one file", ssh_config("Include {kb}/more\n" * 40_000 + "Host n1\n  HostName n1.invalid\n") | {"more": "Host n2\n  User ops\n"}, "lint", 2, "Include: more than 16384 files read", isolated=True, max_s=30),
    # --- 6. ConnectTimeout read by float(): `²` a ValueError traceback, 400 digits or 1e400 an infinite timeout; ssh says "invalid time value" ---
    Case("ssh config: ConnectTimeout of a superscript digit", ssh_config("Host n1\n  HostName n1.invalid\n  ConnectTimeout \u00b2\n"), "lint", 2, "ssh_config:3: invalid time value '\u00b2' for connecttimeout"),
    Case("ssh config: ConnectTimeout of 400 digits", ssh_config("Host n1\n  HostName n1.invalid\n  ConnectTimeout " + "9" * 400 + "\n"), "lint", 2, "invalid time value"),
    Case("ssh config: ServerAliveInterval nan in another block", ssh_config("Host n9\n  ServerAliveInterval nan\nHost n1\n  HostName n1.invalid\n"), "lint", 2, "ssh_config:2: invalid time value 'nan' for serveraliveinterval"),
    # --- a keyword ssh does not know refuses the file (ssh -G: "Bad configuration option"); factbook ignored it: a misspelt ProxyJump connected straight to the box ---
    Case("ssh config: ProxyJmup (misspelt) refuses the host as ssh does", ssh_config("Host n1\n  HostName n1.invalid\n  ProxyJmup gw.invalid\n"), ON_N1, 3, "ssh_config:3: Bad configuration option: 'proxyjmup'"),
    Case("ssh config: an unknown keyword named by IgnoreUnknown is skipped", ssh_config("IgnoreUnknown frob*\nHost n1\n  HostName 127.0.0.1\n  Port 1\n  Frobnicate yes\n"), ON_N1, 3, "unreachable", max_s=30),
    # --- a host name with a comma: ssh.c valid_hostname refuses it ("hostname contains invalid characters"), factbook took it ---
    Case("ssh config: HostName with a comma", ssh_config("Host n1\n  HostName a,n1.invalid\n"), ON_N1, 3, "hostname 'a,n1.invalid' contains invalid characters"),
    # --- held (guards): reads outside the knowledge base, ProxyJump chains, hostile aliases, inventories ---
    Case("ssh config: Include linked outside", ssh_config("Include {kb}/inc\nHost n1\n  HostName n1.invalid\n") | {"inc": Link("{out}/ssh_config")}, "lint", 2, "resolves to {out}/ssh_config, outside the knowledge base"),
    Case("ssh config: a ProxyJump chain 3,000 long", ssh_config("".join(f"Host n{i}\n  HostName n{i}.invalid\n  ProxyJump n{i + 1}\n" for i in range(1, 3001)) + "Host n3001\n  HostName last.invalid\n"), ON_N1, 3, "jump chain longer than 16", isolated=True, max_s=60),
    Case("ssh config: an alias with ESC and RLO", ssh_config("Host n1\x1b[31m\u202e\n  HostName n1.invalid\n"), "lint", 2, "bad inventory name 'n1\\x1b[31m\\u202e'", absent=("\x1b", "\u202e")),
    Case("ini: group_vars file linked outside", ini("[g]\nn1\n") | {"group_vars/g.yml": Link("{out}/shadow")}, "lint", 2, "resolves to {out}/shadow, outside the knowledge base"),
    Case("ini: ansible_ssh_common_args -F outside", ini("[g]\nn1 ansible_ssh_common_args='-F {out}/ssh_config'\n"), "lint", 2, "{out}/ssh_config"),
    Case("ini: ansible_user of a raw ESC", ini("[g]\nn1 ansible_user=a\x1b[2Jb\n"), "lint", 2, "user 'a\\x1b[2Jb' is not a host or user name", absent=("\x1b",)),
    Case("ini: children loop a -> b -> a", ini("[a:children]\nb\n[b:children]\na\n[a]\nn1\n"), "lint", 2, "group 'a': it contains itself through its children"),
    Case("ini: all as a child", ini("[g:children]\nall\n[k]\nn1\n"), "lint", 2, "it contains itself through its children"),
    Case("yaml: a group its own child", {**INV_YML, "inv.yml": "all:\n  children:\n    a:\n      hosts: {n1: }\n      children:\n        a: {}\n"}, "lint", 2, "group 'a': it contains itself through its children"),
    Case("ini: 200 groups, each a child of every later one", ini("".join(f"[g{i}:children]\n" + "".join(f"g{j}\n" for j in range(i + 1, 200)) for i in range(200)) + "[g199]\nn1\n"), DRY, 0, "checks on", isolated=True, max_s=20),
    Case("--target glob of 20 stars", {"targets.yaml": "targets:\n  here: {transport: local}\n  " + "a" * 40 + ": {transport: local}\n"}, ["verify", "--dry-run", "--target", "*a" * 20 + "*b"], 2, "", max_s=10),
    Case("--target all[0:10**20]", {}, ["verify", "--dry-run", "--target", "all[0:" + "9" * 20 + "]"], 2, "unknown target"),
    Case("--target all[-10**20]", {}, ["verify", "--dry-run", "--target", "all[-" + "9" * 20 + "]"], 2, ""),
    Case("bench import: output_throughput 1e999", BENCH | {"run.jsonl": bench_line().replace("123.4", "1e999")}, BENCH_IMPORT, 2, ""),
    Case("bench import: output_throughput NaN", BENCH | {"run.jsonl": bench_line().replace("123.4", "NaN")}, BENCH_IMPORT, 2, ""),
    Case("bench import: a file outside is named, not shown", BENCH, ["bench", "import", "{out}/shadow", "--record", "bench.x"], 2, "{out}/shadow"),
    Case("--inventory a folder outside", {}, ["verify", "--dry-run", "--inventory", "{out}"], 2, "{out}"),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round14(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)
