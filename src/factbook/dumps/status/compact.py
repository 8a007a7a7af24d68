"""One fact as a dense status line, in two sizes, and where in the dump it goes.

A budgeted dump (budget.py) is read at a hand-over, usually by the next context of an AI
assistant: every token spent on boilerplate is a fact left out. So a line is its mark (one
character, the legend is printed once), an optional `+` for "new since the previous dump",
and the fact in one of two sizes:

- brief: the fact's title, with its value when the title does not already say it
  (`RAM: 449 GB`); a pitfall's title with its id; a file's path and size;
- full: the statement (a pitfall: title — symptom → fix, with its id; a refuted assumption:
  what was believed → what is true now; a file: path — purpose (size)).

Budget.py gives every chosen fact its brief line first and spends what is left on full lines,
most important first. A date or a place is printed only where trust depends on it: a live
result (when and where it was checked), a drift (expected vs observed), a check that errored,
a stale fact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from factbook.dumps.status.context import StatusContext
from factbook.dumps.status.items import Item, one_line, value_text
from factbook.dumps.status.kinds import PLURAL, SAID_STATE
from factbook.dumps.status.render import md

# The compact marks: one character each, explained once at the top of the dump.
COMPACT_MARKS = {
    "verified": "✓",
    "assumed": "?",
    "stale": "~",
    "drifted": "!",
    "error": "E",
    "refuted": "✗",
}
NEW_FLAG = "+"
REFUTED_GROUP = "Refuted (believed → true)"  # a short heading: the dump pays for every character
_DATE = re.compile(r"\d{4}-\d\d-\d\d")


_MEANINGS = {
    "verified": "verified",
    "assumed": "assumed, never checked",
    "stale": "stale",
    "drifted": "check drifted",
    "error": "check errored",
    "refuted": "refuted",
}


def legend(previous: str | None, used: set[str] | None = None) -> str:
    """The one legend line: the marks the dump uses (every mark when `used` is None), and
    the new flag when there is a previous dump."""
    text = " · ".join(
        f"{mark} {_MEANINGS[kind]}"
        for kind, mark in COMPACT_MARKS.items()
        if used is None or kind in used
    )
    if previous:
        text += f" · {NEW_FLAG} new since {previous}"
    return text


def config_text(config: Any) -> str:
    """A benchmark's configuration as `k=v` pairs, where a count reads as one: `3 patches`,
    not `patches=3` (the words a hand-written dump uses and a reader searches for)."""
    if not isinstance(config, dict):
        return value_text(config)
    parts = []
    for key, value in config.items():
        counted = isinstance(value, int) and not isinstance(value, bool)
        if counted and isinstance(key, str) and PLURAL.fullmatch(key):
            parts.append(f"{value} {key}")
        else:
            parts.append(value_text({key: value}))
    return ", ".join(parts)


@dataclass
class Line:
    """A fact placed in the dump: its section and group, its priority and both sizes."""

    item: Item
    section: str
    group: str
    brief: str
    full: str
    new: bool = False
    rank: int = 7
    reason: str = "rest"
    order: tuple[Any, ...] = ()
    shown: bool = False
    use_full: bool = False
    stamp: str = ""  # when and where, only where trust needs it (_stamp)
    topic: str = ""  # the head of the group line this fact shares ("" = a bullet of its own)
    prefix: str = ""  # a group line of facts: the id prefix they share (`hw.gpu`)
    label: str = ""  # ... and the title words they share (`GPU`)
    id: str = ""

    def __post_init__(self) -> None:
        self.id = self.item.id

    def with_configuration(self) -> None:
        """A figure that matters now carries its configuration in its full line."""
        config = self.item.get("config")
        if config and self.item.category == "benchmarks":
            self.full += f" [{md(config_text(config))}]"

    @property
    def mark(self) -> str:
        return COMPACT_MARKS.get(self.item.mark.kind, "?")

    @property
    def marker(self) -> str:
        """The mark with the new flag: `✓`, `✓+`."""
        return self.mark + (NEW_FLAG if self.new else "")

    @property
    def text(self) -> str:
        return (self.full if self.use_full else self.brief) + self.stamp

    def render(self, number: int | None = None) -> str:
        """`- ✓+ text` (or `1. ✓ text` in a numbered list)."""
        bullet = f"{number}." if number is not None else "-"
        return f"{bullet} {self.marker} {self.text}"

    def cost(self, full: bool) -> int:
        """Characters this fact adds: its own line (mark, bullet, newline), or its part of a
        group line (the `; ` before it; the line's head is counted once, by the selection)."""
        text = self.full if full else self.brief
        overhead = 2 if self.topic else 5
        if self.prefix:  # its id's last part in the head's braces: `hw.gpu.{count,model}`
            overhead += len(self.id) - len(self.prefix)
        return len(text) + len(self.stamp) + overhead + (1 if self.new else 0)


def render_group_line(members: list[Line]) -> str:
    """Facts sharing a topic on one line: `- ✓ HEAD: part; part; ? part`. The line carries the
    most common mark once; a part whose mark (or new flag) differs carries its own. A line of
    facts names every id in its head, in the order of its parts (`GPU `hw.gpu.{count,model}``);
    a line of files names their directory (`` `/data/run/`: `a.log`; `./` (3 TB) ``, `./` the
    directory itself). Parts are separated by `; ` and never contain one (one_part), so
    `factbook import` splits the line back exactly."""
    counts: dict[str, int] = {}
    for ln in members:
        counts[ln.marker] = counts.get(ln.marker, 0) + 1
    common = max(counts, key=lambda m: counts[m])
    parts = [(f"{ln.marker} " if ln.marker != common else "") + one_part(ln.text) for ln in members]
    prefix = members[0].prefix
    if not prefix and len(members) == 1 and members[0].text.startswith("`./`"):
        own = members[0].topic[:-1] + members[0].text[3:]  # a directory alone: its own line
        return f"- {common} {own}"
    if prefix:
        last = [ln.id[len(prefix) + 1 :] for ln in members]
        ids = f"{prefix}.{last[0]}" if len(last) == 1 else f"{prefix}.{{{','.join(last)}}}"
        head = " ".join(p for p in (members[0].label, f"`{ids}`") if p)
    else:
        head = members[0].topic
    return f"- {common} {head}: " + "; ".join(parts)


def one_part(text: str) -> str:
    """A part of a group line: every `; ` in it becomes `, `, so the line's separator is
    unambiguous; an empty part is `…`."""
    return text.replace("; ", ", ").strip() or "…"


# --- the two sizes --------------------------------------------------------------------------


def _stamp(item: Item, live: bool) -> str:
    """` (2026-11-29 h200)`, ` (expected 8, observed 7)`: only where trust needs it."""
    mark = item.mark
    parts = []
    checked = live and mark.kind == "verified" and _DATE.match(mark.when)  # by a run, not a seed
    if mark.kind in ("drifted", "error") or checked:
        parts.append(" ".join(p for p in (mark.when, mark.where) if p))
    elif mark.kind == "stale" and mark.when:
        parts.append(f"held at {mark.when}")
    if mark.detail and mark.kind in ("drifted", "error", "stale"):
        parts.append(mark.detail)
    text = "; ".join(p for p in parts if p)
    return f" ({md(text)})" if text else ""


def figure(item: Item) -> str:
    """The value as the seeds write it: `30%`, `2.4x`, `90.0 tok/s`, `22-34 s` (two numbers
    with a unit are a range)."""
    fact = item.fact
    if fact is not None and fact.unit and isinstance(fact.value, list) and len(fact.value) == 2:
        low, high = fact.value
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)):
            return f"{low}-{high} {fact.unit}"
    if fact is not None and fact.unit in ("%", "x") and item.value.endswith(" " + fact.unit):
        return item.value[: -len(fact.unit) - 1] + fact.unit
    return item.value


