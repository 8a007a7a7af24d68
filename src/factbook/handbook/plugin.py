"""The MkDocs plugin (`plugins: [factbook]`): the only code that knows MkDocs.

Registered as the `mkdocs.plugins` entry point `factbook`, so a knowledge base anywhere needs
only `pip install 'factbook[handbook]'` and its own mkdocs.yml, no path into this repository.

Pages are handed to MkDocs in memory (`File.generated`), never written into docs_dir, so the
watcher cannot see its own output and there is no rebuild loop. The user's `nav`, if any, is
kept and the handbook's sections are appended after it (sections the user already titled the
same are left to the user; "Guides" lists the docs/ pages the user's nav does not place);
without a `nav`, the handbook's navigation is used. `mkdocs serve`
additionally watches the knowledge base: facts/, runbooks/, results/, checks/ and the root's
YAML files. The generator's page cache lives in the imported generator module, so a rebuild
renders only pages whose inputs changed.

    plugins:
      - search
      - factbook:
          root: .          # the knowledge base, relative to mkdocs.yml (default: its folder)
          offline: true    # search and links work from file:// too (the default)
          edit_url: https://github.com/ORG/REPO/blob/main/{path}#L{line}   # optional

Each fact links to its YAML line through `edit_url`, else through MkDocs' `repo_url` +
`edit_uri`, else shows `facts/x.yaml:12` as text (editlinks.py). Status documents' emoji
marks are shown as worded pills (marks.py): a reader's machine may have no emoji font.
"""

from __future__ import annotations

import logging
import os
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mkdocs.config import config_options
from mkdocs.config.base import Config
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, CombinedEvent, event_priority
from mkdocs.structure.files import File, Files, InclusionLevel

from factbook.errors import FactbookError, UsageError, visible
from factbook.handbook import prerender
from factbook.handbook.editlinks import EditLinks, check_template, from_repo
from factbook.handbook.generator import CSS_URI, generate, template_dir
from factbook.handbook.marks import status_marks
from factbook.handbook.rebuild import RenderCache
from factbook.handbook.safehtml import plain_title
from factbook.handbook.sources import STATUS_DIR
from factbook.handbook.watch import KBWatcher, server_notifier
from factbook.knowledge.locate import FACTS_DIR, ROOT_ENV
from factbook.knowledge.mkdocscode import code_in, trusted
from factbook.knowledge.names import NOT_UTF8, undecodable

log = logging.getLogger("mkdocs.plugins.factbook")


