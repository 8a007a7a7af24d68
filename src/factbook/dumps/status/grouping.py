"""Facts that share a topic go on one line, the way the hand-written dumps group them.

The seeds' dumps fit a project into ~9,000 characters because one line carries many values:
`8x RTX PRO 6000 Blackwell (SM120, cc 12.0), 96 GB each / 768 GB, 600 W, no NVLink`. The
structure that allows it is in the facts themselves: ids name their topic (`hw.gpu.count`,
`hw.gpu.memory`: topic `hw.gpu`), titles repeat it (`GPU count`, `GPU power limit`), and
files share their directory. So within one group of the dump (Hardware, Benchmarks, a
machine's files), facts whose ids share a prefix with another fact of that group go on one
line under that prefix, the longest one shared:

    - ✓ GPU `hw.gpu.{count,compute_capability,power_limit}`: count: 8; compute capability:
      12.0; ? power limit: 600 W

The line's head names the topic once (the title words most of its facts start with) and
every fact's id, in the order of the parts (the id prefix once, the rest in braces), so every
fact stays reachable and `factbook import` reads each part back as its own fact. Each fact's
part drops the head's words and a verb left dangling (`Kimi-K2.5 has 61 layers` under
`Kimi-K2.5` reads `61 layers`), and a statement no longer than its title and value stands for
both. Files under a directory shared by two or more of a machine's files go on one line under
it (`./` for the directory itself when it is a fact of its own). Goal, instructions, pitfalls,
refuted assumptions and progress stay one per line: each is a sentence the reader acts on.
"""

from __future__ import annotations

import math
import re

from factbook.dumps.status.compact import REFUTED_GROUP, Line, file_forms
from factbook.dumps.status.kinds import PLURAL
from factbook.dumps.status.render import md

GROUPED_SECTIONS = ("discoveries", "files")
SOLO_GROUPS = ("Known pitfalls", REFUTED_GROUP)
_LEAD = re.compile(r"^(?:(?:has|have|is|are|uses|was|were)\s+)?(?:(?:an?|the)\s+)?", re.I)
_INSTALLED = re.compile(r"\s+(?:is|are) installed$", re.I)
_CLAUSE = re.compile(r" \(|; |: | - | — |, ")
_BRIEF_SLACK = 4  # a statement at most this much longer than title + value replaces both


def _word(word: str) -> str:
    return word.lower().rstrip(",:")


def topic_label(titles: list[str]) -> list[str]:
    """The leading words of a topic's titles: a first word that at least a third of them
    (and two) start with, then each next word that every title starting with those shares,
    each title keeping a word after them: `GPU` for `GPU count`, `GPU model`, `Total VRAM`;
    `Engine` (not `Engine B`) for `Engine A speed`, `Engine B tuned`, `Engine B untuned`."""
    split = [[_word(w) for w in t.split()] for t in titles]
    label: list[str] = []
    while True:
        n = len(label)
        with_label = [w for w in split if w[:n] == label]
        counts: dict[str, int] = {}
        for words in with_label:
            if len(words) > n + 1:
                counts[words[n]] = counts.get(words[n], 0) + 1
        need = max(2, math.ceil(len(titles) / 3)) if not n else len(with_label)
        best = max(counts, key=lambda w: counts[w], default="")
        if not best or counts[best] < need:
            break
        label.append(best)
    originals = next(
        (t.split() for t in titles if [_word(w) for w in t.split()][: len(label)] == label), []
    )
    return [w.rstrip(",:") for w in originals[: len(label)]]


def strip_label(text: str, label: list[str]) -> str:
    """`Kimi-K2.5 has 61 layers` under `Kimi-K2.5` → `61 layers` (also after `The`)."""
    words = text.split(" ")
    lead = 1 if words and words[0].lower() == "the" and len(words) > len(label) + 1 else 0
    for start in dict.fromkeys((0, lead)):
        head = words[start : start + len(label)]
        if (
            label
            and len(words) > start + len(label)
            and [_word(w) for w in head] == [_word(w) for w in label]
        ):
            rest = " ".join(words[start + len(label) :]).lstrip(",: ")
            return _LEAD.sub("", rest, count=1) or rest
    return text


def _statement(text: str) -> str:
    """A statement as a part of a line: no final full stop, no `is installed`."""
    text = text.rstrip()
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1]
    return _INSTALLED.sub("", text)


