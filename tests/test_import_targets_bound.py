"""Targets an import cannot add (targets.yaml would pass what factbook reads) leave their
facts unwritten, and targets.yaml's values are written as the emitter writes them.

Found by timing dump shapes (session of 2026-12-07): 18,000 access lines with jump hosts
took 11.8 s a MB (6 s of it handing each target's values to the emitter, only to refuse
the file), and `--write` then wrote 18,181 facts naming targets that were never added: the
knowledge base factbook wrote no longer linted.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from test_blockyaml import Facts

from factbook.commands.cli import run
from factbook.dumps.capture.targetfile import _FLOW_WIDTH, _flow
from factbook.store.blockyaml import flow_member


def _emitter(value: object) -> str:
    text = yaml.safe_dump([value], default_flow_style=True, width=_FLOW_WIDTH, allow_unicode=True)
    return text.strip()[1:-1]


def test_flow_member_is_the_emitters_text() -> None:
    """Random scalars, lists and mappings of them: where flow_member decides, it is the
    emitter's text to the character; it decides most of them."""
    decided = 0
    for seed in range(40):
        facts = Facts(seed, 0.3, [1, 3, 8, 20])
        for _ in range(150):
            value = facts.value(2)
            fast = flow_member(value)
            if fast is not None:
                decided += 1
                assert fast == _emitter(value), value
            assert _flow(value) == _emitter(value), value
    assert decided > 3000


def test_targets_that_do_not_fit_leave_their_facts_unwritten(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    (root / "facts").mkdir(parents=True)
    (root / "milestones.yaml").write_text('milestones:\n  - {id: "1", title: first}\n')
    (root / "targets.yaml").write_text("targets:\n  here: {transport: local}\n")
    lines = [
        f"- ssh u{i}@h{i}.example.invalid -J j{i}@k{i}.invalid runs the server\n"
        for i in range(4000)  # 8,000 targets: about 1.2 MB of targets.yaml
    ]
    dump = tmp_path / "dump.md"
    dump.write_text("# Status\n\n## Access\n\n" + "".join(lines))
    argv = ["--root", str(root), "import", str(dump), "--milestone", "1", "--write"]
    assert run([*argv, "--quiet"]) == 0
    assert run(["--root", str(root), "lint"]) == 0  # nothing written names a missing target
    assert list((root / "facts").glob("*.yaml")) == []
    assert "h1" not in (root / "targets.yaml").read_text()
