"""MkDocs hooks: the only code that knows MkDocs (referenced from mkdocs.yml `hooks:`).

Pages are handed to MkDocs in memory (`File.generated`), never written into docs_dir, so the
watcher cannot see its own output and there is no rebuild loop. `mkdocs serve` additionally
watches the knowledge base: facts/, runbooks/, results/, checks/ and the root's YAML files.
MkDocs re-executes this file on every rebuild; the generator's page cache lives in the
imported `factbook.handbook.generator` module, so it survives.
"""

from __future__ import annotations

import logging
import os
import traceback
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

from factbook.handbook.generator import CSS_URI, _template_dir, generate

log = logging.getLogger("mkdocs.hooks.factbook")
WATCHED_DIRS = ("facts", "runbooks", "results", "checks")


def _root(config: Any) -> Path:
    """The knowledge base: $FACTBOOK_ROOT, else the folder holding mkdocs.yml."""
    env = os.environ.get("FACTBOOK_ROOT")
    return Path(env) if env else Path(config.config_file_path).resolve().parent


def on_startup(*, command: str, dirty: bool) -> None:
    if dirty:
        log.warning(
            "factbook: --dirty rebuilds only changed pages and rewrites the search index with "
            "just those; search will miss the rest of the handbook (build without --dirty)"
        )


def on_config(config: Any) -> Any:
    if CSS_URI not in config.extra_css:
        config.extra_css.append(CSS_URI)
    return config


def on_files(files: Files, config: Any) -> Files:
    try:
        handbook = generate(_root(config), docs_dir=config.docs_dir)
    except Exception as exc:  # under `mkdocs serve`, show the error instead of a stuck page
        log.error("factbook: the handbook could not be generated: %s", exc, exc_info=True)
        text = f"# The handbook could not be generated\n\n```\n{traceback.format_exc()}```\n"
        if files.get_file_from_path("index.md") is None:
            files.append(File.generated(config, "index.md", content=text))
        return files
    for problem in handbook.lint_problems:
        log.warning("knowledge base: %s", problem)
    for uri, text in handbook.files().items():
        existing = files.get_file_from_path(uri)
        if existing is not None:
            log.warning("docs/%s is replaced by the generated page; remove it", uri)
            files.remove(existing)
        files.append(File.generated(config, uri, content=text))
    config.nav = handbook.nav
    log.info(
        "factbook: %d pages (%d rendered, %d from cache) in %.2f s",
        len(handbook.pages),
        len(handbook.rendered),
        len(handbook.pages) - len(handbook.rendered),
        handbook.seconds["total"],
    )
    return files


def on_serve(server: Any, config: Any, builder: Any) -> Any:
    root = _root(config)
    (root / "results").mkdir(exist_ok=True)  # watch it before verify-facts first writes it
    for name in WATCHED_DIRS:
        if (root / name).is_dir():
            server.watch(str(root / name))
    server.watch(str(root), recursive=False)  # milestones.yaml, targets.yaml
    templates = _template_dir()
    if templates.is_dir() and os.access(templates, os.W_OK):  # an editable install
        server.watch(str(templates))
    return server
