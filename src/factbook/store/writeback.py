"""Edit fact files in place, keeping every comment, blank line and key order byte-for-byte.

PyYAML's composer gives each node its start and end offset in the text; an edit replaces only
the spans it changes (a value, a status) or inserts whole lines (a new key, a source), so the
rest of the file is untouched. After editing, the new text is parsed again and compared with the
intended data: a write that would change anything else is refused, never made.

Writers are serialised per file with `fcntl.flock` on a lock file under .factbook-cache/locks/
(ignored by git, so lock files never show as changes), and each re-reads the file inside the
lock, so concurrent runbook steps and discover runs lose no update. Writes are atomic.

    update_fact(root, fact_id, value=..., status=..., add_source={...}, set_fields={...})
    append_facts(path, [fact dict, ...])
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import yaml

from factbook.errors import UsageError, WritebackError
from factbook.knowledge.grown import grown_answer
from factbook.knowledge.halves import in_halves
from factbook.knowledge.kb import fact_file_answer, keep_fact_file_answer, portable_fact_file
from factbook.knowledge.limits import YAML_MAX_BYTES
from factbook.knowledge.locate import find_root
from factbook.knowledge.schema import fact_problem
from factbook.knowledge.walk import tree_glob
from factbook.knowledge.yamlsrc import (
    FastSafeLoader,
    MemoResolver,
    located_answer,
    parse_located,
    portable,
    remember_located,
    shared_parses,
    unreadable_if_written,
)
from factbook.store.atomic import exclusive_lock, write_text_atomic
from factbook.store.blockyaml import fact_block
from factbook.store.factlayout import append_layout, edit_prefix
from factbook.store.yamlevents import C_DUMPER, Emitted, emit_counted, emit_plain

LOCK_DIR = ".factbook-cache/locks"

_UNSET: Any = object()
# libyaml when present: the same marks (character offsets), ten times faster on big files.
_LOADER = FastSafeLoader
FACT_FILE_HEADER = (
    "# yaml-language-server: $schema=../schema/facts.schema.json\n"
    "# Written by factbook; edit freely, comments and order are kept.\n"
    "facts:\n"
)


class _BlockDumper(yaml.SafeDumper):
    """Indents list items under their key, as the hand-written fact files do."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)

    def ignore_aliases(self, data: Any) -> bool:
        return True  # the loader refuses aliases (yamlsrc): shared objects are written out

    def represent_str(self, data: str) -> yaml.ScalarNode:
        """PyYAML's emitter writes NEL, LS and PS raw in a quoted string, and reads them
        back as line breaks: such a string is double-quoted, where they are escaped."""
        style = '"' if _YAML_BREAKS.search(data) else None
        return self.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_YAML_BREAKS = re.compile("[\x85\u2028\u2029]")
_BlockDumper.add_representer(str, _BlockDumper.represent_str)


class _MemoCDumper(MemoResolver, C_DUMPER or yaml.SafeDumper):  # type: ignore[misc]
    """libyaml's safe emitter with remembered scalar tags (yamlsrc.MemoResolver)."""

    _tags: ClassVar[dict[tuple[str, Any], str]] = {}


# libyaml's emitter when present: ~6x faster than PyYAML's (an import appends thousands)
_FAST_DUMPER = _MemoCDumper if C_DUMPER is not None else None


def dump_block(data: Any, *, fast: bool = True) -> str:
    """`data` as block YAML with list items indented under their key (`_BlockDumper`'s
    style), leaf collections in flow style; libyaml does the work when it is installed
    (`fast`): the caller parses the result back and asks again with fast=False if it differs."""
    options = {"sort_keys": False, "allow_unicode": True, "width": 100}
    if _FAST_DUMPER is None or not fast:
        return yaml.dump(data, Dumper=_BlockDumper, default_flow_style=None, **options)
    text = emit_plain(data, width=100, allow_unicode=True)  # plain data: no representer
    if text is None:
        text = yaml.dump(data, Dumper=_FAST_DUMPER, default_flow_style=None, **options)
    return _indent_sequences(text)


_CHUNK = 64  # facts per emitter: at most this many are emitted past a refused size


def _dumped_chunks(
    facts: list[dict[str, Any]], *, fast: bool
) -> Iterator[tuple[list[str], Emitted | None]]:
    """`dump_block([fact], fast=fast)` for each fact, in order, a chunk of facts at a time,
    with what the reader will count in the chunk (None where that is not known). A fact
    blockyaml writes is written there; the chunk's others by `_libyaml_chunk`."""
    if _FAST_DUMPER is None or not fast:
        for fact in facts:
            yield [dump_block([fact], fast=fast)], None
        return
    for at in range(0, len(facts), _CHUNK):
        chunk = facts[at : at + _CHUNK]
        blocks = [fact_block(fact) if type(fact) is dict and fact else None for fact in chunk]
        rest = [fact for fact, block in zip(chunk, blocks, strict=True) if block is None]
        texts, emitted = _libyaml_chunk(rest) if rest else ([], None)
        known = iter(texts)
        pieces = [block.text if block else next(known) for block in blocks]
        if rest and emitted is None:
            yield pieces, None
            continue
        written = [block for block in blocks if block is not None]
        yield (
            pieces,
            Emitted(
                "".join(pieces),
                1 + sum(b.nodes for b in written) + (emitted.nodes - 1 if emitted else 0),
                max([1 + b.depth for b in written] + [emitted.depth if emitted else 1]),
                all(b.exact for b in written) and (emitted is None or emitted.exact),
            ),
        )


