"""One dump entry → one proposed fact (a plain dict in the fact file format).

Category from the entry's section, statement from its text, the verbatim quote and message
as source, `since` the milestone being imported, a value (and a check) from extract.py. What
`factbook status` wrote is read back the way it was rendered: the mark gives status, message
and target, bold titles and sub-bullets give title, symptom/cause/fix and success criteria,
and the line's hint (factbook.dumps.status.hint) gives id, value and `since`.

A proposal that cannot lint clean says why (`problems`) instead of inventing what the dump
does not say: a pitfall needs a symptom, a cause and a fix; a decision needs its rationale.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factbook.dumps.capture.extract import Extracted, extract, scalar, slug, table_row
from factbook.dumps.capture.parse import Entry
from factbook.dumps.capture.sections import Section
from factbook.dumps.status.context import KIND_TITLES
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


@dataclass
class Built:
    """A proposed fact and what the reviewer must know about it."""

    fact: dict[str, Any]
    extracted: Extracted
    problems: list[str] = field(default_factory=list)
    hinted_id: str | None = None


def build(
    entry: Entry, section: Section, milestone: Milestone, doc_name: str, kb: KnowledgeBase
) -> Built:
    """The fact an entry proposes (its id is provisional: propose.py makes ids unique)."""
    category = section.category
    hint = entry.hint or {}
    if entry.kind == "row":
        found = table_row(entry.header, entry.cells, category)
        if found.key and found.key[0] == "train":
            category = "training"
    else:
        found = extract(entry.text, category)
    if category == "inventory" and entry.fields.get("path"):
        found.key = ("path", str(entry.fields["path"]).rstrip("/") or "/")
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
    where = mark.where.split()[0] if mark and mark.where else ""
    if where in kb.targets:
        fact["target"] = where
    tags = list(section.tags)
    if tags:
        fact["tags"] = tags
    since = str(hint.get("since") or milestone.id)
    fact["since"] = since if since in kb.milestones else milestone.id
    source: dict[str, Any] = {"seed": Path(doc_name).name}
    if milestone.message is not None:
        source["message"] = milestone.message
    source["quote"] = entry.quote
    fact["sources"] = [source]
    problems: list[str] = []
    fact.update(_category_keys(entry, section, category, found, kb, problems))
    if found.check and entry.hint is None:
        fact["check"] = found.check
    built = Built(fact, found, problems, str(hint["id"]) if hint.get("id") else None)
    return built


def _statement(entry: Entry, found: Extracted) -> str:
    if entry.kind != "row":
        return entry.text
    pairs = [f"{h}: {c}" for h, c in zip(entry.header[1:], entry.cells[1:], strict=False)]
    pairs = [p for p in pairs if not p.endswith(("—", ": -", ": "))]
    if entry.header and entry.header[0].lower().startswith("epoch"):
        return f"Epoch {entry.cells[0]}: " + "; ".join(pairs) + "."
    return f"{entry.cells[0]}: " + "; ".join(pairs) + "."


def _title(entry: Entry) -> str:
    if entry.fields.get("title"):
        title = str(entry.fields["title"])
        return f"Epoch {title}" if entry.kind == "row" and title.isdigit() else title
    text = entry.fields.get("path") or entry.text
    head = re.split(r"\s+[—–]\s+|: |\. |; ", text, maxsplit=1)[0].strip()
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
    """`engine=vllm, concurrency=1, flags=["--x"]` → a mapping (status.render.kv, inverted)."""
    out: dict[str, Any] = {}
    for part in re.split(r",\s+(?=[\w.-]+=|[\w.-]+(?:,|$))", cell):
        if not part.strip() or part.strip() == "—":
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
        for key in ("symptom", "cause", "fix"):
            if fields.get(key):
                keys[key] = fields[key]
        missing = [k for k in ("symptom", "cause", "fix") if k not in keys]
        if missing:
            problems.append(
                f"a pitfall needs {', '.join(missing)}; the dump does not say (add them by hand)"
            )
    elif category == "decisions":
        hint = entry.hint or {}
        rationale = fields.get("rationale") or hint.get("rationale") or _rationale(entry.text)
        if rationale:
            keys["rationale"] = rationale
        else:
            problems.append("a decision needs its rationale; the dump gives none")
    elif category == "inventory":
        keys.update(_inventory(entry, found, kb))
        if "path" not in keys:
            problems.append("a file entry needs a path; the dump names none")
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
    found = re.search(r"\b(?:because|since|so that)\b\s+(.*)", text)
    return found.group(1).strip() if found else None


def _inventory(entry: Entry, found: Extracted, kb: KnowledgeBase) -> dict[str, Any]:
    fields = entry.fields
    path = fields.get("path") or found.keys.get("path")
    if not path:
        first = entry.text.split(" — ")[0].split()[0] if entry.text.split() else ""
        path = first if re.search(r"[/.]", first) else None
    keys: dict[str, Any] = {}
    if path:
        keys["path"] = path
    label = (entry.label or "").lower()
    kind = KIND_BY_TITLE.get(label) or _kind_for(str(path or ""), label)
    keys["kind"] = kind
    heading = entry.headings[-1] if entry.headings else ""
    machine = heading.split(" — ")[0].strip()
    if machine in kb.targets:
        keys["machine"] = machine
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


def make_id(fact: dict[str, Any], taken: set[str]) -> str:
    """A readable id no other fact has: `<category prefix>.<words of the title>`."""
    prefix = PREFIXES.get(fact["category"], fact["category"])
    words = [w for w in re.split(r"[^a-z0-9]+", str(fact["title"]).lower()) if w]
    words = [w for w in words if w not in STOPWORDS][:5] or ["item"]
    base = f"{prefix}." + "-".join(words)
    base = base[:48].rstrip("-")
    candidate, n = base, 2
    while candidate in taken or not _ID_OK.match(candidate):
        candidate = f"{base}-{n}"
        n += 1
    return candidate
