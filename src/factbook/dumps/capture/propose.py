"""Proposals → a reviewable diff of the fact files; `--write` applies the accepted ones.

Every proposal is applied with writeback's comment-keeping machinery to a scratch copy of
the knowledge base (facts/, milestones.yaml, targets.yaml, checks/), which is then linted:
a proposal that adds a lint problem is set aside with the problem as its reason, and the
rest applied again, so what is shown is exactly what `--write` writes, and it lints clean.
The diff is the scratch files against the real ones. Writing replaces each changed file
atomically, under writeback's per-file lock, and refuses when a file changed since it was
read (nothing is lost to a concurrent edit).

A new fact goes to the file of its category: the one holding most facts of that category,
never a file another command owns (`discovered-*.yaml` is `factbook discover`'s, and
`factbook init` fills `discovered-local.yaml` with this machine's facts), else
`facts/<category>.yaml`. The boxes the accepted facts name that targets.yaml lacks are added
to it (targetfile.py), in the same scratch copy, so lint checks them together.
"""

from __future__ import annotations

import bisect
import difflib
import fnmatch
import itertools
import re
import shutil
import tempfile
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from factbook.dumps.capture.boxes import Boxes
from factbook.dumps.capture.entry import Entry
from factbook.dumps.capture.targetfile import write_targets
from factbook.errors import InputError, Problem
from factbook.knowledge import categories, limits
from factbook.knowledge.kb import FACTS_DIR, TARGETS_FILE, KnowledgeBase, lint_problems
from factbook.knowledge.kbfiles import escapes
from factbook.knowledge.model import Fact, Milestone
from factbook.knowledge.names import inside
from factbook.knowledge.parsememo import transient
from factbook.knowledge.yamlsrc import load_located, unreadable_if_written
from factbook.store.atomic import throwaway_writes, write_text_atomic
from factbook.store.writeback import (
    FACT_FILE_HEADER,
    FactUpdate,
    WritebackError,
    append_facts_to_files,
    file_lock,
    update_facts,
)

COPIED = ("milestones.yaml", "targets.yaml", "checks")
OWNED = ("discovered-*.yaml",)  # fact files other commands write: never an import's
_FACT_IN_PROBLEM = re.compile(r"fact '([^']+)'")


@dataclass
class Proposal:
    """One entry's verdict and, unless unchanged, the edits that record it."""

    pid: str
    verdict: str  # new | changed | contradicted | unchanged
    entry: Entry
    category: str
    how: str = ""  # how the known fact was found: id | key | quote | statement
    fact: dict[str, Any] | None = None  # a fact to add
    old_id: str | None = None
    updates: dict[str, Any] = field(default_factory=dict)  # fields set on the old fact
    source: dict[str, Any] | None = None  # a source appended to the old fact (review.py)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # the review's remarks (target, no check)
    missing: list[str] = field(default_factory=list)  # keys the dump does not state
    file: str = ""  # where the new fact goes, relative to the knowledge base
    repr_bytes: int | None = None  # of `fact` as proposed, counted where it was built

    @property
    def ids(self) -> list[str]:
        return [i for i in ((self.fact or {}).get("id"), self.old_id) if i]

    @property
    def clean(self) -> bool:
        return not self.problems


def changed_edits(
    proposal: Proposal, new: dict[str, Any], old: Fact, milestone: Milestone, kb: KnowledgeBase
) -> None:
    """The old fact ends at the milestone and the new one replaces it; within one milestone
    (the old fact began here) the value is corrected in place instead."""
    began = kb.milestones.get(old.since) if old.since else None
    if began is not None and began.index >= milestone.index:
        proposal.updates = {"value": new.get("value")}
        if new.get("unit") and new.get("unit") != old.unit:
            proposal.updates["unit"] = new["unit"]
        proposal.fact = None
        return
    new["links"] = {"replaces": [old.id]}
    proposal.fact = new
    proposal.updates = {"until": milestone.id, "links": _linked(old, "replaced_by", new["id"])}


