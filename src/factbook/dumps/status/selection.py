"""Which facts a budgeted dump shows, and how fully: ranks first, then information per character.

Every fact known at the document's moment gets a rank (the first rule that applies wins):

1. the goal;
2. instructions in force (access, tooling rules, "do not" rules);
3. what is broken or open now (a drifted or errored check, work in progress), then the next
   steps in their order;
4. pitfalls that still apply (symptom → fix, with the fact id);
5. the figures that matter now: per metric, the best figure and the best baseline;
6. what changed since the previous dump: refuted assumptions, moved figures, new facts (in
   the first dump, which has none before it: what was accomplished so far);
7. the rest, most recently established first.

Ranks 1-3 go in first, in order, each as its brief line. Everything else competes for the room
that is left: a fact's brief line, or turning a shown line into its full one, is worth the
*new information* it adds (distinctive words, numbers, names and paths not yet in the dump)
per character, times the weight of its rank (RANK_WEIGHTS; rank 7 loses weight with every
milestone of age). So a pitfall or a new finding goes before an old detail of the same
information, and a fact that only repeats what the dump already says is left out (and named
at the end) instead of costing a line. The choice is greedy, best value first; a value only
falls as the dump grows, so values are recomputed lazily.
"""

from __future__ import annotations

import heapq
import re
from typing import Any

from factbook.dumps.status.compact import SECTIONS, Line
from factbook.dumps.status.context import StatusContext
from factbook.dumps.status.grouping import GROUPED_SECTIONS, SOLO_GROUPS
from factbook.knowledge.kb import KnowledgeBase

RANKS = {
    1: "goal",
    2: "instruction in force",
    3: "broken or open now, next step",
    4: "pitfall that applies",
    5: "figure that matters now",
    6: "changed since the previous dump",
    7: "the rest, most recent first",
}
STRICT_RANKS = (1, 2, 3)
# A pitfall that replaced an assumption refuted since the previous dump is also "what was
# believed, what is true": it has the first turn at the pitfalls' claim.
REPLACED = "pitfall that replaced an assumption refuted since"
# What is broken or open now goes in whole (symptom, flags, where the log is): it is what the
# reader picks up first. Next steps stay brief until there is room.
WHOLE_REASONS = ("broken now (check)", "open now", "what open work is about")
RANK_WEIGHTS = {1: 4.0, 2: 3.0, 3: 4.0, 4: 3.0, 5: 3.0, 6: 3.0, 7: 1.0}
AGE_FACTOR = 0.7
PITFALL_SHARE = 0.2  # of the room left after ranks 1-3: first claimed by pitfalls
ITEM_BONUS = 5.0  # showing a fact at all is worth five new names or numbers
# A change since the previous dump is read for what changed (the issue: "what was believed,
# what is true"), not for its name: its full line is worth FULL_BONUS more.
FULL_RANKS = (6,)
FULL_BONUS = 8.0
_TIME_UNITS = {"ms", "s", "us", "µs", "ns", "min", "h"}
_WORD = re.compile(r"[A-Za-z0-9_<][A-Za-z0-9_.+*=<>|\[\]-]*")
_STRONG = re.compile(r"[\d_./=<>*+]|.[A-Z]")
_BARE_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_DIGIT_GROUP = re.compile(r"(?<=\d),(?=\d{3})")
# A number and its unit are one piece, written together or apart: `547GB` = `547 GB`.
_QUANTITY = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?) ?((?:[kmgt]i?b|[kmbt]|ms|us|min|s|h|x|w|tok/s)(?![\w/]))", re.I
)
_STOP = frozenset(
    [
        "this",
        "that",
        "with",
        "from",
        "into",
        "than",
        "then",
        "they",
        "them",
        "their",
        "there",
        "these",
        "those",
        "when",
        "what",
        "which",
        "while",
        "where",
        "have",
        "been",
        "were",
        "will",
        "would",
        "should",
        "could",
        "does",
        "done",
        "only",
        "also",
        "more",
        "most",
        "some",
        "each",
        "every",
        "other",
        "under",
        "over",
        "after",
        "before",
        "about",
        "just",
        "like",
        "used",
        "uses",
        "using",
        "same",
        "very",
        "once",
        "here",
        "both",
        "many",
        "much",
        "such",
        "make",
        "made",
        "runs",
    ]
)


