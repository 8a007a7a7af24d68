"""Ranked full-text search over facts, and pitfalls matched to an error message or a log.

An assistant asks in its own words ("which token id really ends a turn?", "server hangs
after loading weights"), so the index is built for words that differ from the fact's:

- terms are words, their light stems ("hangs" -> "hang"), the parts of compounds and ids
  (`tok.im_end.id`, `sgl-kernel`, `LlamaForCausalLMEagle3`), whole compounds and special
  tokens (`<|im_end|>`, `--speculative-eagle-topk`, `2.10.0+cu128`), numbers in one canonical
  form (`90.0` = `90`, `1,536` = `1536`), and adjacent word pairs ("single stream");
- each fact is scored with BM25F over its fields (id, title, tags, value, statement, the
  category's own keys such as symptom / cause / fix, source quotes, the check), weighted by
  how much each field says about the fact;
- a query word the index lacks matches words sharing a long prefix ("quantized" finds
  "quantization"), at a discount;
- the score is scaled by the share of the query's weight the fact covers (a fact matching
  every distinctive word beats one repeating a single word), and by the fact's standing: a
  refuted or stale fact, or one no longer current, ranks below a verified one saying the same.

Everything is precomputed once per knowledge base load (postings per term); a query touches
only the postings of its terms, so a search over 1,000 facts takes about a millisecond.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.model import Fact, Milestone

# field -> weight: what a match there says about the fact
FIELD_WEIGHTS = {
    "id": 2.5,
    "title": 3.0,
    "tags": 1.5,
    "value": 2.0,
    "statement": 1.0,
    "keys": 1.2,  # the category's own keys: symptom, cause, fix, rationale, token, path...
    "quotes": 0.6,
    "check": 0.5,
}
PITFALL_FIELDS = ("title", "keys", "statement", "check")
STATUS_WEIGHT = {"verified": 1.0, "assumed": 0.95, "stale": 0.75, "refuted": 0.5}
PAST_WEIGHT = 0.6  # a fact that no longer holds (it has `until`), shown only when asked "now"
K1, B = 1.2, 0.6
BIGRAM_WEIGHT = 0.6
MAX_QUERY_TERMS = 64
MAX_TEXT_TERMS = 4000

STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does doing done for from had has
    have how i if in into is it its it's me my of on or our should so than that the their
    them then there these they this those to too us was we were what when where which while
    who whom why will with would you your yours about again any all also am get got just
    know let like make need really tell use used using want way one ones out up very""".split()  # noqa: SIM905
)

# words that stand for one another in bring-up notes (general vocabulary, not one knowledge
# base's): a query word also matches the others of its group, at a discount
SYNONYMS = (
    ("hang", "hung", "stuck", "freeze", "deadlock", "idle"),
    ("error", "fail", "failure", "broken", "crash"),
    ("best", "winning", "optimal", "fastest"),
    ("throughput", "tok/s", "speed"),
    ("kill", "stop"),
    ("oom", "memory"),
    ("env", "environment"),
    ("vram", "hbm"),
)
SYNONYM_WEIGHT = 0.5
_ENV_ASSIGNMENT = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+=")
_SPECIAL = re.compile(r"</?\|?[A-Za-z0-9_]+\|?>")
_COMPOUND = re.compile(r"[A-Za-z0-9]+(?:[-_.+/:=,*][A-Za-z0-9]+)*")
_ALNUM = re.compile(r"[A-Za-z]+|[0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_NUMBER = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?")


def stem(word: str) -> str:
    """A light English stem, enough to meet plural and tense ("hangs", "loaded", "tokens")."""
    if len(word) <= 4 or not word.isalpha():
        return word
    for suffix, repl in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", "e")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + repl
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _number(text: str) -> str | None:
    """One spelling per number: 90.0 -> 90, 1,536 -> 1536, 0.50 -> 0.5; None if not one."""
    if not _NUMBER.fullmatch(text):
        return None
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _unwrap_specials(text: str) -> str:
    """`<|im_end|>` -> ` im_end `: its words count too, beside the whole token."""
    return _SPECIAL.sub(lambda m: " " + m.group(0).strip("<|/>") + " ", text)


def words(text: str) -> list[str]:
    """The word terms of a text, in order (stopwords out): what bigrams are built from."""
    out: list[str] = []
    for match in _COMPOUND.finditer(_unwrap_specials(text)):
        raw = match.group(0)
        number = _number(raw)
        if number is not None:
            out.append(number)
            continue
        for part in _CAMEL.findall(raw) if not raw.islower() else _ALNUM.findall(raw):
            low = part.lower()
            if low not in STOPWORDS:
                out.append(stem(low))
    return out


