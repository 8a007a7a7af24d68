"""Bytecode written once per tree content, before pytest-xdist's workers start.

Why: where PYTHONDONTWRITEBYTECODE is set (this machine's environment sets it) no process
writes a .pyc, yet every process still reads a valid one. Without them each xdist worker
compiled factbook's modules and assertion-rewrote every test module it collected (every worker
collects every file: about 4.5 s of CPU each), and every subprocess running factbook from src/
(mkdocs builds, CLI runs, kernels) compiled each module it imported. Where the variable is
not set the workers wrote the same files at the same moment, each having compiled them.

So the process that starts the workers writes them first: `compileall` for src/ and the
helper modules of tests/ (ordinary .pyc, checked against the source's mtime and size as
always), and pytest's own rewritten .pyc for the test modules (hash-checked against the
source by pytest, PEP 552). A .pyc that is already valid is left alone, so a second run pays
a few stat calls. Writing the rewritten modules uses pytest's assertion-rewrite internals
(_pytest.assertion.rewrite); if a pytest release changes them, nothing is written and the
workers rewrite the modules themselves, as before.
"""

from __future__ import annotations

import compileall
import contextlib
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest


def precompile(config: pytest.Config, src: Path, tests: Path, *, test_modules: bool) -> None:
    """Write the .pyc of src/ and of the helper modules in tests/ that are missing or out of
    date, and with `test_modules` (several workers will collect them all) the test modules'."""
    compileall.compile_dir(src, quiet=1)
    for module in sorted(tests.glob("*.py")):
        if not _rewritten(module):
            compileall.compile_file(module, quiet=1)
    rewrite_modules(config, _marked_modules(src))
    if test_modules:
        rewrite_modules(config, _rewritten_modules(tests))


def _rewritten(module: Path) -> bool:
    """Modules pytest rewrites itself (test files and conftest.py), by its default patterns."""
    return module.name.startswith("test_") or module.name == "conftest.py"


def _rewritten_modules(tests: Path) -> list[Path]:
    return sorted(p.resolve() for p in tests.glob("*.py") if _rewritten(p))


def _marked_modules(src: Path) -> list[Path]:
    """factbook's own modules, which pytest also rewrites: it marks every module of a
    distribution that declares a pytest11 plugin (factbook's pytest integration). Rewriting
    one parses it with `ast.parse`, and in Python 3.11 (before 3.11.9, gh-106905) two threads
    building an AST at once can fail with `SystemError: AST constructor recursion depth
    mismatch`: a module imported lazily while a transport thread of an earlier test logs a
    traceback (3.11 parses the failing line to underline it) failed a fresh-clone run. With
    the rewritten .pyc written here first, no worker parses them."""
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return []
    hooks = [h for h in sys.meta_path if isinstance(h, rewrite.AssertionRewritingHook)]
    marked = getattr(hooks[0], "_is_marked_for_rewrite", None) if hooks else None
    state = getattr(hooks[0], "config", None) if hooks else None
    if marked is None or state is None:
        return []
    state = state.stash.get(rewrite.assertstate_key, None)
    if state is None:
        return []
    modules = []
    for path in sorted(src.rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        with contextlib.suppress(Exception):  # a private API changed: that module is left
            if marked(name, state):
                modules.append(path.resolve())
    return modules


def rewrite_modules(config: pytest.Config, modules: Iterable[Path]) -> int:
    """pytest's assertion-rewritten .pyc of each module, written where pytest looks for it
    (the same atomic write pytest makes); the number written."""
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return 0
    needed = ("PYC_TAIL", "_read_pyc", "_rewrite_test", "_write_pyc", "assertstate_key")
    if not all(hasattr(rewrite, name) for name in needed):
        return 0
    state = config.stash.get(rewrite.assertstate_key, None)
    if state is None:  # --assert=plain: nothing is rewritten
        return 0
    written = 0
    for module in modules:
        cache = rewrite.get_cache_dir(module)
        pyc = cache / (module.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(module, pyc) is not None:
            continue
        with contextlib.suppress(OSError, SyntaxError):  # the worker then reports it
            cache.mkdir(exist_ok=True)
            source_hash, code = rewrite._rewrite_test(module, config)
            written += bool(rewrite._write_pyc(state, code, source_hash, pyc))
    return written