def contradicted_edits(
    proposal: Proposal,
    new: dict[str, Any] | None,
    old: Fact,
    milestone: Milestone,
    kb: KnowledgeBase,
    note: str,
    replaced_by: list[str],
) -> None:
    """The old fact is refuted as of the milestone (history keeps what it was before), and
    `replaced_by` the new fact, or the ids a struck-through line names."""
    history = history_with(old, milestone, kb, "refuted", note)
    proposal.updates = {"status": "refuted", "history": history}
    targets = [new["id"]] if new else replaced_by
    links: dict[str, list[str]] = {k: list(v) for k, v in old.links.items()}
    for target in targets:
        links = _linked_map(links, "replaced_by", target)
    if targets:
        proposal.updates["links"] = links
    if new is not None:
        new["links"] = {"replaces": [old.id]}
    proposal.fact = new


def history_with(
    old: Fact, milestone: Milestone, kb: KnowledgeBase, status: str, note: str
) -> list[dict[str, Any]]:
    """The fact's history with `status` from `milestone` on; a fact without history first
    gets its old status from its start, so reading it as of earlier still shows that."""
    history = [
        {"at": h.at, "status": h.status, **({"note": h.note} if h.note else {})}
        for h in old.history
    ]
    if not history:
        first = old.since or next(iter(kb.milestones), milestone.id)
        if first != milestone.id:
            history.append({"at": first, "status": old.status})
    history = [h for h in history if h["at"] != milestone.id]
    history.append({"at": milestone.id, "status": status, **({"note": note} if note else {})})
    return history


def _linked(old: Fact, relation: str, other: str) -> dict[str, list[str]]:
    return _linked_map({k: list(v) for k, v in old.links.items()}, relation, other)


def _linked_map(links: dict[str, list[str]], relation: str, other: str) -> dict[str, list[str]]:
    ids = links.get(relation, [])
    links[relation] = ids if other in ids else [*ids, other]
    return links


def owned(file: str) -> bool:
    """A fact file another command writes (`discover`'s `discovered-*.yaml`)."""
    return any(fnmatch.fnmatchcase(Path(file).name, pattern) for pattern in OWNED)


def fact_file(kb: KnowledgeBase, category: str, root: Path) -> Path:
    """Where a new fact of `category` goes: the file holding most of that category where it
    is the main category, never a file another command owns; else facts/<category>.yaml."""
    by_file: dict[str, Counter[str]] = {}
    for fact in kb.facts.values():
        by_file.setdefault(fact.file, Counter())[fact.category] += 1
    mine = [
        (counts[category], file)
        for file, counts in by_file.items()
        if not owned(file) and counts[category] and counts.most_common(1)[0][0] == category
    ]
    if mine:
        return root / max(mine)[1]
    name = f"{category}.yaml"
    return inside(root / FACTS_DIR, name if not owned(name) else f"imported-{name}")


def _unknown_category(category: object) -> str:
    """Why a new fact is not placed: its category names its file (facts/<category>.yaml),
    and a category such as `../../../home/me/x` (an MCP client's, or a planted proposal's)
    wrote a file there, outside the scratch copy and the knowledge base, before lint ran."""
    return f"unknown category {str(category)[:80]!r} (known: {', '.join(categories.NAMES)})"


_T = TypeVar("_T")
# of the bytes a fact file may hold (limits.YAML_MAX_BYTES) that `spread` fills: a fact's
# YAML block is within 8% of its repr (measured on the bench's dumps), and a file the
# estimate misjudges is refused by the writer, never written past the bound
SPREAD_FILL = 0.85


