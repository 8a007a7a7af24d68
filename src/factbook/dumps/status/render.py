"""Render a status document with Jinja2 and write it atomically under docs/status/.

Templates are looked up in the knowledge base first (templates/status/, then templates/), then
in the package, so a knowledge base overrides `status.md.j2` or any partial it includes.
A knowledge base is data, never code: its templates run in Jinja2's immutable sandbox, so
`{{ cycler.__init__.__globals__ }}`, `''.__class__.__mro__`, `str.format` tricks and list
mutation are refused (one `status template:` line, exit 2) instead of reaching Python.
Environments are cached per template search path: compiling the templates is most of the
cost of a render, and a status document for 1,000 facts must take well under half a second.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import secrets
import traceback
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2.loaders import split_template_path

from factbook.dumps.status.context import StatusContext, build_context, default_previous
from factbook.dumps.status.hint import hint_comment
from factbook.dumps.status.items import value_text
from factbook.dumps.status.redact import document_redactor
from factbook.errors import FactbookError, InputError, UsageError, visible, warn
from factbook.handbook.safehtml import safe_markdown
from factbook.handbook.sandbox import (
    MAX_RENDER_MEMORY,
    KBSandbox,
    OutputTooLarge,
    SecurityError,
    bounded_memory,
)
from factbook.judging.sanitize import for_document, json_hidden_escaped
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.kbfiles import (
    Refused,
    confined,
    escapes,
    named_inside,
    outside_problem,
    read_head,
    require_inside,
)
from factbook.knowledge.limits import DUMP_MAX_BYTES, DUMP_MAX_ITEMS
from factbook.knowledge.names import NOT_UTF8, undecodable
from factbook.knowledge.yamlsrc import read_text_bounded
from factbook.store.atomic import write_output, write_text_atomic
from factbook.store.results import load_latest

TEMPLATE = "status.md.j2"
STATUS_DIR = Path("docs") / "status"
INDEX = "index.md"
_TAGLIKE = re.compile(r"<(?=[A-Za-z/|!])")


@dataclass
class StatusOptions:
    """What `factbook status` was asked for."""

    as_of: str | None = None
    since: str | None = None
    redact: bool = False
    hide_secrets: bool = False  # secrets only, hosts and users shown (an assistant over MCP)
    results: bool | None = None  # None: live results for 'now' only
    ids: bool = False  # budgeted dumps: every fact's id in its group line's head


def md(text: Any) -> str:
    """Escape what Markdown would swallow: `<think>` looks like an HTML tag. An entity, not a
    backslash: Python-Markdown (MkDocs) does not honour `\\<`."""
    return _TAGLIKE.sub("&lt;", str(text))


def cell(text: Any) -> str:
    """A Markdown table cell: escaped, pipes protected, one line."""
    return md(text).replace("|", "\\|").replace("\n", " ")


def kv(mapping: Any) -> str:
    """A configuration mapping as `key=value, ...` (YAML-ish scalars, lists as JSON)."""
    return value_text(mapping)


def template_dirs(kb_root: Path) -> tuple[str, ...]:
    """Override folders of a knowledge base that exist, most specific first."""
    dirs = [kb_root / "templates" / "status", kb_root / "templates"]
    return tuple(str(d) for d in dirs if d.is_dir())


class KBTemplateLoader(jinja2.BaseLoader):
    """A knowledge base's template folders, read as every KB file is: inside the root after
    resolving links, never a FIFO, bounded in size, UTF-8 (yamlsrc.read_text_bounded)."""

    def __init__(self, dirs: tuple[str, ...], root: str):
        self.dirs = dirs
        self.root = root

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        pieces = split_template_path(template)  # refuses '..'
        for folder in self.dirs:
            path = Path(folder, *pieces)
            if not (path.exists() or path.is_symlink()):
                continue
            display = path.relative_to(self.root).as_posix()
            with confined(self.root):
                text, problem = read_text_bounded(path, display)
            if problem is not None:
                raise InputError(f"status template: {problem}")
            return text, str(path), _unchanged(path)
        raise jinja2.TemplateNotFound(template)


def _unchanged(path: Path) -> Callable[[], bool]:
    """Jinja's `uptodate` for one template file: same modification time as when read."""
    mtime = path.stat().st_mtime_ns

    def check() -> bool:
        try:
            return path.stat().st_mtime_ns == mtime
        except OSError:
            return False

    return check


