# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile input, round 24 (issue 25, "Hardening III"): the YAML type zoo in every YAML file
factbook reads, `factbook mcp` as a real stdio server under hostile arguments and raw
JSON-RPC, concurrent and interrupted writers, and files swapped for links while being read.

What was tried:
- 6/8 (the YAML type zoo), 250 inputs, each under lint, list, show, status (plain,
  --redact, --budget), docs, verify --dry-run, export-ansible, completion and list --as-of:
  merge keys (`<<: {..}`, `<<: [..]`, of a scalar, at a fact's level, through aliases in an
  inventory), `!!binary`, `!!timestamp` and bare dates and times (out of range, a bad
  offset), `!!set`, `!!omap`, `!!pairs`, `!!seq`/`!!map` on the wrong node, `!!str` on a
  mapping, `!!int`/`!!float`/`!!bool`/`!!null` of junk, `!!merge`/`!!value`/`!!yaml`, local
  tags, `%TAG` and `%YAML` directives, complex keys, null/bool/int/float/date/bytes keys,
  duplicate keys, keys equal after NFC, `~`, `017`, `0o17`, `1:30`, `.nan`, `.inf`, `1e999`,
  100,000-character anchors and tags, document streams, `...`, BOMs first and in the middle,
  tabs; in fact files (id, title, statement, value, unit, tags, since, sources, links, check
  args, expect operators, timeout), targets.yaml (names, host, user, port, jump, env, vars,
  groups, inventory), milestones.yaml, redact.yaml, factbook.yaml, Ansible YAML inventories,
  group_vars and host_vars, runbook front matter and results/latest.json (NaN, Infinity,
  1e999999, duplicate keys, 5,000 digits, 100,000 deep, lone surrogates, a BOM).
- 2/6/9 (`factbook mcp`, raw JSON-RPC over its pipes): each of the eight tools with each
  parameter (and one unknown) set to a list, an object, null, 10**400, a float, a bool,
  `../../outside/shadow`, a NUL, 100 kB, -1, "" and 900 nested lists (432 calls); invalid
  UTF-8, NaN/Infinity/1e999 literals, 5,000-digit numbers, batches, ids that are objects,
  floats, bools, null, 100 kB strings, 10,000- and 100,000-deep arrays, a BOM, a NUL, blank
  lines, responses and cancellations from the client, bogus notifications, a second
  initialize, traversal in resource URIs, a 100 MB line; 40 proposals pipelined at once.
- 3/4 (writers): two `import --write` at once (x3), `verify --record` x3 during an
  `import --write`, SIGKILL, SIGTERM and SIGINT at random points of `import --write` (x6
  each), then lint and the next import.
- 2/5 (TOCTOU): a fact file and milestones.yaml swapped for a link to a secret outside, and
  back, in a loop, while lint, list, show, status, export-ansible and docs ran (60 s).

What was found (before -> after):
1. 2 (TOCTOU): every reader checked where a path leads, then opened it: a fact file swapped
   for a link to /etc/shadow in between was read and its first line echoed (`unknown key
   'root:...'`) by lint, docs and export-ansible: 7 of 288 runs under the swapping loop.
   Now kbfiles.open_checked opens first (without blocking: a FIFO swapped in is refused, not
   waited on), then asks the kernel where the file opened is (/proc/self/fd; elsewhere:
   where the path leads now and that lstat finds the file opened): 0 of 354 runs, 0 of
   3,000 reads x 4 runs in the test below. A first version compared against os.stat of the
   resolved path, which follows a link swapped back in: it still leaked under -n 2. Both
   read_text_bounded (every YAML file) and read_bytes/read_head use it; realpath's own race
   (readlink of a link just swapped for a file: EINVAL) is one located line, not an error
   out of the command.
