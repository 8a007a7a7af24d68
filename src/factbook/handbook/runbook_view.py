"""The runbooks page: steps as the runner sees them, and the last runs from their records."""

from __future__ import annotations

from typing import Any

from ..safehtml import slug
from .markup import code, md, scroll_table, time_text
from .sources import Runbook
from .views import ViewBuilder


def runbooks_context(runbooks: list[Runbook], views: ViewBuilder, page: str) -> list[dict]:
    out = []
    for book in runbooks:
        last = book.runs[0] if book.runs else None
        last_steps = {str(s.get("name")): s for s in (last.steps if last else [])}
        steps = []
        for n, step in enumerate(book.steps, 1):
            meta = step.meta
            requires = meta.get("requires") or []
            records = meta.get("records") or []
            done = last_steps.get(step.name)
            facts = [f"needs {views.link(page, str(i))}" for i in _as_list(requires)]
            facts += [f"records {views.link(page, str(i))}" for i in _as_list(records)]
            steps.append(
                [
                    str(n),
                    code(step.name) + (" ⚠ destructive" if meta.get("destructive") else ""),
                    _seconds(meta.get("timeout")),
                    "<br>".join(facts),
                    _step_status(done) if done else "—",
                ]
            )
        runs = [
            [
                code(r.id),
                _run_badge(r.status),
                time_text(r.started),
                time_text(r.finished),
                _steps_summary(r.steps),
            ]
            for r in book.runs
        ]
        related = [views.link(page, i) for i in [*book.pitfalls, *book.facts]]
        out.append(
            {
                "name": slug(book.name),  # an id: file names may hold quotes, spaces, braces
                "title": md(book.title),
                "path": book.path,
                "target": md(book.target),
                "related": ", ".join(related),
                "intro": md(book.intro),
                "problem": md(book.problem),
                "steps": scroll_table(["#", "Step", "Timeout", "Facts", "Last run"], steps),
                "runs": scroll_table(["Run", "Status", "Started", "Finished", "Steps"], runs),
            }
        )
    return out


def _as_list(value: Any) -> list[Any]:
    if value is None or value == "":
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _run_badge(status: str) -> str:
    kind = {
        "ok": "pass",
        "passed": "pass",
        "success": "pass",
        "done": "pass",
        "completed": "pass",
        "failed": "error",
        "error": "error",
        "running": "never",
    }.get(status.lower(), "assumed")
    return f'<span class="fb-badge fb-{kind}">{md(status)}</span>'


def _step_status(step: dict[str, Any]) -> str:
    duration = step.get("duration_s")
    took = f" ({float(duration):.1f} s)" if isinstance(duration, (int, float)) else ""
    return _run_badge(str(step.get("status", "unknown"))) + took


def _steps_summary(steps: list[dict[str, Any]]) -> str:
    if not steps:
        return "—"
    counts: dict[str, int] = {}
    for step in steps:
        status = str(step.get("status", "unknown"))
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{n} {md(s)}" for s, n in sorted(counts.items()))


def _seconds(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g} s"
    return md(value)
