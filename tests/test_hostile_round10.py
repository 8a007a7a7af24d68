# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile input, round 10 (issue 25, "Hardening III"): new classes of input from whoever can
write the knowledge base or hand a user a file (inventories, ssh configs, dumps, proposals,
run records, benchmark files, MCP requests), in the table form of tests/test_hostile_kb.py and
checked by its `run_case` (no traceback, no file outside touched, no payload run), plus plain
tests where a property needs its own driver.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_kb import Case, run_case
from test_hostile_round9 import record

INVENTORY = "inventory: FILE\ntargets:\n  here: {transport: local}\n"


def inventory_yaml(var: str, name: str = "inv.yml") -> dict[str, str | bytes]:
    """A YAML inventory (or `.json`, read as YAML when JSON refuses it) whose one host has
    the variable `x: VAR` (VAR as YAML text)."""
    return {
        name: f"all:\n  hosts:\n    n1:\n      {var}\n",
        "targets.yaml": INVENTORY.replace("FILE", name),
    }


DOCS = ["docs", "--out", "_site_md"]
CONFIG_FACT = "facts:\n  - id: sw.c\n    category: software\n    title: C\n    statement: S.\n    status: assumed\n    target: here\n    sources: [{seed: a.txt}]\n    check: {probe: config.value, args: {path: PATH}, expect: {exists: true}}\n"
LONE = "\\ud800"  # JSON's spelling of a lone surrogate: valid JSON, no UTF-8 writer takes it


RUN_FILE = '{"run": {"id": "r1LONE", "started": "2026LONE", "argv": ["LONE"]}}\n{"fact": "hw.gpu.count", "target": "hereLONE", "outcome": "pass", "probe": "measure.xLONE", "observed": "LONE", "time": "LONE"}\n'.replace(
    "LONE", LONE
)

