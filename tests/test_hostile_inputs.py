# ruff: noqa: E501  (the corpus tables keep one case per line, so a new class is one line)
"""Malformed and hostile input: every command ends with `file:line: message`, never a traceback.

The corpus is a table: one row per input class (files to plant over a small valid knowledge
base, the message fragment lint must print with its file:line). Every row runs through the
real CLI for every command that reads those files; lint must exit 2 with the fragment, the
other commands may carry on with a warning (exit 0) or refuse (exit 2), but never raise.
Resource bombs run in a child process under RLIMIT_AS and a wall-clock limit.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers import PEAK_RSS_CLI

from factbook.commands.cli import run

MILESTONES = """\
milestones:
  - {id: "3157", title: first}
  - {id: "4504", title: second}
"""
# "billion laughs" in an Ansible inventory's vars: ten lists of ten aliases, nine deep
LAUGHS = "all:\n  vars:\n    a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"    {chr(97 + n)}: &{chr(97 + n)} [{', '.join([f'*{chr(96 + n)}'] * 10)}]\n"
    for n in range(1, 10)
)
TARGETS = """\
targets:
  box: {host: box.invalid, user: root}
  here: {transport: local}
"""
GOOD = """\
facts:
  - id: hw.gpu.count
    category: hardware
    title: GPU count
    statement: The box has 8 GPUs.
    value: 8
    status: verified
    target: here
    sources: [{seed: a.txt, message: 3157}]
    check:
      probe: env.var
      args: {name: HOME}
      expect: {exists: true}
"""
RUNBOOK = """\
---
jupytext:
  text_representation: {format_name: myst}
factbook: {target: here}
---
# A runbook