def information(text: str) -> dict[str, float]:
    """The distinctive pieces of a line and what each is worth: a number, a name or a path
    (anything with a digit, `_ . / = < > * +`, or capitals inside: `163586`, `midlayer.*`,
    `NCCL_PROTO=LL`, `SGLang`) counts 1; `name=value` counts its value and the setting's name
    (0.5 for a plain word: what a reader searches for), not the pair again; another word of
    five letters or more counts 0.3. Lower-cased, thousands separators dropped, a number one
    piece with its unit (`547GB` and `547 GB` say the same, `3 TB` not what `3` says).
    A bare number also leaves its neighbours, worth nothing (`128~threads`): what `_covered`
    needs to tell `128 threads` from `VM 128`."""
    found: dict[str, float] = {}
    words = [
        raw.strip(".,;:-/!?")
        for raw in _WORD.findall(_QUANTITY.sub(r"\1\2", _DIGIT_GROUP.sub("", text)))
    ]
    for n, raw in enumerate(words):
        word = raw.lower()
        if _BARE_NUMBER.fullmatch(word):
            for other in (words[n - 1] if n else "", words[n + 1] if n + 1 < len(words) else ""):
                if other:
                    found.setdefault(_pair(word, other.lower()), 0.0)
        if not word or word in _STOP:
            continue
        if _STRONG.search(raw):
            key, eq, value = word.partition("=")
            if eq and key and value:  # `hidden_size=7168`: a setting's name and its value,
                weight = 1.0 if _STRONG.search(key) else 0.5  # not the pair again
                found[key] = max(found.get(key, 0.0), weight)
                found[value] = 1.0  # `CUDA_HOME=/usr/local/cuda-12.8` names the path
            else:
                found[word] = 1.0
        elif len(word) >= 5:
            found.setdefault(word, 0.3)
    return found


def _pair(number: str, neighbour: str) -> str:
    return f"{number}~{neighbour}"


def _number(item_value: Any) -> float | None:
    if isinstance(item_value, bool) or not isinstance(item_value, (int, float)):
        return None
    return float(item_value)


def best_figures(kb: KnowledgeBase, lines: list[Line]) -> set[str]:
    """Per metric, the best current figure (lower is better for times, higher for everything
    else) and the first baseline it is measured against."""
    since = {
        ln.id: kb.milestones[ln.item.fact.since].index
        if ln.item.fact and ln.item.fact.since in kb.milestones
        else -1
        for ln in lines
    }
    by_metric: dict[str, list[Line]] = {}
    for line in lines:
        item = line.item
        fact = item.fact
        if item.category != "benchmarks" or item.refuted or item.status == "stale" or not fact:
            continue
        if _number(fact.value) is None or not item.get("metric"):
            continue
        by_metric.setdefault(str(item.get("metric")), []).append(line)
    best: set[str] = set()
    for group in by_metric.values():
        unit = (group[0].item.fact.unit or "") if group[0].item.fact else ""
        sign = -1.0 if unit.strip() in _TIME_UNITS else 1.0

        def score(line: Line, sign: float = sign) -> float:
            fact = line.item.fact
            return sign * (_number(fact.value if fact else None) or 0.0)

        best.add(max(group, key=score).id)
        baselines = [x for x in group if x.item.fact and "baseline" in x.item.fact.tags]
        if baselines:  # the reference the best is measured against: the first baseline
            best.add(min(baselines, key=lambda x: since[x.id]).id)
    return best


def _recency(kb: KnowledgeBase, line: Line, ctx: StatusContext) -> int:
    """How recently the fact was established: a live result first, then the milestone of its
    `since` or of its latest history entry up to the document's moment."""
    item, fact = line.item, line.item.fact
    if ctx.uses_results and item.mark.when[:2] == "20" and item.mark.kind != "stale":
        return 10**6
    limit = ctx.as_of.index if ctx.as_of else 10**5
    best = -1
    if fact is None:
        return best
    if fact.since in kb.milestones:
        best = kb.milestones[fact.since].index
    for entry in fact.history:
        if entry.at in kb.milestones and kb.milestones[entry.at].index <= limit:
            best = max(best, kb.milestones[entry.at].index)
    return best


def is_open(line: Line) -> bool:
    """Broken or open now: a drifted or errored check, work in progress."""
    return line.item.mark.kind in ("drifted", "error") or line.section == "in_progress"


def _linked_from_open(lines: list[Line]) -> set[str]:
    """Ids that open work links to (the problem a debugging step is about, its pitfall):
    the reader picking the work up needs them with it."""
    return {
        target
        for ln in lines
        if is_open(ln)
        for targets in ln.item.links.values()
        for target in targets
    }


