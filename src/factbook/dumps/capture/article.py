"""A hand-written dump, or an article quoting one → entries under their headings.

What counts as a heading, outermost first:

- level 0: an article's title line (a short stand-alone line between blank lines, not a
  sentence) outside any Markdown heading; it ends the quoted dump's sections, so the
  article's own prose places nothing;
- levels 1-6: Markdown `#` headings (a flattened list glued to one is split off);
- level 7: a line that is only bold (`**Files (container)**`, `**Goal.**`);
- level 8: a short label line ending in a colon under one of those (`Access:`);
- level 9: a bullet that ends in a colon and has sub-bullets (`- Software on the node:`).

Items: bullets (`-`, `*`, `+`, with `[x]`/`[ ]` checkboxes), numbered items (`1.`, `1)`),
Markdown tables (header, separator, rows) and tables flattened onto one line; sentences of a
paragraph under a Markdown or bold heading. A sub-bullet labelled `Cause:`, `Fix:`,
`Success criterion:` … completes its parent instead of standing alone (entry.SUBKEYS).
Articles quote dumps flattened, a section per line (`### Hardware - GPUs: … - CPU: …`,
`1. … 2. …`, `| a | b | | c | d |`); those are split back into items.

A dump holds at most DUMP_MAX_ITEMS items: past it, reading stops (TooManyItems, at the
line that passed it) before the next item is made, even inside one long line, so a dump
of millions of tiny items costs the time and memory of that many, not of all of them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from factbook.dumps.capture.entry import SUBKEYS, Entry
from factbook.dumps.capture.sections import resolve
from factbook.errors import InputError
from factbook.knowledge.limits import DUMP_MAX_ITEMS

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_NUMBERED = re.compile(r"^(\s*)(\d{1,9})[.)]\s+(.*)$")  # CommonMark: 1-9 digits
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_CHECKBOX = re.compile(r"^\[([ xX✓])\]\s+(.*)$")
_LABEL = re.compile(r"^([A-Z][^:|]{0,60}):\s+-\s+(.*)$")
_BOLD_LINE = re.compile(r"^\*\*(?P<title>[^*]{1,80}?)[.:]?\*\*[.:]?\s*(?P<rest>.*)$")
_LABEL_LINE = re.compile(r"^(?P<title>[A-Z][^:|`]{0,60}):$")
_SUBKEY = re.compile(r"^\**(?P<key>[A-Za-z ]{3,20}?)\**\s*:\s*\**\s*(?P<value>.+)$")
_SEPARATOR = re.compile(r"^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z<`(\"'])")
_TRAILING_PROSE = re.compile(r"(?<=[\w)%.])\s+(?=(?:This|These|The|It|Each|Such)\s+[a-z]+\s)")
BOLD, LABEL, PARENT = 7, 8, 9


class TooManyItems(ValueError):
    """A dump with more than DUMP_MAX_ITEMS items; `line` is where the one past it stands."""

    def __init__(self, line: int) -> None:
        super().__init__(f"line {line}: more than {DUMP_MAX_ITEMS:,} items")
        self.line = line

    def refusal(self, name: str) -> InputError:
        """What `factbook import` says of the dump `name` (one line, exit 2)."""
        return InputError(
            f"{name}:{self.line}: more than {DUMP_MAX_ITEMS:,} items; one import reads at "
            f"most {DUMP_MAX_ITEMS:,} (split the dump at a heading)"
        )


def parse_article(text: str) -> list[Entry]:
    """Every item of a hand-written dump or of an article that quotes one."""
    return _Reader(text.split("\n")).read()


class _Reader:
    """One pass over the lines, keeping the heading levels and the bullet nesting."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.entries: list[Entry] = []
        self.headings: dict[int, str] = {}
        self.nest: list[tuple[int, Entry | None]] = []  # (indent, entry; None for a label)

    def path(self) -> list[str]:
        return [self.headings[k] for k in sorted(self.headings)]

    def room(self) -> int:
        """How many more items one line may make before the dump is over the bound (one
        past it, so that the reader sees it is over)."""
        return DUMP_MAX_ITEMS + 1 - len(self.entries)

    def bounded(self) -> None:
        """TooManyItems once the items read pass the bound, at the line of the one past it."""
        if len(self.entries) > DUMP_MAX_ITEMS:
            raise TooManyItems(self.entries[DUMP_MAX_ITEMS].line)

    def structured(self) -> bool:
        """Under a Markdown or bold heading (not an article's title line)."""
        return any(1 <= k <= BOLD for k in self.headings)

    def set_heading(self, level: int, title: str) -> None:
        # a heading ends the sections below it (an article's title ends everything)
        keep = {k: v for k, v in self.headings.items() if 0 < k < level}
        keep[level] = title
        self.headings = keep
        self.nest = []

    def read(self) -> list[Entry]:
        index = 0
        while index < len(self.lines):
            seen = len(self.entries)
            titled = 0 in self.headings and not self.structured()
            index = self.line(index)
            self.bounded()
            for entry in self.entries[seen:]:
                if titled and 0 in self.headings:
                    entry.fields["titled"] = True  # under an article's title, not the dump's
        return self.entries

    def after(self, index: int) -> str:
        return self.lines[index + 1] if index + 1 < len(self.lines) else ""

    def next_nonblank(self, index: int) -> str:
        """The next line with text. It walks the lines in place: a copy of the rest of the
        document per item (`lines[index + 1:]`) made 60,000 bullets take 5 s, quadratic."""
        lines = self.lines
        for at in range(index + 1, len(lines)):
            text = lines[at].strip()
            if text and text != ">":
                return lines[at]
        return ""

    def prose_follows(self, index: int) -> bool:
        """An article's title after a quoted dump: long prose follows, not a list."""
        follow = self.next_nonblank(index).strip()
        return len(follow) > 200 and not follow.startswith(("-", "*", "|", "#", ">"))

    def line(self, index: int) -> int:
        raw = self.lines[index]
        line = raw.strip()
        number = index + 1
        if not line or line == ">":
            return index + 1
        before = self.lines[index - 1] if index > 0 else ""
        heading = _HEADING.match(line)
        if heading:
            title, rest = _split_heading(heading.group(2))
            self.set_heading(len(heading.group(1)), title)
            self.entries += _flattened(number, rest, self.path(), "", self.room())
            return index + 1
        bold = _BOLD_LINE.match(line)
        if bold and (not bold.group("rest") or len(bold.group("title").split()) <= 5):
            self.set_heading(BOLD, bold.group("title").strip())
            if bold.group("rest"):
                self.entries += self.sentences(number, bold.group("rest"))
            return index + 1
        if line.startswith("|"):
            return self.table(index)
        bullet = _BULLET.match(raw)
        numbered = _NUMBERED.match(raw)
        if bullet or (numbered and self.structured()):
            return self.item(index, bullet, numbered)
        label_line = _LABEL_LINE.match(line)
        if label_line and self.structured() and len(line.split()) <= 6:
            self.set_heading(LABEL, label_line.group("title"))
            return index + 1
        label = _LABEL.match(line)
        if label:
            rest, path = "- " + label.group(2), self.path()
            self.entries += _flattened(number, rest, path, label.group(1), self.room())
            return index + 1
        title_line = numbered.group(3) if numbered else line
        if (
            _is_title(title_line, before, self.after(index))
            and not _NUMBERED.match(self.after(index) or "x")
            and (not self.structured() or self.prose_follows(index))
        ):
            self.headings = {0: line}
            self.nest = []
            return index + 1
        if numbered:
            self.entries += _numbered_run(number, raw, self.path(), self.lines, index, self.room())
        elif self.structured():
            self.entries += self.sentences(number, line)
        return index + 1

    def sentences(self, number: int, line: str) -> list[Entry]:
        """A paragraph under a heading of the dump: one entry per sentence. (An article's
        own paragraphs sit under title lines and are never facts.)"""
        if resolve(self.path()) is None:
            return []
        parts = _SENTENCE_END.split(line, maxsplit=self.room())
        return [_entry(number, "sentence", p, self.path(), "", None) for p in parts if p.strip()]

    def item(self, index: int, bullet: re.Match[str] | None, numbered: re.Match[str] | None) -> int:
        raw = self.lines[index]
        number = index + 1
        indent = len((bullet or numbered).group(1).expandtabs(4))  # type: ignore[union-attr]
        body = (bullet.group(2) if bullet else numbered.group(3)).strip()  # type: ignore[union-attr]
        while self.nest and self.nest[-1][0] >= indent:
            self.nest.pop()
        parent = self.nest[-1][1] if self.nest else None
        sub = _SUBKEY.match(body)
        if parent is not None and sub and sub.group("key").strip().lower() in SUBKEYS:
            key = SUBKEYS[sub.group("key").strip().lower()]
            parent.fields[key] = sub.group("value").strip()
            parent.fields.setdefault("quoted_keys", []).append(key)
            return index + 1
        follow = self.next_nonblank(index)
        deeper = _BULLET.match(follow) or _NUMBERED.match(follow)
        if (
            body.endswith(":")
            and len(body) < 80
            and deeper
            and len(deeper.group(1).expandtabs(4)) > indent
        ):
            # `- Software on the node:` with sub-bullets: a heading for them, not an item
            self.headings = {k: v for k, v in self.headings.items() if k < PARENT}
            self.headings[PARENT] = body[:-1].strip()
            self.nest.append((indent, None))
            return index + 1
        if parent is None and indent == 0:
            self.headings.pop(PARENT, None)
        path = self.path()
        if numbered and not bullet:
            made = _numbered_run(number, raw, path, self.lines, index, self.room())
        elif body.count(" - ") >= 2 or len(body) > 240:  # a list flattened onto one line
            made = _flattened(number, "- " + body, path, "", self.room())
        else:
            made = [_entry(number, "bullet", body, path, "", None)]
        for entry in made:
            box = _CHECKBOX.match(entry.text)
            if box:
                entry.fields["checkbox"] = "todo" if box.group(1) == " " else "done"
                entry.text = entry.quote = box.group(2).strip()
        self.entries += made
        if made:
            self.nest.append((indent, made[-1]))
        return index + 1

    def table(self, index: int) -> int:
        line = self.lines[index].strip()
        number = index + 1
        if _SEPARATOR.match(self.after(index).strip()):
            header = _cells(line)
            end = index + 2
            while end < len(self.lines) and self.lines[end].strip().startswith("|"):
                # as GitHub reads a table: a short row is padded, a long one cut at the header
                cells = (_cells(self.lines[end]) + [""] * len(header))[: len(header)]
                row = self.lines[end].strip()
                entry = Entry(
                    end + 1, "row", cells[0], row, self.path(), header=header, cells=cells
                )
                entry.fields["title"] = cells[0]
                self.entries.append(entry)
                self.bounded()
                end += 1
            return end
        self.entries += _article_table(number, line, self.path(), self.room())
        return index + 1


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


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


