"""A structured type-mutation fuzzer over every file a knowledge base holds (issue 25, round 19).

    .venv/bin/python bench/fuzz_kb.py --seed 1 --cases 500
    .venv/bin/python bench/fuzz_kb.py --seed 1 --cases 2000 --commands lint,show --per-case 2
    .venv/bin/python bench/fuzz_kb.py --replay 1:137        # one case again, its output in full

Each case copies a base knowledge base (the repository's own facts/, checks/, targets.yaml,
milestones.yaml and results/latest.json, plus a factbook.yaml and a redact.yaml) into a temp
folder, picks one of its files and applies ONE mutation: at a random node of the parsed file
(a scalar made a list, a mapping, null, a bool, a 5000-hex-digit int, nan, inf, a 100 kB
string, control or bidi characters, a date, a YAML tag, an alias bomb, a path outside the
knowledge base; a mapping made a scalar or a list; a key deleted, duplicated or added; an id
made to collide; a value nested 50 deep; a list emptied), or to its raw text (truncated at a
random byte, a NUL or an invalid UTF-8 byte inserted, CRLF line ends, a BOM, tab indentation,
a line deleted or doubled). Then it runs the reading commands in-process on it, each under a
time limit, and reports a finding for: a traceback or an exception that escaped the CLI, an
exception class's name in the output, an exit code outside the documented set, a run over
the time limit, an output quoting the secret planted outside the knowledge base, or a marker
file a payload would create.

Round 20 added what round 19 did not mutate or run. The base also holds the status templates
(templates/status/status.md.j2 and templates/_macros.j2, factbook's own as overrides), a
mkdocs.yml with docs/index.md, and two pending proposals (proposals/PID.yaml, written by
review.submit); half the cases mutate one of these or a runbook. A template gets a Jinja
payload (TEMPLATE_PAYLOADS: syntax errors, undefined names, huge loops, recursion, includes
of paths outside or of itself, unknown filters, sandbox escapes, size bombs, deep output) at
a random line or as the whole file; mkdocs.yml a hostile top-level key (MKDOCS_PAYLOADS) or
round 19's mutations; a runbook a hostile cell (CELL_PAYLOADS); a proposal round 19's
mutations. Commands added: `proposals list`, `proposals show PID`, `proposals accept PID`
(on a copy of the case's knowledge base: a file changed beside the copy is a finding), a
real `mkdocs build` (the secret searched for in the site too), and `factbook serve` as a
child on a free loopback port (GET /metrics, /healthz, /, /metrics: no answer, a 5xx with a
traceback, a death or a traceback in its log is a finding). mcp, mkdocs and serve are
children of seconds: they run on the cases of their own files and a sample of the rest
(`--sample`). Any file changed in the outside folder is a finding. A status template's
render deadline is 2 s here (FACTBOOK_TEMPLATE_SECONDS), under the command's time limit.

A case is a pure function of (seed, index): `--replay SEED:INDEX` reruns it and prints every
output. Findings are grouped by class (the exception and the command, or what was wrong);
each class lists its first reproduction: the file, the node's path, the mutation, the command.
Exit 1 when there is any finding.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import datetime
import http.client
import io
import json
import math
import os
import random
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from factbook.commands.cli import run  # noqa: E402

SECRET = "s3cr3t-0f-the-0utside-r19"
SENTINEL = "FUZZSENTINEL"
DUP = "FUZZDUPKEY"
EXIT_CODES = {0, 1, 2, 3, 4, 130}
COMMANDS = (
    "lint",
    "list",
    "show",
    "status",
    "export-ansible",
    "completion",
    "verify",
    "docs",
    "mcp",
    "proposals-list",
    "proposals-show",
    "proposals-accept",
    "mkdocs",
    "serve",
)
ROUND19_COMMANDS = COMMANDS[:9]  # what round 19 ran (its CI rerun runs these)
# children of a few seconds each: run on the cases of the files they read, and on a sample
SAMPLED = {"mcp": 0.05, "mkdocs": 0.04, "serve": 0.03}
OWN_FILES = {
    "mcp": ("factbook.yaml",),
    "mkdocs": ("mkdocs.yml", "docs/"),
    "serve": ("factbook.yaml",),
}
# `mcp` owns the process's stdin and stdout: it runs as a child, fed these messages
MCP_MESSAGES = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "fuzz", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
     "params": {"name": "search_facts", "arguments": {"query": "gpu memory"}}},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
     "params": {"name": "show_fact", "arguments": {"id": "{id}"}}},
    {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
     "params": {"name": "status_brief", "arguments": {"budget": 2000}}},
    {"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": "factbook://status"}},
]  # fmt: skip
FACTBOOK_YAML = (
    "mcp:\n  write_facts: false\n  verify_timeout_s: 120\n  inventories: []\n"
    "  max_message_bytes: 4194304\n  redact: secrets\n"
)
REDACT_YAML = (
    "secrets: [hf_abc123, \"my token\"]\npatterns: ['corp-[0-9]{6}']\n"
    "hosts: [gpu-farm.internal]\nusers: [alice]\n"
)
# the names of Python's exceptions and of yaml's: one of them in an output is an exception
# that leaked into a message (`KeyError: 'id'`, `ScannerError`)
_EXC_NAMES = sorted(
    {
        n
        for n in dir(builtins)
        if isinstance(getattr(builtins, n), type)
        and issubclass(getattr(builtins, n), BaseException)
        and n not in ("Exception",)
    }
    | {
        "ScannerError",
        "ParserError",
        "ComposerError",
        "ConstructorError",
        "ReaderError",
        "YAMLError",
        "RepresenterError",
        "JSONDecodeError",
        "UnicodeDecodeError",
    }
)
_LEAK = re.compile(r"\b(" + "|".join(_EXC_NAMES) + r")\b(?!\w)")


def build_base(dest: Path) -> Path:
    """The base knowledge base every case starts from."""
    dest.mkdir(parents=True)
    for name in ("facts", "checks", "runbooks"):
        shutil.copytree(REPO / name, dest / name)
    for name in ("targets.yaml", "milestones.yaml"):
        shutil.copy(REPO / name, dest / name)
    (dest / "results").mkdir()
    shutil.copy(REPO / "results" / "latest.json", dest / "results" / "latest.json")
    (dest / "results" / "runs").mkdir()
    for run_file in sorted((REPO / "results" / "runs").glob("*.jsonl"))[-2:]:
        shutil.copy(run_file, dest / "results" / "runs" / run_file.name)
    (dest / "factbook.yaml").write_text(FACTBOOK_YAML)
    (dest / "redact.yaml").write_text(REDACT_YAML)
    # round 20: the status templates overridden (the package's own, copied), a mkdocs.yml
    # with a docs/ folder, and two pending proposals (a new fact, a change) as `factbook mcp`
    # writes them, under fixed ids
    shipped = REPO / "src" / "factbook" / "dumps" / "status" / "templates"
    (dest / "templates" / "status").mkdir(parents=True)
    shutil.copy(shipped / "status.md.j2", dest / "templates" / "status" / "status.md.j2")
    shutil.copy(shipped / "_macros.j2", dest / "templates" / "_macros.j2")
    (dest / "docs").mkdir()
    (dest / "docs" / "index.md").write_text("# Fuzz handbook\n\nSee [facts](facts/index.md).\n")
    (dest / "mkdocs.yml").write_text(MKDOCS_YML)
    make_proposals(dest)
    return dest


MKDOCS_YML = """\
site_name: Fuzz handbook
site_description: the fuzzer's knowledge base
docs_dir: docs
site_dir: site
strict: false
use_directory_urls: false
nav:
  - Home: index.md
  - Guides:
      - Index again: index.md
