"""A cache of the loaded knowledge base: a second run does not parse unchanged YAML again.

`load_kb` parses and validates every fact file, targets.yaml, milestones.yaml and checks/*.py
(50-150 ms for 300 facts, more on a busy machine) although most runs find them unchanged. The
result (facts, milestones, targets, groups, probes and the problems found) is kept in
`ROOT/.factbook-cache/kb-ID.json` (ID: the user's, cachekey.py) with what it was made from:

- the factbook code (size and mtime of every module of the package), Python and PyYAML;
- every file the load read, by size, mtime, ctime, inode and the SHA-256 of the bytes it
  read; the names
  under facts/ and checks/ (a new or removed file counts); which of targets.yaml and
  milestones.yaml existed.

A load uses the cache only when all of that still holds. A file whose size or mtime changed,
or whose mtime is too close to the moment it was read to be trusted (an edit within the
filesystem's clock tick leaves both unchanged), is hashed, and only the same bytes keep the
cache. A load that read anything outside the knowledge base (an Ansible inventory or an ssh
config named by `inventory:` may include other files or whole folders) or could not read a
file is never cached: it is parsed every time.

The file is sealed with a key only this user can read (cachekey.py): one planted by anyone
else who can write the knowledge base, stamps matching, is never read. The cache is JSON of
plain values (never pickle): a value the decoder does not expect, a
class it does not know, a damaged or hand-edited file, all end in a normal parse, never in
code of the file's choosing. Writes are atomic (a temp file and a rename); a knowledge base
on a read-only filesystem just parses every time. FACTBOOK_CACHE=0 turns the cache off.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import functools
import hashlib
import json
import os
import stat
import sys
import time
from dataclasses import MISSING, dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

from factbook.errors import Problem, WriteFailed
from factbook.knowledge import cachekey
from factbook.knowledge.fleet.inventory import Group
from factbook.knowledge.kbfiles import escapes, read_bytes
from factbook.knowledge.limits import INVENTORY_MAX_BYTES
from factbook.knowledge.model import Check, Fact, HistoryEntry, Milestone, Source, Target
from factbook.knowledge.walk import tree_glob
from factbook.probes.scan import ProbeSpec
from factbook.store.atomic import throwaway_writes, write_bytes_atomic

CACHE_DIR = ".factbook-cache"
CACHE_STEM = "kb"  # kb-<the user's key id>.json
FORMAT = 2  # 2: sealed (cachekey)
# A file modified less than this before it was read may change again within the same mtime
# tick without its size or mtime changing: such a file is always checked by its hash.
RACY_NS = 2_000_000_000
# File times come from the kernel's coarse clock, which may lag time.time_ns() by a tick: a
# file written this close to (or after) the start of a load is not cached.
CLOCK_SLACK_NS = 50_000_000
# the largest file a load reads (an Ansible inventory; fact files are far smaller): a larger
# one is not hashed and the load is not cached. At 4 MiB an inventory of 200,000 hosts was
# parsed again by every command (about 8 s), its cache read back in a third of that.
MAX_INPUT = INVENTORY_MAX_BYTES
CLASSES: dict[str, type] = {
    c.__name__: c
    for c in (Fact, Source, Check, HistoryEntry, Milestone, Target, Group, ProbeSpec, Problem)
}
_PACKAGE = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Layout:
    """Where a knowledge base keeps its inputs: single files and folders listed by a glob."""

    files: tuple[str, ...]  # relative to the root; absent ones must stay absent
    trees: tuple[tuple[str, str], ...]  # (folder, glob): every name found counts


class Unsupported(Exception):
    """A value the cache's JSON cannot represent exactly: that load is not cached."""


MAX_CACHE_BYTES = 256 << 20  # far above 1,000 facts' few MB; a larger file is not read


def enabled() -> bool:
    return os.environ.get("FACTBOOK_CACHE", "1") not in ("0", "no", "off", "false")


def cache_path(root: Path) -> Path:
    """This user's cache file of the knowledge base at `root` (cachekey.file_name)."""
    return root / CACHE_DIR / cachekey.file_name(CACHE_STEM)


def load(root: Path, layout: Layout) -> tuple[dict[str, Any], list[Problem]] | None:
    """(the knowledge base's parts, its problems) from the cache, or None to parse."""
    if not enabled():
        return None
    try:
        # inside the root, a regular file (a FIFO would block), bounded: else parse afresh
        # sealed by this user's key (cachekey): a cache someone else planted is never read
        body = cachekey.unseal(read_bytes(cache_path(root), root=root, limit=MAX_CACHE_BYTES))
        if body is None:
            return None
        head, _, data = body.partition(b"\n")
        blob = json.loads(head)
        if not isinstance(blob, dict):
            return None
        blob["data"] = data  # parsed only once the inputs are known to hold
        if blob.get("format") != FORMAT or blob.get("code") != code_stamp():
            return None
        if blob.get("listing") != listing(root, layout):
            return None
        checked_ns = time.time_ns()
        fresh = _inputs_hold(root, blob["inputs"], blob["read_ns"])
        if fresh is None:
            return None
        data = from_json(blob["data"])
        parts, problems = data["parts"], data["problems"]
        if not isinstance(parts, dict) or not isinstance(problems, list):
            return None
        if not all(isinstance(p, Problem) for p in problems):
            return None
        parts = _checked_parts(parts)
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None
    if fresh != blob["inputs"]:  # same bytes, new stat (a touch, a checkout): kept for next time
        _write(root, {**blob, "inputs": fresh, "read_ns": checked_ns})
    return parts, problems


