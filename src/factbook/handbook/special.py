"""Category-specific views: the tables, diagrams and charts above a category's fact list."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from factbook.handbook.charts import Bar, bar_chart, numa_diagram
from factbook.handbook.markup import (
    capped,
    code,
    expect_text,
    md,
    prose,
    rel_link,
    scroll_table,
    shorten,
    time_text,
    value_text,
)
from factbook.handbook.safehtml import slug
from factbook.handbook.views import FactView, ViewBuilder
from factbook.knowledge.categories import Category
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.model import Fact

Renderer = Callable[[KnowledgeBase, ViewBuilder, list[Fact], list[FactView], str], str]


def _badges(views: ViewBuilder, fact: Fact) -> str:
    return views.states[fact.id].html()


def _current(facts: list[Fact]) -> list[Fact]:
    return [f for f in facts if f.until is None]


def hardware(kb: KnowledgeBase, views: ViewBuilder, facts: list[Fact], _: Any, page: str) -> str:
    out = [
        "## At a glance",
        "",
        scroll_table(
            ["Fact", "Value", "Target", "Status"],
            [
                [
                    views.link(page, f.id, f.title),
                    code(f.value) + (f" {md(f.unit)}" if f.unit else ""),
                    md(f.target or ""),
                    _badges(views, f),
                ]
                for f in _current(facts)
                if f.value is not None
            ],
        ),
    ]
    by_target: dict[str, list[Fact]] = {}
    for fact in _current(facts):
        by_target.setdefault(fact.check_target() or fact.target or "", []).append(fact)
    sections = []
    for target, items in sorted(by_target.items(), key=lambda kv: -len(kv[1])):
        section = _topology(views, items, page)
        if section:
            sections += [
                f"### {md(target) or 'Unassigned'}"
                + (f" {{#topology-{slug(target)}}}" if target else ""),
                "",
                section,
            ]
    if sections:
        out += ["", "## Topology", "", *sections]
    return "\n".join(out)


def _topology(views: ViewBuilder, facts: list[Fact], page: str) -> str:
    """One box's GPU/NUMA diagram and table, its interconnect, and any observed link matrix."""
    out: list[str] = []
    layout_fact = next((f for f in facts if _is_layout(f)), None)
    links = [f for f in facts if {"nvlink", "pcie", "interconnect"} & set(f.tags)]
    if layout_fact is not None:
        layout = [int(n) for n in layout_fact.value]
        label = " · ".join(filter(None, map(link_caption, links))) or "interconnect unknown"
        out += [numa_diagram(layout, label), ""]
        records = views.records(layout_fact.id)
        headers = ["GPU", "NUMA node (expected)"] + [
            f"observed on {md(r.get('target'))}" for r in records
        ]
        rows = []
        for gpu, node in enumerate(layout):
            row = [f"GPU {gpu}", str(node)]
            for record in records:
                seen = record.get("observed")
                row.append(code(seen[gpu]) if isinstance(seen, list) and gpu < len(seen) else "—")
            rows.append(row)
        out += [f"From {views.link(page, layout_fact.id)}:", "", scroll_table(headers, rows), ""]
    if links:
        out += ["Interconnect:", ""]
        out += [
            f"- {views.link(page, f.id, f.title)}: {prose(f.statement)} {_badges(views, f)}"
            for f in links
        ]
        out.append("")
    for fact in facts:
        for record in views.records(fact.id):
            observed = record.get("observed")
            matrix = observed.get("matrix") if isinstance(observed, dict) else None
            if isinstance(matrix, dict) and matrix:
                cols = list(matrix)
                out += [
                    f"Link matrix observed on {md(record.get('target'))} "
                    f"({time_text(record.get('time'))}):",
                    "",
                    scroll_table(
                        [""] + [md(c) for c in cols],
                        [
                            [md(r)] + [md((matrix.get(r) or {}).get(c, "")) for c in cols]
                            for r in cols
                        ],
                    ),
                    "",
                ]
    return "\n".join(out)


