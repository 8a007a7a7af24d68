"""factbook's version judgement agrees with `packaging` (the reference) on generated pairs.

A seeded generator builds versions with epochs, pre/post/dev releases, local labels and
alternative spellings, and specifiers with every operator (wildcards, `~=`, `===`, several
clauses, stray whitespace), most of them derived from the version so that boundaries are hit.
Every pair where both sides are PEP 440 must be judged by the PEP 440 scheme and agree with
`SpecifierSet.contains`; every specifier packaging accepts must pass factbook's lint.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from itertools import combinations, product
from pathlib import Path
from typing import Any

import pytest
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from factbook.judging.expectations import evaluate, get_path, problems_in
from factbook.judging.versions import (
    LOOSE,
    PEP440,
    Judgement,
    LooseVersion,
    _loose_clauses,
    _loose_satisfies,
    judge,
    parse_specifier,
)
from factbook.knowledge.kb import load_kb

ROOT = Path(__file__).resolve().parents[1]

SEED = 440
PAIRS = 3000

PRE_SPELLINGS = {
    "a": ["a", "alpha", ".a", "-a"],
    "b": ["b", "beta", "-b"],
    "rc": ["rc", "c", "pre"],
}


def _version(rng: random.Random) -> tuple[str, dict[str, bool]]:
    """A PEP 440 version string and the features it uses."""
    feats = {k: False for k in ("epoch", "pre", "post", "dev", "local")}
    text = ""
    if rng.random() < 0.12:
        text += f"{rng.randint(0, 2)}!"
        feats["epoch"] = True
    release = [rng.randint(0, 3) for _ in range(rng.randint(1, 4))]
    text += ".".join(map(str, release))
    if rng.random() < 0.3:
        kind = rng.choice(list(PRE_SPELLINGS))
        text += rng.choice(PRE_SPELLINGS[kind]) + rng.choice(["", "0", "1", "2"])
        feats["pre"] = True
    if rng.random() < 0.2:
        text += rng.choice([".post", ".post1", "-1", ".post2", "post0", ".rev1"])
        feats["post"] = True
    if rng.random() < 0.2:
        text += rng.choice([".dev", ".dev0", ".dev3", "dev1"])
        feats["dev"] = True
    if rng.random() < 0.25:
        text += "+" + rng.choice(["cu128", "abc.5", "local", "g1a2b3c", "1"])
        feats["local"] = True
    if rng.random() < 0.05:
        text = rng.choice(["v", "V"]) + text
    if rng.random() < 0.05:
        text = text.upper()
    return text, feats


def _near(rng: random.Random, base: str) -> str:
    """A version near `base`: itself, without its suffixes, bumped, or a fresh one."""
    parsed = Version(base)
    roll = rng.random()
    if roll < 0.3:
        return base
    if roll < 0.45:
        return parsed.base_version
    if roll < 0.6:
        parts = list(parsed.release)
        i = rng.randrange(len(parts))
        parts[i] = max(0, parts[i] + rng.choice([-1, 1]))
        return ".".join(map(str, parts))
    if roll < 0.7:
        return str(parsed).split("+")[0]
    return _version(rng)[0]


def _clause(rng: random.Random, base: str) -> tuple[str, str]:
    """One clause (operator, text) around `base`; may be invalid PEP 440 on purpose."""
    op = rng.choice(["==", "!=", "<=", ">=", "<", ">", "~=", "===", "==*", "!=*"])
    near = _near(rng, base)
    if op in ("==*", "!=*"):
        release = Version(near).release
        cut = release[: rng.randint(1, len(release))]
        return op[:2], ".".join(map(str, cut)) + ".*"
    if op == "~=":
        parsed = Version(near)
        rel = list(parsed.release) + [0] * (2 - len(parsed.release))
        return op, ".".join(map(str, rel)) + str(parsed).split("+")[0][len(parsed.base_version) :]
    if op == "===":
        return op, rng.choice([base, base.lower(), near, Version(base).public])
    if op in ("<", ">", "<=", ">=") and rng.random() < 0.9:
        near = near.split("+")[0]
    return op, near


def _specifier(rng: random.Random, base: str) -> tuple[str, Counter[str]]:
    n = rng.choice([1, 1, 1, 2, 2, 3])
    clauses = [_clause(rng, base) for _ in range(n)]
    kinds: Counter[str] = Counter()
    parts = []
    for op, text in clauses:
        kinds["wildcard" if text.endswith(".*") else op] += 1
        space = rng.choice(["", "", " "])
        parts.append(f"{op}{space}{text}")
    if n > 1:
        kinds["multi"] += 1
    return rng.choice([",", ", ", " , "]).join(parts), kinds


def _pairs() -> list[tuple[str, str, dict[str, bool], Counter[str]]]:
    rng = random.Random(SEED)
    out = []
    while len(out) < PAIRS:
        version, feats = _version(rng)
        spec, kinds = _specifier(rng, version)
        out.append((version, spec, feats, kinds))
    return out


def _reference(spec: str, version: str) -> bool | None:
    """packaging's verdict, or None when packaging refuses the specifier."""
    try:
        return SpecifierSet(spec).contains(version)
    except InvalidSpecifier:
        return None


