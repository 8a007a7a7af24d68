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

8. Invisible characters and warnings. Found: zero-width space/joiners, the word joiner, the
   BOM, the soft hyphen and the Unicode tag block (U+E0000..E007F, ASCII no reader sees) in a
   fact passed lint and came out raw in list, show, status, lint --format github (a file
   name), completion and every MCP answer. Fixed: errors.INVISIBLE_CHARS joins the hidden
   set of errors.visible and judging/sanitize (lint names each at its line; astral ones are
   escaped as \\UXXXXXXXX, in JSON as a surrogate pair). Found: warnings printed file names
   raw: `docs` (a docs/ page linked out or a FIFO), `status` (a docs/status page),
   `run --list` (a record linked out) and the plugin's lines in `mkdocs build`, so a page named
   `a<newline>::error file=x::...` was a GitHub Actions workflow command; `run --dry-run
   --target WORD` printed WORD raw. Fixed: errors.warn for every warning line, a logging
   filter on the plugin's logger, and run's refusal is the CLI's one UsageError line.

7. Passwords of `--target` URLs. Found: 12 refusals quoted the URL with its password
   (`unsupported target URL scheme`, `Invalid IPv6 URL`, `unknown key`, `timeout`, `port`,
   a bad target name, a bad jump, `no host`, a bad user, `here,ssh://...`, a jump's port or
   IPv6), as did `run --target`, `--limit`, `--exclude`, an unknown id and `bench --url`; a
   jump host's password (`?jump=ops:PASS@bastion`) named the jump target, so it was stored
   in results/latest.json's `reason` and in the run file's `argv`. Fixed:
   targets._split_specs reads each spec with its passwords as `***` (factbook never uses
   one), hide_url_passwords masks jump specs too, and the CLI hides any
   `scheme://user:PASS@` in the error line it prints.

2. Reads outside. Found: `factbook mcp` read factbook.yaml wherever a link led, and read the
   inventories factbook.yaml names as the user's own `--inventory` files (unconfined): an ssh
   config there that `Include`d a file outside had that file's host names listed by
   verify_facts as known targets. Fixed: load_settings reads inside `confined(root)`, and
   read_sources/add_inventories take the root for inventories the knowledge base names;
   names.inside says where a link leads. Held (guards): /dev/stdin, /proc/self/environ,
   FIFOs and link loops as fact files, redact.yaml, milestones.yaml and _macros.j2; linked
   group_vars/host_vars folders; a linked runbooks/, results/runs/ or checks/ subfolder;
   an accepted proposal linked out; an ssh config's IdentityFile outside (not read by
   --dry-run).

