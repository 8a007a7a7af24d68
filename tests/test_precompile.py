"""tests/precompile.py: the bytecode the xdist controller writes is the bytecode the workers
and subprocesses read, even where PYTHONDONTWRITEBYTECODE forbids them to write any."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from precompile import precompile, rewrite_modules


def _tree(root: Path) -> tuple[Path, Path]:
    src, tests = root / "src", root / "tests"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "__init__.py").write_text("")
    (src / "pkg" / "mod.py").write_text("VALUE = 1\n")
    tests.mkdir()
    (tests / "helper.py").write_text("from pkg.mod import VALUE\n")
    (tests / "test_demo.py").write_text(
        textwrap.dedent(
            """\
            import helper

            def test_value():
                assert helper.VALUE == 2
            """
        )
    )
    return src, tests


def test_workers_read_what_the_controller_wrote(pytestconfig: pytest.Config, tmp_path: Path):
    src, tests = _tree(tmp_path)
    precompile(pytestconfig, src, tests, test_modules=True)
    tag = sys.implementation.cache_tag
    assert (src / "pkg" / "__pycache__" / f"mod.{tag}.pyc").is_file()
    assert (tests / "__pycache__" / f"helper.{tag}.pyc").is_file()
    rewritten = list((tests / "__pycache__").glob(f"test_demo.{tag}-pytest-*.pyc"))
    assert len(rewritten) == 1
    assert not (tests / "__pycache__" / f"test_demo.{tag}.pyc").exists()  # pytest's, not plain
    before = {p: p.read_bytes() for p in tmp_path.rglob("*.pyc")}
    # nothing left to write the second time
    assert rewrite_modules(pytestconfig, [(tests / "test_demo.py").resolve()]) == 0

    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join([str(src), str(tests)]),
        "PYTEST_DEBUG": "1",  # pytest traces where each rewritten module came from
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
         str(tests / "test_demo.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    out = run.stdout + run.stderr
    assert run.returncode == 1, out  # the test fails, with the rewritten assertion's detail
    lines = out.splitlines()
    assert any("found cached rewritten pyc for" in x and "test_demo.py" in x for x in lines), out
    assert not any("rewriting" in x and "test_demo.py" in x for x in lines), out
    assert "where 1 = helper.VALUE" in run.stdout, run.stdout
    assert {p: p.read_bytes() for p in tmp_path.rglob("*.pyc")} == before


def test_a_changed_test_module_is_rewritten_again(pytestconfig: pytest.Config, tmp_path: Path):
    _, tests = _tree(tmp_path)
    module = (tests / "test_demo.py").resolve()
    assert rewrite_modules(pytestconfig, [module]) == 1
    module.write_text(module.read_text() + "\n\ndef test_more():\n    assert True\n")
    assert rewrite_modules(pytestconfig, [module]) == 1  # pytest's hash no longer matches


def test_factbooks_own_modules_come_rewritten(pytestconfig: pytest.Config):
    """pytest rewrites every module of factbook (a pytest11 plugin's distribution); the
    controller writes them first, so no worker parses one (tests/precompile._marked_modules)."""
    from _pytest.assertion import rewrite
    from precompile import _marked_modules

    src = Path(__file__).resolve().parent.parent / "src"
    marked = _marked_modules(src)
    names = {p.relative_to(src).as_posix() for p in marked}
    assert "factbook/verification/discover.py" in names
    assert "factbook/integrations/pytest_plugin.py" in names
    rewrite_modules(pytestconfig, marked)  # the controller did; a file edited since is redone
    for module in marked:
        pyc = rewrite.get_cache_dir(module) / (module.name[:-3] + rewrite.PYC_TAIL)
        assert rewrite._read_pyc(module, pyc) is not None, module
