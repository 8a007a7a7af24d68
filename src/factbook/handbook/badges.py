"""What a reader must know first about a fact: is it true right now, and who said so.

A badge combines the fact's own status with the latest verification results (one per target).
Live results win over the recorded status, except `refuted`, which no passing probe undoes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from factbook.handbook.markup import attr, time_text, value_text
from factbook.judging.outcomes import DRIFT, ERROR, OUTCOMES, PASS, SKIPPED
from factbook.knowledge.model import Fact

# kind -> css class suffix and the word shown
KINDS = {
    PASS: "verified",
    DRIFT: "drifted",
    ERROR: "error",
    SKIPPED: "skipped",
    "never": "never checked",
    "refuted": "refuted",
    "stale": "stale",
    "assumed": "assumed",
    "recorded": "verified",
    "past": "superseded",
}


@dataclass(frozen=True)
class Badge:
    """One pill on the page: a kind (css class), the text shown and a tooltip."""

    kind: str
    text: str
    tooltip: str

    def html(self) -> str:
        return (
            f'<span class="fb-badge fb-{self.kind}" title="{attr(self.tooltip)}">'
            f"{attr(self.text)}</span>"
        )


@dataclass
class FactState:
    """A fact's badges and the result details the page prints under it."""

    badges: list[Badge] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)  # latest record per target
    summary: str = "never"  # pass | drift | error | skipped | never | none (no check)
    _html: tuple[list[Badge], str] | None = field(default=None, repr=False, compare=False)

    def html(self) -> str:
        """The badges as HTML (made once: every index and card of the fact prints them)."""
        if self._html is None or self._html[0] != self.badges:
            self._html = (list(self.badges), " ".join(b.html() for b in self.badges))
        return self._html[1]


def fact_state(fact: Fact, records: dict[str, dict[str, Any]], source_label: str) -> FactState:
    """Badges for `fact` given its latest records {target: record dict}."""
    state = FactState(results=[records[t] for t in sorted(records)])
    if fact.status == "refuted":
        state.badges.append(Badge("refuted", "refuted", "shown false; see what replaced it"))
    for record in state.results:
        outcome = str(record.get("outcome", ERROR))
        when = time_text(record.get("time"))
        target = record.get("target", "?")
        kind = outcome if outcome in OUTCOMES else ERROR
        if kind == PASS:
            text, tip = f"verified {when} on {target}", f"checked live on {target} at {when}"
        elif kind == DRIFT:
            text = f"drifted on {target}"
            tip = f"observed {value_text(record.get('observed'))} at {when}: {record.get('reason')}"
        else:
            text = f"{KINDS[kind]} on {target}"
            tip = f"{record.get('reason', '')} ({when})"
        state.badges.append(Badge(kind, text, tip))
    state.summary = _summary(fact, state.results)
    if not state.results and fact.status != "refuted":
        if fact.check is not None:
            where = fact.check_target() or "its target"
            state.badges.append(
                Badge(
                    "never",
                    "never checked",
                    f"has a check on {where}, no result yet; run verify-facts",
                )
            )
        elif fact.status == "verified":
            state.badges.append(
                Badge(
                    "recorded",
                    f"verified per {source_label}",
                    "recorded as verified by its source; no live check",
                )
            )
        else:
            state.badges.append(Badge(fact.status, fact.status, f"recorded status: {fact.status}"))
    if fact.until is not None:
        state.badges.append(
            Badge("past", f"until {fact.until}", f"no longer holds from milestone {fact.until} on")
        )
    return state


def _summary(fact: Fact, results: list[dict[str, Any]]) -> str:
    outcomes = {str(r.get("outcome")) for r in results}
    for outcome in (DRIFT, ERROR, PASS, SKIPPED):  # worst first
        if outcome in outcomes:
            return outcome
    return "never" if fact.check is not None else "none"
