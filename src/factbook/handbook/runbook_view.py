"""The runbooks: an overview page, and a page per runbook with its prose, steps and last runs.

A runbook page reads like the notebook: the authors' prose, then each step with its metadata
(timeout, destructive, setup, target), the facts it needs and records, how it went in the last
run and its code. The last runs list outcome, duration, the values each run wrote back and a
link to the executed notebook (copied next to the page, so it opens offline too).

Runbooks and run records come from many hands: prose passes through `safe_markdown`, code is
escaped into a `<pre>` block, names become slugs before they are ids or file names.
"""

from __future__ import annotations

import html
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from factbook.handbook.marks import badge
from factbook.handbook.markup import capped, code, md, rel_link, scroll_table, time_text
from factbook.handbook.safehtml import safe_markdown, slug
from factbook.handbook.sources import Run, Runbook
from factbook.handbook.views import ViewBuilder
from factbook.judging.sanitize import finite_number

RUNBOOK_DIR = "runbooks"
NOTEBOOK_LIMIT = 8 << 20  # bytes of one executed notebook copied into the site
NOTEBOOKS_TOTAL = 64 << 20  # bytes of all of them: MkDocs holds every copied file in memory
RUN_KINDS = {
    "ok": "pass",
    "passed": "pass",
    "success": "pass",
    "done": "pass",
    "completed": "pass",
    "failed": "error",
    "error": "error",
    "interrupted": "drift",
    "running": "never",
    "pending": "never",
    "skipped": "skipped",
}


@dataclass(frozen=True)
class RunbookPage:
    """Where a runbook's page and its runs' notebooks go in the site."""

    book: Runbook
    uri: str  # runbooks/<slug>.md
    notebooks: dict[str, str]  # run id -> notebook uri in the site

    def notebook_files(self) -> dict[str, Path]:
        """{site uri: executed notebook on disk} for notebooks small enough to copy."""
        out = {}
        for run in self.book.runs:
            uri = self.notebooks.get(run.id)
            if uri and run.notebook is not None:
                out[uri] = run.notebook
        return out


def runbook_pages(runbooks: list[Runbook], budget: int = NOTEBOOKS_TOTAL) -> list[RunbookPage]:
    """One page per runbook; names that slug alike get a numbered suffix.

    Executed notebooks are copied while each is at most NOTEBOOK_LIMIT and all together fit
    `budget`; a notebook left out is named on the page instead.
    """
    taken: set[str] = set()
    pages = []
    for book in runbooks:
        base = _unique(slug(book.name), taken)
        notebooks: dict[str, str] = {}
        names: set[str] = set()
        for run in book.runs:
            size = _size(run.notebook)
            if size is not None and size <= min(NOTEBOOK_LIMIT, budget):
                budget -= size
                notebooks[run.id] = f"{RUNBOOK_DIR}/{base}/{_unique(slug(run.id), names)}.ipynb"
        pages.append(RunbookPage(book, f"{RUNBOOK_DIR}/{base}.md", notebooks))
    return pages


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}-{n}", n + 1
    taken.add(candidate)
    return candidate


def _size(path: Path | None) -> int | None:
    try:
        return path.stat().st_size if path is not None else None
    except OSError:
        return None


# ---- the overview page ------------------------------------------------------------------


def runbooks_context(pages: list[RunbookPage], views: ViewBuilder, page: str) -> list[dict]:
    """Each runbook in a few lines and its last runs; the details are on its own page."""
    out = []
    for entry in pages:
        book = entry.book
        destructive = sum(1 for s in book.steps if s.meta.get("destructive"))
        out.append(
            {
                "name": slug(book.name),  # an id: file names may hold quotes, spaces, braces
                "title": md(book.title),
                "link": rel_link(page, entry.uri),
                "path": book.path,
                "target": md(book.target),
                "intro": md(book.intro),
                "problem": md(book.problem),
                "steps": len(book.steps),
                "destructive": destructive,
                "runs": _runs_table(entry, views, page, recorded=False),
            }
        )
    return out


# ---- a runbook's own page ---------------------------------------------------------------


def runbook_context(entry: RunbookPage, views: ViewBuilder) -> dict[str, Any]:
    book, page = entry.book, entry.uri
    last = book.runs[0] if book.runs else None
    last_steps = {str(s.get("name")): s for s in (last.steps if last else [])}
    steps = []
    for n, step in enumerate(book.steps, 1):
        meta = step.meta
        done = last_steps.get(step.name)
        steps.append(
            {
                "n": n,
                "name": md(step.name),
                "anchor": "step-" + slug(step.name),
                "prose": prose_block(step.prose, book.title),
                "meta": _meta_line(meta, book.target),
                "needs": _links(views, page, meta.get("requires")),
                "records": _links(views, page, meta.get("records")),
                "last": _step_status(done) if done else "",
                "code": code_block(step.code),
            }
        )
    return {
        "name": slug(book.name),
        "heading": md(book.title),
        "path": book.path,
        "target": md(book.target),
        "intro": md(book.intro),
        "problem": md(book.problem),
        "related": capped([views.link(page, i) for i in [*book.pitfalls, *book.facts]], ", "),
        "overview": rel_link(page, "runbook-runs.md", "runbook-" + slug(book.name)),
        "runs": _runs_table(entry, views, page, recorded=True),
        "steps": steps,
        "closing": prose_block(book.closing, book.title),
    }


def _links(views: ViewBuilder, page: str, ids: Any) -> str:
    return capped([views.link(page, str(i)) for i in _as_list(ids)], ", ")