2. 6/7/8 (a wrong value silently accepted): YAML 1.1 reads plain `017` as 15 and `1:30` as
   90, `12:30:00` as 45000. A fact's `value: 12:30` listed as 750, a milestone `id: 017`
   became 15 (`unknown milestone '017' (known: 15)`), a redact.yaml secret `01234567` was
   looked for as 342391 and the real one left in the dump (class 7), a target's env `017`
   was exported as 15. Now yamlsrc refuses such a plain number at its line (`quote it
   ('017') or write 15`), in every file it reads (Ansible inventories keep Ansible's YAML).
3. 6/8: `regex: yes`, `version: 2.10` in an expectation were `str()`ed into the patterns
   `True` and `2.1`, silently; now `expected a string, got 2.1 (quote it)`.
4. 6/8: a name in a mapping of names that is not a string (`targets: {1: .., ~: .., yes:
   .., 2026-12-07: ..}`) made targets named '1', 'None', 'True'; now `targets: key null is
   read as null, not a name (quote it)`.
5. 9 (MCP): a request whose id is an object, a float, a bool or null validated as a
   notification and was dropped unanswered: the client waited for ever (20 s timeouts
   here). Now an Invalid Request error (id null), the server goes on.
6. 4 (MCP): tool calls run in threads; 40 pipelined proposals with mcp.write_facts on: 32
   refused (`facts/good.yaml: changed while importing; nothing written, run again`), as the
   guard against other writers met the server's own. Now one server writes one at a time:
   40 of 40 written, lint clean.
7. `targets.yaml: inventory: 2026-12-07` (or a bool, a float) was a TypeError traceback out of
   every command (knowledge/fleet/load.py iterated `inventory:` whatever its type); now the
   schema's line alone (applied from the round's report).

Counts: 188 table cases and 12 plain tests. Against round 23's
sources, 43 failed: 21 YAML 1.1 number cases (lint and export-ansible of each input, the
redact.yaml secret), 7 expectation cases, 7 name cases, the 5 MCP ids, the pipelined writes,
the swap race and the FIFO one (open_checked is new); the other 154 held. The scratch
sweeps behind them: ~250 zoo inputs x 11 commands, 432 MCP tool calls and 45 raw messages, 9 concurrent and 18 interrupted imports,
354 commands under the swapping loop.
Held (guards here): every other zoo input (no traceback, one located line; dates, bools,
nulls, nan and bytes where a string is expected are refused by lint; merge keys, tags,
complex keys, streams, directives, tabs, mid-file BOMs refused at their line); the 432 tool
calls and the other raw messages (a JSON-RPC or tool error each, no traceback on stderr);
the concurrent and interrupted writers (every file lints after, no `.tmp` left, the next
import writes); `0o17`, `0x1f`, `1_000` (read as YAML 1.1 and 1.2 agree, or as a string).

dumps/capture/propose.py said "changed while importing" for an MCP or proposals write too,
naming the file by its absolute path; now `facts/x.yaml: changed since it was read`.

Not fixed here: runbook front
matter and cell options are read by jupytext (YAML 1.1: `step_timeout: 1:30` is 90), which
yamlsrc's number check does not see.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from test_hostile_kb import (
    BASE,
    SECRET,
    Case,
    _in_process,
    make_outside,
    plant,
    run_case,
)

G = BASE["facts/good.yaml"]
T = "targets:\n  here: {transport: local}\n"
INV = "inventory: inv.yml\n" + T
RUNBOOK_FM = "---\njupytext:\n  text_representation: {format_name: myst}\nFM---\n# A runbook\n\n```{code-cell} python\n:name: hello\nprint('hi')\n```\n"


def fact(old: str, new: str) -> dict[str, str]:
    """The base fact file with `old` replaced by `new`."""
    assert old in G
    return {"facts/good.yaml": G.replace(old, new)}


def expect(expectation: str) -> dict[str, str]:
    """The base fact's check with `expect: EXPECTATION`."""
    return fact("expect: {exists: true}", f"expect: {expectation}")


def target_key(key: str) -> dict[str, str]:
    return {"targets.yaml": T + f"  {key}: {{host: h.invalid}}\n"}


def milestone(mid: str) -> dict[str, str]:
    return {"milestones.yaml": f"milestones:\n  - {{id: {mid}, title: first}}\n"}


def runbook(front: str) -> dict[str, str]:
    return {"runbooks/rb.md": RUNBOOK_FM.replace("FM", front)}


READERS = ("lint", "list", "show", "status", "export-ansible")