def rank_lines(kb: KnowledgeBase, lines: list[Line], ctx: StatusContext) -> list[Line]:
    """Give every line its rank, reason and order; returns them most important first."""
    best = best_figures(kb, lines)
    refuted = {i.id for i in ctx.changes.refuted}
    moved = {m.after.id for m in ctx.changes.moved}
    changed = {i.id for i in ctx.changes.new} | {i.id for i, _ in ctx.changes.status_changed}
    about_open = _linked_from_open(lines)
    first = ctx.changes.previous is None
    for position, line in enumerate(lines):
        item = line.item
        category = item.category
        recency = _recency(kb, line, ctx)
        rank, reason, order = 7, RANKS[7], (-recency, 0, position)
        if category == "goal" and not item.refuted:
            rank, reason, order = 1, RANKS[1], (position,)
        elif category == "instructions" and not item.refuted and item.status != "stale":
            rank, reason, order = 2, RANKS[2], (position,)
        elif item.mark.kind in ("drifted", "error"):
            rank, reason, order = 3, "broken now (check)", (0, position)
        elif line.section == "in_progress":
            rank, reason, order = 3, "open now", (1, position)
        elif line.id in about_open and not item.refuted and item.status != "stale":
            rank, reason, order = 3, "what open work is about", (1, position)
        elif line.section == "next":
            rank, reason, order = 3, "next step", (2, position)
        elif category == "pitfalls" and not item.refuted and item.status != "stale":
            reason = REPLACED if refuted & set(item.links.get("replaces", ())) else RANKS[4]
            rank, order = 4, (-recency, position)
        elif line.id in best:
            rank, reason, order = 5, RANKS[5], (-recency, position)
            line.with_configuration()
        elif line.id in refuted:
            rank, reason, order = 6, "refuted since the previous dump", (0, 0, position)
        elif line.id in moved:
            rank, reason, order = 6, "figure moved since the previous dump", (1, 0, position)
        elif line.id in changed:
            rank, reason, order = 6, RANKS[6], (2, 0, position)
        elif first and line.section == "accomplished":
            # the first dump has no previous one: what was done so far is what changed
            rank, reason, order = 6, "accomplished so far (first dump)", (2, 0, position)
        line.rank, line.reason, line.order = rank, reason, order
    # ranks 6 and 7 take turns across categories: the first fact of each, then the second...
    turn: dict[tuple[int, Any, str], int] = {}
    for line in sorted(lines, key=lambda x: (x.rank, *x.order)):
        if line.rank in (6, 7):
            key = (line.rank, line.order[0], line.item.category)
            turn[key] = turn.get(key, -1) + 1
            line.order = (line.order[0], turn[key], line.order[2])
    return sorted(lines, key=lambda x: (x.rank, *x.order))


def _heading_costs(line: Line, opened: set[tuple[str, ...]]) -> dict[tuple[str, ...], int]:
    """What showing this line first in its section, group or topic line costs on top of it,
    per heading not yet opened (keyed as _open keys them)."""
    costs = {}
    if (line.section, "") not in opened:
        costs[(line.section, "")] = len(dict(SECTIONS)[line.section]) + 6
    if (line.section, line.group) not in opened and line.group:
        costs[(line.section, line.group)] = len(line.group) + 6
    if line.topic and (line.section, line.group, line.topic) not in opened:
        # `- ✓ HEAD: ` and the newline, less the first `; `
        costs[(line.section, line.group, line.topic)] = len(line.topic) + 5
    return costs


def _open(line: Line) -> set[tuple[str, ...]]:
    return {(line.section, ""), (line.section, line.group), (line.section, line.group, line.topic)}


def _weight(line: Line, newest: int) -> float:
    """The rank's weight; ranks 4 and 7 lose AGE_FACTOR per milestone older than the newest
    (a pitfall learned last is the one most likely to bite the next session)."""
    if line.rank in (4, 7):
        age = newest - (-line.order[0])
        return RANK_WEIGHTS[line.rank] * AGE_FACTOR ** min(max(age, 0), 10)
    return RANK_WEIGHTS.get(line.rank, 1.0)


def _gain(info: dict[str, float], known: set[str]) -> float:
    return sum(info[k] for k in info.keys() - known)


