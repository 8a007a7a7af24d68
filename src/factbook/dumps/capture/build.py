"""One dump entry → one proposed fact (a plain dict in the fact file format).

Category from the entry's section, statement from its text, the verbatim quote and message
as source, `since` the milestone being imported, a value (and a check) from extract.py. What
`factbook status` wrote is read back the way it was rendered: the mark gives status, message
and target, bold titles and sub-bullets give title, symptom/cause/fix and success criteria,
and the line's hint (factbook.dumps.status.hint) gives id, value and `since`.

A fact about a box names its target (boxes.py decides which, and a check without one is not
proposed: it would run on whatever box verify is pointed at). A pitfall takes its symptom,
cause and fix from sub-items or labels, else from its sentence (pitfall.py); what the dump
does not say is written as `not stated in the dump`, the fact stays `assumed`, tagged
`incomplete`, and the review flags the missing key, so nothing is dropped or invented. A
decision without its rationale is treated the same way. A file entry without a path cannot
be written (`problems` says why).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factbook.dumps.capture.boxes import Boxes
from factbook.dumps.capture.checks import lint_check, path_check, path_problem, paths
from factbook.dumps.capture.entry import Entry
from factbook.dumps.capture.extract import (
    PATH_CATEGORIES,
    Extracted,
    extract,
    scalar,
    slug,
    table_row,
)
from factbook.dumps.capture.pitfall import split_pitfall
from factbook.dumps.capture.sections import Section
from factbook.dumps.status.kinds import COUNT, KIND_TITLES, PLURAL
from factbook.knowledge import schema
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.model import Milestone

PREFIXES = {
    "goal": "goal",
    "instructions": "instr",
    "hardware": "hw",
    "software": "sw",
    "model": "model",
    "tokenizer": "tok",
    "inventory": "inv",
    "pitfalls": "pit",
    "benchmarks": "bench",
    "training": "train",
    "decisions": "dec",
    "progress": "prog",
}
KIND_BY_TITLE = {title.lower(): kind for kind, title in KIND_TITLES.items()}
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "on",
        "in",
        "to",
        "for",
        "and",
        "or",
        "is",
        "are",
        "was",
        "be",
        "with",
        "by",
        "at",
        "from",
        "as",
        "it",
        "its",
    ]
)
_ID_OK = re.compile(schema.ID_PATTERN)
MISSING = "not stated in the dump"
BOX_CATEGORIES = ("hardware", "inventory")


@dataclass
class Built:
    """A proposed fact and what the reviewer must know about it."""

    fact: dict[str, Any]
    extracted: Extracted
    problems: list[str] = field(default_factory=list)
    hinted_id: str | None = None
    notes: list[str] = field(default_factory=list)  # for the review: target, why no check
    missing: list[str] = field(default_factory=list)  # keys the dump does not state


def build(
    entry: Entry,
    section: Section,
    milestone: Milestone,
    doc_name: str,
    kb: KnowledgeBase,
    boxes: Boxes | None = None,
    known: frozenset[str] = frozenset(),
) -> Built:
    """The fact an entry proposes (its id is provisional: propose.py makes ids unique)."""
    category = section.category
    hint = entry.hint or {}
    if entry.kind == "row" and figures_table(entry, category):
        found = table_row(entry.header, entry.cells, category)
        if found.key and found.key[0] == "train":
            category = "training"
    elif entry.kind == "row":
        found = extract(row_text(entry), category, known)
    else:
        found = extract(entry.text, category, known)
    if category == "inventory" and entry.fields.get("path"):
        found.key = ("path", str(entry.fields["path"]).rstrip("/") or "/")
        if found.check is None and entry.hint is None:  # a status line: `path` — purpose
            fit = path_check(str(entry.fields["path"]), category)
            found.check, found.why = fit.check, fit.why
    statement = str(hint.get("statement") or _statement(entry, found))
    fact: dict[str, Any] = {
        "id": "",
        "category": category,
        "title": _title(entry),
        "statement": statement,
    }
    if entry.hint is not None:  # the hint carries the value; none there means none
        fact["value"], fact["unit"] = hint.get("value"), hint.get("unit")
    elif entry.kind == "row" and "Figure" in entry.header:
        fact["value"], fact["unit"] = _figure(entry.cells[entry.header.index("Figure")])
    else:
        fact["value"], fact["unit"] = found.value, found.unit
    if fact["value"] is None:
        del fact["value"]
    if not fact.get("unit"):
        fact.pop("unit", None)
    mark = entry.mark
    fact["status"] = mark.status if mark else "assumed"
    notes: list[str] = []
    where = mark.where.split()[0] if mark and mark.where else ""
    if str(hint.get("target", "")) in kb.targets:
        fact["target"] = str(hint["target"])
    elif where in kb.targets:
        fact["target"] = where
    elif entry.hint is None and boxes is not None and _box_bound(entry, category, found, boxes):
        box, how = boxes.bind(entry)
        if box is not None:
            fact["target"] = box.name
            notes.append(f"target {box.name} ({how})")
        elif found.check is not None:
            found.why = f"no check: which box is it about? {how}"
            found.check = None
    tags = list(section.tags)
    if tags:
        fact["tags"] = tags
    since = str(hint.get("since") or milestone.id)
    fact["since"] = since if since in kb.milestones else milestone.id
    source: dict[str, Any] = {"seed": _file_name(doc_name)}
    if milestone.message is not None:
        source["message"] = milestone.message
    source["quote"] = entry.quote
    fact["sources"] = [source]
    problems: list[str] = []
    missing: list[str] = []
    fact.update(_category_keys(entry, section, category, found, kb, problems, missing))
    if category == "inventory" and "machine" not in fact:
        heading = entry.headings[-1].split(" — ")[0].strip() if entry.headings else ""
        machine = fact.get("target") or (heading if heading in kb.targets else None)
        if machine:
            fact["machine"] = machine
    if missing:
        if fact["status"] != "refuted":
            fact["status"] = "assumed"
        fact["tags"] = [*fact.get("tags", []), "incomplete"]
        notes.append(f"{', '.join(missing)} {MISSING}: imported as assumed, to be filled in")
    if found.check and entry.hint is None:
        lint = lint_check(found.check, kb)
        if lint:
            found.why = "no check: " + "; ".join(lint)
        else:
            fact["check"] = found.check
    if not found.why and category in ("software", "hardware") and entry.hint is None:
        found.why = "no check: the line names no version, GPU count or path a probe can see"
    if found.why and "check" not in fact:
        notes.append(found.why)
    hinted = hint.get("id") or entry.fields.get("id")
    return Built(fact, found, problems, str(hinted) if hinted else None, notes, missing)


def figures_table(entry: Entry, category: str) -> bool:
    """A table of figures (benchmarks, training epochs, factbook's own) rather than rows of
    things each stated on its row (`| torch | 2.5.1 |`)."""
    header = [h.lower() for h in entry.header]
    return (
        category in ("benchmarks", "training")
        or bool(header and header[0].startswith("epoch"))
        or "figure" in header
        or "mark" in header
    )


def row_text(entry: Entry) -> str:
    """A table row as the sentence it states: `TensorRT-LLM: 0.17.0`."""
    rest = [c for c in entry.cells[1:] if c and c not in ("—", "-", "–")]
    return f"{entry.cells[0]}: {', '.join(rest)}" if rest else entry.cells[0]


def _box_bound(entry: Entry, category: str, found: Extracted, boxes: Boxes) -> bool:
    """A fact about one box: what it has, what is on it (a path), or one that carries a
    check; an access line is about its own box."""
    return (
        category in BOX_CATEGORIES
        or found.check is not None
        or (category == "software" and "version" in found.kinds)
        or id(entry) in boxes.own
        or (category in PATH_CATEGORIES and any(path_problem(p) is None for p in paths(entry.text)))
    )


def _statement(entry: Entry, found: Extracted) -> str:
    if entry.kind != "row":
        return entry.text
    pairs = [f"{h}: {c}" for h, c in zip(entry.header[1:], entry.cells[1:], strict=False)]
    pairs = [p for p in pairs if not p.endswith(("—", ": -", ": "))]
    if entry.header and entry.header[0].lower().startswith("epoch"):
        return f"Epoch {entry.cells[0]}: " + "; ".join(pairs) + "."
    return f"{entry.cells[0]}: " + "; ".join(pairs) + "."


_TITLE_END = re.compile(r"(?<!\s)\s+[—–]\s+|: |\. |; ")


def _title(entry: Entry) -> str:
    if entry.fields.get("title"):
        title = str(entry.fields["title"])
        return f"Epoch {title}" if entry.kind == "row" and title.isdigit() else title
    text = entry.fields.get("path") or entry.text
    head = _TITLE_END.split(text, maxsplit=1)[0].strip()
    words = head.split()
    if len(words) > 8:
        head = " ".join(words[:8]) + " …"
    return head.rstrip(".,:;") or "untitled"


def _figure(cell: str) -> tuple[Any, str | None]:
    """`1,536 tok/s` → (1536, 'tok/s'), as status.items.figure_text wrote it."""
    parts = cell.split(" ", 1)
    value = scalar(parts[0]) if parts[0] else None
    if isinstance(value, str):
        return cell or None, None
    return value, parts[1] if len(parts) > 1 else None


def _kv(cell: str) -> dict[str, Any]:
    """`engine=vllm, concurrency=1, flags=["--x"], 3 patches` → a mapping (the status
    document's configuration, inverted: `3 patches` is `patches: 3`)."""
    out: dict[str, Any] = {}
    for part in re.split(rf",\s+(?=[\w.-]+=|[\w.-]+(?:,|$)|\d+ {PLURAL.pattern}(?:,|$))", cell):
        if not part.strip() or part.strip() == "—":
            continue
        if count := COUNT.fullmatch(part.strip()):
            out[count.group(2)] = int(count.group(1))
            continue
        key, eq, value = part.partition("=")
        out[key.strip()] = scalar(value.strip()) if eq else None
    return out


def _category_keys(
    entry: Entry,
    section: Section,
    category: str,
    found: Extracted,
    kb: KnowledgeBase,
    problems: list[str],
    missing: list[str],
) -> dict[str, Any]:
    keys: dict[str, Any] = {}
    fields = entry.fields
    allowed = schema.CATEGORY_KEYS.get(category, set())
    keys.update({k: v for k, v in found.keys.items() if k in allowed and v is not None})
    if category == "progress":
        state = section.keys.get("state", "todo")
        if fields.get("flag") in ("failed", "blocked"):
            state = fields["flag"]
        keys["state"] = state
        if state == "todo" and entry.number is not None:
            keys["priority"] = entry.number
        if fields.get("criterion"):
            keys["criterion"] = fields["criterion"]
    elif category == "pitfalls":
        told = {k: fields[k] for k in ("symptom", "cause", "fix") if fields.get(k)}
        said = {} if len(told) == 3 else split_pitfall(entry.text)
        for key in ("symptom", "cause", "fix"):
            value = told.get(key) or said.get(key)
            if value:
                keys[key] = value
            else:
                keys[key] = MISSING
                missing.append(key)
    elif category == "decisions":
        hint = entry.hint or {}
        rationale = fields.get("rationale") or hint.get("rationale") or _rationale(entry.text)
        if rationale:
            keys["rationale"] = rationale
        else:
            keys["rationale"] = MISSING
            missing.append("rationale")
    elif category == "inventory":
        keys.update(_inventory(entry, found))
        if "path" not in keys:
            problems.append("a file entry needs a path; the dump names none")
    elif category == "benchmarks" and fields.get("config"):  # a compact line's `[k=v, ...]`
        config = _kv(str(fields["config"]))
        if config:
            keys["config"] = config
    elif category == "benchmarks" and entry.kind == "row" and "Configuration" in entry.header:
        keys["metric"] = slug(entry.cells[0], 40) or "figure"
        config = _kv(entry.cells[entry.header.index("Configuration")])
        if config:
            keys["config"] = config
        accept = (
            entry.cells[entry.header.index("Accept len")] if "Accept len" in entry.header else ""
        )
        if scalar(accept) not in (None, "—", ""):
            keys["accept_len"] = scalar(accept)
    return keys


def _rationale(text: str) -> str | None:
    found = re.search(r"\b(?:because|since|so that|given that)\b\s+(.*)", text)
    return found.group(1).strip() if found else None


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _inventory(entry: Entry, found: Extracted) -> dict[str, Any]:
    fields = entry.fields
    path = fields.get("path") or found.keys.get("path")
    if not path:  # the line's first word, or its first `code span` (the backticks are not
        # the path's: `scripts/run.sh` was written as the path '`scripts/run.sh`')
        quoted = _CODE_SPAN.match(entry.text)
        words = entry.text.split(" — ")[0].split()
        first = quoted.group(1) if quoted else (words[0] if words else "")
        path = first if re.search(r"[/.]", first) else None
    keys: dict[str, Any] = {}
    if path:
        keys["path"] = path
    label = (entry.label or "").lower()
    kind = KIND_BY_TITLE.get(label) or _kind_for(str(path or ""), label)
    keys["kind"] = kind
    purpose = fields.get("purpose")
    if not purpose and " — " in entry.text:
        purpose = entry.text.split(" — ", 1)[1].strip()
    if purpose and purpose != path:
        keys["purpose"] = purpose
    if fields.get("size"):
        keys["size"] = fields["size"]
    return keys


def _kind_for(path: str, label: str) -> str:
    if "log" in label or path.endswith(".log"):
        return "log"
    if "service" in label or path.endswith(".service"):
        return "service"
    if "model" in label or "checkpoint" in label:
        return "checkpoint"
    if "data" in label:
        return "data"
    if "doc" in label or path.endswith(".md"):
        return "doc"
    if path.endswith((".py", ".sh")) or "script" in label:
        return "script"
    return "dir" if path.endswith("/") else "file"


@functools.lru_cache(maxsize=64)
def _file_name(doc_name: str) -> str:
    """The dump's file name, once per dump rather than once per item."""
    return Path(doc_name).name


_NOT_ID_WORD = re.compile(r"[^a-z0-9]+")


def make_id(fact: dict[str, Any], taken: set[str], tried: dict[str, int] | None = None) -> str:
    """A readable id no other fact has: `<category prefix>.<words of the title>`."""
    return unique_id(id_base(fact), taken, tried)


def id_base(fact: dict[str, Any]) -> str:
    """The id a fact gets when no other fact has it: its category's prefix and the first
    five words of its title that are not stop words. (An import works it out on both cores,
    where the fact is built; only `unique_id` needs the ids taken so far.)"""
    prefix = PREFIXES.get(fact["category"], fact["category"])
    words = [w for w in _NOT_ID_WORD.split(str(fact["title"]).lower()) if w]
    words = [w for w in words if w not in STOPWORDS][:5] or ["item"]
    base = f"{prefix}." + "-".join(words)
    return base[:48].rstrip("-")


def unique_id(base: str, taken: set[str], tried: dict[str, int] | None = None) -> str:
    """`base`, or `base-N` with the first N that no fact in `taken` has.

    `tried` (kept by the caller across calls with one growing `taken`) remembers where each
    base's search for a free `-N` stopped: the numbers below it are still taken, so a dump
    repeating one title 10,000 times costs 10,000 steps, not 50 million.
    """
    n = tried.get(base, 1) if tried is not None else 1
    candidate = base if n == 1 else f"{base}-{n}"
    while candidate in taken or not _ID_OK.match(candidate):
        n += 1
        candidate = f"{base}-{n}"
    if tried is not None:
        tried[base] = n
    return candidate
