# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile input, round 15 (issue 25, "Hardening III"): the commands that act (verify over
ssh, runbooks) and what they record, in the table form of tests/test_hostile_kb.py and
checked by its `run_case` (no traceback, no file outside touched, no payload run, no secret
shown), plus the file modes of what the writing commands create. Each group says what it
found, or that it held (a guard).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_hostile_kb import ASSUMED, RUNBOOK, Case, _in_process, make_outside, plant, run_case

INV = "inventory: FILE\ntargets:\n  here: {transport: local}\n"
DRY = ["verify", "--dry-run", "--target", "all"]
BAD = "is not a host or user name ssh accepts"
ON_BOX = ["verify", "hw.gpu.count", "--timeout", "2"]


def ini(line: str) -> dict[str, str]:
    """An INI inventory holding one host line `line` (host n1)."""
    return {"targets.yaml": INV.replace("FILE", "inv.ini"), "inv.ini": f"[g]\n{line}\n"}


def own(entry: str) -> dict[str, str]:
    """targets.yaml with target `box` written as `entry`."""
    return {"targets.yaml": "targets:\n  here: {transport: local}\n  box: " + entry + "\n"}


def url(spec: str) -> list[str]:
    return ["verify", "hw.gpu.count", "--target", spec, "--timeout", "2"]


def records(code: str) -> dict[str, str]:
    """RUNBOOK whose one step declares `records: [hw.gpu.count]` and runs `code`."""
    text = RUNBOOK.replace(":name: hello", ":name: hello\n:records: [hw.gpu.count]")
    return {
        "runbooks/rb.md": text.replace(
            "print('hi')", "from factbook.runbooks.api import record\n" + code
        )
    }


RUN = ["run", "rb", "--yes"]
NOT_BACK = "the fact would not load back"

