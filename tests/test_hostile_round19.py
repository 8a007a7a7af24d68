# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile input, round 19 (issue 25, "Hardening III"): a structured type-mutation fuzzer
over every file a knowledge base holds (bench/fuzz_kb.py), to find what the hand-written
rounds missed.

What was tried: the shipped knowledge base (facts/, checks/, runbooks/, targets.yaml,
milestones.yaml, results/latest.json and two results/runs/*.jsonl, plus a factbook.yaml and a
redact.yaml), one mutation per case at a random node of one file (a scalar made a list, a
mapping, null, a bool, a 5000-hex-digit int, a negative int, nan, inf, a 100 kB string,
control or bidi characters, a date, a datetime, an empty string or mapping, a YAML tag
(`!!binary`, `!!set`, `!!omap`, `!!python/object/apply`, `!!python/name`, a local tag), an
alias bomb, a path outside the knowledge base, a value nested 50 deep; a mapping made a
scalar or a list; a key deleted, duplicated, added, or made a number, null, bool, date, list
or mapping; an id made to collide; a list emptied), or to its raw text (truncated at a random
byte, a NUL, an invalid UTF-8 byte, a lone CR, CRLF line ends, a BOM, tab indentation, a line
dropped or doubled, a second YAML document). Each case ran the reading commands in-process
under a 10 s limit: lint, list, show (the id of the fact holding the mutated node), status
(plain, --budget, --redact), export-ansible, completion (`__complete` of --target, --tag,
--category), verify --dry-run, docs; `mcp` as a child fed six MCP messages, on every
factbook.yaml case and a 5% sample of the rest.

Counts (seeds 1-3, 5, 100, 200, 300): 2,900 mutated cases, about 10,000 commands run; every
one kept the rule (one located line, exit 0 or 2, no traceback, no hang, nothing read from
outside, no payload run). Findings: none. The table below holds, as guards, a reproduction
of each mutation class the fuzzer exercised that no earlier round's table had, and the last
test reruns the fuzzer itself on a fixed seed so CI keeps doing so.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest
from test_hostile_kb import BASE, Case, run_case

REPO = Path(__file__).resolve().parents[1]

GOOD = BASE["facts/good.yaml"]


def fact(text: str) -> dict[str, str]:
    """facts/good.yaml with `value: 8` replaced by `text` (one line of YAML)."""
    return {"facts/good.yaml": GOOD.replace("value: 8", text)}


def fuzz_module():
    spec = importlib.util.spec_from_file_location("fuzz_kb", REPO / "bench" / "fuzz_kb.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_kb"] = module
    spec.loader.exec_module(module)
    return module


# fmt: off
CASES: list[Case] = [
    # --- held (guards): one reproduction per mutation class of the fuzzer no earlier table had; each one located line, exit 2 ---
    Case("value: a 5000-hex-digit int", fact("value: 0x" + "f" * 5000), "lint", 2, "facts/good.yaml:6: invalid value: Exceeds the limit of a number"),
    Case("value: !!set", fact("value: !!set {a: null}"), "lint", 2, "facts/good.yaml:6: invalid value: could not determine a constructor"),
    Case("value: !!binary", fact("value: !!binary aGVsbG8="), "lint", 2, "facts/good.yaml:6: fact 'hw.gpu.count': value: unsupported value of type bytes"),
    Case("value: !!python/name", fact("value: !!python/name:os.system"), "lint", 2, "facts/good.yaml:6: invalid value: could not determine a constructor"),
    Case("value: an alias bomb in flow style", fact("value: [&a [x, x, x], &b [*a, *a, *a]]"), "lint", 2, "facts/good.yaml:6: YAML alias '*a' is not allowed here"),
    Case("value: nested 50 deep", fact("value: " + "[" * 50 + "x" + "]" * 50), "lint", 2, "facts/good.yaml:6: nested deeper than 40 levels"),
    Case("value: nan", fact("value: .nan"), "lint", 2, "facts/good.yaml:6: fact 'hw.gpu.count': value: unsupported value of type nan"),
    Case("a list as a key", fact("[a, b]: 8"), "lint", 2, "facts/good.yaml:6: mapping keys must be scalars"),
    Case("a date as a key", fact("2026-01-01: 8"), "lint", 2, "facts/good.yaml:6: fact 'hw.gpu.count': unknown key '2026-01-01'"),
    Case("id: a list", {"facts/good.yaml": GOOD.replace("id: hw.gpu.count", "id: [hw, gpu]")}, "lint", 2, "facts/good.yaml:2: id: expected string, got list"),
    Case("status: a date", {"facts/good.yaml": GOOD.replace("status: verified", "status: 2026-01-01")}, "lint", 2, "facts/good.yaml:7: fact 'hw.gpu.count': status: expected string, got date"),
    Case("sources: a mapping", {"facts/good.yaml": GOOD.replace("sources: [{seed: a.txt}]", "sources: {seed: a.txt}")}, "lint", 2, "facts/good.yaml:9: fact 'hw.gpu.count': sources: expected list, got mapping"),
    Case("check: null", {"facts/good.yaml": GOOD.replace("check: {probe: env.var, args: {name: HOME}, expect: {exists: true}}", "check: null")}, "lint", 2, "facts/good.yaml:10: fact 'hw.gpu.count': check: expected mapping, got null"),
    Case("check.probe: a list", {"facts/good.yaml": GOOD.replace("probe: env.var", "probe: [env.var]")}, "lint", 2, "facts/good.yaml:10: fact 'hw.gpu.count': check.probe: expected string, got list"),
    Case("status: a date, shown", {"facts/good.yaml": GOOD.replace("status: verified", "status: 2026-01-01")}, ["show", "hw.gpu.count"], 2, "facts/good.yaml:7: fact 'hw.gpu.count' does not load: status: expected string, got date"),
    Case("sources: a mapping, shown", {"facts/good.yaml": GOOD.replace("sources: [{seed: a.txt}]", "sources: {seed: a.txt}")}, ["show", "hw.gpu.count"], 2, "facts/good.yaml:9: fact 'hw.gpu.count' does not load: sources: expected list, got mapping"),
    # --- the fuzzer's notes, mended: a key that is not a string is quoted as YAML spells it (Python's 'None' before), a long one by its head ---
    Case("a null key", fact("null: 8"), "lint", 2, "facts/good.yaml:6: fact 'hw.gpu.count': unknown key 'null'"),
    Case("a true key", fact("true: 8"), "lint", 2, "facts/good.yaml:6: fact 'hw.gpu.count': unknown key 'true'"),
    Case("a 1,000-character key", fact("k" * 1000 + ": 8"), "lint", 2, "unknown key '" + "k" * 80 + "...'"),
    # --- the fuzzer's note, mended: lint passed a results/latest.json that status, show and export-ansible refuse ---
    Case("results/latest.json: a merge conflict, linted", {"results/latest.json": "<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> b\n"}, "lint", 2, "results/latest.json:1: not valid JSON"),
    Case("results/latest.json: a 6000-digit number, linted", {"results/latest.json": '{"hw.gpu.count": {"here": {"duration_s": ' + "9" * 6000 + "}}}"}, "lint", 2, "results/latest.json:1: not valid JSON: Exceeds the limit (4300 digits)"),
    Case("results/latest.json: a 6000-digit number", {"results/latest.json": '{"hw.gpu.count": {"here": {"duration_s": ' + "9" * 6000 + "}}}"}, "status", 2, "results/latest.json:1: not valid JSON: Exceeds the limit (4300 digits)"),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round19(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


def test_the_fuzzer_finds_nothing_on_a_fixed_seed() -> None:
    """bench/fuzz_kb.py itself, 60 cases of seed 19 with two reading commands each (mcp, a
    child of ~2 s, left to the developer's runs): no finding, and the mutations bite (lint
    refuses most of what it was given)."""
    fuzz = fuzz_module()
    began = time.monotonic()
    commands = [c for c in fuzz.ROUND19_COMMANDS if c != "mcp"]
    ran, findings, cases = fuzz.run_cases(19, 60, commands, 2, 10.0)
    took = time.monotonic() - began
    report = fuzz.report(ran, findings, cases, took)
    assert not findings, report
    assert cases == 60 and sum(ran.values()) == 120, report
    assert set(ran) == set(commands), report
    assert fuzz.CODES["lint 2"] > fuzz.CODES["lint 0"], report  # most mutations are refused
