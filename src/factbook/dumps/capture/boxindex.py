"""The boxes of a dump looked up by name, by word (a name or alias) and by host.

`find_boxes` compares each access line's box with every box so far (the same name, the same
host?), names it apart from all of them, looks up its jump hosts; `bind` asks which box the
dump works on. Each was a scan of every box, per line: quadratic in a dump of thousands of
access lines (20,000 to the MB). Boxes are only ever added, and a box's name and role never
change once added; its host and aliases may grow when another line's box is merged into it
(`refresh`), so lookups find what the scans found: the first box, in the order added.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, Protocol, TypeVar


class _Box(Protocol):
    """What the index reads of a box (boxes.Box)."""

    name: str
    role: str
    host: str | None
    aliases: set[str]


Box = TypeVar("Box", bound=_Box)


class BoxIndex(Generic[Box]):
    """Where each box stands among the boxes, and the boxes of each name, word and host."""

    def __init__(self) -> None:
        self.at: dict[int, int] = {}  # id(box) -> its place in the order added
        self.by_name: dict[str, list[Box]] = {}
        self.by_role: dict[str, list[Box]] = {}
        self.by_word: dict[str, dict[int, Box]] = {}  # its name lower-cased, its aliases
        self.by_host: dict[str, dict[int, Box]] = {}  # lower-cased
        self.suffix: dict[str, int] = {}  # a name -> the first `-N` not known taken
        self.version = 0  # bumped by every change a cached answer may depend on

    def add(self, box: Box) -> None:
        self.at[id(box)] = len(self.at)
        self.by_name.setdefault(box.name, []).append(box)
        self.by_role.setdefault(box.role, []).append(box)
        self.refresh(box)

    def refresh(self, box: Box) -> None:
        """File `box` under its words and host again (a merge may have added some)."""
        for word in {box.name.lower(), *box.aliases}:
            self.by_word.setdefault(word, {})[id(box)] = box
        if box.host:
            self.by_host.setdefault(box.host.lower(), {})[id(box)] = box
        self.version += 1

    def first(self, boxes: Iterable[Box | None]) -> Box | None:
        """The box added first among `boxes`."""
        found = [b for b in boxes if b is not None]
        return min(found, key=lambda b: self.at[id(b)], default=None)

    def word(self, word: str) -> Box | None:
        """The first box whose lower-cased name or one of whose aliases is `word`."""
        return self.first(self.by_word.get(word, {}).values())

    def host(self, host: str) -> Box | None:
        """The first box with this host, in any case."""
        return self.first(self.by_host.get(host.lower(), {}).values())

    def unique(self, name: str) -> str:
        """`name`, or `name-N` with the least N from 2 that no box has: names are never given
        back, so the search goes on from where the last one for `name` stopped."""
        if name not in self.by_name:
            return name
        n = self.suffix.get(name, 2)
        while f"{name}-{n}" in self.by_name:
            n += 1
        self.suffix[name] = n
        return f"{name}-{n}"