def _names(values: list[Any]) -> str:
    """A list of strings as a reader writes it: `a, b, c`; paths by their last part when
    those differ (`speculative.py, eagle.py, speculators/`), the full paths are in the
    statement."""
    texts = [one_line(v) for v in values]
    if all("/" in t.rstrip("/") for t in texts):
        last = [t.rstrip("/").rpartition("/")[2] + ("/" if t.endswith("/") else "") for t in texts]
        if len(set(last)) == len(last):
            texts = last
    return ", ".join(texts)


MAX_VALUE = 160  # characters of a value in a brief line; a longer one is the full line's
MAX_COMMAND = 240  # ... of an instruction's: the command itself is what the reader acts on


def _with_value(item: Item) -> str:
    """The title, and the value when the title does not already say it (a list of strings
    as a list, not as JSON)."""
    title = item.title
    value = figure(item)
    fact_value = item.fact.value if item.fact else None
    if isinstance(fact_value, list) and fact_value and all(isinstance(v, str) for v in fact_value):
        value = _names(fact_value)
    longest = MAX_COMMAND if item.category == "instructions" else MAX_VALUE
    if not value or isinstance(fact_value, bool) or len(value) > longest:
        return title
    plain = value.replace(",", "").replace(" ", "").lower()
    if plain and plain in title.replace(",", "").replace(" ", "").lower():
        return title
    setting = _setting(title, item.text, value)
    if setting:
        return setting
    return f"{title} ({value})" if ":" in title else f"{title}: {value}"


_SETTING = re.compile(r"\b([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)=(\S+?)[.,;)]?(?:\s|$)")


