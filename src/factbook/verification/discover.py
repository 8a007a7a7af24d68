"""Discover: snapshot a live box and propose new or changed facts (like `goss autoadd`).

A fixed list of observations (hardware, versions, paths) runs through the verify engine. Each
is matched to an existing fact by probe, arguments and expectation path on that target:
  =  the fact's check still passes: nothing to do
  ~  it fails: propose the observed value, status `stale`, and a source naming this run
  +  no fact checks it: propose `discovered.<target>.<key>` with a check that pins the value
Statements and titles of existing facts are never touched; `apply()` writes through writeback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from factbook.judging.expectations import PathMissing, evaluate, get_path
from factbook.judging.outcomes import ERROR, PASS
from factbook.judging.sanitize import first_hidden, strings_in
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.kbfiles import require_inside
from factbook.knowledge.model import Check, Fact, Source, Target
from factbook.store.results import ResultRecord
from factbook.store.writeback import append_facts, update_fact
from factbook.verification.engine import Engine, VerifyOptions
from factbook.verification.targets import PlannedCheck

Expect = Callable[[Any], dict[str, Any]]


def _eq(v: Any) -> dict[str, Any]:
    return {"eq": v}


def _each(v: Any) -> dict[str, Any]:
    return {"each": {"eq": v[0]}} if v and all(x == v[0] for x in v) else {"eq": v}


def _approx(rel: float) -> Expect:
    return lambda v: {"approx": {"value": v, "rel": rel}}


def _each_approx(v: Any) -> dict[str, Any]:
    return {"each": {"approx": {"value": v[0], "rel": 0.02}}} if v else {"eq": v}


def _version(v: Any) -> dict[str, Any]:
    return {"version": f"=={v}"}


@dataclass(frozen=True)
class Observation:
    """One thing discover looks at: a probe call, an optional path into it, how to pin it."""

    key: str
    probe: str
    title: str
    category: str
    expect: Expect
    args: dict[str, Any] = field(default_factory=dict)
    path: str | None = None
    unit: str | None = None
    tags: tuple[str, ...] = ()
    uses_python: bool = False  # pass the target's `python` (the venv the box runs)


PACKAGES = (
    "torch",
    "sglang",
    "sgl-kernel",
    "vllm",
    "transformers",
    "flashinfer-python",
    "triton",
    "safetensors",
    "tokenizers",
    "nccl",
)


def _same(probe: str, title: str, category: str, expect: Expect, **options: Any) -> Observation:
    """An observation keyed by its probe's own name (most are)."""
    return Observation(probe, probe, title, category, expect, **options)


def observations() -> list[Observation]:
    """What a snapshot covers."""
    hw, sw = "hardware", "software"
    found = [
        _same("gpu.names", "GPU models", hw, _each, tags=("gpu",)),
        _same("gpu.count", "GPU count", hw, _eq, tags=("gpu",)),
        _same("gpu.memory_mib", "GPU memory", hw, _each_approx, unit="MiB", tags=("gpu",)),
        _same("gpu.compute_capability", "GPU compute capability", hw, _each, tags=("gpu",)),
        _same("gpu.driver", "NVIDIA driver", sw, _version, tags=("gpu",)),
        _same("gpu.power_limit_w", "GPU power limit", hw, _each, unit="W", tags=("gpu",)),
        Observation(
            "gpu.nvlink",
            "gpu.topology",
            "NVLink between GPUs",
            hw,
            _eq,
            path="nvlink",
            tags=("gpu", "topology"),
        ),
        _same("gpu.numa_nodes", "NUMA node per GPU", hw, _eq, tags=("gpu", "numa")),
        _same("cpu.model", "CPU model", hw, _eq, tags=("cpu",)),
        _same("cpu.sockets", "CPU sockets", hw, _eq, tags=("cpu",)),
        _same("cpu.cores", "CPU cores", hw, _eq, tags=("cpu",)),
        _same("cpu.threads", "CPU threads", hw, _eq, tags=("cpu",)),
        Observation(
            "numa.node_count",
            "file.glob_count",
            "NUMA nodes",
            hw,
            _eq,
            args={"pattern": "/sys/devices/system/node/node[0-9]*"},
            tags=("numa",),
        ),
        _same("mem.total_gib", "Memory", hw, _approx(0.02), unit="GiB", tags=("memory",)),
        _same(
            "swap.total_gib",
            "Swap",
            hw,
            lambda v: {"approx": {"value": v, "abs": 0.5}},
            unit="GiB",
            tags=("memory",),
        ),
        Observation(
            "disk.root.total_gib",
            "disk.usage",
            "Root disk size",
            hw,
            _approx(0.05),
            args={"path": "/"},
            path="total_gib",
            unit="GiB",
            tags=("disk",),
        ),
        _same("os.release", "Operating system", sw, _eq, path="pretty_name", tags=("os",)),
        _same("os.kernel", "Kernel", sw, _eq, tags=("os",)),
        _same("python.version", "Python version", sw, _version, tags=("python",), uses_python=True),
        _same("cuda.nvcc_version", "CUDA toolkit (nvcc)", sw, _version, tags=("cuda",)),
        _same("cuda.home", "CUDA_HOME", sw, _eq, tags=("cuda",)),
    ]
    for key in ("version", "cuda", "nccl", "device_count"):
        found.append(
            Observation(
                f"torch.{key}",
                "torch.info",
                f"torch {key.replace('_', ' ')}",
                sw,
                _version if key != "device_count" else _eq,
                path=key,
                tags=("torch",),
            )
        )
    for name in PACKAGES:
        found.append(
            Observation(
                f"pkg.{name.replace('-', '_')}",
                "pkg.version",
                f"{name} version",
                sw,
                _version,
                args={"name": name},
                tags=("python",),
                uses_python=True,
            )
        )
    return found