def spread(
    path: Path,
    items: list[tuple[_T, dict[str, Any]]],
    taken: Callable[[Path], bool] | None = None,
    measured: Callable[[_T], int | None] | None = None,
) -> list[tuple[Path, list[tuple[_T, dict[str, Any]]]]]:
    """A category's new facts over its file and, past what a fact file may hold, over the
    numbered files of its family after it (`software-2.yaml`, `software-3.yaml`, ...), each
    filled to about SPREAD_FILL of the bound: a dump with more facts of one category than
    one file may hold is imported whole instead of refused (`limits`: nothing factbook writes
    may be more than it reads). Files of the family that are already full are passed over,
    and so are the names `taken` says are not the import's to write (not plain files of the
    real knowledge base: a folder, a FIFO, a symlink leaving it). `measured(item)` is the
    repr's bytes of the item's fact when they were counted already (None: count them)."""
    budget = limits.YAML_MAX_BYTES * SPREAD_FILL
    family = itertools.islice(_family(path), _FAMILY_MAX)
    files = (file for file in family if taken is None or not taken(file))
    current = next(files, path)  # none free (a folder that leaves the knowledge base): the
    size, empty = _size(current)  # file named, which the import then refuses to write
    out: list[tuple[Path, list[tuple[_T, dict[str, Any]]]]] = []
    part: list[tuple[_T, dict[str, Any]]] = []
    for item in items:
        cost = _block_bytes(item[1], measured(item[0]) if measured else None)
        while size + cost > budget and (part or size > empty):
            if part:
                out.append((current, part))
                part = []
            current = next(files, None)
            if current is None:  # the family's every name is taken: the rest stay together
                current, size, empty = path, 0, 0
                break
            size, empty = _size(current)
        part.append(item)
        size += cost
    if part:
        out.append((current, part))
    return out


_FAMILY_MAX = 1000  # files of one category's family tried (1 GB of facts)


def _family(path: Path) -> Iterator[Path]:
    """`path`, then the files of its family in order: `software-2.yaml` is of `software.yaml`'s
    family (and `software.yaml` of `software-2.yaml`'s), endlessly."""
    base = re.sub(r"-\d+$", "", path.stem)
    yield path
    for n in itertools.count(1):
        file = path.with_name(f"{base}.yaml" if n == 1 else f"{base}-{n}.yaml")
        if file != path:
            yield file


def _size(path: Path) -> tuple[int, int]:
    """(the file's bytes, or a new file's header; the bytes of a file holding no fact yet)."""
    header = len(FACT_FILE_HEADER.encode("utf-8"))
    try:
        return path.stat().st_size, header
    except FileNotFoundError:
        return header, header


def repr_bytes(value: Any) -> int:
    """The UTF-8 bytes of `value`'s repr, from which `spread` estimates a fact's block."""
    text = repr(value)
    return len(text if text.isascii() else text.encode("utf-8"))


def _block_bytes(fact: dict[str, Any], measured: int | None = None) -> int:
    """About the bytes `fact` takes as a YAML block in a fact file, from above: its repr's
    bytes and a tenth. `measured`: those bytes, counted where the fact was built."""
    return int((repr_bytes(fact) if measured is None else measured) * 1.1) + 16


@dataclass
class Applied:
    """The fact files after the accepted proposals, and the diff from the real ones (made
    when first read: `import --quiet` and `--write` alone never show it, and at 1 MB it
    was a twentieth of the import)."""

    texts: dict[Path, str]  # real path → new text (changed or new files only)
    originals: dict[Path, str | None]
    general_problems: list[str]
    names: dict[Path, str] = field(default_factory=dict)  # real path → as the diff names it

    @cached_property
    def diff(self) -> str:
        chunks: list[str] = []
        for real, new in self.texts.items():
            name, old = self.names[real], self.originals[real]
            lines = new.splitlines(keepends=True)
            if old is None:  # a new file: every line added, as difflib writes it
                chunks += _added(lines, f"b/{name}")
                continue
            chunks += difflib.unified_diff(
                old.splitlines(keepends=True), lines, fromfile=f"a/{name}", tofile=f"b/{name}"
            )
        return "".join(chunks)


def _scratch_copy(root: Path, into: Path) -> None:
    """The files an import edits and lints, copied: what the knowledge base may not read
    (a symlink leaving it, a FIFO, a device) is left out, so the copy never reads it either;
    the knowledge base's own lint already names each (the baseline)."""
    skip = _unreadable_in(root)
    shutil.copytree(root / FACTS_DIR, into / FACTS_DIR, ignore=skip)
    for name in COPIED:
        source = root / name
        if skip(str(source.parent), [name]):
            continue
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=skip)
        elif source.exists():
            shutil.copy2(source, into / name)


def _unreadable_in(root: Path) -> Callable[[str, list[str]], set[str]]:
    """copytree's `ignore`: the names in a folder that are not a folder or a regular file
    inside `root` once symlinks are resolved."""

    def skip(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if not _plain(Path(folder) / n, root, folders=True)}

    return skip


