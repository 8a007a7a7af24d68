"""Which category an item belongs to by what it says, where its heading does not tell.

Used for generic sections (`Context`, `Findings`, `Environment`, `Notes`, a bare
`Discoveries`), for a dump that has lost its headings, for an item's own label (`Tokenizer:
<|im_end|> is 151645` under `Model`), and for a checkbox item. The rules are read in order and
the first that holds wins; each looks at the kind of thing stated, never at a project's names:

1. an access line (`ssh user@host`, `pct exec`, `docker exec`) → instructions (access);
2. a checkbox (`[x]`, `[ ]`) → progress, done or todo;
3. a failure with a way out or a reason (`crashes … ; capping … avoids it`, `stalls …
   because …`) → pitfalls;
4. a token id (`<|im_end|> = token 151645`) → tokenizer;
5. a measured figure (`17.8 tok/s`, `TTFT`, `tokens per step`) → benchmarks;
6. a version of a known package or system component → software (version);
7. the box (GPUs, CPUs, RAM, NVLink, NUMA, disks) → hardware;
8. a choice with its reason (`Stay on FP8 because …`) → decisions;
9. the model (layers, experts, hidden_size, weights, checkpoint) → model;
10. a rule (`Never …`, `Always …`, `Do not …`) → instructions;
11. a file with what it is (`Logs go to /var/log/x.log`) → inventory;
otherwise the section's own category (its fallback).
"""

from __future__ import annotations

import re
from typing import Any

from factbook.dumps.capture.checks import has_failure, has_fix, paths, version_mentions
from factbook.dumps.capture.entry import Entry
from factbook.dumps.capture.quickre import starting_with
from factbook.dumps.capture.sections import Section, classify

# each searched on every item of a generic section: quickre.starting_with skips, in C, the
# positions where no match can begin (the classes list every first character)
ACCESS = starting_with(
    "dklps",
    r"\bssh\s+(?:-\w+(?:\s+[^-\s]\S*)?\s+){0,10}(?:[\w.-]+@|\[|<|[\w-]+\.[\w.-]+)"
    r"|\b(?:pct|lxc-attach)\s+(?:exec|enter)\b|\b(?:docker|podman|kubectl)\s+exec\b",
    re.I,
)
TOKEN = starting_with(
    r"<\d",
    r"<[^<>\s`]{1,40}>`?\s*(?:=|is|:)\s*(?:the\s+)?(?:token\s*)?(?:id\s*)?\d{1,7}\b"
    r"|(?<!\d)\d{4,}\s*(?:=|is)\s*(?:the\s+)?(?:REAL\s+)?<[^<>\s`]{1,40}>",
    re.I,
)
# A figure with its unit (`1,536 tok/s`), sought from the start of the run of digits, commas
# and dots that holds it, which the unit must follow: sought from every digit after a comma
# or a dot, each search scanned the rest of the run (a line of `1.1.1...` took minutes).
FIGURE = starting_with(
    r"afist\d.,",
    r"(?<![\d,.])[.,]*\d[\d,.]*\s*(?:tok(?:en)?s?/s|req/s|ms\b|TFLOP/s|GB/s)"
    r"|\b(?:TTFT|TPOT|ITL|throughput|speeds? up|faster|slower)\b"
    r"|tokens per (?:step|second)|accept(?:ance)? (?:rate|len(?:gth)?)",
    re.I,
)
HARDWARE = starting_with(
    r"abcdeghmnprstx\d",
    r"\b(?:GPUs?|NVIDIA|EPYC|Xeon|Threadripper|CPU|RAM|NVLink|NVSwitch|NUMA|PCIe|HBM\d?e?|NVMe"
    r"|RAID\d*|swap|disk|H100|H200|A100|B200|MI\d{3}X?)\b|\bAMD (?:Instinct|EPYC|Ryzen)"
    r"|\b\d+\s?(?:x|×)\s?[A-Z]{1,3}\d{2,4}\b",
    re.I,
)
DECISION = re.compile(
    r"^(?:we\s+)?(?:decided|chose|choose|stay|stick|keep|use|prefer|go with|switch(?:ed)? to)\b"
    r".*\b(?:because|since|so that|as|given)\b",
    re.I,
)
MODEL = starting_with(
    "aceghlmpqsvw",
    r"\b(?:layers|experts?|params?|architecture|weights|checkpoint|shards?|GGUF|MoE|MLA)\b"
    r"|hidden_size|parameters|vocab_size|safetensors|\bquantiz",
    re.I,
)
CAUSE = starting_with("bcdrt", r"\b(?:because|due to|caused by|the cause is|root cause)\b", re.I)
RULE = re.compile(r"^(?:never|always|do not|don't|must|avoid|only)\b", re.I)
FILE_WORDS = starting_with(
    "bdflsv", r"\b(?:logs?|files?|directory|dir|scripts?|venv|binary)\b", re.I
)
A_PATH = re.compile(r"(?:^|\s)~?/[\w.@+-]+")


