"""A status dump → entries: one per bullet, numbered item or table row, under its headings.

Two shapes are read:

- `factbook status` output: Markdown, one item per line, each with its verification mark
  (`✅ … *(msg 4504 llm-two)*`, `~~…~~ *(refuted …)*`) and an optional hint comment
  (factbook.dumps.status.hint) carrying what the line does not show.
- the seeds: prose articles that quote a dump. Message 3157 is quoted whole but flattened,
  a section per line (`### Hardware - GPUs: … - CPU: …`, `1. … 2. …`, tables on one line
  with `| |` between rows); the other two quote tables and numbered lists between paragraphs
  whose short title lines act as headings (`3. Performance Benchmarks`, `The Next Steps: …`).

Prose is never turned into facts: only list items and table rows are, and each keeps a
verbatim quote of the document so a reviewer can find it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factbook.dumps.capture.sections import resolve
from factbook.dumps.status.hint import split_hint
from factbook.errors import InputError
from factbook.knowledge.yamlsrc import read_text_bounded

MARK_SYMBOLS = {"✅": "verified", "◻": "assumed", "⚠️": "assumed", "❌": "assumed"}
SKIP_SECTIONS = ("changed since the previous status",)
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_NUMBERED = re.compile(r"^(\s*)(\d+)\.\s+(.*)$")
_LABEL = re.compile(r"^([A-Z][^:|]{0,60}):\s+-\s+(.*)$")
_BOLD = re.compile(r"^\*\*(?P<title>.+?)\*\*(?: \((?P<flag>[A-Z_]+)\))?:? (?P<rest>.*)$")
_REFUTED = re.compile(r"^~~(?P<text>.*)~~ \*\((?P<stamp>refuted.*)\)\*$")
_MARKED = re.compile(
    r"^(?P<sym>✅|⚠️|❌|◻) (?P<text>.*?)(?: — \*why:\* (?P<why>.*?))?(?: \*\((?P<stamp>.*)\)\*)?$"
)
_FILE = re.compile(
    r"^(?:~~)?`(?P<path>[^`]+)`(?:~~)?(?: — (?P<purpose>.*?))?(?: \((?P<size>[^()]*)\))?"
    r" (?P<mark>(?:✅|⚠️|❌|◻|~~refuted~~).*)$"
)
_STAMP = re.compile(
    r"^(?:stale )?(?:msg (?P<msg>\d+)(?:, [\d-]+)?|(?P<date>\d{4}-\d\d-\d\d))?\s*(?P<where>[^:]*)"
)
_REFUTED_STAMP = re.compile(
    r"^refuted(?: msg (?P<msg>\d+)(?:, [\d-]+)?)?(?:: (?P<detail>.*?))?"
    r"(?:; replaced by (?P<by>.*))?$"
)
_TRAILING_PROSE = re.compile(r"(?<=[\w)%.])\s+(?=(?:This|These|The|It|Each|Such)\s+[a-z]+\s)")


@dataclass
class Mark:
    """A status line's verification mark, read back."""

    status: str
    message: int | None = None
    where: str = ""
    detail: str = ""
    replaced_by: list[str] = field(default_factory=list)


@dataclass
class Entry:
    """One item of the dump: a bullet, a numbered item or a table row."""

    line: int
    kind: str  # bullet | numbered | row | sentence (of a Goal paragraph)
    text: str
    quote: str
    headings: list[str]
    number: int | None = None
    label: str = ""  # a group label inside a section (`Scripts:`, `Models:`)
    fields: dict[str, Any] = field(default_factory=dict)
    mark: Mark | None = None
    hint: dict[str, Any] | None = None
    header: list[str] = field(default_factory=list)
    cells: list[str] = field(default_factory=list)


@dataclass
class Document:
    """A parsed dump: its entries and whether factbook wrote it."""

    path: str
    text: str
    generated: bool
    entries: list[Entry]


MAX_DUMP_BYTES = 32 << 20  # 30x the largest hand-written dump in seeds/


def read_document(path: Path) -> Document:
    """Read and parse a dump file; a missing, unreadable, undecodable or huge file, a FIFO or
    a device (/dev/zero) is a one-line error, checked before anything is read."""
    if not (path.exists() or path.is_symlink()):
        raise InputError(f"{path}: no such file")
    text, problem = read_text_bounded(path, str(path), limit=MAX_DUMP_BYTES)
    if problem is not None:
        raise InputError(str(problem))
    return parse_text(text, str(path))