def _setting(title: str, statement: str, value: str) -> str:
    """The title with the setting's own name where the statement writes the value as
    `name=value` and the title spells the name out (`INT4 group size` and `group_size=32`:
    `INT4 group_size=32`): the name a reader greps a config for, in fewer characters."""
    for found in _SETTING.finditer(statement):
        name, written = found.groups()
        if written != value:
            continue
        spelled = name.replace("_", " ")
        at = title.lower().find(spelled.lower())
        if at >= 0:
            return f"{title[:at]}{name}={value}{title[at + len(spelled) :]}"
    return ""


def _truth(item: Item, titles: dict[str, str]) -> str:
    """What is true instead of a refuted fact: what replaced it (its title with its value,
    `titles` holds them so), or the refutation's note."""
    replaced = [titles[i] for i in item.links.get("replaced_by", []) if i in titles]
    return "; ".join(replaced) or item.mark.detail or "refuted"


def forms(item: Item, kind: str, titles: dict[str, str]) -> tuple[str, str]:
    """(brief, full) Markdown text of an item placed as `kind` (line, pitfall, refuted,
    figure, step, progress); the stamp (_stamp) goes after either."""
    if kind == "refuted":
        truth = md(_truth(item, titles))
        detail = md(item.mark.detail) if item.mark.detail else ""
        brief = f"{md(item.title)} → {truth}"
        full = f"{md(item.text)} → {detail or truth}" + (
            f"; now: {truth}" if detail and truth != detail else ""
        )
        return brief, full
    if kind == "pitfall":
        ref = f" `{item.id}`"
        symptom, fix = item.get("symptom"), item.get("fix")
        brief = f"{md(item.title)}{ref}"
        cause = item.get("cause")
        if symptom and fix:  # the "symptom → fix", the cause between (`←`)
            why = f" ← {_clause(cause)}" if cause else ""
            because = _brief_cause(item.title, cause, fix)
            brief = f"{md(item.title)}{because} → {_first_clause(fix)}{ref}"
            full = f"{md(item.title)}: {_clause(symptom)}{why} → {_clause(fix)}{ref}"
        else:
            full = f"{md(item.title)}: {md(item.text)}{ref}"
        return brief, full
    if kind == "figure":
        brief = md(_with_value(item))
        if item.get("accept_len") is not None:
            brief += f", accept len {item.get('accept_len')}"
        return brief, md(item.text)
    if kind == "step":
        criterion = item.get("criterion")
        brief = md(item.title)
        full = md(item.text) + (f" (done when: {md(one_line(criterion))})" if criterion else "")
        return brief, full
    if kind == "progress":
        return md(item.title) + _state_tag(item, item.title), md(item.text) + _state_tag(
            item, item.text
        )
    return md(_with_value(item)), md(item.text)


def _state_tag(item: Item, text: str) -> str:
    """` (FAILED)` or ` (BLOCKED)` after work that did not get done, unless its words already
    say so (`vLLM EAGLE-3 testing (failed, ...)`, SAID_STATE, which import reads back): a
    reader must not take it for done."""
    state = str(item.get("state") or "")
    said = SAID_STATE.search(text)
    if state not in ("failed", "blocked") or (said and said.group(1).lower() == state):
        return ""
    return f" ({state.upper()})"


MAX_CAUSE = 120  # characters: a longer cause is an explanation, the full line's job
# a number, a path or file name, a setting, a quoted token ('chas'); not a product name
_NAMED = re.compile(r"\d|[_/=]|\w\.\w|'[^' ]+'")
_ASIDE = re.compile(r" \(|; |, e\.g\.,? ")


def _brief_cause(title: str, cause: Any, fix: Any) -> str:
    """` ← cause` in a pitfall's brief line, its first sentence, where it names what the title
    and fix do not (`server_args.py (lines ~2443-2449) overrides ...`, `163533 decodes to
    'chas'`): the name or number a reader searches for when the pitfall bites."""
    if not cause:
        return ""
    clause = _clause(str(cause).split("; ")[0].split(". ")[0])
    said = {w.strip(".,;:()'\"").lower() for w in f"{title} {fix}".split()}
    new = [
        w for w in clause.split() if _NAMED.search(w) and w.strip(".,;:()'\"").lower() not in said
    ]
    return f" ← {clause}" if new and len(clause) <= MAX_CAUSE else ""


def _first_clause(text: Any) -> str:
    """A fix in a brief line: what to do, without its asides (a parenthesis, an example, a
    second clause after `;`), which the full line keeps."""
    clause = _clause(text)
    return _ASIDE.split(clause, maxsplit=1)[0].rstrip(" ,:") or clause


def _clause(text: Any) -> str:
    """A pitfall's symptom, cause or fix as one clause: one line, no final full stop."""
    text = one_line(text)
    return md(text[:-1] if text.endswith(".") and not text.endswith("..") else text)


