"""Inputs other than facts: runbooks, their run records, status documents, hand-written docs.

Each belongs to another part of factbook and may be absent, half-written or from a newer
format; everything here is read defensively and a bad file becomes a note on the page, never
a failed build.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from factbook.handbook.runbookcache import RunbookCache, digest
from factbook.judging.sanitize import finite_number, loads_without_surrogates
from factbook.knowledge.kbfiles import Refused, check_readable, read_bytes, read_text
from factbook.knowledge.names import undecodable
from factbook.knowledge.walk import tree_glob
from factbook.knowledge.yamlsrc import parse_located

RUNBOOKS_DIR = "runbooks"
RUN_RECORDS_DIR = "results/runbooks"
STATUS_DIR = "status"
STATUS_GUIDE = "status-documents.md"  # the status command's own guide page
RUNBOOKS_GUIDE = "runbooks.md"  # the runbook runner's own guide page
SECTION_GUIDES = (STATUS_GUIDE, RUNBOOKS_GUIDE)  # shown in their section, not under Guides
MAX_RUNS = 5
NOTEBOOK_FILE = "executed.ipynb"  # the runner's name for a run's executed notebook


@dataclass
class Step:
    """One code cell of a runbook, with the prose (Markdown cells) written before it."""

    name: str
    code: str
    meta: dict[str, Any] = field(default_factory=dict)
    prose: str = ""


@dataclass
class Run:
    """One recorded execution of a runbook."""

    id: str
    status: str
    started: str
    finished: str
    steps: list[dict[str, Any]]
    duration_s: float | None = None
    target: str = ""
    error: str = ""
    notebook: Path | None = None  # its executed notebook, when the runner saved one
    refused: str = ""  # why a notebook that is there is not shown (a link out, a FIFO)


@dataclass
class Runbook:
    name: str
    title: str
    path: str
    intro: str
    steps: list[Step]
    runs: list[Run]
    problem: str = ""
    target: str = ""
    facts: list[str] = field(default_factory=list)
    pitfalls: list[str] = field(default_factory=list)
    closing: str = ""  # prose after the last step


@dataclass
class StatusDoc:
    """A status document under docs/status/: its page, title, and what it describes."""

    uri: str
    title: str
    about: str  # "milestone 4504", a date, or ""
    generated: str  # the "Generated ..." time the document states, if any
    order: tuple[Any, ...] = ()


def load_runbooks(root: Path) -> list[Runbook]:
    out = []
    folder = root / RUNBOOKS_DIR
    paths = sorted(p for p in folder.glob("*.md") if not p.name.startswith(("_", "README")))
    cache = RunbookCache(root) if paths else None
    for path in paths:
        out.append(replace(_parsed(path, root, cache), runs=load_runs(root, path.stem)))
    if cache is not None:
        cache.save()
    names = {r.name for r in out}
    records = root / RUN_RECORDS_DIR
    if records.is_dir():  # runs of runbooks that were since removed still show
        for folder in sorted(p for p in records.iterdir() if p.is_dir() and p.name not in names):
            out.append(
                Runbook(
                    folder.name,
                    folder.name,
                    "",
                    "",
                    [],
                    load_runs(root, folder.name),
                    "runbook file not found; only its runs are known",
                )
            )
    return out


_PARSED: dict[Path, tuple[tuple[int, int], Runbook]] = {}


def _parsed(path: Path, root: Path, cache: RunbookCache | None) -> Runbook:
    """Parse once per file version: jupytext costs ~15-50 ms a runbook, a stat ~10 µs; across
    processes, once per file content (runbookcache.py)."""
    stat = path.stat()
    key = (stat.st_mtime_ns, stat.st_size)
    cached = _PARSED.get(path)
    if cached is None or cached[0] != key:
        cached = (key, _parse_or_reuse(path, root, cache))
        _PARSED[path] = cached
    return cached[1]


def _parse_or_reuse(path: Path, root: Path, cache: RunbookCache | None) -> Runbook:
    try:  # as the parser reads it: inside the root, bounded (else the parser says why)
        sha = digest(read_bytes(path, root=root))
    except OSError:
        return _parse_runbook(path, root)
    name = path.relative_to(root).as_posix()
    if cache is not None:
        with contextlib.suppress(TypeError, ValueError, KeyError):
            return runbook_from_data(cache.get(name, sha))
    parsed = _parse_runbook(path, root)
    if cache is not None:
        cache.put(name, sha, asdict(parsed))
    return parsed


def runbook_from_data(data: Any) -> Runbook:
    """A Runbook (without runs) from asdict() output, its shapes checked (TypeError)."""
    if not isinstance(data, dict) or set(data) != {f.name for f in fields(Runbook)}:
        raise TypeError("unexpected fields")
    if not isinstance(data["steps"], list) or data["runs"] != []:
        raise TypeError("unexpected steps or runs")
    steps = []
    for step in data["steps"]:
        if not isinstance(step, dict) or set(step) != {f.name for f in fields(Step)}:
            raise TypeError("unexpected step")
        if not all(isinstance(step[k], str) for k in ("name", "code", "prose")):
            raise TypeError("unexpected step text")
        if not isinstance(step["meta"], dict):
            raise TypeError("unexpected step meta")
        steps.append(Step(**step))
    for key in ("name", "title", "path", "intro", "problem", "target", "closing"):
        if not isinstance(data[key], str):
            raise TypeError(f"unexpected {key}")
    for key in ("facts", "pitfalls"):
        if not isinstance(data[key], list) or not all(isinstance(v, str) for v in data[key]):
            raise TypeError(f"unexpected {key}")
    return Runbook(**{**data, "steps": steps})


def _parse_runbook(path: Path, root: Path) -> Runbook:
    """Through the runbook runner's own parser, so the handbook shows what `run` executes."""
    display = path.relative_to(root).as_posix()
    try:
        from factbook.runbooks.format import load_runbook

        parsed = load_runbook(path, root)
    except Exception as exc:  # a broken runbook must not break the handbook
        text = ""
        with contextlib.suppress(OSError):  # a FIFO, a link out: no heading
            text = read_text(path, root=root, limit=1 << 16, errors="replace")
        return Runbook(
            path.stem,
            _first_heading(text) or path.stem,
            display,
            "",
            [],
            [],
            f"could not parse: {exc}",
        )
    prose, closing = _prose_by_step(parsed)
    steps = [
        Step(
            s.name,
            s.source,
            {
                "timeout": s.timeout,
                "requires": list(s.requires),
                "destructive": s.destructive,
                "records": list(s.records),
                "target": s.target or parsed.target,
                "setup": s.setup,
            },
            prose.get(s.index, ""),
        )
        for s in parsed.steps
    ]
    problem = "; ".join(str(p) for p in parsed.problems[:3])
    return Runbook(
        path.stem,
        parsed.title,
        display,
        parsed.description,
        steps,
        [],
        problem,
        str(parsed.target or ""),
        list(parsed.facts),
        list(parsed.pitfalls),
        closing,
    )