def test_generated_pairs_agree_with_packaging() -> None:
    judged, disagreements = Counter[str](), []
    features: Counter[str] = Counter()
    for version, spec, feats, kinds in _pairs():
        want = _reference(spec, version)
        if want is None:
            continue
        assert parse_specifier(spec), spec  # lint accepts what packaging accepts
        got = judge(version, spec)
        if got.scheme != PEP440 or got.passed != want:
            disagreements.append(f"{spec!r} vs {version!r}: {got} (packaging: {want})")
        judged[str(want)] += 1
        features.update(k for k, on in feats.items() if on)
        features.update(kinds)
    assert disagreements == [], f"{len(disagreements)} disagreements:\n" + "\n".join(
        disagreements[:20]
    )
    assert sum(judged.values()) >= 2000, judged
    # The generator must hit both verdicts and every feature, or agreement means little.
    assert min(judged["True"], judged["False"]) >= 400, judged
    for need in ("epoch", "pre", "post", "dev", "local", "wildcard", "~=", "===", "multi"):
        assert features[need] >= 100, (need, features)
    for op in ("==", "!=", "<", ">", "<=", ">="):
        assert features[op] >= 100, (op, features)


NAMED = [
    # The disagreements, on the project's own facts.
    ("==2.10", "2.10.0+cu128", True),
    (">2.10.0", "2.10.0+cu128", False),
    ("<2.11", "2.11rc1", False),
    # Exclusive ordered comparisons.
    (">1.7", "1.7.post1", False),
    (">1.7.post1", "1.7.post2", True),
    ("<2.0", "2.0a1", False),
    ("<2.0a2", "2.0a1", True),
    (">=1.7", "1.7.post1", True),
    # Local versions.
    ("==2.10.0+cu128", "2.10.0+cu128", True),
    ("==2.10.0+cu128", "2.10.0+cu130", False),
    ("!=2.10.0", "2.10.0+cu128", False),
    ("<=2.10.0", "2.10.0+cu128", True),
    # Wildcards.
    ("==2.*", "2.11.0rc1", True),
    ("!=2.*", "2.0", False),
    ("!=2.*", "3.0", True),
    ("==12.8.*", "12.8.93", True),
    ("==1.0.*", "1.0+local", True),
    # Compatible release.
    ("~=2.10", "2.11", True),
    ("~=2.10", "3.0", False),
    ("~=2.10.1", "2.11", False),
    ("~=1.4.5a4", "1.4.5a5", True),
    # Arbitrary equality compares strings, not versions.
    ("===2.10.0+cu128", "2.10.0+cu128", True),
    ("===1.0", "1.0.0", False),
    ("===foobar", "FooBar", True),
    # Epochs and post/dev releases.
    ("==1!1.0", "1.0", False),
    (">=1!0.1", "1!0.1.post1", True),
    ("<1.0", "1!0.5", False),
    (">=1.0.dev0", "1.0a1", True),
    ("<1.0.post1", "1.0.post1.dev2", False),  # a pre-release of the bound itself
    ("<1.0.post1", "1.0.dev2", True),
    # Pre-releases: the observed version is installed, so PEP 440 accepts it.
    (">=0.16.0rc1,<0.17", "0.16.0rc2.dev344+gea5f903f8", True),
    (">=0.16.0", "0.16.0rc2.dev344+gea5f903f8", False),
    (">=2.10", "2.11.0rc1", True),
]


