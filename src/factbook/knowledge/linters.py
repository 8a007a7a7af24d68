"""Every linter `factbook lint` runs, listed here explicitly (no registration by import).

Each takes the loaded knowledge base and returns its problems; the loader's own problems
(facts, milestones, targets, checks/) come first. Add a linter by adding it to LINTERS.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from factbook.errors import Problem
from factbook.knowledge.kb import KnowledgeBase, load_kb_with_problems
from factbook.knowledge.mkdocscode import lint_mkdocs_config
from factbook.runbooks.lint import lint_runbooks

Linter = Callable[[KnowledgeBase], list[Problem]]

LINTERS: list[Linter] = [lint_runbooks, lint_mkdocs_config]


def collect_problems(root: Path) -> tuple[KnowledgeBase, list[Problem]]:
    """The knowledge base and every problem in it (loader's and each linter's), sorted."""
    kb, problems = load_kb_with_problems(root)
    for linter in LINTERS:
        problems += linter(kb)
    return kb, sorted(problems)
