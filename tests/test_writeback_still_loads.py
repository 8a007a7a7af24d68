"""Write-back refuses an edit after which a fact it edits would no longer load.

Hostile round 15 found `record()` writing facts the loader then dropped or refused (an
infinite value, a status outside the vocabulary, a key only another category has, a check
that is no mapping); the runbook path was fixed there, and every other writer (`verify
--record`, `bench import --record`, discover, the API) goes through `update_fact`, which now
asks the same of each fact it edits. The knowledge base lints clean after every refusal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from factbook.api import lint
from factbook.errors import WritebackError
from factbook.store.writeback import FactUpdate, update_fact, update_facts


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"status": "bogus"}, "status: 'bogus' is not one of"),
        ({"value": float("inf")}, "value: unsupported value"),
        ({"set_fields": {"symptom": "x"}}, "key 'symptom' is only for category pitfalls"),
        ({"set_fields": {"check": 5}}, "check: expected mapping"),
        ({"set_fields": {"tags": "gpu"}}, "tags: expected list"),
    ],
)
def test_an_edit_that_would_drop_the_fact_is_refused(
    kb_copy: Path, change: dict[str, Any], why: str
) -> None:
    before = (kb_copy / "facts" / "hardware.yaml").read_bytes()
    with pytest.raises(WritebackError) as refused:
        update_fact(kb_copy, "hw.gpu.count", **change)
    assert "fact 'hw.gpu.count' would no longer load" in str(refused.value)
    assert why in str(refused.value) and "not written" in str(refused.value)
    assert (kb_copy / "facts" / "hardware.yaml").read_bytes() == before
    assert lint(kb_copy) == []


def test_batch_updates_refuse_only_the_fact_that_would_not_load(kb_copy: Path) -> None:
    written, refused = update_facts(
        kb_copy,
        [
            FactUpdate("hw.gpu.count", status="bogus"),
            FactUpdate("sw.vllm.version", status="verified"),
        ],
    )
    assert len(refused) == 1 and "hw.gpu.count" in refused[0]
    assert "would no longer load" in refused[0]
    assert [u.fact_id for u in written] == ["sw.vllm.version"]
    assert lint(kb_copy) == []


def test_ordinary_edits_are_written(kb_copy: Path) -> None:
    update_fact(kb_copy, "hw.gpu.count", value=8, status="verified", set_fields={"unit": "GPUs"})
    assert lint(kb_copy) == []
