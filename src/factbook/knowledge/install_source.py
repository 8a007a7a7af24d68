"""Where this copy of factbook was installed from, so what we tell a team to install works.

`pip install factbook` only works where a package index has factbook; most teams install it
from a clone, a wheel or a git URL. The installed distribution says which in its PEP 610
`direct_url.json`:

    {"url": "file:///src/factbook", "dir_info": {"editable": true}}      -> a folder (editable)
    {"url": "file:///dl/factbook-0.1.0-py3-none-any.whl", "archive_info": {...}} -> that file
    {"url": "https://host/factbook-0.1.0.tar.gz", "archive_info": {...}}  -> that URL
    {"url": "https://github.com/org/factbook", "vcs_info": {"vcs": "git", "commit_id": ...}}
    (no direct_url.json)                                                 -> an index: ==VERSION

`factbook init` writes it into the generated CI (a local wheel or sdist is copied into the
knowledge base, so a CI runner's checkout has it) and the missing-extra hint names it.
`--install-spec` chooses another: a requirement (`factbook==0.1.0`), a URL or a path.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

from factbook.errors import UsageError, visible

DIST = "factbook"
ARCHIVE_SUFFIXES = (".whl", ".tar.gz", ".zip", ".tar.bz2", ".tgz")
VENDOR_DIR = "vendor"  # where init copies a local wheel or sdist inside the knowledge base


@dataclass(frozen=True)
class InstallSource:
    """One way to install factbook: kind (path, editable, file, url, vcs, index), the pip
    argument without extras (`spec`), and `how` in words for comments and messages."""

    kind: str
    spec: str
    how: str

    def pip_arg(self) -> str:
        """One `pip install` argument, unquoted (CI files quote it): no editable install."""
        if self.kind in ("vcs", "url"):
            return f"{DIST} @ {self.spec}"
        return self.spec

    def requirement(self, extras: tuple[str, ...] = ()) -> str:
        """The pip arguments installing factbook (with `extras`), quoted for a shell."""
        tail = f"[{','.join(extras)}]" if extras else ""
        if self.kind == "index":
            name, sep, version = self.spec.partition("==")
            return f"'{name}{tail}{sep}{version}'"
        if self.kind in ("vcs", "url"):
            return f"'{DIST}{tail} @ {self.spec}'"
        if self.kind == "editable":
            return f"-e '{self.spec}{tail}'"
        if self.kind == "requirement":  # as the user wrote it; extras only for a bare name
            if extras and re.fullmatch(r"factbook\s*([=<>!~].*)?", self.spec):
                rest = self.spec[len(DIST) :].strip()
                return f"'{DIST}{tail}{rest}'"
            return f"'{self.spec}'"
        return f"'{self.spec}{tail}'"  # a folder or an archive file: PATH[extra]


def from_index() -> InstallSource:
    """This version of factbook from a package index (pip's configuration says which)."""
    return InstallSource("index", f"{DIST}=={_version()}", "from a package index")


def _version() -> str:
    try:
        return metadata.version(DIST)
    except metadata.PackageNotFoundError:  # run from a source tree on PYTHONPATH
        from factbook.store.stamps import FACTBOOK_VERSION

        return FACTBOOK_VERSION


def detect() -> InstallSource:
    """How the factbook distribution importable here was installed (PEP 610)."""
    try:
        dist = metadata.distribution(DIST)
        raw = dist.read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        raw = None
    if not raw:
        return from_index()
    try:
        info = json.loads(raw)
        url = str(info["url"])
    except (ValueError, KeyError, TypeError):
        return from_index()
    return from_direct_url(info, url)


def from_direct_url(info: dict, url: str) -> InstallSource:
    """The source a PEP 610 record describes."""
    vcs = info.get("vcs_info")
    if isinstance(vcs, dict):
        rev = vcs.get("commit_id") or vcs.get("requested_revision")
        spec = f"{vcs.get('vcs', 'git')}+{url}" + (f"@{rev}" if rev else "")
        return InstallSource("vcs", spec, f"from {url} at {rev or 'its default branch'}")
    parts = urlsplit(url)
    if parts.scheme == "file":
        path = unquote(parts.path)
        if isinstance(info.get("dir_info"), dict):
            if info["dir_info"].get("editable"):
                return InstallSource("editable", path, f"editable from the folder {path}")
            return InstallSource("path", path, f"from the folder {path}")
        return InstallSource("file", path, f"from the file {path}")
    archive = info.get("archive_info") or {}
    digest = archive.get("hash") or ""
    spec = f"{url}#{digest}" if digest and "#" not in url else url
    return InstallSource("url", spec, f"from {url}")


def parse_spec(text: str) -> InstallSource:
    """`--install-spec`: a local wheel/sdist or folder, a URL (git+... for a repository), or a
    requirement for a package index (`factbook==0.1.0`)."""
    text = text.strip()
    # the spec is written into the CI workflow's YAML, where a carriage return or U+2028
    # also ends a line (a key of the spec's choosing after it), a control character makes
    # the file unreadable, and GitHub Actions evaluates `${{ ... }}` in an env value
    if not text or visible(text) != text or any(q in text for q in "'\"") or "${{" in text:
        raise UsageError(
            f"--install-spec {visible(text)}: one pip requirement, URL or path: no quotes, "
            "control or line-break characters, or ${{ }}"
        )
    if re.match(r"^(git|hg|svn|bzr)\+", text):
        return InstallSource("vcs", text, f"from {text}")
    if re.match(r"^https?://", text):
        return InstallSource("url", text, f"from {text}")
    if text.startswith(DIST) and not Path(text).exists():
        return InstallSource("requirement", text, f"as {text} from a package index")
    path = Path(text).expanduser()
    if not path.exists():
        raise UsageError(
            f"--install-spec {text}: no such file or folder (a wheel, an sdist, a folder "
            "with pyproject.toml, a URL, or a requirement such as factbook==0.1.0)"
        )
    path = path.resolve()
    if path.is_dir():
        return InstallSource("path", str(path), f"from the folder {path}")
    if not path.name.endswith(ARCHIVE_SUFFIXES):
        kinds = ", ".join(ARCHIVE_SUFFIXES)
        raise UsageError(f"--install-spec {text}: not a wheel or sdist ({kinds})")
    return InstallSource("file", str(path), f"from the file {path}")


def for_ci(source: InstallSource, root: Path) -> tuple[InstallSource, Path | None]:
    """What the knowledge base's CI installs: a local archive is copied under vendor/ (the
    runner's checkout has it); anything else as it is. Returns the source and the copy."""
    if source.kind != "file":
        return source, None
    src = Path(source.spec)
    if not src.is_file():
        raise UsageError(
            f"{src}: the archive factbook was installed from is gone; pass --install-spec"
        )
    dest = root / VENDOR_DIR / src.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(src.read_bytes())
    rel = f"./{VENDOR_DIR}/{src.name}"
    return InstallSource("file", rel, f"from {rel}, a copy of {src}"), dest


def local_only(source: InstallSource) -> bool:
    """A folder on this machine: a hosted CI runner cannot reach it."""
    return source.kind in ("path", "editable")


def hint(extra: str) -> str:
    """`pip install ...` for a missing extra, from where this copy came."""
    return f"pip install {detect().requirement((extra,))}"
