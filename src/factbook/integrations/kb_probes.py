"""Which probes `factbook serve` and `factbook mcp` run: factbook's own, a knowledge base's
only when the person who started the server asked for them (`--run-kb-probes`).

Issue 25: reading commands never execute code from the knowledge base; only `verify` (its
probes) and `run` (its cells) do. serve and mcp verify for whoever scrapes or asks, over a
knowledge base that may have been pulled from anywhere, so by default they run only the probes
factbook ships. The rule is one for every target: on a remote box a probe's code is sent there
and runs as the target's user, which is no safer than running it here.

A check withheld is reported as an error that names the flag, never skipped in silence. A
probe that checks/*.py declares counts as the knowledge base's even under a built-in's name:
the file would be shipped and its top-level code run. Where identities are checked before a
run (mcp's verify_facts), a target whose identity fact needs such a probe is withheld whole.
The flag is a command-line option on purpose: factbook.yaml belongs to the knowledge base,
which cannot vouch for itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from factbook.judging.outcomes import ERROR, OUTCOMES
from factbook.knowledge.kb import CHECKS_DIR, KnowledgeBase
from factbook.probes.catalog import builtin_catalog
from factbook.probes.scan import custom_modules, scan_file
from factbook.store.results import ResultRecord, load_latest, write_run
from factbook.store.stamps import now_iso
from factbook.verification.run import VerifyRun, VerifySettings
from factbook.verification.targets import Plan, PlannedCheck

FLAG = "--run-kb-probes"
Withheld = list[tuple[PlannedCheck, str]]


def kb_probes(kb: KnowledgeBase) -> dict[str, str]:
    """Probe name -> the checks/ file that declares it (read as lint reads it, bounded)."""
    found: dict[str, str] = {}
    for path in custom_modules(kb.root / CHECKS_DIR):
        display = f"{CHECKS_DIR}/{path.name}"
        for name in scan_file(path, display).declared:
            found[name] = display
    return found


def _why(probe: str, own: dict[str, str], builtin: set[str]) -> str | None:
    """Why a probe may not run without the flag; None when it is factbook's own."""
    if probe in own:
        return f"the knowledge base's own probe '{probe}' ({own[probe]})"
    if probe not in builtin:
        return f"probe '{probe}' is not one of factbook's"
    return None


def withhold_kb_probes(
    kb: KnowledgeBase, plan: Plan, *, identities: bool = False
) -> tuple[Plan, Withheld]:
    """The plan without the checks that need the knowledge base's probes, and those checks
    with the reason; with `identities`, also every check on a target whose identity facts
    need one."""
    from factbook.verification.identity import identity_checks

    own, builtin = kb_probes(kb), set(builtin_catalog().specs)
    suffix = f"; it runs only when the server is started with {FLAG}"
    blocked: dict[str, str] = {}
    if identities:
        for name in sorted({c.target for c in plan.checks}):
            for check in identity_checks(kb, plan.targets[name]):
                assert check.fact.check is not None
                why = _why(check.fact.check.probe, own, builtin)
                if why is not None and name not in blocked:
                    blocked[name] = f"target '{name}' proves its identity with {why}"
    kept: list[PlannedCheck] = []
    withheld: Withheld = []
    for check in plan.checks:
        assert check.fact.check is not None
        why = blocked.get(check.target) or _why(check.fact.check.probe, own, builtin)
        if why is None:
            kept.append(check)
        else:
            withheld.append((check, f"not run: {why}{suffix}"))
    return replace(plan, checks=kept), withheld


def withheld_record(check: PlannedCheck, reason: str, run_id: str) -> ResultRecord:
    """The error a withheld check is reported as, like any check that could not run."""
    assert check.fact.check is not None
    return ResultRecord(
        fact=check.fact.id,
        target=check.target,
        outcome=ERROR,
        reason=f"{reason} [{check.fact.location}]",
        time=now_iso(),
        run=run_id,
        probe=check.fact.check.probe,
        extra={"location": check.fact.location},
    )


def run_guarded(
    kb: KnowledgeBase,
    plan: Plan,
    settings: VerifySettings,
    run: Callable[[Plan, VerifySettings], VerifyRun],
    *,
    allow: bool,
    identities: bool = False,
) -> VerifyRun:
    """`run(plan, settings)`, unless `allow`, without the checks that need the knowledge
    base's probes: those come back as error records in the same run (and its saved file)."""
    if allow:
        return run(plan, settings)
    options = replace(settings.options, kb_probes=False)  # what checks/ holds now is not sent
    settings = replace(settings, options=options)
    kept, withheld = withhold_kb_probes(kb, plan, identities=identities)
    if not withheld:
        return run(kept, settings)
    if settings.save:
        load_latest(kb.root)  # an unreadable latest.json stops the run before any check
    done = run(kept, replace(settings, save=False))
    done.records += [withheld_record(check, why, done.id) for check, why in withheld]
    done.header["summary"] = {k: sum(r.outcome == k for r in done.records) for k in OUTCOMES}
    done.header["targets"] = sorted({c.target for c in plan.checks})
    if settings.save and done.records:
        done.saved = write_run(kb.root, done.id, done.header, done.records)
    return done
