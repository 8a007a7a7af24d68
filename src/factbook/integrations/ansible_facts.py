"""The facts and their last results as an Ansible local fact (`facts.d`) for playbooks to gate on.

    factbook export-ansible --target llm-two -o /etc/ansible/facts.d/factbook.fact

Ansible's setup module reads every `*.fact` file in its `fact_path` (default
/etc/ansible/facts.d) as JSON and puts it under `ansible_local.<file name>`; a play then reads
`ansible_local.factbook.ok`, `...summary.drift` or `...facts['hw.gpu.count'].outcome`.
The document (docs/integrations.md shows a playbook):

    {"factbook": VERSION, "generated": ISO time, "target": T or null,
     "ok": true when no result drifted or errored,
     "summary": {"pass": n, "drift": n, "error": n, "skipped": n, "unverified": n},
     "facts": {ID: {"category", "title", "status", "value", "unit", "location",
                    "outcome": the worst outcome over its targets, or "unverified",
                    "results": {TARGET: {"outcome", "observed", "reason", "time", "run"}}}}}

With a target, only that target's results count (a play runs per host); facts that no
result covers are "unverified". Values are JSON-safe (sanitize.json_safe).
"""

from __future__ import annotations

from typing import Any

from factbook.judging.outcomes import DRIFT, ERROR, OUTCOMES, PASS, SKIPPED
from factbook.judging.sanitize import json_safe
from factbook.knowledge.kb import KnowledgeBase
from factbook.store.stamps import FACTBOOK_VERSION as __version__
from factbook.store.stamps import now_iso

UNVERIFIED = "unverified"  # no result on record for the fact (on that target)
_WORST_FIRST = (ERROR, DRIFT, SKIPPED, PASS)


def local_facts(
    kb: KnowledgeBase, latest: dict[str, dict[str, dict[str, Any]]], target: str | None = None
) -> dict[str, Any]:
    """The facts.d document for `kb` and its latest results (results.load_latest)."""
    facts: dict[str, Any] = {}
    for fact in kb.facts.values():
        by_target = latest.get(fact.id, {})
        if target is not None:
            by_target = {t: r for t, r in by_target.items() if t == target}
        results = {
            t: {k: r.get(k) for k in ("outcome", "observed", "reason", "time", "run")}
            for t, r in sorted(by_target.items())
        }
        seen = {r["outcome"] for r in results.values()}
        outcome = next((o for o in _WORST_FIRST if o in seen), UNVERIFIED)
        facts[fact.id] = {
            "category": fact.category,
            "title": fact.title,
            "status": fact.status,
            "value": fact.value,
            "unit": fact.unit,
            "location": fact.location,
            "outcome": outcome,
            "results": results,
        }
    summary = {k: 0 for k in (*OUTCOMES, UNVERIFIED)}
    for entry in facts.values():
        summary[entry["outcome"]] += 1
    document = {
        "factbook": __version__,
        "generated": now_iso(),
        "target": target,
        "ok": summary[DRIFT] == 0 and summary[ERROR] == 0,
        "summary": summary,
        "facts": facts,
    }
    return json_safe(document)