def link_caption(fact: Fact) -> str:
    """What an interconnect fact says the link is (`no NVLink`, `PCIe Gen5`), from its value.

    The caption names the link, so it is built from what the fact holds, never its title (a
    title names the question: "PCIe generation"). A fact without a value adds nothing.
    """
    value, tags = fact.value, set(fact.tags)
    if value is None or value == "":
        return ""
    if isinstance(value, bool):
        kind = "NVLink" if "nvlink" in tags else "PCIe" if "pcie" in tags else fact.title
        return kind if value else f"no {kind}"
    generation = str(value).strip()
    if "pcie" in tags and re.fullmatch(r"(?i)(gen\s*)?[1-7]", generation):
        return f"PCIe Gen{generation[-1]}"
    unit = f" {fact.unit}" if fact.unit else ""
    return f"{fact.title}: {value_text(value)}{unit}"


def _is_layout(fact: Fact) -> bool:
    probe = fact.check.probe if fact.check else ""
    return (
        (probe == "gpu.numa_nodes" or "numa" in fact.tags)
        and isinstance(fact.value, list)
        and all(isinstance(v, int) for v in fact.value)
        and bool(fact.value)
    )


def software(kb: KnowledgeBase, views: ViewBuilder, facts: list[Fact], _: Any, page: str) -> str:
    rows = []
    for fact in _current(facts):
        probe = fact.check.probe if fact.check else ""
        if not (probe == "pkg.version" or "version" in fact.tags or fact.id.endswith(".version")):
            continue
        if fact.check and fact.check.expect:
            expected = code(expect_text(fact.check.expect))
        else:
            expected = code(fact.value) if fact.value is not None else ""
        records = views.records(fact.id)
        name = views.link(page, fact.id, fact.title)
        if not records:
            rows.append(
                [name, expected, md(fact.check_target() or ""), "—", "never", _badges(views, fact)]
            )
        for record in records:
            rows.append(
                [
                    name,
                    expected,
                    md(record.get("target")),
                    code(record.get("observed")),
                    time_text(record.get("time")),
                    _badges(views, fact),
                ]
            )
    if not rows:
        return ""
    return "\n".join(
        [
            "## Versions: expected and last observed",
            "",
            scroll_table(
                ["Software", "Expected", "Target", "Last observed", "When", "Status"], rows
            ),
        ]
    )


def tokenizer(kb: KnowledgeBase, views: ViewBuilder, facts: list[Fact], _: Any, page: str) -> str:
    rows = [
        [
            code(f.get("token")) if f.get("token") is not None else "",
            code(f.get("token_id")) if f.get("token_id") is not None else code(f.value),
            views.link(page, f.id, f.title),
            _badges(views, f),
        ]
        for f in _current(facts)
    ]
    return "\n".join(["## Token ids", "", scroll_table(["Token", "Id", "Fact", "Status"], rows)])


def inventory(
    kb: KnowledgeBase, views: ViewBuilder, facts: list[Fact], fv: list[FactView], page: str
) -> str:
    seen = {v.id: v.last_seen for v in fv}
    machines: dict[str, list[Fact]] = {}
    for fact in _current(facts):
        machines.setdefault(str(fact.get("machine") or fact.target or "unknown"), []).append(fact)
    out = []
    for machine, items in sorted(machines.items()):
        out += [
            f"## On {md(machine)}",
            "",
            scroll_table(
                ["Path", "Kind", "Purpose", "Size", "Last seen", "Status"],
                [
                    [
                        views.link(page, f.id, str(f.get("path") or f.title)),
                        md(f.get("kind")),
                        prose(f.get("purpose")),
                        md(f.get("size")),
                        seen.get(f.id, "never"),
                        _badges(views, f),
                    ]
                    for f in items
                ],
            ),
            "",
        ]
    return "\n".join(out)


def pitfalls(kb: KnowledgeBase, views: ViewBuilder, facts: list[Fact], _: Any, page: str) -> str:
    rows = []
    for fact in _current(facts):
        checks = [code(fact.check.probe)] if fact.check else []
        checks += [views.link(page, i) for i in fact.links.get("checked_by", [])]
        rows.append(
            [
                views.link(page, fact.id, fact.title),
                prose(shorten(str(fact.get("symptom")))),
                prose(shorten(str(fact.get("fix")))),
                capped(checks, ", ") or "—",
                _badges(views, fact),
            ]
        )
    return "\n".join(
        ["## Overview", "", scroll_table(["Pitfall", "Symptom", "Fix", "Check", "Status"], rows)]
    )


