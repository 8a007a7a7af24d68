"""Under `mkdocs serve`, render again only the pages an edit changed.

MkDocs rebuilds the whole site after any change, and MkDocs-Material embeds the navigation in
every page, so a one-fact edit pays for converting the Markdown of every page, indexing every
page for search and rendering every page's template. `--dirty` skips unchanged pages but
leaves the search index with only the rebuilt ones. This cache skips the same work and keeps
the index whole; it only ever reuses a result whose inputs are identical:

- Markdown -> HTML: keyed on the page's final Markdown, its path, the Markdown configuration
  and every file's path and URL (relative links resolve against those). A hit replaces the
  page's `render` for this build with one that restores content, table of contents, title and
  anchors (MkDocs' anchor validation reads them).
- Page -> site HTML: keyed on the page's content, metadata, title and URLs, the whole
  navigation (titles and URLs), the site configuration and any theme folder outside the
  installed packages. A hit renders a one-line template that prints the saved output, and
  replays the page's saved search entries into MkDocs-Material's index (its own indexing is
  skipped through the page's `search.exclude` for that one call). With another search plugin
  than Material's the output cache stays off (its index could not be kept whole).

One entry per page path is kept, so memory is bounded by the site's size.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

CACHED_TEMPLATE = "factbook-cached-page.html"
_MARK = "_factbook_output"


@dataclass
class _Rendered:
    key: str
    content: str
    toc: Any
    title: str | None
    anchors: set[str] | None
    links: dict[str, dict[str, str]] | None


@dataclass
class _Output:
    key: str
    html: str
    search: list[dict[str, Any]] | None


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def _nav_lines(items: Any, depth: int = 0) -> list[str]:
    lines = []
    for item in items or []:
        url = getattr(item, "url", None) or ""
        lines.append(f"{depth}|{type(item).__name__}|{item.title}|{url}")
        lines += _nav_lines(getattr(item, "children", None), depth + 1)
    return lines


def _theme_fingerprint(config: Any) -> str:
    """Files of theme folders outside the installed packages (a `custom_dir`): size + mtime."""
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}
    parts = []
    for folder in config.theme.dirs:
        real = os.path.realpath(folder)
        if any(real.startswith(p + os.sep) for p in prefixes):
            continue
        for path in sorted(Path(real).rglob("*")):
            try:
                st = path.stat()
            except OSError:
                continue
            parts.append(f"{path}|{st.st_size}|{st.st_mtime_ns}")
    return _digest(*parts)


class _MemoryBytecode(jinja2.BytecodeCache):
    """Compiled theme templates kept in memory: MkDocs makes a new Jinja environment for
    every build, which would compile every template of the theme again. Jinja checks each
    entry against its template's source, so an edited template is compiled afresh."""

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._code[bucket.key] = bucket.bytecode_to_string()


