# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile input, round 26 (issue 25, "Hardening III"): other teams' dumps whose access lines
name boxes lint refuses, `import --write` read back by lint, the MCP write tools under
hostile arguments read back by lint, `factbook serve` under HTTP oddities on loopback, and
bash completion of hostile target names. Time-boxed (70 minutes).

What was tried:
- 4/7 (`import --write`, then lint), 62 dumps: access lines with `-p 65536`, `-p 0`,
  `host:99999`, `ssh://...:70000`, a 5,000-digit port, a jump to the box itself, two boxes
  jumping through each other, a box named as an existing group (`gpu`), `all`, `local`,
  `tag:x`, `@g`, `n*`, `-rf`, `$(id)`, 50 boxes of one name, `-l -bad`, `-J -oProxyCommand=x`,
  `-o ProxyCommand=...`, `-oLocalCommand`, 100 and 200 jump hosts, `ssh://ops:PASS@h`,
  `-J ops:PASS@j`, `-J ssh://a:PASS@j:22`, `sshpass -p PASS`, `docker exec -e SECRET=...`,
  hosts `../../etc`, `/etc/shadow`, `~`, `C:\\Windows`, `a\\nb`, `.....`, IPv6 with zones,
  IDN, RLO and zero-width characters, 300- and 5,000-character names, `pct exec` of 5,000
  digits, `kubectl --kubeconfig=/etc/shadow`, `docker exec 'a;b'`; file lines naming
  `../../outside/shadow`, `/proc/self/environ`, `~/.ssh/id_rsa`, UNC and `file://` paths, a
  3,000-deep path; headings `../../etc/passwd`, `/etc/shadow`, `C:\\Windows`, with NUL,
  ESC/OSC/RLO, 100,000 characters; CR-only line ends; hostile factbook hints (`../` ids,
  targets, categories, paths, a `host.command` check); front matter with
  `!!python/object/apply` and an alias bomb.
- 4 (`factbook mcp`'s write tools, through its Toolbox with mcp.write_facts on and off, then
  lint, list, show, `proposals list/show/accept`), 66 arguments x 2 modes: values NaN, inf,
  10**400, 2**64, -0.0, 1e308, 5e-324, nested 30-40 lists and 37-39 mappings, lone
  surrogates, NUL, NEL, U+2028, BOM, CR, ESC, a YAML document stream, 20,000 characters,
  6,000 items, 2,000 keys; keys with a line break, `<<`, ``, NUL, a surrogate, `? `, `- `,
  `&`, `*`, `!`, `#`, `%`, `@`, a backtick, 5,000 characters; fields keys likewise and
  `history`, `until`, `check` with `host.command`, regex bombs; links, targets, since, tags,
  units, statuses, categories and ids with `../`, line breaks, RLO, `$(id)`, upper case,
  full-width letters; titles of 5,000 lines and of YAML syntax.
- 9 (`factbook serve` on loopback), 34 raw requests: HEAD, OPTIONS, a method of NUL/ESC
  bytes, absolute-form URIs, `..%2f` and `../` paths, `//metrics`, 65 kB and 70 kB request
  lines, 150 headers, a 66 kB header, pipelined requests, half-closed sockets (complete and
  not), the HTTP/2 preface, HTTP/0.9, HTTP/9.9 and a 5,000-digit version, LF-only heads,
  `Expect: 100-continue`, a POST of 100 MB announced, chunked, obsolete line folding, NUL,
  RLO and invalid UTF-8 in the path, 1,000 query pairs, an empty head, a fragment, Upgrade.
- 8 (completion, real bash): target and group names `$(touch M)`, backticks, `*`, `a b`,
  a line break, `-rf`, RLO, `;id`, and inventory hosts of the same.

