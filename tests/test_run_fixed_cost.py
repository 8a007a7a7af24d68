"""What every `factbook verify` pays before its first check: the modules it no longer imports.

A run whose expectations hold no regex never needs the `regex` module; importlib.metadata
(email, zipfile, csv) is needed neither by the CLI nor by paramiko's version string. Each is
asserted in a fresh interpreter running the real CLI, so an import that creeps back in fails
here, not in a benchmark.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers import fact, make_kb

HEAVY = ("regex", "importlib.metadata", "email", "factbook.knowledge.install_source")

RUN = r"""
import json, sys
from factbook.commands.cli import run
code = run(sys.argv[1:])
print(json.dumps({"code": code, "loaded": sorted(m for m in HEAVY if m in sys.modules)}),
      file=sys.stderr)
"""


def verify_modules(root: Path) -> dict:
    code = f"HEAVY = {HEAVY!r}\n{RUN}"
    argv = ["--root", str(root), "verify", "--target", "local", "--format", "json", "--no-save"]
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
    assert proc.stderr.strip(), proc
    summary = json.loads(proc.stderr.strip().splitlines()[-1])
    summary["report"] = json.loads(proc.stdout)
    return summary


def test_a_verify_run_imports_no_regex_or_metadata(tmp_path: Path) -> None:
    from importlib import metadata

    facts = [
        fact("sw.pip", "pkg.version", {"eq": metadata.version("pip")}, args={"name": "pip"}),
        fact("sw.none", "pkg.version", {"eq": None}, args={"name": "factbook-no-such-package"}),
        fact("hw.cpu", "cpu.threads", {"ge": 1}),
    ]
    root = make_kb(tmp_path / "kb", facts)
    first = verify_modules(root)  # parses the YAML and writes the cache
    assert first["code"] == 0 and first["loaded"] == []
    second = verify_modules(root)  # served from the cache
    assert second["code"] == 0, second["report"]
    assert second["report"]["summary"]["pass"] == 3
    assert second["loaded"] == []


def test_a_regex_expectation_still_imports_regex_when_it_is_judged(tmp_path: Path) -> None:
    facts = [fact("hw.cpu", "cpu.threads", {"regex": r"^\d+$"})]
    root = make_kb(tmp_path / "kb", facts)
    verify_modules(root)
    result = verify_modules(root)
    assert result["code"] == 0 and result["loaded"] == ["regex"]


LEAN = r"""
import json, sys
{prelude}
from factbook.verification.transports.paramiko_lean import paramiko
during = sorted(m for m in ("importlib.metadata", "invoke", "email") if m in sys.modules)
from importlib import metadata
print(json.dumps({{"version": paramiko.__version__, "real": metadata.version("paramiko"),
                  "during": during, "has_distributions": hasattr(metadata, "distributions")}}))
"""

# A finder that provides distributions beside the standard one: the stand-in cannot know what
# importlib.metadata would answer, so paramiko is imported with the real module.
OTHER_FINDER = r"""
class Finder:
    def find_spec(self, *args):
        return None
    def find_distributions(self, context=None):
        return iter(())
sys.meta_path.insert(0, Finder())
"""


def lean(prelude: str) -> dict:
    code = LEAN.format(prelude=prelude)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_paramiko_imports_without_importlib_metadata_and_keeps_its_version() -> None:
    result = lean("")
    assert result["version"] == result["real"]
    assert result["during"] == []  # neither imported nor left behind as a stand-in
    assert result["has_distributions"]  # `import importlib.metadata` afterwards: the real one


def test_paramiko_falls_back_to_the_real_metadata_where_the_lookup_cannot_decide() -> None:
    result = lean(OTHER_FINDER)
    assert result["version"] == result["real"]
    assert result["during"] == ["email", "importlib.metadata"]
    assert result["has_distributions"]