def parse_text(text: str, name: str = "<dump>") -> Document:
    text = text.replace("\r\n", "\n")
    generated = text.startswith("# Status as of") or "by `factbook status`" in text[:2000]
    entries = _parse_generated(text) if generated else _parse_article(text)
    return Document(name, text, generated, entries)


def unescape(text: str) -> str:
    """Undo the status renderer's Markdown escapes (`&lt;think>`, `\\|` in cells)."""
    return text.replace("&lt;", "<").replace("\\|", "|")


# --- factbook status output -------------------------------------------------------------------


def _parse_generated(text: str) -> list[Entry]:
    entries: list[Entry] = []
    headings: dict[int, str] = {}
    label = ""
    header: list[str] = []
    skipping = False
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip()
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            title = heading.group(2).strip()
            if level == 1:
                continue
            if level == 2:
                skipping = title.lower().startswith(SKIP_SECTIONS)
            headings = {k: v for k, v in headings.items() if k < level}
            headings[level] = title
            label, header = "", []
            continue
        if not line:
            header = []  # a blank line ends a table
            continue
        if skipping or line.startswith(">"):
            continue
        path = [headings[k] for k in sorted(headings)]
        if line.startswith("    - ") and entries:
            _sub_bullet(entries[-1], line[6:])
            continue
        if line.startswith("|"):
            cells = _cells(line)
            if not header:
                header = cells
            elif not all(set(c) <= set(":-") for c in cells):
                entries.append(_generated_row(number, line, path, header, cells))
            continue
        header = []
        if line.endswith(":") and not line.startswith(("-", "|")) and len(line) < 60:
            label = line[:-1]
            continue
        numbered = _NUMBERED.match(line)
        if line.startswith("- "):
            entries.append(_generated_item(number, line[2:], path, label, None))
        elif numbered and not numbered.group(1):
            entries.append(
                _generated_item(number, numbered.group(3), path, label, int(numbered.group(2)))
            )
    return entries


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def _sub_bullet(entry: Entry, text: str) -> None:
    key, _, value = text.partition(": ")
    key = {"success criterion": "criterion"}.get(key.strip(), key.strip())
    if key in ("symptom", "cause", "fix", "criterion"):
        entry.fields[key] = unescape(value.strip())


def _stamped(status: str, stamp_text: str) -> Mark:
    if status == "assumed" and stamp_text.startswith("stale"):
        status = "stale"
    mark = Mark(status)
    stamp = _STAMP.match(stamp_text)
    if stamp:
        mark.message = int(stamp.group("msg")) if stamp.group("msg") else None
        mark.where = stamp.group("where").strip()
    return mark


def plain_mark(text: str) -> Mark | None:
    """A mark written without its item (`✅ msg 3157 llm-two`, `~~refuted~~ msg 4504`)."""
    text = text.strip()
    if text.startswith("~~refuted~~"):
        found = _REFUTED_STAMP.match("refuted" + text[len("~~refuted~~") :])
        return Mark("refuted", int(found.group("msg")) if found and found.group("msg") else None)
    for symbol, status in MARK_SYMBOLS.items():
        if text.startswith(symbol):
            return _stamped(status, text[len(symbol) :].strip())
    return None


def parse_mark(body: str) -> tuple[str, Mark | None, str]:
    """(text, mark, rationale) of a status line body such as `✅ text *(msg 3157 llm-two)*`."""
    refuted = _REFUTED.match(body)
    if refuted:
        stamp = _REFUTED_STAMP.match(refuted.group("stamp"))
        mark = Mark("refuted")
        if stamp:
            mark.message = int(stamp.group("msg")) if stamp.group("msg") else None
            mark.detail = unescape(stamp.group("detail") or "")
            by = stamp.group("by") or ""
            mark.replaced_by = [b.strip() for b in by.split(",") if b.strip()]
        return unescape(refuted.group("text")), mark, ""
    marked = _MARKED.match(body)
    if not marked:
        return unescape(body), None, ""
    mark = _stamped(MARK_SYMBOLS[marked.group("sym")], marked.group("stamp") or "")
    return unescape(marked.group("text")), mark, unescape(marked.group("why") or "")