@pytest.mark.parametrize("spec,version,passed", NAMED)
def test_named_cases(spec: str, version: str, passed: bool) -> None:
    assert SpecifierSet(spec).contains(version) is passed  # the reference, as a sanity check
    assert judge(version, spec) == Judgement(passed, PEP440)
    outcome = evaluate({"version": spec}, version)
    assert outcome.passed is passed and f"({PEP440})" in outcome.reason


LOOSE_CASES = [
    # Drivers and dpkg: not PEP 440 on one side, so the loose scheme judges.
    ("==580.95.05-open", "580.95.05-open", True),
    (">=580.9", "580.95.05-open", True),
    ("<580.100", "580.95.05-open", True),
    (">=2.4", "1:2.3-4ubuntu1", True),  # an epoch outranks every release
    ("<1:2.4", "1:2.3-4ubuntu1", True),
    ("==1:2.3-4ubuntu1", "1:2.3-4ubuntu1", True),
    ("==1:2.*", "1:2.3-4ubuntu1", True),
    ("==2.*", "1:2.3-4ubuntu1", False),
    ("~=2.3", "2.3.1-1build2", True),
    ("~=2.3", "3.0-1ubuntu1", False),
    ("!=12.8.*", "12.9-custom", True),
    ("==12.8.*", "12.80-custom", False),
    ("<1.0", "1.0~rc1-1", True),
]


@pytest.mark.parametrize("spec,version,passed", LOOSE_CASES)
def test_loose_scheme_for_drivers_and_dpkg(spec: str, version: str, passed: bool) -> None:
    assert problems_in({"version": spec}) == []
    assert judge(version, spec).scheme == LOOSE
    outcome = evaluate({"version": spec}, version)
    assert outcome.passed is passed and f"({LOOSE})" in outcome.reason, outcome


def _version_specs(expect: Any) -> list[str]:
    if isinstance(expect, dict):
        own = [str(expect["version"])] if "version" in expect else []
        return own + [s for k, v in expect.items() if k != "version" for s in _version_specs(v)]
    if isinstance(expect, list):
        return [s for item in expect for s in _version_specs(item)]
    return []


def test_shipped_facts_agree_with_packaging() -> None:
    """Every version expectation in facts/ against every version observed or named there."""
    kb = load_kb(ROOT)
    specs = sorted(
        {s for f in kb.facts.values() if f.check for s in _version_specs(f.check.expect)}
    )
    latest = json.loads((ROOT / "results" / "latest.json").read_text())
    observed = set()
    for per_target in latest.values():
        for rec in per_target.values():
            expect = rec.get("extra", {}).get("expect") or {}
            if "version" in expect and rec.get("observed") is not None:
                value = rec["observed"]
                observed.add(str(get_path(value, expect["path"]) if "path" in expect else value))
    named = {c.strip().lstrip("=!<>~ ").removesuffix(".*") for s in specs for c in s.split(",")}
    versions = sorted(v for v in observed | named | {"2.10.0+cu128", "2.11rc1"} if _is_version(v))
    assert len(specs) >= 10 and len(versions) >= 10, (specs, versions)
    pairs = 0
    for spec, version in product(specs, versions):
        want = SpecifierSet(spec).contains(version)
        assert judge(version, spec) == Judgement(want, PEP440), (spec, version)
        pairs += 1
    assert pairs >= 150, pairs


