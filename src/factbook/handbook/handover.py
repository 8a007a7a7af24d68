"""The hand-over page: the budgeted status dump of the newest milestone, ready to copy.

Whoever picks the work up (a teammate, or the next context of an AI assistant) wants the
dense dump, not the 100k-character document: the page shows it rendered and, below, as text
to paste. It is made in memory from the knowledge base on every build, like every other page.

Like every page it is a function of its inputs, never of the clock: a knowledge base without
milestones is dumped as of its last edit (the newest fact file), not as of the build, so a
page served after an edit is the page a fresh build makes, whatever the minute.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from typing import Any

from factbook.dumps.status.budget import render_budgeted
from factbook.dumps.status.render import StatusOptions
from factbook.errors import FactbookError
from factbook.knowledge.kb import FACTS_DIR, KnowledgeBase

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
        dump = render_budgeted(kb, options, budget, now=None if newest else last_edit(kb))
    except FactbookError as exc:  # a knowledge base too big for the budget's header
        return {"error": str(exc), "body": "", "raw": "", "fence": "```"}
    body = _TITLE.sub("", _FRONT.sub("", dump.text), count=1)
    longest = max((len(m) for m in re.findall(r"`+", dump.text)), default=0)
    return {
        "error": "",
        "milestone": f"milestone {newest.id}" if newest else "the knowledge base now",
        "budget": budget,
        "tokens": dump.tokens,
        "shown": len(dump.shown),
        "known": len(dump.shown) + len(dump.left_out),
        "body": body,
        "raw": dump.text,
        "fence": "`" * max(3, longest + 1),
    }


def last_edit(kb: KnowledgeBase) -> dt.datetime:
    """When the facts the dump shows last changed: the newest modification time of the fact
    files (the facts/ folder's own when there are none), in UTC."""
    paths = {kb.root / fact.file for fact in kb.facts.values()} or {kb.root / FACTS_DIR}
    newest = 0
    for path in paths:
        try:
            newest = max(newest, os.stat(path).st_mtime_ns)
        except OSError:  # removed since the load: the others still date the dump
            continue
    return dt.datetime.fromtimestamp(newest / 1e9, dt.timezone.utc)
