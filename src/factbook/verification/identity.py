"""Is this box the target it is named as? Checked before a run, which is refused otherwise.

A target may declare its identity in targets.yaml:

    h200:
      transport: local
      identity:
        hostname: vm                      # /proc/sys/kernel/hostname
        machine_id: 3d1219c7...           # /etc/machine-id
        gpu_uuids: [GPU-5f0c...]          # each must be present (nvidia-smi)
        facts: [h200.gpu.model]           # facts whose checks must pass there

Each item becomes a check that runs through the same engine and transport as the run
itself, before it; anything but a pass (a mismatch, nvidia-smi missing, the box unreachable)
refuses the whole run with WrongTarget (exit 3) and nothing is written to results/. This is
what stops `verify-facts --target h200` on a laptop from rewriting the h200's results.
"""

from __future__ import annotations

import re
from dataclasses import replace

from factbook.errors import UsageError, WrongTarget
from factbook.judging.outcomes import DRIFT, PASS, SKIPPED
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.model import Check, Fact, Target
from factbook.store.results import ResultRecord
from factbook.verification.engine import VerifyOptions, check_record
from factbook.verification.run import VerifySettings, run_verify
from factbook.verification.targets import Plan, PlannedCheck

IDENTITY_KEYS = ("hostname", "machine_id", "gpu_uuids", "facts")


def _synthetic(target: Target, key: str, title: str, check: Check) -> Fact:
    return Fact(
        id=f"identity.{key}",
        category="hardware",
        title=title,
        statement=f"target {target.name}'s {title}",
        status="assumed",
        sources=[],
        file="targets.yaml",
        line=0,
        check=check,
    )


# identity keys read from a file on the box: key, title, path
FILE_IDENTITIES = (
    ("hostname", "hostname", "/proc/sys/kernel/hostname"),
    ("machine_id", "machine id", "/etc/machine-id"),
)
FILE_KEYS = frozenset(key for key, _title, _path in FILE_IDENTITIES)


def identity_checks(kb: KnowledgeBase, target: Target) -> list[PlannedCheck]:
    """The checks that confirm `target` is the box reached; none if it declares no identity."""
    ident = target.identity
    facts: list[Fact] = []
    for key, title, path in FILE_IDENTITIES:
        if ident.get(key):
            whole = {"regex": f"^{re.escape(str(ident[key]))}\\s*$"}
            check = Check("file.read", {"path": path}, whole)
            facts.append(_synthetic(target, key, title, check))
    if ident.get("gpu_uuids"):
        expect = {"all": [{"contains": str(u)} for u in ident["gpu_uuids"]]}
        facts.append(
            _synthetic(
                target, "gpu_uuids", "GPU UUIDs", Check("gpu.query", {"field": "uuid"}, expect)
            )
        )
    for fact_id in ident.get("facts") or ():
        fact = kb.facts.get(fact_id)
        if fact is None or fact.check is None:
            why = "is not a known fact" if fact is None else "has no check"
            raise UsageError(
                f"targets.yaml: target '{target.name}': identity fact '{fact_id}' {why}"
            )
        facts.append(fact)
    # the checks run on this target whatever target the facts name
    return [
        PlannedCheck(replace(f, target=None, check=replace(f.check, target=None)), target.name)
        for f in facts
        if f.check
    ]


def identity_failures(
    kb: KnowledgeBase, plan: Plan, options: VerifyOptions
) -> dict[str, list[str]]:
    """Per target of the plan whose declared identity the machine reached does not prove:
    one line per failed identity check (`hostname: drift: ...`)."""
    names = sorted({c.target for c in plan.checks})
    checks = [c for name in names for c in identity_checks(kb, plan.targets[name])]
    if not checks:
        return {}
    run = run_verify(
        kb, Plan(checks, plan.targets, []), VerifySettings(options=options, save=False)
    )
    if run.interrupted:
        raise KeyboardInterrupt
    failed: dict[str, list[str]] = {}
    for r in run.records:
        if r.outcome != PASS:
            failed.setdefault(r.target, []).append(_failure_line(plan.targets[r.target], r))
    return failed


def _failure_line(target: Target, record: ResultRecord) -> str:
    """`hostname is 'ci-runner', targets.yaml says 'vm'` for a file identity that read
    something else; the check's own outcome and reason for anything else."""
    key = record.fact.removeprefix("identity.")
    wanted = target.identity.get(key)
    if record.outcome == DRIFT and key in FILE_KEYS and isinstance(record.observed, str):
        return f"{key} is {record.observed.strip()!r}, targets.yaml says {str(wanted)!r}"
    return f"{key}: {record.outcome}: {record.reason}"


def confirm_identities(kb: KnowledgeBase, plan: Plan, options: VerifyOptions) -> None:
    """Raise WrongTarget unless every target of the plan that declares an identity proves it."""
    failed = identity_failures(kb, plan, options)
    if not failed:
        return
    lines = [f"{target}: {line}" for target in sorted(failed) for line in failed[target]]
    bad = sorted(failed)
    raise WrongTarget(
        f"refusing to verify on {', '.join(bad)}: the machine reached is not "
        f"{'that target' if len(bad) == 1 else 'those targets'} (identity in targets.yaml); "
        "nothing was run or written\n  " + "\n  ".join(lines)
    )


def skip_elsewhere(
    kb: KnowledgeBase, plan: Plan, options: VerifyOptions, run_id: str = "-"
) -> tuple[Plan, list[ResultRecord]]:
    """`--skip-elsewhere` (a CI runner, a colleague's laptop): the plan without the targets
    whose identity fails, and a `skipped` record with the reason for each check left out."""
    failed = identity_failures(kb, plan, options)
    if not failed:
        return plan, []
    kept = [c for c in plan.checks if c.target not in failed]
    skipped = [
        check_record(
            c, SKIPPED, f"this machine is not {c.target}: {'; '.join(failed[c.target])}", run_id
        )
        for c in plan.checks
        if c.target in failed
    ]
    return replace(plan, checks=kept), skipped
