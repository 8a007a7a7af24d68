"""A step's `requires:`: its facts are verified live on the step's target before it runs.

A required fact with a check runs through the verify engine (the same agent, transports and
expectations as `verify-facts`), and its results are stored like any verification. A fact
without a check can only be taken on its recorded status: it must be `verified`.
"""

from __future__ import annotations

from dataclasses import dataclass

from factbook.knowledge.kb import KnowledgeBase
from factbook.judging.outcomes import PASS
from factbook.store.results import write_run


@dataclass
class Requirement:
    """One required fact's verdict."""

    fact: str
    ok: bool
    reason: str


def check_requirements(
    kb: KnowledgeBase,
    fact_ids: list[str],
    target: str | None,
    *,
    run_id: str,
    runbook: str,
    step: str,
) -> list[Requirement]:
    """Verify each fact on `target` (its check) or accept its `verified` status (no check)."""
    from factbook.verification.engine import Engine, VerifyOptions
    from factbook.verification.targets import PlannedCheck

    out: list[Requirement] = []
    plan: list[PlannedCheck] = []
    for fact_id in fact_ids:
        fact = kb.get(fact_id)
        if fact.check is None:
            ok = fact.status == "verified"
            out.append(Requirement(fact_id, ok, f"no check; status {fact.status}"))
        else:
            plan.append(PlannedCheck(fact=fact, target=target or fact.check_target() or "local"))
    if plan:
        verify_run = f"{run_id}-{step}-requires"
        records = Engine(kb, kb.targets, VerifyOptions(), run_id=verify_run).run(plan)
        write_run(
            kb.root, verify_run, {"runbook": runbook, "step": step, "kind": "requires"}, records
        )
        seen = {r.fact: r for r in records}
        for check in plan:
            result = seen.get(check.fact.id)
            if result is None:
                out.append(Requirement(check.fact.id, False, "no result from the verify engine"))
            else:
                out.append(
                    Requirement(
                        check.fact.id,
                        result.outcome == PASS,
                        f"{result.outcome}: {result.reason}",
                    )
                )
    return out
