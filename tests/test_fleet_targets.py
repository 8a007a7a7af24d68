"""Fleets in targets.yaml: groups, variables, host patterns, --limit/--exclude, facts naming a
group, and `{var: NAME}` expectations, run for real on local targets."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from helpers import cli, fact, make_kb

from factbook.errors import UsageError
from factbook.knowledge.fleet.inventory import Group, Inventory
from factbook.knowledge.fleet.patterns import match, split_terms
from factbook.knowledge.kb import load_kb, load_kb_with_problems
from factbook.knowledge.model import Target
from factbook.store.results import ResultRecord
from factbook.verification.report import Progress
from factbook.verification.targets import plan_checks


def _fleet(gpus: dict[str, str]) -> dict:
    """Local targets node-01.. whose agent sees GPUS=<value>; groups h100 (01-02), b200 (rest)."""
    names = sorted(gpus)
    return {
        "targets": {
            n: {"transport": "local", "env": {"GPUS": v}, "tags": ["odd" if i % 2 else "even"]}
            for i, (n, v) in enumerate(sorted(gpus.items()))
        },
        "groups": {
            "gpu": {"children": ["h100", "b200"], "vars": {"gpus": "8", "driver": "580.95.05"}},
            "h100": {"targets": names[:2]},
            "b200": {"targets": ["node-0[3-9]"], "vars": {"gpus": "4"}},
        },
    }


FLEET = _fleet({"node-01": "8", "node-02": "8", "node-03": "4", "node-04": "4"})


def test_groups_vars_merge_outer_to_inner_then_own(tmp_path: Path) -> None:
    targets = json.loads(json.dumps(FLEET))
    targets["targets"]["node-04"]["vars"] = {"gpus": "7"}
    kb = load_kb(make_kb(tmp_path, [], targets=targets))
    assert kb.targets["node-01"].vars == {"gpus": "8", "driver": "580.95.05"}
    assert kb.targets["node-03"].vars["gpus"] == "4"  # b200 is inside gpu: it wins
    assert kb.targets["node-04"].vars["gpus"] == "7"  # the target's own wins over both
    assert kb.targets["node-03"].groups == ("gpu", "b200")
    assert kb.covered("gpu") == ["node-01", "node-02", "node-03", "node-04"]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("@gpu", ["node-01", "node-02", "node-03", "node-04"]),
        ("b200", ["node-03", "node-04"]),
        ("node-0[12]", ["node-01", "node-02"]),
        ("h*", ["node-01", "node-02"]),  # globs match group names too, as in Ansible
        ("tag:odd", ["node-02", "node-04"]),
        ("gpu:!node-03", ["node-01", "node-02", "node-04"]),
        ("gpu:&tag:even", ["node-01", "node-03"]),
        ("h100,b200:&tag:odd:!node-04", ["node-02"]),
        ("~node-0[34]", ["node-03", "node-04"]),
        ("all:!@b200", ["node-01", "node-02"]),
    ],
)
def test_host_patterns(tmp_path: Path, pattern: str, expected: list[str]) -> None:
    kb = load_kb(make_kb(tmp_path, [], targets=FLEET))
    assert match(kb.inventory, pattern) == expected


def test_split_terms_keeps_tag_words_whole() -> None:
    assert split_terms("gpu:&tag:h100,!node-1") == ["gpu", "&tag:h100", "!node-1"]


def test_a_pattern_that_selects_nothing_is_named(tmp_path: Path) -> None:
    kb = load_kb(make_kb(tmp_path, [], targets=FLEET))
    with pytest.raises(UsageError, match=r"'gpu-\*' matches no target .*groups: .*h100"):
        match(kb.inventory, "gpu-*")
    with pytest.raises(UsageError, match="no group 'nope'"):
        match(kb.inventory, "@nope")
    assert match(kb.inventory, "gpu:!nothing-*") == list(kb.targets)  # `!` may match nothing


def test_children_loops_and_unknowns_are_lint_problems(tmp_path: Path) -> None:
    targets = json.loads(json.dumps(FLEET))
    targets["groups"]["b200"]["children"] = ["gpu"]
    targets["groups"]["h100"]["children"] = ["nope"]
    targets["groups"]["empty"] = {"targets": ["rack-*"]}
    _, problems = load_kb_with_problems(make_kb(tmp_path, [], targets=targets))
    text = "\n".join(str(p) for p in problems)
    assert "group 'b200': it contains itself through its children" in text
    assert "group 'h100': unknown child group 'nope'" in text
    assert "group 'empty': no target matches 'rack-*'" in text
    assert all(p.file == "targets.yaml" and p.line > 1 for p in problems)


def test_a_fact_naming_a_group_runs_on_every_member(tmp_path: Path) -> None:
    facts = [
        fact("hw.gpus", "env.var", {"eq": {"var": "gpus"}}, args={"name": "GPUS"}, target="gpu")
    ]
    kb = load_kb(make_kb(tmp_path, facts, targets=FLEET))
    plan = plan_checks(kb, list(kb.facts.values()), [])
    assert [c.target for c in plan.checks] == ["node-01", "node-02", "node-03", "node-04"]
    plan = plan_checks(kb, list(kb.facts.values()), ["@b200"])
    assert [c.target for c in plan.checks] == ["node-03", "node-04"]
    plan = plan_checks(kb, list(kb.facts.values()), ["all"], exclude=["node-02"])
    assert [c.target for c in plan.checks] == ["node-01", "node-03", "node-04"]
    plan = plan_checks(kb, list(kb.facts.values()), [], limit=["tag:odd"])
    assert [c.target for c in plan.checks] == ["node-02", "node-04"]


def test_var_expectations_pass_per_target_and_name_the_outlier(tmp_path: Path) -> None:
    gpus = {f"node-0{i}": ("8" if i <= 2 else "4") for i in range(1, 7)}
    gpus["node-05"] = "3"  # a dead GPU on a B200 node
    facts = [
        fact(
            "hw.gpus",
            "env.var",
            {"eq": {"var": "gpus"}},
            args={"name": "GPUS"},
            target="gpu",
        )
    ]
    root = make_kb(tmp_path, facts, targets=_fleet(gpus))
    code, out, err = cli(root, "verify", "--format", "json", "--no-save", "--forks", "2")
    assert code == 1, err
    doc = json.loads(out)
    by_target = {r["target"]: r["outcome"] for r in doc["results"]}
    assert by_target == {n: ("drift" if n == "node-05" else "pass") for n in gpus}
    drift = next(r for r in doc["results"] if r["outcome"] == "drift")
    assert drift["extra"]["expect"] == {"eq": "4"}  # bound to node-05's own expected value
    fleet = doc["fleet"]["hw.gpus"]
    assert fleet["values"] == [
        {"value": "4", "count": 3, "targets": ["node-03", "node-04", "node-06"]},
        {"value": "8", "count": 2, "targets": ["node-01", "node-02"]},
        {"value": "3", "count": 1, "targets": ["node-05"]},
    ]
    code, out, _ = cli(root, "verify", "--no-save", "-q")
    assert "hw.gpus: 3 targets 4, 2 targets 8 (node-01, node-02), 1 target 3 (node-05)" in out


def test_lint_checks_every_var_reference_on_every_covered_target(tmp_path: Path) -> None:
    targets = json.loads(json.dumps(FLEET))
    del targets["groups"]["gpu"]["vars"]["driver"]
    targets["targets"]["node-03"]["vars"] = {"driver": "575.57.08"}
    facts = [
        fact("sw.driver", "env.var", {"eq": {"var": "driver"}}, args={"name": "D"}, target="gpu"),
        fact("hw.count", "env.var", {"ge": {"var": "gpus"}}, args={"name": "G"}, target="h100"),
        fact("hw.bad", "env.var", {"eq": {"var": 3}}, args={"name": "G"}, target="h100"),
    ]
    root = make_kb(tmp_path, facts, targets=targets)
    code, out, err = cli(root, "lint")
    assert code == 2
    text = out + err
    assert (
        "fact 'sw.driver': expect refers to var 'driver', which is not set for targets "
        "node-01, node-02, node-04" in text
    )
    # bound per target: gpus is the string "8" on h100, which `ge` cannot take
    assert "fact 'hw.count': expect.ge: " in text and "(with the vars of targets node-01" in text
    assert "fact 'hw.bad': expect: a variable reference is {var: NAME}" in text
    lines = [line for line in text.splitlines() if "facts/facts.yaml:" in line]
    assert len(lines) == 3


def test_an_unbound_var_at_run_time_is_an_error_naming_the_target(tmp_path: Path) -> None:
    facts = [fact("hw.x", "env.var", {"eq": {"var": "nope"}}, args={"name": "GPUS"})]
    root = make_kb(tmp_path, facts, targets=FLEET)
    code, out, _ = cli(root, "verify", "--target", "node-01", "--format", "json", "--no-save")
    assert code == 3
    (result,) = json.loads(out)["results"]
    assert "expect refers to var 'nope', which target node-01 does not set" in result["reason"]


def test_cli_target_patterns_limit_exclude_and_unknowns(tmp_path: Path) -> None:
    facts = [fact("hw.gpus", "env.var", args={"name": "GPUS"})]
    root = make_kb(tmp_path, facts, targets=FLEET)
    code, out, _ = cli(root, "verify", "--target", "gpu:!node-03", "--dry-run")
    assert code == 0 and [line.split(" on ")[1][:7] for line in out.splitlines()] == [
        "node-01",
        "node-02",
        "node-04",
    ]
    code, out, _ = cli(root, "verify", "--target", "@gpu", "--limit", "b200", "--dry-run")
    assert "node-03" in out and "node-04" in out and "node-01" not in out
    code, _, err = cli(root, "verify", "--target", "rack-*", "--dry-run")
    assert code == 2 and "'rack-*' matches no target" in err
    code, _, err = cli(root, "verify", "--target", "gpu", "--limit", "@nope", "--dry-run")
    assert code == 2 and "--limit: no group 'nope'" in err


def test_group_target_name_clash_and_bad_group_names(tmp_path: Path) -> None:
    targets = json.loads(json.dumps(FLEET))
    targets["groups"]["node-01"] = {"targets": ["node-02"]}
    targets["groups"]["bad name"] = {"targets": []}
    _, problems = load_kb_with_problems(make_kb(tmp_path, [], targets=targets))
    text = "\n".join(map(str, problems))
    assert "group 'node-01': a target has the same name" in text
    assert "group: bad group name" in text or "group: bad target name 'bad name'" in text


def test_inventory_depths_put_all_first() -> None:
    inv = Inventory(
        {"a": Target("a", vars={})},
        {
            "all": Group("all", children=["outer"], vars={"x": 0, "y": 0}),
            "outer": Group("outer", children=["inner"], vars={"x": 1}),
            "inner": Group("inner", targets=["a"], vars={"x": 2}),
            "side": Group("side", targets=["a"], vars={"y": 3}),
        },
    )
    assert inv.depths() == {"all": 0, "outer": 1, "inner": 2, "side": 1}
    assert inv.finish()["a"].vars == {"x": 2, "y": 3}


def test_progress_counts_targets_done() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    progress = Progress(4, stream=stream, per_target={"a": 2, "b": 2})
    seen = []
    for target in "abab":
        progress.result(ResultRecord("x", target, "pass", "", "", "r"))
        seen.append(stream.getvalue().rsplit("\r\x1b[K", 1)[-1])
    assert [s.split(", targets ")[1].split()[0] for s in seen] == ["0/2", "0/2", "1/2", "2/2"]


def test_list_takes_groups_and_patterns(tmp_path: Path) -> None:
    facts = [
        fact("hw.gpus", "env.var", args={"name": "G"}, target="gpu"),
        fact("hw.one", "env.var", args={"name": "G"}, target="node-03"),
        fact("hw.none", "env.var", args={"name": "G"}),
    ]
    root = make_kb(tmp_path, facts, targets=FLEET)
    code, out, _ = cli(root, "list", "--target", "node-03", "--format", "ids")
    assert (code, out.split()) == (0, ["hw.gpus", "hw.one"])
    code, out, _ = cli(root, "list", "--target", "@h100", "--format", "ids")
    assert (code, out.split()) == (0, ["hw.gpus"])