def _is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def test_message_names_scheme_and_path() -> None:
    outcome = evaluate({"path": "version", "version": "==2.10"}, {"version": "2.9.1+cu128"})
    want = "expected version '==2.10' (PEP 440), observed at version '2.9.1+cu128'"
    assert outcome.reason == want
    outcome = evaluate({"version": ">=2.4"}, "2.3-4ubuntu1")
    assert outcome.reason == "expected version '>=2.4' (loose), observed '2.3-4ubuntu1'"


@pytest.mark.parametrize("spec", ["", ">=", "=>1.0", ",", "1.0 2.0", ">=1.0;<2"])
def test_lint_refuses_what_neither_scheme_reads(spec: str) -> None:
    problems = problems_in({"version": spec})
    assert len(problems) == 1 and problems[0].startswith("expect.version: "), problems


def test_numeric_versions_judged_alike_by_both_schemes() -> None:
    """Driver versions like 590.48.01 are valid PEP 440; the two schemes must not disagree."""
    rng = random.Random(SEED + 1)
    compared = 0
    for _ in range(1500):
        version = ".".join(f"{rng.randint(0, 12):0{rng.choice([1, 2])}d}" for _ in range(3))
        other = ".".join(str(rng.randint(0, 12)) for _ in range(rng.randint(1, 3)))
        op = rng.choice(["==", "!=", "<", ">", "<=", ">=", "~=", "==*", "!=*"])
        if op == "~=" and "." not in other:
            other += ".0"
        spec = f"{op[:2]}{other}.*" if op.endswith("*") else f"{op}{other}"
        pep = judge(version, spec)
        loose = LooseVersion(version)
        assert pep.scheme == PEP440
        assert pep.passed == _loose_satisfies(loose, _loose_clauses(spec)), (spec, version)
        compared += 1
    assert compared == 1500


def _loose_pool() -> list[str]:
    rng = random.Random(SEED + 2)
    atoms = ["0", "00", "1", "01", "2", "10", "a", "rc", "RC", "post", "b"]
    seps = [".", ".", "-", "_", "+", ""]
    pool = ["1.0", "1.0.0", "1", "v1.0", "1.00", "1.0+x", "1:1.0", "1.0rc1", "1.0RC1", "1.0-rc-1"]
    while len(pool) < 400:
        text = ""
        if rng.random() < 0.1:
            text += f"{rng.randint(0, 2)}:"
        if rng.random() < 0.1:
            text += "v"
        text += rng.choice(["0", "1", "2"])
        for _ in range(rng.randint(0, 4)):
            text += rng.choice(seps) + rng.choice(atoms)
        pool.append(text)
    return pool


def test_loose_equal_implies_equal_hash_and_order_is_consistent() -> None:
    versions = [LooseVersion(t) for t in _loose_pool()]
    equal_distinct = 0
    for a, b in combinations(versions, 2):
        eq = a == b
        if eq:
            assert hash(a) == hash(b), (a.text, b.text)
            equal_distinct += a.text != b.text
        # exactly one of <, ==, > holds (a total order), and == is symmetric
        assert [a < b, eq, b < a].count(True) == 1, (a.text, b.text)
        assert (b == a) is eq
    assert LooseVersion("1.0") == LooseVersion("1.0.0")
    assert hash(LooseVersion("1.0")) == hash(LooseVersion("1.0.0"))
    assert len({LooseVersion("1.0"), LooseVersion("1.0.0"), LooseVersion("v1.00")}) == 1
    assert equal_distinct >= 200  # the pool holds many spellings of one version


def test_pep440_validity_of_generated_versions() -> None:
    """Guards the generator: every version it makes parses, so no pair is skipped silently."""
    for version, _spec, _feats, _kinds in _pairs()[:500]:
        try:
            Version(version)
        except InvalidVersion:  # pragma: no cover - a generator bug
            pytest.fail(f"generator made an invalid version {version!r}")
