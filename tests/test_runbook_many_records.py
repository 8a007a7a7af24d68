"""A step that records many different facts writes them back in one pass per fact file.

Each record() was its own write-back: the fact file read, composed, checked and written
again for every fact, so a step recording 2,000 benchmark facts was quadratic in the file
(round 22 merged the calls for one fact; this is the same for many facts).
"""

from __future__ import annotations

import time
from pathlib import Path

import yaml
from runbook_kit import make_kb, run_cli, write_runbook

from factbook.knowledge.kb import load_kb

COUNT = 2000


def _many(root: Path) -> list[str]:
    ids = [f"bench.m{i}" for i in range(COUNT)]
    lines = ["# many measured facts; this comment must survive write-back", "facts:"]
    for fact_id in ids:
        lines += [
            f"  - id: {fact_id}",
            "    category: benchmarks",
            "    title: A measure",
            "    statement: measured by the step",
            "    value: 0",
            "    metric: speed",
            "    status: assumed",
            "    sources: [{note: seed}]",
        ]
    (root / "facts" / "many.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ids


def test_a_step_recording_2000_facts_writes_them_in_one_pass(tmp_path: Path) -> None:
    root = make_kb(tmp_path)
    ids = _many(root)
    code = (
        "from factbook.runbooks.api import record\n"
        f"for i in range({COUNT}):\n    record(f'bench.m{{i}}', i * 2)"
    )
    write_runbook(root, "many", [({"name": "measure", "records": ids}, code)])
    started = time.monotonic()
    done = run_cli(root, "run", "many", "--yes", timeout=300)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    assert took < 60, f"{COUNT} records took {took:.1f} s"
    kb = load_kb(root)
    assert [kb.facts[i].value for i in ids[:3]] == [0, 2, 4]
    assert kb.facts[ids[-1]].value == 2 * (COUNT - 1) and kb.facts[ids[-1]].status == "verified"
    text = (root / "facts" / "many.yaml").read_text(encoding="utf-8")
    assert text.startswith("# many measured facts; this comment must survive write-back")
    sources = yaml.safe_load(text)["facts"][5]["sources"]
    assert len(sources) == 2 and sources[1]["runbook"] == "many"
