"""Which pages the handbook has, and the plain-data context each one is rendered from.

One page per category keeps a 1,000-fact handbook at a few dozen pages: MkDocs-Material
embeds the whole navigation in every page, so page count, not fact count, sets build time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from factbook.handbook import prerender, special
from factbook.handbook.fleet_view import FLEET, fleet_context, has_fleet
from factbook.handbook.home import glance_rows, run_header
from factbook.handbook.markup import md, paragraphs, rel_link
from factbook.handbook.runbook_view import RunbookPage, runbook_context, runbooks_context
from factbook.handbook.sources import StatusDoc
from factbook.handbook.views import (
    CATEGORY_PAGE_FACTS,
    TAGS,
    FactView,
    ViewBuilder,
    category_uri,
)
from factbook.judging.outcomes import NOT_OK
from factbook.knowledge.categories import BY_NAME, CATEGORIES, Category
from factbook.knowledge.kb import KnowledgeBase

HOME = "index.md"
ALL_FACTS = "facts/index.md"
RUNBOOKS = "runbook-runs.md"
STATUS_DOCS = "status-history.md"

CATEGORY_TITLES = {c.name: c.title for c in CATEGORIES}  # the navigation reads it too


@dataclass
class PageSpec:
    """A page to render: where it goes, its template and the data it reads."""

    uri: str
    title: str
    template: str
    context: dict[str, Any] = field(default_factory=dict)
    # parts of the page as HTML (prerender.py): the template prints `fragments[n]`, a
    # placeholder, where the Markdown it would print otherwise makes the same HTML
    fragments: list[str] | None = None


def page_specs(
    kb: KnowledgeBase,
    views: ViewBuilder,
    *,
    runbooks: list[RunbookPage],
    status_docs: list[StatusDoc],
    runs: list[dict[str, Any]],
    lint_problems: list[str],
    status_guide: str | None = None,
    site_name: str = "",
    html_parts: bool = False,
) -> list[PageSpec]:
    """Every page; `html_parts`: the largest pages' bulk as HTML fragments only
    (prerender.py), else as Markdown only."""
    specs = [_home(kb, views, runbooks, status_docs, runs, lint_problems, site_name)]
    for category in CATEGORIES:
        specs += _category_pages(kb, views, category)
    specs.append(_all_facts(kb, views, html_parts))
    specs.append(_tags(kb, views, html_parts))
    if has_fleet(kb, views.latest):
        specs.append(PageSpec(FLEET, "Fleet", "fleet.md.j2", fleet_context(kb, views)))
    specs.append(
        PageSpec(
            RUNBOOKS,
            "Runbooks",
            "runbooks.md.j2",
            {"runbooks": runbooks_context(runbooks, views, RUNBOOKS)},
        )
    )
    for entry in runbooks:
        specs.append(
            PageSpec(entry.uri, entry.book.title, "runbook.md.j2", runbook_context(entry, views))
        )
    # imported here: the dump renderer uses handbook.safehtml, and importing it from this
    # module's top would run the handbook package's __init__ before the renderer exists
    from factbook.handbook.handover import HANDOVER, handover_context

    specs.append(
        PageSpec(HANDOVER, "Hand-over dump", "status-handover.md.j2", handover_context(kb))
    )
    specs.append(
        PageSpec(
            STATUS_DOCS,
            "Status documents",
            "status-documents.md.j2",
            {"docs": [d.__dict__ for d in status_docs], "guide": status_guide},
        )
    )
    return specs


def _category_pages(kb: KnowledgeBase, views: ViewBuilder, category: Category) -> list[PageSpec]:
    """The category's page, or pages when it holds more than CATEGORY_PAGE_FACTS facts
    (views.category_pages), each with links to the others."""
    pages = views.pages[category.name]
    specs = []
    for n, facts in enumerate(pages, 1):
        uri = category_uri(category.name, n)
        fact_views = [views.view(f, uri) for f in facts]
        extra = special.view(category)(kb, views, facts, fact_views, uri) if category.view else ""
        title = category.title if len(pages) == 1 else f"{category.title} ({n}/{len(pages)})"
        context = {
            "category": category.name,
            "intro": category.intro,
            "special": extra,
            "current": [v for v in fact_views if v.current],
            "past": [v for v in fact_views if not v.current],
            "pager": _pager(category, n, len(pages)),
        }
        specs.append(PageSpec(uri, title, "category.md.j2", context))
    return specs


def _pager(category: Category, at: int, count: int) -> str:
    """`Page 2 of 23: 1 · **2** · 3 ...` as Markdown, each number a link; '' for one page."""
    if count == 1:
        return ""
    here = category_uri(category.name, at)
    links = [
        f"**{n}**" if n == at else f"[{n}]({rel_link(here, category_uri(category.name, n))})"
        for n in range(1, count + 1)
    ]
    return f"Page {at} of {count} ({CATEGORY_PAGE_FACTS:,} facts a page): " + " · ".join(links)


def _all_facts(kb: KnowledgeBase, views: ViewBuilder, html_parts: bool) -> PageSpec:
    facts = sorted(kb.facts.values(), key=lambda f: f.id)
    context: dict[str, Any] = {"tags_link": rel_link(ALL_FACTS, TAGS)}
    if not html_parts:
        context["rows"] = [
            (
                views.link(ALL_FACTS, f.id),
                views.link(ALL_FACTS, f.id, f.title),
                BY_NAME[f.category].title,
                views.states[f.id].html(),
                views.edit_link(f),
            )
            for f in facts
        ]
        return PageSpec(ALL_FACTS, "All facts", "all-facts.md.j2", context)
    table = prerender.table(
        ["Id", "Title", "Section", "Status", "Defined in"],
        [
            [
                views.link_html(ALL_FACTS, f.id),
                views.link_html(ALL_FACTS, f.id, f.title),
                prerender.text(BY_NAME[f.category].title),
                views.states[f.id].html(),
                views.edit_link(f),
            ]
            for f in facts
        ],
        css="fb-scroll",
    )
    return PageSpec(ALL_FACTS, "All facts", "all-facts.md.j2", context, fragments=[table])


def _tags(kb: KnowledgeBase, views: ViewBuilder, html_parts: bool) -> PageSpec:
    """Every tag with its facts. Tags are free text from YAML: escaped, anchors are slugs.

    A plain list per tag (title link and YAML line; badges live on the fact's card): at 1,000
    facts a table with badges made this page half a megabyte and a second of every rebuild.
    """
    by_tag: dict[str, list[Any]] = {}
    for fact in kb.facts.values():
        for tag in dict.fromkeys(str(t) for t in fact.tags):  # a tag listed twice counts once
            by_tag.setdefault(tag, []).append(fact)
    order = sorted(by_tag, key=lambda t: (t.casefold(), t))
    link = views.link_html if html_parts else views.link
    lines = {
        tag: [
            f"{link(TAGS, f.id, f.title)} · {views.edit_link(f)}"
            for f in sorted(by_tag[tag], key=lambda f: f.id)
        ]
        for tag in order
    }
    tags = [
        {
            "name": md(tag),
            "anchor": views.tag_anchor[tag],
            "facts": [] if html_parts else lines[tag],
        }
        for tag in order
    ]
    cloud = paragraphs([f"{views.tag_link(TAGS, tag)}&nbsp;{len(by_tag[tag])}" for tag in order])
    context = {"tags": tags, "cloud": cloud}
    if not html_parts:
        return PageSpec(TAGS, "Tags", "tags.md.j2", context)
    lists = [prerender.bullets(lines[tag]) for tag in order]
    return PageSpec(TAGS, "Tags", "tags.md.j2", context, fragments=lists)


def _home(
    kb: KnowledgeBase,
    views: ViewBuilder,
    runbooks: list[RunbookPage],
    status_docs: list[StatusDoc],
    runs: list[dict[str, Any]],
    lint_problems: list[str],
    site_name: str,
) -> PageSpec:
    goals = [
        views.view(f, HOME) for f in kb.facts.values() if f.category == "goal" and f.until is None
    ]
    categories = [
        (
            c.title,
            category_uri(c.name),
            sum(1 for f in kb.facts.values() if f.category == c.name and f.until is None),
        )
        for c in CATEGORIES
    ]
    attention = [
        (views.link(HOME, f.id, f.title), views.states[f.id].html())
        for f in kb.facts.values()
        if views.states[f.id].summary in NOT_OK and f.until is None
    ]
    by_status: dict[str, int] = {}
    for fact in kb.facts.values():
        if fact.until is None:
            by_status[fact.status] = by_status.get(fact.status, 0) + 1
    return PageSpec(
        HOME,
        "Home",
        "index.md.j2",
        {
            "heading": md(site_name or f"{kb.root.name} handbook"),
            "goals": goals,
            "glance": glance_rows(kb, views.latest),
            "by_status": sorted(by_status.items()),
            "total": sum(by_status.values()),
            "categories": categories,
            "attention": attention,
            "runs": [run_header(r) for r in runs[:5]],
            # milestones.yaml is data like any fact: its ids and titles are text, not Markdown
            "milestones": [(md(m.id), md(m.title)) for m in kb.milestones.values()],
            "runbook_count": len(runbooks),
            "latest_status": _latest_status(status_docs),
            "lint_problems": lint_problems[:20],
            "lint_count": len(lint_problems),
        },
    )


def _latest_status(status_docs: list[StatusDoc]) -> dict[str, str] | None:
    """The newest status document for the home page's link. Its title is whatever a
    docs/status file's front matter or first heading says: text, never markup."""
    if not status_docs:
        return None
    return {"title": md(status_docs[0].title), "uri": status_docs[0].uri}


__all__ = [
    "ALL_FACTS",
    "HOME",
    "RUNBOOKS",
    "STATUS_DOCS",
    "TAGS",
    "FactView",
    "PageSpec",
    "page_specs",
]
