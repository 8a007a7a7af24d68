"""Proposed targets written into targets.yaml's `targets:` mapping, keeping everything else.

The entries go in after the mapping's last target, each with a comment saying where it came
from and, for a redacted host, that `host` is a placeholder to point at the real box. The
rest of the file (comments, groups, its own style) is untouched; a file without a `targets:`
mapping gets one. The caller lints the result (propose.py applies it to a scratch copy).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from factbook.knowledge.limits import YAML_MAX_BYTES
from factbook.knowledge.yamlsrc import refusal
from factbook.store.blockyaml import flow_member
from factbook.store.writeback import WritebackError, fact_file_text

_FLOW_WIDTH = 10_000  # wider than any line written: a value is never broken
HEADER = "# yaml-language-server: $schema=schema/targets.schema.json\n"


def _flow(value: Any) -> str:
    """One value in flow style on one line (a list around it keeps a scalar from being
    written as a document of its own): blockyaml's text where its rules decide it, else
    the emitter's."""
    fast = flow_member(value)
    if fast is not None and len(fast) < _FLOW_WIDTH // 2:
        return fast
    text = yaml.safe_dump([value], default_flow_style=True, width=_FLOW_WIDTH, allow_unicode=True)
    return text.strip()[1:-1]


def _block(name: str, entry: dict[str, Any], comment: str, indent: str) -> str:
    lines = [""] if comment else []
    lines += [f"{indent}# {line}" for line in comment.splitlines()]
    lines.append(f"{indent}{name}:")
    for key, value in entry.items():
        lines.append(f"{indent}  {key}: {_flow(value)}")
    return "\n".join(lines) + "\n"


def add_targets(text: str | None, targets: list[tuple[str, dict[str, Any], str]]) -> str:
    """`text` (targets.yaml, or None when there is none) with `targets` added, as
    (name, entry, comment) in order."""
    if not targets:
        return text or ""
    if not text or not text.strip():
        body = "".join(_block(n, e, c, "  ") for n, e, c in targets)
        return HEADER + "targets:\n" + body
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise WritebackError(f"targets.yaml: not valid YAML ({exc.__class__.__name__})") from None
    node = None
    key_node = None
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "targets":
                key_node, node = key, value
    if node is None or key_node is None:
        body = "".join(_block(n, e, c, "  ") for n, e, c in targets)
        return text.rstrip("\n") + "\n\ntargets:\n" + body
    if isinstance(node, yaml.MappingNode) and node.value and not node.flow_style:
        first = node.value[0][0]
        indent = " " * first.start_mark.column
        # after the last target's own lines, before any comment block that follows it
        end = _last_value_end(node)
        newline = text.find("\n", end)
        cut = len(text) if newline < 0 else newline + 1
        if newline < 0:
            text += "\n"
            cut = len(text)
        body = "".join(_block(n, e, c, indent) for n, e, c in targets)
        return text[:cut] + body + text[cut:]
    # `targets:` empty, null or in flow style: rewrite that value as a block mapping
    existing = _flow_targets(text, key_node)
    start = key_node.start_mark.index
    end = node.end_mark.index
    body = "".join(_block(n, e, "", "  ") for n, e in existing.items())
    body += "".join(_block(n, e, c, "  ") for n, e, c in targets)
    return text[:start] + "targets:\n" + body + text[end:].lstrip(" ")


def _flow_targets(text: str, key_node: yaml.Node) -> dict[Any, Any]:
    """The targets already in a `targets:` that is empty, null or in flow style, to rewrite
    as a block. Read as the loader reads targets.yaml (no aliases, bounded): a plain
    safe_load here was a traceback on `targets: !!set {a}` (AttributeError) or a key that is
    a list (ConstructorError), and would spell out an alias tree in the rewrite."""
    where = f"targets.yaml:{key_node.start_mark.line + 1}"
    problem = refusal(text, "targets.yaml")
    if problem is not None:
        raise WritebackError(f"{problem}; not rewritten")
    try:
        loaded = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        raise WritebackError(f"{where}: not valid YAML ({exc.__class__.__name__})") from None
    existing = loaded.get("targets") if isinstance(loaded, dict) else None
    if existing is None:
        return {}
    if not isinstance(existing, dict):
        raise WritebackError(f"{where}: targets: expected a mapping; not rewritten")
    return existing


def _last_value_end(node: yaml.Node) -> int:
    """Where the last scalar of a block collection ends (PyYAML's own end mark of a block
    mapping lies past the comments that follow it)."""
    while (
        isinstance(node, (yaml.MappingNode, yaml.SequenceNode))
        and node.value
        and not node.flow_style
    ):
        last = node.value[-1]
        node = last[1] if isinstance(last, tuple) else last
    return node.end_mark.index


def write_targets(path: Path, targets: list[tuple[str, dict[str, Any], str]]) -> None:
    """add_targets on the file at `path` (the scratch copy's); refused before writing when
    the result is more than the loader reads (thousands of boxes), so the facts naming them
    say why their targets are missing instead of 'unknown target'."""
    text = fact_file_text(path, path.parent) if path.exists() else None  # not UTF-8: refused
    grown = add_targets(text, targets)
    size = len(grown.encode("utf-8"))
    if size > YAML_MAX_BYTES:
        raise WritebackError(
            f"targets.yaml: with {len(targets)} targets added it would be {size} bytes, over "
            f"the {YAML_MAX_BYTES} bytes factbook reads; not written"
        )
    path.write_text(grown, encoding="utf-8")
