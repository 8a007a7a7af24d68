"""Version comparison for PEP 440 and loose schemes (driver `590.48.01`, `0.16.0rc2.dev344+g..`).

PEP 440 versions compare with `packaging`; anything else falls back to a loose key that splits
digits from letters, so `590.48.01 > 590.9` and `12.8 < 12.10` compare as people expect.
"""

from __future__ import annotations

import re
from functools import total_ordering

from packaging.version import InvalidVersion, Version

_OPERATORS = ("===", "==", "!=", "~=", ">=", "<=", ">", "<")
_VERSION_TEXT = re.compile(r"^v?[0-9][0-9A-Za-z.+_\-*!]*$")


@total_ordering
class LooseVersion:
    """A version that compares PEP 440 when both sides parse, loosely otherwise."""

    def __init__(self, text: str):
        self.text = str(text).strip()
        try:
            self.pep440: Version | None = Version(self.text)
        except InvalidVersion:
            self.pep440 = None
        self.loose = tuple(
            (0, int(part), "") if part.isdigit() else (-1, 0, part)
            for part in re.findall(r"\d+|[A-Za-z]+", self.text.split("+")[0])
        )

    def _key(self, other: LooseVersion) -> tuple[object, object]:
        if self.pep440 is not None and other.pep440 is not None:
            return self.pep440, other.pep440
        a, b = list(self.loose), list(other.loose)
        width = max(len(a), len(b))
        a += [(0, 0, "")] * (width - len(a))
        b += [(0, 0, "")] * (width - len(b))
        return tuple(a), tuple(b)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LooseVersion):
            return NotImplemented
        mine, theirs = self._key(other)
        return mine == theirs

    def __lt__(self, other: LooseVersion) -> bool:
        mine, theirs = self._key(other)
        return mine < theirs  # type: ignore[operator]

    def __hash__(self) -> int:
        return hash(self.text)

    def __str__(self) -> str:
        return self.text


def parse_specifier(spec: str) -> list[tuple[str, str]]:
    """Split `>=2.10,<3` into clauses; raises ValueError naming the bad clause."""
    clauses = []
    for raw in str(spec).split(","):
        clause = raw.strip()
        if not clause:
            raise ValueError(f"empty clause in version specifier {spec!r}")
        op = next((o for o in _OPERATORS if clause.startswith(o)), None)
        version = clause[len(op) :].strip() if op else clause
        if not _VERSION_TEXT.match(version):
            raise ValueError(f"invalid version specifier {spec!r}: {clause!r}")
        clauses.append((op or "==", version))
    return clauses


def _matches_prefix(observed: LooseVersion, pattern: str) -> bool:
    prefix = LooseVersion(pattern.rstrip(".*"))
    return observed.loose[: len(prefix.loose)] == prefix.loose


def satisfies(observed: str, spec: str) -> bool:
    """True when the observed version satisfies every clause of `spec`."""
    have = LooseVersion(observed)
    for op, text in parse_specifier(spec):
        if text.endswith(".*"):
            ok = _matches_prefix(have, text)
            ok = ok if op == "==" else not ok
        elif op == "===":
            ok = have.text == text
        elif op == "~=":
            want = LooseVersion(text)
            stem = ".".join(text.split(".")[:-1]) or text
            ok = have >= want and _matches_prefix(have, stem)
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