@dataclass
class Proposal:
    """What discover suggests for one observation on one target."""

    kind: str  # new | changed | same | error | absent
    key: str
    target: str
    observed: Any = None
    fact_id: str | None = None  # the existing fact, or the id a new one gets
    location: str | None = None
    reason: str = ""
    new_fact: dict[str, Any] | None = None


def _args(obs: Observation, target: Target) -> dict[str, Any]:
    args = dict(obs.args)
    if obs.uses_python and target.python:
        args["python"] = target.python
    return args


def _normal(args: dict[str, Any], target: Target) -> str:
    """Arguments as a comparable key; `python` equal to the target's own is the default."""
    kept = {k: v for k, v in args.items() if not (k == "python" and v == target.python)}
    return json.dumps(kept, sort_keys=True, default=str)


def _safe(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "_", text.lower()).strip("_") or "target"


def _paths(expect: Any) -> set[str | None]:
    """Every `path` an expectation reads (nested in all/any/not/each too); None: the whole."""
    if not isinstance(expect, dict):
        return set()
    found: set[str | None] = {expect.get("path")}
    for key, arg in expect.items():
        if key in ("all", "any") and isinstance(arg, list):
            for inner in arg:
                found |= {expect.get("path") if p is None else p for p in _paths(inner)}
        elif key in ("not", "each", "length"):
            found |= {p for p in _paths(arg) if p is not None}
    return found


def _matches(kb: KnowledgeBase, target: Target) -> dict[tuple[str, str, str | None], Fact]:
    """(probe, args, path) -> the fact checking it on this target (a fact covers every path its
    expectation reads: `{all: [{path: nvlink, ...}, {path: gpus, ...}]}` covers both)."""
    found: dict[tuple[str, str, str | None], Fact] = {}
    for fact in kb.facts.values():
        check = fact.check
        if check is None or fact.check_target() not in (target.name, None) or fact.until:
            continue
        for path in _paths(check.expect) or {None}:
            found.setdefault((check.probe, _normal(check.args, target), path), fact)
    return found


# File systems worth a disk fact; pseudo and bind-mounted system paths are skipped.
DISK_FS = {
    "ext2",
    "ext3",
    "ext4",
    "xfs",
    "btrfs",
    "zfs",
    "nfs",
    "nfs4",
    "cifs",
    "lustre",
    "gpfs",
    "beegfs",
    "ceph",
    "fuse.sshfs",
    "fuseblk",
    "ntfs",
    "vfat",
    "exfat",
}
SYSTEM_PATHS = (
    "/proc",
    "/sys",
    "/dev",
    "/run",
    "/snap",
    "/boot",
    "/etc",
    "/var/lib/docker",
    "/var/lib/containers",
    "/mnt/sandboxing",
)
MOUNTS = Observation(
    "mounts",
    "file.read",
    "Mounts",
    "hardware",
    _eq,
    args={"path": "/proc/mounts", "max_bytes": 1 << 20},
)


