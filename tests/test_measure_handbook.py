"""Measured facts from verify to the handbook: figure, share of the stated limit, history over
runs, and a drift that names the GPU. Two real `verify` runs of a knowledge-base probe named
`measure.*` (so the agent schedules it as a measurement) feed the real generator."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import cli, fact, make_kb

from factbook.handbook.generator import Generator
from factbook.handbook.measured import figure, limits_in
from factbook.judging.expectations import evaluate
from factbook.knowledge.kb import load_kb

REPORT_PROBE = """
import json
def report(path):
    with open(path) as handle:
        values = json.load(handle)
    return {"unit": "TFLOP/s", "values": values, "worst": min(values.values())}
PROBES = {"measure.report": report}
"""

EXPECT = {
    "all": [
        {"path": "worst", "share": {"of": 1000, "ge": 0.6}},
        {"path": "values", "near_median": 0.1},
    ]
}


def test_share_and_near_median_judge_a_report() -> None:
    good = {"worst": 700.0, "values": {"GPU0": 700.0, "GPU1": 720.0}}
    assert evaluate(EXPECT, good).passed
    slow = {"worst": 500.0, "values": {"GPU0": 700.0, "GPU1": 720.0, "GPU2": 500.0}}
    outcome = evaluate(EXPECT, slow)
    assert not outcome.passed
    assert outcome.reason == "expected share >= 60% of 1000, observed 500 = 50.0%"
    drift = evaluate({"path": "values", "near_median": 0.1}, slow)
    assert drift.reason == "GPU2 500 is 29% below the median 700, allowed 10%"


def test_limits_are_found_under_all_and_paths() -> None:
    assert limits_in(EXPECT) == [("worst", 1000.0)]
    assert limits_in({"path": "h2d", "all": [{"path": "worst", "share": {"of": 63}}]}) == [
        ("worst", 63.0)
    ]


def test_handbook_shows_figure_share_history_and_the_drifting_gpu(tmp_path: Path) -> None:
    figures = tmp_path / "figures.json"
    root = make_kb(
        tmp_path / "kb",
        [
            fact(
                "hw.measure.matmul",
                "measure.report",
                EXPECT,
                args={"path": str(figures)},
                target="local",
                unit="TFLOP/s",
            )
        ],
        checks={"report.py": REPORT_PROBE},
    )
    figures.write_text(json.dumps({"GPU0": 712.0, "GPU1": 705.0, "GPU2": 709.0}))
    code, out, err = cli(root, "verify", "--target", "local")
    assert code == 0, out + err
    figures.write_text(json.dumps({"GPU0": 710.0, "GPU1": 712.0, "GPU2": 620.0}))
    code, out, err = cli(root, "verify", "--target", "local")
    assert code != 0, out + err  # the drift fails the run

    kb = load_kb(root)
    name, value, limit = figure(kb.facts["hw.measure.matmul"], {"worst": 620.0})
    assert (name, value, limit) == ("worst", 620.0, 1000.0)

    page = Generator().generate(root).pages["facts/hardware.md"]
    assert "Measured on local" in page
    assert "worst 620 TFLOP/s = 62% of 1000 (GPU0 710, GPU1 712, GPU2 620)" in page
    history = next(line for line in page.splitlines() if "Measured history" in line)
    first, second = history.index("705 (70%) pass"), history.index("620 (62%) drift")
    assert first < second  # oldest first
    drift = next(line for line in page.splitlines() if "Drift on local" in line)
    assert "GPU2 620 is 13% below the median 710, allowed 10%" in drift