def line_information(lines: list[Line]) -> dict[str, tuple[dict[str, float], dict[str, float]]]:
    """{id: (information of the brief line, of the full line)}; a pitfall's id is left out:
    naming the fact adds nothing a reader did not already have. A file counts its whole path,
    also where the dump shows it relative to the directory its line names."""
    out = {}
    for ln in lines:
        ref = f"`{ln.id}`"
        # a file shown under its directory still tells the reader its whole path
        path = str(ln.item.get("path") or "") if ln.section == "files" else ""
        out[ln.id] = (
            information(f"{path} {ln.brief.replace(ref, '')}"),
            information(f"{path} {ln.full.replace(ref, '')}"),
        )
    return out


Info = dict[str, tuple[dict[str, float], dict[str, float]]]


def choose(lines: list[Line], room: int, info: Info) -> dict[str, bool]:
    """{id: full?} of the lines to show within `room` characters (see the module docstring).
    `lines` come ranked (rank_lines); `info` from line_information."""
    return _Choice(lines, room, info).run()


class _Choice:
    """One run of `choose`: what is chosen, known and opened so far, and the room left.

    Every step is as the plain greedy loop takes it (the same lines, in the same order), but
    found through indexes: rescanning every pitfall per pitfall claimed and every chosen line
    per line shown was quadratic (5,000 facts at 100,000 tokens: 47 s of CPU)."""

    def __init__(self, lines: list[Line], room: int, info: Info) -> None:
        self.lines, self.room, self.info = lines, room, info
        self.chosen: dict[str, bool] = {}
        self.known: set[str] = set()
        self.opened: set[tuple[str, ...]] = set()
        self.by_id = {ln.id: ln for ln in lines}
        recencies = [-ln.order[0] for ln in lines if ln.rank == 7 and ln.order]
        newest = max(recencies, default=0)
        self.weight = {ln.id: _weight(ln, newest) for ln in lines}
        self.sharing: dict[tuple[str, ...], int] = {}  # heading -> facts that may stand under it
        for ln in lines:
            for key in _open(ln):
                self.sharing[key] = self.sharing.get(key, 0) + 1
        self.covers = _Covers(self.by_id, info)

    def run(self) -> dict[str, bool]:
        self.strict()
        self.claim_pitfalls()
        self.greedy()
        return self.chosen

    def take(self, fid: str, full: bool, cost: int) -> dict[str, float]:
        """Show `fid` (full or brief) for `cost` characters; what it says."""
        self.room -= cost
        self.chosen[fid] = full
        self.covers.add(fid, full)
        said = self.info[fid][1 if full else 0]
        self.known |= set(said)
        return said

    def strict(self) -> None:
        """Ranks 1-3 go in first, in order, each as its brief line (or whole, if open now)."""
        for ln in self.lines:
            if ln.rank not in STRICT_RANKS:
                continue
            full = ln.reason in WHOLE_REASONS
            cost = ln.cost(full=full) + sum(_heading_costs(ln, self.opened).values())
            if cost <= self.room:
                self.take(ln.id, full, cost)
                self.opened |= _open(ln)

    def value(self, fid: str, full: bool) -> tuple[float, int, bool]:
        """(worth per character, characters, shown full?): a heading (section, group, a
        topic line's head) is shared by the facts that may stand under it, so each is charged
        its share when judging worth. A fact whose brief line adds nothing the dump holds but
        whose full line does is offered in full at once: a brief line that adds nothing only
        costs room."""
        ln = self.by_id[fid]
        if full:
            cost = judged = ln.cost(full=True) - ln.cost(full=False)
            gain = _gain(self.info[fid][1], self.known)
            if ln.rank in FULL_RANKS and gain >= 1:
                gain += FULL_BONUS
            as_full = True
        else:
            headings = _heading_costs(ln, self.opened)
            shared = sum(c / self.sharing[k] for k, c in headings.items())
            gain = _gain(self.info[fid][0], self.known)
            as_full = gain <= 0
            if as_full:
                gain = _gain(self.info[fid][1], self.known)
            cost = ln.cost(full=as_full) + sum(headings.values())
            judged = ln.cost(full=as_full) + shared
            gain = gain + ITEM_BONUS if gain > 0 else 0.0
        if gain <= 0 or cost <= 0:
            return 0.0, cost, as_full
        return self.weight[fid] * gain / judged, cost, as_full

    def claim_pitfalls(self) -> None:
        """Pitfalls that still apply (rank 4) have the first claim on a share of what is
        left: each is a sentence (symptom ← cause → fix), longer than a figure or a name, so
        on information per character alone a dump of short details would crowd them out.
        Each turn takes the best offer by `_claim_order` that fits (`_Claims`)."""
        claim = int(self.room * PITFALL_SHARE)
        claims = _Claims(self, [ln for ln in self.lines if ln.rank == 4])
        while claim > 0:
            best = claims.best(min(claim, self.room))
            if best is None:
                break
            ln, (_, cost, as_full) = best
            claim -= cost
            said = self.take(ln.id, as_full, cost)
            opened = _open(ln) - self.opened
            self.opened |= opened
            claims.changed(ln.id, said, opened)

    def greedy(self) -> None:
        """Everything else, best value per character first; a value only falls as the dump
        grows (known words), so it is recomputed when its turn comes."""
        heap: list[tuple[float, int, str, bool]] = []
        for n, ln in enumerate(self.lines):
            full = ln.id in self.chosen
            if full or ln.rank not in STRICT_RANKS:
                score = self.value(ln.id, full)[0]
                if score > 0:
                    heap.append((-score, n, ln.id, full))
        heapq.heapify(heap)
        order = {ln.id: n for n, ln in enumerate(self.lines)}
        while heap:
            _, n, fid, full = heapq.heappop(heap)
            if full != (fid in self.chosen) or self.chosen.get(fid):
                continue  # dropped since (covered by a later line), or already full
            score, cost, as_full = self.value(fid, full)
            if score <= 0 or cost > self.room:
                continue
            if heap and score < -heap[0][0]:
                heapq.heappush(heap, (-score, n, fid, full))
                continue
            ln = self.by_id[fid]
            said = self.take(fid, as_full, cost)
            if not full:
                self.opened |= _open(ln)
                if not as_full:
                    follow = self.value(fid, True)[0]
                    if follow > 0:
                        heapq.heappush(heap, (-follow, order[fid], fid, True))
            self.room += self.drop_covered(ln, said)

    def drop_covered(self, shown: Line, said: dict[str, float]) -> int:
        """Drop the lines of `shown`'s group whose words `shown` now all says (`384 routed
        experts` once `384 routed experts top-8` is in): a grouped line should not repeat
        itself. Only facts of grouped groups (not pitfalls, not what ranks 1-3 put in);
        returns the characters freed."""
        if not _grouped(shown):
            return 0
        freed = 0
        for other in self.covers.candidates(shown, said):
            full = self.chosen[other]
            if _covered(self.info[other][1 if full else 0], said):
                freed += self.by_id[other].cost(full=full)
                del self.chosen[other]
                self.covers.remove(other)
        return freed