Counts: 118 table cases (class 3: 64, class 7: 20, class 8: 19, class 2: 15) and 7 plain
tests (11 runs: the 100 kB deadline x5, MCP answers, mkdocs build, jump passwords, MCP
settings x3 and inventories). Failing before the fixes: the compile bombs and fuzzy
patterns of class 3 (each of lint, verify, status --redact, --target), the regex-only
syntax after `--target ~`, every class 7 case but the dry-run guard, the class 8 cases
except the lint --format text/json/sarif of a file name, the MCP settings and inventories
tests; the other class 2 cases held.
Not done: hard links (a hard link to a file outside resolves inside the root; refusing
st_nlink > 1 would refuse files git or `cp -al` made), and the cache .factbook-cache/kb.json
(a writer of the knowledge base can plant one whose stamps match its files; it holds plain
values only).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_kb import FIFO, PID, REGEX_FACT, RUNBOOK, Case, Link, run_case, value_fact

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
# a name that would be a workflow command, a repaint, a reordering and a hidden character
INJECTED = "a\n::error file=x::pwned\x1b[31m\u202e\u200b"
INJECTED_SHOWN = "a\\n::error file=x::pwned\\x1b[31m\\u202e\\u200b"
NOT_INJECTED = ("\n::error file=x", "\x1b", "\u202e", "\u200b")
# a URL's password in every place a --target URL is refused, and in a jump host
URL_REFUSALS = {
    "sftp://ops:{secret}@127.0.0.1": "unsupported target URL scheme 'sftp' in 'sftp://ops:***@127.0.0.1'",
    "ssh://ops:{secret}@[::1": "bad target URL 'ssh://ops:***@[::1': Invalid IPv6 URL",
    "ssh://ops:{secret}@127.0.0.1?foo=1": "ssh://ops:***@127.0.0.1?foo=1: unknown key foo",
    "ssh://ops:{secret}@127.0.0.1?timeout=x": "ssh://ops:***@127.0.0.1?timeout=x: timeout must be a number",
    "ssh://ops:{secret}@127.0.0.1:99999": "ssh://ops:***@127.0.0.1:99999: port '99999'",
    "ssh://ops:{secret}@127.0.0.1:1#bad name": "'ssh://ops:***@127.0.0.1:1#bad name': bad target name",
    "ssh://ops:{secret}@127.0.0.1:1?jump=a;b": "jump 'a;b' is not a host",
    "ssh://ops:{secret}@": "ssh://ops:***@: no host",
    "ssh://o;ps:{secret}@127.0.0.1:1": "user 'o;ps' is not a host",
    "here,ssh://ops:{secret}@127.0.0.1:1": "in 'here,ssh://ops:***@127.0.0.1:1'",
    "ssh://127.0.0.1:1?jump=ops:{secret}@127.0.0.1:99999": "bad jump host 'ops:***@127.0.0.1:99999'",
    "ssh://127.0.0.1:1?jump=ssh://ops:{secret}@[::1": "jump=ssh://ops:***@[::1': Invalid IPv6 URL",
}
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
    # a long pattern is quoted by its head, never echoed whole in its one line
    Case("regex expectation 6,000 characters quoted by its head", _fact(DEEP), "lint", 2, "invalid regex '(?:(?:", absent=(DEEP[:200],)),
    Case("--target ~ 6,000 characters quoted by its head", {}, ["verify", "--dry-run", "--target", "~" + DEEP], 2, "bad regular expression '(?:(?:", absent=(DEEP[:200],)),
    Case("--target @group unknown, quoted by its head", {}, ["verify", "--dry-run", "--target", "@" + "g" * 5000], 2, "no group 'ggg", absent=("g" * 200,)),
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
    # --- 8. warnings naming a file of the knowledge base are one escaped line ---
    Case("a docs page named as a workflow command, linked outside, docs", {f"docs/{INJECTED}.md": Link("{out}/shadow")}, "docs", 0, f"warning: {INJECTED_SHOWN}.md: not copied", absent=NOT_INJECTED),
    Case("a docs page named as a workflow command, a FIFO, docs", {f"docs/{INJECTED}.md": FIFO}, "docs", 0, f"warning: {INJECTED_SHOWN}.md: not copied", absent=NOT_INJECTED),
    Case("a status page named as a workflow command, a FIFO, status", {f"docs/status/{INJECTED}.md": FIFO}, ["status"], 0, f"warning: docs/status/{INJECTED_SHOWN}.md: not a regular file", absent=NOT_INJECTED, isolated=True, max_s=30),
    Case("a run record under a folder named as a workflow command, run --list", {"runbooks/rb.md": RUNBOOK, f"results/runbooks/rb/{INJECTED}/record.json": Link("{out}/record.json")}, ["run", "--list"], 0, f"rb/{INJECTED_SHOWN}/record.json: resolves to", absent=NOT_INJECTED),
    Case("run --dry-run --target a workflow command", {"runbooks/rb.md": RUNBOOK}, ["run", "rb", "--dry-run", "--target", INJECTED], 2, f"unknown target '{INJECTED_SHOWN}' (known: here, box)", absent=NOT_INJECTED),
    # --- 7. a --target URL's password: refused or used, it is *** in every line and file ---
    *[Case(f"--target URL password, {u.replace('{secret}', 'PASS')}", {}, ["verify", "hw.gpu.count", "--target", u], 2, why) for u, why in URL_REFUSALS.items()],
    Case("--target URL password in a jump host, verify", {}, ["verify", "hw.gpu.count", "--target", "ssh://127.0.0.1:1?jump=ops:{secret}@127.0.0.1:2", "--timeout", "2"], 3, "jump host ops:***@127.0.0.1:2", isolated=True, max_s=30),
    Case("--target URL password in a jump host, discover", {}, ["discover", "--target", "ssh://127.0.0.1:1?jump=ops:{secret}@127.0.0.1:2&timeout=2"], 3, "ops:***@127.0.0.1:2", isolated=True, max_s=30),
    Case("--target URL password, verify --dry-run --format json", {}, ["verify", "--dry-run", "--target", "ssh://ops:{secret}@127.0.0.1:1?jump=u:{secret}@127.0.0.1:2"], 0, "on ops@127.0.0.1:1"),
    Case("run --target URL password", {"runbooks/rb.md": RUNBOOK}, ["run", "rb", "--dry-run", "--target", "ssh://ops:{secret}@127.0.0.1:1"], 2, "unknown target 'ssh://ops:***@127.0.0.1:1'"),
    Case("--limit URL password", {}, ["verify", "--dry-run", "--limit", "ssh://ops:{secret}@127.0.0.1:1"], 2, "--limit 'ssh://ops:***@127.0.0.1:1'"),
    Case("--exclude URL password", {}, ["verify", "--dry-run", "--exclude", "ssh://ops:{secret}@h"], 2, "--exclude 'ssh://ops:***@h'"),
    Case("an unknown id that is a URL with a password", {}, ["verify", "--dry-run", "ssh://ops:{secret}@h"], 2, "no fact with id 'ssh://ops:***@h'"),
    Case("bench --url password", {}, ["bench", "--url", "http://ops:{secret}@127.0.0.1:1", "--requests", "1"], 3, "http://ops:***@127.0.0.1:1: cannot reach the server", isolated=True, max_s=30),
    # --- 2. reads outside: guards for links not tried before (each held) ---
    Case("fact file -> /dev/stdin", {"facts/x.yaml": Link("/dev/stdin")}, "lint", 2, "facts/x.yaml:1: resolves to /"),
    Case("fact file a link loop", {"facts/x.yaml": Link("x.yaml")}, "lint", 2, "facts/x.yaml"),
    Case("redact.yaml -> /proc/self/environ", {"redact.yaml": Link("/proc/self/environ")}, REDACT, 2, "redact.yaml:1: resolves to /proc/"),
    Case("redact.yaml a FIFO", {"redact.yaml": FIFO}, REDACT, 2, "not a regular file", isolated=True, max_s=30),
    Case("milestones.yaml a FIFO", {"milestones.yaml": FIFO}, "lint", 2, "not a regular file", isolated=True, max_s=30),
    Case("inventory dir group_vars folder -> outside", {"inv/hosts.ini": "[x]\nn1\n", "inv/group_vars": Link("{out}/facts"), "targets.yaml": "inventory: inv\ntargets:\n  here: {transport: local}\n"}, "lint", 2, "outside the knowledge base"),
    Case("inventory dir host_vars folder -> outside", {"inv/hosts.ini": "[g]\nx\n", "inv/host_vars": Link("{out}/facts"), "targets.yaml": "inventory: inv\ntargets:\n  here: {transport: local}\n"}, "lint", 2, "outside the knowledge base"),
    Case("ssh config IdentityFile outside, verify --dry-run", {"ssh_config": "Host n1\n  HostName 10.0.0.1\n  IdentityFile {out}/shadow\n", "targets.yaml": "inventory: ssh_config\ntargets:\n  here: {transport: local}\n"}, "verify-dry", 0, "on here"),
    Case("results/runs folder -> outside, show", {"results/runs": Link("{out}/runbooks")}, "show", 0, "hw.gpu.count"),
    Case("results/runs/*.jsonl -> outside, status", {"results/runs/r1.jsonl": Link("{out}/latest.json")}, ["status", "--out", "-"], 0, "# Status"),
    Case("proposals/accepted/x.yaml -> outside, proposals list", {f"proposals/accepted/{PID}.yaml": Link("{out}/proposal.yaml")}, ["proposals", "list"], 0, "0 pending"),
    Case("templates/_macros.j2 a link loop", {"templates/_macros.j2": Link("_macros.j2")}, "status", 2, "templates/_macros.j2"),
    Case("checks/ nested folder -> outside", {"checks/sub": Link("{out}")}, "lint", 0, "ok: 1 facts"),
    Case("runbooks folder -> outside, run --list", {"runbooks": Link("{out}")}, ["run", "--list"], 2, "runbooks/notes.md:1: resolves to {out}/notes.md, outside the knowledge base"),
    Case("runbooks folder -> outside, lint", {"runbooks": Link("{out}")}, "lint", 2, "runbooks/notes.md:1: resolves to {out}/notes.md, outside the knowledge base"),
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


