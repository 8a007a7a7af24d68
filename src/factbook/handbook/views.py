"""Facts turned into what a page prints: escaped text, badges, links, result details.

Everything here is plain data (strings, lists, dicts), so a page's inputs can be hashed to
decide whether it must be rendered again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from factbook.handbook import prerender
from factbook.handbook.badges import FactState, fact_state
from factbook.handbook.editlinks import EditLinks, location_text
from factbook.handbook.markup import capped, code, expect_text, md, prose, rel_link, time_text
from factbook.handbook.measured import figure_text, is_measured, measured_rows
from factbook.handbook.safehtml import slug
from factbook.judging.outcomes import DRIFT, PASS
from factbook.knowledge.categories import CATEGORIES
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.model import Fact

# Category keys shown under a fact, in this order, with their label.
EXTRA_LABELS = {
    "symptom": "Symptom",
    "cause": "Cause",
    "fix": "Fix",
    "rationale": "Rationale",
    "state": "State",
    "priority": "Priority",
    "criterion": "Success criterion",
    "token": "Token",
    "token_id": "Token id",
    "path": "Path",
    "kind": "Kind",
    "machine": "Machine",
    "purpose": "Purpose",
    "size": "Size",
    "metric": "Metric",
    "accept_len": "Accept length",
    "epoch": "Epoch",
    "config": "Configuration",
}
RELATION_LABELS = {
    "fixed_by": "Fixed by",
    "fixes": "Fixes",
    "checked_by": "Checked by",
    "checks": "Checks",
    "justified_by": "Justified by",
    "justifies": "Justifies",
    "replaced_by": "Replaced by",
    "replaces": "Replaces",
    "caused_by": "Caused by",
    "causes": "Causes",
    "see_also": "See also",
}
PROSE_KEYS = {"symptom", "cause", "fix", "rationale", "criterion", "purpose"}


TAGS = "tags.md"


CATEGORY_PAGE_FACTS = 1000  # facts on one category page; a larger category gets more pages


def category_uri(category: str, page: int = 1) -> str:
    """A category's page; its second and later pages (a category of more than
    CATEGORY_PAGE_FACTS facts) are `facts/<category>-2.md`, ..."""
    return f"facts/{category}.md" if page == 1 else f"facts/{category}-{page}.md"


def category_pages(kb: KnowledgeBase) -> dict[str, list[list[Fact]]]:
    """Each category's facts in the knowledge base's order, CATEGORY_PAGE_FACTS to a page
    (at least one page, maybe empty): the 22,783 facts of one category that an import of a
    1 MB dump writes made one page past the 16 MiB the template sandbox renders, and far past
    what a browser or MkDocs' search wants on one page."""
    facts: dict[str, list[Fact]] = {c.name: [] for c in CATEGORIES}
    for fact in kb.facts.values():
        facts.setdefault(fact.category, []).append(fact)
    size = CATEGORY_PAGE_FACTS
    return {
        name: [found[at : at + size] for at in range(0, len(found), size)] or [[]]
        for name, found in facts.items()
    }


def tag_anchors(tags: list[str]) -> dict[str, str]:
    """{tag: anchor id}: a slug, numbered where two tags slug alike (`GPU`, `gpu`)."""
    anchors: dict[str, str] = {}
    taken: set[str] = set()
    for tag in sorted(set(tags)):
        base = "tag-" + slug(tag)
        anchor, n = base, 2
        while anchor in taken:
            anchor, n = f"{base}-{n}", n + 1
        taken.add(anchor)
        anchors[tag] = anchor
    return anchors


@dataclass
class FactView:
    """One fact, ready for a template."""

    id: str
    category: str
    title: str
    statement: str
    badges: str
    summary: str
    current: bool
    rows: list[tuple[str, str]] = field(default_factory=list)
    extra: dict[str, str] = field(default_factory=dict)  # escaped category keys
    value: str = ""
    since: str = ""
    last_seen: str = ""
    edit: str = ""  # its file:line, linked to the line where an edit URL is configured


