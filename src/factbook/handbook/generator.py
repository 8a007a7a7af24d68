"""The handbook generator: knowledge base + latest results in, Markdown pages out.

Plain Python and Jinja2, no MkDocs import: `factbook docs` writes the pages to a folder, and
the MkDocs hook hands the same pages to MkDocs in memory. Each page is rendered from a
plain-data context; its hash decides whether the page must be rendered again, and files are
written only when their text changed, so file watchers see real changes only.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import stat
import time
from dataclasses import dataclass, field, is_dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import jinja2
import yaml

from factbook.errors import InputError
from factbook.handbook.editlinks import EditLinks
from factbook.handbook.fleet_view import FLEET
from factbook.handbook.markup import code, md
from factbook.handbook.measured import load_history
from factbook.handbook.pages import (
    ALL_FACTS,
    CATEGORY_TITLES,
    HOME,
    RUNBOOKS,
    STATUS_DOCS,
    TAGS,
    page_specs,
)
from factbook.handbook.prerender import placeholders
from factbook.handbook.runbook_view import NOTEBOOK_LIMIT, RunbookPage, runbook_pages
from factbook.handbook.sandbox import KBSandbox, SecurityError
from factbook.handbook.sources import (
    RUNBOOKS_GUIDE,
    STATUS_GUIDE,
    guide_pages,
    load_runbooks,
    load_status_docs,
)
from factbook.handbook.views import ViewBuilder, category_uri
from factbook.judging.sanitize import for_document, loads_without_surrogates
from factbook.knowledge.kb import load_kb_with_problems
from factbook.knowledge.kbfiles import Refused, confined, escapes, read_bytes, read_text
from factbook.knowledge.names import NOT_UTF8, undecodable
from factbook.knowledge.walk import tree_glob
from factbook.store.atomic import write_bytes_atomic
from factbook.store.results import list_runs, load_latest

CSS_URI = "assets/factbook.css"
HANDOVER_PAGE = "status-handover.md"  # handover.HANDOVER; that module is imported lazily
MANIFEST = ".factbook-pages.json"


@dataclass
class Handbook:
    """Generated pages ({docs-relative uri: text}), assets, navigation and what it cost."""

    pages: dict[str, str]
    assets: dict[str, str]
    titles: dict[str, str]
    nav: list[Any]
    rendered: list[str] = field(default_factory=list)  # pages not taken from the cache
    # uri -> HTML parts its Markdown holds placeholders for (generate(prerender=True))
    fragments: dict[str, list[str]] = field(default_factory=dict)
    lint_problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # files left out, one line each
    seconds: dict[str, float] = field(default_factory=dict)

    def files(self) -> dict[str, str]:
        return {**self.pages, **self.assets}


def template_dir() -> Path:
    """The engine's handbook templates, CSS and scripts (shipped in the package)."""
    return Path(__file__).with_name("templates")