# fmt: off
CASES: list[Case] = [
    # --- 6/7/8. YAML 1.1 numbers that read as another than they show: silently 750, 15, 342391 ---
    *[Case(f"YAML 1.1 {name}, {cmd}", files, cmd, code if cmd == "lint" else {"list": 0, "show": 0, "status": 0, "export-ansible": 2}[cmd], frag if cmd == "lint" else "")
      for name, files, code, frag in (
          ("base 60 fact value 12:30", fact("value: 8", "value: 12:30"), 2, "facts/good.yaml:6: invalid value: 12:30 is read as the number 750 (YAML 1.1 base 60); quote it ('12:30') or write 750"),
          ("base 60 fact value 12:30:00", fact("value: 8", "value: 12:30:00"), 2, "is read as the number 45000 (YAML 1.1 base 60)"),
          ("base 60 float -1:30.5", fact("value: 8", "value: -1:30.5"), 2, "-1:30.5 is read as the number -90.5"),
          ("octal fact value 017", fact("value: 8", "value: 017"), 2, "facts/good.yaml:6: invalid value: 017 is read as the number 15 (YAML 1.1 octal); quote it ('017') or write 15"),
          ("octal milestone id", milestone("017"), 2, "milestones.yaml:2: invalid value: 017 is read as the number 15"),
          ("base 60 milestone id", milestone("1:30"), 2, "milestones.yaml:2: invalid value: 1:30 is read as the number 90"),
          ("octal target env", {"targets.yaml": T + "  box: {host: h.invalid, env: {A: 017}}\n"}, 2, "targets.yaml:3: invalid value: 017 is read as the number 15"),
          ("octal regex", expect("{regex: 017}"), 2, "facts/good.yaml:10: invalid value: 017 is read as the number 15"),
          ("explicit !!int octal", fact("value: 8", "value: !!int 017"), 2, "017 is read as the number 15"),
          ("octal check timeout", fact("expect: {exists: true}}", "expect: {exists: true}, timeout: 010}"), 2, "010 is read as the number 8"),
      ) for cmd in READERS],
    Case("YAML 1.1 octal secret in redact.yaml: refused, not looked for as 342391", {"redact.yaml": "secrets: [01234567]\n", "facts/x.yaml": G.replace("hw.gpu.count", "hw.x").replace("The box has 8 GPUs.", "'the pin is 01234567'")}, ["status", "--redact", "--out", "-"], 2, "redact.yaml:1: invalid value: 01234567 is read as the number 342391", absent=("the pin is 01234567",)),
    Case("YAML 1.1 base 60 milestone id, list --as-of", milestone("1:30"), ["list", "--as-of", "1:30"], 2, "unknown milestone"),
    # ... held (guards): forms YAML 1.1 and 1.2 read alike, or read as strings; quoted forms
    *[Case(f"YAML number {text} held", fact("value: 8", f"value: {text}"), "lint", 0, "ok: 1 facts")
      for text in ("0o17", "0x1f", "1_000", "0", "-0.0", "10", "1.5", "'017'", "\"12:30\"", "1e999", "12:30:61")],
    # --- 6/8. an expectation's regex or version made text by str(): `2.10` was the pattern 2.1 ---
    *[Case(f"expect {e} not a string", expect(e), "lint", 2, f"expected a string, got {got} (quote it)")
      for e, got in (("{version: 2.10}", "2.1"), ("{regex: yes}", "True"), ("{version: 12}", "12"), ("{regex: 1.5}", "1.5"), ("{regex: [a]}", "['a']"), ("{version: ~}", "None"), ("{regex: false}", "False"))],
    *[Case(f"expect {e} held", expect(e), "lint", 0, "ok: 1 facts") for e in ("{version: '2.10'}", "{regex: 'yes'}", "{version: '>=12'}")],
    # --- 6/8. a name that is not a string: targets '1', 'None', 'True', 'inf', '2026-12-07' ---
    *[Case(f"targets.yaml: target named {key}", target_key(key), "lint", 2, f"targets.yaml:3: targets: key {shown} is read as {kind}, not a name (quote it)")
      for key, shown, kind in (("1", "1", "integer"), ("~", "null", "null"), ("yes", "true", "boolean"), (".inf", "inf", "inf"), ("2026-12-07", "2026-12-07", "date"))],
    Case("targets.yaml: target named 1:30", target_key("1:30"), "lint", 2, "targets.yaml:3: invalid value: 1:30 is read as the number 90"),
    *[Case(f"targets.yaml: target named {key}, {cmd}", target_key(key), cmd, 0, "") for key in ("~", "yes") for cmd in ("list", "status")],
    Case("targets.yaml: group named null", {"targets.yaml": T + "groups:\n  ~: {targets: [here]}\n"}, "lint", 2, "groups: key null is read as null, not a name (quote it)"),
    Case("targets.yaml: target named '1' held", target_key("'1'"), "lint", 0, "ok: 1 facts"),
    # --- held (guards): the rest of the zoo, one located line each ---
    *[Case(f"zoo fact {name}", files, "lint", 2, frag) for name, files, frag in (
        ("title a date", fact("title: GPU count", "title: 2026-12-07"), "facts/good.yaml:4: fact 'hw.gpu.count': title: expected string, got date"),
        ("title a time", fact("title: GPU count", "title: 2026-12-07T10:00:00Z"), "title: expected string, got datetime"),
        ("title yes", fact("title: GPU count", "title: yes"), "title: expected string, got boolean"),
        ("title ~", fact("title: GPU count", "title: ~"), "title: expected string, got null"),
        ("title .nan", fact("title: GPU count", "title: .nan"), "title: expected string, got nan"),
        ("title !!binary", fact("title: GPU count", "title: !!binary aGk="), "title: expected string, got bytes"),
        ("title !!set", fact("title: GPU count", "title: !!set {a}"), "could not determine a constructor for the tag 'tag:yaml.org,2002:set'"),
        ("title !!omap", fact("title: GPU count", "title: !!omap [{a: 1}]"), "tag:yaml.org,2002:omap"),
        ("title !!pairs", fact("title: GPU count", "title: !!pairs [{a: 1}]"), "tag:yaml.org,2002:pairs"),
        ("title !!str on a mapping", fact("title: GPU count", "title: !!str {a: 1}"), "facts/good.yaml:4:"),
        ("title !!int of junk", fact("title: GPU count", "title: !!int xyz"), "facts/good.yaml:4: invalid value:"),
        ("title !!merge", fact("title: GPU count", "title: !!merge x"), "facts/good.yaml:4:"),
        ("title a local tag", fact("title: GPU count", "title: !local x"), "could not determine a constructor for the tag '!local'"),
        ("id a date", fact("id: hw.gpu.count", "id: 2026-12-07"), "facts/good.yaml:2: id: expected string, got date"),
        ("id .inf", fact("id: hw.gpu.count", "id: .inf"), "id: expected string, got inf"),
        ("value a date", fact("value: 8", "value: 2026-12-07"), "value: unsupported value of type date (quote it)"),
        ("value .nan", fact("value: 8", "value: .nan"), "value: unsupported value of type nan"),
        ("value keys typed", fact("value: 8", "value: {1: x, null: y, true: z}"), "facts/good.yaml:6:"),
        ("value merge inline", fact("value: 8", "value: {<<: {a: 1}, b: 2}"), "facts/good.yaml:6:"),
        ("value merge of a scalar", fact("value: 8", "value: {<<: 5, c: 3}"), "facts/good.yaml:6:"),
        ("merge at a fact's level", fact("    title: GPU count\n", "    <<: {title: GPU count}\n"), "missing required key 'title'"),
        ("merge by alias", fact("value: 8", "value: &a {x: 1}\n    unit: {<<: *a}"), "YAML alias '*a' is not allowed here"),
        ("a complex key", fact("value: 8", "value:\n      ? [a, b]\n      : 1"), "facts/good.yaml:7: mapping keys must be scalars"),
        ("a duplicate key", fact("value: 8", "value: 8\n    value: 9"), "facts/good.yaml:7: duplicate key 'value'"),
        ("a key null", fact("    title: GPU count\n", "    title: GPU count\n    null: x\n"), "unknown key 'null'"),
        ("tags typed", {"facts/good.yaml": G + "    tags: [2026-12-07, yes, ~]\n"}, "tags[0]: expected string, got date"),
        ("tags !!set", {"facts/good.yaml": G + "    tags: !!set {a, b}\n"}, "tag:yaml.org,2002:set"),
        ("since a date", {"facts/good.yaml": G + "    since: 2026-12-07\n"}, "since: expected string or integer or null, got date"),
        ("check timeout .nan", fact("expect: {exists: true}}", "expect: {exists: true}, timeout: .nan}"), "check.timeout: expected number, got nan"),
        ("check args !!binary", fact("args: {name: HOME}", "args: {name: !!binary aGk=}"), "check.args: unsupported value of type bytes"),
        ("two documents", {"facts/good.yaml": G + "---\nfacts: []\n"}, "facts/good.yaml:11: more than one YAML document in this file"),
        ("... then a document", {"facts/good.yaml": G + "...\n---\n"}, "more than one YAML document"),
        ("a BOM mid-file", {"facts/good.yaml": G.replace("    title", "\ufeff    title")}, "facts/good.yaml:5: YAML syntax error"),
        ("a tab indent", {"facts/good.yaml": G.replace("    title", "\ttitle")}, "facts/good.yaml:4: YAML syntax error: found character '\\t'"),
        ("a 100,000-character tag", fact("value: 8", "value: !" + "a" * 100_000 + " 8"), "could not determine a constructor for the tag '!aaaa"),
        ("%TAG to !!set", {"facts/good.yaml": "%TAG !e! tag:yaml.org,2002:\n---\n" + G.replace("value: 8", "value: !e!set {a}")}, "tag:yaml.org,2002:set"),
        ("%YAML 9.9", {"facts/good.yaml": "%YAML 9.9\n---\n" + G}, "facts/good.yaml:1: YAML syntax error: found incompatible YAML document"),
        ("a timestamp of year 0", fact("value: 8", "value: 0000-01-01"), "facts/good.yaml:6: invalid value: year 0 is out of range"),
        ("a timestamp of 31 February", fact("value: 8", "value: 2026-02-31"), "invalid value: day is out of range for month"),
        ("facts: !!omap", {"facts/good.yaml": "facts: !!omap [{a: 1}]\n"}, "tag:yaml.org,2002:omap"),
        ("the top a date", {"facts/good.yaml": "2026-12-07\n"}, "top level: expected mapping, got date"),
    )],
    *[Case(f"zoo fact {name} held", files, "lint", 0, "ok: 1 facts") for name, files in (
        ("a BOM first", {"facts/good.yaml": "\ufeff" + G}),
        ("... at the end", {"facts/good.yaml": G + "...\n"}),
        ("%YAML 1.1", {"facts/good.yaml": "%YAML 1.1\n---\n" + G}),
        ("a 100,000-character anchor unused", fact("value: 8", "value: &" + "a" * 100_000 + " 8")),
        ("value keys equal after NFC", fact("value: 8", 'value: {"caf\\u00e9": 1, "cafe\\u0301": 2}')),
    )],
    *[Case(f"zoo targets.yaml {name}", {"targets.yaml": text}, "lint", 2, frag) for name, text, frag in (
        ("user yes", T + "  box: {host: h, user: yes}\n", "targets.box.user: expected string, got boolean"),
        ("port a date", T + "  box: {host: h, port: 2026-12-07}\n", "targets.box.port: expected integer, got date"),
        ("port .nan", T + "  box: {host: h, port: .nan}\n", "targets.box.port: expected integer, got nan"),
        ("env a date", T + "  box: {host: h, env: {A: 2026-01-01}}\n", "targets.box.env.A: expected string or integer or number or boolean, got date"),
        ("vars !!binary", T + "  box: {host: h, vars: {a: !!binary aGk=}}\n", "targets.box.vars: unsupported value of type bytes"),
        ("merge", T + "  box: {<<: {host: h}, user: u}\n", "targets.yaml:3: invalid value: could not determine a constructor for the tag 'tag:yaml.org,2002:merge'"),
        ("groups !!set", T + "groups: !!set {a}\n", "tag:yaml.org,2002:set"),
        ("inventory !!binary", "inventory: !!binary aGk=\n" + T, "targets.yaml:1: inventory: expected string or list, got bytes"),
        ("inventory [1, yes]", "inventory: [1, yes]\n" + T, "targets.yaml:1: inventory[0]: expected string, got integer"),
    )],
    *[Case(f"zoo milestones.yaml {name}", {"milestones.yaml": text}, "lint", 2, frag) for name, text, frag in (
        ("id a date", "milestones:\n  - {id: 2026-12-07, title: first}\n", "milestones[0].id: expected string or integer, got date"),
        ("id yes", "milestones:\n  - {id: yes, title: first}\n", "milestones[0].id: expected string or integer, got boolean"),
        ("date a datetime", "milestones:\n  - {id: '1', title: t, date: 2026-12-07T10:00:00Z}\n", "milestones[0].date: expected string, got datetime"),
        ("!!set", "milestones: !!set {a}\n", "tag:yaml.org,2002:set"),
        ("merge", "milestones:\n  - {<<: {id: '1'}, title: t}\n", "tag:yaml.org,2002:merge"),
        ("'1' and 1", "milestones:\n  - {id: '1', title: t}\n  - {id: 1, title: u}\n", "milestones.yaml:3: duplicate milestone '1'"),
    )],
    *[Case(f"zoo redact.yaml {name}", {"redact.yaml": text}, ["status", "--redact", "--out", "-"], 2, frag) for name, text, frag in (
        ("patterns typed", "patterns: ['x+', 2026-12-07]\n", "redact.yaml:1: patterns[1] must be a string"),
        ("hosts typed", "hosts: [a.example, yes]\n", "redact.yaml:1: hosts[1] must be a string"),
        ("!!set", "secrets: !!set {abc}\n", "redact.yaml:1: invalid value: could not determine a constructor for the tag 'tag:yaml.org,2002:set'"),
        ("merge", "<<: {secrets: [abcd]}\n", "tag:yaml.org,2002:merge"),
        ("a key 1", "1: [abcd]\n", "redact.yaml:1: unknown key '1'"),
        ("two documents", "secrets: [abcd]\n---\nsecrets: [efgh]\n", "redact.yaml:2: more than one YAML document"),
        ("the top a date", "2026-12-07\n", "redact.yaml:1: expected a mapping with secrets, patterns, hosts, users lists"),
    )],
    *[Case(f"zoo inventory {name}", {"targets.yaml": INV, "inv.yml": text}, cmd, code, frag) for name, text, cmd, code, frag in (
        ("host named a date", "all:\n  hosts:\n    2026-12-07:\n", "lint", 2, "host pattern datetime.date(2026, 12, 7) must be a string (quote numbers in YAML inventories)"),
        ("host named null", "all:\n  hosts:\n    ~:\n", "lint", 2, "host pattern None must be a string"),
        ("hosts !!set", "all:\n  hosts: !!set {a, b}\n", "lint", 2, "'hosts' must be a mapping, not a set"),
        ("merge of a scalar", "x: &x 5\nall:\n  hosts:\n    n1:\n      <<: *x\n", "lint", 2, "expected a mapping or list of mappings for merging, but found scalar"),
        ("a complex key", "all:\n  hosts:\n    ? [a, b]\n    : {}\n", "lint", 2, "found unhashable key"),
        ("two documents", "all:\n  hosts: {n1: }\n---\nall:\n  hosts: {n2: }\n", "lint", 2, "more than one YAML document"),
        ("port !!binary", "all:\n  hosts:\n    n1: {ansible_port: !!binary aGk=}\n", "lint", 2, "port \"b'hi'\" is not a number from 1 to 65535"),
        ("merge by aliases", "x: &x {ansible_host: 10.0.0.1}\ny: &y {ansible_port: 22}\nall:\n  hosts:\n    n1:\n      <<: [*x, *y]\n", "lint", 0, "ok: 1 facts"),
        ("a 200,000-character anchor", "x: &" + "a" * 200_000 + " {ansible_port: 22}\nall:\n  hosts:\n    n1: *" + "a" * 200_000 + "\n", "lint", 0, "ok: 1 facts"),
    )],
    *[Case(f"zoo group_vars {name}", {"targets.yaml": INV, "inv.yml": "all:\n  hosts: {n1: }\n", "group_vars/all.yml": text}, "lint", code, frag) for name, text, code, frag in (
        ("a list", "- a\n", 2, "group_vars/all.yml"),
        ("two documents", "a: 1\n---\nb: 2\n", 2, "more than one YAML document"),
    )],
    *[Case(f"zoo runbook front matter {name}", runbook(front), "lint", code, frag) for name, front, code, frag in (
        ("target a date", "factbook: {target: 2026-12-07}\n", 2, "runbooks/rb.md"),
        ("factbook !!set", "factbook: !!set {a}\n", 2, "runbooks/rb.md"),
        ("target !!binary", "factbook: {target: !!binary aGk=}\n", 2, "runbooks/rb.md"),
        ("a merge, resolved as jupytext reads it", "factbook: {<<: {target: here}}\n", 0, "ok: 1 facts"),
    )],
    *[Case(f"zoo factbook.yaml {name}, mcp settings read by lint", {"factbook.yaml": text}, "lint", 0, "ok: 1 facts") for name, text in (
        ("keys typed", "1: a\n~: b\n"), ("!!binary", "x: !!binary aGk=\n"))],
    *[Case(f"zoo latest.json {name}, {cmd}", {"results/latest.json": text}, cmd, code, frag) for name, text in (
        ("NaN", '{"hw.gpu.count": {"here": {"fact": "hw.gpu.count", "target": "here", "status": "pass", "observed": NaN}}}'),
        ("Infinity", '{"hw.gpu.count": {"here": {"fact": "hw.gpu.count", "target": "here", "status": "pass", "duration_s": -Infinity}}}'),
        ("duplicate keys", '{"hw.gpu.count": {"here": {"status": "pass"}, "here": {"status": "drift"}}}'),
        ("5,000 digits", '{"hw.gpu.count": {"here": {"observed": ' + "9" * 5000 + "}}}"),
        ("100,000 deep", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        ("a BOM mid-file", '{"a":\ufeff 1}'),
      ) for cmd, code, frag in (("lint", 2, "results/latest.json:1:"), ("show", 2, "results/latest.json:1:"), ("status", 2, "results/latest.json:1:"))],
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round24(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("value", ["2026-12-07", "true", "1.5"])
def test_an_inventory_that_is_not_a_list_is_one_line(tmp_path: Path, value: str) -> None:
    """`inventory: true` in targets.yaml: a TypeError traceback out of lint, list, status
    (every command), exit 1; schema.validate has already named it at its line. (`017` and
    `1:30` are refused by yamlsrc now, which leaves no value to iterate.)"""
    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, {"targets.yaml": f"inventory: {value}\n" + T})
    try:
        code, output, _ = _in_process(["--root", str(root), "lint"], 30)
    except TypeError as exc:
        pytest.fail(f"a traceback: {exc!r}")
    assert code == 2 and "targets.yaml:1: inventory" in output, output


def test_a_fact_file_swapped_for_a_link_out_while_read_is_never_echoed(tmp_path: Path) -> None:
    """A thread swaps facts/x.yaml for a link to a secret outside and back, as fast as it
    can, while the reader every command uses reads it 3,000 times: the check of where the
    path led, then the open, let 7 of 288 whole commands read the secret and echo it
    (`unknown key 'root:...'`). Now each read is the file inside, or refused by name."""
    from factbook.knowledge.kbfiles import confined
    from factbook.knowledge.yamlsrc import read_text_bounded

    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    target = root / "facts" / "x.yaml"
    plant(root, out, {"facts/x.yaml": "facts: []\n"})
    stop = threading.Event()
    flips = [0]

    def flip() -> None:
        link, real = target.with_name(".l"), target.with_name(".f")
        while not stop.is_set():
            link.unlink(missing_ok=True)
            link.symlink_to(out / "shadow")
            link.replace(target)
            real.write_text("facts: []\n")
            real.replace(target)
            flips[0] += 1

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    said: dict[str, int] = {}
    try:
        with confined(root):
            reads, give_up = 0, time.monotonic() + 60
            # a loaded box starves the flipper of the GIL: read on until it has flipped enough
            while (reads < 3000 or flips[0] <= 100) and time.monotonic() < give_up:
                reads += 1
                if reads % 16 == 0:
                    time.sleep(0)
                text, problem = read_text_bounded(target, "facts/x.yaml")
                assert SECRET not in text
                key = text if problem is None else problem.message.split(",")[0][:40]
                said[key] = said.get(key, 0) + 1
    finally:
        stop.set()
        thread.join()
    assert flips[0] > 100, flips
    assert said.get("facts: []\n", 0) > 0, said


def test_a_fifo_swapped_in_after_the_check_is_refused_not_waited_on(tmp_path: Path) -> None:
    """The open that follows the checks does not block: a FIFO put where a regular file was
    checked is `not a regular file`, not a read that waits for a writer for ever."""
    import os

    from factbook.knowledge.kbfiles import Refused, confined, open_checked

    root = tmp_path / "kb"
    root.mkdir()
    pipe = root / "x.yaml"
    os.mkfifo(pipe)
    with confined(root):
        fd, st = open_checked(pipe)  # returns at once
    os.close(fd)
    import stat

    assert stat.S_ISFIFO(st.st_mode)
    link = root / "out.yaml"
    link.symlink_to(tmp_path)
    with confined(root), pytest.raises(Refused, match="outside the knowledge base"):
        open_checked(link)


def _mcp(tmp_path: Path, settings: str = "") -> object:
    from test_mcp_stdio import Wire

    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, {"factbook.yaml": settings} if settings else {})
    server = Wire(root)
    server.initialize()
    return server


@pytest.mark.parametrize("ident", ['{"a": 1}', "1.5", "true", "null", "[1]"])
def test_mcp_a_request_whose_id_is_no_id_is_answered(tmp_path: Path, ident: str) -> None:
    """`{"id": {"a": 1}, "method": "tools/list"}` validated as a notification and was dropped
    unanswered: the client waited for ever. Now an Invalid Request error, id null."""
    server = _mcp(tmp_path)
    try:
        server.send(f'{{"jsonrpc":"2.0","id":{ident},"method":"tools/list"}}\n'.encode())  # type: ignore[attr-defined]
        answer = server.answer(timeout=20)  # type: ignore[attr-defined]
        assert answer["id"] is None and answer["error"]["code"] == -32600, answer
        assert "id: a string or an integer" in answer["error"]["message"]
        server.ping(7)  # type: ignore[attr-defined]
    finally:
        server.close()  # type: ignore[attr-defined]


def test_mcp_pipelined_writes_of_one_fact_file_all_land(tmp_path: Path) -> None:
    """20 propose_change of one fact and 20 propose_fact into its file, sent at once with
    mcp.write_facts on: 32 of 40 came back `changed while importing; run again` (the
    server's threads met their own guard). Now all 40 are written and the file lints."""
    server = _mcp(tmp_path, "mcp:\n  write_facts: true\n")
    root = tmp_path / "kb"
    try:
        for i in range(20):
            for n, (name, args) in enumerate(
                (
                    ("propose_change", {"id": "hw.gpu.count", "reason": f"r{i}", "value": i}),
                    (
                        "propose_fact",
                        {
                            "id": f"hw.new{i}",
                            "category": "hardware",
                            "title": "T",
                            "statement": "S.",
                            "reason": "r",
                        },
                    ),
                )
            ):
                message = {
                    "jsonrpc": "2.0",
                    "id": 100 + 2 * i + n,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": args},
                }
                server.send(json.dumps(message).encode() + b"\n")  # type: ignore[attr-defined]
        answers = [server.answer(timeout=60) for _ in range(40)]  # type: ignore[attr-defined]
    finally:
        server.close()  # type: ignore[attr-defined]
    refused = [a["result"]["content"][0]["text"] for a in answers if a["result"].get("isError")]
    assert refused == [], refused[:3]
    code, output, _ = _in_process(["--root", str(root), "lint"], 60)
    assert code == 0 and "ok: 21 facts" in output, output
    assert not list(root.rglob("*.tmp"))