def parse_mounts(text: str) -> list[str]:
    """Mount points of real file systems in /proc/mounts text, without system paths."""
    found: list[str] = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 3 or fields[2] not in DISK_FS:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1])
        if point == "/" or any(point == p or point.startswith(p + "/") for p in SYSTEM_PATHS):
            continue
        if point not in found:
            found.append(point)
    return found


def _mount_observation(point: str) -> Observation:
    key = "disk." + (_safe(point.strip("/").replace("/", "_")) or "root") + ".total_gib"
    return Observation(
        key,
        "disk.usage",
        f"Size of {point}",
        "hardware",
        _approx(0.05),
        args={"path": point},
        path="total_gib",
        unit="GiB",
        tags=("disk",),
    )


def _observe(
    kb: KnowledgeBase,
    targets: dict[str, Target],
    pairs: list[tuple[Observation, Target]],
    options: VerifyOptions,
    run_id: str,
    on_result: Callable[[ResultRecord], None] | None,
) -> list[tuple[ResultRecord, Observation, Target]]:
    plan: list[PlannedCheck] = []
    meta: dict[str, tuple[Observation, Target]] = {}
    for obs, target in pairs:
        probe_fact = Fact(
            id=f"discovered.{_safe(target.name)}.{obs.key}",
            category=obs.category,
            title=obs.title,
            statement="",
            status="assumed",
            sources=[Source(run=run_id)],
            file="<discover>",
            line=0,
            check=Check(obs.probe, _args(obs, target), None, None, target.name),
        )
        plan.append(PlannedCheck(probe_fact, target.name))
        meta[f"{probe_fact.id}@{target.name}"] = (obs, target)
    records = Engine(kb, targets, options, run_id=run_id, on_result=on_result).run(plan)
    return [(r, *meta[f"{r.fact}@{r.target}"]) for r in records]


def discover(
    kb: KnowledgeBase,
    targets: dict[str, Target],
    names: list[str],
    options: VerifyOptions,
    *,
    run_id: str,
    on_result: Callable[[ResultRecord], None] | None = None,
) -> list[Proposal]:
    """Observe every target in `names` and compare with the knowledge base.

    A first pass takes the fixed observations and /proc/mounts; a second one sizes every
    real mount found (the /shared, /data disks of a GPU box).
    """
    first = [(obs, targets[n]) for n in names for obs in [*observations(), MOUNTS]]
    seen = _observe(kb, targets, first, options, run_id, on_result)
    second = [
        (_mount_observation(point), target)
        for record, obs, target in seen
        if obs is MOUNTS and record.outcome == PASS and isinstance(record.observed, str)
        for point in parse_mounts(record.observed)
    ]
    if second:
        seen += _observe(kb, targets, second, options, run_id, on_result)
    proposals = []
    today = date.today().isoformat()
    matches = {name: _matches(kb, targets[name]) for name in names}
    for record, obs, target in seen:
        if obs is not MOUNTS:
            proposals.append(_propose(record, obs, target, matches[target.name], run_id, today))
    return proposals


