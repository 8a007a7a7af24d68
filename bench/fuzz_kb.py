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
import io
import json
import math
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
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
)
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
    return dest


def make_outside(out: Path) -> None:
    out.mkdir(parents=True)
    (out / "shadow").write_text(f"root:{SECRET}:19000:0:99999:7:::\n")
    (out / "facts.yaml").write_text(f"facts: [{{id: {SECRET}}}]\n")
    (out / "latest.json").write_text('{"' + SECRET + '": 1}')


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


def mutate(
    seed: int, index: int, base: Path, files: list[str], all_ids: list[str], out: Path
) -> Mutation:
    r = random.Random(f"{seed}:{index}")
    rel = r.choice(files)
    data = (base / rel).read_bytes()
    if r.random() < 0.8:
        text = data.decode("utf-8")
        if rel.endswith((".yaml", ".json")):
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
    command: str, kb: Path, r: random.Random, fact_id: str | None, ids: list[str]
) -> list[str]:
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


_LOCATED = re.compile(r"[\w./-]+\.(yaml|yml|json|jsonl|md|py)(:\d+)?[:,; ]")
_USAGE = re.compile(r"unknown fact|no fact|not a knowledge base")


def _marks(output: str) -> Counter[str]:
    """The tracebacks and exception names an output holds."""
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


def classify(
    code: int | str, output: str, took: float, limit_s: float, marker: bool, before: Counter[str]
) -> str | None:
    """The finding's class, None when the run kept the rules. `before`: the marks of the same
    command's output on the base knowledge base (whose facts may quote a traceback)."""
    if code == "timeout" or took > limit_s:
        return "timeout"
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


def run_cases(seed: int, cases: int, commands: list[str], per_case: int, limit_s: float,
              start: int = 0, verbose: bool = False
              ) -> tuple[Counter[str], list[Finding], int]:  # fmt: skip
    """Run `cases` cases; (commands run per name, findings, cases)."""
    ran: Counter[str] = Counter()
    codes = CODES
    findings: list[Finding] = []
    with tempfile.TemporaryDirectory(prefix="fuzzkb-") as tmp:
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
            for command in chosen:
                if command == "mcp" and mutation.file != "factbook.yaml" and r.random() > 0.05:
                    continue  # a child process of ~2 s: factbook.yaml's cases, and a sample
                argv = argv_for(command, kb, r, mutation.fact_id, all_ids)
                key = tuple(a.replace(str(kb), "{kb}") for a in argv)
                if key not in base_marks:
                    base_argv = [a.replace("{kb}", str(pristine)) for a in key]
                    ran_base = (run_mcp(pristine, key[1], limit_s) if command == "mcp"
                                else run_one(pristine, base_argv, limit_s * 3))  # fmt: skip
                    base_marks[key] = _marks(ran_base[1])
                if command == "mcp":
                    code, output, took = run_mcp(kb, argv[1], limit_s)
                else:
                    code, output, took = run_one(kb, argv, limit_s)
                ran[command] += 1
                codes[f"{command} {code}"] += 1
                marker = (out / "MARKER").exists()
                klass = classify(code, output, took, limit_s, marker, base_marks[key])
                if verbose:
                    print(f"--- {' '.join(argv)} -> {code} ({took:.2f} s)\n{output[-4000:]}")
                if klass:
                    findings.append(Finding(klass, seed, index, mutation, argv, code, output))
            shutil.rmtree(work, ignore_errors=True)
    return ran, findings, cases


def finding_class(f: Finding) -> str:
    command = "completion" if f.argv[0] == "__complete" else f.argv[0]
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
    args = p.parse_args(argv)
    commands = [c for c in args.commands.split(",") if c]
    unknown = set(commands) - set(COMMANDS)
    if unknown:
        p.error(f"unknown commands: {', '.join(sorted(unknown))}")
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
