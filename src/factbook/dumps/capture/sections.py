"""Which category a heading of a status dump stands for.

The seeds and `factbook status` use the same section names (Goal, Instructions, Discoveries /
Hardware, Known pitfalls, Benchmarks, Accomplished, In progress, Not yet done, Relevant files),
spelled a little differently each time (`### Current Software on Container`, `### Not Yet
Done ⏳`, `6. Next Steps`). A heading is matched by keywords, first rule first; a subsection
whose heading matches nothing inherits its parent's section (`### vLLM Service` under
`## Instructions`), and a top-level heading that matches nothing places no items at all (an
article's `Conclusion`).

Dumps written by other teams use other words: `Problems` and `Known issues` are pitfalls,
`TODO` and `Next` the plan, `Files` the inventory, `Results` and `Figures` the benchmarks.
Some headings name no one category (`Context`, `Findings`, `Environment`, `Notes`, a bare
`Discoveries`): a section of those is *generic*, and each of its items is placed by what it
says (classify.py), falling back to the section's own category.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from factbook.dumps.capture.quickre import any_word


@dataclass(frozen=True)
class Section:
    """Where an item goes: category, tags, and fixed keys (a progress state)."""

    category: str
    tags: tuple[str, ...] = ()
    keys: dict[str, object] = field(default_factory=dict)
    generic: bool = False  # items placed by content (classify.py), `category` the fallback
    prose: str | None = None  # where a paragraph's sentences go when not its category


# (pattern on the lower-cased heading, section); order matters: first match wins.
RULES: list[tuple[str, Section]] = [
    (
        r"not yet done|next step|to ?do\b|\bplan\b|^(?:[\d.]+\s*)?next\b|\bbacklog\b",
        Section("progress", (), {"state": "todo"}),
    ),
    (r"in progress|🔄|\bopen now\b|\bongoing\b", Section("progress", (), {"state": "in_progress"})),
    (r"\bblocked\b", Section("progress", (), {"state": "blocked"})),
    (r"\(failed\)", Section("progress", (), {"state": "failed"})),
    (r"accomplished|\bcomplete\b|\bdone\b|✅", Section("progress", (), {"state": "done"})),
    (
        r"pitfall|gotcha|known issue|\bproblems?\b|\bissues\b|\bbugs\b|lessons|\bbroken\b"
        r"|\bfailures\b|\bcaveats\b|went wrong|watch out",
        Section("pitfalls"),
    ),
    (r"training metric|training run", Section("training")),
    (r"baseline", Section("benchmarks", ("baseline",))),
    (r"benchmark|performance|\bfigures\b|throughput", Section("benchmarks")),
    (r"\bresults?\b", Section("software", generic=True)),
    (r"relevant files|file inventory|\bfiles\b|director|\bpaths\b", Section("inventory")),
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
    (r"\bgoal\b|\bobjective\b|\bmission\b", Section("goal")),
    (
        r"\bcontext\b|background|overview|environment|\bsetup\b|\bsummary\b",
        Section("instructions", generic=True, prose="goal"),
    ),
    (r"finding|\bnotes?\b|observation|learned", Section("software", generic=True)),
]
DISCOVERIES = Section("software", generic=True)  # an unnamed discovery: placed by content
_COMPILED = [(re.compile(p), s) for p, s in RULES]
# any rule at all, in one search: most item labels (`fact 12: …`, each asked once) name none.
# The words some rule needs, as one literal alternation: the rules' own alternation took
# 0.8 us a character of the label (40 us for `fact 12345: value 12345 and more text`)
_ANY_RULE = any_word([p for p, _ in RULES] + ["discover"]) or re.compile(
    "|".join(f"(?:{p})" for p, _ in RULES) + "|discover"
)


@functools.lru_cache(maxsize=4096)  # a dump repeats its few headings on every item
def classify(heading: str) -> Section | None:
    """The section a heading names, or None when it names none of the known ones."""
    text = heading.lower()
    if _ANY_RULE.search(text) is None:
        return None
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
