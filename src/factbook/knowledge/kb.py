"""The knowledge base: every fact, milestone and target, loaded and cross-checked.

`load_kb()` reads facts/*.yaml, milestones.yaml, targets.yaml and checks/*.py, reports every
problem at once (as `file:line: message`) and returns a `KnowledgeBase` that can be queried
as of any milestone.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from factbook.errors import LintFailed, Problem, UsageError, visible
from factbook.judging.expectations import UnboundVar, bind_vars, problems_in, var_refs
from factbook.knowledge import kbcache, schema
from factbook.knowledge.fleet.inventory import Group, Inventory
from factbook.knowledge.fleet.load import load_targets_file
from factbook.knowledge.fleet.patterns import is_pattern, match
from factbook.knowledge.halves import in_halves
from factbook.knowledge.kbfiles import confined, escapes, outside_problem
from factbook.knowledge.limits import PROBE_ARG_MAX
from factbook.knowledge.locate import FACTS_DIR, find_root
from factbook.knowledge.model import Check, Fact, HistoryEntry, Milestone, Source, Target
from factbook.knowledge.names import NOT_UTF8, known_names, name_problem, shown, undecodable
from factbook.knowledge.parsememo import TextMemo
from factbook.knowledge.walk import tree_glob
from factbook.knowledge.yamlsrc import (
    LocatedDoc,
    load_located,
    parse_located,
    portable,
    read_text_bounded,
    recording_reads,
    remembered,
    shared_parses,
)
from factbook.probes.catalog import builtin_probes
from factbook.probes.scan import ProbeSpec, find_custom_probes

MILESTONES_FILE = "milestones.yaml"
TARGETS_FILE = "targets.yaml"
CHECKS_DIR = "checks"


class FactIndex(dict):  # dict[str, Fact]
    """The facts by id, in file order; called, it selects (the Python API's `kb.facts(...)`):

    kb.facts["hw.gpu.count"]; kb.facts("hw.*", category="hardware", tag="gpu")
    """

    def __init__(self, kb: KnowledgeBase, items: dict[str, Fact] | None = None):
        super().__init__(items or {})
        self._kb = kb

    def __call__(
        self,
        *patterns: str,
        category: str | Iterable[str] = (),
        tag: str | Iterable[str] = (),
        status: str | Iterable[str] = (),
        target: str | Iterable[str] = (),
        as_of: str | int | None = None,
    ) -> list[Fact]:
        """Facts matching every filter given (ids or globs, categories, tags, statuses, check
        targets), as of a milestone if named; a str is one value, a list any of them."""

        def many(value: str | Iterable[str]) -> list[str]:
            return [value] if isinstance(value, str) else list(value)

        kb = self._kb
        return kb.select(
            patterns=patterns,
            categories=many(category),
            tags=many(tag),
            statuses=many(status),
            targets=many(target),
            as_of=kb.milestone(as_of) if as_of is not None else None,
        )


@dataclass
class KnowledgeBase:
    """All facts of one repository, in file order, with their milestones and targets."""

    root: Path
    facts: FactIndex = field(default_factory=dict)  # type: ignore[assignment]
    milestones: dict[str, Milestone] = field(default_factory=dict)
    targets: dict[str, Target] = field(default_factory=dict)
    probes: dict[str, ProbeSpec] = field(default_factory=dict)
    groups: dict[str, Group] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)  # what the loader found (api.load)

    @property
    def inventory(self) -> Inventory:
        """Targets and groups together, for host patterns and group membership."""
        return Inventory(self.targets, self.groups)

    def covered(self, name: str | None) -> list[str]:
        """The targets a fact's `target:` covers: itself, or every member of a group."""
        if name is None:
            return []
        if name in self.targets:
            return [name]
        return self.inventory.members(name) if name in self.groups else []

    def __post_init__(self) -> None:
        if not isinstance(self.facts, FactIndex):
            self.facts = FactIndex(self, self.facts)

    def get(self, fact_id: str) -> Fact:
        try:
            return self.facts[fact_id]
        except KeyError:
            close = [i for i in self.facts if fact_id in i][:5]
            hint = f" (did you mean: {', '.join(close)})" if close else ""
            # escaped here: an error's own line breaks are kept, a typed id's are not
            raise UsageError(f"no fact with id '{visible(shown(fact_id))}'{hint}") from None

    def milestone(self, ref: str | int | None) -> Milestone | None:
        """The milestone named `ref` (None for 'now'); unknown names are a usage error."""
        if ref is None:
            return None
        key = str(ref)
        if key not in self.milestones:
            known = known_names(self.milestones)
            raise UsageError(f"unknown milestone '{shown(key)}' (known: {known})")
        return self.milestones[key]

    def latest_milestone(self) -> Milestone | None:
        return max(self.milestones.values(), key=lambda m: m.index, default=None)

    def visible(self, fact: Fact, as_of: Milestone | None) -> bool:
        """Whether the fact was known and still held at `as_of` (None: now).

        A fact without `since` holds from the start, but is *known* at a milestone only when
        one of its sources existed then: the H200 probed today is not part of message 3157.
        """
        if as_of is None:
            return fact.until is None
        if fact.since is None:
            if not any(self.source_known(s, as_of) for s in fact.sources):
                return False
        elif self.milestones[fact.since].index > as_of.index:
            return False
        return fact.until is None or self.milestones[fact.until].index > as_of.index

    def source_known(self, source: Source, as_of: Milestone | None) -> bool:
        """Whether a source existed at `as_of`: a seed message not after it; a run only when
        the milestone has a date not before the run's."""
        if as_of is None:
            return True
        if source.seed:
            return (
                source.message is None or as_of.message is None or source.message <= as_of.message
            )
        return bool(as_of.date and source.date and str(source.date) <= str(as_of.date))

    def status_as_of(self, fact: Fact, as_of: Milestone | None) -> str:
        """The fact's status at `as_of`: the last history entry not after it, else `status`."""
        if as_of is None or not fact.history:
            return fact.status
        seen = [h for h in fact.history if self.milestones[h.at].index <= as_of.index]
        if seen:
            return max(seen, key=lambda h: self.milestones[h.at].index).status
        return fact.history[0].status if fact.history else fact.status

    def select(
        self,
        *,
        patterns: Iterable[str] = (),
        categories: Iterable[str] = (),
        tags: Iterable[str] = (),
        statuses: Iterable[str] = (),
        targets: Iterable[str] = (),
        as_of: Milestone | None = None,
        include_past: bool = False,
    ) -> list[Fact]:
        """Facts matching every given filter (each filter matches any of its values)."""
        patterns, categories, tags = list(patterns), set(categories), set(tags)
        statuses, targets = set(statuses), set(targets)
        for category in categories:
            if category not in schema.CATEGORIES:
                raise UsageError(
                    f"unknown category '{category}' (known: {', '.join(schema.CATEGORIES)})"
                )
        chosen: set[str] = set()
        for name in targets:
            if name in self.targets:
                chosen.add(name)
            elif name in self.groups or is_pattern(name):
                chosen.update(match(self.inventory, name))
            else:
                known = known_names(self.targets)
                raise UsageError(f"unknown target '{shown(name)}' (known: {known})")
        out = []
        for fact in self.facts.values():
            if not include_past and not self.visible(fact, as_of):
                continue
            if patterns and not any(fnmatch.fnmatchcase(fact.id, p) for p in patterns):
                continue
            if categories and fact.category not in categories:
                continue
            if tags and not tags.intersection(fact.tags):
                continue
            if statuses and self.status_as_of(fact, as_of) not in statuses:
                continue
            if targets and not chosen.intersection(self.covered(fact.check_target())):
                continue
            out.append(fact)
        return out

    def linked_from(self, fact_id: str) -> list[tuple[str, Fact]]:
        """(relation, fact) for every fact that links to `fact_id`."""
        return [
            (rel, f) for f in self.facts.values() for rel, ids in f.links.items() if fact_id in ids
        ]


def load_kb(root: Path | str = ".", *, strict: bool = True) -> KnowledgeBase:
    """Load and cross-check a knowledge base; raise LintFailed with every problem found."""
    kb, problems = load_kb_with_problems(Path(root))
    if problems and strict:
        raise LintFailed(problems)
    return kb


# What a load reads besides the files it records (knowledge/kbcache.py's inputs).
LAYOUT = kbcache.Layout(
    files=(MILESTONES_FILE, TARGETS_FILE), trees=((FACTS_DIR, "**/*"), (CHECKS_DIR, "*.py"))
)


def load_kb_with_problems(root: Path, *, live: bool = False) -> tuple[KnowledgeBase, list[Problem]]:
    """The knowledge base and all its problems; never raises for bad input. What an earlier
    load of the very same files found comes from the cache (kbcache.py), not a new parse.

    `live`: a process that loads again after every edit (`mkdocs serve`) parses, reusing
    each fact file this process parsed before with the same text (parsememo.py), and leaves
    the cache on disk alone: one edit misses it, and writing all of it again after each edit
    would cost more than the one file parsed."""
    root = root.resolve()
    if live:
        return parse_kb_with_problems(root)
    if (root / FACTS_DIR).is_dir():
        cached = kbcache.load(root, LAYOUT)
        if cached is not None:
            return KnowledgeBase(root=root, **cached[0]), cached[1]
    start = kbcache.before(root, LAYOUT)
    with recording_reads() as reads:
        kb, problems = parse_kb_with_problems(root)
    parts = {
        "facts": dict(kb.facts),
        "milestones": kb.milestones,
        "targets": kb.targets,
        "groups": kb.groups,
        "probes": kb.probes,
    }
    kbcache.store(root, LAYOUT, start, reads, parts, problems)
    return kb, problems


def parse_kb_with_problems(root: Path) -> tuple[KnowledgeBase, list[Problem]]:
    """The knowledge base and all its problems, parsed from its files (no cache).

    Everything is read inside the root (kbfiles.confined): a file or folder of the knowledge
    base that resolves outside it is refused with its name, never read."""
    root = root.resolve()
    with confined(root):
        kb, problems, docs = _read_files(root)
        accepted = []
        for doc, index, raw, keys in _first_of_each_id(docs, problems):
            fact = _build_fact(raw, doc, index)
            kb.facts[fact.id] = fact
            accepted.append((fact, raw, keys, doc, index))
        for fact, raw, keys, doc, index in accepted:
            problems += _cross_check(kb, fact, raw, keys, doc, ("facts", index), kb.facts)
    return kb, problems


_LINT_PARALLEL_FROM = 2000  # facts: fewer are linted before a fork would pay for itself


def lint_problems(root: Path) -> list[Problem]:
    """`parse_kb_with_problems(root)`'s problems, in its order, without the knowledge base:
    each fact built and checked across files on one of two cores (halves.py), which needs
    only the ids of the others. For an import's scratch copy, whose facts nobody reads: at
    1 MB of one-line facts their lint was 0.4 s of the import's serial part."""
    root = root.resolve()
    with confined(root):
        kb, problems, docs = _read_files(root)
        accepted = list(_first_of_each_id(docs, problems))
        ids = {raw["id"] for _, _, raw, _ in accepted}

        def check(part: Sequence[_Entry]) -> list[list[Problem]]:
            return [
                _cross_check(kb, _build_fact(raw, doc, i), raw, keys, doc, ("facts", i), ids)
                for doc, i, raw, keys in part
            ]

        for found in in_halves(check, accepted, least=_LINT_PARALLEL_FROM):
            problems += found
    return problems


# a fact file's entry: its parse, its index in `facts`, the conformed fact, its keys as written
_Entry = tuple[LocatedDoc, int, dict[str, Any], set[Any]]


def _read_files(root: Path) -> tuple[KnowledgeBase, list[Problem], list[_ParsedDoc]]:
    """The knowledge base without its facts (milestones, targets, probes), the problems so
    far, and each fact file parsed and validated on its own."""
    kb = KnowledgeBase(root=root)
    problems: list[Problem] = []
    if not (root / FACTS_DIR).is_dir():
        raise UsageError(
            f"{root}: no {FACTS_DIR}/ folder here; run inside a knowledge base, pass --root, "
            "or start one with `factbook init DIR`"
        )
    problems += folder_problems(root, (FACTS_DIR, CHECKS_DIR))
    problems += _load_milestones(kb)
    problems += _load_targets(kb)
    custom, custom_problems = find_custom_probes(root / CHECKS_DIR, root)
    problems += custom_problems
    kb.probes = {**builtin_probes(), **custom}
    docs: list[_ParsedDoc] = []
    facts_dir = root / FACTS_DIR
    # without recursion: a tree thousands deep is refused by its name (NestedTooDeep, one
    # line and exit 2 from every command), not a RecursionError
    paths = tree_glob(facts_dir, "*", shown=FACTS_DIR) if not escapes(facts_dir) else []
    for path in paths:
        display = path.relative_to(root).as_posix()
        if undecodable(display):  # no page, link or JSON answer can name it as text
            problems.append(Problem(display, 1, f"not read: {NOT_UTF8}"))
            continue
        if path.suffix != ".yaml":
            if path.suffix.lower() in (".yaml", ".yml") and not path.name.startswith("."):
                problems.append(
                    Problem(display, 1, "not read: fact files must end in '.yaml' (rename it)")
                )
            continue
        parsed = _fact_file(path, display)
        problems += parsed.problems
        if parsed.doc is not None:
            docs.append((parsed.doc, parsed.entries))
    return kb, problems, docs


# a fact file's parse and its conforming entries (index, conformed fact, keys as written)
_ParsedDoc = tuple[LocatedDoc, list[tuple[int, dict[str, Any], set[Any]]]]


def _first_of_each_id(docs: list[_ParsedDoc], problems: list[Problem]) -> Iterator[_Entry]:
    """Every conforming entry in file order but those repeating an id seen before, each of
    which adds a problem naming where that id was first defined."""
    first_seen: dict[str, tuple[LocatedDoc, int]] = {}
    for doc, entries in docs:
        for index, raw, keys in entries:
            fact_id = raw["id"]
            first = first_seen.get(fact_id)
            if first is not None:
                where = f"{first[0].file}:{first[0].line(('facts', first[1]))}"
                problems.append(
                    doc.problem(
                        ("facts", index, "id"),
                        f"duplicate id '{fact_id}' (first defined at {where})",
                    )
                )
                continue
            first_seen[fact_id] = (doc, index)
            yield doc, index, raw, keys


@dataclass(frozen=True)
class _FactFile:
    """One fact file parsed and validated on its own: its problems, and for each entry that
    conforms (index, conformed value, keys as written). Depends only on the file's text."""

    doc: LocatedDoc | None
    problems: list[Problem]
    entries: list[tuple[int, dict[str, Any], set[Any]]]


_PARSED: TextMemo[_FactFile] = TextMemo()


def _fact_file(path: Path, display: str) -> _FactFile:
    """The file parsed, or its earlier parse in this process when its text is unchanged
    (parsememo.py): an edit under `mkdocs serve` parses one file again, not all of them."""
    text, unreadable = read_text_bounded(path, display)
    if unreadable is not None:
        return _FactFile(None, [unreadable], [])
    key = f"{path}\0{display}"
    kept = _PARSED.get(key, text)
    if kept is None:
        # inside yamlsrc.sharing() (an import) a copy of the file with the same name and
        # text, in the scratch knowledge base, is the same parse too
        kept = remembered(f"fact file {display}", text, lambda: _parse_fact_file(text, display))
        _PARSED.put(key, text, kept)
    return kept


def fact_file_answer(path: Path, text: str) -> tuple[str, _FactFile] | None:
    """What the lint of the knowledge base holding fact file `path` will make of it once it
    holds `text`, made now and remembered inside `sharing()` (an import's write-back makes
    it for the files it grows, half of them on the other core); with its key, for
    `keep_fact_file_answer`. None outside a `sharing()` block or a knowledge base."""
    if not shared_parses():
        return None
    path = path.resolve()
    root = find_root(path.parent)
    if root is None:
        return None
    display = path.relative_to(root).as_posix()
    key = f"fact file {display}"
    return key, remembered(key, text, lambda: _parse_fact_file(text, display))


def portable_fact_file(answer: tuple[str, _FactFile], text: str) -> tuple[str, _FactFile]:
    """`fact_file_answer`'s answer lighter to send to another process (yamlsrc.portable)."""
    key, parsed = answer
    if parsed.doc is None:
        return answer
    light, _, _ = portable((parsed.doc, [], None), text)
    return key, replace(parsed, doc=light)


def keep_fact_file_answer(answer: tuple[str, _FactFile], text: str) -> None:
    """Remember a `fact_file_answer` made in another process, in this `sharing()` block."""
    key, parsed = answer
    remembered(key, text, lambda: parsed)


def _parse_fact_file(text: str, display: str) -> _FactFile:
    doc, problems = parse_located(text, display)
    if doc.data is None:
        if not problems:
            problems.append(Problem(display, 1, "empty fact file (expected 'facts:')"))
        return _FactFile(None, problems, [])
    problems += schema.validate(doc.data, schema.FACT_FILE_TOP_SCHEMA, doc)
    items = doc.data.get("facts") if isinstance(doc.data, dict) else None
    entries = []
    for index, raw in enumerate(items if isinstance(items, list) else []):
        fact_problems = schema.validate(raw, schema.FACT_SCHEMA, doc, ("facts", index))
        fact_id = raw.get("id") if isinstance(raw, dict) else None
        # the schema's pattern is searched as JSON Schema does (a trailing newline passes
        # `$`); the id becomes an HTML id and a file name, so it must match whole
        bad_id = name_problem("fact id", fact_id) if isinstance(fact_id, str) else None
        if bad_id and not fact_problems:
            fact_problems = [doc.problem(("facts", index, "id"), bad_id)]
        if fact_problems:
            # a 100,000-character id: its head names it
            label = f"fact '{shown(fact_id)}': " if isinstance(fact_id, str) else ""
            problems += [Problem(p.file, p.line, label + p.message) for p in fact_problems]
        # Only conformed values reach a Fact: a wrong-typed key is dropped (and reported
        # above), so status and the handbook can still render the rest of the fact. A
        # fact validate() passed whole is its own conformed form (nothing to drop).
        clean = schema.conform(raw, schema.FACT_SCHEMA) if fact_problems else raw
        if clean is not schema.INVALID:
            entries.append((index, clean, set(raw)))
    return _FactFile(doc, problems, entries)


# a fact's keys that no category owns: once, not per fact (schema.KEY_OWNERS has the others)
_COMMON_KEYS = set(schema.FACT_SCHEMA["properties"]) - set().union(*schema.CATEGORY_KEYS.values())


def _build_fact(raw: dict[str, Any], doc: LocatedDoc, index: int) -> Fact:
    """A Fact from a conformed entry: every key present has its schema type."""
    check = raw.get("check")
    known = _COMMON_KEYS
    return Fact(
        **{k: raw[k] for k in ("id", "category", "title", "statement", "status")},
        sources=[
            Source(**{k: v for k, v in s.items() if k in Source.__dataclass_fields__})
            for s in raw["sources"]
        ],
        file=doc.file,
        line=doc.line(("facts", index)),
        value=raw.get("value"),
        unit=raw.get("unit"),
        target=raw.get("target"),
        tags=list(raw.get("tags") or []),
        since=None if raw.get("since") is None else str(raw["since"]),
        until=None if raw.get("until") is None else str(raw["until"]),
        history=[
            HistoryEntry(str(h["at"]), h["status"], h.get("note")) for h in raw.get("history") or []
        ],
        check=Check(
            probe=check["probe"],
            args=dict(check.get("args") or {}),
            expect=check.get("expect"),
            timeout=check.get("timeout"),
            target=check.get("target"),
        )
        if check is not None
        else None,
        links={k: list(v) for k, v in (raw.get("links") or {}).items()},
        extra={k: v for k, v in raw.items() if k not in known},
    )


def _cross_check(
    kb: KnowledgeBase,
    fact: Fact,
    raw: dict[str, Any],
    keys: set[Any],
    doc: LocatedDoc,
    at: tuple[Any, ...],
    fact_ids: Container[str],
) -> list[Problem]:
    """Rules across fields and files: category keys, milestones, targets, probes, links.

    `raw` is the conformed entry; `keys` the keys as written (a key dropped for its type is
    still present, so it is not reported a second time as missing); `fact_ids` the ids of
    every fact of the knowledge base, which its links may name.
    """
    out: list[Problem] = []

    def add(path: tuple[Any, ...], message: str) -> None:
        out.append(doc.problem((*at, *path), f"fact '{fact.id}': {message}"))

    allowed = schema.CATEGORY_KEYS.get(fact.category, set())
    for key in keys:
        owners = schema.KEY_OWNERS.get(key, ())
        if owners and key not in allowed:
            add((key,), f"key '{key}' is only for category {' or '.join(owners)}")
    for key in sorted(schema.CATEGORY_REQUIRED.get(fact.category, set()) - keys):
        add((), f"category {fact.category} requires key '{key}'")
    for key in ("since", "until"):
        ref = raw.get(key)
        if ref is not None and str(ref) not in kb.milestones:
            known = known_names(kb.milestones)
            add((key,), f"unknown milestone '{shown(str(ref))}' (known: {known})")
            setattr(fact, key, None)  # reported; as-of queries must not trip over it
    if (
        fact.since in kb.milestones
        and fact.until in kb.milestones
        and kb.milestones[fact.until].index <= kb.milestones[fact.since].index
    ):
        add(("until",), f"until '{fact.until}' is not after since '{fact.since}'")
    for i, entry in enumerate(raw.get("history") or []):
        if str(entry["at"]) not in kb.milestones:
            add(("history", i, "at"), f"unknown milestone '{shown(str(entry['at']))}'")
    fact.history = [h for h in fact.history if h.at in kb.milestones]
    for path, name in (
        (("target",), raw.get("target")),
        (("check", "target"), fact.check.target if fact.check else None),
    ):
        if name is not None and name not in kb.targets and name not in kb.groups:
            if name.startswith("@") and name[1:] in kb.groups:  # the command line's spelling
                add(path, f"a fact names group '{name[1:]}' without '@' (target: {name[1:]})")
                continue
            known = f"known: {known_names(kb.targets)}"
            if kb.groups:  # a fact names a group as it is, `@` is the command line's
                known = f"targets: {known_names(kb.targets)}; groups: {known_names(kb.groups)}"
            what = "target or group" if kb.groups else "target"
            add(path, f"unknown {what} '{shown(name)}' ({known})")
    machine = raw.get("machine")
    if fact.category == "inventory" and machine is not None and machine not in kb.targets:
        known = known_names(kb.targets)
        add(("machine",), f"unknown target '{shown(machine)}' (known: {known})")
    for relation, linked in (raw.get("links") or {}).items():
        for i, other in enumerate(linked):
            if other not in fact_ids:
                link = f"link {shown(relation)} -> '{shown(other)}'"
                add(("links", relation, i), f"{link}: no such fact")
    if fact.check is not None:
        out += _check_problems(kb, fact, doc, (*at, "check"))
    return out


def _check_problems(
    kb: KnowledgeBase, fact: Fact, doc: LocatedDoc, at: tuple[Any, ...]
) -> list[Problem]:
    assert fact.check is not None
    out: list[Problem] = []
    spec = kb.probes.get(fact.check.probe)
    if spec is None:
        close = [p for p in kb.probes if p.split(".")[0] == fact.check.probe.split(".")[0]]
        hint = f" (known in that group: {known_names(close)})" if close else ""
        out.append(
            doc.problem(
                (*at, "probe"), f"fact '{fact.id}': unknown probe '{shown(fact.check.probe)}'{hint}"
            )
        )
    else:
        for name in spec.required:
            if name not in fact.check.args:
                out.append(
                    doc.problem(
                        (*at, "args"),
                        f"fact '{fact.id}': probe {spec.name} needs argument '{name}'",
                    )
                )
        for name, value in fact.check.args.items():
            bound = PROBE_ARG_MAX.get(name)
            too_big = isinstance(value, bool) or not isinstance(value, int) or not value >= 0
            if (
                bound is not None
                and name in spec.required + spec.optional
                and (too_big or value > bound)
            ):
                out.append(
                    doc.problem(
                        (*at, "args", name),
                        f"fact '{fact.id}': probe {spec.name}: {name} must be a whole number "
                        f"from 0 to {bound}",
                    )
                )
            if name not in spec.required + spec.optional:
                allowed = ", ".join(spec.required + spec.optional) or "none"
                out.append(
                    doc.problem(
                        (*at, "args", name),
                        f"fact '{fact.id}': probe "
                        f"{spec.name} takes no argument '{name}' (takes: {allowed})",
                    )
                )
    if fact.check.expect is not None:
        messages = problems_in(fact.check.expect) or _var_problems(kb, fact)
        for message in messages:
            out.append(doc.problem((*at, "expect"), f"fact '{fact.id}': {message}"))
    return out


def folder_problems(root: Path, names: Iterable[str]) -> list[Problem]:
    """One line for each folder of the knowledge base that is a link leading out of it."""
    out = []
    for name in names:
        problem = outside_problem(root / name, name)
        if problem is not None:
            out.append(problem)
    return out


def _present(path: Path) -> bool:
    """Exists, or is a dangling or looping link (which load_located then reports)."""
    return path.exists() or path.is_symlink()


def _var_problems(kb: KnowledgeBase, fact: Fact) -> list[str]:
    """Every `{var: NAME}` must resolve on every target the fact covers, and the expectation
    it makes there must be valid. (A fact naming no target is checked when it runs.)"""
    assert fact.check is not None
    expect = fact.check.expect
    if not var_refs(expect):
        return []
    unbound: dict[str, list[str]] = {}
    invalid: dict[str, list[str]] = {}
    for name in kb.covered(fact.check_target()):
        try:
            bound = bind_vars(expect, kb.targets[name].vars)
        except UnboundVar as exc:
            unbound.setdefault(exc.name, []).append(name)
            continue
        for message in problems_in(bound):
            invalid.setdefault(message, []).append(name)
    out = [
        f"expect refers to var '{var}', which is not set for {_names(names)}"
        for var, names in unbound.items()
    ]
    out += [f"{message} (with the vars of {_names(names)})" for message, names in invalid.items()]
    return out


def _names(names: list[str], limit: int = 6) -> str:
    head = ", ".join(names[:limit])
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return f"target{'s' if len(names) > 1 else ''} {head}{more}"


def _load_milestones(kb: KnowledgeBase) -> list[Problem]:
    path = kb.root / MILESTONES_FILE
    if not _present(path):
        return []
    doc, problems = load_located(path, MILESTONES_FILE)
    if doc.data is None:
        return problems
    problems += schema.validate(doc.data, schema.MILESTONES_SCHEMA, doc)
    top = doc.data if isinstance(doc.data, dict) else {}
    items = top.get("milestones") if isinstance(top.get("milestones"), list) else []
    item_schema = schema.MILESTONES_SCHEMA["properties"]["milestones"]["items"]
    for i, found in enumerate(items):
        raw = schema.conform(found, item_schema)
        if raw is schema.INVALID:
            continue
        key = str(raw["id"])
        if key in kb.milestones:
            problems.append(doc.problem(("milestones", i, "id"), f"duplicate milestone '{key}'"))
            continue
        kb.milestones[key] = Milestone(
            id=key,
            title=raw["title"],
            index=len(kb.milestones),
            seed=raw.get("seed"),
            message=raw.get("message"),
            date=raw.get("date"),
        )
    return problems


def _load_targets(kb: KnowledgeBase) -> list[Problem]:
    path = kb.root / TARGETS_FILE
    if not _present(path):
        return []
    kb.targets, kb.groups, problems = load_targets_file(path, TARGETS_FILE, kb.root)
    return problems
