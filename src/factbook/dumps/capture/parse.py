"""A status dump → entries: one per bullet, numbered item or table row, under its headings.

Two shapes are read:

- `factbook status` output: Markdown, one item per line, each with its verification mark
  (`✅ … *(msg 4504 llm-two)*`, `~~…~~ *(refuted …)*`) and an optional hint comment
  (factbook.dumps.status.hint) carrying what the line does not show. A compact (budgeted)
  document is read the same way: YAML front matter is skipped, its legend line (`Marks: ✓
  verified · ? assumed · ✗ refuted`) says what each one-character mark means, and a fact id
  written at the end of a line (`` `hw.gpu.count` `` or `[hw.gpu.count]`) names the fact.
- everything else, hand-written dumps and articles quoting them: article.py.

Each entry keeps a verbatim quote of the document so a reviewer can find it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from factbook.dumps.capture.article import TooManyItems, parse_article
from factbook.dumps.capture.entry import Entry, Mark
from factbook.dumps.capture.grouped import group_head, read_group
from factbook.dumps.capture.sections import resolve
from factbook.dumps.status.hint import split_hint
from factbook.dumps.status.kinds import PLURAL, SAID_STATE
from factbook.errors import InputError
from factbook.judging.sanitize import first_hidden, for_document
from factbook.knowledge.limits import DUMP_MAX_BYTES, DUMP_MAX_ITEMS, WHOLE_NUMBER, YAML_MAX_DEPTH
from factbook.knowledge.yamlsrc import read_text_bounded

MARK_SYMBOLS = {"✅": "verified", "◻": "assumed", "⚠️": "assumed", "❌": "assumed"}
# what a legend's word for a mark means as a fact status (drifted or errored: not verified)
LEGEND_WORDS = {"verified": "verified", "refuted": "refuted", "stale": "stale"}
_LEGEND_LINE = re.compile(r"^(?:>\s*)?.{0,80}?\b(?:marks|legend)\s*:\s*(?P<body>.*)$", re.I)
_LEGEND_PAIR = re.compile(
    r"(?:^|[·,;|]\s*)(?P<sym>~(?!~)|[A-Z](?=\s)|[^\w\s~*`·,;|]{1,2})\s+(?P<word>[a-z][a-z -]*)"
)
_COMPACT_ID = re.compile(
    r"(?<!\s)\s+(?:`(?P<a>[a-z0-9_]+(?:\.[a-z0-9_-]+)+)`|\[(?P<b>[a-z0-9_]+(?:\.[a-z0-9_-]+)+)\])\s*$"
)
SKIP_SECTIONS = ("changed since the previous status", "not in this dump", "left out")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_NUMBERED = re.compile(r"^(\s*)(\d{1,9})\.\s+(.*)$")  # CommonMark: 1-9 digits
_BOLD = re.compile(r"^\*\*(?P<title>.+?)\*\*(?: \((?P<flag>[A-Z_]+)\))?:? (?P<rest>.*)$")
_REFUTED = re.compile(r"^~~(?P<text>.*)~~ \*\((?P<stamp>refuted.*)\)\*$")
_MARKED = re.compile(
    r"^(?P<sym>✅|⚠️|❌|◻) (?P<text>.*?)(?: — \*why:\* (?P<why>.*?))?(?: \*\((?P<stamp>.*)\)\*)?$"
)
_FILE = (
    r"^(?:~~)?`(?P<path>[^`]+)`(?:~~)?(?: — (?P<purpose>.*?))?(?: \((?P<size>[^()]*)\))?"
    r" (?P<mark>(?:~~refuted~~|{symbols})(?= |$).*)$"
)


@functools.lru_cache(maxsize=64)  # a legend's symbols: a long-lived server reads many dumps
def _file_line(symbols: tuple[str, ...]) -> re.Pattern[str]:
    """A file inventory line whose mark is one of `symbols` (factbook's, or a legend's)."""
    return re.compile(_FILE.replace("{symbols}", "|".join(map(re.escape, symbols))))


_STAMP = re.compile(
    rf"^(?:stale )?(?:msg (?P<msg>{WHOLE_NUMBER})(?:, [\d-]+)?"
    r"|(?P<date>\d{4}-\d\d-\d\d))?\s*(?P<where>[^:]*)"
)
_REFUTED_STAMP = re.compile(
    rf"^refuted(?: msg (?P<msg>{WHOLE_NUMBER})(?:, [\d-]+)?)?(?:: (?P<detail>.*?))?"
    r"(?:; replaced by (?P<by>.*))?$"
)

# a status line's configuration, `[engine=vllm, 3 patches]`, and a message stamp in
# parentheses, `(held at msg 3478)`, each at the end of the line. Each is sought from the
# start of the spaces before it (`(?<!\s)`): from every space of a long run, each search
# scanned the rest of the run (200,000 spaces: minutes). The leftmost match is the same.
_CONFIG = re.compile(rf"(?<!\s)\s+\[(?P<kv>(?:[\w.-]+=|\d+ {PLURAL.pattern}\b).*)\]$")
_HELD_AT = re.compile(r"(?<!\s)\s*\([^()]*\bmsg \d+[^()]*\)$")


@dataclass
class Document:
    """A parsed dump: its entries and whether factbook wrote it."""

    path: str
    text: str
    generated: bool
    entries: list[Entry]


MAX_DUMP_BYTES = DUMP_MAX_BYTES  # limits.py: no status document factbook writes is larger


def read_document(path: Path, hide: Callable[[str], str] | None = None) -> Document:
    """Read and parse a dump file; a missing, unreadable, undecodable or huge file, a FIFO or
    a device (/dev/zero) is a one-line error, checked before anything is read."""
    if not (path.exists() or path.is_symlink()):
        raise InputError(f"{path}: no such file")
    text, problem = read_text_bounded(path, str(path), limit=MAX_DUMP_BYTES)
    if problem is not None:
        raise InputError(str(problem))
    return parse_text(text, str(path), hide)


def parse_text(
    text: str, name: str = "<dump>", hide: Callable[[str], str] | None = None
) -> Document:
    """Entries of a dump. Every character no reader sees for what it is (ESC, BEL, bidi
    controls, U+2028; sanitize.first_hidden's) is shown escaped (`\\x1b`) first: a dump is
    someone else's file, and each one went raw into import's review on the terminal and
    into the facts `--write` wrote, which lint then refused ("hidden character"). `hide`
    then hides what must not be kept (secrets.secrets_hidden), before anything is read."""
    text = for_document(text.replace("\r\n", "\n"))
    if hide is not None:
        text = hide(text)
    try:
        generated, entries = _read(text)
    except TooManyItems as exc:
        raise exc.refusal(name) from None
    return Document(name, text, generated, entries)


def line_past_item_bound(text: str) -> int | None:
    """The line at which `text` passes the DUMP_MAX_ITEMS items import reads, or None: what
    `factbook status` asks before writing a document (nothing it writes is unreadable)."""
    try:
        _read(for_document(text.replace("\r\n", "\n")))
    except TooManyItems as exc:
        return exc.line
    return None


def _read(text: str) -> tuple[bool, list[Entry]]:
    """(whether factbook wrote it, its entries); TooManyItems past the bound."""
    body = _without_front_matter(text)
    generated = body.lstrip().startswith("# Status as of") or bool(
        re.search(r"`factbook status\b", body[:3000])
    )
    return generated, _parse_generated(body, legend(body)) if generated else parse_article(body)


def _without_front_matter(text: str) -> str:
    """YAML front matter (`---` … `---` at the top) blanked, so line numbers stay right."""
    if not text.startswith("---\n"):
        return text
    end = text.find("\n---", 4)
    if end < 0:
        return text
    close = text.find("\n", end + 1)
    close = len(text) if close < 0 else close
    return "\n" * text[:close].count("\n") + text[close:]


def legend(text: str) -> dict[str, str]:
    """Mark symbol → fact status: factbook's own marks, and what a legend line adds."""
    found = dict(MARK_SYMBOLS)
    for line in text.split("\n")[:40]:
        match = _LEGEND_LINE.match(line.strip())
        if not match:
            continue
        for pair in _LEGEND_PAIR.finditer(match.group("body")):
            symbol, word = pair.group("sym"), pair.group("word").split()[0]
            if word == "new":
                continue  # `+ new since M`: a modifier after a mark, not a status
            if symbol not in found:
                found[symbol] = LEGEND_WORDS.get(word, "assumed")
    return found


# a hint factbook writes holds a fact's fields: a value as deep as a fact file may hold one
# (round 27: at 32, a value lint accepts 36 deep lost its hint, and the line was read as
# prose under a made-up box); a deeper one no fact file holds is not read as a hint
_HINT_DEPTH = YAML_MAX_DEPTH


def _split_hint(line: str) -> tuple[str, dict[str, Any] | None]:
    """split_hint, with every string of the hint shown escaped as the text around it is
    (`"\\u001b"` in its JSON decodes to ESC); a hint nested deeper than any factbook writes
    is not read."""
    rest, hint = split_hint(line)
    if hint is None:
        return rest, None
    try:
        return rest, _visible(hint, 0)
    except _TooDeep:
        return rest, None


class _TooDeep(Exception):
    pass


def _visible(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return for_document(value) if first_hidden(value) else value
    if depth > _HINT_DEPTH:
        raise _TooDeep
    if isinstance(value, dict):
        return {_visible(k, depth + 1): _visible(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_visible(v, depth + 1) for v in value]
    return value


def unescape(text: str) -> str:
    """Undo the status renderer's Markdown escapes (`&lt;think>`, `\\|` in cells)."""
    return text.replace("&lt;", "<").replace("\\|", "|")


# --- factbook status output -------------------------------------------------------------------


def _parse_generated(text: str, marks: dict[str, str]) -> list[Entry]:
    entries: list[Entry] = []
    headings: dict[int, str] = {}
    label = ""
    header: list[str] = []
    skipping = False
    for number, raw in enumerate(text.split("\n"), start=1):
        if len(entries) > DUMP_MAX_ITEMS:
            raise TooManyItems(entries[DUMP_MAX_ITEMS].line)
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
            room = DUMP_MAX_ITEMS - len(entries)
            group = _generated_group(number, line[2:], path, label, marks, room)
            if group is None:
                group = [_generated_item(number, line[2:], path, label, None, marks)]
            entries += group
        elif numbered and not numbered.group(1):
            entries.append(
                _generated_item(
                    number, numbered.group(3), path, label, int(numbered.group(2)), marks
                )
            )
    if len(entries) > DUMP_MAX_ITEMS:
        raise TooManyItems(entries[DUMP_MAX_ITEMS].line)
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


def plain_mark(text: str, marks: dict[str, str] | None = None) -> Mark | None:
    """A mark written without its item (`✅ msg 3157 llm-two`, `~~refuted~~ msg 4504`, a
    legend's `✓`)."""
    text = text.strip()
    if text.startswith("~~refuted~~"):
        found = _REFUTED_STAMP.match("refuted" + text[len("~~refuted~~") :])
        return Mark("refuted", int(found.group("msg")) if found and found.group("msg") else None)
    for symbol, status in (marks or MARK_SYMBOLS).items():
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
    marked = _marked(body)
    if marked is None:
        return unescape(body), None, ""
    symbol, text, why, stamp = marked
    mark = _stamped(MARK_SYMBOLS[symbol], stamp or "")
    return unescape(text), mark, unescape(why or "")


_SYMBOL = re.compile(r"^(✅|⚠️|❌|◻) ")
_WHY, _STAMP_OPEN, _STAMP_CLOSE = " — *why:* ", " *(", ")*"


def _marked(body: str) -> tuple[str, str, str | None, str | None] | None:
    """(symbol, text, why, stamp) as `_MARKED` matches them, found with `str.find`: the
    regex's lazy text steps through the line one character at a time (30 µs a line). Its
    text ends at the first place where the rest is ` — *why:* …` (which always matches,
    the why running to the end if need be), a stamp ` *(…)*` closing the line, or the end;
    the why ends likewise at the first stamp or the end."""
    found = _SYMBOL.match(body)
    if found is None or "\n" in body:
        return None if found is None else _regex_marked(body)
    rest = body[found.end() :]
    stamp_at = _stamp_start(rest, 0)
    why_at = rest.find(_WHY)
    if why_at < 0 or why_at > stamp_at:
        stamp = rest[stamp_at + 3 : -2] if stamp_at < len(rest) else None
        return found.group(1), rest[:stamp_at], None, stamp
    start = why_at + len(_WHY)
    stamp_at = _stamp_start(rest, start)
    stamp = rest[stamp_at + 3 : -2] if stamp_at < len(rest) else None
    return found.group(1), rest[:why_at], rest[start:stamp_at], stamp


def _stamp_start(text: str, start: int) -> int:
    """Where the first ` *(…)*` that runs to the end of `text` starts at or after `start`
    (the first ` *(` is the one, if any is: it leaves the longest stamp); else len(text)."""
    if not text.endswith(_STAMP_CLOSE):
        return len(text)
    at = text.find(_STAMP_OPEN, start)
    return at if at >= 0 and at + 3 <= len(text) - 2 else len(text)


def _regex_marked(body: str) -> tuple[str, str, str | None, str | None] | None:
    """`_MARKED` itself, for a body with a line break (`.` stops there, `$` does not)."""
    marked = _MARKED.match(body)
    if marked is None:
        return None
    return marked.group("sym"), marked.group("text"), marked.group("why"), marked.group("stamp")


def _generated_item(
    number: int,
    body: str,
    path: list[str],
    label: str,
    index: int | None,
    marks: dict[str, str] | None = None,
) -> Entry:
    body, hint = _split_hint(body)
    # the regex steps through the whole line; only a line ending in ` or ] can match it
    compact_id = _COMPACT_ID.search(body) if body.rstrip().endswith(("`", "]")) else None
    if compact_id and len(body[: compact_id.start()].strip()) <= 2:
        compact_id = None  # `✓ `d2t.pt``: the line is a file, not a fact named by its id
    fact_id = (compact_id.group("a") or compact_id.group("b")) if compact_id else None
    if compact_id:
        body = body[: compact_id.start()].rstrip()
    entry = Entry(number, "numbered" if index else "bullet", "", body, path, index, label)
    entry.hint = hint
    if fact_id:
        entry.fields["id"] = fact_id
    found = _file_line(tuple(marks or MARK_SYMBOLS)).match(body)
    if found and plain_mark(found.group("mark"), marks):
        entry.fields.update(
            {k: unescape(v) for k, v in found.groupdict().items() if v and k != "mark"}
        )
        entry.mark = plain_mark(found.group("mark"), marks)
        entry.text = entry.fields.get("purpose") or entry.fields["path"]
        return entry
    compact = _compact_mark(body, marks or {})
    if compact is not None:
        entry.mark, entry.text = compact
        _compact_tail(entry)
        entry.quote = entry.text if entry.text in body else body
        _compact_file(entry, label)
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


_FLAG_TAIL = re.compile(r"(?<!\s)\s*\((FAILED|BLOCKED)\)$")
_DONE_WHEN_TAIL = re.compile(r"(?<!\s)\s*\(done when: (.*)\)$")


def _compact_tail(entry: Entry) -> None:
    """What a compact line writes after its text: a progress item's state `(FAILED)`, a next
    step's `(done when: …)`, a figure's configuration `[engine=vllm, concurrency=128]`."""
    flag = _FLAG_TAIL.search(entry.text)
    if flag:
        entry.fields["flag"] = flag.group(1).lower()
        entry.text = entry.text[: flag.start()]
    elif said := SAID_STATE.search(entry.text):  # `Testing (failed, 15% acceptance)`
        entry.fields["flag"] = said.group(1).lower()
    done_when = _DONE_WHEN_TAIL.search(entry.text)
    if done_when:
        entry.fields["criterion"] = done_when.group(1).strip()
        entry.text = entry.text[: done_when.start()]
    config = _CONFIG.search(entry.text)
    if config:
        entry.fields["config"] = config.group("kv")
        entry.text = entry.text[: config.start()]


_UNGROUPED = ("goal", "instructions", "progress", "pitfalls")


def _generated_group(
    number: int, body: str, path: list[str], label: str, marks: dict[str, str], room: int
) -> list[Entry] | None:
    """A group line of a compact document (grouped.py), one entry per fact or file, each with
    its id or path, its own mark or the line's; None for any other line. One of more than
    `room` parts is TooManyItems before its parts are read (a million took 10 s and 1 GB)."""
    section = resolve(path)
    if section is None or section.category in _UNGROUPED:
        return None
    symbol, _, rest = body.partition(" ")
    base = symbol[:-1] if symbol not in marks and symbol.endswith("+") else symbol
    if base in MARK_SYMBOLS or base not in marks or not rest:
        return None
    if rest.count("; ") >= room and group_head(rest.strip()):
        raise TooManyItems(number)
    group = read_group(rest.strip(), set(marks) - set(MARK_SYMBOLS))
    if group is None:
        return None
    entries = []
    for part in group.parts:
        entry = Entry(number, "bullet", "", part.text, path, None, label)
        found = _compact_mark(f"{part.symbol or base} {part.text}", marks)
        if found is None:
            return None
        entry.mark, entry.text = found
        _compact_tail(entry)
        if part.path:
            _compact_file(entry, "")
            entry.fields["path"] = part.path
            entry.text = entry.fields.get("purpose") or part.path
        else:
            text = entry.text
            if group.label and not text[:1].isupper():  # the writer dropped the head's words
                entry.text = f"{unescape(group.label)} {text}"  # `count: 8` → `GPU count: 8`
            if part.fact_id:
                entry.fields["id"] = part.fact_id
            elif part.scope:
                entry.fields["scope"] = part.scope
        entries.append(entry)
    return entries


def _compact_mark(body: str, marks: dict[str, str]) -> tuple[Mark, str] | None:
    """`✓ text`, `✓+ text` (new since the last dump), `✗ ~~text~~`, `✗ believed → true`: a
    legend's one-character mark (factbook's own are parsed with their stamps by parse_mark)."""
    symbol, _, rest = body.partition(" ")
    if symbol not in marks and symbol.endswith("+"):
        symbol = symbol[:-1]
    if symbol in MARK_SYMBOLS or symbol not in marks or not rest:
        return None
    status = marks[symbol]
    text = rest.strip()
    if text.startswith("~~") and "~~" in text[2:]:
        text, status = text[2 : text.index("~~", 2)], "refuted"
    elif status == "refuted" and " → " in text:
        text = text.split(" → ", 1)[0]  # what was believed; the rest is what replaced it
    text = _HELD_AT.sub("", text)  # `(held at msg 3478)`
    return Mark(status), unescape(text.strip())


_COMPACT_FILE = re.compile(r"^`(?P<path>[^`]+)`(?: — (?P<purpose>.*?))?(?: \((?P<size>[^()]*)\))?$")
_IN_DIR = re.compile(r"^In `(?P<dir>[^`]+)`$")


def _compact_file(entry: Entry, label: str) -> None:
    """`✓ `path`` under `In `/root/sglang/`:`: a file line of a compact document."""
    found = _COMPACT_FILE.match(entry.text)
    if not found:
        return
    path = found.group("path")
    base = _IN_DIR.match(label)
    if base and not path.startswith(("/", "~")):
        path = base.group("dir").rstrip("/") + "/" + path
    entry.fields["path"] = path
    for key in ("purpose", "size"):
        if found.group(key):
            entry.fields[key] = unescape(found.group(key))
    entry.text = entry.fields.get("purpose") or path


def _generated_row(
    number: int, line: str, path: list[str], header: list[str], cells: list[str]
) -> Entry:
    line, hint = _split_hint(line)
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
