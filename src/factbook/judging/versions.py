"""Version expectations, judged by one of two schemes, and the judgement says which.

- **PEP 440**: when the specifier parses as a `packaging.specifiers.SpecifierSet` and the
  observed version parses as a `packaging.version.Version` (or every clause is `===`, which
  compares raw strings), `SpecifierSet.contains` decides, so local versions (`==2.10` matches
  `2.10.0+cu128`), exclusive ordered comparisons (`<2.11` refuses `2.11rc1`, `>1.7` refuses
  `1.7.post1`), wildcards, `~=`, `===`, epochs and post/dev releases mean exactly what pip
  means. The observed version is installed on the box, and PEP 440 accepts a pre-release that is
  "already present on the system", hence `installed=True` (packaging 26 accepts it by default).
  factbook requires packaging>=26: 23 to 25 reject installed pre-releases even with that flag
  and compare `===` against the normalised version, disagreeing with 26 on 93 to 441 of the
  conformance test's 2,968 generated pairs, so older releases would make verdicts depend on the
  client.
- **loose**: anything else (driver `580.95.05-open`, dpkg `1:2.3-4ubuntu1`) compares by a key
  that splits digits from letters, so `590.48.01 > 590.9` and `12.8 < 12.10` as people expect.

Judgement runs on the client only (the agent ships observed values back; no probe compares
versions), so `packaging`, a dependency of factbook, is used rather than re-implemented.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache, total_ordering
from typing import TYPE_CHECKING

from factbook.knowledge.limits import NUMBER_MAX_DIGITS

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

# packaging is imported by the two functions that use it: ~15 ms that a run judging no
# version never pays.

PEP440 = "PEP 440"
LOOSE = "loose"

_OPERATORS = ("===", "==", "!=", "~=", ">=", "<=", ">", "<")
_LOOSE_TEXT = re.compile(r"^[vV]?[0-9][0-9A-Za-z.+_\-*!:~]*$")
_EPOCH = re.compile(r"^(\d+):")
_PAD = (0, 0, "")
# a run of digits no version's component has: packaging reads each with int(), which Python
# refuses past 4,300 digits (a ValueError, not InvalidVersion), and a box or a knowledge base
# may say anything; such a text is judged by the loose scheme, which never calls int()
_LONG_NUMBER = re.compile(rf"\d{{{NUMBER_MAX_DIGITS + 1}}}")


def _numeric(digits: str) -> tuple[int, str]:
    """A run of digits as a key that orders as its number does (`007` = `7` < `10`)."""
    stripped = digits.lstrip("0")
    return len(stripped), stripped


@dataclass(frozen=True)
class Judgement:
    """Whether an observed version satisfied a specifier, and which scheme decided."""

    passed: bool
    scheme: str


@total_ordering
class LooseVersion:
    """A version compared by the loose scheme: `[v]` `[epoch:]` digit and letter runs.

    Trailing zero components do not count (`1.0 == 1.0.0`), letters sort before numbers
    (`1.0rc1 < 1.0`), a `+local` suffix is ignored. Equality and hash use the same key.
    """

    def __init__(self, text: str):
        self.text = str(text).strip()
        body = self.text
        if body[:1] in ("v", "V") and body[1:2].isdigit():
            body = body[1:]
        epoch = _numeric("0")
        found = _EPOCH.match(body)
        if found:
            epoch, body = _numeric(found.group(1)), body[found.end() :]
        self.epoch = epoch
        self.parts: tuple[tuple[int, int, str], ...] = tuple(
            (0, *_numeric(part)) if part.isdigit() else (-1, 0, part.lower())
            for part in re.findall(r"\d+|[A-Za-z]+", body.split("+")[0])
        )

    def _key(self) -> tuple[tuple[int, str], tuple[tuple[int, int, str], ...]]:
        parts = list(self.parts)
        while parts and parts[-1] == _PAD:
            parts.pop()
        return self.epoch, tuple(parts)

    def _padded(self, width: int) -> tuple[tuple[int, str], tuple[tuple[int, int, str], ...]]:
        return self.epoch, self.parts + (_PAD,) * (width - len(self.parts))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LooseVersion):
            return NotImplemented
        return self._key() == other._key()

    def __lt__(self, other: LooseVersion) -> bool:
        width = max(len(self.parts), len(other.parts))
        return self._padded(width) < other._padded(width)

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return self.text

    def startswith(self, prefix: LooseVersion) -> bool:
        """True when the components of `prefix` (zeros padded on this side) lead this one."""
        width = max(len(self.parts), len(prefix.parts))
        epoch, mine = self._padded(width)
        return epoch == prefix.epoch and mine[: len(prefix.parts)] == prefix.parts


def _pep440_set(spec: str) -> SpecifierSet | None:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if _LONG_NUMBER.search(spec):
        return None
    try:
        return SpecifierSet(spec)
    except InvalidSpecifier:
        return None


def _loose_clauses(spec: str) -> list[tuple[str, str]]:
    clauses = []
    for raw in spec.split(","):
        clause = raw.strip()
        if not clause:
            raise ValueError(f"empty clause in version specifier {spec!r}")
        op = next((o for o in _OPERATORS if clause.startswith(o)), None)
        version = clause[len(op) :].strip() if op else clause
        if not _LOOSE_TEXT.match(version):
            raise ValueError(f"invalid version specifier {spec!r}: {clause!r}")
        clauses.append((op or "==", version))
    return clauses


def parse_specifier(spec: str) -> list[tuple[str, str]]:
    """Split `>=2.10,<3` into (operator, version) clauses; ValueError names a bad clause.

    A specifier is valid when either scheme can read it: PEP 440 (`===anything`, `== 1.0`)
    or loose (`==1:2.3-4ubuntu1`, a bare `590.48.01` meaning `==`).
    """
    return list(_clauses(str(spec)))


@lru_cache(maxsize=4096)
def _clauses(text: str) -> tuple[tuple[str, str], ...]:
    """`parse_specifier`, remembered: a knowledge base or an import checks the same few
    specifiers on many facts, and packaging's SpecifierSet takes ~10 us to build."""
    pep = _pep440_set(text) if text.strip() else None
    if pep is not None and len(pep) > 0:
        return tuple((s.operator, s.version) for s in pep)
    return tuple(_loose_clauses(text))


