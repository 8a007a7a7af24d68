"""Host patterns as Ansible operators write them: which targets `--target`/`--limit` name.

    node-01            a target          @gpu-nodes, gpu-nodes   a group (@ says: only a group)
    node-*, node-0?    a glob over target and group names        tag:h100   targets with a tag
    ~node-(0|1)\\d      a regular expression over target names    all, *     every target
    a,b  or  a:b       union      a:&b  intersection      a:!b  exclusion
    2001:db8::10       an IPv6 address between commas is one name, as Ansible reads it

As in Ansible, the union of the plain terms is taken first, then each `&` term intersects it
and each `!` term removes from it, whatever their order. A plain or `&` term that matches
nothing is an error naming the pattern, except a group that exists but is empty: as in
Ansible, that selects no target ("no hosts matched"), which is not a mistake; a `!` term that
matches nothing is not an error either.
"""

from __future__ import annotations

import fnmatch
import re

from factbook.errors import UsageError
from factbook.judging import userregex
from factbook.knowledge.fleet.hostpattern import is_ipv6
from factbook.knowledge.fleet.inventory import ALL, Inventory
from factbook.knowledge.names import known_names, shown

_SPLIT = re.compile(r"[,:]")


def split_terms(pattern: str) -> list[str]:
    """`a:&b,!c` -> ["a", "&b", "!c"]; a `~regex` term keeps its commas and colons only when
    it is the whole pattern; an IPv6 address (`2001:db8::10`, `!::1`) keeps its colons."""
    text = pattern.strip()
    if text.startswith("~"):
        return [text]
    terms: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if is_ipv6(part.lstrip("&!")):
            terms.append(part)
        else:
            terms += _colon_terms(part)
    return terms


def _colon_terms(part: str) -> list[str]:
    """`a:&b:!c` -> ["a", "&b", "!c"], `tag:x` kept whole."""
    terms: list[str] = []
    glue = False
    for piece in (p.strip() for p in _SPLIT.split(part)):
        if glue:
            terms[-1] += ":" + piece
            glue = False
        elif piece:
            terms.append(piece)
            glue = piece.lstrip("&!") == "tag"
    return terms


def is_pattern(spec: str) -> bool:
    """Whether a --target word is a pattern (not a plain known name)."""
    return any(ch in spec for ch in "@*?[~:&!") or spec.startswith("tag:")


def match(inventory: Inventory, pattern: str, *, where: str = "--target") -> list[str]:
    """The target names `pattern` selects, in inventory order."""
    plain: list[str] = []
    both: list[set[str]] = []
    minus: set[str] = set()
    for term in split_terms(pattern):
        if term.startswith("&"):
            found = _term(inventory, term[1:], where, pattern)
            both.append(set(found))
        elif term.startswith("!"):
            minus.update(_term(inventory, term[1:], where, pattern, must=False))
        else:
            plain += _term(inventory, term, where, pattern)
    chosen = set(plain)
    for keep in both:
        chosen &= keep
    chosen -= minus
    return [t for t in inventory.targets if t in chosen]


def _term(
    inventory: Inventory, term: str, where: str, pattern: str, *, must: bool = True
) -> list[str]:
    found = _resolve(inventory, term, where)
    if must and not found and term.removeprefix("@") not in inventory.groups:
        groups = _few([g for g in inventory.groups if g != ALL], none="none")  # 8 of 5,000
        raise UsageError(
            f"{where} {pattern!r}: '{term}' matches no target (targets: "
            f"{_few(list(inventory.targets))}; groups: {groups})"
        )
    return found


def _resolve(inventory: Inventory, term: str, where: str) -> list[str]:
    if term in (ALL, "*"):
        return list(inventory.targets)
    if term.startswith("@"):
        name = term[1:]
        if name not in inventory.groups and name != ALL:
            known = known_names(inventory.groups)
            raise UsageError(f"{where}: no group '{shown(name)}' (groups: {known})")
        return inventory.members(name)
    if term.startswith("tag:"):
        tag = term[4:]
        return [n for n, t in inventory.targets.items() if tag in t.tags]
    if term.startswith("~"):
        try:
            regex = userregex.compile_user(term[1:])
            return [n for n in inventory.targets if userregex.search(regex, n)]
        except userregex.error as exc:
            quoted = shown(repr(term[1:]))
            raise UsageError(f"{where}: bad regular expression {quoted}: {exc}") from None
        except userregex.RegexTimeout as exc:  # the first slow name stops the whole selection
            raise UsageError(f"{where}: {exc}") from None
    if any(ch in term for ch in "*?["):
        found = [n for n in inventory.targets if fnmatch.fnmatchcase(n, term)]
        groups = [g for g in inventory.groups if fnmatch.fnmatchcase(g, term)]
        # the members of every matching group in one walk: `g*` over a chain of 5,000
        # groups walked each group's descendants again (quadratic)
        return list(dict.fromkeys(found + inventory.members_of(groups)))
    if term in inventory.targets:
        return [term]
    if term in inventory.groups:
        return inventory.members(term)
    return []


def _few(names: list[str], limit: int = 8, none: str = "none; add targets.yaml") -> str:
    if not names:
        return none
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more