def _generated_item(
    number: int, body: str, path: list[str], label: str, index: int | None
) -> Entry:
    body, hint = split_hint(body)
    entry = Entry(number, "numbered" if index else "bullet", "", body, path, index, label)
    entry.hint = hint
    found = _FILE.match(body)
    if found:
        entry.fields.update(
            {k: unescape(v) for k, v in found.groupdict().items() if v and k != "mark"}
        )
        entry.mark = plain_mark(found.group("mark"))
        entry.text = entry.fields.get("purpose") or entry.fields["path"]
        return entry
    bold = _BOLD.match(body)
    if bold:
        entry.fields["title"] = unescape(bold.group("title"))
        if bold.group("flag"):
            entry.fields["flag"] = bold.group("flag").lower()
        body = bold.group("rest")
    entry.text, entry.mark, why = parse_mark(body)
    raw_text = entry.text.replace("<", "&lt;")
    if raw_text in body:  # the statement as the document prints it, without mark or title
        entry.quote = raw_text
    if why:
        entry.fields["rationale"] = why
    return entry


def _generated_row(
    number: int, line: str, path: list[str], header: list[str], cells: list[str]
) -> Entry:
    line, hint = split_hint(line)
    cells = [unescape(c) for c in _cells(line)]
    entry = Entry(number, "row", "", line.strip(), path, header=header, cells=cells, hint=hint)
    mark_text = cells[-1] if header and header[-1] == "Mark" else ""
    title = cells[0]
    if title.startswith("~~") and title.endswith("~~"):
        title = title[2:-2]
        entry.mark = Mark("refuted")
    else:
        entry.mark = plain_mark(mark_text)
    entry.fields["title"] = title
    entry.text = title
    return entry


# --- seed articles ----------------------------------------------------------------------------


def _is_title(line: str, before: str, after: str) -> bool:
    """A short stand-alone line between blank lines, not a sentence: an article's heading."""
    if before.strip() or after.strip():
        return False
    words = line.split()
    if not words or len(line) > 90 or line.startswith(("|", "-", ">", "<", '"', "(")):
        return False
    if line.endswith(":"):
        return len(words) <= 3
    return not line.endswith((".", "!", ",", ";", ")")) and len(words) <= 12


def _parse_article(text: str) -> list[Entry]:
    entries: list[Entry] = []
    lines = text.split("\n")
    headings: dict[int, str] = {}
    for index, raw in enumerate(lines):
        number = index + 1
        line = raw.strip()
        if not line or line == ">":
            continue
        before = lines[index - 1] if index > 0 else ""
        after = lines[index + 1] if index + 1 < len(lines) else ""
        path = [headings[k] for k in sorted(headings)]
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            title, rest = _split_heading(heading.group(2))
            # a Markdown heading ends the article's own (level 0) section
            headings = {k: v for k, v in headings.items() if 0 < k < level}
            headings[level] = title
            path = [headings[k] for k in sorted(headings)]
            entries += _flattened(number, rest, path, "")
            continue
        if line.startswith("|"):
            entries += _article_table(number, line, path)
            continue
        if line.startswith("- "):
            entries += _flattened(number, line, path, "")
            continue
        label = _LABEL.match(line)
        if label:
            entries += _flattened(number, "- " + label.group(2), path, label.group(1))
            continue
        numbered = _NUMBERED.match(raw)
        title_line = numbered.group(3) if numbered else line
        if _is_title(title_line, before, after) and not _NUMBERED.match(after or "x"):
            headings = {0: line}
            continue
        if numbered:
            entries += _numbered_run(number, raw, path, lines, index)
        elif 1 in headings or 2 in headings or 3 in headings:
            entries += _sentences(number, line, path)
    return entries


def _sentences(number: int, line: str, path: list[str]) -> list[Entry]:
    """A paragraph of a quoted dump's Goal section: one entry per sentence. Elsewhere a
    paragraph is the article's own prose, never facts."""
    section = resolve(path)
    if section is None or section.category != "goal":
        return []
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z])", line)
    return [_article_entry(number, "sentence", p, path, "", None) for p in parts if p.strip()]