@dataclass(frozen=True)
class Before:
    """Taken before a load reads anything: the clock, and the names it will find."""

    read_ns: int
    listing: dict[str, Any]


def before(root: Path, layout: Layout) -> Before:
    return Before(time.time_ns(), listing(root, layout))


def store(
    root: Path,
    layout: Layout,
    start: Before,
    reads: list[Path],
    parts: dict[str, Any],
    problems: list[Problem],
) -> None:
    """Keep a load for the next run, unless it read outside `root`, could not read a file, or
    a file or name changed after `start` (the load may have seen either version)."""
    if not enabled() or listing(root, layout) != start.listing:
        return
    read_ns = start.read_ns
    inputs: list[list[Any]] = []
    for read in dict.fromkeys(Path(os.path.abspath(p)) for p in reads):
        if not read.is_relative_to(root):
            return  # not cacheable: parsed on every run
        try:
            info = os.stat(read)
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_INPUT:
                return
            if max(info.st_mtime_ns, info.st_ctime_ns) >= read_ns - CLOCK_SLACK_NS:
                return  # written while (or just before) the load read it
            with open(read, "rb") as handle:
                sha = hashlib.sha256(handle.read()).hexdigest()
            if _signature(os.stat(read)) != _signature(info):
                return
        except OSError:
            return
        inputs.append([read.relative_to(root).as_posix(), *_signature(info), sha])
    try:
        data = to_json({"parts": parts, "problems": problems})
    except (Unsupported, ValueError, RecursionError):
        return
    blob = {
        "format": FORMAT,
        "code": code_stamp(),
        "listing": start.listing,
        "read_ns": read_ns,
        "inputs": inputs,
        "data": data,
    }
    _write(root, blob)


def _write(root: Path, blob: dict[str, Any]) -> None:
    """Atomically: a reader sees the old cache or the new one (no fsync: a cache lost in a
    crash only costs a parse)."""
    path = cache_path(root)
    if escapes(path.parent, root) is not None or len(blob["data"]) > MAX_CACHE_BYTES:
        return  # a cache folder that leads out of the knowledge base is never written
    head = {k: v for k, v in blob.items() if k != "data"}
    # a temp file of a fresh random name (mkstemp, O_EXCL): a link planted under a name
    # this process would pick can never be written through
    sealed = cachekey.seal(json.dumps(head).encode("utf-8") + b"\n" + blob["data"])
    if sealed is None:
        return  # no key of this user's to seal it with: parsed each time
    with throwaway_writes(), contextlib.suppress(WriteFailed):  # read-only: parsed each time
        write_bytes_atomic(path, sealed)


def listing(root: Path, layout: Layout) -> dict[str, Any]:
    """Which of the layout's files exist, and every name in its folders, sorted."""
    present = [name for name in layout.files if os.path.lexists(root / name)]
    trees = {}
    for folder, pattern in layout.trees:
        base = root / folder
        # without recursion: a tree too deep is refused by name (NestedTooDeep), as the load
        # that follows would refuse it
        deep = pattern.startswith("**/")
        names = tree_glob(base, pattern[3:], shown=folder) if deep else list(base.glob(pattern))
        trees[folder] = sorted(p.relative_to(root).as_posix() for p in names)
    return {"files": present, "trees": trees}


def code_stamp() -> list[Any]:
    """What the loaded result depends on besides the files: factbook's code, Python, PyYAML."""
    stamp: list[Any] = [sys.version, _yaml_stamp()]
    for folder, dirs, files in os.walk(_PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                info = os.stat(os.path.join(folder, name))
                stamp.append([os.path.join(folder, name), info.st_size, info.st_mtime_ns])
    return stamp


def _yaml_stamp() -> list[Any]:
    import importlib.util

    spec = importlib.util.find_spec("yaml")
    origin = spec.origin if spec is not None else None
    if not origin:
        return []
    info = os.stat(origin)
    return [origin, info.st_size, info.st_mtime_ns]


def _signature(info: os.stat_result) -> list[int]:
    """What changes when a file's bytes do: size, mtime, and ctime and inode, which no tool
    can set back (`touch -d`, `rsync -t` restore an mtime, not a ctime)."""
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]