def _meta_line(meta: dict[str, Any], default_target: str) -> str:
    parts = [f"timeout {_seconds(meta.get('timeout'))}"] if meta.get("timeout") else []
    if meta.get("target") and str(meta["target"]) != default_target:
        parts.append(f"target {md(meta['target'])}")
    if meta.get("setup"):
        parts.append(badge("never", "setup", "re-run whenever a later step runs alone"))
    if meta.get("destructive"):
        parts.append(badge("destructive", "destructive", "asks before running (or needs --yes)"))
    return " · ".join(parts)


def _runs_table(entry: RunbookPage, views: ViewBuilder, page: str, *, recorded: bool) -> str:
    headers = ["Run", "Status", "Started", "Duration", "Steps"]
    headers += ["Recorded"] if recorded else []
    headers += ["Notebook"]
    rows = []
    for run in entry.book.runs:
        row = [
            code(run.id) + (f" on {md(run.target)}" if run.target else ""),
            run_badge(run.status) + (f" {md(run.error)}" if run.error else ""),
            time_text(run.started),
            took(run_seconds(run)),
            _steps_summary(run.steps),
        ]
        if recorded:
            row.append(_recorded(run, views, page))
        row.append(_notebook_link(entry, run, page))
        rows.append(row)
    return scroll_table(headers, rows)


def _recorded(run: Run, views: ViewBuilder, page: str) -> str:
    values = []
    for step in run.steps:
        for item in step.get("recorded") or []:
            if isinstance(item, dict) and item.get("fact"):
                unit = f" {md(item['unit'])}" if item.get("unit") else ""
                fact = views.link(page, str(item["fact"]))
                values.append(f"{fact} = {code(item.get('value'))}{unit}")
    return capped(values, "<br>") or "—"


def _notebook_link(entry: RunbookPage, run: Run, page: str) -> str:
    uri = entry.notebooks.get(run.id)
    if uri:
        return f"[executed.ipynb]({rel_link(page, uri)})"
    if run.notebook is not None:  # too large to copy: say where it is
        where = "/".join(run.notebook.parts[-3:])
        limits = f"over {NOTEBOOK_LIMIT >> 20} MiB, or {NOTEBOOKS_TOTAL >> 20} MiB in all"
        return f"not copied ({limits}): {code('results/runbooks/' + where)}"
    return "—"


def prose_block(text: str, title: str) -> str:
    """Authors' Markdown, safe: the title heading dropped, the others one level down (a
    notebook's `##` section sits beside the page's `###` steps). A closed fenced block is
    shown exactly, as an escaped `<pre>` (whatever Markdown extensions the site has); an
    unclosed one is prose."""
    token = secrets.token_hex(8)  # per call: no prose can forge a placeholder
    blocks: list[str] = []
    lines: list[str] = []
    rows = text.splitlines()
    i = 0
    while i < len(rows):
        line = rows[i]
        end = _fence_end(rows, i)
        if end is not None:
            blocks.append(code_block("\n".join(rows[i + 1 : end])))
            lines += ["", f"fbcode{token}n{len(blocks) - 1}", ""]
            i = end + 1
            continue
        heading = re.match(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$", line)
        if heading and len(heading[1]) == 1 and heading[2].strip() == title.strip():
            i += 1
            continue  # the page's own title
        if heading:
            line = "#" * min(len(heading[1]) + 1, 6) + " " + heading[2]
        lines.append(line)
        i += 1
    out = safe_markdown("\n".join(lines).strip())
    return re.sub(f"fbcode{token}n(\\d+)", lambda m: blocks[int(m[1])], out)


def _fence_end(rows: list[str], start: int) -> int | None:
    """The line closing the fence opened at `start` (CommonMark: same character, at least as
    long, nothing after it), or None when `start` opens none or it never closes."""
    opening = re.match(r"^ {0,3}(`{3,}|~{3,})([^`]*)$", rows[start])
    if not opening:
        return None
    fence = opening[1]
    for end in range(start + 1, len(rows)):
        closing = re.match(r"^ {0,3}(`{3,}|~{3,})[ \t]*$", rows[end])
        if closing and closing[1][0] == fence[0] and len(closing[1]) >= len(fence):
            return end
    return None


def code_block(source: str) -> str:
    """A step's code as one raw HTML line: no Markdown inside, newlines as references."""
    text = html.escape(source.rstrip("\n"), quote=False).replace("\n", "&#10;")
    return f'<pre class="fb-code"><code>{text}</code></pre>'


# ---- small pieces -----------------------------------------------------------------------


def _as_list(value: Any) -> list[Any]:
    if value is None or value == "":
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def run_badge(status: str) -> str:
    """A run's or a step's status as a worded pill (statuses are read from records)."""
    return badge(RUN_KINDS.get(status.lower(), "assumed"), status)


def _step_status(step: dict[str, Any]) -> str:
    seconds = finite_number(step.get("duration_s"))
    mark = run_badge(str(step.get("status", "unknown")))
    return mark + (f" ({took(seconds)})" if seconds is not None else "")


def _steps_summary(steps: list[dict[str, Any]]) -> str:
    if not steps:
        return "—"
    counts: dict[str, int] = {}
    for step in steps:
        status = str(step.get("status", "unknown"))
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{n} {md(s)}" for s, n in sorted(counts.items()))


def run_seconds(run: Run) -> float | None:
    """The record's duration, else finished minus started (older records)."""
    if run.duration_s is not None:
        return run.duration_s
    try:
        start = datetime.fromisoformat(run.started.replace("Z", "+00:00"))
        end = datetime.fromisoformat(run.finished.replace("Z", "+00:00"))
        return max((end - start).total_seconds(), 0.0)
    except (ValueError, TypeError):
        return None


def took(seconds: float | None) -> str:
    """`1.2 s`, `4 min 05 s`, `1 h 02 min`; `—` when unknown."""
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _seconds(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g} s"
    return md(value)