def _prose_by_step(parsed: Any) -> tuple[dict[int, str], str]:
    """The Markdown cells before each code cell ({cell index: text}) and after the last one."""
    before: dict[int, str] = {}
    pending: list[str] = []
    for index, cell in enumerate(parsed.notebook.cells):
        if cell.cell_type == "markdown":
            pending.append(str(cell.source))
        elif cell.cell_type == "code":
            before[index] = "\n\n".join(pending)
            pending = []
    return before, "\n\n".join(pending)


def _first_heading(text: str) -> str:
    match = re.search(r"^#\s+(.+)$", text, re.M)
    return match[1].strip() if match else ""


def load_runs(root: Path, runbook: str) -> list[Run]:
    """The newest MAX_RUNS run records of one runbook.

    A record is `<runbook>/<run_id>/record.json` (the runner's layout) or `<runbook>/<run_id>.json`.
    """
    folder = root / RUN_RECORDS_DIR / runbook
    if not folder.is_dir():
        return []
    paths = [p for p in folder.glob("*/record.json")] + list(folder.glob("*.json"))
    runs = []
    for path in paths:
        run_id = path.parent.name if path.name == "record.json" else path.stem
        try:
            data = loads_without_surrogates(read_text(path, root=root))
        except (OSError, ValueError, RecursionError):  # not UTF-8, not JSON, too deep, outside
            runs.append(Run(run_id, "unreadable", "", "", []))
            continue
        if not isinstance(data, dict):
            continue
        steps = data.get("steps") if isinstance(data.get("steps"), list) else []
        notebook, refused = _notebook(path, root) if path.name == "record.json" else (None, "")
        runs.append(
            Run(
                id=str(data.get("run_id") or data.get("id") or run_id),
                status=str(data.get("status", "unknown")),
                started=str(data.get("started") or ""),
                finished=str(data.get("finished") or ""),
                steps=[s for s in steps if isinstance(s, dict)],
                duration_s=finite_number(data.get("duration_s")),
                target=str(data.get("target") or ""),
                error=str(data.get("error") or ""),
                notebook=notebook,
                refused=refused,
            )
        )
    runs.sort(key=lambda r: (r.started, r.id), reverse=True)
    return runs[:MAX_RUNS]


