# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile input, round 21 (issue 25, "Hardening III"), classes 2 (reads outside the
knowledge base), 3 (catastrophic regular expressions), 7 (secrets) and 8 (output injection
and file modes), tried with fresh eyes against what rounds 4-20 did not write.

What was tried, and what was found, by class (the counts are at the end):

3. Regular expressions from a fact's `regex` expectation, redact.yaml's `patterns` and
   `--target ~REGEX`: what the `regex` module does before its matcher's deadline starts.
   Found: compiling was unbounded. `regex` writes every fixed repeat out, so `a{100000000}` or
   `(?:(?:a{1000}){1000}){1000}` in a fact file made `factbook lint` (and verify, status
   --redact, --target) allocate gigabytes: a MemoryError traceback under a limit, the OOM
   killer without one. 2,000 nested groups were a RecursionError traceback out of `re`'s
   parser. `(?V1)a` after `--target ~` was a ValueError traceback. And lint judged a
   different language from the one that runs: `(?:a+){e<=3}$` passed lint (for `re` a
   literal `{e<=3}`) but is fuzzy matching in `regex`, where `a{e}` matches any character;
   `--target ~` took regex-only syntax (`(?R)`, `\\p{L}`) that lint's parser cannot read.
   Fixed at the root, judging/userregex.check: every user pattern must compile with `re`,
   be at most 10,000 characters, nest at most 50 groups, unroll to at most 100,000 items and
   hold no fuzzy constraint, before `regex` sees it; one line naming the pattern, exit 2.
   Held (guards): backreferences, lookbehinds of a variable width (refused by `re`), counts
   just under the bound, and 100 kB values against the lint-flagged shapes (stopped by the
   1 s deadline).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_kb import REGEX_FACT, Case, run_case, value_fact

DEEP = "(?:" * 2000 + "a" + ")" * 2000
# patterns whose compiling alone was unbounded or a traceback, and the line each gets now
COMPILE_BOMBS = {
    "a{100000000}": "its repeats unroll to more than 100000 items",
    "(?:(?:a{1000}){1000}){1000}$": "its repeats unroll to more than 100000 items",
    "(?:a{1000}){1000}x": "its repeats unroll to more than 100000 items",
    "[a-z]{4294967294}": "its repeats unroll to more than 100000 items",
    DEEP: "groups nested deeper than 50",
    "(?:a+){e<=3}$": "{e<=3} is fuzzy matching",
    "h.r{e}": "{e} is fuzzy matching",
    "x{2i+1d<=3}": "{2i+1d<=3} is fuzzy matching",
    "a" * 10_001: "longer than 10000 characters",
}
# regex-only syntax: `re` refuses it, so lint and the engine read the same language
REGEX_ONLY = {
    "(a(?R)?)+$": "unknown extension ?R",
    "(?V1)a": "unknown extension ?V",
    "\\p{L}+": "bad escape \\p",
    "(?<=(a+)+)b": "look-behind requires fixed-width pattern",
    "(?|(a)|(b))": "unknown extension ?|",
}


def _shown(pattern: str) -> str:
    return pattern if len(pattern) < 30 else f"{pattern[:20]}... ({len(pattern)} characters)"


def _fact(pattern: str) -> dict[str, str]:
    return {"facts/r.yaml": REGEX_FACT.replace("PATTERN", pattern.replace("'", "''"))}


def _redact(pattern: str) -> dict[str, str]:
    return {"redact.yaml": "patterns: ['" + pattern.replace("'", "''") + "']\n"}


