"""Hostile inputs, round 5 (issue 25): other people's files that factbook reads as their own
tools do (status dumps, Ansible inventories, ssh configs, results and runs from another
machine), in the same table form and checked by the same `run_case` as
tests/test_hostile_kb.py, plus plain tests where a property needs its own parser.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
from prometheus_client.parser import text_string_to_metric_families as classic_parse
from test_hostile_kb import Case, run_case

from factbook.store.results import ResultRecord
from factbook.verification.openmetrics import to_openmetrics

# fmt: off
CASES: list[Case] = [
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round5(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


def test_openmetrics_of_long_and_hostile_names_is_one_series_each_and_parses() -> None:
    """Label values were clipped bare at 200 characters: two fact ids alike in their first
    200 (lint accepts ids of any length) became one series twice, and prometheus_client's
    OpenMetrics parser refused the whole /metrics page ("Invalid metric grouping"). Bidi
    controls and line separators also reached the page raw."""
    long = "hw." + "x" * 250
    names = [
        long + "1",
        long + "2",
        'a"b',
        "a\nb}",
        "x\\",
        "x\x1b[31m",
        "y\u202ez",
        "a\u2028b",
        "a\ud800b",
    ]
    records = [
        ResultRecord(
            fact=n,
            target='t"}\n',
            outcome="pass",
            reason="r",
            observed=1.5,
            time="2026-01-01T00:00:00Z",
            duration_s=0.5,
        )
        for n in names
    ]
    text = to_openmetrics(records, {"finished": "2026-01-01T00:00:00Z", "elapsed_s": 1.0})
    for parse in (om_parse, classic_parse):
        families = {f.name: f for f in parse(text)}
        facts = {s.labels["fact"] for s in families["factbook_check_observed"].samples}
        assert len(facts) == len(names)
    assert not any(ch in text for ch in ("\x1b", "\u202e", "\u2028", "\ud800"))