# fmt: off
CASES: list[Case] = [
    # --- 1. a host ssh refuses (ssh.c valid_hostname: shell characters, a comma) passed lint from an inventory, targets.yaml or an ssh:// URL, and failed only as one connection error per check ---
    *[Case(f"ini: ansible_host holding {ch!r}", ini(f"n1 ansible_host='a{ch}b.invalid'"), "lint", 2, f"host 'a{ch}b.invalid' {BAD}") for ch in (";", ",", "|", "&", "`", "$", "(", "<", "{")],
    Case("ini: ansible_host 'a;b' refused by verify before connecting", ini("n1 ansible_host='a;b'"), DRY, 2, f"host 'a;b' {BAD}"),
    Case("ini: ansible_user 'a;b' (ssh: remote username contains invalid characters)", ini("n1 ansible_host=ok.invalid ansible_user='a;b'"), "lint", 2, f"user 'a;b' {BAD}"),
    Case("ini: -o User= with a shell character", ini("n1 ansible_host=ok.invalid ansible_ssh_extra_args='-o User=x|y'"), "lint", 2, f"user 'x|y' {BAD}"),
    Case("ini: -J a hop holding ';'", ini("n1 ansible_host=ok.invalid ansible_ssh_common_args='-J a;b'"), "lint", 2, f"jump 'a;b' {BAD}"),
    Case("ini: -J a hop whose user holds ';'", ini("n1 ansible_host=ok.invalid ansible_ssh_common_args='-J u;x@gw.invalid'"), "lint", 2, f"jump 'u;x@gw.invalid' {BAD}"),
    Case("ini: ProxyJump a hop holding '|'", ini("n1 ansible_host=ok.invalid ansible_ssh_common_args='-o ProxyJump=a|b'"), "lint", 2, f"jump 'a|b' {BAD}"),
    Case("targets.yaml: ssh host 'a;b'", own("{transport: ssh, host: 'a;b', user: root}"), "lint", 2, f"host 'a;b' {BAD}"),
    Case("targets.yaml: openssh host 'a,b'", own("{transport: openssh, host: 'a,b', user: root}"), "lint", 2, f"host 'a,b' {BAD}"),
    Case("targets.yaml: user 'a{b'", own("{host: box.invalid, user: 'a{b'}"), "lint", 2, f"user 'a{{b' {BAD}"),
    Case("--inventory: a host 'a|b' given on the command line", {"inv.ini": "[g]\nn1 ansible_host='a|b'\n"}, ["verify", "--dry-run", "--inventory", "{kb}/inv.ini", "--target", "n1"], 2, f"host 'a|b' {BAD}"),
    Case("ssh:// URL: user 'a;b'", {}, url("ssh://a;b@x.invalid"), 2, f"user 'a;b' {BAD}"),
    Case("ssh:// URL: user -oProxyCommand", {}, url("ssh://-oProxyCommand=x@x.invalid"), 2, f"user '-oProxyCommand=x' {BAD}"),
    Case("openssh:// URL: host 'a,b'", {}, url("openssh://root@a,b.invalid"), 2, f"host 'a,b.invalid' {BAD}"),
    Case("ssh:// URL: jump 'a;b'", {}, url("ssh://root@x.invalid?jump=a;b"), 2, f"jump 'a;b' {BAD}"),
    Case("ssh:// URL: jump u@a|b:22", {}, url("ssh://root@x.invalid?jump=u@a|b:22"), 2, f"jump 'u@a|b:22' {BAD}"),
    # ... held (guards): what was already refused, and what ssh accepts still connects
    Case("ini: ansible_host -oProxyCommand=x", ini("n1 ansible_host='-oProxyCommand=x'"), "lint", 2, "host '-oProxyCommand=x' is not a host or user name"),
    Case("ini: ansible_host with a space", ini("n1 ansible_host='a b'"), "lint", 2, "host 'a b' is not a host or user name"),
    Case("ini: a host name holding ';'", ini("a;b"), "lint", 2, "bad inventory name 'a;b'"),
    Case("ssh:// URL: two plain jumps still tried", {}, url("ssh://root@x.invalid:2222?jump=gw.invalid:22,u@h.invalid"), 3, "cannot resolve"),
    Case("ssh:// URL: user with '$' (ssh accepts it) still tried", {}, url("ssh://a$b@x.invalid"), 3, "cannot resolve"),
    Case("ssh:// URL: a percent-escape in the host is no ';'", {}, url("ssh://root@a%3Bb.invalid"), 3, "cannot resolve"),
    Case("ssh:// URL to an unreachable port", {}, url("ssh://root@127.0.0.1:1"), 3, "127.0.0.1"),
    # --- 3. record() of a value the loader refuses (inf, a status outside the vocabulary, a key the category lacks, a check that is no mapping) was written: the knowledge base stopped linting ---
    Case("run: record() of float('inf')", records("record('hw.gpu.count', float('inf'))"), RUN, 1, NOT_BACK, max_s=90, then="lint"),
    Case("run: record() of -inf inside a mapping", records("record('hw.gpu.count', {'a': [float('-inf')]})"), RUN, 1, NOT_BACK, max_s=90, then="lint"),
    Case("run: record() with status 'bogus'", records("record('hw.gpu.count', 3, status='bogus')"), RUN, 1, NOT_BACK, max_s=90, then="lint"),
    Case("run: record() with a field of 1,000 x", records("record('hw.gpu.count', 3, fields={'x' * 1000: 1})"), RUN, 1, NOT_BACK, max_s=90, then="lint"),
    Case("run: record() setting check to an integer", records("record('hw.gpu.count', 3, fields={'check': 5})"), RUN, 1, NOT_BACK, max_s=90, then="lint"),
    Case("run: a good record then a bad one: neither written", records("record('hw.gpu.count', 7)\nrecord('hw.gpu.count', 1, status='nope')"), RUN, 1, NOT_BACK, max_s=90, then="lint"),
    # ... held (guards): NaN, 10 MB, deep nesting, control characters, an undeclared id, a set
    Case("run: record() of NaN", records("record('hw.gpu.count', float('nan'))"), RUN, 1, "write-back failed", max_s=90, then="lint"),
    Case("run: record() of 10 MB", records("record('hw.gpu.count', 'x' * 10_000_000)"), RUN, 1, "write-back failed", max_s=90, then="lint"),
    Case("run: record() of a note of 10 MB", records("record('hw.gpu.count', 1, note='x' * 10_000_000)"), RUN, 1, "write-back failed", max_s=90, then="lint"),
    Case("run: record() nested 200 deep", records("v = 1\nfor _ in range(200):\n    v = [v]\nrecord('hw.gpu.count', v)"), RUN, 1, "write-back failed", max_s=90, then="lint"),
    Case("run: record() of 10**5000", records("record('hw.gpu.count', 10 ** 5000)"), RUN, 1, "failed", max_s=90, then="lint"),
    Case("run: record() of NUL, ESC and RLO", records("record('hw.gpu.count', 'a\\x00b\\x1b[2J\\u202e')"), RUN, 0, "wrote hw.gpu.count", max_s=90, then="lint", absent=("\x1b", "\u202e")),
    Case("run: record() of a set", records("record('hw.gpu.count', {1, 2})"), RUN, 0, "wrote hw.gpu.count", max_s=90, then="lint"),
    Case("run: record() of an undeclared id", records("record('hw.other', 1)"), RUN, 2, "record('hw.other') is not declared in `records:`", max_s=90),
    Case("run: record() of an undeclared id built at run time", records("record('hw.' + 'other', 1)"), RUN, 1, "does not declare it in `records:`", max_s=90, then="lint"),
    Case("run: a cell that dies mid-step", records("import os\nos._exit(9)"), RUN, 4, "kernel", max_s=90, then="lint"),
    Case("run: a cell that never ends", {"runbooks/rb.md": RUNBOOK.replace(":name: hello", ":name: hello\n:timeout: 2").replace("print('hi')", "import time\nwhile True:\n    time.sleep(0.1)")}, RUN, 1, "timeout", max_s=90, then="lint"),
    Case("run: destructive step with no --yes and no terminal", {"runbooks/rb.md": RUNBOOK.replace(":name: hello", ":name: hello\n:destructive: true")}, ["run", "rb"], 2, "hello", max_s=90),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round15(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


# --- 5. file modes (held, a guard): what the writing commands create honours the umask ---
@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_what_the_commands_create_honours_the_umask(umask: int, tmp_path: Path) -> None:
    """init, verify, status, docs and run under umask 022 and 077: every file and folder
    they create has the umask's mode (0644/0755, 0600/0700), none is world-writable, and a
    shared file an edit rewrites (a 0664 fact file) keeps its mode."""
    kb, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(kb, out, {"runbooks/rb.md": RUNBOOK, "facts/good.yaml": ASSUMED})
    (kb / "facts" / "good.yaml").chmod(0o664)
    before = {p for p in kb.rglob("*")}
    previous = os.umask(umask)
    try:
        for argv in (
            ["init", str(tmp_path / "new"), "--no-discover"],
            ["verify", "hw.gpu.count", "--record"],
            ["status"],
            ["docs", "--out", "_site_md"],
            RUN,
        ):
            code, output, _ = _in_process(["--root", str(kb), *argv], 120)
            assert code == 0, (argv, output[-2000:])
    finally:
        os.umask(previous)
    made = [
        p
        for p in (*kb.rglob("*"), *(tmp_path / "new").rglob("*"))
        if p not in before and not p.is_symlink()
    ]
    assert len(made) > 20
    for path in made:
        mode = path.stat().st_mode & 0o777
        want = (0o777 if path.is_dir() else 0o666) & ~umask
        assert mode & 0o002 == 0 and mode == want, (path, oct(mode))
    assert "status: verified" in (kb / "facts" / "good.yaml").read_text()
    assert (kb / "facts" / "good.yaml").stat().st_mode & 0o777 == 0o664
