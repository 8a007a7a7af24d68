# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile input, round 9 (issue 25): files written by whoever can write the knowledge base
or hand one over (proposal files, run records, dumps, inventories), read back by the
commands that only read them, in the table form of tests/test_hostile_kb.py and checked by
its `run_case` (no traceback, no file outside touched, no payload run), plus plain tests
where a property needs its own driver.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_kb import PID, Case, run_case

RAW = ("\x1b", "\u202e", "\n::error::")  # a raw ESC or bidi control, a workflow command's line
PROPOSAL = f"id: {PID}\ncreated: '2026-01-01T00:00:00Z'\norigin: ORIGIN\nsummary: SUMMARY\nreason: REASON\nitem:\n  change: {{id: hw.gpu.count, set: {{value: 3}}}}\n"
INJECT = '"x\\e[31m\\u202e\\n::error::pwned"'  # YAML escapes: ESC, RLO, a line break


def proposal(**fields: str) -> dict[str, str | bytes]:
    """A pending proposal of a change to hw.gpu.count with `fields` (origin, summary,
    reason) replaced by YAML text."""
    text = PROPOSAL
    for key, value in {"origin": "mcp", "summary": "s", "reason": "r", **fields}.items():
        text = text.replace(key.upper(), value)
    return {f"proposals/{PID}.yaml": text}


# fmt: off
CASES: list[Case] = [
    # a proposal's summary, reason and origin went raw to the terminal: ESC repainted it, a line break started `::error::` in CI
    Case("proposals list: summary with ESC, RLO and a line break", proposal(summary=INJECT), ["proposals", "list"], 0, "x\\x1b[31m\\u202e ::error::pwned", absent=RAW),
    Case("proposals list: origin with ESC", proposal(origin=INJECT), ["proposals", "list"], 0, "(x\\x1b[31m", absent=RAW),
    Case("proposals show: reason with ESC, RLO and a line break", proposal(reason=INJECT), ["proposals", "show", PID], 0, "reason: x\\x1b[31m\\u202e ::error::pwned", absent=RAW),
    Case("proposals show: summary with ESC, RLO and a line break", proposal(summary=INJECT), ["proposals", "show", PID], 0, f"{PID}: x\\x1b[31m", absent=RAW),
    Case("proposals reject: summary with ESC, RLO and a line break", proposal(summary=INJECT), ["proposals", "reject", PID], 0, f"rejected {PID}: x\\x1b[31m", absent=RAW),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round9(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)
