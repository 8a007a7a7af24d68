"""The command line as a new team meets it: --root anywhere, the knowledge base found upwards,
`python -m factbook`, verify-facts under its own name, what to run when nothing is selected."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, cli, fact, make_kb

from factbook.commands.cli import run

BIN = Path(sys.executable).parent


def _env(cwd_root: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("FACTBOOK_ROOT", None)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    return env


def _kb(tmp_path: Path) -> Path:
    return make_kb(tmp_path / "kb", [fact("t.python", "python.version", {"exists": True})])


@pytest.mark.parametrize(
    "argv",
    [
        ["--root", "{root}", "lint"],
        ["lint", "--root", "{root}"],
        ["--root", "{root}", "list"],
        ["list", "--root", "{root}"],
        ["status", "--out", "-", "--root", "{root}"],
        ["eagle3", "--help"],  # sub-subcommands accept it too (checked below by parsing)
    ],
)
def test_root_before_or_after_the_command(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    root = _kb(tmp_path)
    argv = [a.replace("{root}", str(root)) for a in argv]
    if argv[-1] == "--help":
        from factbook.commands.cli import build_parser

        parser = build_parser()
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        eagle = sub.choices["eagle3"]
        inner = next(a for a in eagle._actions if a.__class__.__name__ == "_SubParsersAction")
        for child in inner.choices.values():
            assert any("--root" in a.option_strings for a in child._actions), child.prog
        return
    assert run(argv) == 0, capsys.readouterr().err


def test_root_found_upwards_like_git(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    deep = root / "facts" / "sub"
    deep.mkdir()
    out = subprocess.run(
        [str(BIN / "factbook"), "lint"], cwd=deep, env=_env(), capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok: 1 facts"), out.stdout
    # outside any knowledge base: one clear line, exit 2
    lost = tmp_path / "elsewhere"
    lost.mkdir()
    out = subprocess.run(
        [str(BIN / "factbook"), "lint"], cwd=lost, env=_env(), capture_output=True, text=True
    )
    assert out.returncode == 2
    assert "no facts/ folder here" in out.stderr and "factbook init" in out.stderr
    assert "Traceback" not in out.stderr


def test_python_dash_m_factbook(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "factbook", "--root", str(root), "lint"],
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "ok: 1 facts" in out.stdout


def test_verify_facts_is_its_own_program(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    out = subprocess.run(
        [str(BIN / "verify-facts"), "--bogus", "--root", str(root)],
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert out.stderr.startswith("usage: verify-facts "), out.stderr
    assert "verify-facts: error: unrecognized arguments: --bogus" in out.stderr
    out = subprocess.run(
        [str(BIN / "verify-facts"), "--root", str(root), "--target", "nowhere"],
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert out.stderr.startswith("verify-facts: error: unknown target 'nowhere'"), out.stderr


def test_nothing_selected_says_what_can_run(tmp_path: Path) -> None:
    facts = [
        fact("a.one", "python.version", {"exists": True}, target="other"),
        fact("a.two", "python.version", {"exists": True}, target="other"),
    ]
    root = make_kb(tmp_path / "kb", facts)
    code, _out, err = cli(root, "verify", "--target", "local", "--no-save")
    assert code == 0
    assert "no checks selected for local" in err
    assert "targets with checks: other (2)" in err
    assert "factbook discover --target local" in err


def test_shipped_kb_local_points_at_its_targets() -> None:
    """The shipped knowledge base names a target on every check: the message lists them
    with their counts, as the knowledge base holds them."""
    from collections import Counter

    from factbook.knowledge.kb import load_kb

    kb = load_kb(REPO)
    want = Counter(f.check_target() for f in kb.facts.values() if f.check)
    code, _out, err = cli(REPO, "verify", "--target", "local", "--no-save")
    assert code == 0
    listed = dict(re.findall(r"([\w.-]+) \((\d+)\)", err.split("targets with checks: ")[1]))
    assert {k: int(v) for k, v in listed.items()} == dict(want)


def test_list_never_cuts_a_title_mid_word(tmp_path: Path) -> None:
    """A terminal's width cuts `factbook list` lines at a word, marked with …; a pipe gets
    them whole (issue 27)."""
    from factbook.commands.query import fit

    line = "bench.sglang.x  benchmarks   verified  SGLang CUDA graphs + triton attn, single-stream"
    cut = fit(line, 60)
    assert len(cut) <= 60 and cut.endswith("…")
    assert line.startswith(cut[:-1]) and line[len(cut) - 1] == " "  # ends where a word ended
    assert fit(line, len(line)) == line
    long_title = "A title " + "word " * 40 + "end"
    root = make_kb(
        tmp_path / "kb",
        [fact("t.long", "python.version", {"exists": True}, title=long_title)],
    )
    out = subprocess.run(
        [sys.executable, "-m", "factbook", "--root", str(root), "list"],
        env={**_env(), "COLUMNS": "60"},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert long_title in out.stdout  # piped: whole


def test_pytest_extra_is_declared() -> None:
    """`pip install 'factbook[pytest]'` brings pytest for `pytest --factbook` (issue 27.4)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(req.startswith("pytest>=") for req in extras["pytest"])
    assert "pytest" in extras["all"][0]
    for doc in ("README.md", "docs/integrations.md"):
        assert "factbook[pytest]" in (REPO / doc).read_text(), doc


def test_first_lint_with_an_empty_cache(tmp_path: Path) -> None:
    """A fresh machine (no ~/.cache/factbook): the first lint scans the built-in probes while
    the knowledge base's reads are confined to its root, and still knows every probe."""
    root = _kb(tmp_path)
    env = {**_env(), "XDG_CACHE_HOME": str(tmp_path / "empty-cache")}
    out = subprocess.run(
        [sys.executable, "-m", "factbook", "--root", str(root), "lint"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "unknown probe" not in out.stdout + out.stderr
    assert list((tmp_path / "empty-cache" / "factbook").glob("probes-*.json"))


def test_the_probe_catalog_cache_keeps_only_the_newest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every code version (an install, a checkout, a test's wheel) writes its own catalog to
    ~/.cache/factbook; the oldest beyond KEPT_CATALOGS are removed, the current one kept."""
    from factbook.probes import catalog

    folder = tmp_path / "factbook"
    folder.mkdir()
    for i in range(catalog.KEPT_CATALOGS + 5):
        old = folder / f"probes-old{i:02d}.json"
        old.write_text("{}")
        os.utime(old, ns=(i * 10**9, i * 10**9))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    catalog.builtin_catalog.cache_clear()
    try:
        assert catalog.builtin_catalog().specs
    finally:
        catalog.builtin_catalog.cache_clear()
    left = sorted(p.name for p in folder.glob("probes-*.json"))
    assert len(left) == catalog.KEPT_CATALOGS
    assert catalog._cache_path().name in left and "probes-old00.json" not in left
