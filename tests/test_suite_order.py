"""The suite's own scheduling and build cache (tests/conftest.py, tests/build_cache.py).

scripts/test runs pytest-xdist with --dist loadfile: the longest files must be handed out
first, so conftest.py names them and turns off xdist's own reordering by test count. A name
left behind by a rename would silently lose its place, and a cache key that missed a change
to the sources would test a stale wheel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
from build_cache import (
    KEEP,
    STAMP,
    cached_answer,
    cached_entry,
    content_dir,
    copy_venv,
    requirements_key,
    wheel_key,
)
from conftest import SLOW_FILES

TESTS = Path(__file__).resolve().parent


def test_every_slow_file_exists_once() -> None:
    assert len(set(SLOW_FILES)) == len(SLOW_FILES)
    missing = [name for name in SLOW_FILES if not (TESTS / name).is_file()]
    assert not missing, f"conftest.SLOW_FILES names files that are gone: {missing}"


def test_xdist_keeps_the_order_conftest_gives(request: pytest.FixtureRequest) -> None:
    pytest.importorskip("xdist")
    assert request.config.option.loadscopereorder is False


def _tree(root: Path) -> Path:
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(TESTS.parent / name, root / name)
    (root / "src" / "factbook").mkdir(parents=True)
    (root / "src" / "factbook" / "a.py").write_text("A = 1\n", encoding="utf-8")
    return root


def test_the_wheel_key_follows_every_input_and_nothing_else(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    first = wheel_key(root)
    assert wheel_key(root) == first
    cache = root / "src" / "factbook" / "__pycache__"
    cache.mkdir()
    (cache / "a.cpython-311.pyc").write_bytes(b"\0")  # caches are not built into the wheel
    (root / "src" / "factbook.egg-info").mkdir()
    (root / "src" / "factbook.egg-info" / "PKG-INFO").write_text("x", encoding="utf-8")
    assert wheel_key(root) == first
    (root / "src" / "factbook" / "a.py").write_text("A = 2\n", encoding="utf-8")
    second = wheel_key(root)
    assert second != first
    (root / "src" / "factbook" / "a.py").chmod(0o755)
    assert wheel_key(root) != second
    (root / "src" / "factbook" / "a.py").chmod(0o644)
    assert wheel_key(root) == second
    (root / "src" / "factbook" / "b.py").write_text("", encoding="utf-8")
    assert wheel_key(root) != second
    (root / "src" / "factbook" / "b.py").unlink()
    (root / "README.md").write_text("changed\n", encoding="utf-8")
    assert wheel_key(root) not in (first, second)


def test_an_entry_is_built_once_by_one_of_two_racing_builders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FACTBOOK_TEST_BUILDS", str(tmp_path / "cache"))
    monkeypatch.delenv("FACTBOOK_TEST_FRESH", raising=False)
    builds: list[Path] = []

    def build(path: Path) -> None:
        builds.append(path)
        path.mkdir()
        time.sleep(0.2)  # long enough for the other thread to be waiting on the lock
        (path / "made").write_text("ok", encoding="utf-8")

    found: list[Path] = []
    racers = [
        threading.Thread(target=lambda: found.append(cached_entry("thing-k1", "thing-*", build)))
        for _ in range(2)
    ]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    assert len(builds) == 1 and found == [builds[0], builds[0]]
    assert (found[0] / "made").read_text(encoding="utf-8") == "ok" and (found[0] / STAMP).is_file()
    # a build that died half-way (no stamp) is removed and made again
    (found[0] / STAMP).unlink()
    (found[0] / "debris").write_text("", encoding="utf-8")
    assert cached_entry("thing-k1", "thing-*", build) == found[0] and len(builds) == 2
    assert not (found[0] / "debris").exists()
    monkeypatch.setenv("FACTBOOK_TEST_FRESH", "1")
    cached_entry("thing-k1", "thing-*", build)
    assert len(builds) == 3


def test_only_the_newest_entries_of_a_kind_stay_once_unused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FACTBOOK_TEST_BUILDS", str(tmp_path / "cache"))
    made = [cached_entry(f"thing-{n}", "thing-*", Path.mkdir) for n in range(KEEP + 2)]
    other = cached_entry("other-0", "other-*", Path.mkdir)
    assert all(p.is_dir() for p in made)  # all used just now: another run may hold them
    hour_ago = time.time() - 3600
    for n, path in enumerate(made):
        os.utime(path / STAMP, (hour_ago + n, hour_ago + n))
    newest = cached_entry("thing-new", "thing-*", Path.mkdir)
    kept = sorted(p.name for p in (tmp_path / "cache").glob("thing-*"))
    assert kept == sorted([newest.name] + [p.name for p in made[-(KEEP - 1) :]])
    assert other.is_dir()  # another kind is not counted


def _wheel(folder: Path, requires: list[str], description: str = "") -> Path:
    """A wheel-shaped zip holding only the METADATA that requirements_key reads."""
    folder.mkdir(parents=True)
    wheel = folder / "demo-0.1-py3-none-any.whl"
    headers = "".join(f"Requires-Dist: {r}\n" for r in requires)
    metadata = f"Metadata-Version: 2.1\nName: demo\nVersion: 0.1\n{headers}\n{description}"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("demo-0.1.dist-info/METADATA", metadata)
        archive.writestr("demo/__init__.py", "")
    return wheel


def test_the_dependencies_key_is_the_wheels_requirements(tmp_path: Path) -> None:
    base = requirements_key(_wheel(tmp_path / "a", ["pyyaml>=6", 'mkdocs; extra == "handbook"']))
    # another wheel with the same requirements (new sources) shares it; the description's
    # text, even a line that looks like a header, does not count
    same = _wheel(tmp_path / "b", ["pyyaml>=6", 'mkdocs; extra == "handbook"'], "Requires-Dist: x")
    assert requirements_key(same) == base
    changed = _wheel(tmp_path / "c", ["pyyaml>=7", 'mkdocs; extra == "handbook"'])
    assert requirements_key(changed) != base
    assert requirements_key(_wheel(tmp_path / "d", ["pyyaml>=6"])) != base


def test_a_copied_venv_runs_as_itself(tmp_path: Path) -> None:
    """copy_venv: the copy's interpreter has the copy as its prefix, its scripts run with
    it, and the original's files are shared, not changed."""
    original = tmp_path / "deps-x"
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(original)], capture_output=True
    )
    assert made.returncode == 0, made.stderr
    script = original / "bin" / "hello"
    script.write_text(f"#!{original}/bin/python\nimport sys\nprint(sys.prefix)\n")
    script.chmod(0o755)
    module = next(original.glob("lib/python*/site-packages")) / "shared_mod.py"
    module.write_text("X = 1\n")
    copy = tmp_path / "venv-y"
    copy_venv(original, copy)
    ran = subprocess.run([str(copy / "bin" / "hello")], capture_output=True, text=True)
    assert ran.stdout.strip() == str(copy), ran.stderr
    assert script.read_text().startswith(f"#!{original}/bin/python")  # the original unchanged
    assert str(original) not in (copy / "pyvenv.cfg").read_text()
    assert str(original) not in (copy / "bin" / "activate").read_text()
    copied = next(copy.glob("lib/python*/site-packages")) / "shared_mod.py"
    assert copied.stat().st_ino == module.stat().st_ino  # hard-linked, not copied


