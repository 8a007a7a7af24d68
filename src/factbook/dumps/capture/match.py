"""A proposed fact against what is already known: unchanged, new, changed or contradicted.

A proposal finds its fact, in this order, by:

1. id: the line's hint names it (a document `factbook status` wrote), or, on a compact
   (budgeted) status line, the one fact whose title the line shows, or, on a group line
   whose head names a topic (`hw.gpu.*`), the fact of that topic the part states best;
2. key: the same thing measured (extract.py: the torch version, the GPU count, a benchmark row);
3. quote: a fact quotes the same words of a dump (either quote inside the other);
4. statement: the same sentence, near enough (word overlap, then difflib ratio >= 0.9).

Found with the same value: unchanged, nothing is proposed. Found by key with another value:
changed (the old fact ends at the milestone, `until`, and a new one replaces it), or
contradicted when the dump says the old belief was wrong (`NOT`, `wrong`, `actually`, a
struck-through line): the old fact is refuted and `replaced_by` the new one.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from factbook.dumps.capture.extract import fact_key
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.model import Fact, Milestone

try:  # difflib's own code compiled (Cython): the same blocks and ratios, ~7x faster
    from cydifflib import SequenceMatcher
except ImportError:  # pragma: no cover - an install without it matches as before, slower
    from difflib import SequenceMatcher

SIMILAR = 0.9
# characters of two statements that difflib compares: its ratio is quadratic in them (two
# 88 kB statements, a dump line and a fact's, took 20 s; 2,000 characters ~1.5 ms, 1,000
# ~1 ms at worst). Two statements whose lengths allow a ratio of SIMILAR are within 18% of
# each other, and the longest shipped statement has 518: real ones are compared whole.
COMPARED = 1000
# a word more known statements hold than this finds no candidates for a line (the, box, on),
# and a line is compared with at most CANDIDATES_AT_MOST of them (those holding the most of
# its rarest words); the shipped knowledge base's commonest statement word, 'the', is in
# 200 of its 359 statements
COMMON_WORD = 256
CANDIDATES_AT_MOST = 256
_OVERLAP = 0.6  # words two statements share (Jaccard) before they are compared closely
assert _OVERLAP == 3 / 5  # find's size filter compares in whole numbers: 5 x small < 3 x large
_WORD = re.compile(r"[a-z0-9]+(?:[.,/+-][a-z0-9]+)*")
REFUTING = re.compile(
    r"\b(?:NOT|not|wrong|incorrect|actually|turned out|instead|refuted|mistaken)\b|DO NOT|~~"
)


@functools.lru_cache(maxsize=8192)
def _norm(text: str) -> str:
    # str.split() splits at exactly the characters `\s` matches (str.isspace), and drops
    # them at both ends: `re.sub(r"\s+", " ", text).strip()`, a third of its cost
    return " ".join(text.split()).lower()


def norm(text: str) -> str:
    """Whitespace collapsed, lower case. Remembered: a line's quote and statement are
    normalised several times on their way through an import."""
    return _norm(str(text))


def words(text: str) -> set[str]:
    return set(_WORD.findall(norm(text)))


@dataclass
class Found:
    """The known fact a proposal is about, and how it was found."""

    fact: Fact
    how: str  # id | title | key | quote | statement


class Index:
    """Facts of a knowledge base that hold at a milestone, looked up four ways."""

    def __init__(self, kb: KnowledgeBase, milestone: Milestone | None) -> None:
        self.kb = kb
        self.facts = [f for f in kb.facts.values() if _known(kb, f, milestone)]
        self.quotes: list[tuple[str, Fact]] = []
        self.by_key: dict[tuple[str, ...], list[Fact]] = {}
        self.by_statement: dict[str, Fact] = {}
        self.by_title: dict[str, list[Fact]] = {}
        self.word_sets: list[tuple[set[str], Fact]] = []
        # topic -> its facts with their phrases and words, indexed (_in_scope), on demand
        self.scopes: dict[str, _Topic] = {}
        # word_sets' statements, normalised once, their first COMPARED characters
        self.statements_n: list[str] = []
        self.counts: dict[int, Counter[str]] = {}  # their characters, counted when needed
        self.matchers: dict[int, SequenceMatcher] = {}
        # by_key's facts by box, and their values' indexes (per key and box), on demand
        self.value_indexes: dict[tuple[tuple[str, ...], object], ValueIndex] = {}
        self.key_targets: dict[tuple[str, ...], dict[str | None, list[Fact]]] = {}
        for fact in self.facts:
            for source in fact.sources:
                if source.quote and len(norm(source.quote)) >= 8:
                    self.quotes.append((norm(source.quote), fact))
            key = fact_key(fact)
            if key:
                self.by_key.setdefault(key, []).append(fact)
            self.by_statement.setdefault(norm(fact.statement), fact)
            self.by_title.setdefault(norm(fact.title), []).append(fact)
            self.word_sets.append((words(fact.statement), fact))
            self.statements_n.append(norm(fact.statement)[:COMPARED])
        self._index_quotes()
        self.word_set_sizes = [len(theirs) for theirs, _ in self.word_sets]
        self.by_word: dict[str, list[int]] = {}  # statement word -> word_sets positions
        for n, (theirs, _) in enumerate(self.word_sets):
            for word in theirs:
                self.by_word.setdefault(word, []).append(n)
        self.word_counts = {word: len(ns) for word, ns in self.by_word.items()}

    # Each lookup used to compare an entry with every known fact: an import of N lines into a
    # knowledge base of K facts took N x K steps. The indexes below find the same first match
    # from the few facts that can match at all.
    def _index_quotes(self) -> None:
        """Quotes by token: every token (an entry inside a known quote), and one rare inner
        token each (a known quote inside an entry: its inner tokens are whole tokens there)."""
        self.quote_tokens: dict[str, list[int]] = {}
        for n, (known, _) in enumerate(self.quotes):
            for token in set(known.split(" ")):
                self.quote_tokens.setdefault(token, []).append(n)
        self.quote_keys: dict[str, list[int]] = {}
        self.short_quotes: list[int] = []  # fewer than three tokens: no inner token to key on
        for n, (known, _) in enumerate(self.quotes):
            inner = known.split(" ")[1:-1]
            if not inner:
                self.short_quotes.append(n)
                continue
            key = min(inner, key=lambda t: len(self.quote_tokens[t]))
            self.quote_keys.setdefault(key, []).append(n)
        # the short quotes, which every entry was compared with: whether any of them is
        # inside the entry is asked first, and only those of 20 characters or more can hold it
        self.shorts = [self.quotes[n][0] for n in self.short_quotes]
        # in one text (norm() leaves no \n): an entry inside one of them is one search in C
        self.long_shorts_text = "\n".join(known for known in self.shorts if len(known) >= 20)
        # every quote in one text, for the first holding an entry whose tokens index nothing
        # useful (no inner token, or only common ones): one search in C, not K in Python
        self.all_quotes = "\n".join(known for known, _ in self.quotes)  # norm() leaves no \n
        self.quote_starts: list[int] = []
        at = 0
        for known, _ in self.quotes:
            self.quote_starts.append(at)
            at += len(known) + 1

    def _short_may_match(self, quote_n: str) -> bool:
        """Whether a short quote can match `quote_n` (one inside the other, as `find` asks)."""
        if any(map(quote_n.__contains__, self.shorts)):
            return True
        return len(quote_n) >= 20 and quote_n in self.long_shorts_text

    def _quote_candidates(self, quote_n: str) -> list[int]:
        """Positions in self.quotes that may match `quote_n`, in order: every one a known quote
        inside it can be at, and the first of those it lies inside (what `find` takes)."""
        tokens = quote_n.split(" ")
        found: set[int] = set(self.short_quotes) if self._short_may_match(quote_n) else set()
        keys = self.quote_keys
        for token in set(tokens):
            if token in keys:  # most tokens key no quote: no update with nothing
                found.update(keys[token])
        if len(quote_n) >= 20:  # quote_n inside a known quote: its inner tokens are in it
            inner = tokens[1:-1]
            by_token = self.quote_tokens
            # a token no known quote holds is the rarest (none): nothing to add
            if not all(t in by_token for t in inner):
                return sorted(found)
            if inner:
                rare = min(inner, key=lambda t: len(by_token[t]))
                if len(by_token[rare]) <= CANDIDATES_AT_MOST:
                    found.update(by_token[rare])
                    return sorted(found)
            # no inner token, or only common ones: `find` takes the first candidate that holds
            # the entry, so the first known quote holding it is the one to add (adding every
            # quote, or every quote with a common token, made each such line cost the whole
            # knowledge base: quadratic)
            first = self.all_quotes.find(quote_n)
            if first >= 0:
                found.add(bisect.bisect_right(self.quote_starts, first) - 1)
        return sorted(found)

    def _word_candidates(self, mine: set[str]) -> list[int]:
        """Positions in self.word_sets that may overlap `mine` by 0.6 or more: such a set
        holds at least ceil(0.6 x |mine|) of its words, so at least one of any |mine| - that
        + 1 of them; the rarest ones are taken (prefix filtering). Bounded, so that each line
        costs the same whatever the knowledge base: a word more than COMMON_WORD statements
        hold finds no candidates, and of more than CANDIDATES_AT_MOST candidates those holding
        the most of the words taken are kept (3,500 statements sharing five words with each
        of 3,500 lines were 12 million comparisons: 8 s, quadratic)."""
        need = math.ceil(_OVERLAP * len(mine) - 1e-9)
        # rarest first: a word no statement holds (none; it adds nothing), then by how many
        # hold it (the order sorting all of them by that count gives, ties as in `mine`)
        take = len(mine) - need + 1 - sum(1 for w in mine if w not in self.by_word)
        if take <= 0:
            return []
        counts = self.word_counts
        rarest = sorted([w for w in mine if w in counts], key=counts.__getitem__)[:take]
        lists = [self.by_word[word] for word in rarest if counts[word] <= COMMON_WORD]
        if sum(map(len, lists)) <= CANDIDATES_AT_MOST:
            found: set[int] = set()
            for positions in lists:
                found.update(positions)
            return sorted(found)
        hits: Counter[int] = Counter()
        for positions in lists:
            hits.update(positions)
        return sorted(n for n, _ in hits.most_common(CANDIDATES_AT_MOST))

    def find(
        self,
        hinted_id: str | None,
        quote: str,
        key: tuple[str, ...] | None,
        statement: str,
        value: Any = None,
        title: str | None = None,
        scope: str | None = None,
        target: str | None = None,
    ) -> Found | None:
        """`title`: a compact status line's text, which shows a fact's title (and its value
        after `: `) rather than its statement; `scope`: the topic its group line names."""
        if hinted_id and hinted_id in self.kb.facts:
            return Found(self.kb.facts[hinted_id], "id")
        if not self.facts:  # none known as of the milestone (a new knowledge base's first
            return None  # import): nothing below can match, and its words cost 8 us an entry
        if scope:
            found = self._in_scope(scope, title or statement)
            if found is not None:
                return Found(found, "id")
        if title:
            found = self._by_title(title)
            if found is not None:
                return Found(found, "title")
        if key and key in self.by_key:
            facts, index = self._of_target(key, target)
            same = None if value is None else index.first_same(facts, value)
            return Found(same or facts[0], "key")
        quote_n = norm(quote)
        for n in self._quote_candidates(quote_n):
            known, fact = self.quotes[n]
            if known in quote_n or (len(quote_n) >= 20 and quote_n in known):
                return Found(fact, "quote")
        statement_n = norm(statement)
        if statement_n in self.by_statement:
            return Found(self.by_statement[statement_n], "statement")
        mine = words(statement)
        statement_n = statement_n[:COMPARED]
        best: tuple[float, Fact | None] = (0.0, None)
        mine_counts: Counter[str] | None = None
        size = len(mine)
        sizes = self.word_set_sizes
        for n in self._word_candidates(mine) if mine else []:
            theirs_size = sizes[n]
            if not theirs_size:
                continue
            if 5 * min(size, theirs_size) < 3 * max(size, theirs_size):
                continue  # Jaccard is at most the ratio of the sizes: below 3/5, _OVERLAP
            theirs, fact = self.word_sets[n]
            shared = len(mine & theirs)
            overlap = shared / (size + theirs_size - shared)  # |mine | theirs|, not built
            if overlap < _OVERLAP:
                continue
            # the cheap upper bounds first: a ratio that cannot reach SIMILAR, or beat the
            # best so far, never decides (same answer, a fraction of the comparisons)
            # difflib's own upper bounds (real_quick_ratio, quick_ratio), computed from
            # character counts kept per known statement: a candidate that can neither reach
            # SIMILAR nor beat the best so far is never compared in full
            known_n = self.statements_n[n]
            total = len(statement_n) + len(known_n)
            if _cannot_win(_ratio(min(len(statement_n), len(known_n)), total), best[0]):
                continue
            if mine_counts is None:
                mine_counts = Counter(statement_n)
            common = sum((mine_counts & self._counts(n)).values())
            if _cannot_win(_ratio(common, total), best[0]):
                continue
            ratio = self._matcher(n, statement_n).ratio()
            if ratio > best[0]:
                best = (ratio, fact)
        if best[1] is not None and best[0] >= SIMILAR:
            return Found(best[1], "statement")
        return None

    def _of_target(self, key: tuple[str, ...], target: str | None) -> tuple[list[Fact], ValueIndex]:
        """The facts of `key` on the entry's own box where it has any there (a fleet's
        `torch 2.6.0` on box-b is about box-b's torch, whichever box's fact comes first),
        else all of them; with their values' index (made once per key and box)."""
        by_target = self.key_targets.get(key)
        if by_target is None:
            by_target = self.key_targets[key] = {}
            for fact in self.by_key[key]:
                by_target.setdefault(fact.check_target(), []).append(fact)
        scope = target if target is not None and target in by_target else _ALL
        facts = self.by_key[key] if scope is _ALL else by_target[scope]
        index = self.value_indexes.get((key, scope))
        if index is None:
            index = self.value_indexes[(key, scope)] = ValueIndex([f.value for f in facts])
        return facts, index

    def _in_scope(self, scope: str, text: str) -> Fact | None:
        """The fact under topic `scope` (`hw.gpu` for `hw.gpu.count`) that a group line's part
        states best: the one whose title, a quote or statement is the longest inside the part
        (whole words), else the one sharing the most words with them (at least one)."""
        topic = self.scopes.get(scope)
        if topic is None:  # each fact's phrases and words, once per topic
            prefix = scope + "."
            topic = self.scopes[scope] = _Topic([f for f in self.facts if f.id.startswith(prefix)])
        return topic.best(text)

    def _counts(self, n: int) -> Counter[str]:
        counts = self.counts.get(n)
        if counts is None:
            counts = self.counts[n] = Counter(self.statements_n[n])
        return counts

    def _matcher(self, n: int, statement_n: str) -> SequenceMatcher:
        """A matcher of `statement_n` against known statement `n`: difflib caches what it
        learns about the second sequence, so each known statement's is kept and reused."""
        matcher = self.matchers.get(n)
        if matcher is None:
            matcher = self.matchers[n] = SequenceMatcher(None, "", self.statements_n[n])
        matcher.set_seq1(statement_n)
        return matcher

    def _by_title(self, text: str) -> Fact | None:
        """The one fact whose title is the text, or the text before its last `: value`."""
        text = norm(text)
        for _ in range(_TITLE_TRIES):  # `a: b: c: ...` 100,000 times: a few tries, not all
            if not text:
                return None
            same = self.by_title.get(text, [])
            if len(same) == 1:
                return same[0]
            if text.endswith(")") and " (" in text:  # `title (its value)`
                text = text[: text.rindex(" (")]
                continue
            head, sep, _ = text.rpartition(": ")
            if not sep:
                return None
            text = head
        return None


