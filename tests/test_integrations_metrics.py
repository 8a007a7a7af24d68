"""OpenMetrics output read back by prometheus_client's two real parsers (OpenMetrics 1.0 and the
classic text format that node_exporter's textfile collector reads)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
from prometheus_client.parser import text_string_to_metric_families as classic_parse

from factbook.store.results import ResultRecord
from factbook.verification.openmetrics import to_openmetrics
from tests.helpers import cli, local_trio, make_kb


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    return make_kb(tmp_path / "kb", local_trio())


def _samples(text: str, parse=om_parse) -> dict[tuple[str, frozenset], float]:
    out = {}
    for family in parse(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def test_verify_openmetrics_parses_in_both_formats(kb: Path) -> None:
    code, text, _ = cli(kb, "verify", "--format", "openmetrics", "--no-save")
    assert code == 1  # one fact drifted
    assert text.endswith("# EOF\n")
    om = _samples(text)
    classic = _samples(text, classic_parse)
    assert om == classic  # the same series whichever parser the scraper uses
    threads = os.cpu_count()
    key = frozenset({"fact": "hw.cpu.too_many", "target": "local", "category": "hardware"}.items())
    assert om[("factbook_check_observed", key)] == threads
    status = {
        outcome: om[("factbook_check_status", key | {("outcome", outcome)})]
        for outcome in ("pass", "drift", "error", "skipped")
    }
    assert status == {"pass": 0, "drift": 1, "error": 0, "skipped": 0}
    passed = frozenset(
        {
            "fact": "hw.cpu.threads",
            "target": "local",
            "category": "hardware",
            "outcome": "pass",
        }.items()
    )
    assert om[("factbook_check_status", passed)] == 1
    assert om[("factbook_checks", frozenset({("outcome", "drift")}))] == 1
    assert om[("factbook_checks", frozenset({("outcome", "pass")}))] == 2
    # env.var observes a string: a status, no observed sample
    home = frozenset({"fact": "sw.env.home", "target": "local", "category": "software"}.items())
    assert ("factbook_check_observed", home) not in om
    durations = [v for (n, _), v in om.items() if n == "factbook_check_duration_seconds"]
    assert len(durations) == 3 and all(v >= 0 for v in durations)
    run_at = om[("factbook_run_timestamp_seconds", frozenset())]
    stamps = [v for (n, _), v in om.items() if n == "factbook_check_timestamp_seconds"]
    assert len(stamps) == 3 and all(abs(run_at - v) < 120 for v in stamps)


def test_hostile_text_from_a_box_stays_inside_its_label() -> None:
    evil = 'x"} 1\nfactbook_checks{outcome="pass"} 999\n\x1b[31m\\'
    records = [
        ResultRecord(
            fact="f.one",
            target=evil,
            outcome="error",
            reason=evil,
            observed=float("nan"),
            time="not a time",
            duration_s=-1,
        ),
        ResultRecord(fact="f.two", target="t", outcome="pass", reason="", observed=10**5000),
    ]
    text = to_openmetrics(records, {"finished": "2026-12-01T00:00:00Z", "elapsed_s": 1.5})
    for parse in (om_parse, classic_parse):
        samples = _samples(text, parse)
        assert samples[("factbook_checks", frozenset({("outcome", "pass")}))] == 1
        targets = {dict(labels).get("target") for (_, labels) in samples}
        # newlines survive as the format escapes them; ESC is shown as text, never sent raw
        assert 'x"} 1\nfactbook_checks{outcome="pass"} 999\n\\x1b[31m\\' in targets
        assert not any(n == "factbook_check_observed" for (n, _) in samples)
        assert samples[("factbook_run_duration_seconds", frozenset())] == 1.5