def terms(text: str) -> Counter[str]:
    """Every term of a text with its count: words, compounds, special tokens, word pairs."""
    found: Counter[str] = Counter()
    for special in _SPECIAL.findall(text):
        found[special.lower()] += 1
    for match in _COMPOUND.finditer(_unwrap_specials(text)):
        raw = match.group(0).strip(".,:=*")
        low = raw.lower()
        if _number(raw) is None and any(ch in low for ch in "-_.+/:=,*") and len(low) <= 64:
            found[low] += 1  # the compound as written: sgl-kernel, 2.10.0+cu128, tok/s
        if not raw.islower() and not raw.isupper() and raw.isalnum() and len(raw) <= 64:
            found[low] += 1  # a CamelCase name as one term too
    if _ENV_ASSIGNMENT.search(text):  # NCCL_ALGO=Ring: an environment variable is set
        found.update(("environment", "variable"))
    sequence = words(text)
    found.update(sequence)
    found.update(f"{a} {b}" for a, b in itertools.pairwise(sequence) if a != b)
    return found


def _text(value: Any) -> str:
    """Strings of a YAML value, flattened (lists, mappings: keys and values)."""
    if value is None:
        return ""
    if isinstance(value, dict):
        return " ".join(f"{k} {_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return " ".join(_text(v) for v in value)
    return str(value)


def fact_fields(fact: Fact) -> dict[str, str]:
    """The searchable text of a fact, per field."""
    check = fact.check
    return {
        "id": fact.id,
        "title": fact.title,
        "tags": " ".join(fact.tags),
        "value": f"{_text(fact.value)} {fact.unit or ''}",
        "statement": fact.statement,
        "keys": _text(fact.extra),
        "quotes": " ".join(s.quote or "" for s in fact.sources),
        "check": f"{check.probe} {_text(check.args)}" if check else "",
    }


@dataclass
class Hit:
    """One ranked fact: the score and whether it still holds at the time asked about."""

    fact: Fact
    score: float
    current: bool


@dataclass
class _Doc:
    fact: Fact
    lengths: dict[str, int]


@dataclass
class SearchIndex:
    """Postings of every term over the facts of one knowledge base load."""

    kb: KnowledgeBase
    docs: list[_Doc] = field(default_factory=list)
    postings: dict[str, list[tuple[int, dict[str, int]]]] = field(default_factory=dict)
    average: dict[str, float] = field(default_factory=dict)
    vocabulary: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, kb: KnowledgeBase) -> SearchIndex:
        index = cls(kb)
        per_term: dict[str, dict[int, dict[str, int]]] = {}
        totals: Counter[str] = Counter()
        for number, fact in enumerate(kb.facts.values()):
            lengths: dict[str, int] = {}
            for name, text in fact_fields(fact).items():
                counted = terms(text)
                lengths[name] = sum(counted.values())
                totals[name] += lengths[name]
                for term, count in counted.items():
                    per_term.setdefault(term, {}).setdefault(number, {})[name] = count
            index.docs.append(_Doc(fact, lengths))
        n = max(1, len(index.docs))
        index.average = {name: max(1.0, totals[name] / n) for name in FIELD_WEIGHTS}
        index.postings = {t: list(d.items()) for t, d in per_term.items()}
        index.vocabulary = sorted(t for t in per_term if " " not in t)
        return index

    def idf(self, term: str) -> float:
        df = len(self.postings.get(term, ()))
        n = len(self.docs)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def _expand(self, term: str) -> list[tuple[str, float]]:
        """The term itself (and its synonyms), or words sharing a long prefix with it, each
        with its discount."""
        if term in self.postings:
            return [(term, 1.0)] + [
                (other, SYNONYM_WEIGHT)
                for other in _SYNONYMS.get(term, ())
                if other in self.postings
            ]
        if len(term) < 5 or not term.isalpha():
            return []
        prefix = term[:5]
        start = bisect.bisect_left(self.vocabulary, prefix)
        out = []
        for word in self.vocabulary[start : start + 200]:
            if not word.startswith(prefix):
                break
            shared = len(_common_prefix(term, word))
            similarity = shared / max(len(term), len(word))
            if similarity >= 0.6 and word.isalpha():
                out.append((word, 0.7 * similarity))
        return sorted(out, key=lambda tw: -tw[1])[:4]

    def score(
        self, query: Counter[str], fields: Iterable[str] = FIELD_WEIGHTS
    ) -> dict[int, tuple[float, float]]:
        """{doc number: (BM25F score, weight of the query covered)} for the docs matching."""
        chosen = {name: FIELD_WEIGHTS[name] for name in fields}
        out: dict[int, list[float]] = {}
        for term, qcount in query.items():
            pair = " " in term
            for found, discount in self._expand(term) if not pair else [(term, 1.0)]:
                idf = self.idf(found) * discount * (BIGRAM_WEIGHT if pair else 1.0)
                weight = idf * (1.0 + math.log(qcount))
                for number, per_field in self.postings.get(found, ()):
                    doc = self.docs[number]
                    tf = 0.0
                    for name, count in per_field.items():
                        if name in chosen:
                            norm = 1 - B + B * doc.lengths[name] / self.average[name]
                            tf += chosen[name] * count / norm
                    if tf <= 0:
                        continue
                    entry = out.setdefault(number, [0.0, 0.0])
                    entry[0] += weight * tf / (K1 + tf)
                    if not pair:
                        entry[1] += weight
        return {number: (s, c) for number, (s, c) in out.items()}

    def query_weight(self, query: Counter[str]) -> float:
        """What a fact matching every word of the query would cover (pairs are a bonus)."""
        total = 0.0
        for term, qcount in query.items():
            if " " in term:
                continue
            expanded = self._expand(term)
            best = max((self.idf(t) * d for t, d in expanded), default=0.0)
            total += (best or self.idf(term)) * (1.0 + math.log(qcount))
        return total