def _libyaml_chunk(chunk: list[dict[str, Any]]) -> tuple[list[str], Emitted | None]:
    """Each fact's block as libyaml writes it, with what emit_counted counted (None where
    it did not write them). One emitter per chunk instead of one per fact (its set-up was
    a third of writing a fact): a block list of mappings is written item after item, each
    the same as alone, every line of an item but its first indented, so the chunk's text is
    cut where a line starts with `- `. A chunk that is not plain data, or does not cut into
    one piece per fact, is dumped fact by fact."""
    emitted = None
    if all(type(fact) is dict and fact for fact in chunk):
        emitted = emit_counted(chunk, width=100, allow_unicode=True)
    pieces = _indent_sequences(emitted.text).split("\n- ") if emitted is not None else []
    if len(pieces) != len(chunk) or not pieces[0].startswith("- "):
        return [dump_block([fact]) for fact in chunk], None
    last = len(pieces) - 1
    return [
        ("- " if n else "") + piece + ("\n" if n < last else "") for n, piece in enumerate(pieces)
    ], emitted


def _indent_sequences(text: str) -> str:
    """libyaml writes a list under a key at the key's own indent (`key:` / `- a`); indent it
    by two more, as the hand-written files (and `_BlockDumper`) do. One pass, with a stack of
    the open lists (the indent of the key each belongs to)."""
    out = []
    open_lists: list[int] = []
    previous_key: int | None = None  # the indent of the last line when it was a bare `key:`
    for line in text.splitlines(keepends=True):
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        if not stripped.strip():
            out.append(line)
            continue
        item = stripped.startswith("- ")
        while open_lists and (indent < open_lists[-1] or (indent == open_lists[-1] and not item)):
            open_lists.pop()
        if previous_key is not None and indent == previous_key and item:
            open_lists.append(indent)
        out.append(" " * (2 * len(open_lists)) + line)
        bare_key = stripped.rstrip("\n").endswith(":") and not stripped.startswith(("'", '"'))
        previous_key = indent if bare_key else None
    return "".join(out)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock for one fact file, shared by threads and processes."""
    path = Path(path).resolve()
    root = find_root(path.parent)  # the knowledge base holding it, if any
    rel = path.relative_to(root).as_posix().replace("/", "__") if root else path.name
    base = root or path.parent
    lock_path = base / LOCK_DIR / f"{rel}.lock"
    with exclusive_lock(lock_path, base, f"{LOCK_DIR}/{rel}.lock"):
        yield


_FLOW_CACHE: dict[str, str] = {}


def _flow(value: Any) -> str:
    """A value as one line of YAML flow text; memoised, since a batch write-back sets the same
    status and source on hundreds of facts and PyYAML's emitter is the slow part."""
    key = repr(value)  # tells 1 from "1" and True, and keeps dict order
    if key not in _FLOW_CACHE:
        if len(_FLOW_CACHE) > 4096:
            _FLOW_CACHE.clear()
        _FLOW_CACHE[key] = _flow_text(value)
    return _FLOW_CACHE[key]


def _flow_text(value: Any) -> str:
    """A value as one line of YAML flow text (JSON-style escapes for multi-line strings)."""
    if isinstance(value, str) and ("\n" in value or "\r" in value):
        text = json.dumps(value, ensure_ascii=False)  # YAML's escapes for what JSON keeps raw
        return text.replace("\x85", "\\N").replace("\u2028", "\\L").replace("\u2029", "\\P")
    text = yaml.dump(
        value,
        Dumper=_BlockDumper,
        default_flow_style=True,
        width=10**9,
        allow_unicode=True,
        sort_keys=False,
    )
    if text.endswith("\n...\n"):
        text = text[: -len("\n...\n")]
    return text.rstrip("\n")


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _after_line(text: str, index: int) -> int:
    """The offset just past the end of the line holding `index` (or `index` at column 0)."""
    if index == _line_start(text, index) and index > 0 and text[index - 1] == "\n":
        return index
    end = text.find("\n", index)
    return len(text) if end < 0 else end + 1


