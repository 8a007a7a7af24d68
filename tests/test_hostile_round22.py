# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile input, round 22 (issue 25, "Hardening III"): classes 4 (self-inflicted lockout),
5 (unbounded work), 6 (tracebacks left) and 9 (`factbook serve` under hostile clients).

DOCSTRING-FILLED-IN-AT-THE-END
"""

from __future__ import annotations

import json
import resource
from pathlib import Path

import pytest
from test_hostile_kb import Case, run_case

HOSTILE_PROBE = """
def hostile(kind):
    '''A value a box may hand back.'''
    if kind == "deep":
        v = 1
        for _ in range(5000):
            v = [v]
        return v
    if kind == "deepdict":
        v = 1
        for _ in range(900):
            v = {"k": v}
        return v
    if kind == "wide":
        return {f"k{i}": i for i in range(300000)}
    if kind == "longkey":
        return {"k" * 5_000_000: 1}
    if kind == "surrogates":
        return "a\\x00b\\udcff\\ud800" * 1000
    if kind == "bigint":
        return 10 ** 5000
    if kind == "nan":
        return float("nan")
    if kind == "bytes":
        return b"\\xff\\xfe"
    if kind == "set":
        return {1, 2}
    if kind == "tuplekey":
        return {(1, 2): 3}
    if kind == "huge":
        return "x" * 50_000_000
    if kind == "keys":
        return {"": 1, "a.b": 2, "\\x1b[31m": 3, "\\u202e": 4, "*": 5, "-": 6, "1": 7}
    return None
PROBES = {"t.hostile": hostile}
"""


def box_fact(check: str) -> dict[str, str | bytes]:
    """A fact `sw.h` on the local box whose check is `check` (flow YAML)."""
    return {
        "facts/h.yaml": "facts:\n  - id: sw.h\n    category: software\n    title: T\n    statement: S.\n    status: assumed\n    value: 1\n    target: here\n    sources: [{seed: a.txt}]\n    check: "
        + check
        + "\n"
    }


def probe_fact(kind: str) -> dict[str, str | bytes]:
    """The knowledge base's own probe handing back a hostile value of `kind`."""
    return {**box_fact("{probe: t.hostile, args: {kind: " + kind + "}, expect: {exists: true}}"), "checks/h.py": HOSTILE_PROBE}


def cmd_fact(command: str, timeout: int = 20) -> dict[str, str | bytes]:
    """A `cmd` check running `command` in a shell on the local box."""
    return box_fact("{probe: cmd, args: {argv: " + json.dumps(command) + ", shell: true}, timeout: " + str(timeout) + ", expect: {path: exit_code, eq: 0}}")


VERIFY_H = ["verify", "sw.h", "--record"]
READERS = ("lint", "list", ["show", "sw.h"], "status", "docs", "export-ansible", ["verify", "--failed", "--dry-run"])

# fmt: off
CASES: list[Case] = [
    # --- 4. a box printing anything: every value comes back within what the readers read ---
    *[Case(f"box value {k}, then {r if isinstance(r, str) else ' '.join(r)}", probe_fact(k), VERIFY_H, code, "", then=r, max_s=30, max_rss_mb=400)
      for k, code in (("deep", 3), ("deepdict", 0), ("wide", 0), ("longkey", 0), ("surrogates", 0), ("bigint", 3), ("nan", 0), ("bytes", 0), ("set", 0), ("tuplekey", 3), ("huge", 3), ("keys", 0))
      for r in (READERS if k in ("deepdict", "wide", "surrogates", "keys") else ("lint", ["show", "sw.h"]))],
    *[Case(f"box prints {name}, then {r if isinstance(r, str) else ' '.join(r)}", cmd_fact(command), VERIFY_H, 0, "recorded sw.h", then=r, max_s=30)
      for name, command in (("20 MB", "head -c 20000000 /dev/zero | tr '\\\\0' x"), ("100,000 lines", "seq 100000"), ("NUL and invalid UTF-8", "printf 'a\\\\0b\\\\377\\\\376c\\\\r\\\\n'"), ("100,000-deep JSON", "python3 -c \"print('['*100000+']'*100000)\""))
      for r in READERS],
    # --- 5. a box printing without end: the agent holds the head and tail, never all of it ---
    Case("box prints 300 MB: kept as head and tail", cmd_fact("head -c 300000000 /dev/zero"), ["verify", "sw.h"], 0, "1 passed", max_s=60, isolated=True, then=["show", "sw.h"]),
    Case("box prints forever: stopped at the check's timeout", cmd_fact("yes", timeout=3), ["verify", "sw.h"], 3, "1 errored", max_s=60, isolated=True),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round22(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


def test_a_command_printing_300_mb_is_read_within_its_cap() -> None:
    """The `cmd` probe on the box (its real source, a real child): 300 MB of output is read as
    it arrives and held as 1 MiB of head and tail; before, all of it was held (`yes` grew the
    agent by 4.6 GB in a 5 s timeout)."""
    from factbook.probes.host import OUTPUT_CAP, cmd

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = cmd("head -c 300000000 /dev/zero; printf END", shell=True)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert result["exit_code"] == 0 and result["stdout"].endswith("END")
    assert result["truncated_bytes"]["stdout"] == 300_000_003 - OUTPUT_CAP
    assert len(result["stdout"]) < OUTPUT_CAP + 100
    assert grown < 64, f"{grown:.0f} MB"