def _split_heading(text: str) -> tuple[str, str]:
    """`Hardware - GPUs: … - CPU: …` → ('Hardware', '- GPUs: … - CPU: …'); likewise a
    numbered list glued to its heading (`Training Pipeline: COMPLETE ✅ 1. … 2. …`)."""
    cut = [m.start() for m in (re.search(r" - ", text), re.search(r"\s1\.\s", text)) if m]
    if not cut:
        return text.strip(), ""
    at = min(cut)
    return text[:at].strip(), text[at:].strip()


def _flattened(number: int, rest: str, path: list[str], label: str) -> list[Entry]:
    """Items flattened onto one line: ` - a - b` bullets, `1. a 2. b` numbers, or `Label: - a`."""
    out: list[Entry] = []
    rest = rest.strip()
    if not rest:
        return out
    if re.match(r"1\.\s", rest):
        for index, item in _split_numbers(rest):
            out.append(_article_entry(number, "numbered", item, path, label, index))
        return out
    chunk = rest[2:] if rest.startswith("- ") else rest
    for part in re.split(r"\s+-\s+(?=\S)", chunk):
        part = part.strip()
        sub = re.match(r"^([A-Z][^:|]{0,60}):$", part)
        if sub:  # `Files patched:` before a list, or a group label left at the end
            label = sub.group(1)
            continue
        trailing = re.match(r"^(.*?)\s+([A-Z][\w /.-]{0,40}):$", part)
        if trailing:  # `… .md Docs:`: the next group's label glued to this item
            out.append(_article_entry(number, "bullet", trailing.group(1), path, label, None))
            label = trailing.group(2)
            continue
        if part:
            out.append(_article_entry(number, "bullet", part, path, label, None))
    return out


def _split_numbers(text: str) -> list[tuple[int, str]]:
    """`1. a 2. b 3. c` → [(1, 'a'), (2, 'b'), (3, 'c')]: each number must follow the last."""
    items: list[tuple[int, str]] = []
    pos, expect = 0, 1
    starts: list[tuple[int, int, int]] = []  # (number, start of marker, start of text)
    while True:
        found = re.compile(rf"(?:^|\s){expect}\.\s").search(text, pos)
        if not found:
            break
        starts.append((expect, found.start(), found.end()))
        pos, expect = found.end(), expect + 1
    for i, (n, _, begin) in enumerate(starts):
        end = starts[i + 1][1] if i + 1 < len(starts) else len(text)
        items.append((n, text[begin:end].strip()))
    return items


def _numbered_run(
    number: int, raw: str, path: list[str], lines: list[str], index: int
) -> list[Entry]:
    found = _NUMBERED.match(raw)
    assert found is not None
    body = found.group(3).strip()
    next_line = lines[index + 1] if index + 1 < len(lines) else ""
    last = not _NUMBERED.match(next_line)
    if last:  # the article's prose often continues on the list's last line
        cut = _TRAILING_PROSE.search(body)
        if cut and len(body) - cut.start() > 60:
            body = body[: cut.start()].strip()
    if re.search(r"\s2\.\s", body) and not found.group(1):
        return _flattened(number, f"1. {body}", path, "")
    return [_article_entry(number, "numbered", body, path, "", int(found.group(2)))]


def _article_entry(
    number: int, kind: str, text: str, path: list[str], label: str, index: int | None
) -> Entry:
    text = text.strip()
    return Entry(number, kind, text, text, list(path), index, label)


def _article_table(number: int, line: str, path: list[str]) -> list[Entry]:
    """A table quoted on one line: rows separated by `| |`, the first row its header."""
    parts = [p.strip() for p in line.strip()[1:].split("|")]
    if "" not in parts:
        return []
    width = parts.index("")
    header = parts[:width]
    rows: list[list[str]] = []
    for start in range(width + 1, len(parts), width + 1):
        row = parts[start : start + width]
        if len(row) < width or (start + width < len(parts) and parts[start + width] != ""):
            break
        rows.append(row)
    out = []
    for row in rows:
        if all(set(c) <= set(":-") for c in row):
            continue
        quote = "| " + " | ".join(row) + " |"
        if quote not in line:
            quote = " | ".join(row)
        entry = Entry(number, "row", row[0], quote, list(path), header=header, cells=row)
        entry.fields["title"] = row[0]
        out.append(entry)
    return out
