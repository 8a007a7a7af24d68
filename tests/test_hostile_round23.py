# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile input, round 23 (issue 25, "Hardening III"): the process's own surroundings
(standard streams, encodings, locales), file names that are not UTF-8, folder trees
thousands deep, Ansible's `!unsafe` over aliases, and targets.yaml as `import --write`
rewrites it.

What was tried:
- 6 (environment): stdout, stderr and stdin closed (`>&-`, `2>&-`, `<&-`) under lint, list,
  show, status, export-ansible, completion, mcp, verify, import -; `| head -1` (SIGPIPE);
  PYTHONIOENCODING=ascii, latin-1, utf-16; LC_ALL=C with and without UTF-8 mode and locale
  coercion; LANG=tr_TR; HOME a file or read-only; TMPDIR a file or missing; XDG_CACHE_HOME
  `../..`, a file; .factbook-cache a link out, a cache file linked out.
- 6/4 (file names): a fact file, runbook, check, docs page, docs folder, status document,
  proposal, run file and template named in bytes that are not UTF-8; names beginning with
  `-`; a 250-byte name; a folder where each file of the knowledge base is expected and a
  file where each folder is (every one held).
- 5/6 (depth): facts/, docs/, docs/status/, checks/, runbooks/, results/runs/, templates/ and
  proposals/ grown 2,500 folders deep (one `mkdir -p`).
- 5/6 (YAML): `!unsafe` over an alias tree in a YAML inventory and in group_vars, on itself,
  on keys, nested, with `!vault` on collections; targets.yaml as `import --write` rewrites a
  `targets:` in flow style: `!!set`, `!!omap`, `!!binary`, a list as a key, an alias, null.
- 1/8 (templates, markup): `{{ }}`, `{% raw %}`, `{# #}` in a title, statement and tag
  through status, docs and export-ansible (never evaluated); attr_list, md_in_html,
  footnotes, abbr and `javascript:` links in every field of a fact through a real
  `mkdocs build` with those extensions on (no `on*=` attribute, no script link): held.

What was found (before -> after):
1. A closed stdout: every command was an AttributeError traceback (exit 1), and the next file
   factbook opened took descriptor 1, so a local check's output went into it. A closed
   stderr: exit 1 instead of the command's own code. Now (commands/streams.py, first thing
   in cli.run) descriptors 0-2 are held on /dev/null, a closed stdout is one line
   `cannot write the output (standard output is closed)` and exit 2, a closed stderr drops
   its lines, `mcp` refuses to start.
2. An output that cannot encode a character (PYTHONIOENCODING=ascii or latin-1, the C
   locale without UTF-8 mode): list, show, status and lint (text, github) were
   UnicodeEncodeError tracebacks on any non-ASCII fact; now escapes (`\\xe9`), as Python's
   own stderr writes them.