```{code-cell} python
:name: hello
print("hi")
```
"""


def fact(body: str, fid: str = "x.one", category: str = "hardware") -> str:
    """A fact file with one fact whose extra keys are `body` (YAML lines)."""
    head = (
        f"facts:\n  - id: {fid}\n    category: {category}\n    title: T\n    statement: S.\n"
        f"    status: assumed\n    sources: [{{seed: a.txt}}]\n"
    )
    return head + textwrap.indent(textwrap.dedent(body), "    ")


@dataclass(frozen=True)
class Link:
    """A symbolic link to plant (relative to its folder, or absolute)."""

    to: str


FIFO = Link("")  # a named pipe: opening it for reading would block forever


@dataclass(frozen=True)
class Case:
    """One input class: files planted over the base knowledge base, and what lint says."""

    name: str
    files: dict[str, str | bytes | Link]
    fragment: str  # must appear in lint's output, starting with file:line
    commands: tuple[str, ...] = ("list", "show", "status", "verify", "docs")
    lint_code: int = 2
    extra: dict[str, str] = field(default_factory=dict)


F = "facts/bad.yaml"
BIG_INT = "9" * 5000
# fmt: off
CASES = [
    # --- types in facts (issue 11's examples first) ---
    Case("tags int", {F: fact("tags: 5\n")}, "facts/bad.yaml:8: fact 'x.one': tags: expected list"),
    Case("tags items", {F: fact("tags: [1, {a: b}]\n")}, "facts/bad.yaml:8: fact 'x.one': tags[0]"),
    Case("check args list", {F: fact("check: {probe: env.var, args: [1, 2]}\n")}, "facts/bad.yaml:8: fact 'x.one': check.args: expected mapping"),
    Case("links list", {F: fact("links: [x]\n")}, "facts/bad.yaml:8: fact 'x.one': links: expected mapping"),
    Case("links ids int", {F: fact("links: {see_also: [1]}\n")}, "facts/bad.yaml:8: fact 'x.one': links.see_also[0]"),
    Case("links relation null", {F: fact("links: {see_also: }\n")}, "facts/bad.yaml:8: fact 'x.one': links.see_also: expected list"),
    Case("check string", {F: fact("check: env.var\n")}, "facts/bad.yaml:8: fact 'x.one': check: expected mapping"),
    Case("check no probe", {F: fact("check: {args: {name: X}}\n")}, "facts/bad.yaml:8: fact 'x.one': check: missing required key 'probe'"),
    Case("check probe int", {F: fact("check: {probe: 5}\n")}, "facts/bad.yaml:8: fact 'x.one': check.probe: expected string"),
    Case("check expect list", {F: fact("check: {probe: env.var, args: {name: X}, expect: [1]}\n")}, "facts/bad.yaml:8: fact 'x.one': check.expect: expected mapping"),
    Case("check timeout nan", {F: fact("check: {probe: env.var, args: {name: X}, timeout: .nan}\n")}, "facts/bad.yaml:8: fact 'x.one': check.timeout: expected number, got nan"),
    Case("check timeout inf", {F: fact("check: {probe: env.var, args: {name: X}, timeout: .inf}\n")}, "facts/bad.yaml:8: fact 'x.one': check.timeout: expected number, got inf"),
    Case("check timeout negative", {F: fact("check: {probe: env.var, args: {name: X}, timeout: -1}\n")}, "facts/bad.yaml:8: fact 'x.one': check.timeout: must be > 0"),
    Case("check target list", {F: fact("check: {probe: env.var, args: {name: X}, target: [box]}\n")}, "facts/bad.yaml:8: fact 'x.one': check.target: expected string"),
    Case("target list", {F: fact("target: [box]\n")}, "facts/bad.yaml:8: fact 'x.one': target: expected string or null"),
    Case("target unknown", {F: fact("target: nowhere\n")}, "facts/bad.yaml:8: fact 'x.one': unknown target 'nowhere'"),
    Case("history int", {F: fact("history: 5\n")}, "facts/bad.yaml:8: fact 'x.one': history: expected list"),
    Case("history item str", {F: fact("history: [x]\n")}, "facts/bad.yaml:8: fact 'x.one': history[0]: expected mapping"),
    Case("history unknown milestone", {F: fact("history: [{at: nope, status: verified}]\n")}, "facts/bad.yaml:8: fact 'x.one': unknown milestone 'nope'"),
    Case("since unknown", {F: fact("since: '9999'\n")}, "facts/bad.yaml:8: fact 'x.one': unknown milestone '9999'"),
    Case("since date", {F: fact("since: 2024-01-01\n")}, "facts/bad.yaml:8: fact 'x.one': since: expected string or integer or null, got date"),
    Case("since list", {F: fact("since: [3157]\n")}, "facts/bad.yaml:8: fact 'x.one': since: expected string"),
    Case("sources empty", {F: fact("").replace("sources: [{seed: a.txt}]", "sources: []")}, "facts/bad.yaml:7: fact 'x.one': sources: needs at least 1 item"),
    Case("sources str", {F: fact("").replace("sources: [{seed: a.txt}]", "sources: a.txt")}, "facts/bad.yaml:7: fact 'x.one': sources: expected list"),
    Case("source message str", {F: fact("").replace("{seed: a.txt}", "{seed: a.txt, message: abc}")}, "facts/bad.yaml:7: fact 'x.one': sources[0].message: expected integer"),
    Case("source date unquoted", {F: fact("").replace("{seed: a.txt}", "{run: r1, date: 2024-01-01}")}, "facts/bad.yaml:7: fact 'x.one': sources[0].date: expected string, got date"),
    Case("5000-digit integer", {F: fact(f"value: {BIG_INT}\n")}, "facts/bad.yaml:8: invalid value: Exceeds the limit"),
    Case("value date", {F: fact("value: 2024-01-01\n")}, "facts/bad.yaml:8: fact 'x.one': value: unsupported value of type date"),
    Case("value binary", {F: fact("value: !!binary aGVsbG8=\n")}, "facts/bad.yaml:8: fact 'x.one': value: unsupported value of type bytes"),
    Case("value nan", {F: fact("value: .nan\n")}, "facts/bad.yaml:8: fact 'x.one': value: unsupported value of type nan"),
    Case("value timestamp", {F: fact("value: 2024-01-01T10:00:00Z\n")}, "facts/bad.yaml:8: fact 'x.one': value: unsupported value of type datetime"),
    Case("value python tag", {F: fact("value: !!python/object:os.system x\n")}, "facts/bad.yaml:8: invalid value: could not determine a constructor"),
    Case("config int key", {F: fact("metric: m\nconfig: {1: a}\n", category="benchmarks")}, "facts/bad.yaml:9: fact 'x.one': config: unsupported value of type int (as a key"),
    Case("id boolean no", {F: fact("").replace("id: x.one", "id: no")}, "facts/bad.yaml:2: id: expected string, got boolean"),
    Case("id int", {F: fact("").replace("id: x.one", "id: 5")}, "facts/bad.yaml:2: id: expected string, got integer"),
    Case("id pattern", {F: fact("", fid="'../../etc'")}, "facts/bad.yaml:2: fact '../../etc': id: '../../etc' does not match"),
    Case("status on", {F: fact("").replace("status: assumed", "status: on")}, "facts/bad.yaml:6: fact 'x.one': status: expected string, got boolean"),
    Case("title null", {F: fact("").replace("title: T", "title:")}, "facts/bad.yaml:4: fact 'x.one': title: expected string, got null"),
    Case("category int", {F: fact("").replace("category: hardware", "category: 7")}, "facts/bad.yaml:3: fact 'x.one': category: expected string, got integer"),
    Case("pitfall symptom int", {F: fact("symptom: 5\ncause: c\nfix: f\n", category="pitfalls")}, "facts/bad.yaml:8: fact 'x.one': symptom: expected string"),
    Case("priority zero", {F: fact("state: todo\npriority: 0\n", category="progress")}, "facts/bad.yaml:9: fact 'x.one': priority: must be >= 1"),
    Case("unicode id", {F: fact("", fid="x.ünï")}, "facts/bad.yaml:2: fact 'x.ünï': id:"),
    Case("huge string", {F: fact("note: '" + "A" * 200_000 + "'\n")}, "facts/bad.yaml:8: fact 'x.one': unknown key 'note'"),
    Case("duplicate key", {F: fact("value: 1\nvalue: 2\n")}, "facts/bad.yaml:9: duplicate key 'value'"),
    Case("duplicate id", {F: fact("", fid="hw.gpu.count")}, "facts/good.yaml:2: duplicate id 'hw.gpu.count' (first defined at facts/bad.yaml:2)"),
    Case("complex key", {F: fact("? [a, b]\n: 1\n")}, "facts/bad.yaml:8: mapping keys must be scalars"),
    # --- file-level shapes ---
    Case("top list", {F: "- a\n- b\n"}, "facts/bad.yaml:1: top level: expected mapping, got list"),
    Case("top scalar", {F: "hello\n"}, "facts/bad.yaml:1: top level: expected mapping, got string"),
    Case("facts mapping", {F: "facts: {a: 1}\n"}, "facts/bad.yaml:1: facts: expected list"),
    Case("facts item str", {F: "facts: [x]\n"}, "facts/bad.yaml:1: expected mapping, got string"),
    Case("empty file", {F: ""}, "facts/bad.yaml:1: empty fact file"),
    Case("comment only", {F: "# nothing\n"}, "facts/bad.yaml:1: empty fact file"),
    Case("two documents", {F: "facts: []\n---\nfacts: []\n"}, "facts/bad.yaml:2: more than one YAML document"),
    Case("yml suffix", {"facts/other.yml": GOOD.replace("hw.gpu.count", "hw.other")}, "facts/other.yml:1: not read: fact files must end in '.yaml'"),
    Case("upper YAML suffix", {"facts/other.YAML": "facts: []\n"}, "facts/other.YAML:1: not read"),
    Case("symlink loop", {"facts/loop.yaml": Link("loop.yaml")}, "facts/loop.yaml:1: cannot read file: Too many levels of symbolic links"),
    Case("dangling symlink", {"facts/gone.yaml": Link("nowhere.yaml")}, "facts/gone.yaml:1: cannot read file: No such file or directory"),
    Case("symlink to /dev/zero", {"facts/zero.yaml": Link("/dev/zero")}, "facts/zero.yaml:1: resolves to /dev/zero, outside the knowledge base"),
    Case("fifo", {"facts/pipe.yaml": FIFO}, "facts/pipe.yaml:1: not a regular file"),
    Case("targets fifo", {"targets.yaml": FIFO}, "targets.yaml:1: not a regular file"),
    Case("milestones symlink loop", {"milestones.yaml": Link("milestones.yaml")}, "milestones.yaml:1: cannot read file: Too many levels"),
    Case("folder named yaml", {"facts/dir.yaml/x": "x"}, "facts/dir.yaml:1: is a folder"),
    # --- bytes and characters ---
    Case("NUL byte", {F: fact("value: 1\n").encode() + b"    unit: a\x00b\n"}, "facts/bad.yaml:9: forbidden character U+0000 (NUL)"),
    Case("ESC byte", {F: fact("unit: \"a\x1b[31mb\"\n")}, "facts/bad.yaml:8: forbidden character U+001B (ESC)"),
    Case("latin-1 byte", {F: fact("value: 1\n").encode() + b"    unit: caf\xe9\n"}, "facts/bad.yaml:9: not UTF-8 (byte 0xe9)"),
    Case("utf-16 file", {F: GOOD.replace("hw.gpu.count", "x.one").encode("utf-16")}, "facts/bad.yaml:1: not UTF-8"),
    Case("BOM and CRLF accepted, then a type error", {F: b"\xef\xbb\xbf" + fact("tags: 5\n").replace("\n", "\r\n").encode()}, "facts/bad.yaml:8: fact 'x.one': tags: expected list"),
    Case("tab indentation", {F: fact("value: 1\n").replace("    value", "\tvalue")}, "facts/bad.yaml:8: YAML syntax error"),
    Case("unclosed quote", {F: fact("unit: 'abc\n")}, "facts/bad.yaml:"),
    # --- resource bounds (also run under RLIMIT_AS below) ---
    Case("alias", {F: fact("value: &v 1\nunit: *v\n")}, "facts/bad.yaml:9: YAML alias '*v' is not allowed"),
    Case("recursive alias", {F: "r: &r [*r]\n"}, "facts/bad.yaml:1: YAML alias '*r' is not allowed"),
    Case("merge key", {F: "base: &b {a: 1}\nfacts: [{<<: *b}]\n"}, "facts/bad.yaml:2: YAML alias '*b'"),
    Case("deep nesting 500", {F: "facts: " + "[" * 500 + "]" * 500 + "\n"}, "facts/bad.yaml:1: nested deeper than 40 levels"),
    Case("deep block nesting", {F: "".join("  " * i + f"k{i}:\n" for i in range(60))}, "facts/bad.yaml:41: nested deeper than 40 levels"),
    Case("too many values", {F: "facts: [" + "0," * 200_001 + "]\n"}, "facts/bad.yaml:1: more than 200000 values"),
    Case("file too large", {F: "# " + "x" * (1 << 20) + "\n"}, "facts/bad.yaml:1: file larger than 1048576 bytes"),
    # --- targets.yaml ---
    Case("targets env list", {"targets.yaml": TARGETS + "  t2: {transport: local, env: [A, B]}\n"}, "targets.yaml:4: targets.t2.env: expected mapping"),
    Case("targets env nested", {"targets.yaml": TARGETS + "  t2: {transport: local, env: {A: [1]}}\n"}, "targets.yaml:4: targets.t2.env.A: expected string"),
    Case("targets jump int", {"targets.yaml": TARGETS + "  t2: {host: h, jump: 5}\n"}, "targets.yaml:4: targets.t2.jump: expected string or list"),
    Case("targets jump items", {"targets.yaml": TARGETS + "  t2: {host: h, jump: [box, 5]}\n"}, "targets.yaml:4: targets.t2.jump[1]: expected string"),
    Case("targets port str", {"targets.yaml": TARGETS + "  t2: {host: h, port: ssh}\n"}, "targets.yaml:4: targets.t2.port: expected integer"),
    Case("targets port range", {"targets.yaml": TARGETS + "  t2: {host: h, port: 70000}\n"}, "targets.yaml:4: targets.t2.port: must be <= 65535"),
    Case("targets entry null", {"targets.yaml": TARGETS + "  t2:\n"}, "targets.yaml:4: targets.t2: expected mapping, got null"),
    Case("targets as list", {"targets.yaml": "- box\n"}, "targets.yaml:1: top level: expected mapping, got list"),
    Case("targets targets list", {"targets.yaml": "targets: [box]\n"}, "targets.yaml:1: targets: expected mapping"),
    Case("targets timeout nan", {"targets.yaml": TARGETS + "  t2: {host: h, connect_timeout: .nan}\n"}, "targets.yaml:4: targets.t2.connect_timeout: expected number, got nan"),
    Case("targets alias bomb", {"targets.yaml": "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"}, "targets.yaml:2: YAML alias '*a'"),
    Case("targets not UTF-8", {"targets.yaml": b"targets:\n  box: {host: \xff}\n"}, "targets.yaml:2: not UTF-8"),
    Case("targets folder", {"targets.yaml/x": "x"}, "targets.yaml:1: is a folder"),
    # --- fleet: groups, vars and inventories named by targets.yaml ---
    Case("group children loop", {"targets.yaml": TARGETS + "groups:\n  a: {children: [b]}\n  b: {children: [a]}\n"}, "targets.yaml:"),
    Case("group unknown child", {"targets.yaml": TARGETS + "groups:\n  a: {children: [nope]}\n"}, "targets.yaml:"),
    Case("group bad name", {"targets.yaml": TARGETS + "groups:\n  '-S x': {targets: [box]}\n"}, "targets.yaml:5: group:"),
    Case("group vars list", {"targets.yaml": TARGETS + "groups:\n  a: {targets: [box], vars: [1]}\n"}, "targets.yaml:5: groups.a.vars: expected mapping"),
    Case("inventory missing", {"targets.yaml": "inventory: nope.ini\n" + TARGETS}, "targets.yaml:1: inventory nope.ini:"),
    Case("inventory fifo", {"targets.yaml": "inventory: inv.yml\n" + TARGETS, "inv.yml": FIFO}, "not a regular file"),
    Case("inventory alias bomb", {"targets.yaml": "inventory: inv.yml\n" + TARGETS, "inv.yml": LAUGHS}, "aliases expand to more than 2000000 values"),
    Case("inventory alias loop", {"targets.yaml": "inventory: inv.yml\n" + TARGETS, "inv.yml": "all:\n  vars:\n    a: &a [1, *a]\n"}, "a value contains itself through an alias"),
    Case("inventory deep json", {"targets.yaml": "inventory: inv.json\n" + TARGETS, "inv.json": "[" * 50_000 + "]" * 50_000}, "inv.json: not valid JSON"),
    Case("inventory bad host name", {"targets.yaml": "inventory: inv.ini\n" + TARGETS, "inv.ini": "[gpu]\n-oProxyCommand=x\n"}, "targets.yaml:1: inventory inv.ini:"),
    Case("inventory range bomb", {"targets.yaml": "inventory: inv.ini\n" + TARGETS, "inv.ini": "[gpu]\nn[1:99999999]\n"}, "expands to more than 100000 hosts"),
    Case("inventory nested range bomb", {"targets.yaml": "inventory: inv.ini\n" + TARGETS, "inv.ini": "[gpu]\nn[1:1000][1:1000]\n"}, "expands to more than 100000 hosts"),
    Case("inventory port word", {"targets.yaml": "inventory: inv.ini\n" + TARGETS, "inv.ini": "[gpu]\nn1 ansible_port=abc\n"}, "targets.yaml:1: target 'n1': port 'abc' is not a number"),
    Case("inventory user as option", {"targets.yaml": "inventory: inv.ini\n" + TARGETS, "inv.ini": "[gpu]\nn1 ansible_user=-oProxyCommand=x\n"}, "targets.yaml:1: target 'n1': user '-oProxyCommand=x'"),
    Case("target host as option", {"targets.yaml": TARGETS + "  t2: {host: -oProxyCommand=x}\n"}, "targets.yaml:4: target 't2': host '-oProxyCommand=x'"),
    Case("transport unknown", {"targets.yaml": TARGETS + "  t2: {transport: telnet, host: h}\n"}, "targets.yaml:4: targets.t2.transport: 'telnet' is not one of"),
    Case("exec argv missing", {"targets.yaml": TARGETS + "  t2: {transport: exec}\n"}, "targets.yaml:4: target 't2': exec needs 'exec'"),
    Case("exec via unknown", {"targets.yaml": TARGETS + "  t2: {transport: exec, exec: [docker, exec, -i, c], via: nope}\n"}, "unknown via 'nope'"),
    Case("slurm nothing to run on", {"targets.yaml": TARGETS + "  t2: {transport: slurm}\n"}, "targets.yaml:4: target 't2': slurm needs 'nodes' or 'partition'"),
    # --- milestones.yaml ---
    Case("milestones as list", {"milestones.yaml": "- {id: '1', title: a}\n"}, "milestones.yaml:1: top level: expected mapping, got list"),
    Case("milestones mapping", {"milestones.yaml": "milestones: {a: 1}\n"}, "milestones.yaml:1: milestones: expected list"),
    Case("milestone item str", {"milestones.yaml": MILESTONES + "  - x\n"}, "milestones.yaml:4: milestones[2]: expected mapping"),
    Case("milestone id list", {"milestones.yaml": MILESTONES + "  - {id: [1], title: t}\n"}, "milestones.yaml:4: milestones[2].id: expected string or integer"),
    Case("milestone title missing", {"milestones.yaml": MILESTONES + "  - {id: '9'}\n"}, "milestones.yaml:4: milestones[2]: missing required key 'title'"),
    # --- checks/*.py (read with ast, never imported by lint) ---
    Case("checks not UTF-8", {"checks/bad.py": b"PROBES = {}\n# caf\xe9\n"}, "checks/bad.py:2: not UTF-8 (byte 0xe9)"),
    Case("checks NUL byte", {"checks/bad.py": b"PROBES = {}\x00\n"}, "checks/bad.py:1: "),
    Case("checks syntax", {"checks/bad.py": "def (:\n"}, "checks/bad.py:1: Python syntax error"),
    Case("checks deep nesting", {"checks/bad.py": "x = " + "(" * 5000 + ")" * 5000 + "\n"}, "checks/bad.py:1: "),
    Case("checks PROBES not dict", {"checks/bad.py": "PROBES = [1]\n"}, "checks/bad.py:1: PROBES must be a dict literal"),
    Case("checks folder named py", {"checks/bad.py/x": "x"}, "checks/bad.py:1: is a folder"),
    Case("milestones NUL", {"milestones.yaml": MILESTONES.encode() + b"  - {id: '9', title: \x00}\n"}, "milestones.yaml:4: forbidden character U+0000"),
]
# fmt: on


# --- runbook run records: `run --list` and the handbook skip a broken one ---
REC = "results/runbooks/rb/20260101T000000Z-here/record.json"
RECORD_CASES = {
    "record not UTF-8": b'{"run_id": "\xff"}',
    "record list": "[1, 2]",
    "record merge conflict": "<<<<<<< HEAD\n{}\n",
    "record run_id int": '{"run_id": 5, "runbook": "rb", "status": "ok", "steps": []}',
    "record steps str": '{"run_id": "x", "runbook": "rb", "status": "ok", "steps": "none"}',
    "record deep": "[" * 100_000,
}


@pytest.mark.parametrize("content", list(RECORD_CASES.values()), ids=list(RECORD_CASES))
def test_broken_run_record_is_skipped(
    content: str | bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_kb(tmp_path / "kb", {RB: RUNBOOK, REC: content})
    for argv in (["run", "--list"], ["docs", "--no-copy", "--out", "_site_md"]):
        code = run(["--root", str(root), *argv])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        assert "Traceback" not in captured.err
        if argv[0] == "run":
            assert "never run" in captured.out  # the broken record is not a run


# --- redact.yaml: read by `status --redact` ---
# fmt: off
REDACT_CASES = [
    ("secrets: &s [a, b, c, d, e, f, g, h, i]\nhosts: [*s, *s, *s, *s, *s, *s, *s, *s, *s]\n", "redact.yaml:2: YAML alias '*s'"),
    ("- a\n", "redact.yaml:1: expected a mapping with secrets, patterns, hosts, users lists"),
    ("secrets: a\n", "redact.yaml:1: 'secrets' must be a list of strings"),
    ("secrets: [{a: 1}]\n", "redact.yaml:1: secrets[0] must be a string"),
    ("passwords: [x]\n", "redact.yaml:1: unknown key 'passwords'"),
    (b"secrets: [\xff]\n", "redact.yaml:1: not UTF-8"),
]
# fmt: on


@pytest.mark.parametrize(
    ("text", "fragment"), REDACT_CASES, ids=[f"redact{i}" for i in range(len(REDACT_CASES))]
)
def test_malformed_redact_config(
    text: str | bytes, fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_kb(tmp_path / "kb", {"redact.yaml": text})
    code = run(["--root", str(root), "status", "--redact", "--out", "-"])
    output = capsys.readouterr().err
    assert code == 2, output
    assert fragment in output


# fmt: off
TARGET_URLS = [
    ("ssh://[x", "bad target URL 'ssh://[x': Invalid IPv6 URL"),
    ("ssh://u@h?jump=ssh://[", "Invalid IPv6 URL"),
    ("ssh://h:abc", "port 'abc' is not a number from 1 to 65535"),
    ("ssh://h:99999", "port '99999' is not a number from 1 to 65535"),
    ("ssh://", "no host"),
    ("ftp://h", "unsupported target URL scheme 'ftp'"),
    ("ssh://h?jump=u@j:abc", "bad jump host"),
    ("nowhere", "unknown target 'nowhere'"),
]
# fmt: on


@pytest.mark.parametrize(("url", "fragment"), TARGET_URLS, ids=[u for u, _ in TARGET_URLS])
def test_bad_target_url_is_a_usage_error(
    url: str, fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_kb(tmp_path / "kb", {})
    code = run(["--root", str(root), "verify", "--dry-run", "--target", url])
    output = capsys.readouterr().err
    assert code == 2, output
    assert fragment in output


def make_kb(root: Path, files: dict[str, str | bytes | Link]) -> Path:
    (root / "facts").mkdir(parents=True)
    base: dict[str, str | bytes | Link] = {
        "milestones.yaml": MILESTONES,
        "targets.yaml": TARGETS,
        "facts/good.yaml": GOOD,
    }
    for rel, content in {**base, **files}.items():
        path = root / rel
        for other in path.parents:  # a planted "x.yaml/child" replaces the base file x.yaml
            if other.is_file():
                other.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            continue
        if isinstance(content, Link):
            path.unlink(missing_ok=True)
            if content is FIFO:
                os.mkfifo(path)
            else:
                path.symlink_to(content.to)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


COMMANDS = {
    "lint": ["lint"],
    "list": ["list"],
    "show": ["show", "hw.gpu.count"],
    "status": ["status", "--out", "-"],
    "verify": ["verify", "--dry-run"],
    "docs": ["docs", "--no-copy", "--out", "_site_md"],
    "run": ["run", "runbooks/rb.md", "--dry-run"],
}


def cli(root: Path, command: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = run(["--root", str(root), *COMMANDS[command]])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def assert_clean(output: str) -> None:
    assert "Traceback" not in output


def test_corpus_is_large_enough() -> None:
    assert (
        len(CASES) + len(RUNBOOK_CASES) + len(RESULT_CASES) + len(REDACT_CASES) + len(RECORD_CASES)
        >= 60
    )
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_malformed_knowledge_base(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_kb(tmp_path / "kb", case.files)
    code, output = cli(root, "lint", capsys)
    assert code == case.lint_code, output
    assert case.fragment in output, output
    for line in output.splitlines()[:-1]:  # every problem line is `file:line: message`
        assert line.split(":")[1].isdigit(), line
    for command in case.commands:
        code, output = cli(root, command, capsys)
        assert code in (0, 2), (command, output)
        assert_clean(output)


# --- runbooks: lint and run --dry-run read them ---
RB = "runbooks/rb.md"
# fmt: off
RUNBOOK_CASES = [
    Case("runbook target list", {RB: RUNBOOK.replace("{target: here}", "{target: [box]}")}, "runbooks/rb.md:4: factbook.target must be a target name"),
    Case("runbook factbook str", {RB: RUNBOOK.replace("factbook: {target: here}", "factbook: here")}, "runbooks/rb.md:4: front matter 'factbook:' must be a mapping"),
    Case("runbook not UTF-8", {RB: RUNBOOK.encode() + b"\xff\xfe\n"}, "runbooks/rb.md:12: not UTF-8 (byte 0xff)"),
    Case("runbook unclosed fence", {RB: RUNBOOK.rsplit("```", 1)[0]}, "runbooks/rb.md:8: code cell fence ``` is never closed"),
    Case("runbook unclosed tilde fence", {RB: RUNBOOK.replace("```", "~~~~").rsplit("~~~~", 1)[0] + "~~~\n"}, "runbooks/rb.md:8: code cell fence ~~~~ is never closed"),
    Case("runbook cell option alias", {RB: RUNBOOK.replace(":name: hello", ":name: &n hello\n:records: *n")}, "runbooks/rb.md:10: YAML alias '*n'"),
    Case("runbook cell yaml block alias", {RB: RUNBOOK.replace(":name: hello", "---\nname: &n hello\nrecords: *n\n---")}, "runbooks/rb.md:11: YAML alias '*n'"),
    Case("runbook NUL in cell options", {RB: RUNBOOK.replace(":name: hello", ":name: he\x00llo")}, "runbooks/rb.md:9: forbidden character U+0000"),
    Case("runbook timeout nan", {RB: RUNBOOK.replace("{target: here}", "{target: here, step_timeout: .nan}")}, "runbooks/rb.md:1: factbook.step_timeout must be a positive number"),
    Case("runbook fifo", {RB: FIFO}, "runbooks/rb.md:1: not a regular file"),
    Case("runbook file too large", {RB: RUNBOOK + "x" * (1 << 20)}, "runbooks/rb.md:1: file larger than"),
    Case("runbook front matter alias", {RB: RUNBOOK.replace("factbook: {target: here}", "a: &a [1]\nfactbook: *a")}, "runbooks/rb.md:5: YAML alias"),
    Case("runbook front matter list", {RB: "---\n- a\n---\n# x\n"}, "runbooks/rb.md:1: cannot parse as a MyST notebook: ['a'] is not of type 'object'"),
    Case("runbook cell tags int", {RB: RUNBOOK.replace(":name: hello", ":name: hello\n:tags: 5")}, "runbooks/rb.md:1: cannot parse as a MyST notebook: 5 is not of type 'array'"),
]
# fmt: on


@pytest.mark.parametrize("case", RUNBOOK_CASES, ids=[c.name for c in RUNBOOK_CASES])
def test_malformed_runbook(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_kb(tmp_path / "kb", case.files)
    code, output = cli(root, "lint", capsys)
    assert code == 2, output
    assert case.fragment in output, output
    code, output = cli(root, "run", capsys)
    assert code == 2, output
    assert_clean(output)
    code, output = cli(root, "docs", capsys)  # the handbook shows the runbook as unparsable
    assert code == 0, output
    assert_clean(output)


# --- results: status, show and the handbook read them ---
LJ = "results/latest.json"
# fmt: off
RESULT_CASES = [
    Case("results not UTF-8", {LJ: b'{"hw.gpu.count": {"here": {"fact": "\xff"}}}'}, "results/latest.json:1: not UTF-8"),
    Case("results list", {LJ: "[1, 2]"}, "results/latest.json:1: expected a mapping {fact: {target: record}}"),
    Case("results record str", {LJ: '{"hw.gpu.count": {"here": "pass"}}'}, "results/latest.json:1: hw.gpu.count.here: expected a mapping (a record)"),
    Case("results outcome int", {LJ: '{"hw.gpu.count": {"here": {"fact": "hw.gpu.count", "target": "here", "outcome": 5, "reason": ""}}}'}, "results/latest.json:1: hw.gpu.count.here.outcome: expected str"),
    Case("results outcome unknown", {LJ: '{"hw.gpu.count": {"here": {"fact": "hw.gpu.count", "target": "here", "outcome": "<b>", "reason": ""}}}'}, "results/latest.json:1: hw.gpu.count.here.outcome: '<b>' is not one of pass"),
    Case("results missing reason", {LJ: '{\n "hw.gpu.count": {"here": {"fact": "hw.gpu.count", "target": "here", "outcome": "pass"}}}'}, "results/latest.json:2: hw.gpu.count.here: missing 'reason'"),
    Case("results huge number", {LJ: '{"hw.gpu.count": {"here": {"fact": "hw.gpu.count", "target": "here", "outcome": "pass", "reason": "", "observed": ' + "9" * 5000 + '}}}'}, "results/latest.json:1: not valid JSON: Exceeds the limit"),
    Case("results empty file", {LJ: ""}, "results/latest.json:1: not valid JSON"),
    Case("results merge conflict", {LJ: '<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> x\n'}, "results/latest.json:1: not valid JSON: Expecting value"),
    Case("results NaN", {LJ: '{"hw.gpu.count": {"here": {"fact": "hw.gpu.count", "target": "here", "outcome": "pass", "reason": "", "duration_s": NaN}}}'}, "results/latest.json:1: hw.gpu.count.here.duration_s: not a finite number"),
    Case("results deep", {LJ: "[" * 100_000 + "]" * 100_000}, "results/latest.json:1: not valid JSON: maximum recursion depth"),
    Case("results folder", {"results/latest.json/x": "x"}, "results/latest.json:1: is a folder"),
]
# fmt: on


@pytest.mark.parametrize("case", RESULT_CASES, ids=[c.name for c in RESULT_CASES])
def test_malformed_results(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_kb(tmp_path / "kb", case.files)
    for command in ("status", "show", "docs"):
        code, output = cli(root, command, capsys)
        assert code == 2, (command, output)
        assert case.fragment in output, (command, output)
        assert_clean(output)


# --- resource bombs: a child process under a memory and time limit ---
LIMIT_BYTES = 500 * 1024 * 1024
# The target is 10 s on an idle machine (each bomb is refused in < 1 s there); a shared CI box
# can be 10x slower, and a hang or an exponential blow-up still ends far beyond this.
LIMIT_S = 60
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)
BOMBS = {
    "alias bomb": {F: BOMB},
    "alias bomb in targets": {"targets.yaml": BOMB},
    "recursive alias": {F: "facts: &r [*r]\n"},
    "nesting 100k": {F: "facts: " + "[" * 100_000 + "]" * 100_000 + "\n"},
    "block nesting 1000": {F: "".join(" " * i + f"k{i}:\n" for i in range(1000))},
    "values 500k": {F: "facts: [" + "0," * 500_000 + "]\n"},
    "file 50 MB": {F: "# " + "x" * (50 << 20) + "\n"},
    "documents 100k": {F: "---\n" * 100_000},
    "results 8 MiB of empty objects": {
        LJ: '{"x": {"y": [' + "{}," * ((8 << 20) // 3 - 20) + "{}]}}"
    },
    "results 100 MB": {LJ: '{"x": "' + "a" * (100 << 20) + '"}'},
    "runbook 100 MB": {RB: RUNBOOK + "x" * (100 << 20)},
}


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


@pytest.mark.parametrize("files", list(BOMBS.values()), ids=list(BOMBS))
def test_resource_bombs_fail_fast_and_small(files: dict[str, str], tmp_path: Path) -> None:
    root = make_kb(tmp_path / "kb", files)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for command in ("lint", "list", "status", "verify", "docs"):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "factbook.commands.cli",
                "--root",
                str(root),
                *COMMANDS[command],
            ],
            capture_output=True,
            text=True,
            timeout=LIMIT_S,
            preexec_fn=_limit_memory,
            env=env,
        )
        output = proc.stdout + proc.stderr
        assert "Traceback" not in output and "MemoryError" not in output, (command, output[-2000:])
        assert proc.returncode in (0, 2), (command, output[-2000:])
        refusing = ("status", "docs") if LJ in files else ("lint",)
        if command in refusing:
            assert proc.returncode == 2, (command, output[-2000:])
            assert any(line.startswith(tuple(files)) for line in output.splitlines()), output


# --- a box that floods us: stderr and stdout are held bounded, measured in the real client ---
FLOOD_PROBE = """
import os