class ViewBuilder:
    """Builds FactViews for any page; knows on which page each fact lives."""

    def __init__(
        self,
        kb: KnowledgeBase,
        latest: dict[str, dict[str, dict[str, Any]]],
        history: dict[str, list[dict[str, Any]]] | None = None,
        *,
        edit: EditLinks | None = None,
    ) -> None:
        self.kb = kb
        self.edit = edit
        self._edit_links: dict[tuple[str, int], str] = {}
        self.tag_anchor = tag_anchors([str(t) for f in kb.facts.values() for t in f.tags])
        self.latest = latest
        self.history = history or {}  # measured facts' results over all runs
        self.pages = category_pages(kb)
        self.page_of = {
            f.id: category_uri(name, n)
            for name, pages in self.pages.items()
            for n, facts in enumerate(pages, 1)
            for f in facts
        }
        self.inbound: dict[str, list[tuple[str, str]]] = {}
        for fact in kb.facts.values():
            for relation, ids in fact.links.items():
                for other in ids:
                    self.inbound.setdefault(other, []).append((relation, fact.id))
        self.states: dict[str, FactState] = {
            f.id: fact_state(f, latest.get(f.id, {}), _first_source(f)) for f in kb.facts.values()
        }

    def link(self, page: str, fact_id: str, text: str | None = None) -> str:
        """A Markdown link from `page` to the fact's anchor (plain text if it is unknown)."""
        label = md(text) if text is not None else f"`{fact_id}`"
        if fact_id not in self.page_of:
            return label
        return f"[{label}]({rel_link(page, self.page_of[fact_id], fact_id)})"

    def link_html(self, page: str, fact_id: str, text: str | None = None) -> str:
        """link() as the HTML Python-Markdown makes of it (prerender.py)."""
        code_id = f"<code>{prerender.text(fact_id)}</code>"
        label = code_id if text is None else prerender.text(text)
        if fact_id not in self.page_of:
            return label
        return prerender.link(rel_link(page, self.page_of[fact_id], fact_id), label)

    def edit_link(self, fact: Fact) -> str:
        """The fact's YAML file and line, linked for editing when the handbook knows where
        (made once per fact: each index and its card print it)."""
        key = (fact.file, fact.line)
        text = self._edit_links.get(key)
        if text is None:
            text = self._edit_links[key] = location_text(fact.file, fact.line, self.edit)
        return text

    def tag_link(self, page: str, tag: str) -> str:
        """A tag, linked to its entry in the tag index."""
        anchor = self.tag_anchor.get(str(tag))
        label = f'<span class="fb-tag">{md(tag)}</span>'
        return f"[{label}]({rel_link(page, TAGS, anchor)})" if anchor else label

    def view(self, fact: Fact, page: str) -> FactView:
        state = self.states[fact.id]
        rows: list[tuple[str, str]] = []
        value = ""
        if fact.value is not None:
            value = code(fact.value) + (f" {md(fact.unit)}" if fact.unit else "")
            rows.append(("Value", value))
        extra: dict[str, str] = {}
        for key, label in EXTRA_LABELS.items():
            if key not in fact.extra or fact.extra[key] is None:
                continue
            raw = fact.extra[key]
            if key in ("path", "token"):
                extra[key] = code(raw)
            elif key == "config" and isinstance(raw, dict):
                extra[key] = capped([f"{md(k)}={code(v)}" for k, v in raw.items()], ", ")
            elif key in PROSE_KEYS or isinstance(raw, str):
                extra[key] = prose(raw)
            else:
                extra[key] = code(raw)
            rows.append((label, extra[key]))
        if fact.target:
            rows.append(("Target", md(fact.target)))
        if fact.check is not None:
            rows.append(("Check", self._check_text(fact)))
        for record in state.results:
            rows.append(self._result_row(fact, record))
        if is_measured(fact):
            rows += measured_rows(fact, self.history.get(fact.id) or state.results)
        rows += self._time_rows(fact)
        if fact.tags:
            rows.append(("Tags", capped([self.tag_link(page, t) for t in fact.tags], " ")))
        for source in fact.sources:
            quote = f" — “{md(source.quote)}”" if source.quote else ""
            text = _source_text(source)
            if source.note:
                text = f"{text} ({md(source.note)})" if text else md(source.note)
            rows.append(("Source", (text or "unknown") + quote))
        for relation, ids in fact.links.items():
            label = RELATION_LABELS.get(relation, relation)
            rows.append((label, capped([self.link(page, i) for i in ids], ", ")))
        inbound = self.inbound.get(fact.id, [])
        if inbound:
            rows.append(
                (
                    "Linked from",
                    capped(
                        [
                            f"{self.link(page, other)} ({md(relation.replace('_', ' '))})"
                            for relation, other in inbound
                        ],
                        ", ",
                    ),
                )
            )
        seen = [r.get("time") for r in state.results if r.get("outcome") == PASS]
        return FactView(
            id=fact.id,
            category=fact.category,
            title=md(fact.title),
            statement=prose(fact.statement),
            badges=state.html(),
            summary=state.summary,
            current=fact.until is None,
            rows=rows,
            extra=extra,
            value=value,
            since=fact.since or "",
            last_seen=time_text(max(seen)) if seen else "never",
            edit=self.edit_link(fact),
        )

    def _check_text(self, fact: Fact) -> str:
        assert fact.check is not None
        args = f" {code(fact.check.args)}" if fact.check.args else ""
        expect = f", expect {code(expect_text(fact.check.expect))}" if fact.check.expect else ""
        where = fact.check_target()
        on = f" on {md(where)}" if where else ""
        return f"{code(fact.check.probe)}{args}{on}{expect}"

    def _result_row(self, fact: Fact, record: dict[str, Any]) -> tuple[str, str]:
        outcome = str(record.get("outcome"))
        target = md(record.get("target", "?"))
        when = time_text(record.get("time"))
        observed = code(record.get("observed"))
        if is_measured(fact) and "observed" in record:  # a whole report: show its figure
            observed = figure_text(fact, record["observed"])
        reason = md(record.get("reason", ""))
        if outcome == DRIFT:
            checked = (record.get("extra") or {}).get("expect")  # what the run compared against
            if checked is None and fact.check is not None:
                checked = fact.check.expect
            expected = code(expect_text(checked) if checked is not None else fact.value)
            return (
                f"Drift on {target}",
                f"expected {expected}, observed {observed} at {when} — {reason}",
            )
        if outcome == PASS:
            return (f"Verified on {target}", f"observed {observed} at {when}")
        # an outcome is read from results/: a name we know, or shown as the text it is
        label = outcome.capitalize() if outcome in ("error", "skipped") else md(outcome)
        return (f"{label} on {target}", f"{reason} at {when}")

    def _time_rows(self, fact: Fact) -> list[tuple[str, str]]:
        rows = []
        milestones = self.kb.milestones
        if fact.since or fact.until:
            span = f"since {_milestone(milestones, fact.since)}" if fact.since else "from the start"
            if fact.until:
                span += f", until {_milestone(milestones, fact.until)}"
            rows.append(("Valid", span))
        if fact.history:
            rows.append(
                (
                    "History",
                    capped(
                        [
                            f"{md(h.at)}: {md(h.status)}" + (f" ({md(h.note)})" if h.note else "")
                            for h in fact.history
                        ],
                        " → ",
                        last=True,
                    ),
                )
            )
        return rows

    def records(self, fact_id: str) -> list[dict[str, Any]]:
        """The latest result of the fact on each target, sorted by target."""
        return self.states[fact_id].results


