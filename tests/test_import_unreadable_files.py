"""`factbook import` into a knowledge base with a file that is not UTF-8 (issue 25, class 6:
tracebacks left). Lint names such a file; import read it whole while comparing the scratch
copy with the real one, or while adding targets, and a UnicodeDecodeError escaped the CLI.
Now the facts bound for it (or for a target it would hold) are not applied, each saying why
with the file:line, and the rest of the dump is imported."""

from __future__ import annotations

from pathlib import Path

from helpers import cli

MILESTONES = "milestones:\n  - {id: '1', title: start}\n"
LOCAL = "targets:\n  here: {transport: local}\n"
LATIN1_FACT = (
    b"facts:\n  - id: hw.x\n    category: hardware\n    title: caf\xe9\n    statement: x\n"
    b"    status: assumed\n    sources: [{seed: a}]\n"
)


def _kb(root: Path, targets: bytes, facts: dict[str, bytes]) -> Path:
    (root / "facts").mkdir(parents=True)
    (root / "milestones.yaml").write_text(MILESTONES, encoding="utf-8")
    (root / "targets.yaml").write_bytes(targets)
    for name, data in facts.items():
        (root / "facts" / name).write_bytes(data)
    return root


def _import(kb: Path, dump: Path, text: str, *more: str) -> tuple[int, str]:
    dump.write_text(text, encoding="utf-8")
    code, out, err = cli(kb, "import", str(dump), "--milestone", "1", *more)
    return code, out + err


def test_a_fact_file_not_utf8_takes_no_facts_and_stops_nothing(tmp_path: Path) -> None:
    kb = _kb(tmp_path / "kb", LOCAL.encode(), {"hardware.yaml": LATIN1_FACT})
    dump = "# S\n\n## Hardware\n\n- 8x NVIDIA H200 GPUs\n\n## Software\n\n- torch 2.5.1\n"
    code, said = _import(kb, tmp_path / "d.md", dump, "--write")
    assert code in (0, 1) and "Traceback" not in said and "UnicodeDecodeError" not in said, said
    assert "facts/hardware.yaml: not UTF-8 text; not written" in said, said
    assert (kb / "facts" / "hardware.yaml").read_bytes() == LATIN1_FACT  # never touched
    assert "torch" in (kb / "facts" / "software.yaml").read_text(encoding="utf-8")


def test_a_targets_file_not_utf8_takes_no_targets(tmp_path: Path) -> None:
    targets = LOCAL.encode() + b"# caf\xe9\n"
    kb = _kb(tmp_path / "kb", targets, {})
    dump = "# S\n\n## Access\n\n- ssh root@box1.example.invalid\n"
    code, said = _import(kb, tmp_path / "d.md", dump, "--write")
    assert code in (0, 1) and "Traceback" not in said and "UnicodeDecodeError" not in said, said
    assert "targets.yaml:3: not UTF-8" in said, said
    assert (kb / "targets.yaml").read_bytes() == targets


def test_a_fact_file_with_a_python_tag_takes_no_facts(tmp_path: Path) -> None:
    """A ConstructorError escaped import (and proposals accept) when the file the new facts
    go to holds a tag the loader refuses: now they are not applied, with its file:line."""
    tagged = LATIN1_FACT.replace(b"caf\xe9", b"x").replace(
        b"    status:", b"    value: !!python/name:os.system\n    status:"
    )
    kb = _kb(tmp_path / "kb", LOCAL.encode(), {"hardware.yaml": tagged})
    code, said = _import(kb, tmp_path / "d.md", "# S\n\n## Hardware\n\n- 8x NVIDIA H200 GPUs\n")
    assert code in (0, 1) and "Traceback" not in said and "ConstructorError" not in said, said
    assert "facts/hardware.yaml:6: not YAML factbook reads (could not determine" in said, said