theme:
  name: material
  font: false
  features: [navigation.sections, search.suggest]
  palette:
    - {scheme: default, primary: indigo}
plugins:
  - search
  - factbook
markdown_extensions:
  - attr_list
  - tables
  - admonition
  - toc: {permalink: true}
  - pymdownx.superfences
validation:
  links: {anchors: warn}
"""
PIDS = ("20260101-000000-aaaaaa", "20260101-000000-bbbbbb")
ROUND20_FILES = ("templates/", "proposals/", "mkdocs.yml", "runbooks/", "docs/")


def make_proposals(dest: Path) -> None:
    """proposals/PID.yaml for a new fact and a change, made by review.submit (the path
    `factbook mcp`'s propose_fact and propose_change take), renamed to fixed ids."""
    import copy

    from factbook.dumps.capture.review import FactChange, NewFact, submit

    first = yaml.safe_load((dest / "facts" / "hardware.yaml").read_text())["facts"]
    new = copy.deepcopy(first[0])
    new["id"] = "hw.fuzz.proposed"
    items = [NewFact(new), FactChange(first[1]["id"], {"value": 9}, {"seed": "x.txt"})]
    for pid, item in zip(PIDS, items, strict=True):
        made = submit(dest, item, origin="mcp", reason="the fuzzer's proposal")
        assert made.proposal_file is not None
        record = yaml.safe_load(made.proposal_file.read_text())
        record.update(id=pid, created="2026-01-01T00:00:00Z")
        made.proposal_file.unlink()
        (dest / "proposals" / f"{pid}.yaml").write_text(
            yaml.safe_dump(record, sort_keys=False, allow_unicode=True, width=100)
        )


def make_outside(out: Path) -> None:
    out.mkdir(parents=True)
    (out / "shadow").write_text(f"root:{SECRET}:19000:0:99999:7:::\n")
    (out / "facts.yaml").write_text(f"facts: [{{id: {SECRET}}}]\n")
    (out / "latest.json").write_text('{"' + SECRET + '": 1}')
    # code mkdocs.yml may name (hooks, plugins, an INHERIT): run, it leaves the marker
    for name in ("hook.py", "plugin.py"):
        (out / name).write_text(f"open({str(out / 'MARKER')!r}, 'w').close()\n")
    (out / "mk.yml").write_text(f"site_name: {SECRET}\nhooks: [{out / 'hook.py'}]\n")


def kb_files(base: Path) -> list[str]:
    return sorted(
        str(p.relative_to(base)) for p in base.rglob("*") if p.is_file() and "cache" not in str(p)
    )


# ---------------------------------------------------------------- structured mutations
Path_ = tuple[Any, ...]


def nodes(tree: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    yield path, tree
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from nodes(value, (*path, key))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            yield from nodes(value, (*path, i))


def put(tree: Any, path: Path_, value: Any) -> Any:
    if not path:
        return value
    parent = tree
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return tree


def get(tree: Any, path: Path_) -> Any:
    for step in path:
        tree = tree[step]
    return tree


def ids_in(tree: Any) -> list[str]:
    return [v["id"] for _, v in nodes(tree) if isinstance(v, dict) and isinstance(v.get("id"), str)]


HUGE_HEX = "0x" + "f" * 5000
BOMB = (
    "[&a [x, x, x, x, x, x, x, x, x], &b [*a, *a, *a, *a, *a, *a, *a, *a, *a], "
    "&c [*b, *b, *b, *b, *b, *b, *b, *b, *b], &d [*c, *c, *c, *c, *c, *c, *c, *c, *c], "
    "&e [*d, *d, *d, *d, *d, *d, *d, *d, *d], &f [*e, *e, *e, *e, *e, *e, *e, *e, *e], "
    "&g [*f, *f, *f, *f, *f, *f, *f, *f, *f], &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]]"
)
TAGS = (
    "!!binary aGVsbG8gd29ybGQ=",
    "!!set {a: null, b: null}",
    "!!python/object/apply:os.system ['touch {out}/MARKER']",
    "!!python/name:os.system",
    "!!omap [a: 1, b: 2]",
    "!!timestamp 2026-01-01T00:00:00Z",
    "!!float 1e400",
    "!custom {x: 1}",
    "!!str",
)

# name -> (value for the node, or a raw text for the sentinel); `raw` marks text written as is
REPLACEMENTS: dict[str, Callable[[random.Random], Any]] = {
    "list": lambda r: ["a", 1],
    "mapping": lambda r: {"k": "v", "n": 1},
    "null": lambda r: None,
    "bool": lambda r: r.choice([True, False]),
    "huge-int": lambda r: ("raw", HUGE_HEX),
    "negative-int": lambda r: -(10 ** r.randint(1, 30)),
    "nan": lambda r: math.nan,
    "inf": lambda r: r.choice([math.inf, -math.inf]),
    "big-string": lambda r: "w" * 100_000,
    "control-chars": lambda r: "a\x1b[2J\x07\x00b\x08c",
    "bidi": lambda r: "a\u202eevil\u2066x\u2069\u200f",
    "date": lambda r: datetime.date(2026, 1, 1),
    "datetime": lambda r: datetime.datetime(2026, 1, 1, 12, 0, 0),
    "empty-string": lambda r: "",
    "empty-mapping": lambda r: {},
    "tag": lambda r: ("raw", r.choice(TAGS)),
    "alias-bomb": lambda r: ("raw", BOMB),
    "outside-path": lambda r: r.choice(["{out}/shadow", "../outside/shadow", "{out}/facts.yaml"]),
    "nest-50": lambda r: _nest(r, 50),
}


def _nest(r: random.Random, depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value] if r.random() < 0.5 else {"k": value}
    return value


@dataclass
class Mutation:
    file: str
    kind: str
    where: str
    text: bytes
    fact_id: str | None = None  # the id of the fact the node is in (for `show`)
    extra: dict[str, Any] = field(default_factory=dict)


def _dump(tree: Any, is_json: bool) -> str:
    if is_json:
        return json.dumps(tree, indent=1, default=str)
    return yaml.safe_dump(tree, sort_keys=False, allow_unicode=True, width=1 << 20)


def structured(r: random.Random, rel: str, text: str, all_ids: list[str], out: Path) -> Mutation:
    is_json = rel.endswith(".json")
    tree = json.loads(text) if is_json else yaml.safe_load(text)
    every = list(nodes(tree))
    kinds = [*REPLACEMENTS, "mapping-to-scalar", "mapping-to-list", "delete-key",
             "duplicate-key", "unknown-key", "id-collision", "empty-list", "key-type"]  # fmt: skip
    kind = r.choice(kinds)
    raw: str | None = None
    if kind in ("mapping-to-scalar", "mapping-to-list", "delete-key", "duplicate-key",
                "unknown-key", "key-type"):  # fmt: skip
        candidates = [(p, v) for p, v in every if isinstance(v, dict) and v]
    elif kind == "id-collision":
        candidates = [(p, v) for p, v in every if isinstance(v, dict) and "id" in v]
    elif kind == "empty-list":
        candidates = [(p, v) for p, v in every if isinstance(v, list) and v]
    else:
        candidates = [(p, v) for p, v in every if p]  # any node but the root
    if not candidates:
        candidates, kind = [(p, v) for p, v in every if p] or [((), tree)], "null"
    path, node = r.choice(candidates)
    fact_id = _enclosing_id(tree, path)
    where = "/".join(str(p) for p in path) or "(root)"
    if kind in REPLACEMENTS:
        value = REPLACEMENTS[kind](r)
        if isinstance(value, tuple) and value[0] == "raw":
            raw, value = value[1], SENTINEL
        elif isinstance(value, str):
            value = value.replace("{out}", str(out))
        tree = put(tree, path, value)
    elif kind == "mapping-to-scalar":
        tree = put(tree, path, r.choice(["text", 7, True]))
    elif kind == "mapping-to-list":
        tree = put(tree, path, list(node.values()))
    elif kind == "delete-key":
        key = r.choice(list(node))
        del node[key]
        where += f" -{key}"
    elif kind == "duplicate-key":
        key = r.choice(list(node))
        node[DUP] = r.choice([node[key], "other", 2])
        raw = str(key)
        where += f" ={key}"
    elif kind == "unknown-key":
        node["zz_unknown"] = "x"
    elif kind == "key-type":  # a key that is no string: a number, null, a bool, a list, a date
        key = r.choice(list(node))
        new = r.choice([1, 1.5, None, True, datetime.date(2026, 1, 1), ("raw", "[a, b]"),
                        ("raw", "{a: 1}"), ("raw", HUGE_HEX)])  # fmt: skip
        if isinstance(new, tuple):
            raw, new = new[1], SENTINEL
        if is_json:
            new = json.dumps(raw) if raw is not None else str(new)
            raw = None
        node2 = {(new if k == key else k): v for k, v in node.items()}
        tree = put(tree, path, node2)
        where += f" key {key}"
    elif kind == "id-collision":
        others = [i for i in all_ids if i != node["id"]] or ["x"]
        node["id"] = r.choice(others)
        where += f" id={node['id']}"
    elif kind == "empty-list":
        tree = put(tree, path, [])
    written = _dump(tree, is_json)
    if raw is not None:
        if kind == "duplicate-key":
            written = written.replace(
                f'"{DUP}"' if is_json else DUP, json.dumps(raw) if is_json else raw, 1
            )
        elif is_json:
            raw = raw if raw == HUGE_HEX else json.dumps(raw)
            digits = "9" * 6000  # JSON has no hex: past Python's 4300-digit str<->int limit
            written = written.replace(f'"{SENTINEL}"', digits if raw == HUGE_HEX else raw, 1)
        else:
            written = written.replace(SENTINEL, raw.replace("{out}", str(out)), 1)
    return Mutation(rel, kind, where, written.encode("utf-8", "surrogatepass"), fact_id)


def _enclosing_id(tree: Any, path: Path_) -> str | None:
    found = None
    for n in range(len(path) + 1):
        with contextlib.suppress(Exception):
            node = get(tree, path[:n])
            if isinstance(node, dict) and isinstance(node.get("id"), str):
                found = node["id"]
    return found


def rawtext(r: random.Random, rel: str, data: bytes) -> Mutation:
    kind = r.choice(["truncate", "nul", "invalid-utf8", "crlf", "bom", "tabs", "drop-line",
                     "double-line", "second-document", "lone-cr"])  # fmt: skip
    at = r.randrange(len(data) + 1) if data else 0
    where = f"byte {at}"
    if kind == "truncate":
        data = data[:at]
    elif kind == "nul":
        data = data[:at] + b"\0" + data[at:]
    elif kind == "invalid-utf8":
        data = data[:at] + r.choice([b"\xff", b"\xc3", b"\xed\xa0\x80"]) + data[at:]
    elif kind == "crlf":
        data, where = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"), "every line"
    elif kind == "bom":
        data, where = b"\xef\xbb\xbf" + data, "start"
    elif kind == "second-document":
        data, where = data + b"\n---\n" + data[:at], "end"
    elif kind == "lone-cr":
        data = data[:at] + b"\r" + data[at:]
    else:
        lines = data.split(b"\n")
        i = r.randrange(len(lines))
        where = f"line {i + 1}"
        if kind == "tabs":
            lines = [
                re.sub(rb"^(  )+", lambda m: b"\t" * (len(m.group()) // 2), ln) for ln in lines
            ]
            where = "every line"
        elif kind == "drop-line":
            del lines[i]
        else:
            lines.insert(i, lines[i])
        data = b"\n".join(lines)
    return Mutation(rel, kind, where, data)


# ---------------------------------------------------------------- round 20: templates
# Jinja payloads by class; `{out}` is the folder outside the knowledge base, `{self}` the
# mutated template's own name. Each is put at the start of a random line of the template
# (which may land inside a tag: a syntax error of its own), or replaces the whole file.
DEEP = 60
TEMPLATE_PAYLOADS: dict[str, tuple[str, ...]] = {
    "syntax-error": (
        "{% if %}",
        "{{ ",
        "{% for x in %}",
        "{% endfor %}",
        "{% endmacro %}",
        "{{ 1 + }}",
        "{% set = 1 %}",
        "{#",
        "{% raw %}",
        "{{ x | }}",
        "}}",
        "{% block a %}{% block a %}{% endblock %}{% endblock %}",
        "{% macro %}",
        "{% call %}",
        "{{ 'unterminated }}",
        "{% else %}",
        "{{ x.0x1 }}",
        "{% with %}",
        "{{ (((( }}",
        "{% for %}{% endfor %}{% endfor %}",
    ),
    "undefined": (
        "{{ nosuch }}",
        "{{ nosuch.attr }}",
        "{{ facts.nosuch.deeper }}",
        "{% for x in nosuch %}{% endfor %}",
        "{{ nosuch() }}",
        "{{ nosuch[0] }}",
        "{{ loop.index }}",
        "{{ caller() }}",
        "{{ varargs }}",
        "{{ none.x }}",
        "{{ undefined }}",
        "{{ ''.nosuch }}",
        "{{ 1.nosuch() }}",
    ),
    "huge-loop": (
        "{% for i in range(10**9) %}{% endfor %}",
        "{% for i in range(10**9) %}{{ i }}{% endfor %}",
        "{% for i in range(999999999) %}{% for j in range(999999999) %}{% endfor %}{% endfor %}",
        "{% for i in range(10**9)|reverse %}{% endfor %}",
        "{{ range(10**9)|list|length }}",
        "{{ range(10**9)|join(',') }}",
        "{{ range(10**9)|sum }}",
        "{{ range(10**9)|map('string')|join }}",
        "{{ range(10**9)|unique|list }}",
        "{{ range(10**8)|sort|first }}",
        "{{ range(10**9)|batch(3)|list|length }}",
        "{{ lipsum(10**6) }}",
        "{{ range(10**9)|selectattr('real')|list }}",
    ),
    "recursion": (
        "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
        "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
        "{% macro f() %}{{ g() }}{% endmacro %}{% macro g() %}{{ f() }}{% endmacro %}{{ f() }}",
        "{% for x in [[1]] recursive %}{{ loop([x]) }}{% endfor %}",
        "{% macro f() %}{% call f() %}x{% endcall %}{% endmacro %}{{ f() }}",
        "{% set ns = namespace(a=1) %}{% macro f() %}{{ f() ~ f() }}{% endmacro %}{{ f() }}",
    ),
    "include": (
        "{% include '../../outside/shadow' %}",
        "{% include '{out}/shadow' %}",
        "{% include '/etc/passwd' %}",
        "{% extends '../facts.yaml' %}",
        "{% import '{out}/shadow' as m %}",
        "{% include '{self}' %}",
        "{% extends '{self}' %}",
        "{% import '{self}' as m %}{{ m }}",
        "{% from '{self}' import line %}{{ line(1) }}",
        "{% include '_macros.j2' %}",
        "{% include 'status.md.j2' %}",
        "{% include ['nope', '../../outside/shadow'] %}",
        "{% include 'nope' ignore missing %}",
        "{% include '..' %}",
        "{% include 'status/../../../outside/shadow' %}",
        "{% include '' %}",
        "{% include none %}",
        "{% include 7 %}",
        "{% extends ['a', 'b'] %}",
        "{% include '\\x00' %}",
        "{% include 'facts/hardware.yaml' %}",
        "{% include '../facts/hardware.yaml' %}",
        "{% import 'x' * 10**6 as m %}",
    ),
    "unknown-filter": (
        "{{ 1|nosuch }}",
        "{% filter nosuch %}x{% endfilter %}",
        "{{ 1 is nosuchtest }}",
        "{{ [1]|map('nosuch')|list }}",
        "{{ [1]|select('nosuch')|list }}",
        "{{ 'x'|attr('upper')() }}",
        "{{ 1|hint }}",
        "{{ none|cell }}",
        "{{ 1|kv }}",
        "{{ {}|md(1, 2) }}",
        "{{ [1]|sort(attribute='x.y.z') }}",
        "{{ [1]|groupby('x') }}",
        "{{ 'x'|format(1, 2, 3) }}",
        "{{ 'x'|int(base=99) }}",
        "{{ 1|round('nope') }}",
        "{{ 'x'|truncate(-5) }}",
        "{{ 'x'|wordwrap(0) }}",
        "{{ [1]|slice(0)|list }}",
        "{{ 1 // 0 }}",
        "{{ 'x'.encode('nope') }}",
        "{{ 'a'|tojson(indent='x') }}",
        "{{ 'x'|urlize(trim_url_limit=-1) }}",
        "{{ {1: 2}|dictsort(by='x') }}",
    ),
    "escape": (
        "{{ ''.__class__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ cycler.__init__.__globals__.os.system('touch {out}/MARKER') }}",
        "{{ self._TemplateReference__context }}",
        "{{ lipsum.__globals__ }}",
        "{{ range.__self__ }}",
        "{{ config }}",
        "{{ self }}",
        "{{ self.__dict__ }}",
        "{{ ''|attr('__class__') }}",
        "{{ (1).__class__.__base__.__subclasses__() }}",
        "{{ namespace.__init__.__globals__ }}",
        "{{ [].__class__.__base__ }}",
        "{% set x = namespace() %}{% set x.__class__ = 1 %}",
        "{{ joiner.__init__.__globals__ }}",
        "{{ '{0.__class__}'.format(1) }}",
        "{{ md.__globals__ }}",
        "{{ cell.__code__ }}",
        "{{ kv.__module__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__()[100].__init__.__globals__ }}",
        "{{ [].append(1) }}",
        "{{ {}.update(a=1) }}",
        "{{ {}.setdefault('a') }}",
        "{{ (1).__format__ }}",
        "{{ dict.__subclasses__() }}",
        "{{ ''.format_map.__self__ }}",
        "{{ 'x'.translate.__self__.__class__ }}",
    ),
    "mult-bomb": (
        "{{ 'a' * 10**10 }}",
        "{{ 'a' * 10**6 * 10**6 }}",
        "{{ ['a'] * 10**9 }}",
        "{{ 9**9**9 }}",
        "{{ 'ab' * 999999999 }}",
        "{{ 10**10 * 'a' }}",
        "{{ ('a' * 1000000)|center(1000000000) }}",
        "{{ '%999999999s' % 1 }}",
        "{% set s = 'a' * 1000000 %}{% for i in range(40) %}{% set s = s ~ s %}"
        "{% endfor %}{{ s|length }}",
        "{% set s = ['a'] * 1000000 %}{% for i in range(40) %}{% set s = s + s %}"
        "{% endfor %}{{ s|length }}",
        "{% set ns = namespace(s='a' * 1000000) %}{% for i in range(40) %}"
        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
        "{{ ('a' * 1000000)|wordwrap(1) }}",
        "{{ ('a' * 1000000)|list|join(' ' * 100) }}",
        "{{ ('a' * 1000000).split('') }}",
        "{{ ('a\n' * 1000000)|indent(1000) }}",
        "{{ ('a' * 1000000)|replace('a', 'a' * 1000) }}",
        "{{ (1, 2) * 10**9 }}",
        "{{ 'x'|format_map }}",
        "{{ 2**256**2 }}",
        "{{ (10**256)|string * 10**4 }}",
        "{{ ('a' * 1000000)|urlencode|urlencode }}",
        "{{ ('<' * 1000000)|escape|escape }}",
        "{{ ('a' * 1000000)|tojson|tojson }}",
    ),
    "deep-output": (
        "{{ " + "[" * DEEP * 2 + "1" + "]" * DEEP * 2 + " }}",
        "{{ " + "(" * 200 + "1" + ")" * 200 + " }}",
        "{{ 1" + "|string" * 5000 + " }}",
        "{{ " + "-" * 10000 + "1 }}",
        "{{ " + "not " * 5000 + "1 }}",
        "{{ 1" + " + 1" * 20000 + " }}",
        "{% for i in [1] %}" * DEEP + "x" + "{% endfor %}" * DEEP,
        "{% if 1 %}" * 200 + "x" + "{% endif %}" * 200,
        "{% filter upper %}" * DEEP + "x" + "{% endfilter %}" * DEEP,
        "{% set x = [] %}" + "{% set x = [x] %}" * 2000 + "{{ x }}",
        "{% set x = {} %}" + "{% set x = {'k': x} %}" * 2000 + "{{ x|tojson }}",
        "{% set x = [] %}" + "{% set x = [x] %}" * 2000 + "{{ x|kv }}",
    ),
}


def template_mutation(r: random.Random, rel: str, text: str, out: Path) -> Mutation:
    kind = r.choice(list(TEMPLATE_PAYLOADS))
    payload = r.choice(TEMPLATE_PAYLOADS[kind])
    payload = payload.replace("{out}", str(out)).replace("{self}", Path(rel).name)
    lines = text.split("\n")
    if r.random() < 0.2:
        where, lines = "whole file", [payload]
    else:
        i = r.randrange(len(lines) + 1)
        where = f"line {i + 1}"
        lines.insert(i, payload)
    return Mutation(rel, f"jinja {kind}", f"{where}: {payload[:80]}", "\n".join(lines).encode())


# ---------------------------------------------------------------- round 20: mkdocs.yml
MKDOCS_PAYLOADS: tuple[str, ...] = (
    "hooks: ['{out}/hook.py']",
    "hooks: [hooks/x.py]",
    "hooks: '../outside/hook.py'",
    "plugins: [search, factbook, macros]",
    "plugins: [{factbook: {root: '{out}'}}]",
    "plugins: [{factbook: {root: ../outside}}]",
    "plugins: [{search: {lang: !!python/name:os.system}}]",
    "plugins: [{'{out}/plugin.py': {}}]",
    "plugins: factbook",
    "plugins: {factbook: 1}",
    "plugins: [[factbook]]",
    "plugins: [{factbook: {root: [a]}}]",
    "plugins: [null]",
    "nav: &n [{Home: index.md}, {Loop: *n}]",
    "nav: [{a: [{b: [{c: [{d: index.md}]}]}]}]",
    "nav: " + "[" * 45 + "index.md" + "]" * 45,
    "nav: [" + ", ".join(["index.md"] * 20000) + "]",
    "nav: [{Home: '{out}/shadow'}]",
    "nav: [{Home: ../outside/shadow}]",
    "nav: [{Home: /etc/passwd}]",
    "nav: 7",
    "nav: {a: b}",
    "nav: [[[]]]",
    "nav: [{null: index.md}]",
    "nav: [{[a]: index.md}]",
    "docs_dir: '{out}'",
    "docs_dir: ../outside",
    "docs_dir: /etc",
    "site_dir: '{out}'",
    "docs_dir: [docs]",
    "docs_dir: null",
    "site_dir: 7",
    "docs_dir: .",
    "INHERIT: '{out}/mk.yml'",
    "INHERIT: mkdocs.yml",
    "INHERIT: [a]",
    "site_name: !ENV HOME",
    "site_name: !ENV [FUZZSECRET, x]",
    "site_name: !!python/name:os.system",
    "site_name: !!python/object/apply:os.system ['touch {out}/MARKER']",
    "site_name: !!python/module:os",
    "site_name: [a, b]",
    "site_name: {a: 1}",
    "site_name: null",
    "site_name: " + "w" * 100000,
    'site_name: "a\\x1b[2J\\u202eb"',
    "site_name: 0x" + "f" * 5000,
    "theme: {name: material, custom_dir: '{out}'}",
    "theme: {name: material, custom_dir: overrides}",
    "theme: {name: material, static_templates: [x.html]}",
    "theme: 7",
    "theme: {name: nosuch}",
    "theme: {name: [material]}",
    "extra_templates: [x.html]",
    "extra_css: ['{out}/shadow']",
    "extra_javascript: [../outside/shadow]",
    "extra: {a: !ENV HOME}",
    "watch: ['{out}']",
    "markdown_extensions: [os]",
    "markdown_extensions: [{os: {a: 1}}]",
    "markdown_extensions: [{pymdownx.superfences: {custom_fences: [{name: x, class: x, "
    "format: !!python/name:os.system}]}}]",
    "markdown_extensions: [{toc: {slugify: !!python/name:os.getcwd}}]",
    "markdown_extensions: [{toc: {permalink: [1]}}]",
    "markdown_extensions: 7",
    "markdown_extensions: [[toc]]",
    "exclude_docs: 7",
    "validation: 7",
    "validation: {links: {anchors: nosuch}}",
    "strict: maybe",
    "use_directory_urls: [1]",
    "dev_addr: 0.0.0.0:1",
    "copyright: !!binary aGVsbG8=",
    "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]",
)


def mkdocs_mutation(r: random.Random, rel: str, text: str, out: Path) -> Mutation:
    """One top-level key of mkdocs.yml replaced by (or added as) a hostile one."""
    payload = r.choice(MKDOCS_PAYLOADS).replace("{out}", str(out))
    key = payload.split(":", 1)[0]
    kept, skipping = [], False
    for line in text.split("\n"):
        if line and not line[0].isspace() and not line.startswith("#"):
            skipping = line.split(":", 1)[0] == key
        if not skipping:
            kept.append(line)
    return Mutation(
        rel, "mkdocs key", payload[:100], ("\n".join(kept) + "\n" + payload + "\n").encode()
    )


# ---------------------------------------------------------------- round 20: runbook cells
CELL_PAYLOADS: tuple[str, ...] = (
    "```{code-cell} ipython3\nimport os; os.system('touch {out}/MARKER')\n```",
    "```{code-cell} ipython3\n---\ntags: !!python/name:os.system\n---\nprint(1)\n```",
    "```{code-cell} ipython3\n---\ntags: [a, b\n---\nprint(1)\n```",
    "```{code-cell} ipython3\n---\n" + "[" * 60 + "]" * 60 + "\n---\nx\n```",
    "```{code-cell} ipython3\n---\nfactbook: {timeout: 0x" + "f" * 5000 + "}\n---\nx\n```",
    "```{code-cell} ipython3\n---\n" + BOMB + "\n---\nx\n```",
    "```{code-cell} ipython3\n---\ntags: {a: 1}\nfactbook: [1]\n---\nx\n```",
    "```{code-cell} ipython3\n---\nfactbook: {step: 7, timeout: -1, target: '{out}'}\n---\n```",
    "```{code-cell} ipython3\n" + "x = 1\n" * 100000 + "```",
    "```{code-cell}\n```",
    "```{code-cell} ipython3",
    "````{code-cell} ipython3\n```\n````",
    "```{code-cell} ipython3\n---\n---\n---\nx\n```",
    "```{code-cell} " + "w" * 100000 + "\nx\n```",
    "```{code-cell} ipython3\n%%bash\ncat {out}/shadow\n```",
    "```{code-cell} ipython3\n:tags: [a]\n: x\nprint(1)\n```",
    ("```{code-cell} ipython3\nx\n```\n" * 5000).rstrip("\n"),
    "{include} {out}/shadow",
    "```{include} {out}/shadow\n```",
    "```{literalinclude} ../../outside/shadow\n```",
)


def cell_mutation(r: random.Random, rel: str, text: str, out: Path) -> Mutation:
    """A hostile cell put before a random fence of a runbook, or one fence's metadata mutated."""
    payload = r.choice(CELL_PAYLOADS).replace("{out}", str(out))
    fences = [m.start() for m in re.finditer(r"^```", text, re.MULTILINE)]
    at = r.choice(fences) if fences else len(text)
    where = f"line {text.count(chr(10), 0, at) + 1}"
    return Mutation(rel, "runbook cell", f"{where}: {payload[:80]!r}",
                    (text[:at] + payload + "\n\n" + text[at:]).encode())  # fmt: skip


def mutate(
    seed: int, index: int, base: Path, files: list[str], all_ids: list[str], out: Path
) -> Mutation:
    r = random.Random(f"{seed}:{index}")
    # half the cases mutate what round 20 added (templates, proposals, mkdocs.yml, runbooks)
    newer = [f for f in files if f.startswith(ROUND20_FILES)]
    rel = r.choice(newer if newer and r.random() < 0.5 else files)
    data = (base / rel).read_bytes()
    if r.random() < 0.8:
        text = data.decode("utf-8")
        if rel.endswith(".j2"):
            return template_mutation(r, rel, text, out)
        if rel == "mkdocs.yml" and r.random() < 0.6:
            return mkdocs_mutation(r, rel, text, out)
        if rel.startswith("runbooks/") and r.random() < 0.4:
            return cell_mutation(r, rel, text, out)
        if rel.endswith((".yaml", ".yml", ".json")):
            return structured(r, rel, text, all_ids, out)
        if rel.endswith(".jsonl"):  # one record of a run file
            lines = text.splitlines(keepends=True)
            i = r.randrange(len(lines))
            m = structured(r, rel, lines[i], all_ids, out)
            m.text = (
                "".join(lines[:i]).encode()
                + m.text.replace(b"\n", b" ")
                + b"\n"
                + "".join(lines[i + 1 :]).encode()
            )
            m.where = f"line {i + 1} {m.where}"
            return m
        if rel.endswith(".md") and text.startswith("---\n"):  # a runbook's front matter
            head, _, body = text[4:].partition("\n---\n")
            m = structured(r, rel, head, all_ids, out)
            m.text = b"---\n" + m.text + b"---\n" + body.encode()
            m.where = f"front matter {m.where}"
            return m
    return rawtext(r, rel, data)


# ---------------------------------------------------------------- running
def argv_for(
    command: str, kb: Path, r: random.Random, fact_id: str | None, ids: list[str],
    pid: str | None = None,
) -> list[str]:  # fmt: skip
    some = fact_id or r.choice(ids)
    if command == "show":
        return ["show", some]
    if command == "status":
        return r.choice([["status", "--out", "-"], ["status", "--budget", "3000", "--out", "-"],
                         ["status", "--redact", "--out", "-"]])  # fmt: skip
    if command == "export-ansible":
        return ["export-ansible", "--out", "-"]
    if command == "completion":
        option = r.choice(["--target", "--tag", "--category"])
        return ["__complete", "5", "factbook", "--root", str(kb), "list", option, ""]
    if command == "verify":
        return ["verify", "--dry-run"]
    if command == "docs":
        return ["docs", "--out", str(kb / "_site")]
    if command == "mcp":
        return ["mcp", some]  # the id is for show_fact; run_mcp takes it off
    if command.startswith("proposals-"):
        action = command.split("-", 1)[1]
        return ["proposals", action] + ([] if action == "list" else [pid or r.choice(PIDS)])
    if command == "mkdocs":
        return ["mkdocs", "build"]
    if command == "serve":
        return ["serve", "--interval", "1"]
    return [command]


CODES: Counter[str] = Counter()  # "command exit" -> runs, for the report


class _Alarm(BaseException):
    pass


def run_one(kb: Path, argv: list[str], limit_s: float) -> tuple[int | str, str, float]:
    """(exit code or the escaped exception's name, output, seconds)."""

    def ring(signum: int, frame: object) -> None:
        raise _Alarm

    out = io.StringIO()
    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    began = time.monotonic()
    code: int | str
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                code = run(["--root", str(kb), *argv])
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
    except _Alarm:
        code = "timeout"
    except BaseException as exc:
        code = type(exc).__name__
        out.write("\nTraceback (escaped the CLI)\n" + "".join(traceback.format_exception(exc)[-4:]))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return code, out.getvalue(), time.monotonic() - began


_LOCATED = re.compile(r"[\w./-]+\.(yaml|yml|json|jsonl|md|py|j2)(:\d+)?[:,; ]")
_TEMPLATE_ERROR = re.compile(r"(status template: (?:refused by the sandbox: )?)\w+: ")
_USAGE = re.compile(r"unknown fact|no fact|not a knowledge base")


def _marks(output: str) -> Counter[str]:
    """The tracebacks and exception names an output holds."""
    # a status template's own Python error is named by its class on purpose (round 13:
    # `templates/x.j2:4: status template: ZeroDivisionError: ...`): the template's, not ours
    output = _TEMPLATE_ERROR.sub(r"\1", output)
    found = Counter(m.group(1) for m in _LEAK.finditer(output))
    found["Traceback"] = output.count("Traceback (most recent call last)")
    return found


def run_mcp(kb: Path, fact_id: str, limit_s: float) -> tuple[int | str, str, float]:
    """`factbook mcp` in a child fed MCP_MESSAGES; its stderr and the answers' error texts."""
    lines = "".join(json.dumps(m).replace("{id}", fact_id) + "\n" for m in MCP_MESSAGES)
    began = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "factbook", "--root", str(kb), "mcp"],
            input=lines, capture_output=True, text=True, timeout=limit_s * 3,
            env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return "timeout", "", time.monotonic() - began
    took = time.monotonic() - began
    output = proc.stderr
    for line in proc.stdout.splitlines():
        with contextlib.suppress(ValueError):
            answer = json.loads(line)
            output += "\n" + json.dumps(answer.get("error") or answer.get("result"))[:20000]
    code: int | str = proc.returncode if proc.returncode >= 0 else f"signal {-proc.returncode}"
    return code, output, took / 3


CHILD_ENV = {"PYTHONPATH": str(REPO / "src"), "NO_MKDOCS_2_WARNING": "1"}


def tree_state(top: Path, skip: Path | None = None) -> dict[str, tuple[int, int]]:
    """Every file under `top` (but `skip`) -> (size, mtime_ns): what a command wrote there."""
    state = {}
    for p in top.rglob("*"):
        if skip is not None and (p == skip or skip in p.parents):
            continue
        with contextlib.suppress(OSError):
            st = p.lstat()
            state[str(p.relative_to(top))] = (st.st_size, st.st_mtime_ns)
    return state


def run_accept(kb: Path, argv: list[str], limit_s: float) -> tuple[int | str, str, float]:
    """`proposals accept` on a copy of the case's knowledge base (the other commands read
    it unchanged); anything it writes outside that copy is a finding ("!wrote outside")."""
    work = kb.parent
    copy = work / "accept-kb"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(kb, copy, symlinks=True)
    before = tree_state(work, skip=copy)
    code, output, took = run_one(copy, argv, limit_s)
    after = tree_state(work, skip=copy)
    if before != after:
        changed = sorted(set(before.items()) ^ set(after.items()))[:3]
        return "!wrote outside", output + f"\nchanged outside the copy: {changed}", took
    shutil.rmtree(copy, ignore_errors=True)
    return code, output, took


def run_mkdocs(kb: Path, limit_s: float) -> tuple[int | str, str, float]:
    """A real `mkdocs build` of the knowledge base (its mkdocs.yml, the factbook plugin) in a
    child; its exit code is MkDocs' own (1 for a refused configuration), so only what no
    build may do is judged: a traceback, a hang, the secret in its output or in the site."""
    site = kb.parent / "mk-site"
    began = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(kb / "mkdocs.yml"),
             "-d", str(site)],
            capture_output=True, text=True, timeout=limit_s * 4, cwd=kb,
            env={**os.environ, **CHILD_ENV},
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return "timeout", "", time.monotonic() - began
    took = (time.monotonic() - began) / 4
    output = proc.stdout + proc.stderr
    for page in site.rglob("*") if site.is_dir() else ():
        with contextlib.suppress(OSError):
            if page.is_file() and SECRET.encode() in page.read_bytes():
                output += f"\n{SECRET} published in {page.relative_to(site)}"
    return (0 if proc.returncode in (0, 1) else proc.returncode), output, took


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _default_sigint() -> None:
    """In the child: SIGINT as a terminal gives it. A fuzzer started in the background by a
    shell (`nohup ... &`) ignores SIGINT, its children inherit that, and Python keeps an
    ignored SIGINT ignored: every serve then "did not stop on SIGINT" (round 20's first runs)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_serve(kb: Path, argv: list[str], limit_s: float) -> tuple[int | str, str, float]:
    """`factbook serve` as a child on a free loopback port: GET /metrics, /healthz, / and
    /metrics again (each under `limit_s`), then check it is still up and stop it with
    SIGINT. A finding ("!serve ...") when it does not answer, answers a 5xx with a
    traceback or an exception's name, or dies; its log (stderr) is judged as any output."""
    port = _free_port()
    began = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "factbook", "--root", str(kb), *argv, "--listen",
         f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **CHILD_ENV}, preexec_fn=_default_sigint,
    )  # fmt: skip
    bodies: list[str] = []
    problem = ""
    try:
        deadline = time.monotonic() + limit_s * 2
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            time.sleep(0.05)
        if proc.poll() is not None:  # it refused to start: judged as a command's exit
            out, err = proc.communicate(timeout=5)
            return proc.returncode, out + err, time.monotonic() - began
        for path in ("/metrics", "/healthz", "/", "/metrics"):
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}{path}", timeout=limit_s
                ) as answer:
                    status, body = answer.status, answer.read(1 << 20).decode("utf-8", "replace")
            except urllib.error.HTTPError as exc:
                status, body = exc.code, exc.read(1 << 20).decode("utf-8", "replace")
            except (OSError, http.client.HTTPException) as exc:
                problem = problem or f"!serve: no answer to GET {path} ({type(exc).__name__})"
                continue
            bodies.append(f"GET {path} -> {status}\n{body[:20000]}")
            if status >= 500 and ("Traceback" in body or _LEAK.search(body)):
                problem = problem or f"!serve: {status} with a traceback on GET {path}"
        if proc.poll() is not None:
            problem = problem or f"!serve: died (exit {proc.returncode})"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            problem = problem or "!serve: did not stop on SIGINT"
    output = err + out + "\n" + "\n".join(bodies)
    took = (time.monotonic() - began) / 4
    return (problem or 0), output, took