class _Covers:
    """The chosen lines that a later line of their group may cover, each filed under its
    group and the rarest of its names and numbers: a line covering it says every one of
    them (`_covered`), so only the lines filed under a word the new line says are tried,
    not every chosen line of the group. Only grouped groups' lines are filed: no other line
    is dropped."""

    def __init__(self, by_id: dict[str, Line], info: Info) -> None:
        self.by_id, self.info = by_id, info
        self.seen: dict[str, int] | None = None  # strong word -> lines saying it (when needed)
        self.filed: dict[tuple[str, str, str], dict[str, None]] = {}
        self.where: dict[str, tuple[str, str, str]] = {}

    def add(self, fid: str, full: bool) -> None:
        self.remove(fid)
        ln = self.by_id[fid]
        if ln.rank in STRICT_RANKS or not _grouped(ln):
            return  # never dropped: what ranks 1-3 put in, a line of no grouped group
        strong = _strong(self.info[fid][1 if full else 0])
        if not strong:
            return  # nothing to say again: never covered
        seen = self._seen()
        rarest = min(strong, key=lambda k: (seen.get(k, 0), k))
        key = (ln.section, ln.group, rarest)
        self.filed.setdefault(key, {})[fid] = None
        self.where[fid] = key

    def _seen(self) -> dict[str, int]:
        """How many lines of grouped groups say each strong word (brief and full apart)."""
        if self.seen is None:
            self.seen = {}
            for fid, ln in self.by_id.items():
                if _grouped(ln):
                    for part in self.info[fid]:
                        for key in _strong(part):
                            self.seen[key] = self.seen.get(key, 0) + 1
        return self.seen

    def remove(self, fid: str) -> None:
        key = self.where.pop(fid, None)
        if key is not None:
            del self.filed[key][fid]

    def candidates(self, shown: Line, said: dict[str, float]) -> list[str]:
        """The chosen lines of `shown`'s group, other than it, filed under a word it says."""
        out: list[str] = []
        for word in said:
            filed = self.filed.get((shown.section, shown.group, word))
            if filed:
                out += [fid for fid in filed if fid != shown.id]
        return out


