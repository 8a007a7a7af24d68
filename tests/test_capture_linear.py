"""The importer's heuristics are linear in the text they read (issue 25 item 5: import runs
in at most 1 s per MB, whatever the knowledge base or the dump says).

`A[^.;]*B` and `\\s+X` patterns backtrack quadratically on `where where ...` or a run of
spaces: an hour for 1 MB. Each check here times one pattern on 1 MB of the text that was
worst for it (the bound is loose: two shared cores), and the rewritten word-order patterns
are compared with the regexes they replace on random text.
"""

from __future__ import annotations

import random
import re
import time
from types import SimpleNamespace
from typing import Any

import pytest

from factbook.dumps.capture import boxes, classify
from factbook.dumps.capture.pitfall import split_pitfall

MB = 1_000_000
# seconds one pattern may take on 1 MB: the linear ones take 0.1-2.5 s on a loaded 2-core
# machine (CI ran one at 2.39 s), the quadratic and exponential ones they replace minutes
LINEAR_S = 8.0
OLD_KNOWN = re.compile(r"\b(?:run|runs)\b[^.;]*\bhere\b|\bwhere\b.*\bruns?\b", re.I)
OLD_WORK = re.compile(
    r"\bwhere\b[^.;]*\b(?:run|runs|running|happens?)\b"
    r"|\b(?:run|runs|running) (?:here|inside|there|on it)\b"
    r"|\b(?:all|every)\b[^.;]*\b(?:serving|builds?|benchmarks?|training|inference)\b[^.;]*\bruns?\b"
    r"|\bserving (?:container|node|box|host|vm|machine|pod)\b|\bonly visible on\b",
    re.I,
)
WORDS = [
    "where",
    "Where",
    "run",
    "RUN",
    "runs",
    "running",
    "here",
    "happens",
    "all",
    "every",
    "serving",
    "builds",
    "training",
]
WORDS += [".", ";", "\n", "here.", "run;", "x", "box", "only visible on", "inside", "there"]


def _mb(unit: str) -> str:
    return unit * (MB // len(unit))


def _seconds(search: Any, text: str) -> float:
    started = time.perf_counter()
    search(text)
    return time.perf_counter() - started


def test_word_order_patterns_match_where_the_regexes_did() -> None:
    rng = random.Random(25)
    for _ in range(5000):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12)))
        assert boxes.WORK.search(text) == bool(OLD_WORK.search(text)), text
        assert boxes._KNOWN_WORK.search(text) == bool(OLD_KNOWN.search(text)), text


@pytest.mark.parametrize("unit", ["where ", "run ", "all every serving ", "every builds "])
def test_work_cues_are_linear(unit: str) -> None:
    text = _mb(unit)
    assert _seconds(boxes.WORK.search, text) < LINEAR_S
    assert _seconds(boxes._KNOWN_WORK.search, text) < LINEAR_S


@pytest.mark.parametrize("unit", ["where ", "run here ", "proxmox ct ", " "])
def test_a_known_targets_description_is_read_in_bounded_time(unit: str) -> None:
    target = SimpleNamespace(description=_mb(unit), host="box.invalid", user="root", port=None)
    assert _seconds(lambda _: boxes._known("box", target), "") < 0.5


@pytest.mark.parametrize(
    "unit", ["ssh -a ", "ssh -", "6", "1234 ", " "], ids=["opts", "dashes", "digits", "num", "sp"]
)
def test_content_rules_are_linear(unit: str) -> None:
    text = _mb(unit)
    for pattern in (classify.ACCESS, classify.TOKEN, classify.FIGURE, classify.HARDWARE):
        assert _seconds(pattern.search, text) < LINEAR_S, pattern.pattern[:40]


@pytest.mark.parametrize("body", [" " * MB, _mb(" -"), _mb(" but ")], ids=["sp", "dash", "but"])
def test_pitfall_clauses_are_linear(body: str) -> None:
    assert _seconds(split_pitfall, "a" + body + "b") < LINEAR_S
