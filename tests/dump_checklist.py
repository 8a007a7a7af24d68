"""Score `factbook import` of a dump against a reviewer's checklist (tests and bench share it).

Each dump in tests/data/dumps/ has a `<stem>.checklist.yaml`: what a reviewer expects the
import to propose (by a quote of the dump's own words), the category, the box a box-bound
fact names, the check it carries (or `none`), the pitfall keys the dump leaves out, and the
targets the dump's access lines give. The dump is imported into a knowledge base made by the
real `factbook init` (so `facts/discovered-local.yaml` exists, as on a team's first day), the
proposals are written with --write, and the result is loaded strictly (it must lint clean).

The checks are judged by rules of their own, not by the importer's: a `pkg.version` name must
be a real distribution (REAL_DISTRIBUTIONS, written from PyPI by hand), a path must be written
in the dump as it is checked, a version expectation must parse, and a fact that has a check or
describes a box must name a target that `verify-facts --target local` does not run it on.

Used by tests/test_import_dumps.py and bench/import_dumps.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from factbook.dumps.capture import ImportResult, plan_import, write
from factbook.judging.expectations import problems_in
from factbook.knowledge.kb import KnowledgeBase, load_kb
from factbook.knowledge.model import Fact
from factbook.knowledge.starter import create_kb
from factbook.verification.targets import plan_checks

DUMPS = Path(__file__).resolve().parent / "data" / "dumps"
# Real PyPI distribution names (normalized), as a reviewer would check them by hand.
REAL_DISTRIBUTIONS = frozenset(
    [
        "torch",
        "vllm",
        "sglang",
        "sgl-kernel",
        "flashinfer-python",
        "transformers",
        "triton",
        "speculators",
        "flash-attn",
        "tensorrt",
        "tensorrt-llm",
        "nvidia-modelopt",
        "openai",
        "xformers",
        "deepspeed",
        "accelerate",
        "safetensors",
        "tokenizers",
        "numpy",
        "ray",
        "peft",
        "trl",
        "bitsandbytes",
        "llama-cpp-python",
        "nvidia-nccl-cu12",
        "nvidia-nccl-cu13",
        "compressed-tensors",
        "huggingface-hub",
        "datasets",
    ]
)
BOX_CATEGORIES = ("hardware", "inventory")


@dataclass
class Score:
    """One dump's figures and every problem found, for the table and the test's message."""

    dump: str
    items: int = 0
    proposed: int = 0
    checks: int = 0
    valid_checks: int = 0
    box_bound: int = 0
    targeted: int = 0
    facts: int = 0
    wrong_file: int = 0
    targets_ok: int = 0
    targets_expected: int = 0
    local_runs: int = 0  # imported checks `verify-facts --target local` would run
    problems: list[str] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        return {
            "dump": self.dump,
            "items": self.items,
            "proposed": self.proposed,
            "checks": self.checks,
            "valid_checks": self.valid_checks,
            "box_bound": self.box_bound,
            "targeted": self.targeted,
            "facts": self.facts,
            "wrong_file": self.wrong_file,
            "targets": f"{self.targets_ok}/{self.targets_expected}",
            "local_runs": self.local_runs,
        }


def checklists() -> list[Path]:
    return sorted(DUMPS.glob("*.checklist.yaml"))


def load_checklist(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def fresh_kb(root: Path, milestone: str) -> Path:
    """`factbook init` (discovering this machine into facts/discovered-local.yaml) plus the
    dump's milestone."""
    create_kb(root)
    path = root / "milestones.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text + f"  - id: {milestone}\n    title: the imported dump\n", "utf-8")
    return root


def import_dump(checklist: dict[str, Any], root: Path) -> tuple[ImportResult, KnowledgeBase]:
    """Import the checklist's dump into a fresh knowledge base with --write; load it strictly."""
    fresh_kb(root, str(checklist["milestone"]))
    result = plan_import(root, DUMPS / checklist["dump"], str(checklist["milestone"]))
    write(result.applied)
    return result, load_kb(root)


def _norm(text: str) -> str:
    return " ".join(str(text).split())