What was found (before -> after):
1. 4 (lockout): `import --write` of a dump whose access line gives a box lint refuses wrote
   it into targets.yaml, and every later command exited 2 on the knowledge base factbook
   had just written: `ssh -p 65536` and `host:99999` (`targets.p.port: must be <= 65535`),
   `-J` to the box itself or two boxes through each other (`jump loop`), a box named as an
   existing group (`group 'gpu': a target has the same name`), `-l -bad` (`user '-bad' is
   not a host or user name ssh accepts`), `-J -oProxyCommand=x` (`unknown jump`): 7 of 62
   dumps. The import lints its scratch copy and printed these as `lint:` lines, but only a
   problem naming a fact sets its proposal aside; one naming a target was written anyway
   ("0 cannot lint clean"). Now a problem of the scratch copy's targets.yaml that lies in a
   proposed box's entry, or quotes its name, sets aside every proposal needing that box
   (its fact's box, or one it jumps through or goes `via`), with `[not applied: its box 'p'
   cannot be added: targets.p.port: must be <= 65535]`; the rest of the dump is written and
   lints clean (dumps/capture/propose.py). Under that, `import --write` refuses, one line,
   exit 2, nothing written, when the scratch copy still has a problem of its own in a file
   it would write (dumps/capture/propose.write, the floor).
2. 7 (secrets): `ssh ssh://ops:PASS@host`, `-J ops:PASS@jump` and `-J ssh://a:PASS@j` in a
   dump were written as `user: 'ops:PASS'` into targets.yaml, in clear, and lint passed it
   (ssh would log in as the user `ops:PASS`). No account is named with a ':'; lint now
   refuses such a user in targets.yaml and inventories (`user 'ops:***' holds a password
   after ':'`), with the password hidden (knowledge/fleet/connection.py), so the import
   above sets that box aside too instead of storing it. An ssh:// URL's own password is dropped
   where the URL is parsed, as before (round 21).

Counts: 62 import dumps, 132 MCP calls, 34 HTTP requests and 4 completion words in the
scratch sweeps (232 tried). This file keeps 43 table cases and 36 plain tests (32 of them the
MCP arguments in both modes), 79 in all. Against this round's starting sources 13 failed: the
7 lockout dumps, the 3 passwords an import stored, the 2 lint cases of a password in a user
and the plain test of the refused import; the other 66 held.
Held (guards here): every other dump (no traceback, nothing outside written, lint clean
after `--write`, controls shown escaped); every MCP argument (refused in one line, or
written and read back clean by lint, list, show and proposals); serve (501 for HEAD,
OPTIONS and a garbage method with its bytes escaped, 404 for `..%2f`, 431 for 150 headers,
over-long heads dropped, the log escaped and without traceback, /healthz answered after);
bash completion offered only the valid names and ran nothing.