def run_command(
    command: str, kb: Path, argv: list[str], limit_s: float
) -> tuple[int | str, str, float]:
    """One command of a case, in-process or as the child it needs."""
    if command == "mcp":
        return run_mcp(kb, argv[1], limit_s)
    if command == "mkdocs":
        return run_mkdocs(kb, limit_s)
    if command == "serve":
        return run_serve(kb, argv, limit_s)
    if command == "proposals-accept":
        return run_accept(kb, argv, limit_s)
    return run_one(kb, argv, limit_s)


def classify(
    code: int | str, output: str, took: float, limit_s: float, marker: bool, before: Counter[str]
) -> str | None:
    """The finding's class, None when the run kept the rules. `before`: the marks of the same
    command's output on the base knowledge base (whose facts may quote a traceback)."""
    if code == "timeout" or took > limit_s:
        return "timeout"
    if isinstance(code, str) and code.startswith("!"):
        return code[1:]  # the runner's own judgement (serve, accept)
    if isinstance(code, str):
        return f"escaped {code}"
    if marker:
        return "payload ran"
    if SECRET in output:
        return "read outside"
    marks = _marks(output)
    if marks["Traceback"] > before["Traceback"]:
        return "traceback"
    if code not in EXIT_CODES:
        return f"exit {code}"
    for name, count in marks.items():
        if count > before[name]:
            return f"leaked {name}"
    if code == 2 and not _LOCATED.search(output) and not _USAGE.search(output):
        return "unlocated"  # an input error that names no file:line
    return None