# --- 8. mkdocs build: the plugin's log lines name files of the knowledge base, escaped ---
def test_mkdocs_build_logs_a_hostile_docs_name_as_one_escaped_line(tmp_path: Path) -> None:
    """A real `mkdocs build` over a docs page named as a workflow command and linked
    outside: the plugin's warning is one line, the name escaped (before round 21 it began a
    line `::error file=x::pwned` of the build's log)."""
    import os
    import subprocess
    import sys

    from helpers import REPO
    from test_hostile_kb import SECRET, make_outside, plant

    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(
        root,
        out,
        {
            "mkdocs.yml": "site_name: x\nplugins:\n  - factbook\n",
            "docs/index.md": "# hi\n",
            f"docs/{INJECTED}.md": Link("{out}/shadow"),
        },
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    assert f"factbook: {INJECTED_SHOWN}.md resolves to {out}/shadow" in log, log[-3000:]
    for raw in (*NOT_INJECTED, SECRET):
        assert raw not in log, (raw, log[-3000:])


# --- 7. the passwords of jump hosts in a URL, in run files' argv ---
def test_url_jump_passwords_are_hidden_in_linear_time() -> None:
    import time

    from factbook.judging.sanitize import hide_url_passwords

    cases = {
        "ssh://h:1?jump=ops:PW@j:2": "ssh://h:1?jump=ops:***@j:2",
        "ssh://u:PW@h?jump=a:PW@c,d@e,f:PW:x@i&timeout=3#x": "ssh://u:***@h?jump=a:***@c,d@e,f:***@i&timeout=3#x",
        "ssh://h?jump=ssh://ops:PW@[::1]:2": "ssh://h?jump=ssh://ops:***@[::1]:2",
        "ssh://h?timeout=1&jump=[::1]:22,u:PW@[::1]:2": "ssh://h?timeout=1&jump=[::1]:22,u:***@[::1]:2",
        "x jump=a:b@c": "x jump=a:b@c",  # no URL: not a jump host
        "ssh://h?jump=j a?jump=b:c@d": "ssh://h?jump=j a?jump=b:c@d",  # another word
    }
    for text, want in cases.items():
        assert hide_url_passwords(text) == want, text
    for word in ("a?jump=" * 25_000, "ssh://?jump=" + "a:b@," * 30_000, "ssh:// ?jump=" * 20_000):
        started = time.process_time()
        hide_url_passwords(word)
        assert time.process_time() - started < 0.5


# --- 2. factbook.yaml and the inventories it names are files of the knowledge base ---
MCP_SETTINGS_CASES = {
    "factbook.yaml linked outside": (
        {"factbook.yaml": Link("{out}/inventory.ini")},
        "factbook.yaml:1: resolves to {out}/inventory.ini, outside the knowledge base",
    ),
    "mcp.inventories: a link out": (
        {
            "factbook.yaml": "mcp: {inventories: [inv.ini]}\n",
            "inv.ini": Link("{out}/inventory.ini"),
        },
        "factbook.yaml:1: path 'inv.ini' resolves to {out}/inventory.ini, outside",
    ),
    "mcp.inventories: a folder linked out": (
        {"factbook.yaml": "mcp: {inventories: [inv]}\n", "inv": Link("{out}")},
        "factbook.yaml:1: path 'inv' resolves to {out}, outside",
    ),
}


@pytest.mark.parametrize("name", list(MCP_SETTINGS_CASES))
def test_mcp_settings_are_read_inside_the_knowledge_base(name: str, tmp_path: Path) -> None:
    """`factbook mcp` refuses a factbook.yaml that leads outside with its one line (it was
    read wherever its link led), and names a linked inventory by where it leads (it said
    "names may not hold '/' or '..'" of `inv.ini`)."""
    import os
    import subprocess
    import sys

    from helpers import REPO, module_or_skip
    from test_hostile_kb import SECRET, make_outside, plant

    module_or_skip("mcp", reason="the mcp extra is not installed")
    files, said = MCP_SETTINGS_CASES[name]
    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, files)
    done = subprocess.run(
        [sys.executable, "-m", "factbook", "mcp", "--root", str(root)],
        input=b"",
        capture_output=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    text = (done.stdout + done.stderr).decode()
    assert done.returncode == 2 and said.replace("{out}", str(out)) in text, text[-2000:]
    assert SECRET not in text and "Traceback" not in text, text[-2000:]


def test_mcp_inventories_include_nothing_from_outside(tmp_path: Path) -> None:
    """factbook.yaml's `mcp.inventories` naming an ssh config that includes a file outside:
    verify_facts refuses the include with its line. Before round 21 these were read as the
    user's own `--inventory` files (unconfined), and the outside file's host names came back
    in verify_facts' list of known targets."""
    import json

    from helpers import module_or_skip
    from test_hostile_kb import SECRET, make_outside, plant

    module_or_skip("mcp", reason="the mcp extra is not installed")
    from test_mcp_stdio import Wire

    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    (out / "hosts.conf").write_text(f"Host {SECRET}\n  HostName 10.9.9.9\n")
    plant(
        root,
        out,
        {
            "factbook.yaml": "mcp: {inventories: [ssh.conf]}\n",
            "ssh.conf": "Include {out}/hosts.conf\nHost n1\n  HostName 10.0.0.1\n",
        },
    )
    server = Wire(root)
    try:
        server.initialize()
        arguments = {"facts": ["hw.gpu.count"], "target": "nosuch"}
        server.request(1, "tools/call", {"name": "verify_facts", "arguments": arguments})
        answer = json.dumps(server.answer())
    finally:
        server.close()
    assert SECRET not in answer, answer
    assert f"ssh.conf:1: Include {out}/hosts.conf: resolves to {out}/hosts.conf" in answer, answer


@pytest.mark.parametrize(
    "argv",
    [
        ["verify", "--format", "ssh://ops:{secret}@127.0.0.1"],  # argparse's invalid choice
        ["status", "ssh://ops:{secret}@127.0.0.1"],  # unrecognized arguments
        ["list", "--category", "ssh://ops:{secret}@h\u202e"],
    ],
)
def test_argparse_errors_hide_url_passwords(argv: list[str], tmp_path: Path) -> None:
    """argparse's own error lines quote what was typed: a URL's password is `***` there as
    in every other error line, and a bidi control is escaped."""
    import subprocess
    import sys

    secret = "pw-" + "7" * 12
    done = subprocess.run(
        [sys.executable, "-m", "factbook", "--root", str(tmp_path), *(a.format(secret=secret) for a in argv)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert secret not in done.stderr and "ops:***@" in done.stderr, done.stderr
    assert "\u202e" not in done.stderr