def _source_text(source: Any) -> str:
    """`msg 3157 (seed)`, `run ID / target / date` for a run, `date` alone for a dated note
    (a note is shown after it); '' when the source is only a note."""
    if source.seed:
        where = f"msg {source.message} " if source.message else ""
        return f"{md(where)} ({md(source.seed)})" if where else md(source.seed)
    run = [str(p) for p in (source.runbook, source.step, source.run) if p]
    rest = [str(p) for p in (source.target, source.date) if p]
    if run:
        return "run " + md(" / ".join(run + rest))
    return md(" / ".join(rest))


def _milestone(milestones: dict[str, Any], ref: str) -> str:
    m = milestones.get(ref)
    return f"{md(ref)} ({md(m.title)})" if m and m.title else md(ref)


def _first_source(fact: Fact) -> str:
    """A short provenance for the badge: `msg 3157`, the run that verified it, or a note."""
    if not fact.sources:
        return "its source"
    source = fact.sources[0]
    if source.seed and source.message:
        return f"msg {source.message}"
    parts = [str(p) for p in (source.runbook, source.step, source.run) if p]
    if parts:
        return "run " + " / ".join(parts + ([str(source.date)] if source.date else []))
    if source.seed:
        return str(source.seed)
    named = source.note or "its source"
    return f"{named}, {source.date}" if source.date else str(named)


__all__ = [
    "CATEGORY_PAGE_FACTS",
    "TAGS",
    "FactView",
    "ViewBuilder",
    "category_pages",
    "category_uri",
    "tag_anchors",
]