_TITLE_TRIES = 16


def _ratio(matches: int, length: int) -> float:
    """difflib's ratio formula (`_calculate_ratio`), so bounds compare exactly with it."""
    return 2.0 * matches / length if length else 1.0


def _cannot_win(bound: float, best: float) -> bool:
    """A difflib ratio at most `bound` neither reaches SIMILAR nor beats `best` (strictly, as
    the first of equal ratios wins): skipping it leaves the answer as it was."""
    return bound < SIMILAR or bound <= best


class _Topic:
    """The facts under one topic, indexed by the phrases they say and their words: a part of
    a group line is looked up in them, not compared with each (a budgeted dump's line of
    1,091 parts under a topic of 3,000 facts took 2 s, and a dump of such lines was
    quadratic). `best` answers as that comparison did (tests keep it as the oracle), except
    that a word more than COMMON_WORD of the topic's facts hold selects none of them: a part
    saying nothing but such words (and no whole phrase) matches none."""

    def __init__(self, facts: list[Fact]) -> None:
        self.facts = facts
        self.words: list[set[str]] = []
        self.by_phrase: dict[str, list[int]] = {}  # phrase -> the facts saying it, in order
        self.by_word: dict[str, list[int]] = {}
        for n, fact in enumerate(facts):
            _, phrases, theirs = _said(fact)
            self.words.append(theirs)
            for phrase in dict.fromkeys(phrases):
                self.by_phrase.setdefault(phrase, []).append(n)
            for word in theirs:
                self.by_word.setdefault(word, []).append(n)
        # the lengths (in words) of the phrases: a part's runs of words of those lengths
        self.lengths = sorted({p.count(" ") + 1 for p in self.by_phrase}, reverse=True)

    def best(self, text: str) -> Fact | None:
        tokens = _WORD.findall(norm(text))
        mine = set(tokens)
        inside: dict[int, int] = {}  # fact -> the longest of its phrases inside the part
        runs = sum(max(0, len(tokens) - n + 1) for n in self.lengths)
        if runs <= _RUNS_LOOKED_UP:
            for n in self.lengths:
                for start in range(len(tokens) - n + 1):
                    phrase = " ".join(tokens[start : start + n])
                    for fact in self.by_phrase.get(phrase, ()):
                        inside[fact] = max(inside.get(fact, 0), len(phrase))
        else:  # a part of thousands of words: each phrase looked for in it instead
            said = f" {' '.join(tokens)} "
            for phrase, facts in self.by_phrase.items():
                if f" {phrase} " in said:
                    for fact in facts:
                        inside[fact] = max(inside.get(fact, 0), len(phrase))
        if inside:
            candidates = list(inside)
        else:
            votes: set[int] = set()
            for word in mine:
                facts = self.by_word.get(word, ())
                if len(facts) <= COMMON_WORD:
                    votes.update(facts)
            candidates = list(votes)
        size = max(len(mine), 1)
        best: tuple[int, float, int] = (0, 0.0, -1)
        for n in sorted(candidates):  # in the topic's order: the first of equals wins
            key = (inside.get(n, 0), len(mine & self.words[n]) / size)
            if key > best[:2]:
                best = (*key, n)
        return self.facts[best[2]] if best[2] >= 0 and (best[0] or best[1]) else None