class Generator:
    """Renders handbook pages; remembers each page's input hash to skip unchanged pages."""

    def __init__(self) -> None:
        # the package's own templates, sandboxed all the same: fact text reaches them
        self.env = KBSandbox(
            loader=jinja2.FileSystemLoader(str(template_dir())),
            autoescape=False,  # Markdown out; values are escaped by the md/code filters
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
            undefined=jinja2.StrictUndefined,
            auto_reload=True,
        )
        self.env.filters["md"] = md
        self.env.filters["code"] = code
        self._cache: dict[str, tuple[str, str]] = {}  # uri -> (input hash, text)

    def generate(
        self,
        root: Path | str,
        *,
        docs_dir: Path | str | None = None,
        edit: EditLinks | None = None,
        site_name: str | None = None,
        live: bool = False,
        prerender: bool = False,
    ) -> Handbook:
        """All pages of the handbook of the knowledge base at `root` (every file read inside
        it: kbfiles.confined).

        `live`: called again after every edit (`mkdocs serve`): the knowledge base is loaded
        as load_kb_with_problems(live=True) does, one changed fact file parsed again.

        `prerender`: for the MkDocs plugin, parts of the largest pages come as HTML in
        `Handbook.fragments` and their Markdown holds placeholders (prerender.py).

        `site_name` heads the home page (MkDocs' site_name; None: read from the knowledge
        base's mkdocs.yml, else "FOLDER handbook"): the engine has no title of its own.

        `edit`: where a fact's YAML line opens for editing (editlinks.py); None shows the
        file:line as text.
        """
        with confined(root):
            return self._generate(
                Path(root).resolve(),
                docs_dir=docs_dir,
                edit=edit,
                site_name=site_name,
                live=live,
                prerender=prerender,
            )

    def _generate(
        self,
        root: Path,
        *,
        docs_dir: Path | str | None,
        edit: EditLinks | None,
        site_name: str | None,
        live: bool,
        prerender: bool,
    ) -> Handbook:
        started = time.perf_counter()
        docs = Path(docs_dir).resolve() if docs_dir is not None else None
        kb, problems = load_kb_with_problems(root, live=live)
        latest = load_latest(root)
        loaded = time.perf_counter()
        views = ViewBuilder(kb, latest, load_history(root), edit=edit)
        runbooks = runbook_pages(load_runbooks(root))
        status_docs = load_status_docs(docs, kb.milestones)
        guides = {g for g in (STATUS_GUIDE, RUNBOOKS_GUIDE) if docs and (docs / g).is_file()}
        guide = STATUS_GUIDE if STATUS_GUIDE in guides else None
        specs = page_specs(
            kb,
            views,
            runbooks=runbooks,
            status_docs=status_docs,
            runs=list_runs(root),
            lint_problems=[str(p) for p in problems],
            status_guide=guide,
            site_name=site_name if site_name is not None else mkdocs_site_name(root),
            html_parts=prerender,
        )
        built = time.perf_counter()
        templates = self._templates_digest()
        pages, rendered, fragments = {}, [], {}
        for spec in specs:
            held = None
            if prerender and spec.fragments is not None:
                fragments[spec.uri] = [for_document(part) for part in spec.fragments]
                held = placeholders(len(spec.fragments))
            digest = hashlib.sha256(
                (templates + spec.template + _stable_json([spec.context, held])).encode(
                    "utf-8", "surrogatepass"
                )
            ).hexdigest()
            cached = self._cache.get(spec.uri)
            if cached and cached[0] == digest:
                pages[spec.uri] = cached[1]
                continue
            try:
                # each page its own output budget and deadline: the generator lives as long as
                # `mkdocs serve`, and a budget kept across renders ran out after ~46 edits
                self.env.start()
                text = self.env.get_template(spec.template).render(
                    title=spec.title, page=spec.uri, fragments=held, **spec.context
                )
            except SecurityError as exc:  # a bound of the sandbox: a page too large to make
                raise InputError(f"handbook page {spec.uri}: {exc}; not generated") from None
            text = for_document(text)  # no raw ESC or bidi override from a fact reaches a page
            self._cache[spec.uri] = (digest, text)
            pages[spec.uri] = text
            rendered.append(spec.uri)
        done = time.perf_counter()
        css = (template_dir() / "factbook.css").read_text(encoding="utf-8")
        titles = {s.uri: s.title for s in specs}
        notes = [run.refused for e in runbooks for run in e.book.runs if run.refused]
        return Handbook(
            pages=pages,
            assets={CSS_URI: css, **_notebooks(runbooks, root, notes)},
            titles=titles,
            nav=build_nav(
                status_docs,
                guides,
                guide_pages(docs, set(pages)),
                fleet=FLEET in pages,
                runbooks=[(e.book.title, e.uri) for e in runbooks],
                category_pages={name: len(split) for name, split in views.pages.items()},
            ),
            rendered=rendered,
            fragments=fragments,
            lint_problems=[str(p) for p in problems],
            notes=notes,
            seconds={
                "load": loaded - started,
                "views": built - loaded,
                "render": done - built,
                "total": done - started,
            },
        )

    def _templates_digest(self) -> str:
        h = hashlib.sha256()
        for path in sorted(template_dir().iterdir()):
            if path.is_file():
                h.update(path.name.encode() + path.read_bytes())
        return h.hexdigest()


_NOTEBOOKS: dict[Path, tuple[tuple[int, int], str]] = {}