def _compose(text: str, display: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise WritebackError(f"{display}: not valid YAML: {exc}") from exc


def _construct(node: yaml.Node | None) -> Any:
    """The data of an already composed document (no second parse of the text)."""
    if node is None:
        return None
    loader = _LOADER("")
    try:
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _facts_node(text: str, display: str) -> yaml.SequenceNode | None:
    return _facts_seq(_compose(text, display), display)


def _facts_seq(root: yaml.Node | None, display: str) -> yaml.SequenceNode | None:
    if root is None:
        return None
    if not isinstance(root, yaml.MappingNode):
        raise WritebackError(f"{display}: top level is not a mapping")
    for key, value in root.value:
        if key.value == "facts":
            if isinstance(value, yaml.SequenceNode):
                return value
            if isinstance(value, yaml.ScalarNode) and value.value in ("", "~", "null"):
                return None
            raise WritebackError(f"{display}: 'facts' is not a list")
    return None


def _span_end(text: str, node: yaml.Node) -> int:
    """Where a node's own text ends. Block collections and block scalars report the start of
    the next line (past comments and indentation); their last child's end, with trailing
    whitespace dropped, is where the replaced span must stop so nothing after it is eaten."""
    block = isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style
    if block and node.value:
        last = node.value[-1]
        return _span_end(text, last[1] if isinstance(last, tuple) else last)
    end = node.end_mark.index
    while end > node.start_mark.index and text[end - 1] in " \t\r\n":
        end -= 1
    return end


def _find(node: yaml.SequenceNode | None, fact_id: str) -> yaml.MappingNode | None:
    for item in node.value if node else []:
        if isinstance(item, yaml.MappingNode):
            for key, value in item.value:
                if (
                    key.value == "id"
                    and isinstance(value, yaml.ScalarNode)
                    and value.value == fact_id
                ):
                    return item
    return None


def find_fact_file(root: Path, fact_id: str) -> Path:
    """The facts/*.yaml file defining `fact_id`."""
    return _locate(root, fact_id)[0]


def _locate(root: Path, fact_id: str) -> tuple[Path, str, yaml.Node, yaml.MappingNode]:
    """The file defining `fact_id`, its text, its composed document and the fact's node: the
    one parse that found the fact serves the edit too."""
    for path in tree_glob(Path(root) / "facts", "*.yaml", shown="facts"):
        text = path.read_text(encoding="utf-8")
        if fact_id not in text:
            continue
        document = _compose(text, str(path))
        fact = _find(_facts_seq(document, str(path)), fact_id)
        if fact is not None:
            assert document is not None
            return path, text, document, fact
    raise UsageError(f"no fact with id '{fact_id}' in {Path(root) / 'facts'}")


def _edits_for(
    text: str,
    fact: yaml.MappingNode,
    changes: dict[str, Any],
    add_source: dict[str, Any] | None,
    display: str,
) -> list[tuple[int, int, str]]:
    """(start, end, replacement) spans that apply `changes` and `add_source` to one fact."""
    if not fact.value:
        raise WritebackError(f"{display}: fact at line {fact.start_mark.line + 1} is empty")
    if fact.flow_style:
        return _flow_edits(text, fact, changes, add_source)
    keys = {k.value: (k, v) for k, v in fact.value}
    indent = " " * fact.value[0][0].start_mark.column
    edits: list[tuple[int, int, str]] = []
    inserts: list[str] = []
    for name, new in changes.items():
        if name in keys:
            key, node = keys[name]
            start, replacement = node.start_mark.index, _flow(new)
            between = text[key.end_mark.index : start]
            block = isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style
            if block and "#" not in between:  # `key:\n  a: 1` becomes `key: {a: 1}`
                start, replacement = key.end_mark.index, ": " + replacement
            edits.append((start, _span_end(text, node), replacement))
        else:
            inserts.append(f"{indent}{name}: {_flow(new)}\n")
    for line in inserts:
        # `value` goes after the statement (its place in the format); other keys before sources.
        anchor = keys.get("statement") if line.lstrip().startswith("value:") else None
        if anchor is not None:
            at = _after_line(text, _span_end(text, anchor[1]))
        else:
            at = _line_start(text, (keys.get("sources") or fact.value[-1])[0].start_mark.index)
        edits.append((at, at, line))
    if add_source is not None:
        edits.append(_source_edit(text, keys, indent, add_source))
    return edits


def _flow_edits(
    text: str, fact: yaml.MappingNode, changes: dict[str, Any], add_source: dict[str, Any] | None
) -> list[tuple[int, int, str]]:
    """Edits for a flow-style fact (`- {id: x, status: assumed, ...}`): values are replaced in
    place and new keys join the mapping after its last value, all on the fact's own lines."""
    keys = {k.value: (k, v) for k, v in fact.value}
    edits = [
        (keys[name][1].start_mark.index, _span_end(text, keys[name][1]), _flow(new))
        for name, new in changes.items()
        if name in keys
    ]
    added = [f"{name}: {_flow(new)}" for name, new in changes.items() if name not in keys]
    if add_source is not None:
        sources = keys.get("sources", (None, None))[1]
        if sources is None:
            added.append(f"sources: [{_flow(add_source)}]")
        elif isinstance(sources, yaml.SequenceNode) and sources.flow_style:
            close = sources.end_mark.index - 1
            edits.append((close, close, (", " if sources.value else "") + _flow(add_source)))
        else:
            raise WritebackError("sources is not a flow list")
    if added:
        at = _span_end(text, fact.value[-1][1])
        edits.append((at, at, "".join(", " + item for item in added)))
    return edits


def _source_edit(
    text: str, keys: dict[str, Any], indent: str, source: dict[str, Any]
) -> tuple[int, int, str]:
    if "sources" not in keys:
        at = _after_line(text, _span_end(text, keys[list(keys)[-1]][1]))
        return at, at, f"{indent}sources:\n{indent}  - {_flow(source)}\n"
    node = keys["sources"][1]
    if not isinstance(node, yaml.SequenceNode):
        raise WritebackError("sources is not a list")
    if node.flow_style:
        close = node.end_mark.index - 1
        sep = ", " if node.value else ""
        return close, close, f"{sep}{_flow(source)}"
    last = node.value[-1]
    start = _line_start(text, last.start_mark.index)
    prefix = text[start : last.start_mark.index]
    if prefix.strip() != "-":
        prefix = " " * (len(prefix) - len(prefix.lstrip())) + "- "
    at = _after_line(text, _span_end(text, last))
    return at, at, f"{prefix}{_flow(source)}\n"


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    """Apply non-overlapping edits in one pass (linear in the file, however many edits).
    Inserts at one offset land in reverse order of the list, as applying them one by one
    from the end would place them."""
    ordered = sorted(enumerate(edits), key=lambda ie: (ie[1][0], ie[1][1], -ie[0]))
    pieces, pos = [], 0
    for _, (start, end, replacement) in ordered:
        pieces += [text[pos:start], replacement]
        pos = max(pos, end)
    pieces.append(text[pos:])
    return "".join(pieces)


def update_fact(
    root: Path | str,
    fact_id: str,
    *,
    value: Any = _UNSET,
    status: str | None = None,
    add_source: dict[str, Any] | None = None,
    set_fields: dict[str, Any] | None = None,
) -> Path:
    """Change one fact's value/status/fields and append a source, in place; return its file."""
    changes: dict[str, Any] = dict(set_fields or {})
    if value is not _UNSET:
        changes["value"] = value
    if status is not None:
        changes["status"] = status
    for key in ("id", "statement", "title"):
        if key in changes:
            raise WritebackError(f"refusing to rewrite '{key}' of {fact_id}: it is hand-written")
    path, text, document, fact = _locate(Path(root), fact_id)
    with file_lock(path):
        current = path.read_text(encoding="utf-8")
        if current != text:  # changed while we waited for the lock: find it again
            path, text, document, fact = _locate(Path(root), fact_id)
        new_text = _apply(text, _edits_for(text, fact, changes, add_source, str(path)))
        _readable(text, new_text, path)
        _check_all(document, new_text, {fact_id: (changes, add_source)}, path, old_text=text)
        write_text_atomic(path, new_text)
    return path


def _check_result(
    old: str,
    new: str,
    fact_id: str,
    changes: dict[str, Any],
    add_source: dict[str, Any] | None,
    path: Path,
) -> None:
    """Refuse the write unless the new file parses to exactly the intended data."""
    _readable(old, new, path)
    _check_all(old, new, {fact_id: (changes, add_source)}, path)


def _check_all(
    old: str | yaml.Node | None,
    new: str,
    wanted: dict[str, tuple[dict[str, Any], dict[str, Any] | None]],
    path: Path,
    old_text: str | None = None,
) -> None:
    """`_check_result` for several facts of one file at once: one parse after the edit, and
    the data before from `old` (its text, or its already composed node: no second parse;
    inside yamlsrc.sharing() the parse of `old_text` already made). Callers check first
    that the loader reads the new text back (`_readable`)."""
    before = _shared_data(old if isinstance(old, str) else old_text)
    try:
        if before is None:
            before = yaml.load(old, Loader=_LOADER) if isinstance(old, str) else _construct(old)
    except yaml.YAMLError as exc:
        raise _not_constructed(path, exc) from None
    try:
        after = _read_back(new)
    except yaml.YAMLError as exc:
        raise WritebackError(f"{path}: edit would break the YAML ({exc}); not written") from exc
    facts = []
    for fact in before["facts"]:
        if isinstance(fact, dict) and fact.get("id") in wanted:
            changes, add_source = wanted[fact["id"]]
            fact = {**fact, **changes}  # a copy: `before` may be a shared parse
            if add_source is not None:
                sources = fact.setdefault("sources", [])
                if isinstance(sources, list):
                    fact["sources"] = [*sources, add_source]
                else:
                    sources.append(add_source)  # fails as it always did
        facts.append(fact)
    expected = {**before, "facts": facts}
    if after != expected:
        names = ", ".join(sorted(wanted))
        raise WritebackError(f"{path}: edit of {names} would change other data; not written")
    _still_loads(before["facts"], facts, path)


def _still_loads(before: list[Any], edited: list[Any], path: Path) -> None:
    """Refuse an edit after which one of the facts it edits would no longer load (a status
    outside the vocabulary, a value of the wrong type, an infinite number, a key only
    another category has): the loader drops or refuses such a fact, so the edit would take
    it out of its knowledge base. A fact that did not load before is no worse for it."""
    for old, new in zip(before, edited, strict=True):
        if old is new:  # not edited
            continue
        problem = fact_problem(new)
        if problem is not None and fact_problem(old) is None:
            fact_id = new.get("id") if isinstance(new, dict) else None
            raise WritebackError(
                f"{path}: fact '{fact_id}' would no longer load ({problem}); not written"
            )


def _shared_data(text: str | None) -> Any:
    """The data of `text` as the loader reads it, from the one-pass event parse (the one
    yamlsrc.sharing() holds, or makes once, inside such a block), when it reads without a
    problem; else None (the caller parses it with the YAML loader, which says what is wrong).
    The event parse builds the loader's values several times faster than its constructor."""
    if text is None:
        return None
    doc, problems = parse_located(text, "")
    return None if problems or doc.data is None else doc.data


def _read_back(text: str) -> Any:
    """`text` as the loader reads it (raises yaml.YAMLError when it does not parse). Inside
    yamlsrc.sharing() the parse is the one the lint that follows uses too."""
    data = _shared_data(text)
    return data if data is not None else yaml.load(text, Loader=_LOADER)


def _readable(old: str | None, new: str, path: Path) -> None:
    """Refuse, before writing, a file the loader would refuse (its size, depth and value
    bounds, limits.py) when it read the file as it was: a write-back never locks a knowledge
    base out of its own facts. (A file it already refused, an alias say, is no worse.)"""
    problem = unreadable_if_written(new, str(path))
    if problem is not None and (old is None or unreadable_if_written(old, str(path)) is None):
        raise WritebackError(f"{problem}; not written")


def append_facts(path: Path | str, facts: list[dict[str, Any]]) -> Path:
    """Append facts as YAML blocks to a fact file (created with a header if missing)."""
    path = Path(path)
    with file_lock(path):
        _finish(_grow(path, facts))
    return path


def append_facts_to_files(batches: list[tuple[Path, list[dict[str, Any]]]]) -> list[str | None]:
    """`append_facts` for several files (one batch each), all locked at once; for each, None
    or why it was not written. An import appends thousands of facts to a dozen files: with
    many facts, about half of the files are composed and parsed back on the other core
    (factbook.halves), their parses handed to this process's `sharing()` block, so the
    checks and the lint that follow read them from there. Each file is then checked and
    written here, exactly as `append_facts` does."""
    many = sum(len(facts) for _, facts in batches) >= _APPEND_PARALLEL_FROM
    order, child_share = _balanced(batches) if many else (list(range(len(batches))), 0.0)
    shared = shared_parses()

    def grow(part: Sequence[tuple[Path, list[dict[str, Any]]]]) -> list[tuple[Any, Any, Any]]:
        """Each file grown, with (inside sharing()) its parse and what the lint that follows
        will make of it: made here for this process's part, in the child for its own."""
        out: list[tuple[Any, Any, Any]] = []
        for path, facts in part:
            try:
                growth = _grow(Path(path), facts)
            except WritebackError as exc:
                out.append((None, str(exc), None))
                continue
            if not shared:
                out.append((growth, None, None))
                continue
            answer = _grown_parse(growth) or located_answer(growth.new_text)
            remember_located(growth.new_text, answer)  # the lint's parse below reads it
            out.append((growth, answer, fact_file_answer(growth.path, growth.new_text)))
        return out

    def send(grown: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
        """The child's answer without what this process has: its facts, every line."""
        growth, answer, linted = grown
        if growth is None or answer is None:
            return grown
        text = growth.new_text
        if linted is not None:
            linted = portable_fact_file(linted, text)
        return replace(growth, facts=[]), portable(answer, text), linted

    refused: list[str | None] = [None] * len(batches)
    with contextlib.ExitStack() as locks:
        for path in sorted({Path(p).resolve() for p, _ in batches}):
            locks.enter_context(file_lock(path))
        ordered = [batches[i] for i in order]
        if child_share:
            grown = in_halves(grow, ordered, least=2, child_share=child_share, send=send)
        else:
            grown = grow(ordered)
        for i, (growth, answer, linted) in zip(order, grown, strict=True):
            if growth is None:
                refused[i] = answer
                continue
            growth.facts = batches[i][1]  # the child sent its growths without them
            if answer is not None:
                remember_located(growth.new_text, answer)
            if linted is not None:
                keep_fact_file_answer(linted, growth.new_text)
            try:
                _finish(growth)
            except WritebackError as exc:
                refused[i] = str(exc)
    return refused


def _grown_parse(growth: _Growth) -> Any:
    """The grown file's parse made from the facts appended (knowledge.grown), or None."""
    blocks = growth.blocks
    if blocks.nodes is None:
        return None
    return grown_answer(
        growth.text,
        growth.new_text,
        blocks.first_end,
        blocks.starts,
        growth.facts,
        blocks.nodes,
        blocks.depth,
    )


_APPEND_PARALLEL_FROM = 400  # facts appended in one batch: fewer are not worth a fork
_APPEND_CHILD_SHARE = 0.5  # of the bytes: its answers are light to send (portable parses)


def _balanced(batches: list[tuple[Path, list[dict[str, Any]]]]) -> tuple[list[int], float]:
    """The batches' positions as [this process's..., the child's...], the child's last with
    about _APPEND_CHILD_SHARE of the bytes to write (the file and ~300 bytes a fact), and
    the child's share of the batches; 0.0 when they do not split (one file)."""
    weights = [
        (Path(path).stat().st_size if Path(path).exists() else 0) + 300 * len(facts)
        for path, facts in batches
    ]
    sides: tuple[list[int], list[int]] = ([], [])
    loads = [0.0, 0.0]
    shares = (1 - _APPEND_CHILD_SHARE, _APPEND_CHILD_SHARE)
    for i in sorted(range(len(batches)), key=weights.__getitem__, reverse=True):
        side = 0 if loads[0] / shares[0] <= loads[1] / shares[1] else 1  # the lighter one
        sides[side].append(i)
        loads[side] += weights[i]
    if not sides[0] or not sides[1]:
        return list(range(len(batches))), 0.0
    return sides[0] + sides[1], len(sides[1]) / len(batches)


@dataclass
class _Growth:
    """One file's append, composed with the fast dump, not yet checked or written."""

    path: Path
    text: str  # the file before, with the newline and `facts:` the blocks need
    facts: list[dict[str, Any]]
    dash: str
    more: bool
    new_text: str
    blocks: _Blocks


def _grow(path: Path, facts: list[dict[str, Any]]) -> _Growth:
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else FACT_FILE_HEADER
    except UnicodeDecodeError:
        raise WritebackError(f"{path}: not UTF-8 text; not written") from None
    except OSError as exc:  # a folder, a file that cannot be read
        raise WritebackError(f"{path}: {exc.strerror or exc}; not written") from None
    # inside an import the ids and dash come from the parse already made (factlayout)
    layout = append_layout(text)
    more, existing, dash = (True, *layout) if layout else _composed_layout(text, path)
    clash = [f["id"] for f in facts if f.get("id") in existing]
    if clash:
        raise WritebackError(f"{path}: ids already present: {', '.join(clash)}")
    if not text.endswith("\n"):
        text += "\n"
    if not more and "facts:" not in text:
        text += "facts:\n"
    new_text, blocks = _with_blocks(text, facts, dash, more, path, fast=True)
    return _Growth(path, text, facts, dash, more, new_text, blocks)


def _finish(growth: _Growth) -> None:
    """Refuse, or write, a composed append: the loader must read back every fact appended."""
    path, text, facts = growth.path, growth.text, growth.facts
    new_text = growth.new_text
    after = _checked(text, new_text, path)
    if after[len(after) - len(facts) :] != facts:  # the fast dump reads back otherwise
        new_text, _ = _with_blocks(text, facts, growth.dash, growth.more, path, fast=False)
        after = _checked(text, new_text, path)
        _refuse_unequal(after[len(after) - len(facts) :], facts, path)
    ids = {f.get("id") for f in after if isinstance(f, dict) and _hashable(f.get("id"))}
    if not all(f["id"] in ids for f in facts):  # a set: a list made this quadratic
        raise WritebackError(f"{path}: appended facts did not parse back; not written")
    write_text_atomic(path, new_text)


def _refuse_unequal(read: list[Any], facts: list[dict[str, Any]], path: Path) -> None:
    """Refuse an append whose facts would read back other than written: nothing is stored
    changed without a word. (repr tells 1 from 1.0 and True, and NaN from nothing else.)"""
    for got, fact in zip(read, facts, strict=False):
        if got != fact and repr(got) != repr(fact):
            raise WritebackError(
                f"{path}: fact {fact.get('id')!r} would not read back as written "
                "(a value YAML does not hold exactly); not written"
            )


def _composed_layout(text: str, path: Path) -> tuple[bool, set[Any], str]:
    """(whether the file has a `facts` list, the ids in it, the indent before each item's
    dash), from the composed text; a flow list is refused (blocks cannot join it)."""
    node = _facts_node(text, str(path))
    if node is not None and node.flow_style:
        raise WritebackError(f"{path}: 'facts' is a flow list; cannot append blocks")
    existing = {
        v.value
        for item in (node.value if node else [])
        if isinstance(item, yaml.MappingNode)
        for k, v in item.value
        if k.value == "id"
    }
    dash = "  "
    if node is not None and node.value:
        first = node.value[0]
        start = _line_start(text, first.start_mark.index)
        dash = " " * (len(text[start : first.start_mark.index]) - 2)
    return node is not None, existing, dash


@dataclass
class _Blocks:
    """Where `_with_blocks` put the appended facts, and what the reader will count in them
    (knowledge.grown makes the grown file's parse from this)."""

    starts: list[int] = field(default_factory=list)  # each block's first line
    first_end: int = 0  # where the first block ends in the text
    nodes: int | None = 0  # the values in the blocks; None: the representer wrote one
    depth: int = 0  # the deepest nesting in a block, the facts list being 1


def _with_blocks(
    text: str, facts: list[dict[str, Any]], dash: str, more: bool, path: Path, *, fast: bool
) -> tuple[str, _Blocks]:
    """The file with `facts` appended as blocks, and where they are; refused as soon as it
    grows past the bytes the loader reads."""
    prefix = text + ("\n" if more else "")
    blocks: list[str] = []
    placed = _Blocks(first_end=len(prefix))
    at_line = prefix.count("\n") + 1
    size = len(text.encode("utf-8"))
    bounded = size <= YAML_MAX_BYTES  # a file the loader already refuses is no worse for it
    try:
        for dumped_chunk, emitted in _dumped_chunks(facts, fast=fast):
            if emitted is None or not emitted.exact:
                placed.nodes = None
            elif placed.nodes is not None:
                placed.nodes += emitted.nodes - 1  # not the chunk's own list
                placed.depth = max(placed.depth, emitted.depth)
            for dumped in dumped_chunk:
                # each line indented, ended as libyaml ended it: NEL, LS and PS inside a quoted
                # value are line breaks to YAML too, and must stay what they are
                blocks.append("".join(dash + line for line in dumped.splitlines(keepends=True)))
                size += len(blocks[-1].encode("utf-8")) + 1
                if bounded and size > YAML_MAX_BYTES:  # refused whatever follows: emit no more
                    raise WritebackError(
                        f"{path}:1: with {len(facts)} facts appended it would be over the "
                        f"{YAML_MAX_BYTES} bytes factbook reads; not written"
                    )
                placed.starts.append(at_line)
                at_line += blocks[-1].count("\n") + 1
    except UnicodeEncodeError as exc:  # a lone surrogate, which JSON's \ud800 makes
        code = ord(exc.object[exc.start])
        raise WritebackError(
            f"{path}: a value holds U+{code:04X}, which cannot be written as UTF-8; not written"
        ) from None
    if blocks:
        placed.first_end += len(blocks[0])
    return prefix + "\n".join(blocks), placed


def _checked(text: str, new_text: str, path: Path) -> list[Any]:
    """The facts `new_text` holds as the loader reads it back; refused when the loader
    would not read it (and read `text`)."""
    _readable(text, new_text, path)
    try:
        after = _read_back(new_text) or {}
    except yaml.YAMLError as exc:
        raise _not_constructed(path, exc) from None
    found = after.get("facts") if isinstance(after, dict) else None
    return found if isinstance(found, list) else []


def _not_constructed(path: Path, exc: yaml.YAMLError) -> WritebackError:
    """A fact file the loader refuses already (a `!!python/name` tag, lint names it): it is
    not written to, and why is one line (a ConstructorError escaped import and accept)."""
    mark = getattr(exc, "problem_mark", None)
    where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
    problem = getattr(exc, "problem", None) or type(exc).__name__
    return WritebackError(f"{where}: not YAML factbook reads ({problem}); not written")


def _hashable(value: Any) -> bool:
    """An id read back may be any YAML value (a list, a mapping): only hashable ones can
    equal the str ids appended."""
    try:
        hash(value)
    except TypeError:
        return False
    return True


@dataclass
class FactUpdate:
    """One fact's change for `update_facts`: the same arguments as `update_fact`."""

    fact_id: str
    value: Any = _UNSET
    status: str | None = None
    add_source: dict[str, Any] | None = None
    set_fields: dict[str, Any] | None = None

    def changes(self) -> dict[str, Any]:
        """The keys to set: set_fields, then value and status when given."""
        out = dict(self.set_fields or {})
        if self.value is not _UNSET:
            out["value"] = self.value
        if self.status is not None:
            out["status"] = self.status
        return out


def fact_file_text(path: Path, root: Path) -> str:
    """A fact file's text for an edit; a WritebackError naming its file:line when it is not
    UTF-8 (an accepted proposal, an import or a --record edit met a UnicodeDecodeError that
    escaped the CLI: lint names the file, the writer did not)."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        try:
            shown = path.relative_to(root).as_posix()
        except ValueError:
            shown = str(path)
        raise WritebackError(
            f"{shown}:{line}: not UTF-8 (byte {exc.start}); not edited, fix the file first"
        ) from None


def update_facts(root: Path | str, updates: list[FactUpdate]) -> tuple[list[FactUpdate], list[str]]:
    """Apply many updates with one read, one check and one atomic write per fact file.

    Linear in the number of facts (recording 1,000 facts is one pass, not 1,000). An update
    that cannot be made is reported ("ID: why") and the others are still written.
    Returns (the updates written, the refusals).
    """
    root = Path(root)
    wanted: dict[str, FactUpdate] = {}
    problems: list[str] = []
    for update in updates:
        changes = update.changes()
        bad = [key for key in ("id", "statement", "title") if key in changes]
        if bad:
            problems.append(f"{update.fact_id}: refusing to rewrite '{bad[0]}': it is hand-written")
        else:
            wanted[update.fact_id] = update
    done: list[FactUpdate] = []
    for path in tree_glob(root / "facts", "*.yaml", shown="facts") if wanted else []:
        with file_lock(path):
            text = fact_file_text(path, root)
            if not any(fact_id in text for fact_id in wanted):
                continue
            # inside an import, only the start of the file that holds the facts edited
            prefix = edit_prefix(text, wanted)
            if prefix == "":  # none of them is in this file (its shared parse says so)
                continue
            document = _composed_prefix(prefix, str(path)) if prefix else None
            try:
                if document is None:
                    document = _compose(text, str(path))
                nodes = _index(_facts_seq(document, str(path)))
            except WritebackError as exc:
                problems += [f"{i}: {exc}" for i in wanted if i in text]
                continue
            mine = [wanted.pop(i) for i in list(wanted) if i in nodes]
            written, refused = _update_file(path, text, document, nodes, mine)
            done += written
            problems += refused
    problems += [f"{i}: no fact with id '{i}' in {root / 'facts'}" for i in wanted]
    return done, problems


def _composed_prefix(prefix: str, display: str) -> yaml.Node | None:
    """The composed start of a file (factlayout.edit_prefix), None if it does not compose
    (the whole text is composed then, and says what is wrong)."""
    try:
        return _compose(prefix, display)
    except WritebackError:
        return None


def _index(node: yaml.SequenceNode | None) -> dict[str, yaml.MappingNode]:
    """{fact id: its mapping node} for one file, first definition wins (as `_find`)."""
    out: dict[str, yaml.MappingNode] = {}
    for item in node.value if node else []:
        if isinstance(item, yaml.MappingNode):
            for key, value in item.value:
                if key.value == "id" and isinstance(value, yaml.ScalarNode):
                    out.setdefault(value.value, item)
    return out


def _update_file(
    path: Path,
    text: str,
    document: yaml.Node | None,
    nodes: dict[str, yaml.MappingNode],
    updates: list[FactUpdate],
) -> tuple[list[FactUpdate], list[str]]:
    """All updates of one file (the caller holds its lock): one pass when every edit checks
    out; otherwise one fact at a time, so one bad fact is reported and the rest written."""
    edits: list[tuple[int, int, str]] = []
    ready: list[FactUpdate] = []
    refused: list[str] = []
    for update in updates:
        try:
            edits += _edits_for(
                text, nodes[update.fact_id], update.changes(), update.add_source, str(path)
            )
        except WritebackError as exc:
            refused.append(f"{update.fact_id}: {exc}")
        else:
            ready.append(update)
    if not ready:
        return [], refused
    new_text = _apply(text, edits)
    try:
        _readable(text, new_text, path)
        wanted = {u.fact_id: (u.changes(), u.add_source) for u in ready}
        _check_all(document, new_text, wanted, path, old_text=text)
    except WritebackError:
        return _update_one_by_one(path, text, ready, refused)
    write_text_atomic(path, new_text)
    return ready, refused


def _update_one_by_one(
    path: Path, text: str, updates: list[FactUpdate], refused: list[str]
) -> tuple[list[FactUpdate], list[str]]:
    """The slow path, taken only when the one-pass edit did not check out."""
    written = []
    for update in updates:
        fact = _find(_facts_node(text, str(path)), update.fact_id)
        assert fact is not None
        try:
            changes = update.changes()
            new_text = _apply(text, _edits_for(text, fact, changes, update.add_source, str(path)))
            _check_result(text, new_text, update.fact_id, changes, update.add_source, path)
        except WritebackError as exc:
            refused.append(f"{update.fact_id}: {exc}")
            continue
        text = new_text
        written.append(update)
    if written:
        write_text_atomic(path, text)
    return written, refused