def _counted(line: Line, label: list[str]) -> str:
    """`64 cores` for a count whose title names what is counted (`CPU cores` under `CPU`):
    a whole number without a unit, a title of at most three words ending in a plural."""
    fact = line.item.fact
    if fact is None or fact.unit or isinstance(fact.value, bool) or not isinstance(fact.value, int):
        return ""
    if line.item.category == "benchmarks":
        return ""
    title = strip_label(line.item.title, label)
    words = title.split()
    last = words[-1].lower() if words else ""
    if not 1 <= len(words) <= 3 or not PLURAL.fullmatch(last):
        return ""
    if words[0].lower() in ("no", "not", "without"):  # `No MTP layers: 0` is not `0 no ...`
        return ""
    if words[0][:1].isupper() and words[0][1:2].islower():
        title = words[0].lower() + title[len(words[0]) :]
    if fact.value == 1 and title.endswith("s") and not title.endswith("ss"):
        title = title[:-1]  # `1 transformer layer`, not `1 transformer layers`
    return md(f"{fact.value} {title}")


def _states_value(clause: str, line: Line) -> bool:
    """Whether a statement's first clause carries the fact's value (thousands ungrouped)."""
    fact = line.item.fact
    if fact is None or fact.value is None or isinstance(fact.value, (bool, dict, list)):
        return False
    plain = clause.replace(",", "")
    return str(fact.value).replace(",", "") in plain


def id_topics(ids: list[str]) -> dict[str, str]:
    """{id: topic}: the longest prefix (whole dot-separated parts, shorter than the id) that
    the id shares with another id of the list; ids sharing none are absent."""
    counts: dict[str, int] = {}
    for fid in ids:
        parts = fid.split(".")
        for n in range(1, len(parts)):
            prefix = ".".join(parts[:n])
            counts[prefix] = counts.get(prefix, 0) + 1
    out: dict[str, str] = {}
    for fid in ids:
        parts = fid.split(".")
        for n in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:n])
            if counts[prefix] >= 2:
                out[fid] = prefix
                break
    return out


def _group_facts(lines: list[Line], ids: bool) -> None:
    """Topics for one group of facts; each part rewritten without the line's head. The head
    is the shared title words (or, without any, the id prefix); with `ids`, followed by every
    fact's id (render_group_line writes them, `prefix` tells it to)."""
    topics = id_topics([ln.id for ln in lines])
    members: dict[str, list[Line]] = {}
    for ln in lines:
        if ln.id in topics:
            members.setdefault(topics[ln.id], []).append(ln)
    for topic, group in members.items():
        label = topic_label([ln.item.title for ln in group])
        named = f"{topic}.*"  # the topic as a pattern: `factbook list 'hw.gpu.*'`
        head = f"{md(' '.join(label))} `{named}`" if label else f"`{named}`"
        for ln in group:
            ln.topic, ln.label = head, md(" ".join(label))
            ln.prefix = topic if ids else ""
            brief = _counted(ln, label) or strip_label(ln.brief, label)
            full = strip_label(_statement(ln.full), label)
            clause = strip_label(_statement(_CLAUSE.split(ln.full, maxsplit=1)[0]), label)
            if len(full) <= len(brief) + _BRIEF_SLACK:
                brief = full
            elif _states_value(clause, ln) and len(clause) <= len(brief) + _BRIEF_SLACK:
                brief = clause
            ln.brief, ln.full = brief, full


def _group_files(lines: list[Line], parents: dict[str, str]) -> None:
    """A machine's files: those in a directory shared by two or more of them (or under a
    listed directory) on one line under it, each by its name relative to it."""
    paths = {ln.id: str(ln.item.get("path") or ln.item.title) for ln in lines}
    folders: dict[str, int] = {}
    for path in paths.values():
        folder = path.rstrip("/").rpartition("/")[0] + "/"
        if len([part for part in folder.split("/") if part]) >= 2:
            folders[folder] = folders.get(folder, 0) + 1
    for ln in lines:
        path = paths[ln.id]
        folder = path.rstrip("/").rpartition("/")[0] + "/"
        if folders.get(folder, 0) >= 2:
            parent = folder
        elif ln.id in parents:
            parent = parents[ln.id]
        else:
            parents.pop(ln.id, None)
            continue
        parents[ln.id] = parent
        ln.topic = f"`{parent}`"
        ln.brief, ln.full = file_forms(ln.item, path[len(parent) :])
    heads = set(parents.values())
    for ln in lines:  # a listed directory heads its own line: its size, its purpose
        own = paths[ln.id].rstrip("/") + "/"
        if own in heads and not ln.topic:
            ln.topic = f"`{own}`"
            ln.brief, ln.full = file_forms(ln.item, "./")


def assign_topics(lines: list[Line], parents: dict[str, str], *, ids: bool = False) -> None:
    """Give the facts of every grouped section their topic line (see the module docstring);
    `parents` ({file id: directory shown}) is updated for the files."""
    groups: dict[tuple[str, str], list[Line]] = {}
    for ln in lines:
        if ln.section in GROUPED_SECTIONS and ln.group not in SOLO_GROUPS:
            groups.setdefault((ln.section, ln.group), []).append(ln)
    for (section, _), members in groups.items():
        if section == "files":
            _group_files(members, parents)
        else:
            _group_facts(members, ids)