class RenderCache:
    """Results of the previous `mkdocs serve` build, reused when their inputs are unchanged."""

    def __init__(self) -> None:
        self.enabled = False
        self._markdown: dict[str, _Rendered] = {}
        self._output: dict[str, _Output] = {}
        self._site = ""  # files + Markdown configuration of this build
        self._pending: dict[str, str] = {}  # src_uri -> key of a Markdown render to keep
        self._out_keys: dict[str, str] = {}  # src_uri -> output key (misses) this build
        self._hits: set[str] = set()  # src_uris whose output is replayed this build
        self._search_before: dict[str, int] = {}
        self._search_meta: dict[str, Any] = {}
        self._search_new: dict[str, list[dict[str, Any]]] = {}  # entries made this build
        self.stats = {"markdown_hits": 0, "output_hits": 0, "pages": 0}
        self._bytecode = _MemoryBytecode()

    # -- per build ----------------------------------------------------------------------
    def begin(self, config: Any, files: Any) -> None:
        """After navigation: what every page's Markdown render depends on besides itself."""
        self._pending.clear()
        self._out_keys.clear()
        self._hits.clear()
        self._search_before.clear()
        self._search_meta.clear()
        self._search_new.clear()
        self.stats = {"markdown_hits": 0, "output_hits": 0, "pages": 0}
        if not self.enabled:
            return
        listing = sorted(f"{f.src_uri}|{f.url}|{f.dest_uri}" for f in files)
        self._site = _digest(
            repr(config["markdown_extensions"]),
            repr(sorted((config["mdx_configs"] or {}).items(), key=lambda kv: str(kv[0]))),
            str(config["use_directory_urls"]),
            str(config["site_url"]),
            *listing,
        )

    def markdown(self, markdown: str, page: Any, files: Any) -> None:
        """Before the Markdown is converted: restore the previous render when it is the same."""
        if not self.enabled:
            return
        uri = page.file.src_uri
        key = _digest(self._site, uri, markdown)
        saved = self._markdown.get(uri)
        if saved is None or saved.key != key:
            self._pending[uri] = key
            return

        def render(config: Any, files_now: Any) -> None:
            page.content = saved.content
            page.toc = saved.toc
            page._title_from_render = saved.title
            page.present_anchor_ids = set(saved.anchors) if saved.anchors is not None else None
            if saved.links is not None:
                links = {}
                for target, anchors in saved.links.items():
                    file = files_now.get_file_from_path(target)
                    if file is not None:
                        links[file] = dict(anchors)
                page.links_to_anchors = links

        page.render = render  # this Page object lives for one build only
        self.stats["markdown_hits"] += 1

    def rendered(self, page: Any) -> None:
        """Right after a real Markdown conversion: keep its result for the next build."""
        uri = page.file.src_uri
        key = self._pending.pop(uri, None)
        if key is None:
            return
        links = None
        if page.links_to_anchors is not None:
            links = {f.src_uri: dict(a) for f, a in page.links_to_anchors.items()}
        self._markdown[uri] = _Rendered(
            key,
            page.content,
            page.toc,
            page._title_from_render,
            set(page.present_anchor_ids) if page.present_anchor_ids is not None else None,
            links,
        )

    def plan_output(self, config: Any, nav: Any, files: Any, env: jinja2.Environment) -> None:
        """All pages are read: decide which pages' site HTML is the previous build's."""
        if not self.enabled:
            return
        if env.bytecode_cache is None:
            env.bytecode_cache = self._bytecode
        if not _search_supported(config):
            return
        env.loader = jinja2.ChoiceLoader(
            [jinja2.DictLoader({CACHED_TEMPLATE: "{{ page." + _MARK + " }}"}), env.loader]
        )
        site = _digest(
            self._site,
            *_nav_lines(nav.items),
            _theme_fingerprint(config),
            _config_text(config),
        )
        for file in files.documentation_pages():
            page = file.page
            if page is None:
                continue
            self.stats["pages"] += 1
            key = _digest(
                site,
                file.src_uri,
                page.content or "",
                repr(sorted(page.meta.items(), key=lambda kv: str(kv[0]))),
                str(page.title),
                str(page.canonical_url),
                str(page.edit_url),
                repr(page.toc),
                str(file.inclusion),
            )
            saved = self._output.get(file.src_uri)
            if saved is not None and saved.key == key and "template" not in page.meta:
                page.meta["template"] = CACHED_TEMPLATE
                setattr(page, _MARK, saved.html)
                self._hits.add(file.src_uri)
                self.stats["output_hits"] += 1
            else:
                self._out_keys[file.src_uri] = key

    def before_search(self, page: Any, config: Any) -> None:
        """Before the search plugin indexes a page: skip replayed pages, count the others."""
        uri = page.file.src_uri
        index = _search_index(config)
        if uri in self._hits:
            self._search_meta[uri] = page.meta.get("search")
            page.meta["search"] = {**(page.meta.get("search") or {}), "exclude": True}
        elif index is not None and uri in self._out_keys:
            self._search_before[uri] = len(index.entries)

    def after_search(self, page: Any, config: Any) -> None:
        """After it: put the saved entries back, or keep the entries it just made."""
        uri = page.file.src_uri
        index = _search_index(config)
        if uri in self._hits:
            old = self._search_meta.pop(uri, None)
            if old is None:
                page.meta.pop("search", None)
            else:
                page.meta["search"] = old
            saved = self._output[uri].search
            if index is not None and saved:
                index.entries.extend(dict(e) for e in saved)
        elif uri in self._search_before and index is not None:
            start = self._search_before.pop(uri)
            self._search_new[uri] = [dict(e) for e in index.entries[start:]]

    def page_output(self, html: str, page: Any) -> None:
        """The template's output (before other plugins' post_page): keep it."""
        uri = page.file.src_uri
        key = self._out_keys.pop(uri, None)
        if key is None:
            return
        self._output[uri] = _Output(key, html, self._search_new.pop(uri, None))


def _search_plugins(config: Any) -> list[Any]:
    return [p for p in config.plugins.values() if hasattr(p, "search_index")]


def _search_supported(config: Any) -> bool:
    """No search plugin, or only MkDocs-Material's (whose index this cache can replay)."""
    return all(
        type(p).__module__.startswith("material.plugins.search") for p in _search_plugins(config)
    )


def _search_index(config: Any) -> Any:
    for plugin in _search_plugins(config):
        index = getattr(plugin, "search_index", None)
        if index is not None and isinstance(getattr(index, "entries", None), list):
            return index
    return None


def _config_text(config: Any) -> str:
    """The configuration file's text and the values a template prints (env tags resolved)."""
    path = config.config_file_path
    try:
        text = Path(path).read_text(encoding="utf-8") if path else ""
    except OSError:
        text = ""
    keys = ("site_name", "site_url", "repo_url", "edit_uri", "copyright", "extra")
    return text + "".join(f"|{k}={config.get(k)!r}" for k in keys) + f"|{config.extra_css!r}"