def _subset(want: Any, got: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(_subset(v, got.get(k)) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(got, list) and len(want) == len(got) and all(map(_subset, want, got))
    return want == got


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _check_dict(fact: Fact) -> dict[str, Any] | None:
    if fact.check is None:
        return None
    return {"probe": fact.check.probe, "args": fact.check.args, "expect": fact.check.expect}


def check_problems(fact: Fact, dump_text: str) -> list[str]:
    """Why a reviewer would refuse this fact's check (empty: they would accept it)."""
    check = fact.check
    if check is None:
        return []
    out: list[str] = []
    if check.expect is not None:
        out += problems_in(check.expect)
    if check.probe == "pkg.version":
        name = re.sub(r"[-_.]+", "-", str(check.args.get("name", "")).lower())
        if name not in REAL_DISTRIBUTIONS:
            out.append(f"pkg.version of {name!r}, not a real distribution")
    if check.probe.startswith("file."):
        path = str(check.args.get("path") or check.args.get("pattern") or "")
        if not re.fullmatch(r"(?:/|~/)[^\s<>|\"'`]*", path) or path in ("/", "~/"):
            out.append(f"{check.probe} of {path!r}, not a path")
        elif path not in dump_text:
            out.append(f"{check.probe} of {path!r}, which the dump does not write")
    if check.probe.startswith("gpu.") and not re.search(
        r"nvidia|h100|h200|a100|rtx", dump_text, re.I
    ):
        out.append(f"{check.probe} on a box without NVIDIA GPUs")
    if fact.check_target() is None:
        out.append("a check without a target runs on whatever box verify is pointed at")
    return out


def score(checklist: dict[str, Any], result: ImportResult, kb: KnowledgeBase) -> Score:
    """Every figure of the table for one dump, and each problem in words."""
    dump_name = checklist["dump"]
    dump_text = (DUMPS / dump_name).read_text(encoding="utf-8")
    out = Score(dump_name)
    mine = [f for f in kb.facts.values() if any(s.seed == Path(dump_name).name for s in f.sources)]
    out.facts = len(mine)
    quotes = {f.id: _norm(" ".join(s.quote or "" for s in f.sources)) for f in mine}
    flagged = {
        fid: missing
        for p in result.accepted
        for fid in p.ids
        for missing in [getattr(p, "missing", [])]
    }
    for item in checklist["items"]:
        out.items += 1
        quote = _norm(item["quote"])
        found = [f for f in mine if quote in quotes[f.id]]
        if not found:
            out.problems.append(f"not proposed: {item['quote']!r}")
            continue
        fact = found[0]
        wrong: list[str] = []
        if fact.category not in _as_list(item["category"]):
            wrong.append(f"category {fact.category}, expected {item['category']}")
        if "value" in item and fact.value != item["value"]:
            wrong.append(f"value {fact.value!r}, expected {item['value']!r}")
        if "id" in item and fact.id != item["id"]:
            wrong.append(f"id {fact.id}, expected {item['id']}")
        if "status" in item and fact.status != item["status"]:
            wrong.append(f"status {fact.status}, expected {item['status']}")
        if "target" in item and fact.target not in _as_list(item["target"]):
            wrong.append(f"target {fact.target}, expected {item['target']}")
        if item.get("check") == "none" and fact.check is not None:
            wrong.append(f"a check ({fact.check.probe}) where the text fixes none")
        elif isinstance(item.get("check"), dict) and not _subset(item["check"], _check_dict(fact)):
            wrong.append(f"check {_check_dict(fact)}, expected {item['check']}")
        if "missing" in item and sorted(flagged.get(fact.id, [])) != sorted(item["missing"]):
            wrong.append(f"flagged missing {flagged.get(fact.id)}, expected {item['missing']}")
        if wrong:
            out.problems.append(f"{item['quote']!r} ({fact.id}): " + "; ".join(wrong))
        else:
            out.proposed += 1
    for fact in mine:
        if fact.check is not None:
            out.checks += 1
            bad = check_problems(fact, dump_text)
            if bad:
                out.problems.append(f"check of {fact.id}: " + "; ".join(bad))
            else:
                out.valid_checks += 1
        if fact.check is not None or fact.category in BOX_CATEGORIES or "version" in fact.tags:
            out.box_bound += 1
            if fact.target and fact.target in kb.targets:
                out.targeted += 1
            else:
                out.problems.append(f"box-bound {fact.id} names no target")
        same = [f for f in kb.facts.values() if f.file == fact.file]
        majority = max({f.category for f in same}, key=lambda c: sum(f.category == c for f in same))
        if Path(fact.file).name.startswith("discovered-") or majority != fact.category:
            out.wrong_file += 1
            out.problems.append(f"{fact.id} ({fact.category}) written to {fact.file}")
    plan = plan_checks(kb, [f for f in mine if f.check], ["local"])
    out.local_runs = len(plan.checks)
    if plan.checks:
        out.problems.append(f"verify --target local would run {len(plan.checks)} imported checks")
    for name, want in (checklist.get("targets") or {}).items():
        out.targets_expected += 1
        out.problems += _target_problems(kb, name, want, out)
    return out


def _target_problems(kb: KnowledgeBase, name: str, want: dict[str, Any], out: Score) -> list[str]:
    target = kb.targets.get(name)
    if target is None:
        return [f"target {name} not proposed (have: {', '.join(kb.targets)})"]
    got = {
        "user": target.user,
        "port": target.port,
        "host": target.host,
        "jump": list(target.jump or []),
        "exec": list(target.exec or []) or None,
        "via": target.via,
        "placeholder": bool(target.host and target.host.endswith(".invalid")),
    }
    wrong = [f"{k} {got[k]!r}, expected {v!r}" for k, v in want.items() if got.get(k) != v]
    if wrong:
        return [f"target {name}: " + "; ".join(wrong)]
    out.targets_ok += 1
    return []
