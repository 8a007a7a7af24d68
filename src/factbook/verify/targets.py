"""Which box each selected fact is checked on: target names, `all`, and ssh:// URLs.

--target llm-two          facts of llm-two, plus facts naming no target (run on llm-two)
--target a,b / repeated   the same for each name (untargeted facts run on each)
--target all              every fact on its own target; untargeted facts are skipped
--target ssh://u@h:p?jump=u@j:p[&python=...][#name]
                          an ad-hoc box: every selected fact runs on it; with #name it
                          stands in for that target name instead
(none)                    every fact on its own target; untargeted facts are skipped
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import parse_qs, unquote, urlsplit

from ..errors import UsageError
from ..kb import KnowledgeBase
from ..model import Fact, Target


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


def _endpoint(text: str) -> tuple[str | None, str, int | None]:
    """`user@host:port` -> (user, host, port)."""
    parts = urlsplit("ssh://" + text)
    if not parts.hostname:
        raise UsageError(f"invalid host in target URL: {text!r}")
    try:
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"invalid port in target URL: {text!r}") from exc
    return (unquote(parts.username) if parts.username else None), parts.hostname, port


def _label(user: str | None, host: str, port: int | None) -> str:
    return (f"{user}@" if user else "") + host + (f":{port}" if port else "")


def parse_target_url(url: str) -> tuple[Target, dict[str, Target]]:
    """`ssh://user@host:port?jump=user@jump:port` -> the target and its synthetic jump targets."""
    parts = urlsplit(url)
    if parts.scheme == "local":
        return Target(name=parts.fragment or "local", transport="local"), {}
    if parts.scheme != "ssh":
        raise UsageError(f"unsupported target URL scheme {parts.scheme!r} in {url!r} (use ssh://)")
    user, host, port = _endpoint(parts.netloc)
    query = parse_qs(parts.query)
    unknown = set(query) - {"jump", "python", "identity_file"}
    if unknown:
        raise UsageError(f"unknown target URL parameter(s) {sorted(unknown)} in {url!r}")
    jumps: dict[str, Target] = {}
    chain: list[str] = []
    for value in query.get("jump", []):
        for hop in filter(None, value.split(",")):
            j_user, j_host, j_port = _endpoint(hop)
            name = _label(j_user, j_host, j_port)
            jumps[name] = Target(
                name=name,
                host=j_host,
                port=j_port,
                user=j_user,
                jump=tuple(chain),
                description="jump host from a target URL",
            )
            chain.append(name)
    target = Target(
        name=parts.fragment or _label(user, host, port),
        host=host,
        port=port,
        user=user,
        jump=(chain[-1],) if chain else (),
        python=(query.get("python") or [None])[0],
        identity_file=(query.get("identity_file") or [None])[0],
        description=f"from {url}",
    )
    # Each jump reaches the next one through the one before it: the chain is nested.
    for i, name in enumerate(chain):
        jumps[name] = replace(jumps[name], jump=(chain[i - 1],) if i else ())
    return target, jumps


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
            target, jumps = parse_target_url(spec)
            targets.update(jumps)
            targets[target.name] = target
            (named if urlsplit(spec).fragment else override).append(target.name)
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