Not fixed here (files another engineer is changing; proposals in the round's report):
dumps/capture/boxes.py should not propose these boxes at all (a port outside 1-65535, a
jump to itself or in a cycle, a name a group or `all` has, an option as a user or jump, a
URL's password kept in the user; `sshpass -p PASS ssh ...` named a box after the password);
dumps/capture/propose.py `apply` should set aside the proposals needing a box whose entry
lint refuses (then the rest of the import is written) rather than leave it to the command's
refusal; a fact's quote keeps a URL's password verbatim (`https://u:PASS@pypi...`).
knowledge/kb.py's `no fact with id '...'` shows a line break of the id typed raw (ESC and
RLO are escaped): `show $'a\nb'` prints two lines.
Not tried (time box): zsh/fish completion of target names, `init` with hostile --name
(held in round 11), Match exec / ProxyCommand in ssh configs (rounds 14/17), many
simultaneous half-closed sockets against serve.
"""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import cli
from test_hostile_kb import (
    Case,
    bash_completes,
    make_outside,
    plant,
    run_case,
    served_kb,
)

PASSWORD = "Hunter2pw"  # a password a dump gives in an access line
TARGETS = "targets:\n  here: {transport: local}\n  box: {host: box.invalid, user: root}\ngroups:\n  gpu: {targets: [here]}\n"
IMPORT_W = ["import", "{kb}/dump.md", "--milestone", "1", "--write"]
IMPORT = IMPORT_W[:-1]
REFUSED = "which lint refuses; nothing written"


def access(line: str, on: str = "the box") -> dict[str, str]:
    """A dump with one access line and a version on the box `on`, over a KB with a group."""
    return {
        "targets.yaml": TARGETS,
        "dump.md": f"# Status\n\n## Access\n\n- {line}\n\n## Software\n\n- torch 2.5.1 on {on}\n",
    }


def dump(text: str) -> dict[str, str]:
    return {"targets.yaml": TARGETS, "dump.md": text}


RAW = ("\x1b", "\u202e", "\x00", "\x07")
CLI = [sys.executable, "-m", "factbook"]

# fmt: off
CASES: list[Case] = [
    # --- 4. import --write of a box lint refuses: the proposals needing it are set aside, the
    # rest of the dump is written, and lint reads back clean what was written ---
    *[Case(f"import --write of {name}", access(line, on), IMPORT_W, 0, frag, then="lint", absent=(PASSWORD,) if PASSWORD in line else ())
      for name, line, on, frag in (
          ("a port over 65535", "Node p: ssh -p 65536 root@p.example", "p", "[not applied: its box 'p' cannot be added: targets.p.port: must be <= 65535]"),
          ("a port over 65535 after the host", "Node p: ssh root@p.example:99999", "p", "its box 'p' cannot be added: targets.p.port: must be <= 65535"),
          ("a jump to the box itself", "Node sj: ssh -J root@sj.example root@sj.example", "sj", "its box 'sj' cannot be added: target 'sj': jump loop"),
          ("two boxes jumping through each other", "Node a1: ssh -J b1.example a1.example\n- Node b1: ssh -J a1.example b1.example", "a1", "cannot be added: target 'a1': jump loop"),
          ("a box named as a group", "Node gpu: ssh root@gpu.example", "gpu", "its box 'gpu' cannot be added: group 'gpu': a target has the same name"),
          ("an option as the user", "Node ol: ssh -l -bad ol.example", "ol", "its box 'ol' cannot be added: target 'ol': user '-bad' is not a host or user name ssh accepts"),
          ("an option as the jump", "Node jo: ssh -J -oProxyCommand=x jo.example", "jo", "its box 'jo' cannot be added: target 'jo': unknown jump '-oProxyCommand=x'"),
      )],
    # ... the preview (no --write) says the same
    Case("import preview of a port over 65535", access("Node p: ssh -p 65536 root@p.example", "p"), IMPORT, 0, "its box 'p' cannot be added: targets.p.port: must be <= 65535"),
    # --- 7. a URL's password in an access line: never stored in targets.yaml (the box is set aside) ---
    *[Case(f"import --write of {name}", access(line, on), IMPORT_W, 0, frag, then="lint")
      for name, line, on, frag in (
          ("an ssh:// URL with a password", f"Node e: ssh ssh://ops:{PASSWORD}@e.example:2222", "e", "its box 'e' cannot be added: target 'e': user 'ops:***' holds a password after ':'"),
          ("a jump host with a password", f"Node i: ssh -J ops:{PASSWORD}@j.example root@i.example", "i", "its box 'j' cannot be added: target 'j': user 'ops:***' holds a password"),
          ("a jump URL with a password", f"Node ju: ssh -J ssh://a:{PASSWORD}@j.example:22 ju.example", "ju", "user 'a:***' holds a password"),
      )],
    Case("lint of a targets.yaml user holding a password", {"targets.yaml": f"targets:\n  here: {{transport: local}}\n  b: {{host: b.example, user: 'ops:{PASSWORD}'}}\n"}, "lint", 2, "targets.yaml:3: target 'b': user 'ops:***' holds a password after ':' (user:PASSWORD)", absent=(PASSWORD,)),
    Case("lint of an inventory's ansible_user holding a password", {"inv.ini": f"[g]\nn1 ansible_user=ops:{PASSWORD}\n", "targets.yaml": "inventory: inv.ini\ntargets:\n  here: {transport: local}\n"}, "lint", 2, "target 'n1': user 'ops:***' holds a password", absent=(PASSWORD,)),
    Case("verify --target ssh:// with a password, dry run", {}, ["verify", "--dry-run", "--target", f"ssh://ops:{PASSWORD}@127.0.0.1:1"], 0, "ops@127.0.0.1:1", absent=(PASSWORD,)),
    # --- held (guards): every other access line, file line, heading and hint; lint clean after ---
    *[Case(f"import --write held: {name}", access(line, on), IMPORT_W, 0, "wrote", then="lint", absent=RAW)
      for name, line, on in (
          ("port 0", "Node p: ssh -p 0 root@p.example", "p"),
          ("a 5,000-digit port", "Box pp: ssh -p " + "9" * 5000 + " root@pp.example", "pp"),
          ("an ssh:// port over 65535", "Node p: ssh://root@p.example:70000", "p"),
          ("a box named all", "Node all: ssh root@all.example", "all"),
          ("a box named local", "Node local: ssh root@l.example", "local"),
          ("a box named by shell", "Node $(id): ssh root@hc.example", "the box"),
          ("ProxyCommand", "GPU host t3: ssh -o ProxyCommand=\"touch {out}/MARKER\" root@t3.example", "t3"),
          ("LocalCommand", "Node d: ssh -o LocalCommand=id -o PermitLocalCommand=yes y@d.example", "d"),
          ("100 jump hosts", "Node jm: ssh -J " + ",".join(f"j{i}.example" for i in range(100)) + " jm.example", "jm"),
          ("50 boxes of one name", "\n- ".join(f"Node n: ssh root@n{i}.example" for i in range(50)), "n"),
          ("a host ../../etc", "Node dh: ssh root@../../etc", "dh"),
          ("a host /etc/shadow", "Node ds: ssh root@/etc/shadow", "ds"),
          ("a Windows host", "Node dw: ssh root@C:\\Windows", "dw"),
          ("an RLO in the host", "Node r: ssh root@r\u202eo.example", "r"),
          ("docker exec of ../../x", "Box: docker exec -it ../../x bash", "x"),
          ("kubectl --kubeconfig=/etc/shadow", "Box: kubectl exec -it pod --kubeconfig=/etc/shadow -- bash", "pod"),
          ("pct exec of 5,000 digits", "Box: pct exec " + "9" * 5000 + " -- bash", "the box"),
          ("a 5,000-character label", "Node " + "n" * 5000 + ": ssh root@ll.example", "ll"),
      )],
    *[Case(f"import --write held: {name}", dump(text), IMPORT_W, 0, "wrote", then="lint", absent=RAW)
      for name, text in (
          ("file lines outside", "# Status\n\n## Files\n\n- `../../outside/shadow` data\n- `/etc/shadow` the shadow\n- `~/.ssh/id_rsa` key\n- `/proc/self/environ` env\n- `\\\\server\\share\\x` smb\n- `file:///etc/passwd` url\n- `/data/" + "d/" * 3000 + "x` deep\n"),
          ("headings naming paths", "# ../../outside\n\n## ../../etc/passwd\n\n- torch 2.5.1\n\n## /etc/shadow\n\n- GPU: 8x H100\n\n## C:\\Windows\\System32\n\n- note\n"),
          ("a heading with NUL", "# Status\n\n## Soft\x00ware\n\n- torch\x00 2.5.1\n"),
          ("a heading with ESC, OSC and RLO", "# Status\n\n## Soft\x1b[31mware\u202e\n\n- torch 2.5.1\x1b]0;x\x07\n"),
          ("a 100,000-character heading", "# Status\n\n## " + "S" * 100000 + "\n\n- torch 2.5.1\n"),
          ("CR line ends", "# Status\r\r## Software\r\r- torch 2.5.1\r"),
          ("hints of ../", "# Status as of 1\n\nGenerated by `factbook status`.\n\n## Hardware\n\n- GPUs <!-- factbook: {\"id\": \"../../x\", \"value\": 8, \"target\": \"../../y\", \"category\": \"../z\", \"since\": \"../\"} -->\n"),
          ("a hint naming /etc/shadow", "# Status as of 1\n\nGenerated by `factbook status`.\n\n## Inventory\n\n- data <!-- factbook: {\"id\": \"inv.x\", \"path\": \"../../outside/shadow\", \"check\": {\"probe\": \"file.read\", \"args\": {\"path\": \"/etc/shadow\"}}} -->\n"),
          ("a hint with a host.command check", "# Status as of 1\n\nGenerated by `factbook status`.\n\n## Software\n\n- torch 2.5.1 <!-- factbook: {\"id\": \"sw.t\", \"check\": {\"probe\": \"host.command\", \"args\": {\"cmd\": \"touch {out}/MARKER\"}}} -->\n"),
          ("front matter running Python", "---\nmilestone: !!python/object/apply:os.system ['touch {out}/MARKER']\ntitle: x\n---\n# Status\n\n## Software\n\n- torch 2.5.1\n"),
          ("a front matter alias bomb", "---\na: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n---\n# Status\n\n## Software\n\n- torch 2.5.1\n"),
      )],
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round26(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


def test_an_import_of_a_box_with_a_password_stores_no_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The import of `ssh://ops:PASS@host` beside a good box: the good box and its facts are
    written, the box with the password and the facts needing it are not, and no file of
    the knowledge base holds the password (it was targets.yaml's `user: 'ops:PASS'`)."""
    files = access(
        f"Node e: ssh ssh://ops:{PASSWORD}@e.example:2222\n- Node g: ssh root@g.example", "g"
    )
    run_case(Case("password", files, IMPORT_W, 0, "ops:***", then="lint"), tmp_path, monkeypatch)
    root = tmp_path / "kb"
    holding = [p for p in root.rglob("*") if p.is_file() and p.name != "dump.md"]
    assert holding and not [p for p in holding if PASSWORD.encode() in p.read_bytes()]
    targets = (root / "targets.yaml").read_text()
    assert "  g:\n    host: g.example" in targets and "e.example" not in targets
    assert "torch 2.5.1 on g" in (root / "facts" / "software.yaml").read_text()


def _cli(root: Path, *argv: str) -> tuple[int, str]:
    """helpers.cli with its two streams as one text."""
    code, out, err = cli(root, *argv)
    return code, out + err


def _nested(depth: int, mapping: bool = False) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"k": value} if mapping else [value]
    return value


