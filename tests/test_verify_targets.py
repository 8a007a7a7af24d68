"""Target specs: names, several names, all, and ssh:// URLs with jump chains."""

from __future__ import annotations

from pathlib import Path

import pytest

from factbook.errors import UsageError
from factbook.knowledge.kb import load_kb
from factbook.knowledge.model import Target
from factbook.verification.targets import parse_target_url, plan_checks
from tests.helpers import fact, make_kb


def test_url_with_jump_becomes_synthetic_targets() -> None:
    target, jumps = parse_target_url("ssh://root@10.0.0.5:2222?jump=admin@bastion:22")
    assert (target.name, target.user, target.host, target.port) == (
        "root@10.0.0.5:2222",
        "root",
        "10.0.0.5",
        2222,
    )
    assert target.jump == ("admin@bastion:22",)
    hop = jumps["admin@bastion:22"]
    assert (hop.user, hop.host, hop.port) == ("admin", "bastion", 22)


def test_url_with_a_chain_of_jumps_python_and_name() -> None:
    url = "ssh://me@box?jump=a@outer:22,b@inner:2200&python=~/ml-env/bin/python3#llm-two"
    target, jumps = parse_target_url(url)
    assert target.name == "llm-two" and target.port is None and target.host == "box"
    assert target.python == "~/ml-env/bin/python3"
    assert target.jump == ("a@outer:22", "b@inner:2200")  # outermost first
    assert set(jumps) == {"a@outer:22", "b@inner:2200"}


def test_url_jump_may_name_a_known_target() -> None:
    known = {"kpro6": Target(name="kpro6", host="kpro6.invalid", user="root")}
    target, jumps = parse_target_url("ssh://root@ct129?jump=kpro6", known)
    assert target.jump == ("kpro6",) and jumps == {}
    local, none = parse_target_url("local://#h200")
    assert (local.name, local.transport, none) == ("h200", "local", {})


@pytest.mark.parametrize(
    "url,message",
    [
        ("ftp://host", "unsupported target URL scheme"),
        ("ssh://root@host:notaport", "port"),
        ("ssh://root@host?bogus=1", "unknown key bogus"),
    ],
)
def test_bad_urls_are_usage_errors(url: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_target_url(url)


def test_plan_url_targets(tmp_path: Path) -> None:
    facts = [
        fact("a.own", "cpu.threads", {"ge": 1}, target="local"),
        fact("a.free", "cpu.threads", {"ge": 1}),
    ]
    kb = load_kb(make_kb(tmp_path, facts))
    facts_list = list(kb.facts.values())
    plan = plan_checks(kb, facts_list, ["ssh://root@h:22"])
    assert {(c.fact.id, c.target) for c in plan.checks} == {
        ("a.own", "root@h:22"),
        ("a.free", "root@h:22"),
    }
    assert plan.targets["root@h:22"].host == "h"
    # With #name the URL stands in for that target: its facts and the untargeted ones.
    plan = plan_checks(kb, facts_list, ["ssh://root@h:22#other"])
    assert {(c.fact.id, c.target) for c in plan.checks} == {("a.free", "other")}
    assert plan.targets["other"].host == "h"
    plan = plan_checks(kb, facts_list, [])
    assert [(c.fact.id, c.target) for c in plan.checks] == [("a.own", "local")]
    assert [f.id for f in plan.unplaced] == ["a.free"]