def mkdocs_site_name(root: Path) -> str:
    """site_name from ROOT/mkdocs.yml ('' if none): the handbook's title when MkDocs is not the
    caller (`factbook docs`). The file is composed into nodes, nothing constructed, and only a
    scalar `site_name` counts: tags such as !!python/name are not run, and an alias bomb
    (`site_name: *a9`, nine levels of ten) is a sequence node here, not 10**9 strings that
    `str()` spells out."""
    path = root / "mkdocs.yml"
    if not path.is_file():
        return ""
    try:  # a knowledge base file: read inside its root, bounded (kbfiles)
        top = yaml.compose(read_text(path, root=root), Loader=_COMPOSER)
    except (yaml.YAMLError, OSError, UnicodeDecodeError):  # kbfiles.Refused is an OSError
        return ""
    if not isinstance(top, yaml.MappingNode):
        return ""
    for key, value in top.value:
        if isinstance(key, yaml.ScalarNode) and key.value == "site_name":
            return value.value.strip() if isinstance(value, yaml.ScalarNode) else ""
    return ""


_COMPOSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _notebooks(runbooks: list[RunbookPage], root: Path, notes: list[str]) -> dict[str, str]:
    """The executed notebooks the runbook pages link to, copied into the site.

    Read once per file version (a rebuild under `mkdocs serve` re-reads none of them), and
    only inside the knowledge base: a notebook that became a link out or a FIFO since it was
    listed is left out with a line in `notes`.
    """
    out = {}
    for entry in runbooks:
        for uri, path in entry.notebook_files().items():
            try:
                found = path.stat()
                key = (found.st_mtime_ns, found.st_size)
                cached = _NOTEBOOKS.get(path)
                if cached is None or cached[0] != key:
                    text = read_text(path, root=root, limit=NOTEBOOK_LIMIT, errors="replace")
                    cached = (key, text)
                    _NOTEBOOKS[path] = cached
            except Refused as exc:
                notes.append(f"{path}: not copied: {str(exc).split(': ', 1)[-1]}")
                continue
            except OSError:  # removed since the listing: the page says so next time
                continue
            out[uri] = cached[1]
    return out


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return value.__dict__
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    return str(value)


def _stable_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=_plain, ensure_ascii=False)


def build_nav(
    status_docs: list[Any],
    section_guides: set[str],
    guides: list[str],
    *,
    fleet: bool = False,
    runbooks: list[tuple[str, str]] | None = None,
    category_pages: dict[str, int] | None = None,
) -> list[Any]:
    """MkDocs navigation: home, facts by category, runbooks, status documents, guides.

    The runbook runner's and the status command's own guide pages, when present, sit in their
    section next to the generated page. `category_pages`: how many pages each category has
    (views.category_pages); one with several is a section of them. `runbooks`: (title, uri)
    of each runbook's page; the titles come from runbook files (and status documents' from
    their front matter) and MkDocs' theme prints nav titles unescaped.
    """
    facts = [{"All facts": ALL_FACTS}, {"Tags": TAGS}] + ([{"Fleet": FLEET}] if fleet else [])
    for name, title in CATEGORY_TITLES.items():
        count = (category_pages or {}).get(name, 1)
        pages = [category_uri(name, n) for n in range(1, count + 1)]
        facts.append({title: pages[0] if count == 1 else pages})  # a section of its pages
    books: list[Any] = [{"Steps and last runs": RUNBOOKS}]
    if RUNBOOKS_GUIDE in section_guides:
        books.append({"About runbooks": RUNBOOKS_GUIDE})
    books += [{html.escape(title): uri} for title, uri in runbooks or []]
    status: list[Any] = [{"Newest first": STATUS_DOCS}, {"Hand-over dump": HANDOVER_PAGE}]
    if STATUS_GUIDE in section_guides:
        status.append({"About status documents": STATUS_GUIDE})
    status += [{html.escape(d.title): d.uri} for d in status_docs]
    nav: list[Any] = [
        {"Home": HOME},
        {"Facts": facts},
        {"Runbooks": books},
        {"Status documents": status},
    ]
    if guides:
        nav.append({"Guides": guides})
    return nav


MAX_DOC_BYTES = 64 << 20  # one hand-written page or picture copied into the handbook


def copy_docs(docs_dir: Path, root: Path) -> tuple[dict[str, bytes], list[str]]:
    """The hand-written pages under `docs_dir` to copy beside the generated ones, and one line
    for each file left out: a link out of the knowledge base, a FIFO, a huge file."""
    found: dict[str, bytes] = {}
    refused: list[str] = []
    for path in tree_glob(docs_dir, "*", shown="docs"):
        if path.name.startswith(".") or (path.is_dir() and not path.is_symlink()):
            continue
        rel = path.relative_to(docs_dir).as_posix()
        if undecodable(rel):  # no page can link it, no manifest can name it as text
            refused.append(f"{rel}: not copied: {NOT_UTF8}")
            continue
        try:
            found[rel] = read_bytes(path, root=root, limit=MAX_DOC_BYTES)
        except OSError as exc:
            refused.append(f"{rel}: not copied: {str(exc).split(': ', 1)[-1]}")
    return found, refused