MCP_ARGS: dict[str, dict[str, Any]] = {
    "a YAML document stream": {"value": "---\n...\n--- !!python/object/apply:os.system ['id']"},
    "YAML syntax in keys": {
        "value": {
            "? x": 1,
            "- y": 2,
            "&a": 3,
            "*a": 4,
            "!t": 5,
            "#c": 6,
            "%YAML": 7,
            "@x": 8,
            "`": 9,
            "<<": 10,
            "": 11,
            "a\nb: c": 12,
        }
    },
    "a 5,000-character key": {"value": {"k" * 5000: 1}},
    "a title of YAML syntax": {"title": "- a: b\n  c: ["},
    "a title of 5,000 lines": {"title": "a\n" * 4999},
    "a unit with a line break": {"unit": "a\nb: c"},
    "2**64": {"value": 2**64},
    "37 mappings deep": {"value": _nested(37, mapping=True)},
    "38 lists deep": {"value": _nested(38)},
    "10**400": {"value": 10**400},
    "NaN": {"value": float("nan")},
    "a NEL": {"value": "a\x85b"},
    "a lone surrogate key": {"value": {"\udc80": 1}},
    "an RLO tag": {"tags": ["*", "a\nb", "\u202e", "$(id)"]},
    "a fields key with a line break": {"fields": {"a\nb": 1}},
    "a host.command check": {"check": {"probe": "host.command", "args": {"cmd": "touch MARK"}}},
}