def _split_heading(text: str) -> tuple[str, str]:
    """`Hardware - GPUs: … - CPU: …` → ('Hardware', '- GPUs: … - CPU: …'); likewise a
    numbered list glued to its heading (`Training Pipeline: COMPLETE ✅ 1. … 2. …`)."""
    cut = [m.start() for m in (re.search(r" - ", text), re.search(r"\s1\.\s", text)) if m]
    if not cut:
        return text.strip(), ""
    at = min(cut)
    return text[:at].strip(), text[at:].strip()


_FLAT_BULLET = re.compile(r"(?<!\s)\s+-\s+(?=\S)")


def _flattened(
    number: int, rest: str, path: list[str], label: str, room: int = DUMP_MAX_ITEMS + 1
) -> list[Entry]:
    """Items flattened onto one line: ` - a - b` bullets, `1. a 2. b` numbers, or `Label: - a`;
    no more than `room` of them."""
    out: list[Entry] = []
    rest = rest.strip()
    if not rest:
        return out
    if re.match(r"1\.\s", rest):
        for index, item in _split_numbers(rest, room):
            out.append(_entry(number, "numbered", item, path, label, index))
        return out
    chunk = rest[2:] if rest.startswith("- ") else rest
    for part in _pieces(_FLAT_BULLET, chunk):
        if len(out) >= room:
            break
        part = part.strip()
        sub = re.match(r"^([A-Z][^:|]{0,60}):$", part)
        if sub:  # `Files patched:` before a list, or a group label left at the end
            label = sub.group(1)
            continue
        trailing = re.match(r"^(.*?)(?<!\s)\s+([A-Z][\w /.-]{0,40}):$", part)
        if trailing:  # `… .md Docs:`: the next group's label glued to this item
            out.append(_entry(number, "bullet", trailing.group(1), path, label, None))
            label = trailing.group(2)
            continue
        if part:
            out.append(_entry(number, "bullet", part, path, label, None))
    return out