@dataclass
class Finding:
    klass: str
    seed: int
    index: int
    mutation: Mutation
    argv: list[str]
    code: int | str
    output: str


@contextlib.contextmanager
def _template_seconds(seconds: str) -> Iterator[None]:
    """A status template's render deadline (20 s by default) under the command's time limit:
    a template's endless loop is then stopped by the sandbox, as it must be, not the fuzzer."""
    old = os.environ.get("FACTBOOK_TEMPLATE_SECONDS")
    os.environ["FACTBOOK_TEMPLATE_SECONDS"] = seconds
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("FACTBOOK_TEMPLATE_SECONDS", None)
        else:
            os.environ["FACTBOOK_TEMPLATE_SECONDS"] = old


def run_cases(seed: int, cases: int, commands: list[str], per_case: int, limit_s: float,
              start: int = 0, verbose: bool = False
              ) -> tuple[Counter[str], list[Finding], int]:  # fmt: skip
    """Run `cases` cases; (commands run per name, findings, cases)."""
    ran: Counter[str] = Counter()
    codes = CODES
    findings: list[Finding] = []
    with tempfile.TemporaryDirectory(prefix="fuzzkb-") as tmp, _template_seconds("2"):
        base = build_base(Path(tmp) / "base")
        pristine = Path(tmp) / "pristine"  # the base, where the base's own runs write
        shutil.copytree(base, pristine)
        files = kb_files(base)
        all_ids = [i for f in files if f.startswith("facts/")
                   for i in ids_in(yaml.safe_load((base / f).read_text()))]  # fmt: skip
        base_marks: dict[tuple[str, ...], Counter[str]] = {}
        for index in range(start, start + cases):
            work = Path(tmp) / f"case{index}"
            kb, out = work / "kb", work / "outside"
            shutil.copytree(base, kb)
            make_outside(out)
            mutation = mutate(seed, index, base, files, all_ids, out)
            (kb / mutation.file).write_bytes(mutation.text)
            r = random.Random(f"{seed}:{index}:commands")
            chosen = commands if per_case >= len(commands) else r.sample(commands, per_case)
            outside_before = tree_state(out)
            pid = Path(mutation.file).stem if mutation.file.startswith("proposals/") else None
            for command in chosen:
                own = command not in SAMPLED or mutation.file.startswith(OWN_FILES[command])
                if not own and r.random() > SAMPLED[command]:
                    continue  # a child of seconds: its own files' cases, and a sample
                argv = argv_for(command, kb, r, mutation.fact_id, all_ids, pid)
                key = tuple(a.replace(str(kb), "{kb}") for a in argv)
                if key not in base_marks:
                    base_argv = [a.replace("{kb}", str(pristine)) for a in key]
                    ran_base = run_command(command, pristine, base_argv, limit_s * 3)
                    base_marks[key] = _marks(ran_base[1])
                code, output, took = run_command(command, kb, argv, limit_s)
                ran[command] += 1
                codes[f"{command} {code}"] += 1
                marker = (out / "MARKER").exists()
                klass = classify(code, output, took, limit_s, marker, base_marks[key])
                if verbose:
                    print(f"--- {' '.join(argv)} -> {code} ({took:.2f} s)\n{output[-4000:]}")
                if klass:
                    findings.append(Finding(klass, seed, index, mutation, argv, code, output))
            if tree_state(out) != outside_before:  # whatever the commands were
                findings.append(Finding("wrote outside", seed, index, mutation, ["(any)"],
                                        0, str(sorted(tree_state(out)))))  # fmt: skip
            shutil.rmtree(work, ignore_errors=True)
    return ran, findings, cases


