"""Rewrite the built-in probe table in docs/verify.md from the probe functions' declarations.

Run after adding or changing a built-in probe; tests/test_probes_catalog.py fails until then.
"""

from __future__ import annotations

import sys
from pathlib import Path

from factbook.probes.catalog import probe_table

START, END = "<!-- probe-table:start", "<!-- probe-table:end -->"


def main() -> int:
    path = Path(__file__).resolve().parent.parent / "docs" / "verify.md"
    text = path.read_text(encoding="utf-8")
    if START not in text or END not in text:
        print(f"{path}: no {START} ... {END} markers", file=sys.stderr)
        return 1
    head = text[: text.index("\n", text.index(START)) + 1]
    tail = text[text.index(END) :]
    new = head + probe_table() + tail
    if new != text:
        path.write_text(new, encoding="utf-8")
        print(f"updated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