def _pieces(separator: re.Pattern[str], text: str) -> Iterator[str]:
    """`separator.split(text)` one piece at a time (the pattern has no groups): a line of a
    million pieces is not cut into a list of them when the reader stops after a few."""
    start = 0
    for found in separator.finditer(text):
        yield text[start : found.start()]
        start = found.end()
    yield text[start:]


def _split_numbers(text: str, room: int = DUMP_MAX_ITEMS + 1) -> list[tuple[int, str]]:
    """`1. a 2. b 3. c` → [(1, 'a'), (2, 'b'), (3, 'c')]: each number must follow the last;
    no more than `room` of them."""
    items: list[tuple[int, str]] = []
    pos, expect = 0, 1
    starts: list[tuple[int, int, int]] = []  # (number, start of marker, start of text)
    while len(starts) < room:
        found = _next_number(text, pos, expect)
        if not found:
            break
        starts.append((expect, found.start(), found.end()))
        pos, expect = found.end(), expect + 1
    for i, (n, _, begin) in enumerate(starts):
        end = starts[i + 1][1] if i + 1 < len(starts) else len(text)
        items.append((n, text[begin:end].strip()))
    return items


_ANY_NUMBER = re.compile(r"(?:^|\s)(\d+)\.\s")


def _next_number(text: str, pos: int, expect: int) -> re.Match[str] | None:
    r"""The first `(?:^|\s){expect}\.\s` at or after `pos`, found with one pattern: a pattern
    compiled per number (re's cache holds 512) took a third of a 1 MB list's import. Every
    place that pattern matches, this one matches too, with the same number, span and end."""
    want = str(expect)
    found = _ANY_NUMBER.search(text, pos)
    while found is not None and found.group(1) != want:
        found = _ANY_NUMBER.search(text, found.start() + 1)
    return found


