"""pkg.version's fast path answers exactly what importlib.metadata answers.

The probe reads `.dist-info`/`.egg-info` listings and METADATA headers itself (importlib.metadata
costs 25-50 ms to import on a box and ~2 ms per lookup); importlib.metadata is the oracle here,
in the same interpreter, on every distribution this venv and the system Python have, and on a
sys.path built to hit the corner cases: name spellings, several folders, shadowed versions,
egg-info files and folders, folded and missing headers, a zip on sys.path, an egg.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")

# Run in a fresh interpreter: every distribution it sees, each name in four spellings, plus
# names it lacks; prints [name, fast, oracle, decided] rows that disagree and a summary.
ORACLE = r"""
import json, sys, types
src, extra = sys.argv[1], json.loads(sys.argv[2])
# the probe modules as the agent loads them (no factbook package: any Python the box has)
for package in ("factbook", "factbook.probes"):
    stub = types.ModuleType(package)
    stub.__path__ = []
    sys.modules[package] = stub
def load(name):
    module = types.ModuleType("factbook.probes." + name)
    module.__package__ = "factbook.probes"
    sys.modules[module.__name__] = module
    path = src + "/factbook/probes/" + name + ".py"
    exec(compile(open(path).read(), path, "exec"), module.__dict__)
    return module
load("common")
software = load("software")
sys.path[0:0] = extra["front"]
from importlib import metadata
names = {d.metadata["Name"] for d in metadata.distributions() if d.metadata["Name"]}
names |= set(extra["names"])
rows, decided, checked = [], 0, 0
for name in sorted(names):
    for spelling in {name, name.upper(), name.replace("-", "_"), name.replace("_", ".")}:
        fast = software.dist_info_version(spelling)
        try:
            want = metadata.version(spelling)
        except metadata.PackageNotFoundError:
            want = None
        checked += 1
        if fast is software.UNDECIDED:
            continue
        decided += 1
        if fast != want:
            rows.append([spelling, fast, want])
        if software.pkg_version(spelling) != want:
            rows.append([spelling, "pkg_version", software.pkg_version(spelling), want])
print(json.dumps({"wrong": rows, "decided": decided, "checked": checked,
                  "loaded": "importlib.metadata" in sys.modules}))