_RUNS_LOOKED_UP = 50_000  # a part's runs of words looked up, past which phrases are sought


def _said(fact: Fact) -> tuple[Fact, list[str], set[str]]:
    """A fact with what it says (title, statement, quotes) as normalised phrases and words."""
    said = [fact.title, fact.statement] + [s.quote for s in fact.sources if s.quote]
    phrases = [p for p in (" ".join(_WORD.findall(norm(s))) for s in said) if p]
    return fact, phrases, set().union(*(words(s) for s in said))


def _known(kb: KnowledgeBase, fact: Fact, milestone: Milestone | None) -> bool:
    """Known and still holding at the milestone: a fact that ended earlier cannot be unchanged
    or changed, and one learned later (or probed today) is not what the dump talks about."""
    return kb.visible(fact, milestone)


def same_value(a: Any, b: Any) -> bool:
    """Equal as a reader would judge: numbers numerically, text ignoring case and spaces."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a)))
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() != b.keys():
        # a table row read back: the header's words, not the fact's keys
        return len(a) == len(b) and all(map(same_value, a.values(), b.values()))
    if isinstance(a, (str, int, float)) and isinstance(b, (str, int, float)):
        return _text_key(a) == _text_key(b)
    return bool(a == b)


_ALL = object()  # _of_target's scope: every box


class ValueIndex:
    """Positions of a list of values by what `same_value` compares, so that a value is
    compared only with those that can equal it, in their order: a superset of the equal
    ones, from same_value's own cases (a bool equals a bool or a number, `True == 1`;
    numbers equal within a tolerance; text, and a number against text, compare as
    `_text_key` does; dicts with dicts; anything else by `==`)."""

    def __init__(self, values: list[Any]) -> None:
        self.texts: dict[str, list[int]] = {}  # _text_key -> strs and numbers
        self.numbers: list[int] = []
        self.bools: list[int] = []
        self.dicts: list[int] = []
        self.others: list[int] = []
        for n, value in enumerate(values):
            if isinstance(value, bool):
                self.bools.append(n)
                continue
            if isinstance(value, (str, int, float)):
                self.texts.setdefault(_text_key(value), []).append(n)
                if not isinstance(value, str):
                    self.numbers.append(n)
            elif isinstance(value, dict):
                self.dicts.append(n)
            else:
                self.others.append(n)

    def candidates(self, value: Any) -> list[int]:
        """The positions whose values may be `same_value` as `value`, in order."""
        if isinstance(value, bool):
            return sorted(self.bools + self.numbers)
        if isinstance(value, (int, float)):
            return sorted({*self.numbers, *self.bools, *self.texts.get(_text_key(value), ())})
        if isinstance(value, str):
            return self.texts.get(_text_key(value), [])
        if isinstance(value, dict):
            return self.dicts
        return self.others

    def first_same(self, facts: list[Fact], value: Any) -> Fact | None:
        """The first of `facts` (the values indexed, in order) that is `same_value` as `value`:
        a fleet's knowledge base holds one fact of a key per box (`torch` on each of 64), and
        an import asks for every line; comparing with each was N x K."""
        same = (facts[n] for n in self.candidates(value) if same_value(value, facts[n].value))
        return next(same, None)


def _text_key(value: str | int | float) -> str:
    """How same_value compares text (and a number against text)."""
    return norm(str(value)).rstrip("%")


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def shows_value(text: str, value: Any) -> bool:
    """Whether a line written by `factbook status --budget` shows this value: every number
    and word of it appears in the line (`22-34 s` shows [22, 34]; `1,536` shows 1536). A
    compact line is read back as unchanged when it does; a value it states otherwise is a
    change."""
    plain = re.sub(r"(?<=\d),(?=\d{3})", "", norm(text).replace("&lt;", "<"))
    for leaf in _leaves(value):
        if leaf is None or isinstance(leaf, bool):
            continue
        if isinstance(leaf, (int, float)):
            forms = {str(leaf)}
            if isinstance(leaf, float) and leaf.is_integer():
                forms.add(str(int(leaf)))
            if not any(re.search(rf"(?<![\d.]){re.escape(f)}(?![\d]|\.\d)", plain) for f in forms):
                return False
        elif norm(str(leaf)) not in plain:
            return False
    return True


def verdict(
    found: Found | None,
    proposed: dict[str, Any],
    key: tuple[str, ...] | None,
    text: str,
    kb: KnowledgeBase,
    milestone: Milestone,
    *,
    compact: bool = False,
) -> str:
    """new | unchanged | changed | contradicted for a proposal and what it found; `compact`:
    a line of a budgeted dump (no hint), which shows a value in its own words."""
    if found is None:
        return "new"
    old = found.fact
    old_status = kb.status_as_of(old, milestone)
    if proposed.get("status") == "refuted":
        return "unchanged" if old_status == "refuted" else "contradicted"
    comparable = found.how == "id" or (key is not None and key == fact_key(old))
    if not comparable or "value" not in proposed or old.value is None:
        return "unchanged"
    if compact and found.how in ("id", "title") and shows_value(text, old.value):
        return "unchanged"
    if same_value(proposed["value"], old.value):
        return "unchanged"
    return "contradicted" if REFUTING.search(text) else "changed"
