"""A group line of a budgeted status dump → one entry per fact it holds.

`factbook status --budget` puts facts that share an id prefix on one line, and files that
share a directory (factbook.dumps.status.grouping):

    - ✓ GPU `hw.gpu.{count,memory}`: count: 8; ? VRAM per GPU: 97887 MiB
    - ✓+ `/data/run/`: `./` (3 TB); `train.log`; ? `ckpt/` — epoch 4 (4.7 GB)

The head names every fact's id in the order of the parts (the prefix once, the last parts in
braces; written with `--ids`), or only their topic (`GPU `hw.gpu.*``: each part is one of
the facts under it, the default), or the directory the paths are relative to (`./`: the
directory itself). Parts are
separated by `; ` (the writer turns one inside a part into `, `);
a part carries its own mark (`?`, `✓+`) where it differs from the line's, which comes first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ID = r"[a-z0-9_]+(?:\.[a-z0-9_-]+)*"
# `hw.gpu.{count,model}` or one id (with a dot: not `uv`), after a label: the text before the
# first backtick less its trailing spaces, read as runs each taken whole (`[^`]*?\s*` tried
# every split of a run of spaces, for each length of the label: 200,000 spaces took 36 s)
_FACT_HEAD = re.compile(
    rf"^(?P<label>(?:\s*+[^`\s]++)*+)\s*+`(?P<ids>{_ID}\.\{{[a-z0-9_.,-]+\}}|{_ID}\.\*|[a-z0-9_]+(?:\.[a-z0-9_-]+)+)`"
    r": (?P<rest>.+)$"
)
_DIR_HEAD = re.compile(r"^`(?P<dir>(?:/|~/)[^`]*/)`: (?P<rest>.+)$")


@dataclass
class Part:
    """One fact of a group line: its id (facts) or path (files), its mark and its text."""

    text: str
    symbol: str = ""  # its own mark, where it differs from the line's; "" = the line's
    new: bool = False
    fact_id: str = ""
    path: str = ""
    scope: str = ""  # a head `hw.gpu.*` names the topic, not each id: the fact is one of it


@dataclass
class Group:
    """A group line read back: the head's label (facts) and its parts."""

    label: str
    parts: list[Part]


def split_parts(text: str) -> list[str]:
    """`a; b (c); d` → [a, b (c), d]: the writer leaves no `; ` inside a part."""
    return [p.strip() for p in text.split("; ") if p.strip()]


def expand_ids(spec: str) -> list[str]:
    """`hw.gpu.{count,memory}` → [hw.gpu.count, hw.gpu.memory]; `hw.gpu.count` → itself."""
    if not spec.endswith("}") or ".{" not in spec:
        return [spec]
    prefix, _, rest = spec[:-1].partition(".{")
    return [f"{prefix}.{last}" for last in rest.split(",") if last]


def _own_mark(part: str, symbols: set[str]) -> tuple[str, bool, str]:
    """(symbol, new, text) of a part that starts with a mark of its own (`? text`, `✓+ x`)."""
    head, sep, rest = part.partition(" ")
    symbol = head[:-1] if head.endswith("+") and len(head) > 1 else head
    if sep and rest and symbol in symbols:
        return symbol, head.endswith("+") and head != symbol, rest.strip()
    return "", False, part


def group_head(body: str) -> bool:
    """Whether `body` begins as a group line's text does (a directory, or ids after a label):
    asked before its parts are read, to know a line of a million parts for what it is."""
    if _DIR_HEAD.match(body):
        return True
    found = _FACT_HEAD.match(body)
    return found is not None and len(found.group("label")) <= 80


def read_group(body: str, symbols: set[str]) -> Group | None:
    """The parts of a group line's text after its mark (`GPU `hw.gpu.{a,b}`: x; y`), or None
    when the text is not a group line. A head naming one id holds one part, or, written by an
    older factbook (`GPU `hw.gpu`: a; b`), parts without ids."""
    found = _DIR_HEAD.match(body)
    if found:
        folder = found.group("dir")
        parts = []
        for raw in split_parts(found.group("rest")):
            symbol, new, text = _own_mark(raw, symbols)
            if not text.startswith("`"):
                return None  # a directory's line holds paths only
            rel = text[1:].split("`", 1)[0]
            path = folder if rel in ("./", ".") else folder + rel
            parts.append(Part(text, symbol, new, path=path))
        return Group("", parts)
    found = _FACT_HEAD.match(body)
    if not found or len(found.group("label")) > 80:
        return None
    raw_parts = split_parts(found.group("rest"))
    spec = found.group("ids")
    if spec.endswith(".*"):
        scope = spec[:-2]
        parts = []
        for raw in raw_parts:
            symbol, new, text = _own_mark(raw, symbols)
            parts.append(Part(text, symbol, new, scope=scope))
        return Group(found.group("label").strip(), parts)
    ids = expand_ids(spec)
    if len(ids) != len(raw_parts):
        if len(ids) > 1:
            return None  # braces that do not match the parts: not a line factbook wrote
        ids = [""] * len(raw_parts)
    parts = []
    for fact_id, raw in zip(ids, raw_parts, strict=True):
        symbol, new, text = _own_mark(raw, symbols)
        parts.append(Part(text, symbol, new, fact_id=fact_id))
    return Group(found.group("label").strip(), parts)