os.write(1, b"x" * (MB << 20))  # at import, into the result stream, without a newline
os.write(1, b"\\n")


def flood(mb):
    chunk = b"e" * (1 << 20)
    for _ in range(mb):
        os.write(2, chunk)
    return 1


PROBES = {"flood.stderr": flood}
"""
FLOOD_FACT = """\
facts:
  - id: x.flood
    category: hardware
    title: T
    statement: S.
    status: assumed
    target: here
    sources: [{seed: a.txt}]
    check: {probe: flood.stderr, args: {mb: MB}, expect: {eq: 1}, timeout: 120}
"""
MEASURE = PEAK_RSS_CLI


def _verify_peak_rss_mb(root: Path, mb: int) -> float:
    """Peak RSS of a real `factbook verify` whose probe writes `mb` MB to stdout and stderr."""
    make_kb(
        root,
        {
            "checks/flood.py": FLOOD_PROBE.replace("MB", str(mb)),
            "facts/flood.yaml": FLOOD_FACT.replace("MB", str(mb)),
        },
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = [sys.executable, "-c", MEASURE, "--root", str(root), "verify", "x.flood"]
    proc = subprocess.run(
        [*argv, "--format", "json"], capture_output=True, text=True, timeout=300, env=env
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
    assert '"pass"' in proc.stdout
    return int(proc.stderr.rsplit("maxrss_kb", 1)[1].split()[0]) / 1024


def test_flooding_probe_keeps_the_client_small(tmp_path: Path) -> None:
    """300 MB on stderr and a 300 MB line on stdout cost the client no more than 1 MB does."""
    baseline = _verify_peak_rss_mb(tmp_path / "small", 1)
    flooded = _verify_peak_rss_mb(tmp_path / "big", 300)
    print(f"client peak RSS: {baseline:.0f} MB with 1 MB of output, {flooded:.0f} MB with 300 MB")
    assert flooded < baseline + 40, (baseline, flooded)  # unbounded, this was ~1350 MB