def _notebook(record: Path, root: Path) -> tuple[Path | None, str]:
    """The executed notebook beside `record` when it is a regular file inside the knowledge
    base (it is copied into the site); else None and, when something is there, why not."""
    path = record.parent / NOTEBOOK_FILE
    if not os.path.lexists(path):
        return None, ""
    try:
        check_readable(path, root=root)
    except Refused as exc:
        why = str(exc).split(": ", 1)[-1]
    except OSError as exc:
        why = f"cannot read it ({exc.strerror or type(exc).__name__})"
    else:
        return path, ""
    return None, f"{path.relative_to(root).as_posix()}: not copied: {why}"


def load_status_docs(docs_dir: Path | None, milestones: dict[str, Any]) -> list[StatusDoc]:
    """Status documents under docs_dir/status, newest first.

    Dated documents describe "now" and come first (newest date first); then documents of a
    milestone, latest milestone first; then anything else by modification time.
    """
    if docs_dir is None or not (docs_dir / STATUS_DIR).is_dir():
        return []
    out = []
    for path in tree_glob(docs_dir / STATUS_DIR, "*.md", shown=f"docs/{STATUS_DIR}"):
        if path.name == "index.md" or undecodable(path.as_posix()):  # copy_docs leaves it out
            continue
        try:
            text = read_text(path, errors="replace")  # confined by generate()
        except OSError:
            continue
        meta = _front_matter(text)
        title = str(meta.get("title") or _first_heading(text) or path.stem)
        generated = re.search(r"Generated (\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?: UTC)?)", text)
        date = str(meta.get("date") or _date_in(path.stem))
        milestone = re.search(r"status-(\w+?)(?:-redacted)?$", path.stem)
        if date:
            about, order = date, (2, date, path.name)
        elif milestone and milestone[1] in milestones:
            ref = milestone[1]
            about, order = f"milestone {ref}", (1, milestones[ref].index, path.name)
        else:
            about, order = "", (0, path.stat().st_mtime, path.name)
        out.append(
            StatusDoc(
                path.relative_to(docs_dir).as_posix(),
                title,
                about,
                generated[1] if generated else "",
                order,
            )
        )
    out.sort(key=lambda d: d.order, reverse=True)
    return out


def _front_matter(text: str) -> dict[str, Any]:
    """A status document's front matter, read as every YAML file of the knowledge base is
    (yamlsrc: bounded, no aliases); {} when it breaks a bound. A plain `safe_load` built the
    alias bomb `title: *a9` as shared lists that `str()` then spelled out: gigabytes."""
    if not text.startswith("---"):
        return {}
    end = text.find("\n---", 3)
    if end < 0:
        return {}
    doc, problems = parse_located(text[3:end], "front matter")
    return doc.data if not problems and isinstance(doc.data, dict) else {}


def _date_in(name: str) -> str:
    match = re.search(r"(\d{4}-?\d\d-?\d\d(?:T\d{4,6}Z?)?)", name)
    return match[1] if match else ""


def guide_pages(docs_dir: Path | None, generated: set[str]) -> list[str]:
    """Hand-written pages of docs_dir (not status documents), for the navigation."""
    if docs_dir is None or not docs_dir.is_dir():
        return []
    pages = []
    for path in tree_glob(docs_dir, "*.md", shown="docs"):
        uri = path.relative_to(docs_dir).as_posix()
        if uri.startswith(STATUS_DIR + "/") or uri in generated or uri in SECTION_GUIDES:
            continue
        if undecodable(uri):  # not published (plugin._drop_outside), so not in the nav
            continue
        pages.append(uri)
    return pages
