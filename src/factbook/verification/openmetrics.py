"""Verification results as OpenMetrics text, for Prometheus and node_exporter's textfile collector.

    verify-facts --format openmetrics -o /var/lib/node_exporter/textfile/factbook.prom
    factbook serve   # the same text at http://127.0.0.1:9798/metrics

Only gauges are written, with `# EOF` last, so the one text is valid OpenMetrics 1.0 and valid
classic Prometheus text (0.0.4), which is what the textfile collector reads: the classic
parser takes `# UNIT` and `# EOF` for comments. Per fact and target:

    factbook_check_status{fact,target,category,outcome}   1 for the outcome it had, 0 for the others
    factbook_check_observed{fact,target,category}         the observed value, when it is a number
    factbook_check_duration_seconds{fact,target}          how long the check ran on the box
    factbook_check_timestamp_seconds{fact,target}         when it was observed (Unix time)

and per run `factbook_checks{outcome}`, `factbook_run_timestamp_seconds`,
`factbook_run_duration_seconds`. Label values are escaped as the format wants (backslash,
quote, newline) after every control character from a box is shown escaped (sanitize.py), so
no text a box prints can end a label or start a sample line.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from factbook.judging.outcomes import OUTCOMES
from factbook.judging.sanitize import for_document
from factbook.store.results import ResultRecord

CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
CLASSIC_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_LABEL_LIMIT = 200  # a label value longer than this is clipped (Prometheus stores every one)


def label_value(text: Any) -> str:
    """A label value: controls, bidi controls and line separators shown escaped, then `\\`,
    `"` and newline escaped as the format wants. A value longer than the limit keeps its
    start and ends in `~` and a digest of the whole: clipped bare, two fact ids alike in
    their first 200 characters (a valid knowledge base may hold them) became one series
    twice, and a duplicate series makes the whole exposition invalid (prometheus_client's
    parser refused every sample of the page)."""
    whole = str(text)
    clean = for_document(whole)
    if len(clean) > _LABEL_LIMIT:
        digest = hashlib.sha256(whole.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        clean = clean[: _LABEL_LIMIT - 13] + "~" + digest
    return clean.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**pairs: Any) -> str:
    return "{" + ",".join(f'{k}="{label_value(v)}"' for k, v in pairs.items()) + "}"


def number(value: Any) -> float | None:
    """The observed value as a sample, when it is one number (bools count as 0/1)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        try:
            out = float(value)
        except OverflowError:  # an int of thousands of digits
            return None
        return out if math.isfinite(out) else None
    return None


def epoch(stamp: Any) -> float | None:
    """An ISO 8601 time (`2026-12-01T00:17:51Z`) as Unix seconds; None when unreadable."""
    text = str(stamp or "")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.timestamp()


def _sample(value: float) -> str:
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


def _family(name: str, help_text: str, unit: str = "") -> list[str]:
    lines = [f"# TYPE {name} gauge"]
    if unit:
        lines.append(f"# UNIT {name} {unit}")
    lines.append(f"# HELP {name} {help_text}")
    return lines


def to_openmetrics(
    records: Iterable[ResultRecord],
    header: dict[str, Any],
    categories: dict[str, str] | None = None,
) -> str:
    """The run's records as OpenMetrics text; `categories` maps fact ids to their category
    (records carry none; a fact unknown to the map gets category "")."""
    records = list(records)
    categories = categories or {}
    status = _family(
        "factbook_check_status",
        "1 for the outcome the fact's check had on the target, 0 for the other outcomes",
    )
    observed = _family(
        "factbook_check_observed", "the value the check observed, where it is a number"
    )
    duration = _family(
        "factbook_check_duration_seconds", "how long the check ran on the target", "seconds"
    )
    stamp = _family(
        "factbook_check_timestamp_seconds", "when the check observed the target", "seconds"
    )
    seen: set[tuple[str, str]] = set()
    for r in records:
        key = (label_value(r.fact), label_value(r.target))
        if key in seen:  # a series may appear once (as written); the first record wins
            continue
        seen.add(key)
        category = categories.get(r.fact, "")
        for outcome in OUTCOMES:
            labels = _labels(fact=r.fact, target=r.target, category=category, outcome=outcome)
            status.append(f"factbook_check_status{labels} {int(r.outcome == outcome)}")
        value = number(r.observed)
        if value is not None:
            labels = _labels(fact=r.fact, target=r.target, category=category)
            observed.append(f"factbook_check_observed{labels} {_sample(value)}")
        took = number(r.duration_s)
        if took is not None and took >= 0:
            duration.append(
                f"factbook_check_duration_seconds{_labels(fact=r.fact, target=r.target)} "
                f"{_sample(took)}"
            )
        when = epoch(r.time)
        if when is not None:
            stamp.append(
                f"factbook_check_timestamp_seconds{_labels(fact=r.fact, target=r.target)} "
                f"{_sample(when)}"
            )
    found = Counter(r.outcome for r in records)
    summary = _family("factbook_checks", "checks in the run by outcome")
    summary += [f"factbook_checks{_labels(outcome=k)} {found.get(k, 0)}" for k in OUTCOMES]
    lines = status + observed + duration + stamp + summary
    finished = epoch(header.get("finished"))
    if finished is not None:
        lines += _family("factbook_run_timestamp_seconds", "when the run finished", "seconds")
        lines.append(f"factbook_run_timestamp_seconds {_sample(finished)}")
    elapsed = number(header.get("elapsed_s"))
    if elapsed is not None and elapsed >= 0:
        lines += _family("factbook_run_duration_seconds", "how long the run took", "seconds")
        lines.append(f"factbook_run_duration_seconds {_sample(elapsed)}")
    return "\n".join(lines) + "\n# EOF\n"
