"""The hand-over page: the budgeted status dump of the newest milestone, ready to copy.

Whoever picks the work up (a teammate, or the next context of an AI assistant) wants the
dense dump, not the 100k-character document: the page shows it rendered and, below, as text
to paste. It is made in memory from the knowledge base on every build, like every other page.
"""

from __future__ import annotations

import re
from typing import Any

from factbook.dumps.status.budget import render_budgeted
from factbook.dumps.status.render import StatusOptions
from factbook.errors import FactbookError
from factbook.knowledge.kb import KnowledgeBase

HANDOVER = "status-handover.md"
HANDOVER_BUDGET = 2300  # tokens: about the size of the seeds' hand-written dump at 3157
_FRONT = re.compile(r"\A---\n.*?\n---\n", re.S)
_TITLE = re.compile(r"\A# .*\n+")


def handover_context(kb: KnowledgeBase, budget: int = HANDOVER_BUDGET) -> dict[str, Any]:
    """The page's data: the newest milestone's dump (the knowledge base now when there is no
    milestone), its body without front matter and title, and the text to copy."""
    newest = max(kb.milestones.values(), key=lambda m: m.index, default=None)
    options = StatusOptions(as_of=newest.id if newest else None, results=False)
    try:
        dump = render_budgeted(kb, options, budget)
    except FactbookError as exc:  # a knowledge base too big for the budget's header
        return {"error": str(exc), "body": "", "raw": "", "fence": "```"}
    body = _TITLE.sub("", _FRONT.sub("", dump.text), count=1)
    longest = max((len(m) for m in re.findall(r"`+", dump.text)), default=0)
    return {
        "error": "",
        "milestone": f"milestone {newest.id}" if newest else "now",
        "budget": budget,
        "tokens": dump.tokens,
        "shown": len(dump.shown),
        "known": len(dump.shown) + len(dump.left_out),
        "body": body,
        "raw": dump.text,
        "fence": "`" * max(3, longest + 1),
    }
