"""Load YAML keeping the line of every value, so every problem can name `file:line`.

PyYAML's composer gives nodes with marks; we build plain Python values from them and keep a
side table from each value's path (("facts", 3, "check")) to its 1-based line. Duplicate keys,
which PyYAML silently collapses, are reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import Problem

PathKey = tuple[Any, ...]
# libyaml's composer keeps marks and is ~10x faster than the pure-Python one.
_COMPOSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class LocatedDoc:
    """A parsed YAML document with the line of every path in it."""

    file: str
    data: Any
    lines: dict[PathKey, int] = field(default_factory=dict)
    key_lines: dict[PathKey, int] = field(default_factory=dict)

    def line(self, path: PathKey) -> int:
        """The line of the value at `path`, or of its closest ancestor."""
        for n in range(len(path), -1, -1):
            sub = path[:n]
            if sub in self.key_lines:
                return self.key_lines[sub]
            if sub in self.lines:
                return self.lines[sub]
        return 1

    def problem(self, path: PathKey, message: str) -> Problem:
        return Problem(self.file, self.line(path), message)


def _construct(
    node: yaml.Node, path: PathKey, doc: LocatedDoc, problems: list[Problem], ctor: yaml.SafeLoader
) -> Any:
    doc.lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                problems.append(
                    Problem(doc.file, key_node.start_mark.line + 1, "mapping keys must be scalars")
                )
                continue
            key = _scalar(key_node, doc, problems, ctor)
            if key in result:
                problems.append(
                    Problem(doc.file, key_node.start_mark.line + 1, f"duplicate key {key!r}")
                )
            doc.key_lines[(*path, key)] = key_node.start_mark.line + 1
            result[key] = _construct(value_node, (*path, key), doc, problems, ctor)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [
            _construct(item, (*path, i), doc, problems, ctor) for i, item in enumerate(node.value)
        ]
    return _scalar(node, doc, problems, ctor)


def _scalar(
    node: yaml.Node, doc: LocatedDoc, problems: list[Problem], ctor: yaml.SafeLoader
) -> Any:
    try:
        return ctor.construct_object(node, deep=True)
    except yaml.YAMLError as exc:
        problems.append(Problem(doc.file, node.start_mark.line + 1, f"invalid value: {exc}"))
        return None


def load_located(path: Path, display: str) -> tuple[LocatedDoc, list[Problem]]:
    """Parse one YAML file; syntax errors come back as problems, never as exceptions."""
    doc = LocatedDoc(display, None)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return doc, [Problem(display, 1, f"cannot read file: {exc}")]
    try:
        node = yaml.compose(text, Loader=_COMPOSER)
    except yaml.YAMLError:
        return doc, [_syntax_problem(text, display)]
    problems: list[Problem] = []
    if node is not None:
        ctor = yaml.SafeLoader("")
        try:
            doc.data = _construct(node, (), doc, problems, ctor)
        finally:
            ctor.dispose()
    return doc, problems


def _syntax_problem(text: str, display: str) -> Problem:
    """Re-parse with the pure-Python parser: its messages name the offending character."""
    try:
        yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        return Problem(display, line, f"YAML syntax error: {exc.problem or exc}")
    except yaml.YAMLError as exc:
        return Problem(display, 1, f"YAML syntax error: {exc}")
    return Problem(display, 1, "YAML syntax error")
