"""`factbook init DIR`: a knowledge base that works at once, from the files in init_template/.

What it writes: targets.yaml (`local`, commented SSH, jump and identity examples),
milestones.yaml, facts/team.yaml, facts/discovered-local.yaml (what `factbook discover
--target local` proposes for this machine, unless discover=False), a sample runbook,
mkdocs.yml with the factbook plugin, docs/about.md, .gitignore for run folders and caches,
and .github/workflows/factbook.yml running `factbook lint` and `verify-facts`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from factbook.errors import UsageError

TEMPLATE = Path(__file__).with_name("init_template")
# template file -> where it lands (dotfiles are not shipped as dotfiles in a wheel's data)
RENAMES = {"gitignore": ".gitignore", "ci/factbook.yml": ".github/workflows/factbook.yml"}


@dataclass
class Started:
    """What init wrote and what discover proposed."""

    root: Path
    written: list[str] = field(default_factory=list)
    discovered: int = 0
    notes: list[str] = field(default_factory=list)


def create_kb(dest: Path | str, *, name: str | None = None, discover: bool = True) -> Started:
    """Write a new knowledge base into `dest` (new or empty); refuse to touch a non-empty one."""
    root = Path(dest).resolve()
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise UsageError(f"{root}: exists and is not empty; factbook init writes a new folder")
    name = name or root.name
    if "\n" in name or len(name) > 100:
        raise UsageError(f"--name {name!r}: one line of at most 100 characters")
    started = Started(root)
    today = dt.date.today().isoformat()
    for src in sorted(p for p in TEMPLATE.rglob("*") if p.is_file()):
        rel = src.relative_to(TEMPLATE).as_posix()
        if "__pycache__" in rel:
            continue
        out = root / RENAMES.get(rel, rel)
        out.parent.mkdir(parents=True, exist_ok=True)
        text = src.read_text(encoding="utf-8")
        out.write_text(text.replace("@NAME@", name).replace("@DATE@", today), encoding="utf-8")
        started.written.append(out.relative_to(root).as_posix())
    (root / "results").mkdir(exist_ok=True)
    if discover:
        started.discovered, started.notes = _discover_local(root)
    return started


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