def by_content(text: str, fallback: Section, fields: dict[str, Any] | None = None) -> Section:
    """The section an item's text puts it in; `fallback` when no rule holds."""
    fields = fields or {}
    if fields.get("checkbox"):
        return Section("progress", (), {"state": fields["checkbox"]})
    if ACCESS.search(text):
        return Section("instructions", ("access",))
    if (
        fields.get("fix")
        or fields.get("symptom")
        or (has_failure(text) and (has_fix(text) or CAUSE.search(text)))
    ):
        return Section("pitfalls")
    if TOKEN.search(text):
        return Section("tokenizer")
    if FIGURE.search(text):
        return Section("benchmarks")
    if any(known for _, _, known in version_mentions(text)):
        return Section("software", ("version",))
    if HARDWARE.search(text):
        return Section("hardware")
    if DECISION.search(text):
        return Section("decisions")
    if MODEL.search(text):
        return Section("model")
    if RULE.search(text):
        return Section("instructions")
    if FILE_WORDS.search(text) and A_PATH.search(text):
        return Section("inventory")
    return fallback


_ITEM_LABEL = re.compile(r"^`?([A-Za-z][\w /()+-]{0,40}?)`?:\s")


def by_label(text: str) -> Section | None:
    """The section an item's own label names (`Tokenizer: …`, `Model file: …`), if any."""
    found = _ITEM_LABEL.match(text)
    if not found:
        return None
    section = classify(found.group(1))
    return None if section is None or section.generic else section


LABEL_NAMES = {
    "tokenizer": "tokenizer",
    "hardware": "hardware",
    "software": "software",
    "pitfall": "pitfalls",
    "gotcha": "pitfalls",
    "decision": "decisions",
    "benchmark": "benchmarks",
    "goal": "goal",
}


_WORD_LABEL = re.compile(r"^([A-Za-z]+)s?:\s")


def place(
    entry: Entry, section: Section | None, *, headless: bool, prefixes: dict[str, str]
) -> Section | None:
    """Where an entry goes: its heading's section, or by what it says where that is generic,
    missing (a dump without headings) or overruled by the item itself (a checkbox, a label
    naming a category, a fact id `hw.gpu.count` in a compact status line)."""
    if entry.hint is not None:
        return section  # factbook's own line: its heading says it
    fields = entry.fields
    text = _text(entry)
    if fields.get("checkbox"):
        return Section("progress", (), {"state": fields["checkbox"]})
    by_id = prefixes.get(str(fields.get("id", "")).split(".")[0])
    if by_id and (section is None or section.generic):
        content = by_content(text, Section(by_id), fields)
        return content if content.category == by_id else Section(by_id)
    if section is None:
        if fields.get("titled") and not headless:
            return None  # an article's own list under one of its titles
        # a dump's heading that names no known section (`Where things are`, `Broken`), or
        # no heading at all: the item says what it is
        section = Section("software", generic=True)
    if section.generic:
        if fields.get("titled") and not headless:
            return None  # an article's own prose under one of its titles
        if entry.kind == "sentence" and section.prose:
            return Section(section.prose)
        return by_label(text) or by_content(text, Section(section.category), fields)
    label = _WORD_LABEL.match(text)
    named = LABEL_NAMES.get(label.group(1).lower()) if label else None
    if named and named != section.category:
        return Section(named)
    if entry.kind == "sentence" and section.category == "inventory" and not paths(text):
        return None  # prose about the files, not a file
    return section


def _text(entry: Entry) -> str:
    if entry.kind == "row" and entry.cells:
        rest = [c for c in entry.cells[1:] if c]
        head = " ".join(entry.header)
        return f"{entry.cells[0]}: {', '.join(rest)} ({head})"
    return entry.text
