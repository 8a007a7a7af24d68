"""One import, start to end: read the dump, build, match, decide, apply to a scratch copy.

    result = plan_import(root, Path("dump.md"), "4504")
    print(summary(result)); print(result.applied.diff)
    write(result.applied)          # --write

`accept` limits what is applied to the proposals named (by `p<N>`, or by a fact id the
proposal adds or changes); by default every proposal that lints clean is applied.
"""

from __future__ import annotations

import bisect
import gc
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from factbook.dumps.capture.article import TooManyItems
from factbook.dumps.capture.boxes import Boxes, find_boxes
from factbook.dumps.capture.build import PREFIXES, Built, build, figures_table, id_base, unique_id
from factbook.dumps.capture.checks import known_distributions, version_mentions
from factbook.dumps.capture.classify import place
from factbook.dumps.capture.entry import Entry
from factbook.dumps.capture.extract import Extracted
from factbook.dumps.capture.match import Found, Index, norm, verdict
from factbook.dumps.capture.parse import Document, read_document
from factbook.dumps.capture.propose import (
    Applied,
    Proposal,
    apply,
    changed_edits,
    contradicted_edits,
    repr_bytes,
    targets_needed,
)
from factbook.dumps.capture.secrets import secrets_hidden
from factbook.dumps.capture.sections import Section, resolve
from factbook.dumps.status.redact import redactor_for
from factbook.errors import UsageError
from factbook.knowledge.halves import in_halves
from factbook.knowledge.kb import FACTS_DIR, KnowledgeBase, load_kb_with_problems
from factbook.knowledge.kbfiles import require_inside
from factbook.knowledge.lasting import keep_for_exit
from factbook.knowledge.limits import DUMP_MAX_ITEMS
from factbook.knowledge.model import Milestone
from factbook.knowledge.yamlsrc import sharing

VERDICTS = ("new", "changed", "contradicted", "unchanged")


@dataclass
class ImportResult:
    """Everything one import found and would write."""

    document: Document
    milestone: Milestone
    proposals: list[Proposal]
    unplaced: list[Entry]
    duplicates: int
    applied: Applied
    accepted: list[Proposal] = field(default_factory=list)
    seconds: float = 0.0
    boxes: Boxes | None = None

    def count(self, verdict_name: str) -> int:
        return sum(1 for p in self.proposals if p.verdict == verdict_name)

    @property
    def actionable(self) -> list[Proposal]:
        return [p for p in self.proposals if p.verdict != "unchanged"]


def plan_import(
    root: Path, dump: Path, milestone_id: str, *, accept: list[str] | None = None
) -> ImportResult:
    """Proposals for one dump against the knowledge base at `root`, applied to a scratch copy.

    Each fact file's text is parsed once (yamlsrc.sharing): by the load, by write-back's
    checks of the scratch copy, or by its lint, whichever reads it first."""
    started = time.perf_counter()
    require_inside(Path(root) / FACTS_DIR, FACTS_DIR, root)  # where the facts would be written
    with sharing(), _no_collections():
        kb, baseline = load_kb_with_problems(Path(root))
        milestone = kb.milestone(milestone_id)
        assert milestone is not None
        hider = redactor_for(kb, secrets_only=True)  # redact.yaml's and $FACTBOOK_SECRETS too
        document = read_document(dump, lambda text: secrets_hidden(text, hider))
        boxes = find_boxes(document.entries, kb, document.path)
        proposals, unplaced, duplicates = propose_all(kb, document, milestone, boxes)
        accepted = _accepted(proposals, accept)
        applied = apply(kb.root, kb, accepted, baseline, boxes)
    result = ImportResult(
        document, milestone, proposals, unplaced, duplicates, applied, accepted, boxes=boxes
    )
    result.seconds = time.perf_counter() - started
    keep_for_exit(result)  # under the command line: dropped with the process, not one by one
    return result