def _numbered_run(
    number: int, raw: str, path: list[str], lines: list[str], index: int, room: int
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
        return _flattened(number, f"1. {body}", path, "", room)
    return [_entry(number, "numbered", body, path, "", int(found.group(2)))]


def _entry(
    number: int, kind: str, text: str, path: list[str], label: str, index: int | None
) -> Entry:
    text = text.strip()
    return Entry(number, kind, text, text, list(path), index, label)


_CELL_BAR = re.compile(r"\|")


def _article_table(
    number: int, line: str, path: list[str], room: int = DUMP_MAX_ITEMS + 1
) -> list[Entry]:
    """A table quoted on one line: rows separated by `| |`, the first row its header; no
    more than `room` rows."""
    cells = (p.strip() for p in _pieces(_CELL_BAR, line.strip()[1:]))
    header = []
    for cell in cells:
        if cell == "":
            break
        header.append(cell)
    else:
        return []
    width = len(header)
    rows: list[list[str]] = []
    while len(rows) < room:
        row = list(itertools.islice(cells, width))
        after = next(cells, None)
        if len(row) < width or (after is not None and after != ""):
            break
        if not all(set(c) <= set(":-") for c in row):
            rows.append(row)
        if after is None:
            break
    out = []
    for row, written in zip(rows, _written_rows(line, rows), strict=True):
        quote = "| " + " | ".join(row) + " |" if written else " | ".join(row)
        entry = Entry(number, "row", row[0], quote, list(path), header=header, cells=row)
        entry.fields["title"] = row[0]
        out.append(entry)
    return out


_BASE, _MOD = 1_000_003, (1 << 61) - 1  # a polynomial hash of a row's cells


def _written_rows(line: str, rows: list[list[str]]) -> list[bool]:
    """For each row (all of one width), whether `line` holds it as `| a | b |`, anywhere:
    the quote shown for it then. Such a quote's pipes are pipes of the line, so its cells,
    each between single spaces, are consecutive gaps between the line's pipes; each window
    of gaps is hashed once, rolling. Searching the line for each row's quote was quadratic:
    a one-line table of 1 MB took minutes."""
    if not rows:
        return []
    width = len(rows[0])
    codes: dict[str, int] = {}  # a gap written ` cell ` -> its number; any other gap is 0
    ids = [
        0 if cell is None else codes.setdefault(cell, len(codes) + 1)
        for cell in map(_spaced, line.split("|")[1:-1])
    ]
    windows = _windows(ids, width)
    out = []
    for row in rows:
        want = [codes.get(cell, -1) for cell in row]
        starts = [] if -1 in want else windows.get(_hash(want), [])
        out.append(any(ids[at : at + width] == want for at in starts))
    return out


def _spaced(gap: str) -> str | None:
    """`cell` for a gap written ` cell ` (one space each side, the cell stripped), else None."""
    inner = gap[1:-1]
    if len(gap) >= 2 and gap[0] == gap[-1] == " " and inner == inner.strip():
        return inner
    return None


def _hash(ids: list[int]) -> int:
    value = 0
    for n in ids:
        value = (value * _BASE + n) % _MOD
    return value


def _windows(ids: list[int], width: int) -> dict[int, list[int]]:
    """The hash of every `width` consecutive ids -> where the windows with it start."""
    out: dict[int, list[int]] = {}
    top = pow(_BASE, width - 1, _MOD)
    value = 0
    for at, n in enumerate(ids):
        if at >= width:
            value = (value - ids[at - width] * top) % _MOD
        value = (value * _BASE + n) % _MOD
        if at >= width - 1:
            out.setdefault(value, []).append(at - width + 1)
    return out
