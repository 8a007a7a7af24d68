"""One registry declares every category: schema, handbook and status all follow it."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

from factbook.handbook import special
from factbook.knowledge import categories, schema

SRC = Path(__file__).resolve().parent.parent / "src"


def test_schema_is_derived_from_the_registry() -> None:
    props = schema.FACT_SCHEMA["properties"]
    assert props["category"]["enum"] == [c.name for c in categories.CATEGORIES]
    for category in categories.CATEGORIES:
        for key, sub in category.keys.items():
            assert props[key] == sub
            assert key in schema.CATEGORY_KEYS[category.name]
        assert schema.CATEGORY_REQUIRED.get(category.name, set()) == set(category.required)
        assert set(category.required) <= set(category.keys), category.name


def test_every_view_resolves_and_no_view_is_orphaned() -> None:
    named = {c.view for c in categories.CATEGORIES if c.view}
    for category in categories.CATEGORIES:
        if category.view:
            assert len(inspect.signature(special.view(category)).parameters) == 5
    renderers = {
        name
        for name, func in vars(special).items()
        if inspect.isfunction(func)
        and func.__module__ == special.__name__
        and list(inspect.signature(func).parameters)[:2] == ["kb", "views"]
    }
    assert renderers == named


def test_status_groups_have_distinct_keys_and_places() -> None:
    groups = [g for c in categories.CATEGORIES for g in c.status_groups]
    assert len({g.key for g in groups}) == len(groups)
    assert len({g.order for g in groups}) == len(groups)


NEW_CATEGORY = """
import sys
from pathlib import Path
from factbook.knowledge import categories as cats
new = cats.Category(
    "experiments", "Experiments", "Things tried once, and what came of them.",
    keys={"hypothesis": {"type": "string"}}, required=("hypothesis",),
    status_groups=(cats.StatusGroup(90, "experiments", "Experiments tried"),),
)
cats.CATEGORIES = (*cats.CATEGORIES, new)
cats.BY_NAME[new.name] = new
cats.NAMES.append(new.name)
from factbook.commands.cli import run
root = Path(sys.argv[1])
sys.exit(run(["--root", str(root), sys.argv[2], *sys.argv[3:]]))
"""

FACTS = """\
facts:
  - id: exp.fp8
    category: experiments
    title: FP8 KV cache
    statement: FP8 KV cache was tried on the draft.
    hypothesis: it saves memory without losing accept length
    status: assumed
    sources: [{seed: a.txt}]
  - id: hw.gpu.count
    category: hardware
    title: GPU count
    statement: The box has 8 GPUs.
    hypothesis: eight
    status: assumed
    sources: [{seed: a.txt}]
"""


def _run_with_new_category(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", NEW_CATEGORY, str(root), *args],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )


def test_one_registry_entry_is_a_whole_new_category(tmp_path: Path) -> None:
    """Schema, lint, handbook page, navigation and status document pick up one new entry."""
    root = tmp_path / "kb"
    (root / "facts").mkdir(parents=True)
    (root / "facts" / "x.yaml").write_text(FACTS)
    lint = _run_with_new_category(root, "lint")
    assert lint.returncode != 0
    assert "key 'hypothesis' is only for category experiments" in lint.stdout + lint.stderr
    (root / "facts" / "x.yaml").write_text(FACTS.split("  - id: hw.gpu.count")[0])
    assert _run_with_new_category(root, "lint").returncode == 0
    out = tmp_path / "site"
    docs = _run_with_new_category(root, "docs", "--out", str(out), "--no-copy")
    assert docs.returncode == 0, docs.stderr
    page = (out / "facts" / "experiments.md").read_text()
    assert "Things tried once, and what came of them." in page and "FP8 KV cache" in page
    assert "Experiments" in (out / "index.md").read_text()
    status = _run_with_new_category(root, "status", "--out", "-")
    assert status.returncode == 0, status.stderr
    section = status.stdout.split("Experiments tried", 1)[1]
    assert "FP8 KV cache" in section.split("\n#", 1)[0]