def file_forms(item: Item, shown_path: str) -> tuple[str, str]:
    """A file: `path` (size), and with its purpose when there is room."""
    size = f" ({item.get('size')})" if item.get("size") else ""
    purpose = item.get("purpose")
    brief = f"`{shown_path}`{size}"
    full = f"`{shown_path}` — {md(one_line(purpose))}{size}" if purpose else brief
    return brief, full


def relative_paths(paths: list[str]) -> dict[str, tuple[str, str]]:
    """{path: (parent, path shown)}: a path under another listed directory of at least two
    components (`/root/sglang/`, not `/data`) is shown relative to the deepest one, the way the
    seeds list `eagle3-train/04_train.py` under the repository they name once."""
    dirs = sorted(
        {p.rstrip("/") + "/" for p in paths if p.startswith("/") and p.rstrip("/").count("/") >= 2},
        key=len,
        reverse=True,
    )
    out: dict[str, tuple[str, str]] = {}
    for path in paths:
        own = path.rstrip("/") + "/"
        parent = next((d for d in dirs if path.startswith(d) and own != d), "")
        out[path] = (parent, path[len(parent) :]) if parent else ("", path)
    return out


# --- placing every item ---------------------------------------------------------------------

SECTIONS = (
    ("goal", "Goal"),
    ("instructions", "Instructions"),
    ("discoveries", "Discoveries"),
    ("accomplished", "Accomplished"),
    ("in_progress", "In progress"),
    ("next", "Next steps"),
    ("files", "Relevant files"),
)


@dataclass
class Placed:
    """Every visible fact as a Line, in document order; `parents` holds file group heads."""

    lines: list[Line] = field(default_factory=list)
    parents: dict[str, str] = field(default_factory=dict)  # item id -> parent dir shown


def place(ctx: StatusContext, *, live: bool) -> Placed:
    """Each item of the context once, in the seeds' section order, with both its sizes."""
    titles: dict[str, str] = {}
    everything: list[Item] = list(ctx.goal) + list(ctx.pitfalls) + list(ctx.benchmarks)
    for group in ctx.instructions + ctx.discoveries:
        everything += group.items
    for table in ctx.training_tables:
        everything += [row[2] for row in table.rows]
    everything += ctx.training + ctx.accomplished + ctx.in_progress + ctx.next_steps
    for machine in ctx.files:
        for group in machine.groups:
            everything += group.items
    titles = {i.id: _with_value(i) for i in everything}
    new = {i.id for i in ctx.changes.new}
    placed = Placed()
    seen: set[str] = set()

    def add(item: Item, section: str, group: str, kind: str) -> None:
        if item.id in seen:
            return
        seen.add(item.id)
        if item.refuted and kind not in ("file",):
            section, group, kind = "discoveries", REFUTED_GROUP, "refuted"
        brief, full = forms(item, kind, titles)
        stamp = _stamp(item, live)
        placed.lines.append(
            Line(item, section, group, brief, full, new=item.id in new, stamp=stamp)
        )

    for item in ctx.goal:
        add(item, "goal", "", "line")
    for group in ctx.instructions:
        for item in group.items:
            add(item, "instructions", group.title, "line")
    refuted = [i for i in everything if i.refuted and i.category not in ("inventory",)]
    for item in refuted:
        add(item, "discoveries", "", "refuted")
    for item in ctx.pitfalls:
        add(item, "discoveries", "Known pitfalls", "pitfall")
    for item in ctx.benchmarks:
        add(item, "discoveries", "Benchmarks", "figure")
    for group in ctx.discoveries:
        for item in group.items:
            add(item, "discoveries", group.title, "line")
    for table in ctx.training_tables:
        for _, _, item in table.rows:
            add(item, "discoveries", "Training metrics", "line")
    for item in ctx.training:
        add(item, "discoveries", "Training metrics", "line")
    for item in ctx.accomplished:
        add(item, "accomplished", "", "progress")
    for item in ctx.in_progress:
        add(item, "in_progress", "", "progress")
    for item in ctx.next_steps:
        add(item, "next", "", "step")
    for machine in ctx.files:
        items = [i for g in machine.groups for i in g.items if i.id not in seen]
        paths = {i.id: str(i.get("path") or i.title) for i in items}
        shown = relative_paths(list(paths.values()))
        for item in items:
            parent, rel = shown[paths[item.id]]
            seen.add(item.id)
            brief, full = file_forms(item, rel)
            line = Line(
                item,
                "files",
                machine.machine,
                brief,
                full,
                item.id in new,
                stamp=_stamp(item, live),
            )
            placed.lines.append(line)
            if parent:
                placed.parents[item.id] = parent
    return placed