class _Visible(logging.Filter):
    """Each line this plugin logs, with control, line-break, bidi and invisible characters
    escaped (errors.visible): a message names files of the knowledge base (`docs/%s is
    replaced`, a link out), and a name holding a newline and `::error` was a workflow command
    in `mkdocs build`'s CI log, as it was in `factbook docs`' warnings (round 21)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = visible(record.getMessage()), None
        return True


log.addFilter(_Visible())
WATCHED_DIRS = ("facts", "runbooks", "results", "checks")


WORKER_URI = "assets/factbook-file-worker.js"


class FactbookConfig(Config):
    root = config_options.Optional(config_options.Type(str))
    # search and links from file:// (site/index.html opened from disk), with no request to
    # the internet (Material's own `offline` plugin loads a polyfill from unpkg.com)
    offline = config_options.Type(bool, default=True)
    # where a fact's YAML line opens: a URL with {path} (relative to the knowledge base) and
    # {line}; unset: derived from repo_url + edit_uri; "": file:line as text, no link
    edit_url = config_options.Optional(config_options.Type(str))


def merge_nav(user: list[Any] | None, generated: list[Any]) -> list[Any]:
    """The user's nav, then each generated section whose title the user has not used.

    Generated "Guides" keeps only the docs/ pages the user's nav does not place, so a nav
    that names a few pages first (a getting-started page) loses none of the others.
    """
    if not user:
        return generated

    def title(item: Any) -> str | None:
        return next(iter(item)) if isinstance(item, dict) and len(item) == 1 else None

    def pages(item: Any) -> Iterator[str]:
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for value in item.values():
                yield from pages(value)
        elif isinstance(item, list):
            for value in item:
                yield from pages(value)

    taken = {title(item) for item in user}
    placed = set(pages(user))
    extra = []
    for item in generated:
        if title(item) in taken:
            continue
        if title(item) == "Guides":
            rest = [p for p in item["Guides"] if p not in placed]
            if rest:
                extra.append({"Guides": rest})
            continue
        extra.append(item)
    return [*user, *extra]


class FactbookPlugin(BasePlugin[FactbookConfig]):
    """Generate the handbook's pages from the knowledge base on every build."""

    def __init__(self) -> None:
        self._user_nav: list[Any] | None = None
        self._edit: EditLinks | None = None
        self._nav: Any = None
        self._fragments: dict[str, list[str]] = {}  # uri -> HTML parts (prerender.py)
        self._watcher: KBWatcher | None = None
        # the plugin has on_startup, so MkDocs keeps this instance across serve's rebuilds
        self._cache = RenderCache()

    def load_config(
        self, options: dict[str, Any], config_file_path: str | None = None
    ) -> tuple[Any, Any]:
        """MkDocs sets plugins up before it imports `hooks:` or renders a theme's templates:
        a mkdocs.yml that would run the knowledge base's code stops the build here
        (knowledge/mkdocscode.py), unless whoever builds trusts it."""
        loaded = super().load_config(options, config_file_path)
        if config_file_path:  # trusted code may run; an alias bomb or a link loop never
            path = Path(config_file_path)
            folder = path.resolve().parent
            also = _named_kb(folder, options)
            problems = code_in(path, path.name, root=folder, also=also, hazards_only=trusted())
            if problems:
                raise PluginError("factbook: " + "\n".join(str(p) for p in problems))
        return loaded

    def kb_root(self, config: Any) -> Path:
        """$FACTBOOK_ROOT, else the plugin's `root` (relative to mkdocs.yml), else its folder."""
        env = os.environ.get(ROOT_ENV)
        if env:
            return Path(env)
        base = Path(config.config_file_path).resolve().parent
        return (base / self.config.root).resolve() if self.config.root else base

    def roots(self, config: Any) -> tuple[str, ...]:
        """The folders a published file may really lie in: the knowledge base and the folder
        of mkdocs.yml; a docs_dir outside them too once whoever builds trusts the config."""
        folders = [self.kb_root(config), Path(config.config_file_path).parent]
        if trusted():
            folders.append(Path(config.docs_dir))
        return tuple(os.path.realpath(folder) for folder in folders)

    def on_startup(self, *, command: str, dirty: bool) -> None:
        self._cache.enabled = command == "serve" and not dirty
        if dirty:
            log.warning(
                "factbook: --dirty rebuilds only changed pages and rewrites the search index "
                "with just those; search will miss the rest of the handbook (build without "
                "--dirty)"
            )

    def on_config(self, config: Any) -> Any:
        if CSS_URI not in config.extra_css:
            config.extra_css.append(CSS_URI)
        if self.config.offline:
            config.use_directory_urls = False  # links to page.html, not to folders
            polyfills = config.extra.get("polyfills") or []
            if WORKER_URI not in polyfills:
                config.extra["polyfills"] = [*polyfills, WORKER_URI]
        _root_snippets(config, self.roots(config))
        # on_config runs once per (re)build with a fresh config: this is the user's own nav
        self._user_nav = config.nav
        self._edit = self.edit_links(config)
        return config

    def edit_links(self, config: Any) -> EditLinks | None:
        """The plugin's edit_url (checked), else what repo_url + edit_uri imply, else None."""
        template = self.config.edit_url
        if template is not None:
            if not template.strip():
                return None
            try:
                return check_template(template.strip())
            except UsageError as exc:
                raise PluginError(f"factbook: {exc}") from None
        return from_repo(
            config.repo_url,
            config.edit_uri,
            docs_dir=Path(config.docs_dir),
            kb_root=self.kb_root(config),
        )

    def on_files(self, files: Files, *, config: Any) -> Files:
        _drop_outside(files, config.docs_dir, self.roots(config))
        try:
            handbook = generate(
                self.kb_root(config),
                docs_dir=config.docs_dir,
                edit=self._edit,
                site_name=config.site_name or "",
                live=self._cache.enabled,
                prerender=True,
            )
        except Exception as exc:  # under `mkdocs serve`, show the error, not a stuck page
            said = isinstance(exc, FactbookError)  # the user's to fix: its line says it all
            log.error("factbook: the handbook could not be generated: %s", exc, exc_info=not said)
            shown = f"{exc}\n" if said else traceback.format_exc()
            text = f"# The handbook could not be generated\n\n```\n{shown}```\n"
            if files.get_file_from_path("index.md") is None:
                files.append(File.generated(config, "index.md", content=text))
            return files
        self._fragments = handbook.fragments
        for problem in handbook.lint_problems:
            log.warning("knowledge base: %s", problem)
        for uri, text in handbook.files().items():
            existing = files.get_file_from_path(uri)
            if existing is not None:
                log.warning("docs/%s is replaced by the generated page; remove it", uri)
                files.remove(existing)
            files.append(File.generated(config, uri, content=text))
        listing = files.get_file_from_path(f"{STATUS_DIR}/index.md")
        if listing is not None and listing.inclusion.is_in_nav():
            # `factbook status` keeps this list for readers of docs/ on disk; the handbook's
            # "Status documents" section lists the same documents, so it is not in the nav
            listing.inclusion = InclusionLevel.NOT_IN_NAV
        if self.config.offline:
            worker = (template_dir() / "file-worker.js").read_text(encoding="utf-8")
            files.append(File.generated(config, WORKER_URI, content=worker))
        config.nav = merge_nav(self._user_nav, handbook.nav)
        log.info(
            "factbook: %d pages (%d rendered, %d from cache) in %.2f s",
            len(handbook.pages),
            len(handbook.rendered),
            len(handbook.pages) - len(handbook.rendered),
            handbook.seconds["total"],
        )
        return files

    @event_priority(-100)  # after other plugins: the cache needs the Markdown as converted
    def on_nav(self, nav: Any, *, config: Any, files: Any) -> Any:
        self._nav = nav
        self._cache.begin(config, files)
        return nav

    @event_priority(-100)
    def on_page_markdown(self, markdown: str, *, page: Any, config: Any, files: Any) -> str:
        """Status documents' ✅ ⚠️ ❌ ◻ become worded pills: no emoji font needed. Under
        `mkdocs serve`, unchanged Markdown reuses the previous build's HTML (rebuild.py)."""
        if page.file.src_uri.startswith(STATUS_DIR + "/"):
            markdown = status_marks(markdown)
        self._cache.markdown(markdown, page, files)
        return markdown

    @event_priority(100)  # right after the conversion, before other plugins change the HTML
    def on_page_content(self, html: str, *, page: Any, config: Any, files: Any) -> str:
        """Every page's title as plain text (safehtml.plain_title): titles come from runbook
        and fact text, and themes print them in `<title>` and the navigation. Runs after each
        page is rendered and before any template is, so the navigation sees them too."""
        self._cache.rendered(page)
        if page.title:
            page.meta["title"] = plain_title(page.title)
        fragments = self._fragments.get(page.file.src_uri)
        if fragments:  # a generated page (a docs/ file of that name was replaced)
            html = prerender.fill(html, fragments, page.file.src_uri, _url_from(page, files))
        return html

    @event_priority(-100)  # every page is read; the navigation is final
    def on_env(self, env: Any, *, config: Any, files: Any) -> Any:
        if self._nav is not None:
            self._cache.plan_output(config, self._nav, files, env)
        return env

    @event_priority(100)
    def _before_search(self, context: Any, *, page: Any, config: Any, nav: Any) -> Any:
        self._cache.before_search(page, config)
        return context

    @event_priority(-100)
    def _after_search(self, context: Any, *, page: Any, config: Any, nav: Any) -> Any:
        self._cache.after_search(page, config)
        return context

    on_page_context = CombinedEvent(_before_search, _after_search)

    @event_priority(100)  # the theme's output, before other plugins' post_page change it
    def on_post_page(self, output: str, *, page: Any, config: Any) -> str:
        self._cache.page_output(output, page)
        return output

    @event_priority(-100)  # after the search plugin has written the index
    def on_post_build(self, *, config: Any) -> None:
        """search/search_index.js: the index as a script, which Material loads on file://
        (a fetch of the .json is refused there)."""
        stats = self._cache.stats
        if self._cache.enabled:
            log.info(
                "factbook: %d of %d pages reused from the previous build (%d Markdown)",
                stats["output_hits"],
                stats["pages"],
                stats["markdown_hits"],
            )
        if not self.config.offline:
            return
        index = Path(config.site_dir) / "search" / "search_index.json"
        if index.is_file():
            text = index.read_text(encoding="utf-8")
            (index.parent / "search_index.js").write_text(f"var __index = {text}\n", "utf-8")

    def on_serve(self, server: Any, *, config: Any, builder: Any) -> Any:
        """Watch the knowledge base: an edit is noticed as it is saved (watch.py), else
        by MkDocs' own polling."""
        root = self.kb_root(config)
        (root / "results").mkdir(exist_ok=True)  # watch it before verify-facts first writes it
        folders = [(str(root / name), True) for name in WATCHED_DIRS if (root / name).is_dir()]
        folders.append((str(root), False))  # milestones.yaml, targets.yaml
        templates = template_dir()
        if templates.is_dir() and os.access(templates, os.W_OK):  # an editable install
            folders.append((str(templates), True))
        notify = server_notifier(server)
        if notify is None:
            for path, recursive in folders:
                server.watch(path, recursive=recursive)
            return server
        self._watcher = KBWatcher(notify)
        for path, recursive in folders:
            self._watcher.watch(path, recursive=recursive)
        self._watcher.start()
        how = "as saved, and by polling" if self._watcher.native else "by polling"
        log.info("factbook: watching %s %s", ", ".join(p for p, _ in folders), how)
        return server

    def on_shutdown(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None


def _named_kb(folder: Path, options: dict[str, Any]) -> tuple[Path, ...]:
    """The knowledge base `$FACTBOOK_ROOT` or the plugin's `root:` names outside the folder of
    mkdocs.yml (a config of whoever builds, kept apart): its paths may lead there. Only a real
    knowledge base (a facts/ folder) counts: `root: ~/.ssh` widens nothing."""
    named = os.environ.get(ROOT_ENV) or options.get("root")
    if not isinstance(named, str) or not named:
        return ()
    kb = Path(os.path.realpath(folder / named))
    facts = kb / FACTS_DIR
    return (kb,) if facts.is_dir() and not facts.is_symlink() else ()


def _outside(path: str, roots: tuple[str, ...]) -> str | None:
    """Where `path` really lies when that is in none of `roots`."""
    real = os.path.realpath(path)
    inside = any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)
    return None if inside else real


