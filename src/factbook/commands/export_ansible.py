"""`factbook export-ansible`: the facts and their last results as Ansible facts.d JSON
(ansible_facts.py); playbooks gate on `ansible_local.factbook`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export-ansible",
        help="write facts and last results as Ansible facts.d JSON (ansible_local.factbook)",
        description=(
            "Write the facts and their latest results as one JSON document for Ansible's "
            "facts.d: save it as /etc/ansible/facts.d/factbook.fact on the box and read it "
            "in plays as ansible_local.factbook. See docs/integrations.md for a gating playbook."
        ),
    )
    p.add_argument(
        "--target", metavar="T", help="only this target's results (the host a play runs on)"
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE_OR_DIR",
        help="write here, not stdout; a folder (existing, or named with a trailing /, made "
        "if missing) gets factbook.fact; mode 0644, never executable",
    )
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from factbook.errors import UsageError
    from factbook.integrations.ansible_facts import local_facts
    from factbook.knowledge.kb import load_kb
    from factbook.knowledge.names import known_names
    from factbook.store.atomic import write_output
    from factbook.store.results import load_latest

    kb = load_kb(Path(args.root))
    latest = load_latest(kb.root)
    if args.target is not None:
        known = set(kb.targets) | {t for by in latest.values() for t in by}
        if args.target not in known:
            raise UsageError(
                f"unknown target '{args.target}' (known: {known_names(sorted(known))})"
            )
    text = json.dumps(local_facts(kb, latest, args.target), indent=1, allow_nan=False) + "\n"
    if not args.output or args.output == "-":  # `-` is standard output, as `status --out -`
        # (it wrote a file named `-` into the current folder, and `--out -` prefixes --output)
        sys.stdout.write(text)
        return 0
    path = Path(args.output)
    # a trailing slash or an existing folder is a folder (made if missing), as in facts.d/
    if path.is_dir() or args.output.endswith(("/", os.sep)):
        path.mkdir(parents=True, exist_ok=True)
        path = path / "factbook.fact"
    elif not path.parent.is_dir():
        raise UsageError(f"-o {args.output}: folder {path.parent} does not exist")
    if not write_output(path, text):  # a device or a pipe keeps its own mode
        os.chmod(path, 0o644)  # Ansible runs an executable .fact file instead of reading it
    print(f"wrote {path}", file=sys.stderr)
    return 0
