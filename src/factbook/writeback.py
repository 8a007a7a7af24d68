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
import copy
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from .atomic import write_text_atomic
from .errors import InputError, UsageError

_UNSET: Any = object()
# libyaml when present: the same marks (character offsets), ten times faster on big files.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
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


class WritebackError(InputError):
    """A fact file cannot be edited safely (flow-style fact, unparsable file, id clash)."""


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock for one fact file, shared by threads and processes."""
    path = Path(path).resolve()
    root = _kb_root(path)
    rel = path.relative_to(root).as_posix().replace("/", "__") if root else path.name
    lock_path = (root or path.parent) / ".factbook-cache" / "locks" / f"{rel}.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as handle:
        if os.name == "posix":
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if os.name == "posix":
                import fcntl

                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _kb_root(path: Path) -> Path | None:
    for parent in path.parents:
        if (parent / "facts").is_dir():
            return parent
    return None


def _flow(value: Any) -> str:
    """A value as one line of YAML flow text (JSON-style escapes for multi-line strings)."""
    if isinstance(value, str) and ("\n" in value or "\r" in value):
        return json.dumps(value, ensure_ascii=False)
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


def _facts_node(text: str, display: str) -> yaml.SequenceNode | None:
    try:
        root = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise WritebackError(f"{display}: not valid YAML: {exc}") from exc
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
    for path in sorted((Path(root) / "facts").rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        if fact_id not in text:
            continue
        if _find(_facts_node(text, str(path)), fact_id) is not None:
            return path
    raise UsageError(f"no fact with id '{fact_id}' in {Path(root) / 'facts'}")


def _edits_for(
    text: str,
    fact: yaml.MappingNode,
    changes: dict[str, Any],
    add_source: dict[str, Any] | None,
    display: str,
) -> list[tuple[int, int, str]]:
    """(start, end, replacement) spans that apply `changes` and `add_source` to one fact."""
    if fact.flow_style:
        raise WritebackError(f"{display}: fact at line {fact.start_mark.line + 1} is flow style")
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
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


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
    path = find_fact_file(Path(root), fact_id)
    with file_lock(path):
        path = find_fact_file(Path(root), fact_id)  # it may have moved while we waited
        text = path.read_text(encoding="utf-8")
        fact = _find(_facts_node(text, str(path)), fact_id)
        assert fact is not None
        new_text = _apply(text, _edits_for(text, fact, changes, add_source, str(path)))
        _check_result(text, new_text, fact_id, changes, add_source, path)
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
    before = yaml.load(old, Loader=_LOADER)
    try:
        after = yaml.load(new, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise WritebackError(f"{path}: edit would break the YAML ({exc}); not written") from exc
    expected = copy.deepcopy(before)
    for fact in expected["facts"]:
        if isinstance(fact, dict) and fact.get("id") == fact_id:
            fact.update(changes)
            if add_source is not None:
                fact.setdefault("sources", []).append(add_source)
    if after != expected:
        raise WritebackError(f"{path}: edit of {fact_id} would change other data; not written")


def append_facts(path: Path | str, facts: list[dict[str, Any]]) -> Path:
    """Append facts as YAML blocks to a fact file (created with a header if missing)."""
    path = Path(path)
    with file_lock(path):
        text = path.read_text(encoding="utf-8") if path.exists() else FACT_FILE_HEADER
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
        clash = [f["id"] for f in facts if f.get("id") in existing]
        if clash:
            raise WritebackError(f"{path}: ids already present: {', '.join(clash)}")
        dash = "  "
        if node is not None and node.value:
            first = node.value[0]
            start = _line_start(text, first.start_mark.index)
            dash = " " * (len(text[start : first.start_mark.index]) - 2)
        if not text.endswith("\n"):
            text += "\n"
        if node is None and "facts:" not in text:
            text += "facts:\n"
        blocks = []
        for fact in facts:
            dumped = yaml.dump(
                [fact],
                Dumper=_BlockDumper,
                sort_keys=False,
                allow_unicode=True,
                width=100,
                default_flow_style=None,
            )
            blocks.append("".join(dash + line + "\n" for line in dumped.splitlines()))
        new_text = text + ("\n" if node is not None else "") + "\n".join(blocks)
        after = yaml.load(new_text, Loader=_LOADER) or {}
        ids = [f.get("id") for f in after.get("facts") or [] if isinstance(f, dict)]
        if not all(f["id"] in ids for f in facts):
            raise WritebackError(f"{path}: appended facts did not parse back; not written")
        write_text_atomic(path, new_text)
    return path