@lru_cache(maxsize=16)
def environment(override_dirs: tuple[str, ...] = (), root: str = "") -> KBSandbox:
    loaders: list[jinja2.BaseLoader] = [KBTemplateLoader(override_dirs, root)]
    loaders.append(jinja2.PackageLoader("factbook.dumps.status", "templates"))
    env = KBSandbox(
        loader=jinja2.ChoiceLoader(loaders),
        autoescape=False,  # Markdown, not HTML; `md`/`cell` escape what matters
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["md"] = md
    env.filters["cell"] = cell
    env.filters["kv"] = kv
    env.filters["hint"] = _hint_slot
    return env


# `factbook import`'s hints are HTML comments: safe_markdown would escape them like any markup
# that came from a fact, so the template leaves a per-render placeholder that no fact text can
# forge (a random nonce) and the comment goes in after the document was made safe.
_HINTS: ContextVar[tuple[str, list[str]] | None] = ContextVar("status_hints", default=None)


def _hint_slot(item: Any, **options: Any) -> str:
    comment = hint_comment(item, **options)
    slot = _HINTS.get()
    if not comment or slot is None:
        return comment
    slot[1].append(comment)
    return f"\ue000{slot[0]}:{len(slot[1]) - 1}\ue001"


def render_context(context: StatusContext, kb_root: Path) -> str:
    """The document text for a prepared context (no redaction)."""
    folders = template_dirs(kb_root)
    for folder in folders:
        escaped = outside_problem(folder, Path(folder).relative_to(kb_root).as_posix(), kb_root)
        if escaped is not None:
            raise InputError(f"status template: {escaped}")
    env = environment(folders, str(kb_root))
    try:
        env.start()
        template = env.get_template(TEMPLATE)
        token = _HINTS.set((secrets.token_hex(6), []))
        try:
            with bounded_memory():
                rendered = template.render(**context.as_dict())
            text = safe_markdown(for_document(rendered))  # no raw ESC or bidi override
            nonce, hints = _HINTS.get()
            return re.sub(
                f"\ue000{nonce}:(\\d+)\ue001", lambda m: json_hidden_escaped(hints[int(m[1])]), text
            )
        finally:
            _HINTS.reset(token)
    except FactbookError:  # the loader's own one-line refusals (a template linked out)
        raise
    except Exception as exc:
        raise InputError(
            f"{template_where(exc, kb_root)}status template: {_failure(exc)}"
        ) from None


def _failure(exc: Exception) -> str:
    """Why a status template failed, in one line. Whatever its own code raises is the
    template's mistake, never a traceback: a loop or arithmetic ({{ 9**9**9 }}, 'x' *
    10**10, a self-include), and any other Python error an expression can reach ({{ 1 // 0
    }}, 'x'.encode('nope'), |slice(0), {% extends none %})."""
    if isinstance(exc, OutputTooLarge):  # a payload, or simply a knowledge base of ~20,000 facts
        return f"refused by the sandbox: {exc}; a knowledge base this large needs --budget TOKENS"
    if isinstance(exc, SecurityError):
        return f"refused by the sandbox: {exc}"
    if isinstance(exc, jinja2.TemplateError):
        return str(exc)
    if isinstance(exc, MemoryError):
        return f"needed more than {MAX_RENDER_MEMORY >> 20} MiB; stopped"
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def template_where(exc: BaseException, kb_root: Path) -> str:
    """`FILE:LINE: ` of the template line a render error came from, '' when none is known.

    A syntax error carries its file and line; an error raised while rendering (an undefined
    name, a missing filter or template, the sandbox's refusals, a template's own Python
    error) carries them only in its traceback, whose frames Jinja rewrites to the template's
    file and line: the innermost frame in a knowledge base's template is named (relative to
    the root), else the innermost in factbook's own (`status.md.j2:LINE (factbook's)`, where
    an override left out a macro it calls). Named escaped: the path is the KB's to choose."""
    file, line = getattr(exc, "filename", None), getattr(exc, "lineno", None)
    name = getattr(exc, "name", None)
    if file is None and isinstance(exc, jinja2.TemplateSyntaxError) and name:
        # the lexer's errors (an unclosed `{% raw %}`) carry the template's name only
        found = [d / name for d in (kb_root / "templates" / "status", kb_root / "templates")]
        file = next((str(f) for f in found if f.is_file()), name)
    if isinstance(exc, jinja2.TemplateSyntaxError) and file:
        shown, ours = _template_shown(file, kb_root)  # no line: an unclosed `{% raw %}`
        return f"{shown}:{line}{ours}: " if line else f"{shown}{ours}: "
    found = ""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if not frame.filename.endswith(".j2") or frame.lineno is None:
            continue
        shown, ours = _template_shown(frame.filename, kb_root)
        if not ours:
            return f"{shown}:{frame.lineno}: "
        found = found or f"{shown}:{frame.lineno}{ours}: "
    return found


def _template_shown(file: str, kb_root: Path) -> tuple[str, str]:
    """A template file as a message names it: (its path relative to the knowledge base, ''),
    or (the name of one of factbook's own templates, " (factbook's)")."""
    try:
        return visible(Path(file).resolve().relative_to(kb_root.resolve()).as_posix()), ""
    except (ValueError, OSError):
        return visible(Path(file).name), " (factbook's)"


def prepare(
    kb: KnowledgeBase, options: StatusOptions, *, now: dt.datetime | None = None
) -> StatusContext:
    """Resolve milestones and results for `options` and build the context."""
    as_of = kb.milestone(options.as_of)
    if options.since is not None:
        previous = kb.milestone(options.since)
        if as_of is not None and previous.index >= as_of.index:
            raise UsageError(f"--since {previous.id} is not before --as-of {as_of.id}")
    else:
        previous = default_previous(kb, as_of)
    use_results = options.results if options.results is not None else as_of is None
    results = (load_latest(kb.root) or None) if use_results else None  # none yet: provenance
    return build_context(
        kb, as_of=as_of, previous=previous, results=results, now=now, redacted=options.redact
    )


def render_status(
    kb: KnowledgeBase, options: StatusOptions, *, now: dt.datetime | None = None
) -> str:
    """The status document for `options`, redacted when asked."""
    with confined(kb.root):
        context = prepare(kb, options, now=now)
        text = render_context(context, kb.root)
        redact = document_redactor(kb, redact=options.redact, hide_secrets=options.hide_secrets)
        return redact(text) if redact is not None else text


def default_path(
    kb: KnowledgeBase, options: StatusOptions, *, now: dt.datetime | None = None
) -> Path:
    """docs/status/status-<milestone>.md, or docs/status/<YYYY-MM-DD>-status.md for now."""
    suffix = "-redacted" if options.redact else ""
    if options.as_of is not None:
        name = f"status-{options.as_of}{suffix}.md"
    else:
        day = (now or dt.datetime.now(dt.timezone.utc)).strftime("%Y-%m-%d")
        name = f"{day}-status{suffix}.md"
    return kb.root / STATUS_DIR / name


def write_status(path: Path, text: str, *, kb_root: Path) -> Path:
    """Write a document atomically; refresh the status index when it lands in docs/status/.

    A document `factbook import` would refuse (over DUMP_MAX_BYTES or DUMP_MAX_ITEMS) is
    refused first. A path
    named inside the knowledge base (the default docs/status/...) must resolve inside it: a
    docs/status that links elsewhere is refused (one line) rather than written through."""
    size = len(text.encode("utf-8"))
    if size > DUMP_MAX_BYTES:
        raise InputError(
            f"{path}: the document would be {size} bytes, over the {DUMP_MAX_BYTES} bytes "
            "factbook import reads; not written"
        )
    from factbook.dumps.capture.parse import line_past_item_bound  # import's own reader

    past = line_past_item_bound(text)
    if past is not None:
        raise InputError(
            f"{path}: the document would hold more than {DUMP_MAX_ITEMS:,} items (line "
            f"{past}), more than factbook import reads; not written (--budget or --as-of "
            "writes fewer)"
        )
    if named_inside(path, kb_root):
        require_inside(path.parent, _shown(path.parent, kb_root), kb_root)
        write_text_atomic(path, text)  # a link planted at the path is replaced, not followed
    else:
        write_output(path, text)  # `--out /dev/null` or a pipe: written in place
    status_dir = kb_root / STATUS_DIR
    inside = escapes(status_dir, kb_root) is None
    if inside and path.resolve().parent == status_dir.resolve():
        write_index(status_dir, root=kb_root)
    return path


def _shown(path: Path, root: Path) -> str:
    """`path` as the user knows it: relative to the knowledge base when it is named there."""
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        return str(path)


_TITLE = re.compile(r"^# (.+)$", re.MULTILINE)
TITLE_BYTES = 2000  # the head of a document searched for its `# ` title


def write_index(status_dir: Path, *, root: Path | None = None) -> Path:
    """docs/status/index.md: every status document, newest milestone/date first.

    Titles are read only from regular files inside `root` (default: `status_dir`); a link out
    of it, a FIFO or a folder named x.md is left out of the index with one line on stderr."""
    root = status_dir if root is None else root
    docs = [p for p in status_dir.glob("*.md") if p.name != INDEX]

    def key(path: Path) -> tuple[int, str]:
        m = re.fullmatch(r"status-(\d+).*\.md", path.name)
        return (0, f"{int(m.group(1)):012d}") if m else (1, path.name)

    lines = [
        "# Status documents",
        "",
        "Generated by `factbook status` (see docs/status-documents.md). Dated documents describe",
        "the knowledge base at the time of writing; `status-<milestone>` documents reproduce",
        "what was known, done and planned at that milestone.",
        "",
    ]
    for path in sorted(docs, key=key, reverse=True):
        if undecodable(path.name):
            _skipped(path, root, NOT_UTF8)
            continue
        title = _title(path, root)
        if title is not None:
            lines.append(f"- [{title}]({path.name})")
    index = status_dir / INDEX
    write_text_atomic(index, safe_markdown("\n".join(lines) + "\n"))  # titles are file text
    return index


def _title(path: Path, root: Path) -> str | None:
    """A document's `# ` title (its name without one); None, said on stderr, when it cannot
    be read here. Its content is never shown: only the path and why."""
    try:
        head = read_head(path, TITLE_BYTES, root=root).decode("utf-8", "replace")
    except Refused as exc:
        _skipped(path, root, str(exc).split(": ", 1)[-1])
        return None
    except OSError as exc:
        _skipped(path, root, f"cannot read it ({exc.strerror or type(exc).__name__})")
        return None
    found = _TITLE.search(head)
    return found.group(1).strip() if found else path.stem


def _skipped(path: Path, root: Path, why: str) -> None:
    why = why.removesuffix("; not read")
    warn(f"{_shown(path, root)}: {why}; left out of the index")