def write_tree(
    handbook: Handbook, out: Path | str, *, extra: dict[str, bytes] | None = None
) -> list[str]:
    """Write pages, assets and `extra` files under `out`, touching only files that changed.

    Files written here before and no longer produced are removed (a manifest lists them), so
    a deleted category or runbook does not linger. Returns the uris written. The output
    folder may sit in a shared knowledge base, so nothing in it is trusted: a manifest entry
    that would remove a file outside `out`, or a subfolder that leads out of it, is refused
    (InputError, one line) before anything is written, and only regular files are compared.
    """
    out = Path(out)
    files: dict[str, bytes] = dict(extra or {})
    files.update({uri: text.encode("utf-8") for uri, text in handbook.files().items()})
    manifest = out / MANIFEST
    stale = [out / uri for uri in sorted(_manifest_entries(manifest, out) - set(files))]
    for folder in sorted({(out / uri).parent for uri in files}):  # a file itself is replaced
        _require_in_out(folder, out, f"{folder}: would be written into")
    written = []
    for uri, data in files.items():
        if _same_content(out / uri, data):
            continue
        write_bytes_atomic(out / uri, data)
        written.append(uri)
    for path in stale:
        _remove(path)
    listing = json.dumps(sorted(files), indent=0).encode("utf-8")
    if not _same_content(manifest, listing):
        write_bytes_atomic(manifest, listing)
    return written


MAX_MANIFEST_BYTES = 8 << 20


def _manifest_entries(manifest: Path, out: Path) -> set[str]:
    """The uris the last run wrote, each checked to name a file inside `out`. A manifest
    that cannot be read (missing, a FIFO, a link out, not a JSON list) removes nothing."""
    try:
        listed = loads_without_surrogates(read_text(manifest, root=out, limit=MAX_MANIFEST_BYTES))
    except (OSError, ValueError, RecursionError):  # kbfiles.Refused is an OSError
        return set()
    if not isinstance(listed, list):
        return set()
    for uri in listed:
        _check_entry(uri, manifest, out)
    return set(listed)


def _check_entry(uri: object, manifest: Path, out: Path) -> None:
    """A manifest entry is a relative path without `..` that stays inside `out`; else the
    manifest was edited by someone else and nothing it lists is removed."""
    shown = repr(uri) if len(repr(uri)) <= 300 else repr(uri)[:300] + "…"
    why = f"{manifest}: lists {shown}, not a file of {out}; refusing to remove it"
    if not isinstance(uri, str) or not uri or "\\" in uri or "\0" in uri:
        raise InputError(f"{why} (delete the manifest to start over)")
    parts = PurePosixPath(uri).parts
    if not parts or PurePosixPath(uri).is_absolute() or ".." in parts:
        raise InputError(f"{why} (delete the manifest to start over)")
    _require_in_out(out / uri, out, why)


def _require_in_out(path: Path, out: Path, why: str) -> None:
    """`path`, after resolving links (its own included), lies inside the output folder."""
    real = escapes(path, out)
    if real is not None:
        raise InputError(f"{why}: resolves to {real}, outside {out}")


def _remove(path: Path) -> None:
    """Remove a page the last run wrote; a folder now in its place is left alone."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            path.unlink()
    except OSError:  # gone already, or not ours to remove
        pass


def _same_content(path: Path, data: bytes) -> bool:
    """Whether `path` is a regular file holding `data`. Anything else (a FIFO that would
    block, a link, a folder) is never opened: it is replaced or refused by the write."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        with open(path, "rb") as handle:
            return handle.read(len(data) + 1) == data
    except OSError:
        return False


_DEFAULT = Generator()


def generate(
    root: Path | str,
    *,
    docs_dir: Path | str | None = None,
    edit: EditLinks | None = None,
    site_name: str | None = None,
    live: bool = False,
    prerender: bool = False,
) -> Handbook:
    """Generate with the process-wide generator, whose cache survives MkDocs rebuilds."""
    return _DEFAULT.generate(
        root, docs_dir=docs_dir, edit=edit, site_name=site_name, live=live, prerender=prerender
    )
