"""Which box each selected fact is checked on: target names, groups, patterns and ssh:// URLs.

--target llm-two          facts of llm-two, plus facts naming no target (run on llm-two)
--target a,b / repeated   the same for each name (untargeted facts run on each)
--target @gpu, node-*, tag:h100, gpu:&h100:!node-17
                          host patterns (fleet/patterns.py): each target selected is named
--target all              every fact on its own target(s); untargeted facts are skipped
--limit P / --exclude P   keep only / drop the targets pattern P selects, after the above
A fact whose target is a group runs on every member of the group.
--target ssh://u@h:p?jump=u@j:p[&python=...][#name]
                          an ad-hoc box: every selected fact runs on it; with #name it
                          stands in for that target name instead
--target openssh://...    the same through the system ssh binary (transport: openssh)
(none)                    every fact on its own target; untargeted facts are skipped
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from urllib.parse import urlsplit

from factbook.errors import UsageError
from factbook.judging.sanitize import hide_url_passwords
from factbook.knowledge.fleet.connection import address_problems
from factbook.knowledge.fleet.inventory import Inventory
from factbook.knowledge.fleet.patterns import is_pattern, match, split_terms
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.model import Fact, Target
from factbook.knowledge.names import known_names, name_problem, shown


@dataclass
class PlannedCheck:
    """One fact's check on one target; `key` names it in the agent's batch."""

    fact: Fact
    target: str

    @cached_property
    def key(self) -> str:
        """`FACT@TARGET`, made once (a fleet run reads it a few times per check)."""
        return f"{self.fact.id}@{self.target}"


@dataclass
class Plan:
    """What to run where, the targets involved (including synthetic ones), and what was left."""

    checks: list[PlannedCheck]
    targets: dict[str, Target]
    unplaced: list[Fact]  # facts with a check but no target to run it on
    # --target words that select no target at all (an empty group, as Ansible allows):
    # nothing to run, which is not an error unless checks were asked for by name
    empty_selection: str | None = None


def parse_target_url(
    url: str, known: dict[str, Target] | None = None
) -> tuple[Target, dict[str, Target]]:
    """A target URL -> the target and the synthetic targets of its jump hosts, by name.

    ssh:// URLs are parsed by the SSH transport (jumps may also name known targets);
    `#name` makes the URL stand in for that target name; `local://#name` is this machine.
    """
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # "Invalid IPv6 URL" and the like
        raise UsageError(f"bad target URL {url!r}: {exc}") from None
    bad = name_problem("target name", parts.fragment) if parts.fragment else None
    if bad:
        raise UsageError(f"{url!r}: {bad}")
    if parts.scheme == "local":
        return Target(name=parts.fragment or "local", transport="local"), {}
    if parts.scheme not in ("ssh", "openssh"):
        raise UsageError(
            f"unsupported target URL scheme {parts.scheme!r} in {url!r} (use ssh:// or openssh://)"
        )
    try:
        from factbook.verification.transports.ssh import parse_target_url as parse_ssh_url
    except ImportError as exc:
        raise UsageError(f"ssh:// targets need the SSH transport: {exc}") from exc
    bare = "ssh://" + url.split("#", 1)[0].split("://", 1)[1]
    try:
        target, jumps = parse_ssh_url(bare, known or {})
    except ValueError as exc:  # urllib's own errors inside jump specs
        raise UsageError(f"bad target URL {url!r}: {exc}") from None
    for one in (target, *jumps):  # a URL's host, user and jumps refused as targets.yaml's are
        bad = address_problems(one)
        if bad:
            raise UsageError(f"bad target URL {shown(url)!r}: {bad[0]}")
    if parts.scheme == "openssh":
        target = replace(target, transport="openssh")
    if parts.fragment:
        target = replace(target, name=parts.fragment)
    return target, {j.name: j for j in jumps}


def _split_specs(target_specs: list[str]) -> list[str]:
    """The --target words one by one, a URL's password (`ssh://ops:PASS@h`, a jump's) shown
    as `***` from here on: factbook never uses it, and every message, target name and result
    made of the spec quoted it (round 21: `bad target URL 'ssh://ops:PASS@[::1'`, a jump
    host named `ops:PASS@bastion` in results/latest.json)."""
    specs = [s for spec in target_specs for s in (spec.split(",") if "://" not in spec else [spec])]
    return [hide_url_passwords(s.strip()) for s in specs if s.strip()]


def plan_checks(
    kb: KnowledgeBase,
    facts: list[Fact],
    target_specs: list[str],
    *,
    limit: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> Plan:
    """Place every fact with a check on the targets the command line asks for.

    A fact whose target is a group runs on each member. --target words may be names, groups
    (`@gpu`), globs, `tag:x` and Ansible combinations (`gpu:!node-17`); --limit keeps only the
    targets its patterns select, --exclude drops those its patterns select.
    """
    specs = _split_specs(target_specs)
    targets = dict(kb.targets)
    override: list[str] = []  # URL targets that take every selected fact
    fragments: list[str] = []  # URL targets standing in for a name
    words: list[str] = []
    for spec in specs:
        if "://" in spec:
            target, jumps = parse_target_url(spec, kb.targets)
            targets.update(jumps)
            targets[target.name] = target
            (fragments if urlsplit(spec).fragment else override).append(target.name)
        else:
            words.append(spec)
    terms = [t for word in words for t in split_terms(word)]
    everything = any(t in ("all", "*") for t in terms)
    for term in terms:
        name = term.lstrip("&!")
        if not is_pattern(name) and name not in kb.targets and name not in kb.groups:
            if name in ("all", "*") or (term.startswith("!") and name in fragments):
                continue
            known = ", ".join(kb.targets) or "none; add targets.yaml"
            groups = f"; groups: {', '.join(kb.groups)}" if kb.groups else ""
            raise UsageError(
                f"unknown target '{name}' (known: {known}{groups}, all, or ssh://user@host)"
            )
    selected = match(kb.inventory, ",".join(terms)) if terms else []
    empty = bool(terms) and not selected and not override and not fragments
    # `all` (with any & or ! terms): every fact on its own targets, among those selected;
    # otherwise the selected targets take their own facts and the untargeted ones.
    named = [*fragments, *([] if everything else selected)]
    keep = _filter(kb, limit, exclude)
    checks: list[PlannedCheck] = []
    unplaced: list[Fact] = []
    for fact in facts:
        if fact.check is None:
            continue
        own = fact.check_target()
        covered = kb.covered(own)
        places: list[str] = list(override)
        if everything and own:
            places += [t for t in covered if t in selected]
        if own is None:
            places += named
        else:
            places += [t for t in covered if t in named]
        if not specs and own:
            places += covered
        places = [p for p in places if keep(p)]
        if not places and own is None and not (limit or exclude) and not empty:
            unplaced.append(fact)
        for name in dict.fromkeys(places):
            checks.append(PlannedCheck(fact, name))
    return Plan(checks, targets, unplaced, ",".join(words) if empty else None)


def _filter(
    kb: KnowledgeBase, limit: Sequence[str], exclude: Sequence[str]
) -> Callable[[str], bool]:
    """--limit / --exclude as a predicate on target names (ad-hoc URL targets pass --limit
    only when it names them)."""
    inventory = kb.inventory
    allowed = (
        {t for pattern in limit for t in match(inventory, pattern, where="--limit")}
        if limit
        else None
    )
    dropped = {t for pattern in exclude for t in _excluded(inventory, pattern)}
    known = kb.targets
    return lambda name: (
        (allowed is None or name in allowed or name not in known) and name not in dropped
    )


def _excluded(inventory: Inventory, pattern: str) -> list[str]:
    try:
        return match(inventory, pattern, where="--exclude")
    except UsageError:
        if is_pattern(pattern):
            raise
        return []  # excluding a name that is not there excludes nothing


def resolve_targets(
    kb: KnowledgeBase,
    specs: list[str],
    *,
    limit: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> tuple[dict[str, Target], list[str]]:
    """Named targets, host patterns and ssh:// URLs (comma-separated or repeated) -> every
    target by name (known ones, the URLs' and their jump hosts') and the names asked for."""
    targets = dict(kb.targets)
    names = []
    words = []
    for spec in _split_specs(specs):
        if "://" in spec:
            target, jumps = parse_target_url(spec, kb.targets)
            targets.update(jumps)
            targets[target.name] = target
            names.append(target.name)
        elif spec in kb.targets:
            names.append(spec)
        elif is_pattern(spec) or spec in kb.groups:
            words.append(spec)
        else:
            raise UsageError(f"unknown target '{shown(spec)}' (known: {known_names(kb.targets)})")
    if words:
        names += match(kb.inventory, ",".join(words))
    keep = _filter(kb, limit, exclude)
    return targets, [n for n in dict.fromkeys(names) if keep(n)]