"""


def oracle(python: str, front: list[str], names: list[str]) -> dict:
    proc = subprocess.run(
        [python, "-c", ORACLE, SRC, json.dumps({"front": front, "names": names})],
        capture_output=True,
        text=True,
        cwd="/",
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def dist_info(folder: Path, dirname: str, metadata: str | None, kind: str = "METADATA") -> None:
    info = folder / dirname
    info.mkdir(parents=True)
    if metadata is not None:
        (info / kind).write_text(metadata, encoding="utf-8")


def test_every_installed_distribution_matches_importlib_metadata() -> None:
    result = oracle(sys.executable, [], ["factbook-no-such-package"])
    assert result["wrong"] == []
    assert result["decided"] == result["checked"] > 40  # this venv: all plain dist-info folders


# Every other interpreter here (pyenv's, as the box may have): 3.10+ decide themselves, older
# ones (their importlib.metadata matches names differently) always ask importlib.metadata.
OTHER_PYTHONS = sorted(Path("/root/.pyenv/versions").glob("3.*/bin/python3"))


@pytest.mark.skipif(not OTHER_PYTHONS, reason="no other Python interpreters here")
@pytest.mark.parametrize("python", OTHER_PYTHONS, ids=lambda p: p.parent.parent.name)
def test_other_pythons_match_their_importlib_metadata(python: Path) -> None:
    version = tuple(int(x) for x in python.parent.parent.name.split(".")[:2])
    if version < (3, 8):
        pytest.skip("importlib.metadata is 3.8+ (3.7 boxes use the importlib_metadata backport)")
    result = oracle(str(python), [], ["pip", "setuptools", "factbook-no-such-package"])
    assert result["wrong"] == []
    assert (result["decided"] > 0) == (version >= (3, 10))


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="no system python3")
def test_system_python_with_debian_egg_info_matches() -> None:
    result = oracle("/usr/bin/python3", [], ["factbook-no-such-package"])
    assert result["wrong"] == []
    assert result["decided"] > 0


def test_corner_cases_match_importlib_metadata(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    head = "Metadata-Version: 2.1\nName: {n}\n"
    # spellings: dots, dashes, underscores and case all normalise to one name
    dist_info(first, "Zope.Interface_Extra-1.0.dist-info", head.format(n="x") + "Version: 1.0\n")
    # shadowed: the first folder on sys.path wins
    dist_info(first, "shadowed-2.0.dist-info", head.format(n="shadowed") + "Version: 2.0\n")
    dist_info(second, "shadowed-1.0.dist-info", head.format(n="shadowed") + "Version: 1.0\n")
    # headers end at the first empty line; a Version in the body does not count
    body = head.format(n="bodyonly") + "Summary: s\n\nVersion: 9.9\n"
    dist_info(second, "bodyonly-1.0.dist-info", body)
    # a lower-case key, spaces around the value, a folded Description before it
    odd = head.format(n="odd") + "Description: a\n  Version: 7\nversion:   3.1.4  \n"
    dist_info(second, "odd-3.1.4.dist-info", odd)
    # egg-info folder (PKG-INFO) and egg-info file (its text is PKG-INFO)
    dist_info(second, "eggdir-0.5-py3.11.egg-info", head.format(n="eggdir") + "Version: 0.5\n",
              kind="PKG-INFO")  # fmt: skip
    (second / "eggfile-0.6.egg-info").write_text(head.format(n="eggfile") + "Version: 0.6\n")
    # dist-info without METADATA but with PKG-INFO; one with neither
    dist_info(second, "pkginfo-1.1.dist-info", head.format(n="pkginfo") + "Version: 1.1\n",
              kind="PKG-INFO")  # fmt: skip
    dist_info(second, "empty-1.0.dist-info", None)
    # a folded Version: importlib.metadata decides
    dist_info(second, "folded-1.0.dist-info", head.format(n="folded") + "Version: 1\n .0\n")
    names = ["folded", "zope-interface-extra", "Zope.Interface.Extra", "shadowed", "bodyonly",
             "odd", "eggdir", "eggfile", "pkginfo", "empty", "absent"]  # fmt: skip
    result = oracle(sys.executable, [str(first), str(second), str(tmp_path / "missing")], names)
    assert result["wrong"] == []
    assert not result["loaded"] or result["decided"] < result["checked"]


def test_undecodable_metadata_is_left_to_importlib_metadata(tmp_path: Path) -> None:
    from factbook.probes import software

    (tmp_path / "latin-1.0.dist-info").mkdir()
    (tmp_path / "latin-1.0.dist-info" / "METADATA").write_bytes(b"Name: latin\nVersion: \xe9\n")
    assert software._info_version(str(tmp_path / "latin-1.0.dist-info")) is software.UNDECIDED


def test_zip_and_egg_on_sys_path_go_to_importlib_metadata(tmp_path: Path) -> None:
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipped-1.2.dist-info/METADATA", "Name: zipped\nVersion: 1.2\n")
    egg = tmp_path / "legacy-0.1.egg"
    (egg / "EGG-INFO").mkdir(parents=True)
    (egg / "EGG-INFO" / "PKG-INFO").write_text("Name: legacy\nVersion: 0.1\n")
    result = oracle(sys.executable, [str(archive)], ["zipped", "absent"])
    assert result["wrong"] == [] and result["decided"] == 0
    result = oracle(sys.executable, [str(egg)], ["legacy", "absent"])
    assert result["wrong"] == [] and result["decided"] == 0


def test_agent_loads_the_bench_probes_without_importlib_metadata_or_typing() -> None:
    """What the box pays at agent start, loaded as the agent loads them: none of the heavy
    modules a lookup, a hash or a command no longer needs."""
    code = r"""
import sys
from pathlib import Path
src = Path(sys.argv[1]) / "factbook"
text = lambda p: (src / p).read_text()
scope = {"__name__": "factbook_agent"}
exec(compile(text("verification/agent.py"), "agent.py", "exec"), scope)
scope["install_shared"]({"factbook.probes.common": text("probes/common.py")})
probes, broken = scope["load_probes"](
    {f"factbook/probes/{m}.py": text(f"probes/{m}.py") for m in ("files", "host", "software")}
)
assert not broken, broken
print(probes["pkg.version"]("pip"))
heavy = ("importlib.metadata", "typing", "email", "configparser", "traceback", "glob")
print(sorted(m for m in heavy if m in sys.modules))
"""
    proc = subprocess.run([sys.executable, "-c", code, SRC], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    from importlib import metadata

    version, loaded = proc.stdout.splitlines()
    assert version == metadata.version("pip") and loaded == "[]"