@pytest.mark.parametrize("write", [True, False], ids=["write_facts", "proposal"])
@pytest.mark.parametrize("name", list(MCP_ARGS))
def test_mcp_writes_only_what_lint_reads_back(tmp_path: Path, name: str, write: bool) -> None:
    """propose_fact with a hostile argument, written into facts/ (mcp.write_facts) or saved
    as a proposal then accepted: refused in one line, or written and read back clean by
    lint, list, show and `proposals list/show/accept`."""
    from factbook.errors import FactbookError
    from factbook.integrations.mcp.server import _one_line
    from factbook.integrations.mcp.settings import McpSettings
    from factbook.integrations.mcp.tools import Toolbox

    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, {})
    toolbox = Toolbox(root, McpSettings(write_facts=write))
    args = {"id": "hw.new", "category": "hardware", "title": "T", "statement": "S.", "reason": "r"}
    try:
        toolbox.propose_fact(**{**args, **MCP_ARGS[name]})
    except FactbookError as exc:  # the server sends it as one escaped line (_one_line)
        said = _one_line(str(exc))
        assert len(said) < 2000 and not any(c in said for c in (*RAW, "\n")), said[:500]
    reads = [["lint"], ["list"], ["proposals", "list"]]
    for proposal in (root / "proposals").glob("*.yaml"):
        reads += [["proposals", "show", proposal.stem], ["proposals", "accept", proposal.stem]]
    reads += [["lint"], ["show", "hw.gpu.count"]]
    for argv in reads:
        code, said = _cli(root, *argv)
        assert code == 0 and "Traceback" not in said, (argv, code, said[-2000:])
        assert not any(c in said for c in RAW), (argv, said[-2000:])
    assert not (root / "MARK").exists()