def _plain(path: Path, root: Path, *, folders: bool = False) -> bool:
    """Whether `path` is absent, or a regular file (or with `folders`, a folder) inside
    `root` once symlinks are resolved: what an import may read and write."""
    if escapes(path, root) is not None:
        return False
    if not path.exists():
        return not path.is_symlink()  # a dangling link is not absent
    return path.is_file() or (folders and path.is_dir())


def targets_needed(proposals: list[Proposal], boxes: Boxes | None) -> list[str]:
    """The proposed boxes the accepted facts name, with the jump hosts and `via` they need."""
    if boxes is None:
        return []
    # a queue and a set: `list.pop(0)` and `name in list` made a dump of 20,000 boxes'
    # facts quadratic
    wanted = deque(p.fact["target"] for p in proposals if p.fact and p.fact.get("target"))
    out: set[str] = set()
    while wanted:
        name = wanted.popleft()
        box = boxes.get(name)
        if box is None or box.existing or name in out:
            continue
        out.add(name)
        wanted += [*box.jump, *([box.via] if box.via else [])]
    return [b.name for b in boxes.proposed if b.name in out]


def _box_named(scratch: Path, proposed: list[str]) -> Callable[[Problem], str | None]:
    """The proposed box a problem of the scratch copy's targets.yaml is about, if any: the
    one whose entry holds the problem's line, or the one the message quotes by name (a box
    named as a group is found at the group, a jump loop at the box it starts from). Lint
    refuses such a box (a port past 65535, a jump to itself, an option as its user): the
    proposals needing it are set aside, not the whole import, and the box is not written."""
    if not proposed:
        return lambda problem: None
    doc, _ = load_located(scratch / TARGETS_FILE, TARGETS_FILE)
    data = doc.data if isinstance(doc.data, dict) else {}
    starts: list[tuple[int, str | None]] = []  # (line, a proposed box's name or None)
    mine = set(proposed)
    for section in ("targets", "groups"):
        entries = data.get(section)
        for name in entries if isinstance(entries, dict) else ():
            starts.append(
                (doc.line((section, name)), name if section == "targets" and name in mine else None)
            )
    for key in data:
        starts.append((doc.line((key,)), None))
    starts.sort(key=lambda start: start[0])
    lines = [line for line, _ in starts]

    def box(problem: Problem) -> str | None:
        if problem.file != TARGETS_FILE:
            return None
        at = bisect.bisect_right(lines, problem.line) - 1
        if at >= 0 and starts[at][1] is not None:
            return starts[at][1]
        return next((n for n in _QUOTED.findall(problem.message) if n in mine), None)

    return box


_QUOTED = re.compile(r"'([^']+)'")


def _needing(box: str, proposals: list[Proposal], boxes: Boxes | None) -> list[Proposal]:
    """The clean proposals whose fact's box is `box` or reaches it (through a jump host or
    `via`, however long the chain: walked as a queue, not by recursion)."""
    through: dict[str, list[str]] = {}  # a box -> the proposed boxes that go through it
    for found in boxes.proposed if boxes is not None else []:
        for hop in [*found.jump, *([found.via] if found.via else [])]:
            through.setdefault(hop, []).append(found.name)
    reaching, wanted = {box}, deque([box])
    while wanted:
        for name in through.get(wanted.popleft(), []):
            if name not in reaching:
                reaching.add(name)
                wanted.append(name)
    return [p for p in proposals if p.clean and p.fact and p.fact.get("target") in reaching]


