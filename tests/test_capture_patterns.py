"""The import's word patterns behind a lookahead (quickre.starting_with) match exactly what
they matched without it: the lookahead names every character a match can begin with (read
from the pattern's parse), and on every line of the seeds, the test dumps and the bench's
dumps each pattern finds the same spans and groups with and without it. The patterns whose
alternatives were regrouped are compared with their sources before, on lines that reach
every alternative."""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from pathlib import Path

import pytest

import factbook.dumps.capture as capture
from factbook.dumps.capture import classify
from factbook.dumps.capture.quickre import LEAD

REPO = Path(__file__).resolve().parent.parent
_parser = pytest.importorskip("re._parser")  # Python 3.11+: the engine's own parser
_constants = pytest.importorskip("re._constants")


def _made_patterns() -> list[tuple[str, re.Pattern[str]]]:
    found = []
    for info in pkgutil.iter_modules(capture.__path__):
        module = importlib.import_module(f"{capture.__name__}.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern) and value.pattern.startswith(LEAD):
                found.append((f"{info.name}.{name}", value))
    return found


MADE = _made_patterns()


def _split(pattern: re.Pattern[str]) -> tuple[str, str]:
    """(the lookahead's class body, the pattern behind it)."""
    first, _, rest = pattern.pattern[len(LEAD) :].partition("])(?:")
    assert rest.endswith(")")
    return first, rest[:-1]


def _firsts(items) -> tuple[set, bool]:
    """The characters (or categories) a match of the parsed `items` can begin with, and
    whether it can be empty; None for 'any character'."""
    out: set = set()
    for op, av in items:
        chars, empty = _first_of(op, av)
        if chars is None:
            return None, False
        out |= chars
        if not empty:
            return out, False
    return out, True


def _first_of(op, av):
    c = _constants
    if op is c.LITERAL:
        return {chr(av)}, False
    if op is c.IN:
        chars = set()
        for o, a in av:
            if o is c.LITERAL:
                chars.add(chr(a))
            elif o is c.RANGE:
                chars |= {chr(n) for n in range(a[0], a[1] + 1)}
            elif o is c.CATEGORY:
                chars.add(a)
            else:
                return None, False
        return chars, False
    if op in (c.AT, c.ASSERT_NOT, c.ASSERT):  # zero-width
        return set(), True
    if op is c.SUBPATTERN:
        return _firsts(av[-1])
    if op is c.BRANCH:
        chars, empty = set(), False
        for alternative in av[1]:
            more, can = _firsts(alternative)
            if more is None:
                return None, False
            chars |= more
            empty = empty or can
        return chars, empty
    if op in (c.MAX_REPEAT, c.MIN_REPEAT):
        low, _, sub = av
        chars, empty = _firsts(sub)
        return chars, (chars is not None) and (empty or low == 0)
    return None, False


_CATEGORY_SAMPLES = {"CATEGORY_DIGIT": "0٣", "CATEGORY_SPACE": " \t"}


def test_the_patterns_are_found():
    names = {name for name, _ in MADE}
    assert {"classify.MODEL", "checks.FAILURE", "boxes._EXEC", "extract._TOKEN"} <= names


@pytest.mark.parametrize(("name", "pattern"), MADE, ids=[name for name, _ in MADE])
def test_the_lookahead_names_every_first_character(name: str, pattern: re.Pattern[str]):
    first, inner = _split(pattern)
    chars, empty = _firsts(_parser.parse(inner, pattern.flags))
    assert chars is not None and not empty, f"{name}: a match can begin anywhere"
    lead = re.compile(f"[{first}]", pattern.flags)
    for char in chars:
        samples = _CATEGORY_SAMPLES.get(str(char), char)
        for sample in samples:
            assert lead.fullmatch(sample), f"{name}: {sample!r} can begin a match, not in [{first}]"


def _corpus() -> list[str]:
    texts = [path.read_text(encoding="utf-8") for path in sorted((REPO / "seeds").glob("*.txt"))]
    texts += [
        path.read_text(encoding="utf-8") for path in sorted(REPO.glob("tests/data/dumps/*.md"))
    ]
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import import_large
    finally:
        sys.path.remove(str(REPO / "bench"))
    texts += [import_large.large_dump(200_000), import_large.short_dump(20_000)]
    lines = [line for text in texts for line in text.splitlines() if line.strip()]
    return lines + [line.lower() for line in lines[::7]] + [line.upper() for line in lines[::11]]


CORPUS = _corpus()


def _found(pattern: re.Pattern[str], line: str):
    return [(m.span(), m.groups()) for m in pattern.finditer(line)]


@pytest.mark.parametrize(("name", "pattern"), MADE, ids=[name for name, _ in MADE])
def test_the_same_matches_as_without_the_lookahead(name: str, pattern: re.Pattern[str]):
    _, inner = _split(pattern)
    plain = re.compile(inner, pattern.flags)
    hits = 0
    for line in CORPUS:
        found = _found(pattern, line)
        assert found == _found(plain, line), f"{name} on {line!r}"
        hits += bool(found)
    assert hits, f"{name} matches nothing in the corpus: the comparison says nothing"


# the sources before their alternatives were regrouped under one `\b(?:...)\b`
BEFORE = {
    "MODEL": r"\blayers\b|\bexperts?\b|hidden_size|\bparams?\b|parameters|vocab_size"
    r"|\barchitecture\b|\bweights\b|\bcheckpoint\b|safetensors|\bshards?\b|\bquantiz|\bGGUF\b"
    r"|\bMoE\b|\bMLA\b",
    "FIGURE": r"\d(?:[\d,.]*)\s*(?:tok(?:en)?s?/s|req/s|ms\b|TFLOP/s|GB/s)|\bTTFT\b|\bTPOT\b"
    r"|\bITL\b|tokens per (?:step|second)|\bthroughput\b|accept(?:ance)? (?:rate|len(?:gth)?)"
    r"|\bspeeds? up\b|\bfaster\b|\bslower\b",
    "HARDWARE": r"\bGPUs?\b|\bNVIDIA\b|\bAMD (?:Instinct|EPYC|Ryzen)|\bEPYC\b|\bXeon\b"
    r"|\bThreadripper\b|\bCPU\b|\bRAM\b|\bNVLink\b|\bNVSwitch\b|\bNUMA\b|\bPCIe\b|\bHBM\d?e?\b"
    r"|\bNVMe\b|\bRAID\d*\b|\bswap\b|\bdisk\b|\b\d+\s?(?:x|×)\s?[A-Z]{1,3}\d{2,4}\b"
    r"|\b(?:H100|H200|A100|B200|MI\d{3}X?)\b",
}
_WORDS = [
    *("layers", "layer", "experts", "expert", "hidden_size", "params", "param", "parameters"),
    *("vocab_size", "architecture", "weights", "checkpoint", "safetensors", "shards", "shard"),
    *("quantized", "quantization", "GGUF", "MoE", "MLA", "8 tok/s", "82.5 tokens/s", "3 req/s"),
    *("12ms", "1,000 TFLOP/s", "900 GB/s", "TTFT", "TPOT", "ITL", "tokens per step"),
    *("tokens per second", "throughput", "acceptance rate", "accept length", "speeds up"),
    *("speed up", "faster", "slower", "GPU", "GPUs", "NVIDIA", "AMD Instinct", "AMD EPYC"),
    *("AMD Ryzen", "EPYC", "Xeon", "Threadripper", "CPU", "RAM", "NVLink", "NVSwitch", "NUMA"),
    *("PCIe", "HBM", "HBM3", "HBM3e", "NVMe", "RAID", "RAID10", "swap", "disk", "8x H200"),
    *("8 × MI300", "2xA100", "H100", "A100", "B200", "MI300X", "MI250", "AMD"),
]


def _word_lines() -> list[str]:
    lines = []
    for n, word in enumerate(_WORDS):
        after = _WORDS[n + 1] if n + 1 < len(_WORDS) else ""
        lines += [word, f"the {word} here", f"x{word}", f"{word}y", f"{word} {after}", f"-{word}-"]
        lines += [word.lower(), word.upper()]
    return lines


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_regrouped_patterns_match_where_they_did(name: str):
    before = re.compile(BEFORE[name], re.I)
    now = getattr(classify, name)
    hits = 0
    for line in [*CORPUS, *_word_lines()]:
        assert bool(now.search(line)) == bool(before.search(line)), f"{name} on {line!r}"
        hits += bool(before.search(line))
    assert hits > 100


def test_one_pattern_a_role_matches_where_its_words_did():
    """boxes._ROLE_WORDS: a role's words in one alternation, found where any one was."""
    from factbook.dumps.capture.boxes import _ROLE_WORDS, ROLES

    words = {role: said for role, _, said in ROLES}
    lines = [f" {line.lower()} " for line in CORPUS]
    for said in words.values():
        lines += [f" the {w}{s} here " for w in said for s in ("", "s", "x", "-1")]
    for role, pattern in _ROLE_WORDS:
        each = [re.compile(rf"(?<![\w-]){re.escape(w)}s?(?![\w-])") for w in words[role]]
        hits = 0
        for line in lines:
            before = any(p.search(line) for p in each)
            assert bool(pattern.search(line)) == before, f"{role} on {line!r}"
            hits += before
        assert hits, role


def test_a_heading_naming_no_rule_is_known_in_one_search() -> None:
    """sections.classify's first search (any rule at all) answers as the rules in turn do."""
    import random

    from factbook.dumps.capture import sections

    def in_turn(heading: str) -> object:
        text = heading.lower()
        for pattern, section in sections._COMPILED:
            if pattern.search(text):
                return section
        return sections.DISCOVERIES if "discover" in text else None

    words = [
        "next",
        "plan",
        "todo",
        "in",
        "progress",
        "blocked",
        "(failed)",
        "done",
        "complete",
        "pitfall",
        "issues",
        "results",
        "files",
        "paths",
        "tokenizer",
        "draft",
        "model",
        "software",
        "version",
        "hardware",
        "decision",
        "access",
        "goal",
        "context",
        "notes",
        "discoveries",
        "fact",
        "item",
        "value",
        "12",
        "✅",
        "🔄",
        "baseline",
        "benchmark",
        "1.2",
    ]
    rng = random.Random(5)
    for _ in range(20_000):
        heading = " ".join(rng.choice(words) for _ in range(rng.randint(0, 4)))
        heading = heading.replace(" ", "") if rng.random() < 0.3 else heading
        assert sections.classify.__wrapped__(heading) == in_turn(heading), heading


def test_needed_words_are_in_every_match() -> None:
    """quickre.needed_words: each rule's words are in every text its pattern matches (random
    texts made of the rules' own words and their pieces), and a pattern whose parse leaves
    no word to need (a class, an optional part, a case-blind literal) has none."""
    import random

    from factbook.dumps.capture import sections
    from factbook.dumps.capture.quickre import needed_words

    pool = sorted(
        {w for p, _ in sections.RULES for w in re.findall(r"[a-z]+|\S", re.sub(r"\\[a-z]", " ", p))}
    )
    pool += ["to do", "todo", "1.2 next", "results", "versions", "tokenizer", "(failed)", "✅"]
    rng = random.Random(7)
    texts = [" ".join(rng.choice(pool) for _ in range(rng.randint(1, 5))) for _ in range(20_000)]
    for pattern, _ in sections.RULES:
        words = needed_words(pattern)
        assert words, pattern
        compiled, matched = re.compile(pattern), 0
        for text in texts:
            if compiled.search(text):
                matched += 1
                assert any(w in text for w in words), (pattern, text, words)
        assert matched, pattern  # the texts reach every rule
    assert needed_words("[ab]c") is None
    assert needed_words("(?:abc)?d") is None
    assert needed_words("(?i)abc") is None
    assert needed_words("(?i:abcd)ef") == {"ef"}
    assert needed_words("ab|c[de]") is None  # a branch without a word: no word is needed
    assert needed_words(r"x+\bhello(?=!)") == {"hello"}
    assert needed_words("(?:hello){2,}") == {"hello"}
