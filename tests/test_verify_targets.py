"""Target specs: names, several names, all, and ssh:// URLs with jump chains."""

from __future__ import annotations

from pathlib import Path

import pytest

from factbook.errors import UsageError
from factbook.kb import load_kb
from factbook.verify.targets import parse_target_url, plan_checks
from tests.verify_kb import fact, make_kb


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
    assert (hop.user, hop.host, hop.port, hop.jump) == ("admin", "bastion", 22, ())


def test_url_with_a_chain_of_jumps_python_and_name() -> None:
    url = "ssh://me@box?jump=a@outer:22,b@inner:2200&python=~/ml-env/bin/python3#llm-two"
    target, jumps = parse_target_url(url)
    assert target.name == "llm-two" and target.port is None
    assert target.python == "~/ml-env/bin/python3"
    assert target.jump == ("b@inner:2200",)
    assert jumps["b@inner:2200"].jump == ("a@outer:22",)  # inner is reached through outer
    assert jumps["a@outer:22"].jump == ()


@pytest.mark.parametrize(
    "url,message",
    [
        ("ftp://host", "unsupported target URL scheme"),
        ("ssh://root@host:notaport", "invalid port"),
        ("ssh://root@host?bogus=1", "unknown target URL parameter"),
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