def test_serve_answers_odd_requests_and_goes_on_serving(tmp_path: Path) -> None:
    """`factbook serve` on loopback fed HTTP oddities: each answered with an error status or
    dropped, never a traceback, every client byte escaped in the log, and /healthz answered
    after all of them."""
    port, proc = served_kb(tmp_path, "5")

    def ask(data: bytes, half: bool = False) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(data)
            if half:
                sock.shutdown(socket.SHUT_WR)
            got = b""
            try:
                while chunk := sock.recv(65536):
                    got += chunk
            except (ConnectionResetError, TimeoutError):
                pass
            return got

    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if ask(b"GET /healthz HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.0 200"):
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, "serve did not start"
            time.sleep(0.2)
        odd = {
            b"HEAD /metrics HTTP/1.0\r\n\r\n": b"HTTP/1.0 501",
            b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n": b"HTTP/1.0 501",
            b"\x00\x01\x1b[31m\xe2\x80\xae /metrics HTTP/1.0\r\n\r\n": b"HTTP/1.0 501",
            b"GET /..%2f..%2fetc%2fpasswd HTTP/1.0\r\n\r\n": b"HTTP/1.0 404",
            b"GET http://127.0.0.1/../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n": b"HTTP/1.0 404",
            b"GET /metrics HTTP/1.0\r\n"
            + b"".join(b"X-%d: y\r\n" % i for i in range(150))
            + b"\r\n": b"HTTP/1.0 431",
            b"GET /metrics HTTP/1." + b"9" * 5000 + b"\r\n\r\n": b"<!DOCTYPE HTML>",
            b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n": b"HTTP/1.0 200",
            b"GET /\x1b]0;x\x07\xff HTTP/1.0\r\n\r\n": b"HTTP/1.0 404",
            b"GET /" + b"a" * 70000 + b" HTTP/1.0\r\n\r\n": b"",
        }
        for data, start in odd.items():
            assert ask(data).startswith(start), data[:60]
        assert ask(b"GET /healthz HTTP/1.0\r\n", half=True) == b""
        assert ask(b"GET /healthz HTTP/1.0\r\n\r\n", half=True).startswith(b"HTTP/1.0 200")
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    log = err.decode("utf-8", "replace")
    assert "Traceback" not in log and not any(c in log for c in RAW), log[-3000:]
    assert "\\x1b" in log, log[-3000:]  # the client's bytes are in the log, escaped


def test_bash_completion_offers_only_target_names_lint_accepts(tmp_path: Path) -> None:
    """Target and group names holding shell (`$(touch M)`, backticks, `;id`), a glob, a
    space, a line break, an option and an RLO, in targets.yaml and an inventory, completed
    by the generated function in a real bash: only the names lint accepts, nothing run."""
    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    mark = tmp_path / "MARK"
    names = [
        f"$(touch {mark})",
        "*",
        "a b",
        f"`touch {mark}`",
        "x\\ny",
        "-rf",
        "\\u202eevil",
        ";id",
    ]
    targets = "".join(f'  "{n}": {{transport: local}}\n' for n in names)
    plant(root, out, {
        "targets.yaml": f'inventory: inv.ini\ntargets:\n  here: {{transport: local}}\n{targets}groups:\n  "g*": {{targets: [here]}}\n  "$(touch {mark}g)": {{targets: [here]}}\n',
        "inv.ini": f"[grp]\n$(touch {mark}i)\nnode`touch {mark}j`\n",
    })  # fmt: skip
    for typed, offered in (("", ["all", "here"]), ("@", []), ("$", []), ("*", [])):
        got = [w for w in bash_completes(tmp_path, root, typed, option="--target") if w]
        assert got == offered, typed
    assert not list(tmp_path.glob("MARK*"))


def test_the_floor_refuses_a_write_lint_would_refuse() -> None:
    """propose.refuse_new_problems (write's floor), under the box and fact blame: a problem of the scratch
    copy in a file the import would write refuses the write (exit 2, one line naming it);
    one in a file it leaves alone does not."""
    from factbook.dumps.capture.propose import refuse_new_problems
    from factbook.errors import InputError

    refuse_new_problems(["facts/other.yaml:3: bad"], ["targets.yaml"])
    with pytest.raises(InputError) as refused:
        refuse_new_problems(["targets.yaml:9: x", "targets.yaml:12: y"], ["targets.yaml"])
    said = str(refused.value)
    assert said.startswith("the import would write targets.yaml:9: x (and 1 more, listed above)")
    assert refused.value.exit_code == 2 and "\n" not in said
