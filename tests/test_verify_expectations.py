"""Every expectation operator, evaluated as verify does, with loose versions and paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from factbook.judging.expectations import evaluate, problems_in
from factbook.knowledge.kb import load_kb
from factbook.verification.collect import evaluate_result
from tests.helpers import fact, make_kb

TOPO = {"nvlink": False, "links": ["NODE", "SYS"], "gpus": [{"mem": 97887}, {"mem": 97887}]}

CASES = [
    ({"eq": 8}, 8, True),
    ({"eq": 8}, "8", True),
    ({"eq": "12.0"}, "12.0", True),
    ({"ne": 8}, 4, True),
    ({"gt": 90}, 90.0, False),
    ({"ge": 90}, 90.0, True),
    ({"lt": 2}, 1, True),
    ({"le": 1}, 2, False),
    ({"between": [60, 95]}, 63.6, True),
    ({"between": [60, 95]}, 96, False),
    ({"approx": {"value": 143771, "rel": 0.02}}, 141000, True),
    ({"approx": {"value": 100, "abs": 1}}, 102, False),
    ({"contains": "RTX PRO 6000"}, "NVIDIA RTX PRO 6000 Blackwell", True),
    ({"contains": "EAGLE3"}, ["EAGLE", "EAGLE3"], True),
    ({"regex": r"^12\.8"}, "12.8.93", True),
    ({"one_of": [5, "5"]}, 5, True),
    ({"exists": True}, None, False),
    ({"exists": False}, None, True),
    ({"length": 8}, list(range(8)), True),
    ({"length": {"ge": 9}}, list(range(8)), False),
    ({"version": "==0.16.0rc2.dev344+gea5f903f8"}, "0.16.0rc2.dev344+gea5f903f8", True),
    ({"version": ">=0.16.0rc1,<0.17"}, "0.16.0rc2.dev344+gea5f903f8", True),
    ({"version": ">=0.16.0"}, "0.16.0rc2.dev344+gea5f903f8", False),
    ({"version": "==590.48.01"}, "590.48.01", True),
    ({"version": ">590.9"}, "590.48.01", True),
    ({"version": "==12.8.*"}, "12.8.93", True),
    ({"version": "==2.10.0+cu128"}, "2.10.0+cu128", True),
    ({"each": {"contains": "H200"}}, ["NVIDIA H200", "NVIDIA H200"], True),
    ({"each": {"eq": "9.0"}}, ["9.0", "8.0"], False),
    ({"all": [{"ge": 1}, {"le": 8}]}, 8, True),
    ({"any": [{"eq": 1}, {"eq": 2}]}, 3, False),
    ({"not": {"eq": 1}}, 2, True),
    ({"path": "nvlink", "eq": False}, TOPO, True),
    ({"path": "gpus[1].mem", "approx": {"value": 97887, "rel": 0.01}}, TOPO, True),
    ({"path": "missing", "eq": 1}, TOPO, False),
]


@pytest.mark.parametrize("expect,observed,passed", CASES)
def test_operator(expect: dict, observed: object, passed: bool) -> None:
    assert problems_in(expect) == []
    assert evaluate(expect, observed).passed is passed


def test_drift_shows_expected_observed_and_location(tmp_path: Path) -> None:
    root = make_kb(tmp_path, [fact("hw.gpu.count", "gpu.count", {"eq": 8}, target="local")])
    f = load_kb(root).get("hw.gpu.count")
    record = evaluate_result(f, "local", {"ok": True, "value": 4, "duration_s": 0.1}, "run1")
    assert record.outcome == "drift"
    assert record.reason == f"expected eq 8, observed 4 [{f.location}]"
    assert f.location.startswith("facts/facts.yaml:")
    assert evaluate_result(f, "local", {"ok": True, "value": 8}, "r").outcome == "pass"
    error = evaluate_result(f, "local", {"error": "nvidia-smi not found on target"}, "r")
    assert error.outcome == "error" and error.reason.endswith(f"[{f.location}]")
    skip = evaluate_result(f, "local", {"skipped": "module missing on target: torch"}, "r")
    assert skip.outcome == "skipped"
    # A value the expectation cannot apply to drifts with the reason, not a crash.
    odd = evaluate_result(f, "local", {"ok": True, "value": {"a": 1}}, "r")
    assert (odd.outcome == "drift" and "observed" in odd.reason) or "cannot" in odd.reason


def test_version_drift_names_the_scheme_and_location(tmp_path: Path) -> None:
    torch = fact("sw.torch", "pkg.version", {"version": ">2.10.0"}, args={"name": "torch"})
    root = make_kb(tmp_path, [{**torch, "target": "local"}])
    f = load_kb(root).get("sw.torch")
    record = evaluate_result(f, "local", {"ok": True, "value": "2.10.0+cu128"}, "r")
    assert record.outcome == "drift"
    assert record.reason == (
        f"expected version '>2.10.0' (PEP 440), observed '2.10.0+cu128' [{f.location}]"
    )
    ok = evaluate_result(f, "local", {"ok": True, "value": "2.11.0-custom"}, "r")
    assert ok.outcome == "pass" and "(loose)" in ok.reason