def _grouped(line: Line) -> bool:
    """Whether the line stands in a grouped group, where a line may cover another."""
    return line.section in GROUPED_SECTIONS and line.group not in SOLO_GROUPS


def _strong(part: dict[str, float]) -> list[str]:
    """A line's names, numbers and settings: what `_covered` needs said again."""
    return [k for k, v in part.items() if v >= 0.5]


class _Claims:
    """The pitfalls' offers, best by `_claim_order` first, each kept exact: an offer only
    changes when a word it says becomes known or one of its headings opens, so only those
    are valued again after a claim (each word and heading turns known once: linear)."""

    def __init__(self, choice: _Choice, lines: list[Line]) -> None:
        self.choice = choice
        self.lines = {ln.id: (n, ln) for n, ln in enumerate(lines)}
        self.by_word: dict[str, list[str]] = {}
        self.by_heading: dict[tuple[str, ...], list[str]] = {}
        for ln in lines:
            brief, full = choice.info[ln.id]
            for word in {*brief, *full}:
                self.by_word.setdefault(word, []).append(ln.id)
            for heading in _open(ln):
                self.by_heading.setdefault(heading, []).append(ln.id)
        self.offers: dict[str, tuple[float, int, bool]] = {}
        self.heap: list[tuple[tuple[int, int, float, int], int, str]] = []
        self.stamps: dict[str, int] = {}  # id -> its live entry in the heap
        self.stamp = 0
        for fid in self.lines:
            self.revalue(fid)

    def revalue(self, fid: str) -> None:
        if fid in self.choice.chosen:
            return
        offer = self.offers[fid] = self.choice.value(fid, False)
        position, ln = self.lines[fid]
        flag, learned, score = _claim_order((offer, ln))
        self.stamp += 1
        heapq.heappush(self.heap, ((-flag, -learned, -score, position), self.stamp, fid))
        self.stamps[fid] = self.stamp

    def best(self, limit: int) -> tuple[Line, tuple[float, int, bool]] | None:
        """The best offer worth something that costs at most `limit`, as max(offers,
        key=_claim_order) finds it (the first in rank order of equals). An offer set aside
        here (worth nothing, or too long) stays so until it is valued again: the limit only
        falls."""
        while self.heap:
            _, stamp, fid = self.heap[0]
            if self.stamps.get(fid) != stamp or fid in self.choice.chosen:
                heapq.heappop(self.heap)
                continue
            offer = self.offers[fid]
            if offer[0] > 0 and offer[1] <= limit:
                return self.lines[fid][1], offer
            heapq.heappop(self.heap)
            self.stamps.pop(fid)
        return None

    def changed(self, fid: str, said: dict[str, float], opened: set[tuple[str, ...]]) -> None:
        """`fid` was claimed, saying `said` and opening `opened`: value again the offers
        those touch."""
        self.stamps.pop(fid, None)
        touched: set[str] = set()
        for word in said:
            touched.update(self.by_word.pop(word, ()))
        for heading in opened:
            touched.update(self.by_heading.pop(heading, ()))
        for other in sorted(touched, key=lambda f: self.lines[f][0]):
            self.revalue(other)


def _claim_order(offer: tuple[tuple[float, int, bool], Line]) -> tuple[bool, int, float]:
    """Which pitfall takes the claim next: one that replaced an assumption refuted since the
    previous dump, then the one learned last (the likeliest to bite the next session), then
    the best value per character."""
    (score, _, _), line = offer
    learned = -line.order[0] if line.order else 0
    return line.reason == REPLACED, learned, score


def _covered(part: dict[str, float], by: dict[str, float]) -> bool:
    """Whether a line says nothing `by` does not: every name, number and setting of it is in
    `by`, and at most one plain word is not. A bare number must also stand next to one of
    the words it stands next to in the line (`128 threads` is not said by `VM 128`)."""
    strong = [k for k, v in part.items() if v >= 0.5]
    rest = sum(v for k, v in part.items() if k not in by)
    if not (strong and all(k in by for k in strong) and rest <= 0.3):
        return False
    for number in (k for k in strong if _BARE_NUMBER.fullmatch(k)):
        pairs = [k for k in part if k.startswith(number + "~")]
        if pairs and not any(k in by for k in pairs):
            return False
    return True
