"""The built-in probes, derived from their functions: names, arguments, what they return.

Each probe module in this folder declares its probes once (`PROBES` plus the functions'
signatures and docstrings); `probes/scan.py` reads them with ast, never importing the code
that is shipped to the box (it may import torch lazily). A new module needs no registration:
any module here with a `PROBES` literal is one. Parsing every module costs ~10 ms per CLI run,
so the result is cached on disk, keyed by the sources' sizes and modification times.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path

from factbook.errors import Problem, WriteFailed
from factbook.knowledge.kbfiles import confined
from factbook.probes.scan import ProbeSpec, scan_file
from factbook.store.atomic import throwaway_writes, write_bytes_atomic

FOLDER = Path(__file__).resolve().parent
_CACHE_VERSION = 1


@dataclass(frozen=True)
class Catalog:
    """Every built-in probe's spec and the module (file stem) that implements it."""

    specs: dict[str, ProbeSpec]
    modules: dict[str, str]
    problems: list[Problem] = field(default_factory=list)


def _sources() -> list[Path]:
    return sorted(FOLDER.glob("*.py"))


def scan_builtins() -> Catalog:
    """Read every module in this folder (no cache); those without PROBES declare nothing."""
    specs: dict[str, ProbeSpec] = {}
    modules: dict[str, str] = {}
    problems: list[Problem] = []
    for path in _sources():
        display = f"factbook/probes/{path.name}"
        # the engine's own files: read even while a knowledge base's reads are confined to
        # its root (the first lint after an install or upgrade scans here, inside load_kb)
        with confined(None):
            scan = scan_file(path, display, default_doc="")
        problems += scan.problems
        for name, spec in scan.specs.items():
            if name in specs:
                problems.append(Problem(display, scan.lines[name], f"duplicate probe {name!r}"))
            if not spec.returns:
                problems.append(Problem(display, scan.lines[name], f"probe {name!r}: no docstring"))
            specs[name] = spec
            modules[name] = path.stem
    return Catalog(specs, modules, problems)


def _cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    stamp = [_CACHE_VERSION, sys.version_info[:2], str(FOLDER)]
    for path in _sources():
        info = path.stat()
        stamp.append([path.name, info.st_size, info.st_mtime_ns])
    digest = hashlib.sha256(json.dumps(stamp).encode()).hexdigest()[:24]
    return Path(base) / "factbook" / f"probes-{digest}.json"


def _load(path: Path) -> Catalog | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        specs = {
            s["name"]: ProbeSpec(
                s["name"], s["returns"], tuple(s["required"]), tuple(s["optional"])
            )
            for s in data["specs"]
        }
        return Catalog(specs, dict(data["modules"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store(path: Path, catalog: Catalog) -> None:
    data = {"specs": [asdict(s) for s in catalog.specs.values()], "modules": catalog.modules}
    try:
        with throwaway_writes():  # a cache: atomic, no fsync; a fresh temp name (mkstemp)
            write_bytes_atomic(path, json.dumps(data).encode("utf-8"))
        _prune(path.parent)
    except (OSError, WriteFailed):
        pass  # a read-only home only costs the scan next time


KEPT_CATALOGS = 16  # one per code version (each install, checkout, wheel) seen lately


def _prune(folder: Path) -> None:
    """Keep the newest KEPT_CATALOGS catalogs: every install of another code version writes
    one, and an evicted one only costs a scan (~50 ms) if that version runs again."""
    found = []
    for old in folder.glob("probes-*.json"):
        try:
            found.append((old.stat().st_mtime_ns, old))
        except OSError:
            continue
    for _, old in sorted(found, reverse=True)[KEPT_CATALOGS:]:
        old.unlink(missing_ok=True)


@cache
def builtin_catalog() -> Catalog:
    """The built-in catalog, from the disk cache when the sources are unchanged."""
    path = _cache_path()
    catalog = _load(path)
    if catalog is None:
        catalog = scan_builtins()
        if not catalog.problems:
            _store(path, catalog)
    return catalog


def builtin_probes() -> dict[str, ProbeSpec]:
    """Built-in probe name -> spec (what lint checks facts' checks against)."""
    return builtin_catalog().specs


def probe_table() -> str:
    """The Markdown table of built-in probes in docs/verify.md (a test keeps it in sync)."""
    rows = ["| probe | returns |", "|---|---|"]
    for spec in builtin_probes().values():
        args = [*spec.required, *(f"[{a}]" for a in spec.optional)]
        call = f"{spec.name}({', '.join(args)})" if args else spec.name
        rows.append(f"| `{call}` | {spec.returns.replace('|', '&#124;')} |")
    return "\n".join(rows) + "\n"