def test_an_answer_is_computed_once_per_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FACTBOOK_TEST_BUILDS", str(tmp_path / "cache"))
    monkeypatch.delenv("FACTBOOK_TEST_FRESH", raising=False)
    calls: list[int] = []

    def compute() -> dict:
        calls.append(1)
        return {"answers": [1, [2, None]], "n": len(calls)}

    assert cached_answer("oracle", "k1", compute) == {"answers": [1, [2, None]], "n": 1}
    assert cached_answer("oracle", "k1", compute) == {"answers": [1, [2, None]], "n": 1}
    assert cached_answer("oracle", "k2", compute)["n"] == 2  # another key: asked again
    monkeypatch.setenv("FACTBOOK_TEST_FRESH", "1")
    assert cached_answer("oracle", "k1", compute)["n"] == 3


def test_a_content_dir_is_named_by_its_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FACTBOOK_TEST_BUILDS", str(tmp_path / "cache"))
    files = {"llama/config.json": '{"a": 1}', "eagle/config.json": "{}"}
    first = content_dir("models", files)
    assert (first / "llama" / "config.json").read_text() == '{"a": 1}'
    assert content_dir("models", dict(reversed(files.items()))) == first
    other = content_dir("models", {**files, "eagle/config.json": '{"b": 2}'})
    assert other != first and (other / "eagle" / "config.json").read_text() == '{"b": 2}'