def judge(observed: str, spec: str) -> Judgement:
    """Judge `observed` against `spec`, by PEP 440 where both sides are PEP 440, else loosely."""
    text, have = str(spec), str(observed).strip()
    pep = _pep440_set(text) if text.strip() else None
    if pep is not None and len(pep) > 0:
        arbitrary_only = all(s.operator == "===" for s in pep)
        if arbitrary_only or _is_pep440(have):
            return Judgement(pep.contains(have, installed=True), PEP440)
    return Judgement(_loose_satisfies(LooseVersion(have), _loose_clauses(text)), LOOSE)


def satisfies(observed: str, spec: str) -> bool:
    """True when the observed version satisfies every clause of `spec` (see `judge`)."""
    return judge(observed, spec).passed


def _is_pep440(text: str) -> bool:
    return pep440_version(text) is not None


def pep440_version(text: str) -> Version | None:
    """`text` as a PEP 440 version, or None when it is not one (or holds a number no
    version component has, which packaging would fail on with a ValueError)."""
    from packaging.version import InvalidVersion, Version

    if _LONG_NUMBER.search(text):
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _loose_satisfies(have: LooseVersion, clauses: list[tuple[str, str]]) -> bool:
    for op, text in clauses:
        if text.endswith(".*"):
            ok = have.startswith(LooseVersion(text[:-2]))
            ok = ok if op == "==" else not ok
        elif op == "===":
            ok = have.text == text
        elif op == "~=":
            want = LooseVersion(text)
            stem = LooseVersion(text.rsplit(".", 1)[0] if "." in text else text)
            ok = have >= want and have.startswith(stem)
        else:
            want = LooseVersion(text)
            ok = {
                "==": have == want,
                "!=": have != want,
                ">=": have >= want,
                "<=": have <= want,
                ">": have > want,
                "<": have < want,
            }[op]
        if not ok:
            return False
    return True
