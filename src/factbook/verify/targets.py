"""Which box each selected fact is checked on: target names, `all`, and ssh:// URLs.

--target llm-two          facts of llm-two, plus facts naming no target (run on llm-two)
--target a,b / repeated   the same for each name (untargeted facts run on each)
--target all              every fact on its own target; untargeted facts are skipped
--target ssh://u@h:p?jump=u@j:p[&python=...][#name]
                          an ad-hoc box: every selected fact runs on it; with #name it
                          stands in for that target name instead
--target openssh://...    the same through the system ssh binary (transport: openssh)
(none)                    every fact on its own target; untargeted facts are skipped
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from ..errors import UsageError
from ..kb import KnowledgeBase
from ..model import Fact, Target
from ..names import name_problem


@dataclass
class PlannedCheck:
    """One fact's check on one target; `key` names it in the agent's batch."""

    fact: Fact
    target: str

    @property
    def key(self) -> str:
        return f"{self.fact.id}@{self.target}"


@dataclass
class Plan:
    """What to run where, the targets involved (including synthetic ones), and what was left."""

    checks: list[PlannedCheck]
    targets: dict[str, Target]
    unplaced: list[Fact]  # facts with a check but no target to run it on


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
        from ..transports.ssh import parse_target_url as parse_ssh_url
    except ImportError as exc:
        raise UsageError(f"ssh:// targets need the SSH transport: {exc}") from exc
    bare = "ssh://" + url.split("#", 1)[0].split("://", 1)[1]
    try:
        target, jumps = parse_ssh_url(bare, known or {})
    except ValueError as exc:  # urllib's own errors inside jump specs
        raise UsageError(f"bad target URL {url!r}: {exc}") from None
    if parts.scheme == "openssh":
        target = replace(target, transport="openssh")
    if parts.fragment:
        target = replace(target, name=parts.fragment)
    return target, {j.name: j for j in jumps}


def plan_checks(kb: KnowledgeBase, facts: list[Fact], target_specs: list[str]) -> Plan:
    """Place every fact with a check on the targets the command line asks for."""
    specs = [s for spec in target_specs for s in (spec.split(",") if "://" not in spec else [spec])]
    specs = [s.strip() for s in specs if s.strip()]
    targets = dict(kb.targets)
    named: list[str] = []  # targets that take their own facts and the untargeted ones
    override: list[str] = []  # URL targets that take every selected fact
    everything = False
    for spec in specs:
        if spec == "all":
            everything = True
        elif "://" in spec:
            target, jumps = parse_target_url(spec, kb.targets)
            targets.update(jumps)
            targets[target.name] = target
            (named if "#" in spec else override).append(target.name)
        elif spec in kb.targets:
            named.append(spec)
        else:
            known = ", ".join(kb.targets) or "none; add targets.yaml"
            raise UsageError(f"unknown target '{spec}' (known: {known}, all, or ssh://user@host)")
    checks: list[PlannedCheck] = []
    unplaced: list[Fact] = []
    for fact in facts:
        if fact.check is None:
            continue
        own = fact.check_target()
        places: list[str] = list(override)
        if everything and own:
            places.append(own)
        if own is None:
            places += named
        elif own in named:
            places.append(own)
        if not specs and own:
            places.append(own)
        if not places and own is None:
            unplaced.append(fact)
        for name in dict.fromkeys(places):
            checks.append(PlannedCheck(fact, name))
    return Plan(checks, targets, unplaced)


def resolve_targets(kb: KnowledgeBase, specs: list[str]) -> tuple[dict[str, Target], list[str]]:
    """Named targets and ssh:// URLs (comma-separated or repeated) -> every target by name
    (known ones, the URLs' and their jump hosts') and the names asked for, in order."""
    targets = dict(kb.targets)
    names = []
    for spec in (s for t in specs for s in (t.split(",") if "://" not in t else [t])):
        if "://" in spec:
            target, jumps = parse_target_url(spec, kb.targets)
            targets.update(jumps)
            targets[target.name] = target
            names.append(target.name)
        elif spec in kb.targets:
            names.append(spec)
        else:
            raise UsageError(f"unknown target '{spec}' (known: {', '.join(kb.targets)})")
    return targets, names