3. A file named in bytes that are not UTF-8: `docs` was a UnicodeEncodeError traceback for
   a fact file, runbook or status document so named (the page cache's digest); `mkdocs
   build` one from MkDocs' URL quoting for such a docs/ page; one in docs/status/ made every
   `status --out docs/status/...` fail writing its index. Now such docs files are left out
   (copy_docs, the plugin, the navigation, the status index) with one escaped warning, and
   the digest takes any name.
4. `!unsafe` over an alias tree (2 x 10**8 values) in a YAML inventory or group_vars: lint,
   list, verify --dry-run and export-ansible still running after 60 s (the tag's walk spelled
   out every alias before the expansion bound ran); now each shared list is marked once:
   refused in 0.6 s, 58 MB.
5. `import --write` into a targets.yaml whose `targets:` is `!!set`, `!!omap`, `!!binary`
   or follows a list as a key: an AttributeError or ConstructorError traceback (a plain
   safe_load in targetfile.py); now read as the loader reads targets.yaml (no aliases,
   bounded, a mapping) and the proposal says `not applied: targets.yaml:LINE: ...`.
6. A tree 2,500 folders deep: under docs/ or docs/status/, `docs` was a RecursionError
   traceback (pathlib's rglob recurses per level) and lint walked it for over 60 s (a
   realpath() per folder); now knowledge/walk.py lists without recursion, at most 100 deep
   (`docs: folders nested more than 100 deep; not read`), and lint names it at mkdocs.yml's
   docs_dir (0.5 s). Under facts/: every command was a RecursionError traceback; now
   kb.py, kbcache.py (listing), writeback.py and import's scratch copy list it with walk.py
   too, and every command refuses it by name (`facts: folders nested more than 100 deep`).
7. A fact file named in bytes that are not UTF-8 loaded, its name unusable as text in the
   pages, links and JSON answers that name it; now lint names it (`not read: the file name
   is not UTF-8 (rename it)`), as runbooks already were.

Counts: 81 tests (42 table cases, 39 plain: 12 closed-stream runs, 1 real mkdocs build, 25
deep trees, 1 naming check); 49 failed before the fixes, 31 held (guards), all clean now.
Held (guards here): the other encodings and locales, `| head -1`, the cache links, the
folders-for-files sweep, the other deep folders, templates and markup.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from handbook_support import mkdocs_build
from helpers import REPO
from test_hostile_kb import (
    BASE,
    COMMANDS,
    IMPORT_DUMP,
    RUNBOOK,
    SECRET,
    Case,
    _in_process,
    make_outside,
    outside_tree,
    plant,
    run_case,
)

# a fact whose title, statement, value and tag are not ASCII (Latin-1, then beyond it)
WIDE = (
    BASE["facts/good.yaml"]
    .replace("title: GPU count", "title: GPU count \u00e9 \u2705")
    .replace("value: 8", "value: '8 \u2705'")
)
WIDE_BAD = WIDE.replace("status: verified", "st\u00e4tus: verified")  # lint names the key
ASCII = {"PYTHONIOENCODING": "ascii"}
LATIN1 = {"PYTHONIOENCODING": "latin-1"}
C_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
NOT_UTF8 = "\udcff\udcfe"  # how Python reads a file name holding the bytes ff fe
STATUS_DOC = "---\ntitle: T\n---\n# T\n"
OTHER_FACT = BASE["facts/good.yaml"].replace("hw.gpu.count", "hw.other")
IMPORT_W = ["import", "{kb}/dump.md", "--milestone", "1", "--write"]
INV_TARGETS = "inventory: inv.yml\ntargets:\n  here: {transport: local}\n"
# eight levels of ten aliases (2 x 10**8 values spelled out), under Ansible's `!unsafe` tag
ALIAS_TREE = "".join(
    f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10 if i else ["x"] * 10) + "]\n" for i in range(8)
)
UNSAFE_BOMB = ALIAS_TREE + "all:\n  hosts:\n    n1:\n  vars:\n    z: !unsafe [*l7, *l7]\n"

# fmt: off
CASES: list[Case] = [
    # --- 6. an output that cannot encode a character (PYTHONIOENCODING=ascii or latin-1, the C locale without UTF-8 mode): a UnicodeEncodeError traceback, exit 1 ---
    *[Case(f"{name}: {' '.join(c) if isinstance(c, list) else c} of a fact not ASCII", {"facts/good.yaml": fact}, c, 0, shown, env=env, isolated=True, max_s=30)
      for name, env, fact, wide in (("PYTHONIOENCODING=ascii", ASCII, WIDE, "\\u2705"), ("PYTHONIOENCODING=latin-1", LATIN1, WIDE.replace(" \u00e9", ""), "\\u2705"), ("the C locale", C_LOCALE, WIDE, "\\xe9"))
      for c, shown in (("list", wide), (["show", "hw.gpu.count"], wide), (["status", "--out", "-"], "*(no changes)*"), (["export-ansible", "--out", "-"], "hw.gpu.count"))
      if env is not LATIN1 or c in ("list", ["show", "hw.gpu.count"])],  # a status document holds characters latin-1 has (this harness reads UTF-8)
    *[Case(f"{name}: lint {fmt} naming a key not ASCII", {"facts/good.yaml": WIDE_BAD}, ["lint", "--format", fmt], 2, "st\\xe4tus", env=env, isolated=True, max_s=30)
      for name, env in (("PYTHONIOENCODING=ascii", ASCII), ("the C locale", C_LOCALE)) for fmt in ("text", "github")],
    # --- 6/4. a file whose name is not UTF-8: `docs` hashed each page's context as UTF-8 (a traceback for any fact file, runbook or status document so named), and one in docs/status/ made every `status --out docs/status/...` fail writing its index ---
    Case("docs: a fact file named in bytes not UTF-8", {f"facts/{NOT_UTF8}.yaml": OTHER_FACT}, "docs", 0, "pages generated"),
    Case("docs: a runbook named in bytes not UTF-8", {f"runbooks/{NOT_UTF8}.md": RUNBOOK}, "docs", 0, "pages generated"),
    Case("docs: a status document named in bytes not UTF-8 is not copied", {f"docs/status/{NOT_UTF8}.md": STATUS_DOC}, "docs", 0, "status/\\udcff\\udcfe.md: not copied: the file name is not UTF-8"),
    Case("docs: a docs folder named in bytes not UTF-8 is not copied", {f"docs/{NOT_UTF8}/x.md": STATUS_DOC}, "docs", 0, "\\udcff\\udcfe/x.md: not copied: the file name is not UTF-8"),
    Case("status --out docs/status/: a document named in bytes not UTF-8 is left out of the index", {f"docs/status/{NOT_UTF8}.md": STATUS_DOC}, ["status", "--out", "{kb}/docs/status/s.md"], 0, "\\udcff\\udcfe.md: the file name is not UTF-8 (rename it); left out of the index", then="docs"),
    # ... every reading command over a fact file so named: not read, a lint problem naming it escaped (it loaded before, its name unusable in pages, links and JSON answers)
    *[Case(f"{c if isinstance(c, str) else ' '.join(c)}: a fact file named in bytes not UTF-8", {f"facts/{NOT_UTF8}.yaml": OTHER_FACT.replace("status: verified", "status: bogus")}, c, code, frag)
      for c, code, frag in (("lint", 2, "facts/\\udcff\\udcfe.yaml:1: not read: the file name is not UTF-8 (rename it)"), (["lint", "--format", "github"], 2, "file=facts/\\udcff\\udcfe.yaml,line=1"), (["lint", "--format", "json"], 2, '"facts/\\\\udcff\\\\udcfe.yaml"'), ("list", 0, "hw.gpu.count"), (["show", "hw.other"], 2, "no fact with id 'hw.other'"), ("status", 0, "# Status"), ("export-ansible", 2, "facts/\\udcff\\udcfe.yaml:1: not read"), ("verify-dry", 2, "facts/\\udcff\\udcfe.yaml:1: not read"))],
    # --- 5. a YAML inventory's `!unsafe` over an alias tree: the tag's walk spelled out every alias before load() measured the expansion (lint, list, verify still running after 60 s); now each shared list is marked once and the bound refuses it ---
    *[Case(f"inventory: !unsafe over 2 x 10**8 aliased values, {c if isinstance(c, str) else ' '.join(c)}", {"targets.yaml": INV_TARGETS, "inv.yml": UNSAFE_BOMB}, c, code, frag, isolated=True, max_s=20, max_rss_mb=300)
      for c, code, frag in (("lint", 2, "inv.yml: its aliases expand to more than 2000000 values"), ("list", 0, "warning: 1 lint problem(s)"), ("verify-dry", 2, "inv.yml: its aliases expand to more than 2000000 values"), ("export-ansible", 2, "inv.yml: its aliases expand"))],
    Case("group_vars: !unsafe over 2 x 10**8 aliased values", {"targets.yaml": INV_TARGETS, "inv.yml": "all:\n  hosts:\n    n1:\n", "group_vars/all.yml": ALIAS_TREE + "z: !unsafe [*l7, *l7]\n"}, "lint", 2, "its aliases expand to more than 2000000 values", isolated=True, max_s=20, max_rss_mb=300),
    # ... held (guards): `!unsafe` still marks every text, nested or not; a loop through it is refused
    Case("inventory: !unsafe on a mapping in a list in a mapping", {"targets.yaml": INV_TARGETS, "inv.yml": "all:\n  hosts:\n    n1:\n      x: !unsafe {a: [b, {c: '{{ lookup(\"pipe\", \"touch {out}/MARKER\") }}'}], e: f}\n"}, "export-ansible", 0, "hw.gpu.count"),
    Case("inventory: !unsafe on a list holding itself", {"targets.yaml": INV_TARGETS, "inv.yml": "a: &a !unsafe [1, *a]\nall:\n  hosts:\n    n1:\n"}, "lint", 2, "inv.yml:1: not valid YAML: found unconstructable recursive node"),
    # --- 6. import --write into a targets.yaml whose `targets:` is in flow style or not a mapping: rewritten from a plain safe_load (a traceback on `!!set`, an AttributeError; on a list as a key, a ConstructorError; an alias tree spelled out) ---
    *[Case(f"import --write: targets.yaml {name}", {"targets.yaml": text, "dump.md": IMPORT_DUMP}, IMPORT_W, 0, said)
      for name, text, said in (
          ("targets: !!set", "targets: !!set {a}\n", "not applied: targets.yaml:1: targets: expected a mapping; not rewritten"),
          ("targets: !!omap", "targets: !!omap [{here: {transport: local}}]\n", "not applied: targets.yaml:1: targets: expected a mapping; not rewritten"),
          ("targets: !!binary", "targets: !!binary aGk=\n", "not applied: targets.yaml:1: targets: expected a mapping; not rewritten"),
          ("a list as a key", "? [a]\n: 1\ntargets: {}\n", "not applied: targets.yaml:3: not valid YAML (ConstructorError)"),
          ("targets by alias", "x: &x {transport: local}\ntargets: {here: *x}\n", "not applied: targets.yaml:2: YAML alias '*x' is not allowed here (write the value out); not rewritten"),
      )],
    # ... held (guards): flow style and null rewritten as a block that lints
    *[Case(f"import --write: targets.yaml {name}, rewritten", {"targets.yaml": text, "dump.md": IMPORT_DUMP}, IMPORT_W, 0, "wrote 2 proposal(s) to 3 file(s)", then=then)
      for name, text, then in (("in flow style", "targets: {here: {transport: local}}\n", "lint"), ("null", "targets:\n", ["show", "instr.node"]), ("empty", "targets: {}\n", ["show", "instr.node"]))],
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round23(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


def _closed(argv: list[str], root: Path, redirect: str) -> subprocess.CompletedProcess[str]:
    """`python -m factbook ARGV` started by a shell with `redirect` (`>&-`, `2>&-`, `<&-`)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "NO_COLOR": "1"}
    script = f'exec "$@" {redirect}'
    return subprocess.run(
        ["sh", "-c", script, "sh", sys.executable, "-m", "factbook", "--root", str(root), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["lint"],
        ["list"],
        ["show", "hw.gpu.count"],
        ["status", "--out", "-"],
        ["export-ansible", "--out", "-"],
        ["completion", "bash"],
        ["mcp"],
    ],
    ids=lambda a: " ".join(a),
)
def test_a_closed_standard_output_is_one_line_and_exit_2(tmp_path: Path, argv: list[str]) -> None:
    """`factbook lint >&-`: Python makes sys.stdout None, and every command was an
    AttributeError traceback at its first print (exit 1); `mcp` one from its stdio claim.
    Now: one line, exit 2, like a full disk."""
    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, {})
    done = _closed(argv, root, ">&-")
    assert done.returncode == 2, done.stderr[-3000:]
    assert (
        done.stderr.strip()
        == "factbook: error: cannot write the output (standard output is closed)"
    ), done.stderr[-3000:]


@pytest.mark.parametrize(
    ("argv", "code", "said"),
    [
        (["lint"], 2, "status: 'bogus'"),
        (["list"], 0, "(1 facts)"),
        (["show", "hw.gpu.count"], 0, "defined at: facts/good.yaml"),
        (["status", "--out", "-"], 0, "# Status"),
    ],
    ids=lambda a: " ".join(a) if isinstance(a, list) else str(a),
)
def test_a_closed_standard_error_keeps_the_exit_code(
    tmp_path: Path, argv: list[str], code: int, said: str
) -> None:
    """`factbook lint 2>&-` with a problem: the lines went to stdout and the exit was 1 (an
    AttributeError at the last flush, printed nowhere); `list` with a warning exited 1 too.
    Now the command's own code and output; its stderr lines are dropped."""
    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(
        root,
        out,
        {
            "facts/bad.yaml": BASE["facts/good.yaml"]
            .replace("hw.gpu.count", "hw.x")
            .replace("status: verified", "status: bogus")
        },
    )
    done = _closed(argv, root, "2>&-")
    assert done.returncode == code, done.stdout[-3000:]
    assert said in done.stdout
    assert "Traceback" not in done.stdout and "status: 'bogus'" not in (
        done.stdout if argv != ["lint"] else ""
    ), done.stdout


def test_a_closed_descriptor_is_not_taken_by_a_file_factbook_opens(tmp_path: Path) -> None:
    """With descriptor 1 closed, the next file factbook opened took number 1, and a child's
    output (a local check's `python3 -`) went into it. Descriptors 0-2 are held on /dev/null
    now: a verify run with stdout closed writes results that read back."""
    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, {})
    done = _closed(["verify", "hw.gpu.count"], root, ">&-")
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    again = subprocess.run(
        [sys.executable, "-m", "factbook", "--root", str(root), "show", "hw.gpu.count"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert again.returncode == 0 and "last verified on here: pass" in again.stdout, (
        again.stdout + again.stderr
    )


def test_mkdocs_build_leaves_out_docs_files_named_in_bytes_not_utf8(tmp_path: Path) -> None:
    """A real `mkdocs build`: a docs/ page or docs/status/ document whose name is not UTF-8
    was a UnicodeEncodeError traceback from MkDocs' own URL quoting (and, once dropped, from
    the navigation the plugin made of it). Now the plugin leaves it out with one escaped
    warning and the site is built."""
    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(
        root,
        out,
        {
            "mkdocs.yml": "site_name: x\nplugins:\n  - factbook\n",
            "docs/index.md": "# hi\n",
            f"docs/{NOT_UTF8}.md": "# x\n",
            f"docs/status/{NOT_UTF8}.md": STATUS_DOC,
            f"facts/{NOT_UTF8}.yaml": OTHER_FACT,
        },
    )
    done = mkdocs_build(root)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    assert "Traceback" not in log and SECRET not in log
    assert (
        "factbook: \\udcff\\udcfe.md: the file name is not UTF-8 (rename it); not published" in log
    ), log[-3000:]
    assert (
        "factbook: status/\\udcff\\udcfe.md: the file name is not UTF-8 (rename it); not published"
        in log
    ), log[-3000:]
    assert (root / "site" / "index.html").is_file()


def deepen(folder: Path, depth: int, leaf: str, text: str) -> None:
    """`folder` grown by `depth` nested folders `d`, `leaf` holding `text` at the bottom: made
    through descriptors, as no path that long can be named."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        leaf_fd = os.open(leaf, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf_fd, text.encode())
        os.close(leaf_fd)
    finally:
        os.close(fd)


def flatten(folder: Path) -> None:
    """Remove what deepen() made, without recursion (shutil.rmtree recurses per level)."""
    chain = [os.open(folder, os.O_RDONLY)]
    while "d" in os.listdir(chain[-1]):
        chain.append(os.open("d", os.O_RDONLY, dir_fd=chain[-1]))
    while len(chain) > 1:
        fd = chain.pop()
        for name in os.listdir(fd):
            os.unlink(name, dir_fd=fd)
        os.close(fd)
        os.rmdir("d", dir_fd=chain[-1])
    os.close(chain[0])


DEEP = 2_500  # pathlib's rglob (Python 3.11) recurses per level: a RecursionError past ~1,000
DEEP_FACT = BASE["facts/good.yaml"].replace("hw.gpu.count", "hw.deep")
DEEP_CASES = [
    # docs/: `docs` was a RecursionError traceback (copy_docs' rglob); lint walked it for over 60 s (realpath() of every folder of the chain)
    ("docs", "x.md", "docs", 2, "docs: folders nested more than 100 deep; not read"),
    ("docs", "x.md", "lint", 2, "mkdocs.yml:2: docs_dir: folders nested more than 100 deep"),
    ("docs/status", "x.md", "docs", 2, "docs/status: folders nested more than 100 deep; not read"),
    # facts/: every command was a RecursionError traceback from the listing in knowledge/kbcache.py and kb.py; now they list it with walk.py too, and every command refuses it by name
    *[
        ("facts", "x.yaml", c, 2, "facts: folders nested more than 100 deep; not read")
        for c in ("lint", "list", "show", "status", "docs", "export-ansible", "verify-dry")
    ],
    # ... held (guards): a tree under checks/, runbooks/, results/runs/, templates/ or proposals/ is never walked
    *[
        (folder, "x.txt", c, 0, "")
        for folder in ("checks", "runbooks", "results/runs", "templates", "proposals")
        for c in ("lint", "docs", "status")
    ],
]


@pytest.mark.parametrize(
    ("folder", "leaf", "command", "code", "said"),
    DEEP_CASES,
    ids=[f"{f} {c}" for f, _, c, _, _ in DEEP_CASES],
)
def test_a_folder_tree_thousands_deep(
    tmp_path: Path, folder: str, leaf: str, command: str, code: int, said: str
) -> None:
    """A folder of the knowledge base grown 2,500 folders deep (one `mkdir -p`): one line
    and exit 2 where it is read, within 10 s, never a traceback or a walk without end."""
    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, {"mkdocs.yml": "site_name: x\ndocs_dir: docs\n", "docs/index.md": "# hi\n"})
    (root / folder).mkdir(parents=True, exist_ok=True)
    before = outside_tree(out)
    deepen(root / folder, DEEP, leaf, DEEP_FACT)
    try:
        argv = COMMANDS.get(command, [command])
        got, output, _ = _in_process(["--root", str(root), *argv], 10)
    finally:
        flatten(root / folder)
    assert got == code, output[-3000:]
    assert said in output and "Traceback" not in output, output[-3000:]
    assert outside_tree(out) == before