def benchmarks(kb: KnowledgeBase, views: ViewBuilder, facts: list[Fact], _: Any, page: str) -> str:
    rows = [
        [
            views.link(page, f.id, f.title),
            code(f.value) + (f" {md(f.unit)}" if f.unit else ""),
            _config_text(f.get("config")),
            md(f.get("accept_len")),
            md(f.since or "start"),
            _badges(views, f),
        ]
        for f in facts
    ]
    out = [
        "## Figures",
        "",
        scroll_table(
            ["Figure", "Value", "Configuration", "Accept length", "Since", "Status"], rows
        ),
        "",
    ]
    series: dict[tuple[str, str], list[Fact]] = {}
    for fact in facts:
        if isinstance(fact.value, (int, float)) and not isinstance(fact.value, bool):
            key = (str(fact.get("metric") or fact.unit or "value"), fact.unit or "")
            series.setdefault(key, []).append(fact)
    if series:
        out += [
            "## Across milestones",
            "",
            "Each bar is one figure, grouped by the milestone where it was measured; "
            "grey bars no longer hold.",
            "",
        ]
    order = {m.id: m.index for m in kb.milestones.values()}
    for (metric, unit), items in sorted(series.items()):
        groups: list[tuple[str, list[Bar]]] = []
        for since in sorted({f.since for f in items}, key=lambda s: order.get(s or "", -1)):
            title = kb.milestones[since].title if since in kb.milestones else ""
            heading = f"milestone {since}: {title}" if since else "from the start"
            groups.append(
                (
                    shorten(heading, 90),
                    [
                        Bar(
                            f.title,
                            float(f.value),
                            "current" if f.until is None else "past",
                            rel_link(page, page, f.id),
                        )
                        for f in items
                        if f.since == since
                    ],
                )
            )
        out += [bar_chart(metric, unit, groups), ""]
    return "\n".join(out)


def _config_text(config: Any) -> str:
    if isinstance(config, dict):
        return capped([f"{md(k)}={code(v)}" for k, v in config.items()], ", ")
    return code(config) if config is not None else ""


def training(kb: KnowledgeBase, views: ViewBuilder, facts: list[Fact], _: Any, page: str) -> str:
    rows = [
        [
            views.link(page, f.id, f.title),
            md(f.get("metric")),
            md(f.get("epoch")),
            code(f.value) + (f" {md(f.unit)}" if f.unit else "") if f.value is not None else "",
            _badges(views, f),
        ]
        for f in _current(facts)
    ]
    return "\n".join(
        [
            "## Overview",
            "",
            scroll_table(["Run / metric", "Metric", "Epoch", "Value", "Status"], rows),
        ]
    )


def decisions(kb: KnowledgeBase, views: ViewBuilder, facts: list[Fact], _: Any, page: str) -> str:
    rows = []
    for fact in _current(facts):
        linked = [views.link(page, i) for ids in fact.links.values() for i in ids]
        linked += [views.link(page, other) for _, other in views.inbound.get(fact.id, [])]
        rows.append(
            [
                views.link(page, fact.id, fact.title),
                prose(shorten(str(fact.get("rationale")), 200)),
                capped(linked, ", ") or "—",
                _badges(views, fact),
            ]
        )
    return "\n".join(
        ["## Overview", "", scroll_table(["Decision", "Rationale", "Linked facts", "Status"], rows)]
    )


PROGRESS_SECTIONS = [
    ("done", "Accomplished"),
    ("in_progress", "In progress"),
    ("todo", "Next steps"),
    ("blocked", "Blocked"),
    ("failed", "Failed"),
]


def progress(kb: KnowledgeBase, views: ViewBuilder, facts: list[Fact], _: Any, page: str) -> str:
    out = []
    for state, heading in PROGRESS_SECTIONS:
        items = [f for f in _current(facts) if f.get("state") == state]
        if state == "todo":
            items.sort(key=lambda f: (f.get("priority") is None, f.get("priority") or 0))
        if not items:
            continue
        out += [f"## {heading}", ""]
        for n, fact in enumerate(items, 1):
            bullet = f"{n}." if state == "todo" else "-"
            criterion = f" — success: {md(fact.get('criterion'))}" if fact.get("criterion") else ""
            out.append(
                f"{bullet} {views.link(page, fact.id, fact.title)}{criterion} "
                f"{_badges(views, fact)}"
            )
        out.append("")
    return "\n".join(out)


def view(category: Category) -> Renderer:
    """The function a category's registry entry names as its view (categories.py)."""
    found = globals().get(category.view or "")
    if not callable(found):
        raise LookupError(f"category {category.name}: no view function {category.view!r} here")
    return found