def _apply_to(
    scratch: Path, kb: KnowledgeBase, proposals: list[Proposal], boxes: Boxes | None
) -> None:
    needed = targets_needed(proposals, boxes)
    if needed and boxes is not None:
        entries = []
        for name in needed:
            box = boxes.get(name)
            assert box is not None
            comment = f"imported from {Path(boxes.dump).name}:{box.line}" if box.line else ""
            if box.placeholder:
                comment += f"\nplaceholder host ({box.unnamed}): point it at the real box"
            comment += "".join(f"\n{note}" for note in box.notes)
            entries.append((name, box.target(boxes.dump), comment.strip()))
        try:
            write_targets(scratch / TARGETS_FILE, entries)
        except WritebackError as exc:  # a targets.yaml that does not parse, or too large
            missing = set(needed)  # a set: 18,000 facts against a list of 36,000 boxes
            for proposal in proposals:
                if proposal.fact and proposal.fact.get("target") in missing:
                    proposal.problems.append(f"{exc}; its target cannot be added")
    # known facts are edited first, while their files are short: each file is then parsed
    # once at its final size (appending reads the grown file back), not twice
    _update_known(scratch, proposals)
    by_category: dict[Path, list[tuple[Proposal, dict[str, Any]]]] = {}
    where: dict[str, Path] = {}
    for proposal in proposals:
        # one whose target could not be added is not written: its fact would name a target
        # the knowledge base does not have, and lint would refuse what factbook wrote
        if proposal.fact is not None and proposal.clean:
            category = proposal.fact["category"]
            if category not in categories.NAMES:  # it names the file: never a path
                proposal.problems.append(_unknown_category(category))
                continue
            if category not in where:  # fact_file reads every fact: once per category
                where[category] = fact_file(kb, category, scratch)
            by_category.setdefault(where[category], []).append((proposal, proposal.fact))

    def taken(file: Path) -> bool:  # the real knowledge base's file of that name: not ours
        return not _plain(kb.root / file.relative_to(scratch), kb.root)

    by_file: dict[Path, list[tuple[Proposal, dict[str, Any]]]] = {}
    for path, items in by_category.items():
        for file, part in spread(path, items, taken, measured=lambda p: p.repr_bytes):
            by_file.setdefault(file, []).extend(part)
            name = file.relative_to(scratch).as_posix()  # once a file, not once a fact
            for proposal, _ in part:
                proposal.file = name
    batches = [(path, [fact for _, fact in items]) for path, items in by_file.items()]
    for items, refused in zip(by_file.values(), append_facts_to_files(batches), strict=True):
        if refused is not None:
            for proposal, _ in items:
                proposal.problems.append(refused.replace(str(scratch) + "/", ""))


def _update_known(scratch: Path, proposals: list[Proposal]) -> None:
    """Edits of known facts, one read, check and write per file (update_facts): editing
    them one by one re-read the whole file for each, quadratic in a large dump. A second
    proposal editing the same fact is not applied: it names the first, for review."""
    first: dict[str, Proposal] = {}
    updates: list[FactUpdate] = []
    for proposal in proposals:
        if not (proposal.old_id and (proposal.updates or proposal.source)) or proposal.problems:
            continue
        earlier = first.setdefault(proposal.old_id, proposal)
        if earlier is not proposal:
            proposal.problems.append(
                f"{earlier.pid} of this import already edits {proposal.old_id}; "
                "import again after reviewing it"
            )
            continue
        updates.append(
            FactUpdate(proposal.old_id, set_fields=proposal.updates, add_source=proposal.source)
        )
    if not updates:
        return
    try:
        _, refused = update_facts(scratch, updates)
    except (WritebackError, InputError) as exc:
        refused = [f"{u.fact_id}: {exc}" for u in updates]
    for line in refused:
        fact_id, _, why = line.partition(": ")
        if fact_id in first:
            first[fact_id].problems.append(why.replace(str(scratch) + "/", ""))


