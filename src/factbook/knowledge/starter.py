"""`factbook init DIR`: a knowledge base that works at once, from the files in init_template/.

What it writes: targets.yaml (`local`, commented SSH, jump and identity examples),
milestones.yaml, facts/team.yaml, facts/discovered-local.yaml (what `factbook discover
--target local` proposes for this machine, unless discover=False), a sample runbook,
mkdocs.yml with the factbook plugin, docs/about.md, .gitignore for run folders and caches,
schema/*.schema.json (the `$schema` fact files name, for editors), and
.github/workflows/factbook.yml running `factbook lint` and `verify-facts`.

The CI installs factbook the way this copy was installed (install_source.py: a wheel or sdist
copied into vendor/, a git URL, a folder, or the index), recorded in the workflow's
FACTBOOK_INSTALL. When this machine's facts are discovered, `local` gets this machine's
hostname as its identity, and the CI's verify skips them, with the reason, on any other runner.
"""

from __future__ import annotations

import datetime as dt
import json
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

from factbook.errors import UsageError, visible
from factbook.judging.sanitize import first_hidden
from factbook.knowledge.install_source import (
    InstallSource,
    detect,
    for_ci,
    from_index,
    local_only,
)
from factbook.knowledge.names import shown

TEMPLATE = Path(__file__).with_name("init_template")
# template file -> where it lands (dotfiles are not shipped as dotfiles in a wheel's data)
RENAMES = {"gitignore": ".gitignore", "ci/factbook.yml": ".github/workflows/factbook.yml"}


@dataclass
class Started:
    """What init wrote and what discover proposed."""

    root: Path
    install: InstallSource
    written: list[str] = field(default_factory=list)
    discovered: int = 0
    notes: list[str] = field(default_factory=list)


def create_kb(
    dest: Path | str,
    *,
    name: str | None = None,
    discover: bool = True,
    install: InstallSource | None = None,
) -> Started:
    """Write a new knowledge base into `dest` (new or empty); refuse to touch a non-empty one.

    `install`: how its CI installs factbook (default: as this copy was installed)."""
    root = Path(dest).resolve()
    name = name or root.name
    if first_hidden(name) or "\n" in name or len(name) > 100:  # refused before any folder is made
        raise UsageError(
            f"--name {shown(name)!r}: one line of at most 100 characters, no control characters"
        )
    _new_folder(root)
    source, gone = install or detect(), ""
    if install is None and source.kind == "file" and not Path(source.spec).is_file():
        gone = f"note: {source.spec}, which factbook was installed from, is gone; "
        source = from_index()
    ci_source, vendored = for_ci(source, root)
    started = Started(root, ci_source)
    if gone:
        started.notes.append(
            gone + f"the CI installs {ci_source.spec} from an index; pass --install-spec "
            "(a wheel, a git URL) if no index your CI uses has it"
        )
    if vendored is not None:
        started.written.append(vendored.relative_to(root).as_posix())
    if local_only(ci_source):
        started.notes.append(
            f"note: the CI installs factbook {ci_source.how}, which only a runner on this "
            "machine reaches; pass --install-spec (a wheel, a git URL, factbook==VERSION) "
            "or edit FACTBOOK_INSTALL in .github/workflows/factbook.yml"
        )
    values = {
        # a YAML double-quoted scalar: a folder named `team: gpu`, `[x`, `*a` or `#1` gave a
        # mkdocs.yml that lint refused (or a site_name cut at the `#`)
        "@SITE_NAME@": json.dumps(f"{name} handbook", ensure_ascii=False),
        "@DATE@": dt.date.today().isoformat(),
        # inside the workflow's double quotes, escaped as JSON escapes (YAML reads them the
        # same): a source detected from a folder named `a"b` closed the string early; the
        # comment line shows it escaped, so no line break in it starts a line of YAML
        "@INSTALL@": json.dumps(ci_source.pip_arg())[1:-1],
        "@INSTALL_HOW@": visible(ci_source.how),
        "@PYTHON@": f"{sys.version_info.major}.{sys.version_info.minor}",
        "@LOCAL_IDENTITY@": _identity_block() if discover else "",
    }
    for src in sorted(p for p in TEMPLATE.rglob("*") if p.is_file()):
        rel = src.relative_to(TEMPLATE).as_posix()
        if "__pycache__" in rel:
            continue
        out = root / RENAMES.get(rel, rel)
        out.parent.mkdir(parents=True, exist_ok=True)
        text = src.read_text(encoding="utf-8")
        for key, value in values.items():
            text = text.replace(key, value)
        out.write_text(text, encoding="utf-8")
        started.written.append(out.relative_to(root).as_posix())
    started.written += _write_schemas(root)
    (root / "results").mkdir(exist_ok=True)
    if discover:
        started.discovered, notes = _discover_local(root)
        started.notes[:0] = notes
    return started


def _new_folder(root: Path) -> None:
    """`root` created (with its parents), or refused in one line: not empty, a name too long
    for the filesystem, a path thousands of folders deep (pathlib's mkdir recurses once per
    missing parent), no permission. Both ended `factbook init` in a traceback."""
    where = shown(str(root))
    try:
        if root.exists() and (not root.is_dir() or any(root.iterdir())):
            raise UsageError(f"{where}: exists and is not empty; factbook init writes a new folder")
        root.mkdir(parents=True, exist_ok=True)
    except RecursionError:
        raise UsageError(f"{where}: too many folders to create at once") from None
    except OSError as exc:
        raise UsageError(f"{where}: cannot create it ({exc.strerror or exc})") from None


def this_hostname() -> str:
    """The hostname the identity check reads (/proc/sys/kernel/hostname), else the socket's."""
    try:
        name = Path("/proc/sys/kernel/hostname").read_text(encoding="utf-8").strip()
    except OSError:
        name = ""
    return name or socket.gethostname()


def _identity_block() -> str:
    host = json.dumps(this_hostname())  # a YAML double-quoted scalar
    return (
        "    # the facts discovered by `factbook init` describe this machine: verify-facts\n"
        "    # refuses to check them elsewhere (--skip-elsewhere skips them, as the CI does).\n"
        "    # Delete `identity` to let `local` mean whatever machine factbook runs on.\n"
        f"    identity: {{hostname: {host}}}\n"
    )


def _write_schemas(root: Path) -> list[str]:
    """schema/NAME.schema.json, which the `$schema` line of fact files points at."""
    from factbook.knowledge.schema import FACT_FILE_SCHEMA, MILESTONES_SCHEMA, TARGETS_SCHEMA

    written = []
    for which, schema in (
        ("facts", FACT_FILE_SCHEMA),
        ("milestones", MILESTONES_SCHEMA),
        ("targets", TARGETS_SCHEMA),
    ):
        path = root / "schema" / f"{which}.schema.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
        written.append(path.relative_to(root).as_posix())
    return written


def _discover_local(root: Path) -> tuple[int, list[str]]:
    """Apply what discover proposes for `local`; the facts it writes carry their checks."""
    from factbook.knowledge.kb import load_kb
    from factbook.store.stamps import new_run_id
    from factbook.verification.discover import apply, discover
    from factbook.verification.engine import VerifyOptions
    from factbook.verification.targets import resolve_targets

    kb = load_kb(root, strict=False)
    targets, names = resolve_targets(kb, ["local"])
    run_id = new_run_id(names, suffix="discover")
    proposals = discover(kb, targets, names, VerifyOptions(), run_id=run_id)
    new = [p for p in proposals if p.kind == "new"]
    notes = apply(root, new, run_id) if new else []
    return len(new), notes
