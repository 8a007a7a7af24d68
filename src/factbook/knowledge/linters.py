"""Every linter `factbook lint` runs, listed here explicitly (no registration by import).

Each takes the loaded knowledge base and returns its problems; the loader's own problems
(facts, milestones, targets, checks/) come first. Add a linter by adding it to LINTERS.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from factbook.errors import Problem, ResultsUnreadable
from factbook.knowledge.kb import KnowledgeBase, load_kb_with_problems
from factbook.knowledge.mkdocscode import lint_mkdocs_config
from factbook.runbooks.lint import lint_runbooks
from factbook.store.results import load_latest

Linter = Callable[[KnowledgeBase], list[Problem]]


def lint_results(kb: KnowledgeBase) -> list[Problem]:
    """results/latest.json read as `status`, `show` and `export-ansible` read it: lint passed
    a knowledge base those then refused (a merge conflict in it, a 6000-digit number)."""
    try:
        load_latest(kb.root)
    except ResultsUnreadable as exc:
        return list(exc.problems)
    return []


LINTERS: list[Linter] = [lint_runbooks, lint_mkdocs_config, lint_results]


def collect_problems(root: Path) -> tuple[KnowledgeBase, list[Problem]]:
    """The knowledge base and every problem in it (loader's and each linter's), sorted."""
    kb, problems = load_kb_with_problems(root)
    for linter in LINTERS:
        problems += linter(kb)
    return kb, sorted(problems)