def apply(
    root: Path,
    kb: KnowledgeBase,
    proposals: list[Proposal],
    baseline: list[Any],
    boxes: Boxes | None = None,
) -> Applied:
    """Apply `proposals` to a scratch copy until it lints as clean as the real one was."""
    before = {(p.file, p.message) for p in baseline}
    general: list[str] = []
    if not any(p.clean for p in proposals):  # nothing to apply: no scratch copy, no lint
        return Applied({}, {}, [])
    with (
        tempfile.TemporaryDirectory(prefix="factbook-import-") as tmp,
        throwaway_writes(),
        transient(),
    ):
        scratch = Path(tmp) / "kb"
        for _attempt in range(4):
            if scratch.exists():
                shutil.rmtree(scratch)
            _scratch_copy(root, scratch)
            chosen = [p for p in proposals if p.clean]
            _apply_to(scratch, kb, chosen, boxes)
            problems = lint_problems(scratch)  # a throwaway copy: no cache, no facts kept
            fresh = [p for p in problems if (p.file, p.message) not in before]
            by_id = {i: p for p in chosen for i in p.ids}
            box_of = _box_named(scratch, targets_needed(chosen, boxes))
            blamed = False
            general = []
            for problem in fresh:
                named = _FACT_IN_PROBLEM.search(problem.message)
                owner = by_id.get(named.group(1)) if named else None
                box = box_of(problem) if owner is None else None
                if owner is not None and owner.clean:
                    owner.problems.append(f"lint: {problem.message}")
                    blamed = True
                elif box is not None:
                    why = f"its box '{box}' cannot be added: {problem.message}"
                    for needing in _needing(box, chosen, boxes):
                        needing.problems.append(why)
                        blamed = True
                elif owner is None:
                    general.append(str(problem))
            if not blamed:
                break
        texts: dict[Path, str] = {}
        originals: dict[Path, str | None] = {}
        names: dict[Path, str] = {}
        written = [*sorted((scratch / FACTS_DIR).rglob("*.yaml")), scratch / TARGETS_FILE]
        for path in written:
            if not path.is_file():  # absent, or a folder named *.yaml
                continue
            rel = path.relative_to(scratch)
            real = root / rel
            if not _plain(real, root):  # left out of the copy: never read, never written over
                general.append(f"{rel.as_posix()}: not a file of the knowledge base; not written")
                continue
            new = path.read_bytes()
            old = real.read_bytes() if real.exists() else None
            if new == old:  # unchanged: a file that is not UTF-8 (lint names it) among them
                continue
            try:
                original = None if old is None else old.decode("utf-8")
            except UnicodeDecodeError as exc:  # changed in the copy meanwhile: never written
                line = old.count(b"\n", 0, exc.start) + 1
                general.append(f"{rel.as_posix()}:{line}: not UTF-8; not written")
                continue
            texts[real], originals[real] = new.decode("utf-8"), original
            names[real] = rel.as_posix()
    return Applied(texts, originals, general, names)


def _added(lines: list[str], tofile: str) -> list[str]:
    """`difflib.unified_diff([], lines, fromfile="/dev/null", tofile=tofile)`, without
    matching the lines against nothing first (a new file of a large import: 30,000 lines)."""
    if not lines:
        return []
    count = "1" if len(lines) == 1 else f"1,{len(lines)}"
    return ["--- /dev/null\n", f"+++ {tofile}\n", f"@@ -0,0 +{count} @@\n"] + [
        "+" + line for line in lines
    ]


def _current(path: Path) -> str | None:
    """A file's text as it is now (None: absent); one no longer UTF-8 reads as changed."""
    if not path.exists():
        return None
    return path.read_bytes().decode("utf-8", errors="surrogateescape")


def write(applied: Applied) -> list[Path]:
    """Write the changed fact files, each atomically, refusing any changed since read."""
    for path, original in applied.originals.items():
        if _current(path) != original:
            name = applied.names.get(path, str(path))  # as the knowledge base names it
            raise InputError(f"{name}: changed since it was read; nothing written, run again")
    for path, text in applied.texts.items():  # each one read back by the loader (limits.py)
        problem = unreadable_if_written(text, str(path))
        if problem is not None:
            raise InputError(f"{problem}; nothing written")
    refuse_new_problems(applied.general_problems, applied.names.values())
    written = []
    for path, text in applied.texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(path):
            if _current(path) != applied.originals[path]:
                name = applied.names.get(path, str(path))
                raise InputError(f"{name}: changed since it was read; stopped before writing it")
            write_text_atomic(path, text)
        written.append(path)
    return written


def refuse_new_problems(problems: list[str], files: Iterable[str]) -> None:
    """Refuse the write (one line, exit 2, nothing written) when the scratch copy lints with
    a problem no proposal was set aside for, in a file it would write: the floor under the
    blame of facts and boxes (`apply`). An access line's box lint refuses (port 99999, a
    jump to itself) was written into targets.yaml, and every later command exited 2 on the
    knowledge base factbook had just written (round 26)."""
    written = set(files)
    new = [p for p in problems if p.split(":", 1)[0] in written]
    if new:
        more = f" (and {len(new) - 1} more, listed above)" if len(new) > 1 else ""
        raise InputError(
            f"the import would write {new[0]}{more}, which lint refuses; nothing written "
            "(fix the dump's line, or --accept the proposals that do not need it)"
        )