def finding_class(f: Finding) -> str:
    command = "completion" if f.argv[0] == "__complete" else f.argv[0]
    if command in ("proposals", "mkdocs"):
        command += " " + f.argv[1]
    return f"{f.klass} [{command}]"


def report(ran: Counter[str], findings: list[Finding], cases: int, took: float) -> str:
    lines = [f"{cases} mutated cases, {sum(ran.values())} commands run "
             f"({', '.join(f'{k} {v}' for k, v in sorted(ran.items()))}) "
             f"in {took:.0f} s"]  # fmt: skip
    by_class: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        by_class[finding_class(f)].append(f)
    lines.append("exit codes: " + ", ".join(f"{k}: {v}" for k, v in sorted(CODES.items())))
    lines.append(f"{len(findings)} finding(s) in {len(by_class)} class(es)")
    for klass, group in sorted(by_class.items(), key=lambda kv: -len(kv[1])):
        first = group[0]
        m = first.mutation
        tail = [ln for ln in first.output.strip().splitlines() if ln.strip()][-3:]
        lines += [
            f"\n== {klass}: {len(group)} "
            f"({len({(g.mutation.file, g.mutation.kind) for g in group})} file x mutation)",
            f"   replay: bench/fuzz_kb.py --replay {first.seed}:{first.index}",
            f"   {m.file} @ {m.where}: {m.kind}; factbook {' '.join(first.argv)} -> {first.code}",
            *(f"   | {ln[:300]}" for ln in tail),
            "   also: "
            + ", ".join(sorted({f"{g.mutation.file}:{g.mutation.kind}" for g in group}))[:600],
        ]  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seed", type=int, default=19)
    p.add_argument("--cases", type=int, default=300)
    p.add_argument("--start", type=int, default=0, help="the first case's index")
    p.add_argument("--commands", default=",".join(COMMANDS), help=f"of {','.join(COMMANDS)}")
    p.add_argument("--per-case", type=int, default=99, help="commands run per case (a sample)")
    p.add_argument("--limit-s", type=float, default=10.0, help="time limit of one command")
    p.add_argument("--memory-gb", type=float, default=4.0, help="address space limit")
    p.add_argument("--replay", help="SEED:INDEX: one case, every output printed")
    p.add_argument(
        "--sample",
        type=float,
        help="the share of other files' cases that mcp, mkdocs and serve (children of "
        f"seconds) run on; default {', '.join(f'{k} {v}' for k, v in SAMPLED.items())}",
    )
    args = p.parse_args(argv)
    commands = [c for c in args.commands.split(",") if c]
    unknown = set(commands) - set(COMMANDS)
    if unknown:
        p.error(f"unknown commands: {', '.join(sorted(unknown))}")
    if args.sample is not None:
        SAMPLED.update(dict.fromkeys(SAMPLED, args.sample))
    limit = int(args.memory_gb * (1 << 30))
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    began = time.monotonic()
    if args.replay:
        seed, index = (int(x) for x in args.replay.split(":"))
        ran, findings, cases = run_cases(
            seed, 1, commands, args.per_case, args.limit_s, index, verbose=True
        )
    else:
        ran, findings, cases = run_cases(
            args.seed, args.cases, commands, args.per_case, args.limit_s, args.start
        )
    print(report(ran, findings, cases, time.monotonic() - began))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
