"""The writers round 15 did not reach honour the umask: `import --write`, `proposals accept`
and `bench import --record` under umask 022 and 077. Every file and folder they create has
the umask's mode (0644/0755, 0600/0700), none is world-writable, and a shared fact file
they rewrite (0664) keeps its mode."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import cli

from factbook.dumps.capture.review import NewFact, submit

RESULT = {
    "backend": "sglang",
    "dataset_name": "random",
    "completed": 10,
    "duration": 1.0,
    "output_throughput": 812.5,
    "total_output_tokens_retokenized": 5,
    "server_info": {},
}


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_import_accept_and_bench_record_honour_the_umask(
    kb_copy: Path, tmp_path: Path, umask: int
) -> None:
    for name in ("benchmarks.yaml", "hardware.yaml"):
        (kb_copy / "facts" / name).chmod(0o664)
    dump = tmp_path / "dump.md"
    dump.write_text("# Status\n\n## Software\n\n- flashinfer 0.9.1 is installed\n")
    bench = tmp_path / "result.jsonl"
    bench.write_text(json.dumps(RESULT) + "\n")
    fact = {
        "id": "hw.cpu.modes_seen",
        "category": "hardware",
        "title": "CPU threads seen",
        "statement": "The box showed its CPU threads.",
        "status": "assumed",
        "sources": [{"seed": "review.txt"}],
    }
    before = set(kb_copy.rglob("*"))
    previous = os.umask(umask)
    try:
        pid = submit(kb_copy, NewFact(fact), origin="test", reason="seen").pid
        for argv in (
            ["import", str(dump), "--milestone", "4504", "--write"],
            ["proposals", "accept", pid],
            ["bench", "import", str(bench), "--record", "bench.vllm.single_stream", "--force"],
        ):
            code, out, err = cli(kb_copy, *argv)
            assert code == 0, (argv, out[-1500:], err[-1500:])
    finally:
        os.umask(previous)
    made = [p for p in kb_copy.rglob("*") if p not in before and not p.is_symlink()]
    assert any(p.name.endswith(".yaml") and "proposals" in p.parts for p in made), made
    for path in made:
        mode = path.stat().st_mode & 0o777
        want = (0o777 if path.is_dir() else 0o666) & ~umask
        assert mode & 0o002 == 0 and mode == want, (path, oct(mode))
    for name in ("benchmarks.yaml", "hardware.yaml"):  # rewritten, mode kept
        assert (kb_copy / "facts" / name).stat().st_mode & 0o777 == 0o664, name
    assert "812.5" in (kb_copy / "facts" / "benchmarks.yaml").read_text()
    assert "hw.cpu.modes_seen" in (kb_copy / "facts" / "hardware.yaml").read_text()
    texts = [p.read_text() for p in (kb_copy / "facts").glob("*.yaml")]
    assert any("flashinfer 0.9.1" in text for text in texts)  # the import wrote its fact
