"""Knowledge capture: a status dump → reviewed facts (`factbook import`).

parse.py     the dump's text → entries (bullets, numbered items, table rows) under headings;
             article.py (dumps in other shapes), grouped.py (a budgeted dump's group lines)
sections.py  a heading → category, tags, progress state; classify.py: an entry without one
extract.py   an entry's text → value, unit, category keys, a matching key; checks.py: a check
             only where the text fixes probe and arguments; pitfall.py: symptom/cause/fix
boxes.py     the boxes a dump names → proposed targets (targetfile.py writes targets.yaml)
build.py     an entry → a proposed fact in the fact-file format (or why it cannot lint clean)
match.py     a proposal against the knowledge base: unchanged / new / changed / contradicted
propose.py   the edits, applied to a scratch copy and linted → a unified diff; atomic writes
plan.py      one import start to end, and its review summary
review.py    the proposals area (proposals/): submitted, listed, accepted, rejected
"""

from __future__ import annotations

from factbook.dumps.capture.plan import ImportResult, counts_line, plan_import, summary
from factbook.dumps.capture.propose import write

__all__ = ["ImportResult", "counts_line", "plan_import", "summary", "write"]