_SYNONYMS: dict[str, tuple[str, ...]] = {
    stem(word): tuple(stem(o) for o in group if o != word) for group in SYNONYMS for word in group
}


def _common_prefix(a: str, b: str) -> str:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return a[:n]


def query_terms(text: str, limit: int = MAX_QUERY_TERMS) -> Counter[str]:
    """A query's terms, the first `limit` distinct words kept (with their pairs)."""
    counted = terms(text)
    if len(counted) <= limit:
        return counted
    kept = dict(list(counted.items())[:limit])
    return Counter(kept)


def standing(kb: KnowledgeBase, fact: Fact, as_of: Milestone | None) -> tuple[float, bool]:
    """How much the fact's status and currency weigh in its rank, and whether it is current."""
    status = kb.status_as_of(fact, as_of)
    current = kb.visible(fact, as_of)
    return STATUS_WEIGHT.get(status, 0.9) * (1.0 if current else PAST_WEIGHT), current


def rank(
    index: SearchIndex,
    query: str,
    candidates: Iterable[Fact],
    as_of: Milestone | None,
    limit: int,
) -> list[Hit]:
    """The best `limit` of `candidates` for `query`, best first."""
    wanted = {id(f) for f in candidates}
    asked = query_terms(query)
    total = index.query_weight(asked)
    if not asked or total <= 0:
        return []
    hits = []
    for number, (score, covered) in index.score(asked).items():
        fact = index.docs[number].fact
        if id(fact) not in wanted:
            continue
        weight, current = standing(index.kb, fact, as_of)
        coverage = min(1.0, covered / total)
        hits.append(Hit(fact, score * coverage * coverage * weight, current))
    hits.sort(key=lambda h: (-h.score, h.fact.id))
    return hits[:limit]


def match_pitfalls(
    index: SearchIndex, text: str, pitfalls: list[Fact], as_of: Milestone | None, limit: int
) -> list[Hit]:
    """Pitfalls whose symptom, cause, fix or trigger meets `text` (an error, a log, a command).

    The text is long and mostly noise, so the pitfall side decides: a pitfall scores by the
    BM25F weight of its terms found in the text, scaled by the share of its own distinctive
    symptom/title terms the text contains.
    """
    found = query_terms(text, MAX_TEXT_TERMS)
    present = {t: 1 for t in found}  # a log repeating a line says it once
    scores = index.score(Counter(present), PITFALL_FIELDS)
    wanted = {id(f): f for f in pitfalls}
    hits = []
    for number, (score, _covered) in scores.items():
        fact = index.docs[number].fact
        if id(fact) not in wanted:
            continue
        own = terms(f"{fact.title} {_text(fact.get('symptom'))}")
        distinctive = {t: index.idf(t) for t in own if " " not in t}
        mass = sum(distinctive.values()) or 1.0
        met = sum(w for t, w in distinctive.items() if t in present)
        weight, current = standing(index.kb, fact, as_of)
        hits.append(Hit(fact, score * (0.25 + met / mass) * weight, current))
    hits.sort(key=lambda h: (-h.score, h.fact.id))
    return [h for h in hits if h.score > 0][:limit]
