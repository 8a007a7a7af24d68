"""Where a reader edits a fact: a link to its YAML file and line, or the file:line as text.

The link is built from a template with `{path}` (the fact file, relative to the knowledge
base: `facts/hardware.yaml`) and `{line}`. The template is the plugin's `edit_url` option, or
is derived from MkDocs' own `repo_url` + `edit_uri` (which point at docs_dir in the
repository): the knowledge base's place relative to docs_dir gives its place in the
repository, and GitHub and GitLab `edit/` URLs become `blob/` ones, where `#L12` opens the
file at the fact's line. Without either, the page shows `facts/hardware.yaml:12` as text: no
remote URL is invented, and a file:// link would not open from a served handbook.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

from factbook.errors import UsageError
from factbook.handbook.markup import attr, code
from factbook.handbook.safehtml import is_safe_url


@dataclass(frozen=True)
class EditLinks:
    """A URL template with `{path}` and `{line}` (and nothing else in braces)."""

    template: str

    def url(self, path: str, line: int) -> str:
        return self.template.replace("{path}", quote(path)).replace("{line}", str(int(line)))

    def link(self, path: str, line: int) -> str:
        """Markdown: `facts/x.yaml:12` linked to the line."""
        label = f"{path}:{line}"
        href = attr(self.url(path, line))
        return f'<a class="fb-edit" href="{href}">{code(label)}</a>'


def check_template(template: str, *, name: str = "edit_url") -> EditLinks:
    """An edit URL option (`name` as the user wrote it), refused with what is wrong with it."""
    if "{path}" not in template:
        raise UsageError(
            f"{name} {template!r} has no {{path}}: write where a fact file opens, e.g. "
            "https://github.com/ORG/REPO/blob/main/{path}#L{line}"
        )
    stray = set(re.findall(r"\{[^}]*\}", template)) - {"{path}", "{line}"}
    if stray:
        raise UsageError(
            f"{name} {template!r}: unknown placeholder(s) {', '.join(sorted(stray))} "
            "(known: {path}, {line})"
        )
    probe = template.replace("{path}", "x").replace("{line}", "1")
    if not urlsplit(probe).scheme or not is_safe_url(probe) or re.search(r"[\s\"'<>]", probe):
        raise UsageError(f"{name} {template!r} must be an http(s) URL without spaces or quotes")
    return EditLinks(template)


def from_repo(
    repo_url: str | None, edit_uri: str | None, *, docs_dir: Path, kb_root: Path
) -> EditLinks | None:
    """The template MkDocs' repo_url + edit_uri imply for files of the knowledge base.

    None when either is unset or the knowledge base lies outside what edit_uri reaches.
    """
    if not repo_url or not edit_uri:
        return None
    base = urljoin(repo_url.rstrip("/") + "/", edit_uri)
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https"):
        return None
    up = Path(os.path.relpath(kb_root, docs_dir)).as_posix()
    docs_path = parts.path if parts.path.endswith("/") else parts.path + "/"
    path = posixpath.normpath(posixpath.join(docs_path, up)) + "/"
    repo_path = urlsplit(repo_url).path.rstrip("/") + "/"
    if not path.startswith(repo_path) or path == repo_path:
        return None  # climbed out of the repository: better no link than a wrong one
    for edit, blob in (("/-/edit/", "/-/blob/"), ("/edit/", "/blob/")):  # GitLab, GitHub
        if path.startswith(repo_path.rstrip("/") + edit):
            path = path.replace(edit, blob, 1)
            break
    template = urlunsplit((parts.scheme, parts.netloc, path, "", "")) + "{path}#L{line}"
    try:
        return check_template(template)
    except UsageError:  # a repo_url with quotes or spaces: no link rather than a broken one
        return None


def location_text(path: str, line: int, links: EditLinks | None) -> str:
    """The fact's file:line, linked where an edit URL is configured."""
    return links.link(path, line) if links is not None else code(f"{path}:{line}")