def _drop_outside(files: Files, docs_dir: str, roots: tuple[str, ...]) -> None:
    """docs/ files that are links out of the knowledge base (`leak.txt -> /etc/shadow`) are
    not published: MkDocs copies whatever a link leads to. Nor are those whose name is not
    UTF-8. Theme files are left alone."""
    docs = os.path.realpath(docs_dir)
    for file in list(files):
        if file.abs_src_path is None or file.src_dir is None:
            continue
        if os.path.realpath(file.src_dir) != docs:
            continue
        if undecodable(file.src_uri):  # MkDocs' own URL quoting raised on it
            log.warning("factbook: %s: %s; not published", file.src_uri, NOT_UTF8)
            files.remove(file)
            continue
        real = _outside(file.abs_src_path, roots)
        if real is not None:
            log.warning(
                "factbook: %s resolves to %s, outside the knowledge base; not published",
                file.src_uri,
                real,
            )
            files.remove(file)


def _root_snippets(config: Any, roots: tuple[str, ...]) -> None:
    """pymdownx.snippets keeps a snippet under its base path by name only: a link in the
    knowledge base to /etc/shadow passes. Swap in one that refuses what resolves outside."""
    extensions = config.markdown_extensions
    for index, name in enumerate(extensions):
        if isinstance(name, str) and name.partition(":")[0] == "pymdownx.snippets":
            options = config.mdx_configs.pop(name, None) or {}
            extensions[index] = _rooted_snippets(roots, options)


def _rooted_snippets(roots: tuple[str, ...], options: dict[str, Any]) -> Any:
    """A SnippetExtension whose snippet paths must resolve inside `roots`."""
    from pymdownx.snippets import SnippetExtension

    class RootedSnippets(SnippetExtension):
        def extendMarkdown(self, md: Any) -> None:
            super().extendMarkdown(md)
            processor = md.preprocessors["snippet"]
            find = processor.get_snippet_path

            def inside(path: str) -> str | None:
                found = find(path)
                real = _outside(found, roots) if found else None
                if real is not None:
                    log.warning(
                        "factbook: snippet %s resolves to %s, outside the knowledge base; "
                        "not included",
                        path,
                        real,
                    )
                    return None
                return found

            processor.get_snippet_path = inside

    return RootedSnippets(**options)


def _url_from(page: Any, files: Any) -> Any:
    """uri -> the URL of that page relative to `page`, as MkDocs writes a Markdown link."""

    def url_of(uri: str) -> str | None:
        target = files.get_file_from_path(uri)
        return target.url_relative_to(page.file) if target is not None else None

    return url_of