REDACT = ["status", "--redact", "--out", "-"]
# characters no reader sees (errors.INVISIBLE_CHARS): zero-width space and joiner, word
# joiner, BOM, soft hyphen, and a Unicode tag spelling "i" (ASCII smuggled past a reviewer)
INVISIBLE = "\u200b\u200d\u2060\ufeff\u00ad\U000e0069"
INVISIBLE_ESCAPED = "\\u200b\\u200d\\u2060\\ufeff\\xad\\U000e0069"
HIDING_FACT = {
    "facts/x.yaml": value_fact(f'"v{INVISIBLE}"')
    .replace("title: T", f'title: "T{INVISIBLE}"')
    .replace("statement: S.", f'statement: "S{INVISIBLE}."')
    + f'    tags: ["t{INVISIBLE}"]\n'
}
HIDING_NAME = {f"facts/n{INVISIBLE}.yaml": "facts: [x]\n"}
RAW = tuple(INVISIBLE)
BIG = {"max_rss_mb": 250, "isolated": True, "max_s": 30}  # a bomb is stopped from outside
# fmt: off
CASES: list[Case] = [
    # --- 3. compiling a user pattern is bounded before the regex module sees it ---
    *[Case(f"regex expectation compile bomb {_shown(p)}", _fact(p), "lint", 2, "facts/r.yaml:9: fact 'sw.r': expect.regex: invalid regex", **BIG) for p, why in COMPILE_BOMBS.items()],
    *[Case(f"regex expectation compile bomb {_shown(p)}, its reason", _fact(p), "lint", 2, why) for p, why in COMPILE_BOMBS.items() if p != DEEP],
    *[Case(f"regex expectation compile bomb {_shown(p)}, verify", _fact(p), ["verify", "sw.r"], 2, why, **BIG) for p, why in list(COMPILE_BOMBS.items())[:5]],
    *[Case(f"redact pattern compile bomb {_shown(p)}", _redact(p), REDACT, 2, f"redact.yaml:1: patterns[0] is not a regular expression: {why}", **BIG) for p, why in COMPILE_BOMBS.items()],
    *[Case(f"--target ~ compile bomb {_shown(p)}", {}, ["verify", "--dry-run", "--target", "~" + p], 2, why, **BIG) for p, why in COMPILE_BOMBS.items()],
    *[Case(f"--target ~ regex-only syntax {p}", {}, ["verify", "--dry-run", "--target", "~" + p], 2, why) for p, why in REGEX_ONLY.items()],
    *[Case(f"regex expectation regex-only syntax {p}", _fact(p), "lint", 2, why) for p, why in REGEX_ONLY.items()],
    *[Case(f"redact pattern regex-only syntax {p}", _redact(p), REDACT, 2, why) for p, why in REGEX_ONLY.items()],
    # guards: what a real pattern needs still passes
    Case("regex expectation a count at the bound", _fact("(?:[0-9a-f]{1000}){100}"), "lint", 0, "ok: 2 facts"),
    Case("regex expectation a literal brace escaped", _fact("x\\{e\\}"), "lint", 0, "ok: 2 facts"),
    Case("regex expectation a brace that is no quantifier nor fuzzy", _fact("a{foo}"), "lint", 0, "ok: 2 facts"),
    Case("regex expectation braces inside a class", _fact("[{e}]+"), "lint", 0, "ok: 2 facts"),
    Case("regex expectation a backreference", _fact("^(\\w+) \\1$"), "lint", 0, "ok: 2 facts"),
    Case("regex expectation 50 nested groups", _fact("(" * 50 + "a" + ")" * 50), "lint", 0, "ok: 2 facts"),
    Case("regex expectation a fixed lookbehind", _fact("(?<=sm_)9\\d"), "lint", 0, "ok: 2 facts"),
    Case("--target ~ a sane pattern", {}, ["verify", "--dry-run", "--target", "~^h.r{1}e$"], 0, "on here"),
    # --- 8. invisible characters: lint names them, every output shows them escaped ---
    Case("invisible characters in a fact, lint", HIDING_FACT, "lint", 2, "facts/x.yaml:7: hidden character U+200B (ZERO WIDTH SPACE)", absent=RAW),
    Case("invisible characters in a fact, lint names the tag", {"facts/x.yaml": value_fact('"v\\U000E0069"')}, "lint", 2, "facts/x.yaml:7: hidden character U+E0069 (TAG LATIN SMALL LETTER I)", absent=RAW),
    *[Case(f"invisible characters in a fact, {' '.join(c)}", HIDING_FACT, c, 0, f"T{INVISIBLE_ESCAPED}", absent=RAW) for c in (["list"], ["show", "x.one"])],
    Case("invisible characters in a fact, status", HIDING_FACT, ["status", "--out", "-"], 0, f"S{INVISIBLE_ESCAPED}.", absent=RAW),
    Case("invisible characters in a fact, status --budget", HIDING_FACT, ["status", "--budget", "2000", "--out", "-"], 0, "hardware 1: x.one", absent=RAW),
    Case("invisible characters in a fact, export-ansible", HIDING_FACT, ["export-ansible", "--out", "-"], 2, "facts/x.yaml:4: hidden character U+200B", absent=RAW),
    Case("invisible characters in a tag, completion", HIDING_FACT, ["__complete", "5", "factbook", "--root", "{kb}", "verify", "--tag", ""], 0, "", absent=RAW),
    *[Case(f"invisible characters in a file name, lint --format {fmt}", HIDING_NAME, ["lint", "--format", fmt], 2, "expected mapping", absent=RAW) for fmt in ("text", "github", "json", "sarif")],
    Case("invisible characters in a file name, list", HIDING_NAME, "list", 0, "lint problem", absent=RAW),
    Case("invisible characters in a file name, verify --dry-run", HIDING_NAME, "verify-dry", 2, f"facts/n{INVISIBLE_ESCAPED}.yaml", absent=RAW),
    Case("redact pattern a sane pattern", {**_redact("tok-[0-9]{4}"), "facts/x.yaml": "facts:\n  - id: x.one\n    category: hardware\n    title: T\n    statement: the key is tok-1234.\n    status: assumed\n    value: 1\n    sources: [{seed: a.txt}]\n"}, REDACT, 0, "the key is secret-1", absent=("tok-1234",)),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round21(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


# --- 3. what the command line cannot reach: a 100 kB value against the flagged shapes ---
@pytest.mark.parametrize(
    "pattern", ["(a|aa)+$", "(a+)+$", "(\\w+\\s?)*$", "^(a+)\\1+$", "(.*a){12}"]
)
def test_a_100_kB_value_is_stopped_by_the_deadline(pattern: str) -> None:
    import time

    from factbook.judging.expectations import evaluate

    started = time.monotonic()
    outcome = evaluate({"regex": pattern}, "a" * 100_000 + "!")
    assert time.monotonic() - started < 10
    assert not outcome.passed or "stopped after" not in outcome.reason


# --- 8. MCP: what a model reads is what a reviewer sees (no invisible tag characters) ---
def test_mcp_answers_carry_no_invisible_character(tmp_path: Path) -> None:
    """Tools, resources and the resource list of a knowledge base whose fact hides
    characters: every string of every answer, decoded, holds none raw (before round 21 the
    tag characters reached the client as they were, text a model reads and a person does not
    see)."""
    import json

    from helpers import module_or_skip
    from test_hostile_kb import make_outside, plant

    module_or_skip("mcp", reason="the mcp extra is not installed")
    from test_mcp_stdio import Wire

    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, HIDING_FACT)
    calls = [
        ("tools/call", {"name": "search_facts", "arguments": {"query": "T"}}),
        ("tools/call", {"name": "show_fact", "arguments": {"id": "x.one"}}),
        ("tools/call", {"name": "status_brief", "arguments": {}}),
        ("resources/read", {"uri": "factbook://fact/x.one"}),
        ("resources/read", {"uri": "factbook://status/1"}),
        ("resources/list", {}),
    ]
    server = Wire(root)
    try:
        server.initialize()
        for ident, (method, params) in enumerate(calls, 1):
            server.request(ident, method, params)
            answer = json.dumps(server.answer(), ensure_ascii=False)
            assert "x.one" in answer or "Status" in answer, answer[:500]
            for char in INVISIBLE:
                assert char not in answer, (method, params, hex(ord(char)), answer[:2000])
    finally:
        server.close()