def _inputs_hold(root: Path, inputs: list[list[Any]], read_ns: int) -> list[list[Any]] | None:
    """The inputs with their current signatures if every file still has the bytes it had,
    else None. A file's signature alone vouches for it when it is unchanged and was not
    written within RACY_NS of the read (an edit in the same clock tick would keep it); any
    other file is hashed."""
    fresh = []
    for rel, *signature, sha in inputs:
        if not isinstance(rel, str) or escapes(root / rel, root) is not None:
            return None  # the cache names only files inside the knowledge base
        try:
            info = os.stat(root / rel)
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode):
            return None
        now = _signature(info)
        newest = max(info.st_mtime_ns, info.st_ctime_ns)
        if now != signature or newest >= read_ns - RACY_NS:
            if info.st_size != signature[0]:
                return None
            try:
                with open(root / rel, "rb") as handle:
                    if hashlib.sha256(handle.read(info.st_size + 1)).hexdigest() != sha:
                        return None
            except OSError:
                return None
        fresh.append([rel, *now, sha])
    return fresh


def _checked_parts(parts: dict[str, Any]) -> dict[str, Any]:
    """The decoded parts, refused (TypeError) unless each holds the expected classes."""
    expected = {
        "facts": Fact,
        "milestones": Milestone,
        "targets": Target,
        "groups": Group,
        "probes": ProbeSpec,
    }
    if set(parts) != set(expected):
        raise TypeError("unexpected parts")
    for key, cls in expected.items():
        value = parts[key]
        if not isinstance(value, dict) or not all(isinstance(v, cls) for v in value.values()):
            raise TypeError(f"unexpected {key}")
    return parts


# JSON keeps str, int, float, bool, None, lists and str-keyed objects; everything else a
# YAML file or the loader produces is tagged: an object whose first key starts with "~".


def to_json(value: Any) -> bytes:
    """`value` (plain data and the model's classes) as JSON; Unsupported for anything else."""
    return json.dumps(_encode(value)).encode("utf-8")


def from_json(data: bytes) -> Any:
    """The value to_json wrote, with only CLASSES instantiated (ValueError, TypeError or
    KeyError for anything else)."""
    return json.loads(data, object_hook=_decode)


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("~") for k in value):
            return {k: _encode(v) for k, v in value.items()}
        return {"~map": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {"~tuple": [_encode(v) for v in value]}
    if isinstance(value, datetime.datetime):
        return {"~datetime": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"~date": value.isoformat()}
    if isinstance(value, bytes):
        return {"~bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, (set, frozenset)):
        return {"~set": [_encode(v) for v in value]}
    name = type(value).__name__
    if is_dataclass(value) and CLASSES.get(name) is type(value):
        out: dict[str, Any] = {"~class": name}
        for field_name, default in _init_fields(type(value)):
            member = getattr(value, field_name)
            if default is _NO_DEFAULT or type(member) is not type(default) or member != default:
                out[field_name] = _encode(member)
        return out
    raise Unsupported(name)


_NO_DEFAULT: Any = object()


@functools.cache
def _init_fields(cls: type) -> tuple[tuple[str, Any], ...]:
    """A model class's constructor fields with their defaults (_NO_DEFAULT: none). A value
    equal to its default, of its type, is left out of the cache and made again by the
    constructor: an inventory's 200,000 targets, each mostly defaults, wrote 100 MB."""
    out = []
    for f in fields(cls):
        if not f.init:
            continue
        if f.default is not MISSING:
            out.append((f.name, f.default))
        elif f.default_factory is not MISSING:
            out.append((f.name, f.default_factory()))
        else:
            out.append((f.name, _NO_DEFAULT))
    return tuple(out)


def _decode(obj: dict[str, Any]) -> Any:
    """json's object_hook: a tagged object back to its value (KeyError/TypeError if odd)."""
    if not obj:
        return obj
    tag = next(iter(obj))
    if not tag.startswith("~"):
        return obj
    if tag == "~class":
        cls = CLASSES[obj.pop("~class")]
        return cls(**obj)
    if len(obj) != 1:
        raise TypeError(f"tagged object with {len(obj)} keys")
    value = obj[tag]
    if tag == "~map":
        return {_key(k): v for k, v in value}
    if tag == "~tuple":
        return tuple(value)
    if tag == "~datetime":
        return datetime.datetime.fromisoformat(value)
    if tag == "~date":
        return datetime.date.fromisoformat(value)
    if tag == "~bytes":
        return base64.b64decode(value.encode("ascii"), validate=True)
    if tag == "~set":
        return {_key(v) for v in value}
    raise TypeError(f"unknown tag {tag}")


def _key(value: Any) -> Any:
    """A decoded mapping key or set member (lists, the only unhashable JSON value, refused)."""
    if isinstance(value, (list, dict)):
        raise TypeError("unhashable key")
    return value
