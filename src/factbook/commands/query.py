"""`factbook list` and `factbook show`: find any fact, as of any milestone."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from factbook.commands.cli_options import warn_lint_problems
from factbook.errors import InputError, Problem
from factbook.judging.sanitize import for_document, for_terminal
from factbook.knowledge.fleet.load import add_inventories
from factbook.knowledge.kb import KnowledgeBase, load_kb_with_problems
from factbook.knowledge.model import Fact
from factbook.knowledge.names import shown
from factbook.knowledge.schema import CATEGORIES, STATUSES
from factbook.store.results import latest_for


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "list",
        help="list facts, filtered by category, tag, status, target, milestone",
        description="List facts. Patterns are ids or globs (hw.gpu.*). Filters combine with AND.",
    )
    p.add_argument("patterns", nargs="*", metavar="ID_OR_GLOB")
    p.add_argument("-c", "--category", action="append", default=[], choices=CATEGORIES)
    p.add_argument("-t", "--tag", action="append", default=[])
    p.add_argument("-s", "--status", action="append", default=[], choices=STATUSES)
    p.add_argument(
        "--target",
        action="append",
        default=[],
        help="facts checked on this target (a name, @group, glob, tag:NAME or a:&b:!c)",
    )
    p.add_argument(
        "--inventory", "-i", action="append", default=[], metavar="FILE",
        help="also read targets and groups from an Ansible inventory or ssh config",
    )  # fmt: skip
    p.add_argument(
        "--as-of", metavar="MILESTONE", help="what was known then (e.g. 3157, 3478, 4504)"
    )
    p.add_argument("--format", choices=["table", "json", "ids"], default="table")
    p.set_defaults(handler=handle_list)

    s = sub.add_parser(
        "show",
        help="show one fact: statement, value, provenance, check, links, last verification",
    )
    s.add_argument("fact_id", metavar="ID")
    s.add_argument("--as-of", metavar="MILESTONE")
    s.add_argument("--format", choices=["text", "json"], default="text")
    s.set_defaults(handler=handle_show)


def _load(root: str) -> KnowledgeBase:
    """Queries work on a knowledge base with lint problems; they only warn."""
    kb, problems = load_kb_with_problems(Path(root))
    warn_lint_problems(len(problems))
    return kb


def _one_line(text: Any) -> str:
    """A field for a terminal line: every control and bidi character shown escaped (lint
    reports them, but a fact with a lint problem is still listed), nothing clipped."""
    text = str(text)
    return for_terminal(text, limit=len(text) * 6)  # an escape is at most 6 characters


def _value_text(fact: Fact) -> str:
    if fact.value is None:
        return ""
    text = fact.value if isinstance(fact.value, str) else json.dumps(fact.value)
    return f"{text} {fact.unit}" if fact.unit else text


def handle_list(args: argparse.Namespace) -> int:
    kb = _load(args.root)
    kb.targets, kb.groups = add_inventories(kb.targets, kb.groups, args.inventory)
    as_of = kb.milestone(args.as_of)
    facts = kb.select(
        patterns=args.patterns,
        categories=args.category,
        tags=args.tag,
        statuses=args.status,
        targets=args.target,
        as_of=as_of,
    )
    if args.format == "ids":
        for fact in facts:
            print(_one_line(fact.id))
    elif args.format == "json":
        print(json.dumps([fact_to_dict(kb, f, as_of) for f in facts], indent=1, default=str))
    else:
        _print_table(kb, facts, as_of)
    return 0


def fit(line: str, width: int) -> str:
    """`line` within `width` columns, cut at a word boundary with `…` (never mid-word)."""
    if len(line) <= width:
        return line
    cut = line.rfind(" ", 0, width)
    return line[: cut if cut > 0 else width - 1].rstrip(" =,;:-") + "…"


def _print_table(kb: KnowledgeBase, facts: list[Fact], as_of: Any) -> None:
    # a terminal gets lines cut to its width (at a word); a pipe or file gets them whole
    width = shutil.get_terminal_size((120, 20)).columns if sys.stdout.isatty() else None
    id_w = min(max((len(f.id) for f in facts), default=2), 48)
    for fact in facts:
        status = kb.status_as_of(fact, as_of)
        text = fact.title
        if fact.get("state"):
            text = f"[{fact.get('state')}] {text}"
        value = _value_text(fact)
        if value:
            text += f" = {value}"
        line = _one_line(f"{fact.id:<{id_w}}  {fact.category:<12} {status:<9} {text}")
        print(fit(line, max(width, 60)) if width else line)
    label = f" as of {as_of.id}" if as_of else ""
    print(f"({len(facts)} facts{label})")


def fact_to_dict(kb: KnowledgeBase, fact: Fact, as_of: Any = None) -> dict[str, Any]:
    data = asdict(fact)
    data["status_as_of"] = kb.status_as_of(fact, as_of)
    data.update(data.pop("extra"))
    return {k: v for k, v in data.items() if v not in (None, [], {})}


def handle_show(args: argparse.Namespace) -> int:
    kb, problems = load_kb_with_problems(Path(args.root))
    warn_lint_problems(len(problems))
    as_of = kb.milestone(args.as_of)
    if args.fact_id not in kb.facts:
        _not_loaded(args.fact_id, problems)
    fact = kb.get(args.fact_id)
    results = latest_for(kb.root, fact.id)
    if args.format == "json":
        data = fact_to_dict(kb, fact, as_of)
        data["results"] = [asdict(r) for r in results]
        print(json.dumps(data, indent=1, default=str))
        return 0
    status = kb.status_as_of(fact, as_of)
    for line in _show_lines(kb, fact, status, as_of, results):
        print(line)
    return 0


def _not_loaded(fact_id: str, problems: list[Problem]) -> None:
    """A fact its file holds but the loader refused (a status that is a date, sources that
    are a mapping): say where and why, not `no fact with id` while the file shows it."""
    named = f"fact '{shown(fact_id)}': "
    for problem in problems:
        if problem.message.startswith(named):
            why = problem.message[len(named) :]
            raise InputError(f"{problem.file}:{problem.line}: {named[:-2]} does not load: {why}")


def _show_lines(
    kb: KnowledgeBase, fact: Fact, status: str, as_of: Any, results: list[Any]
) -> list[str]:
    """`show`'s text: one line per field (the statement keeps its lines), every control and
    bidi character shown escaped, since a fact with a lint problem is still shown."""
    fields = [f"{fact.id}  [{fact.category}] {status}", f"  {fact.title}"]
    if fact.value is not None:
        fields.append(f"  value: {_value_text(fact)}")
    for key, value in fact.extra.items():
        fields.append(f"  {key}: {json.dumps(value) if not isinstance(value, str) else value}")
    if fact.target:
        fields.append(f"  target: {fact.target}")
    if fact.tags:
        fields.append(f"  tags: {', '.join(fact.tags)}")
    span = f"since {fact.since or 'start'}" + (f", until {fact.until}" if fact.until else "")
    fields.append(f"  valid: {span}")
    if as_of is not None and not kb.visible(fact, as_of):
        fields.append(f"  (not known or no longer true as of {as_of.id})")
    for entry in fact.history:
        note = f": {entry.note}" if entry.note else ""
        fields.append(f"  history: {entry.at} {entry.status}{note}")
    for source in fact.sources:
        quote = f' "{source.quote}"' if source.quote else ""
        fields.append(f"  source: {source.label()}{quote}")
    if fact.check:
        fields.append(f"  check: {fact.check.probe} {json.dumps(fact.check.args)}")
        if fact.check.expect:
            fields.append(f"    expect: {json.dumps(fact.check.expect)}")
    for relation, ids in fact.links.items():
        fields.append(f"  {relation}: {', '.join(ids)}")
    for relation, other in kb.linked_from(fact.id):
        fields.append(f"  <- {relation} from {other.id}")
    lines = [_one_line(field) for field in fields]
    lines.insert(2, "  " + for_document(fact.statement.strip()))
    for record in results:  # results came from a box: each field clipped too
        lines.append(
            f"  last verified on {for_terminal(record.target)}: {for_terminal(record.outcome)} "
            f"at {for_terminal(record.time)} ({for_terminal(record.reason)})"
        )
    if fact.check and not results:
        lines.append("  last verified: never")
    lines.append(f"  defined at: {_one_line(fact.location)}")
    return lines