# fmt: off
CASES: list[Case] = [
    # PyYAML's scalar constructors raise plain Python errors, not YAMLError: an inventory's value each was a traceback in every command reading targets
    Case("inventory YAML: an integer of 5,000 digits", inventory_yaml("x: " + "9" * 5000), "lint", 2, "inv.yml:4: not valid YAML: invalid value: Exceeds the limit (4300 digits)", absent=("9" * 100,)),
    Case("inventory JSON: an integer of 5,000 digits", {"inv.json": '{"all": {"hosts": {"n1": {"ansible_port": ' + "9" * 5000 + "}}}}", "targets.yaml": INVENTORY.replace("FILE", "inv.json")}, "lint", 2, "inv.json:1: not valid YAML: invalid value: Exceeds the limit (4300 digits)"),
    Case("inventory YAML: !!int of nothing", inventory_yaml("x: !!int ''"), "lint", 2, "inv.yml:4: not valid YAML: invalid value: '' is not a valid int"),
    Case("inventory YAML: !!float of nothing", inventory_yaml("x: !!float ''"), "lint", 2, "invalid value: '' is not a valid float"),
    Case("inventory YAML: !!bool of nothing", inventory_yaml("x: !!bool"), "list", 0, "warning: 1 lint problem(s)"),
    Case("inventory YAML: !!timestamp 2001-02-30", inventory_yaml("x: !!timestamp 2001-02-30"), "lint", 2, "invalid value: day is out of range for month"),
    Case("inventory YAML: !!timestamp of month 99", inventory_yaml("x: !!timestamp 2001-99-01"), "verify-dry", 2, "invalid value: month must be in 1..12"),
    # ... and an integer int() takes but no float holds (0x and 5,000 hex digits): str() of it as ansible_port raised
    Case("inventory YAML: ansible_port of 0x and 5,000 hex digits", inventory_yaml("ansible_port: 0x" + "f" * 5000), "lint", 2, "inv.yml:4: not valid YAML: invalid value: Exceeds the limit of a number (1.8e308)", absent=("f" * 100,)),
    Case("inventory YAML: a base-60 integer of 3,000 places", inventory_yaml("x: 1:" + "59:" * 3000 + "1"), "lint", 2, "Exceeds the limit of a number"),
    # a lone surrogate spelled in JSON (`"\\ud800"`) in a file of the knowledge base: `docs` wrote pages in UTF-8 and stopped with a UnicodeEncodeError
    Case("docs: a run record's status of a lone surrogate", record(status=f'"ok{LONE}"'), DOCS, 0, "pages generated"),
    Case("docs: a run record's key of a lone surrogate", record(**{f"x{LONE}": '"y"'}), DOCS, 0, "pages generated"),
    Case("run --list: a run record's status of a lone surrogate", record(status=f'"ok{LONE}"'), ["run", "--list"], 0, "ok\\ud800"),
    Case("docs: a run file holding lone surrogates", {"results/runs/r1.jsonl": RUN_FILE}, DOCS, 0, "pages generated"),
    Case("docs: the page manifest naming a lone surrogate", {"_site_md/.factbook-pages.json": f'["facts/{LONE}.md"]'}, DOCS, 2, "lists 'facts/\\\\ud800.md', not a file of"),
    Case("show: latest.json holding lone surrogates", {"results/latest.json": '{"hw.gpu.count": {"here": {"fact": "hw.gpu.count", "target": "here", "outcome": "pass", "reason": "rLONE", "observed": "LONE", "at": "2026-01-01T00:00:00Z", "run": "r1"}}}'.replace("LONE", LONE)}, ["show", "hw.gpu.count"], 0, "last verified on here: pass"),
    # `bench --config KEY=VALUE` was read with yaml.safe_load unguarded: a user's typo was a traceback
    *[Case(f"bench --config {shown}", {}, ["bench", "--url", "http://127.0.0.1:1", "--record", "hw.gpu.count", "--config", "x=" + raw], 2, fragment) for shown, raw, fragment in (
        ("unclosed flow", "[unclosed", "--config x: YAML syntax error"),
        ("nested 5,000 deep", "[" * 5000, "--config x: nested deeper than 40 levels"),
        ("of 5,000 digits", "9" * 5000, "--config x: invalid value: Exceeds the limit (4300 digits)"),
        ("2001-02-30", "2001-02-30", "--config x: invalid value: day is out of range for month"),
        ("!!int of nothing", "!!int", "--config x: invalid value: '' is not a valid int"),
        ("a recursive alias", "&a [*a]", "--config x: YAML alias '*a' is not allowed here"),
        ("holding ESC", '"a\\x1b"', "--config x: hidden character U+001B (ESC)"),
    )],
    # config.value (factbook's own probe, which serve and mcp run for whoever asks) read a whole file: /dev/zero grew the agent until the timeout killed it
    Case("verify: config.value of /dev/zero", {"facts/c.yaml": CONFIG_FACT.replace("PATH", "/dev/zero")}, ["verify", "sw.c", "--timeout", "60"], 3, "/dev/zero: larger than 8388608 bytes; not read", isolated=True, max_s=30),
    Case("verify: config.value of a config at the bound", {"facts/c.yaml": CONFIG_FACT.replace("PATH", "{kb}/c.json"), "c.json": '{"a": "' + "x" * ((8 << 20) - 20) + '"}'}, ["verify", "sw.c"], 0, "1 passed", isolated=True, max_s=30),
    # probed this round and already held (kept as guards): encodings, YAML features, ssh_config and inventory shapes
    Case("lint: a fact file in UTF-16 with a BOM", {"facts/x.yaml": "facts: []\n".encode("utf-16")}, "lint", 2, "facts/x.yaml:1: not UTF-8 (byte 0xff)"),
    Case("lint: an overlong UTF-8 dot", {"facts/x.yaml": b"facts: []\n# \xc0\xae\n"}, "lint", 2, "facts/x.yaml:2: not UTF-8 (byte 0xc0)"),
    Case("lint: a merge key in a fact", {"facts/x.yaml": "base: &b {category: hardware}\nfacts:\n  - <<: *b\n    id: x.one\n"}, "lint", 2, "facts/x.yaml:3: YAML alias '*b' is not allowed here"),
    Case("lint: a %TAG directive naming python/object/apply", {"facts/x.yaml": "%TAG ! tag:yaml.org,2002:python/object/apply:\n---\nfacts: [!os.system [x]]\n"}, "lint", 2, "could not determine a constructor"),
    Case("lint: an ssh config that includes itself", {"ssh_config": "Include {kb}/ssh_config\nHost n1\n  HostName 10.0.0.1\n", "targets.yaml": INVENTORY.replace("FILE", "ssh_config")}, "lint", 0, "ok: 1 facts"),
    Case("lint: an ssh config beginning with a BOM", {"ssh_config": "\ufeffHost n1\n  HostName 10.0.0.1\n", "targets.yaml": INVENTORY.replace("FILE", "ssh_config")}, "lint", 2, "Bad configuration option: '\\ufeffHost'"),
    Case("lint: an INI group of 5,000 nested children", {"inv": "".join(f"[g{i}:children]\ng{i + 1}\n" for i in range(5000)) + "[g5000]\nn1\n", "targets.yaml": INVENTORY.replace("FILE", "inv")}, "lint", 0, "ok: 1 facts"),
    Case("lint: an inventory JSON host of a lone surrogate", {"inv.json": '{"all": {"hosts": {"n\\ud800": {}}}}', "targets.yaml": INVENTORY.replace("FILE", "inv.json")}, "lint", 2, "bad inventory name 'n\\ud800'"),
    Case("lint: an inventory YAML alias bomb", {"inv.yml": "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nall:\n  hosts:\n    n1:\n", "targets.yaml": INVENTORY.replace("FILE", "inv.yml")}, "lint", 2, "its aliases expand to more than 2000000 values"),
    Case("import --write: a hint's key of 2,000 characters", {"dump.md": '# Status as of 2026-12-07\n\n## Discoveries\n\n### Engine notes\n\n- torch 2.5.1 is installed. <!-- fb {"id": "sw.x", "value": {"' + "k" * 2000 + '": 1}} -->\n'}, ["import", "{kb}/dump.md", "--milestone", "1", "--write"], 0, "wrote 1 proposal(s)", then="lint"),
    Case("inventory YAML: the largest float's integer is a number", inventory_yaml("x: " + str(int(1.7976931348623157e308))), "lint", 0, "ok: 1 facts"),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round10(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


HIDDEN_YAML = '"T\\x1b[31m\\u202e\\u2028x"'  # ESC, a bidi override, a line separator
HIDDEN_RAW = ("\x1b", "\u202e", "\u2028")


def test_mcp_answers_carry_no_raw_control_or_bidi_character(tmp_path: Path) -> None:
    """A fact file whose title, statement, value and tags hold ESC, U+202E and U+2028 (lint's
    error, yet the fact loads) reached an MCP client raw: the SDK writes U+202E and U+2028 as
    they are, in search_facts' answer, in resources/list's titles and in a tool error
    quoting an argument. Each is shown escaped now, in the wire's JSON and in the text the
    client reads out of it."""
    import importlib.util
    import json
    import os
    import select

    if importlib.util.find_spec("mcp") is None:
        pytest.skip("the mcp extra is not installed")
    from test_hostile_kb import make_outside, plant
    from test_mcp_stdio import Wire

    fact = (
        f"facts:\n  - id: x.one\n    category: hardware\n    title: {HIDDEN_YAML}\n"
        f"    statement: {HIDDEN_YAML}\n    status: assumed\n    value: {HIDDEN_YAML}\n"
        f"    tags: [{HIDDEN_YAML}]\n    sources: [{{seed: a.txt}}]\n"
    )
    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, {"facts/x.yaml": fact})
    server = Wire(root)
    try:
        server.initialize()
        calls = [
            ("tools/call", {"name": "search_facts", "arguments": {"query": "T"}}),
            ("tools/call", {"name": "show_fact", "arguments": {"id": "x.one"}}),
            ("tools/call", {"name": "show_fact", "arguments": {"id": "zz\u202e\u2028"}}),
            ("resources/list", None),
        ]
        for ident, (method, params) in enumerate(calls, 1):
            server.request(ident, method, params)
            fd = server.proc.stdout.fileno()  # type: ignore[union-attr]
            while b"\n" not in server.pending:
                assert select.select([fd], [], [], 30)[0], server.stderr_tail()
                server.pending += os.read(fd, 1 << 16)
            line, server.pending = server.pending.split(b"\n", 1)
            text = line.decode()
            assert not any(c in text for c in HIDDEN_RAW), (method, params, text[:2000])
            shown = json.dumps(json.loads(text)["result"], ensure_ascii=False)
            assert not any(c in shown for c in HIDDEN_RAW), (method, params, shown[:2000])
            if ident < 3 or method == "resources/list":
                assert "\\\\u202e" in shown, shown[:2000]  # shown escaped, not dropped
    finally:
        server.close()


def test_config_value_reads_what_launch_lint_reads() -> None:
    """The probe's bound (it runs on the box, without factbook's limits module) is limits.py's."""
    from factbook.knowledge.limits import CONFIG_MAX_BYTES
    from factbook.probes.files import CONFIG_READ_MAX_BYTES

    assert CONFIG_READ_MAX_BYTES == CONFIG_MAX_BYTES
