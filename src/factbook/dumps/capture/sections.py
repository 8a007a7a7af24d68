"""Which category a heading of a status dump stands for.

The seeds and `factbook status` use the same section names (Goal, Instructions, Discoveries /
Hardware, Known pitfalls, Benchmarks, Accomplished, In progress, Not yet done, Relevant files),
spelled a little differently each time (`### Current Software on Container`, `### Not Yet
Done ⏳`, `6. Next Steps`). A heading is matched by keywords, first rule first; a subsection
whose heading matches nothing inherits its parent's section (`### vLLM Service` under
`## Instructions`), and a top-level heading that matches nothing places no items at all (an
article's `Conclusion`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Section:
    """Where an item goes: category, tags, and fixed keys (a progress state)."""

    category: str
    tags: tuple[str, ...] = ()
    keys: dict[str, object] = field(default_factory=dict)


# (pattern on the lower-cased heading, section); order matters: first match wins.
RULES: list[tuple[str, Section]] = [
    (r"not yet done|next step|to ?do\b|\bplan\b", Section("progress", (), {"state": "todo"})),
    (r"in progress|🔄", Section("progress", (), {"state": "in_progress"})),
    (r"\(failed\)", Section("progress", (), {"state": "failed"})),
    (r"accomplished|\bcomplete\b|\bdone\b|✅", Section("progress", (), {"state": "done"})),
    (r"pitfall", Section("pitfalls")),
    (r"training metric|training run", Section("training")),
    (r"baseline", Section("benchmarks", ("baseline",))),
    (r"benchmark|performance", Section("benchmarks")),
    (r"relevant files|file inventory|files|director", Section("inventory")),
    (r"tokeni[sz]er", Section("tokenizer")),
    (r"draft model", Section("model", ("draft",))),
    (r"architecture|\bmodel\b", Section("model")),
    (r"software on|current software|versions?\b", Section("software", ("version",))),
    (r"engine notes|software|support|patches", Section("software")),
    (r"hardware", Section("hardware")),
    (r"decision|working assumption", Section("decisions")),
    (r"\baccess\b", Section("instructions", ("access",))),
    (r"user constraint", Section("instructions", ("user-constraint",))),
    (r"instruction|environment rule|service", Section("instructions")),
    (r"\bgoal\b", Section("goal")),
]
DISCOVERIES = Section("software")  # an unnamed discovery: engine behaviour
_COMPILED = [(re.compile(p), s) for p, s in RULES]


def classify(heading: str) -> Section | None:
    """The section a heading names, or None when it names none of the known ones."""
    text = heading.lower()
    for pattern, section in _COMPILED:
        if pattern.search(text):
            return section
    if "discover" in text:
        return DISCOVERIES
    return None


CLOSED = ("inventory", "training")


def resolve(path: list[str]) -> Section | None:
    """The section of a heading path (outermost first): the innermost heading that names
    one. Inside Relevant files or Training metrics every subsection stays there (a machine's
    `EAGLE-3 Training Pipeline:` group is files, not training)."""
    found: Section | None = None
    for heading in path:
        if found is not None and found.category in CLOSED:
            break
        section = classify(heading)
        if section is not None:
            found = section
    return found