@contextmanager
def _no_collections() -> Iterator[None]:
    """Python's cyclic collector runs every 700 new objects and walks the young ones again;
    an import makes millions (entries, proposals, parsed values) that live until it ends.
    Walking them found no garbage worth a walk: at 1 MB the cycles an import leaves (~6 a
    fact: 130,000 objects of 1.5 million) were all still alive at every collection, and a
    threshold of 50,000 still cost 21 walks, 0.15 s. So the collector is off inside (peak
    RSS measured the same: 201 MB), and at the end what was made goes straight to the
    oldest generation (gc.freeze, then gc.unfreeze: two list moves), where the collector's
    next full run frees those cycles; its next young run finds nothing to walk."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:  # nothing frozen by anyone else, to be kept frozen
            gc.freeze()
            gc.unfreeze()
        if was_enabled:
            gc.enable()


def propose_all(
    kb: KnowledgeBase, document: Document, milestone: Milestone, boxes: Boxes | None = None
) -> tuple[list[Proposal], list[Entry], int]:
    """A proposal (with its verdict) for every placed entry; unplaced entries; duplicates."""
    index = Index(kb, milestone)
    taken = set(kb.facts)
    tried: dict[str, int] = {}  # unique_id's search, resumed per base
    seen: set[str] = set()
    proposals: list[Proposal] = []
    unplaced: list[Entry] = []
    duplicates = 0
    known = known_distributions(kb)
    prefixes = {prefix: category for category, prefix in PREFIXES.items()}
    headless = not document.generated and not any(resolve(e.headings) for e in document.entries)
    evaluate = _evaluator(kb, document, milestone, boxes, known, index)

    room = DUMP_MAX_ITEMS  # items still to be read (a version each); work() reads it as it runs

    def work(part: Sequence[Entry]) -> list[_Worked]:
        """Each entry placed (None: no section takes it), split into its versions, and each
        piece's answer: nothing here depends on the entries before it. A run of entries is
        placed, then worked out, while what placing them read is still remembered
        (`version_mentions`' words). Past `room` pieces: TooManyItems (each half of the
        work has the whole room; what both made is counted once they are joined)."""
        seen: set[str] = set()
        out: list[_Worked] = []
        made = 0
        for at in range(0, len(part), _PLACED_RUN):
            run = part[at : at + _PLACED_RUN]
            pieces_of: list[list[Entry] | None] = []
            placed: list[tuple[Entry, Section]] = []
            for entry in run:
                where = resolve(entry.headings)
                section = place(entry, where, headless=headless, prefixes=prefixes)
                pieces = (
                    None if section is None else split_versions(entry, section, known, room - made)
                )
                made += len(pieces or ())
                if made > room:
                    raise TooManyItems(entry.line)
                pieces_of.append(pieces)
                placed += [(piece, section) for piece in pieces or ()]  # type: ignore[misc]
            answers = iter(evaluate(placed, seen))
            out += [
                None
                if pieces is None
                else (None if pieces[0] is entry else pieces, [next(answers) for _ in pieces])
                for entry, pieces in zip(run, pieces_of, strict=True)
            ]
        return out

    # Both cores share the entries. But a dump naming no box binds its first box-bound fact
    # to a placeholder box it makes: the entries up to that one are worked out here, in
    # order, a run at a time, and only the rest (the placeholder in place) in two parts.
    entries = document.entries
    worked: list[_Worked] = []
    at = 0
    try:
        while boxes is not None and not boxes.boxes and at < len(entries):
            worked += work(entries[at : at + _UNTIL_PLACEHOLDER_RUN])
            room = DUMP_MAX_ITEMS - _items(worked)
            at += _UNTIL_PLACEHOLDER_RUN
        worked += in_halves(
            work, entries[at:], least=_PARALLEL_FROM, child_share=_CHILD_SHARE, send=_lightened
        )
        _within_bound(entries, worked)
    except TooManyItems as exc:
        raise exc.refusal(document.path) from None
    for entry, answer in _each_piece(entries, worked, unplaced):
        if answer is None or (answer.early in seen and answer.skippable):
            duplicates += 1  # build would change nothing
            continue
        built, marker, name = answer.built, answer.marker, answer.verdict
        fact = built.fact
        if marker in seen or name is None:
            duplicates += 1  # `factbook status` shows a baseline in two places
            continue
        seen.add(marker)
        found = Found(kb.facts[answer.found_id], answer.how) if answer.found_id else None
        proposal = Proposal(f"p{len(proposals) + 1}", name, entry, fact["category"])
        proposal.problems = list(built.problems)
        proposal.notes, proposal.missing = list(built.notes), list(built.missing)
        proposal.how = found.how if found else ""
        proposals.append(proposal)
        if name == "unchanged":
            continue
        hinted = built.hinted_id
        base = answer.id_base or id_base(fact)
        fact["id"] = hinted if hinted and hinted not in taken else unique_id(base, taken, tried)
        taken.add(fact["id"])
        if name == "new":
            proposal.fact = fact
            # the id's repr replaces the empty one's ('') in the repr counted when built
            proposal.repr_bytes = answer.repr_bytes + repr_bytes(fact["id"]) - 2
            continue
        assert found is not None
        old = found.fact
        proposal.old_id = old.id
        if name == "changed":
            changed_edits(proposal, fact, old, milestone, kb)
        elif fact.get("status") == "refuted":  # a struck-through line: the old fact itself
            mark = entry.mark
            note = (mark.detail if mark else "") or "refuted by the imported dump"
            replaced = [i for i in (mark.replaced_by if mark else []) if i in kb.facts]
            contradicted_edits(proposal, None, old, milestone, kb, note, replaced)
        else:
            note = f"contradicted by: {entry.quote[:120]}"
            contradicted_edits(proposal, fact, old, milestone, kb, note, [])
    return proposals, unplaced, duplicates


_PARALLEL_FROM = 400  # placed entries: fewer are done before a fork would pay for itself
_UNTIL_PLACEHOLDER_RUN = 64  # entries worked out at a time while a placeholder box may come
_PLACED_RUN = 256  # entries placed before they are worked out: well inside what is remembered
# the child's share: it also pays for copying the pages it writes and pickling its answers
# (0.02 s of 0.22 at 1 MB), and the parent for loading them (0.01 s)
_CHILD_SHARE = 0.45


@dataclass
class _Answer:
    """What one placed entry proposes, worked out with no regard to the entries before it."""

    early: str | None  # the duplicate marker known before building (_marker)
    skippable: bool  # whether a seen `early` skips it (not while a placeholder box may come)
    built: Built
    marker: str  # the duplicate marker after building
    verdict: str | None = None  # None: its marker was seen before in its run (a duplicate)
    found_id: str | None = None  # the known fact it matches (an id: the child's are copies)
    how: str = ""
    repr_bytes: int = 0  # a new fact's repr, its id still "" (propose.spread's estimate)
    id_base: str = ""  # the id it gets unless taken (build.id_base)


_NOT_SENT = Extracted()  # what the child sends for an extraction only evaluate reads


# an entry worked out: None when no section takes it, else (its pieces when split into its
# versions, else None: the entry itself, which the parent has; an answer per piece)
_Worked = tuple[list[Entry] | None, list["_Answer | None"]] | None


def _items(worked: list[_Worked]) -> int:
    """The items of entries worked out: an entry split into its versions counts each."""
    return sum(1 if one is None else len(one[1]) for one in worked)


def _within_bound(entries: list[Entry], worked: list[_Worked]) -> None:
    """TooManyItems at the entry whose items pass DUMP_MAX_ITEMS, if any does."""
    if _items(worked) <= DUMP_MAX_ITEMS:
        return
    total = 0
    for entry, one in zip(entries, worked, strict=True):
        total += 1 if one is None else len(one[1])
        if total > DUMP_MAX_ITEMS:
            raise TooManyItems(entry.line)


def _each_piece(
    entries: list[Entry], worked: list[_Worked], unplaced: list[Entry]
) -> Iterator[tuple[Entry, _Answer | None]]:
    """Each placed piece of the dump with its answer, in order; the entries no section
    takes go to `unplaced`."""
    for whole, done in zip(entries, worked, strict=True):
        if done is None:
            unplaced.append(whole)
            continue
        pieces, answers = done
        yield from zip(pieces or [whole], answers, strict=True)


def _lightened(worked: _Worked) -> _Worked:
    """What the child sends of an entry worked out, its answers lightened in place (they are
    the child's own copies, about to be pickled and dropped): without the extraction, which
    only `evaluate` reads, and with repeated texts (notes, short values, a marker known
    early) made one object each, which pickle writes once: a third fewer bytes, 40% less
    time loading them here."""
    for answer in worked[1] if worked is not None else ():
        if answer is None:
            continue
        built = answer.built
        built.extracted = _NOT_SENT
        built.notes = [sys.intern(note) for note in built.notes]
        fact = built.fact
        for key, value in fact.items():
            if type(value) is str and len(value) <= _INTERNED_UP_TO:
                fact[key] = sys.intern(value)
        if answer.early == answer.marker:
            answer.early = answer.marker
    return worked


_INTERNED_UP_TO = 64  # characters: a fact's status, category, target, milestone


def _evaluator(
    kb: KnowledgeBase,
    document: Document,
    milestone: Milestone,
    boxes: Boxes | None,
    known: frozenset[str],
    index: Index,
) -> Callable[[Sequence[tuple[Entry, Section]], set[str]], list[_Answer | None]]:
    """Build, match and judge each placed entry of a run of them; None for one whose marker
    is known before building and is in `seen`, the markers of the part's entries before it
    (a duplicate, not built). The caller decides duplicates again over the whole dump: every
    entry not skipped here has its answer, since what a part has seen the whole dump had
    seen by then too."""

    def evaluate(part: Sequence[tuple[Entry, Section]], seen: set[str]) -> list[_Answer | None]:
        answers: list[_Answer | None] = []
        for entry, section in part:
            said = entry.fields.get("path") or norm(entry.quote)  # `./` names several dirs
            early = _marker(entry, section, said)
            skippable = boxes is None or bool(boxes.boxes)
            if early in seen and skippable:
                answers.append(None)
                continue
            built = build(entry, section, milestone, document.path, kb, boxes, known)
            fact = built.fact
            marker = built.hinted_id or f"{fact['category']}|{said}"
            if marker in seen:  # not matched: a duplicate of the whole dump too
                answers.append(_Answer(early, skippable, built, marker))
                continue
            seen.add(marker)
            compact = document.generated and entry.hint is None
            found = index.find(
                built.hinted_id,
                entry.quote,
                built.extracted.key,
                fact["statement"],
                fact.get("value"),
                title=entry.text if compact else None,
                scope=entry.fields.get("scope") if compact else None,
                target=fact.get("target"),
            )
            name = verdict(
                found, fact, built.extracted.key, entry.text, kb, milestone, compact=compact
            )
            found_id, how = (found.fact.id, found.how) if found else (None, "")
            answer = _Answer(early, skippable, built, marker, name, found_id, how)
            if name == "new":  # its size for `spread`, counted here on both cores
                answer.repr_bytes = repr_bytes(fact)
            if name != "unchanged":  # its id's words, worked out here on both cores too
                answer.id_base = id_base(fact)
            answers.append(answer)
        return answers

    return evaluate


def _marker(entry: Entry, section: Section, said: str) -> str | None:
    """The duplicate marker `build` would give the entry, known before building it: its
    hinted id, else its category and words (a row of a table of figures can change its
    category in build: None). A duplicate is not built; building one only matters for the
    first box bound, a placeholder the dump creates, which the caller checks."""
    hinted = (entry.hint or {}).get("id") or entry.fields.get("id")
    if hinted:
        return str(hinted)
    if entry.kind == "row" and figures_table(entry, section.category):
        return None
    return f"{section.category}|{said}"


_WORD = re.compile(r"[A-Za-z]\w*")


def split_versions(
    entry: Entry, section: Section, known: frozenset[str], room: int = DUMP_MAX_ITEMS
) -> list[Entry]:
    """`flashinfer: 0.6.4, torch: 2.10.0+cu128, CUDA: 12.8` → one entry per version, each
    quoting its own words, so each can carry its check. A line already holding more than
    `room` versions is not read on: TooManyItems."""
    if section.category != "software" or entry.kind == "row" or entry.hint is not None:
        return [entry]
    if _SEPARATOR.search(entry.text) is None:
        return [entry]
    parts: list[str] = []
    for raw in _outside_parentheses(entry.text):
        part = raw.strip()
        if not part:
            continue
        parts.append(part)
        if len(parts) == 2 and not _one_version(parts[0], known):  # a list: its first too
            return [entry]
        if len(parts) >= 2 and not _one_version(part, known):
            return [entry]
        if len(parts) > room:
            raise TooManyItems(entry.line)
    if len(parts) < 2:
        return [entry]
    out = []
    for part in parts:
        piece = replace(entry, text=part, quote=part, fields=dict(entry.fields))
        out.append(piece)
    return out


_SEPARATOR = re.compile(r"[,;]\s+")
_PARENTHESIS = re.compile(r"[()]")
_PARENTHETICAL = re.compile(r"\([^)]*\)")


def _one_version(part: str, known: frozenset[str]) -> bool:
    """Whether `part` of a list is one `name: version` and no sentence."""
    found = version_mentions(part, known)
    if len(found) != 1 or not found[0][2]:
        return False
    name, version, _ = found[0]
    rest = _parentheticals_dropped(part).replace(name, " ").replace(version, " ")
    return len(_WORD.findall(rest)) <= 2  # more: a sentence, not `name: version`


def _outside_parentheses(text: str) -> Iterator[str]:
    """`re.split(r"[,;]\\s+(?![^()]*\\))", text)`: cut at each `, ` or `; ` whose next
    parenthesis is not a `)` (one inside `(a, b)` is not a cut), in linear time: the
    lookahead scanned to the end of the text from every separator, and a line of 60,000
    versions took minutes. The parentheses are found once; each separator looks up the
    first one after it."""
    where = [(m.start(), m.group()) for m in _PARENTHESIS.finditer(text)]
    starts = [at for at, _ in where]
    begin = 0
    for found in _SEPARATOR.finditer(text):
        after = bisect.bisect_left(starts, found.end())
        if after < len(where) and where[after][1] == ")":
            continue
        yield text[begin : found.start()]
        begin = found.end()
    yield text[begin:]


def _parentheticals_dropped(text: str) -> str:
    """`re.sub(r"\\([^)]*\\)", " ", text)` in linear time: an opening parenthesis after the
    last closing one is never matched, and the engine would scan to the end from each."""
    last = text.rfind(")")
    return _PARENTHETICAL.sub(" ", text[: last + 1]) + text[last + 1 :]


def _accepted(proposals: list[Proposal], accept: list[str] | None) -> list[Proposal]:
    actionable = [p for p in proposals if p.verdict != "unchanged"]
    if accept is None:
        return actionable
    wanted = set(accept)
    chosen = [p for p in actionable if p.pid in wanted or wanted & set(p.ids)]
    known = {p.pid for p in actionable} | {i for p in actionable for i in p.ids}
    unknown = sorted(wanted - known)
    if unknown:
        raise UsageError(
            f"--accept {', '.join(unknown)}: no such proposal (see the p<N> list, or use a fact id)"
        )
    return chosen


def counts_line(result: ImportResult) -> str:
    """`115 new, 0 changed, ...; 0 cannot lint clean; ...; 0.21s`."""
    counts = ", ".join(f"{result.count(v)} {v}" for v in VERDICTS)
    unclean = sum(1 for p in result.actionable if not p.clean)
    return (
        f"{counts}; {unclean} cannot lint clean; {len(result.unplaced)} items outside any "
        f"known section; {result.duplicates} duplicates; {result.seconds:.2f}s"
    )


def summary(result: ImportResult) -> str:
    """The review list: one line per proposal that does something (where it goes, and the
    remarks a reviewer needs: its box, why it has no check, what the dump leaves out), the
    targets proposed for targets.yaml, then the counts."""
    lines = [
        f"{result.document.path}: {len(result.document.entries)} items, milestone "
        f"{result.milestone.id}"
        + (" (written by factbook status)" if result.document.generated else "")
    ]
    accepted = {p.pid for p in result.accepted}
    for p in result.actionable:
        target = ", ".join(p.ids)
        state = "" if p.clean else "  [not applied: " + "; ".join(p.problems) + "]"
        if p.clean and p.pid not in accepted:
            state = "  [not accepted]"
        quote = p.entry.quote if len(p.entry.quote) <= 90 else p.entry.quote[:87] + "..."
        where = f" → {p.file}" if p.file else ""
        lines.append(
            f"  {p.pid:>4} {p.verdict:<12} {target} ({p.category}{where}, line {p.entry.line}): "
            f"{quote}{state}"
        )
        lines += [f"{'':>19}{note}" for note in p.notes]
    lines += _targets_review(result)
    lines.append(counts_line(result))
    lines += [f"  lint: {p}" for p in result.applied.general_problems]
    return "\n".join(lines)


def _targets_review(result: ImportResult) -> list[str]:
    if result.boxes is None:
        return []
    needed = targets_needed([p for p in result.accepted if p.clean], result.boxes)
    out = [f"  targets.yaml: {len(needed)} proposed"] if needed else []
    for name in needed:
        box = result.boxes.get(name)
        assert box is not None
        entry = box.target(result.boxes.dump)
        how = (
            " ".join(entry["exec"]) + (f" on {entry['via']}" if "via" in entry else "")
            if "exec" in entry
            else f"ssh {entry.get('user', '') + '@' if entry.get('user') else ''}{entry['host']}"
            + (f" -p {entry['port']}" if "port" in entry else "")
            + (f" via {', '.join(box.jump)}" if box.jump else "")
        )
        flag = "  (placeholder host: point it at the real box)" if box.placeholder else ""
        out.append(f"    + {name}: {how} (line {box.line}){flag}")
        out += [f"      {note}" for note in box.notes]
    return out