def _propose(
    record: ResultRecord,
    obs: Observation,
    target: Target,
    matches: dict[tuple[str, str, str | None], Fact],
    run_id: str,
    today: str,
) -> Proposal:
    base = Proposal("error", obs.key, target.name, fact_id=record.fact)
    if record.outcome != PASS:
        base.kind = "error" if record.outcome == ERROR else "absent"
        base.reason = record.reason.split(" [<discover>")[0]
        return base
    try:
        value = get_path(record.observed, obs.path) if obs.path else record.observed
    except PathMissing as exc:
        base.reason = str(exc)
        return base
    base.observed = value
    if value is None or value == []:
        base.kind, base.reason = "absent", "nothing observed (not installed or not present)"
        return base
    hidden = _hidden_in(value)
    if hidden is not None:  # written, it would be a fact file lint refuses
        base.reason = f"the observed value holds {hidden}, which no fact may hold; not proposed"
        return base
    existing = matches.get((obs.probe, _normal(_args(obs, target), target), obs.path))
    if existing is not None and existing.check is not None:
        base.fact_id, base.location = existing.id, existing.location
        expect = existing.check.expect
        outcome = evaluate(expect, record.observed) if expect else None
        if outcome is None or outcome.passed:
            base.kind, base.reason = "same", outcome.reason if outcome else "probe ran"
        elif existing.status == "stale" and existing.value == value:
            base.kind, base.reason = "same", f"already recorded (stale): {outcome.reason}"
        else:
            base.kind, base.reason = "changed", outcome.reason
        return base
    base.kind = "new"
    expect = obs.expect(value)
    if obs.path:
        expect = {"path": obs.path, **expect}
    shown = value if isinstance(value, str) else json.dumps(value)
    base.new_fact = {
        "id": base.fact_id,
        "category": obs.category,
        "title": obs.title,
        "statement": f"{obs.title} on {target.name}: {shown}"
        + (f" {obs.unit}" if obs.unit else "")
        + f" (observed by factbook discover on {today}).",
        "value": value,
        **({"unit": obs.unit} if obs.unit else {}),
        "status": "verified",
        "target": target.name,
        "tags": ["discovered", *obs.tags],
        "sources": [
            {"run": run_id, "date": today, "target": target.name, "note": "factbook discover"}
        ],
        "check": {"probe": obs.probe, "args": _args(obs, target), "expect": expect},
    }
    return base


def _hidden_in(value: Any) -> str | None:
    """The first hidden character (a control, bidi control or line separator) in any string
    of an observed value, as `U+001B (ESC)`, or None. A box answers what it likes: an
    environment variable holding an ESC was written into facts/ by `discover --write`, and
    lint then refused the fact file it had written."""
    for text in strings_in(value):
        found = first_hidden(text)
        if found is not None:
            return f"U+{ord(found.group()):04X}"
    return None


def apply(root: Path, proposals: list[Proposal], run_id: str) -> list[str]:
    """Write changed values (status stale, a source added) and append new facts; return notes."""
    notes = []
    today = date.today().isoformat()
    for p in proposals:
        if p.kind == "changed" and p.fact_id:
            path = update_fact(
                root,
                p.fact_id,
                value=p.observed,
                status="stale",
                add_source={
                    "run": run_id,
                    "date": today,
                    "target": p.target,
                    "note": f"factbook discover observed {json.dumps(p.observed)}",
                },
            )
            notes.append(f"updated {p.fact_id} in {path.relative_to(root)}")
    by_target: dict[str, list[dict[str, Any]]] = {}
    for p in proposals:
        if p.kind == "new" and p.new_fact:
            by_target.setdefault(p.target, []).append(p.new_fact)
    for target, facts in by_target.items():
        path = Path(root) / "facts" / f"discovered-{_safe(target)}.yaml"
        # the file and the folder it goes in must be the knowledge base's own: a facts/ linked
        # elsewhere got discovered-T.yaml (and a lock folder) written outside the root
        require_inside(path.parent, "facts", root)
        require_inside(path, path.relative_to(root).as_posix(), root)
        append_facts(path, facts)
        notes.append(f"added {len(facts)} fact(s) to {path.relative_to(root)}")
    return notes


def render(proposals: list[Proposal], *, show_same: bool = False) -> str:
    """A diff-like listing: + new, ~ changed, = unchanged, ! error, - absent."""
    sign = {"new": "+", "changed": "~", "same": "=", "error": "!", "absent": "-"}
    lines = []
    for p in proposals:
        if p.kind in ("same", "absent") and not show_same:
            continue
        shown = json.dumps(p.observed, default=str) if p.observed is not None else ""
        where = f" ({p.location})" if p.location else ""
        if p.kind == "new":
            lines.append(f"+ {p.fact_id} = {shown}")
        elif p.kind == "changed":
            lines.append(f"~ {p.fact_id}{where}: value -> {shown}; {p.reason}")
        elif p.kind == "same":
            lines.append(f"= {p.fact_id}{where}: {shown}")
        else:
            lines.append(f"{sign[p.kind]} {p.target}:{p.key}: {p.reason}")
    counts = {k: sum(p.kind == k for p in proposals) for k in sign}
    lines.append(
        f"{counts['new']} new, {counts['changed']} changed, {counts['same']} unchanged, "
        f"{counts['error']} errors, {counts['absent']} not present"
    )
    return "\n".join(lines) + "\n"
