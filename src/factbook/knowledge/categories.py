"""Every fact category, declared once: title, intro, extra keys, view and status groups.

The schema (which keys a category may and must carry), the handbook (page title, intro and
the view above the fact list) and the status document (which Discoveries groups a category
feeds) all read this list, so a new category is one entry here plus, when it wants one, a
view function in `handbook/special.py`. This module imports nothing of factbook's: the
schema, the loader and the handbook all sit above it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_STR: dict[str, Any] = {"type": "string"}
PROGRESS_STATES = ["done", "in_progress", "todo", "failed", "blocked"]
INVENTORY_KINDS = ["file", "dir", "log", "service", "checkpoint", "script", "doc", "data"]


@dataclass(frozen=True)
class StatusGroup:
    """A Discoveries group of the status document fed by a category's facts.

    `tag` selects facts carrying it (`has_tag=False`: facts without it); `order` places the
    group among every category's groups (the seeds list hardware first, decisions last).
    """

    order: int
    key: str
    title: str
    tag: str | None = None
    has_tag: bool = True


@dataclass(frozen=True)
class Category:
    """One category. `keys` are the extra fact keys only this category may use (JSON Schema
    of each); `view` names the function in handbook/special.py drawn above the fact list."""

    name: str
    title: str
    intro: str
    keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    view: str | None = None
    status_groups: tuple[StatusGroup, ...] = ()


_METRIC = {"metric": _STR, "config": {"type": "object"}}

CATEGORIES: tuple[Category, ...] = (
    Category("goal", "Goal", "What the project is for, and the sub-goals it breaks into."),
    Category("instructions", "Instructions", "Operating rules, access and the user's constraints."),
    Category(
        "hardware",
        "Hardware",
        "The box: GPUs, CPUs, memory, disks and how the GPUs are connected.",
        view="hardware",
        status_groups=(StatusGroup(10, "hardware", "Hardware"),),
    ),
    Category(
        "software",
        "Software",
        "Installed versions (expected against last observed) and engine behaviour.",
        view="software",
        status_groups=(
            StatusGroup(20, "software", "Software on the box", "version"),
            StatusGroup(70, "engine", "Engine notes", "version", has_tag=False),
        ),
    ),
    Category(
        "model",
        "Model",
        "Architecture of the target model and the draft model.",
        status_groups=(
            StatusGroup(30, "model", "Model architecture", "draft", has_tag=False),
            StatusGroup(40, "draft", "Draft model architecture", "draft"),
        ),
    ),
    Category(
        "tokenizer",
        "Tokenizer",
        "Token ids and tokenizer behaviour.",
        keys={"token": _STR, "token_id": {"type": "integer"}},
        view="tokenizer",
        status_groups=(StatusGroup(50, "tokenizer", "Tokenizer"),),
    ),
    Category(
        "inventory",
        "Inventory",
        "Files, directories, logs, services and checkpoints, and where they live.",
        keys={
            "path": _STR,
            "kind": {"type": "string", "enum": INVENTORY_KINDS},
            "machine": _STR,
            "purpose": _STR,
            "size": {"type": ["string", "number"]},
        },
        view="inventory",
    ),
    Category(
        "pitfalls",
        "Pitfalls",
        "Traps that cost time: symptom, cause, fix, and the check that catches them.",
        keys={"symptom": _STR, "cause": _STR, "fix": _STR},
        required=("symptom", "cause", "fix"),
        view="pitfalls",
    ),
    Category(
        "benchmarks",
        "Benchmarks",
        "Measured figures with the configuration that produced them.",
        keys={**_METRIC, "accept_len": {"type": ["number", "null"]}},
        view="benchmarks",
        status_groups=(StatusGroup(60, "baselines", "Performance baselines", "baseline"),),
    ),
    Category(
        "training",
        "Training",
        "Training runs and their metrics.",
        keys={**_METRIC, "epoch": {"type": "integer"}},
        view="training",
    ),
    Category(
        "decisions",
        "Decisions",
        "Choices made, why, and the facts behind them.",
        keys={"rationale": _STR},
        required=("rationale",),
        view="decisions",
        status_groups=(StatusGroup(80, "decisions", "Decisions and working assumptions"),),
    ),
    Category(
        "progress",
        "Progress",
        "What is done, what is in progress, what comes next.",
        keys={
            "state": {"type": "string", "enum": PROGRESS_STATES},
            "priority": {"type": "integer", "minimum": 1},
            "criterion": _STR,
        },
        required=("state",),
        view="progress",
    ),
)

BY_NAME: dict[str, Category] = {c.name: c for c in CATEGORIES}
NAMES: list[str] = [c.name for c in CATEGORIES]


def category_key_schemas() -> dict[str, dict[str, Any]]:
    """Every category-specific key with its schema, in declaration order; a key two categories
    share (benchmarks' and training's `metric`) must have one schema."""
    out: dict[str, dict[str, Any]] = {}
    for category in CATEGORIES:
        for key, sub in category.keys.items():
            if out.setdefault(key, sub) != sub:
                raise AssertionError(f"category key '{key}' declared with two schemas")
    return out
