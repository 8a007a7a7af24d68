"""factbook's own validator and the reference `jsonschema` library judge every file the same.

Fact, milestone and target files (the shipped ones, the examples in docs/ and a few hundred
seeded random ones, valid and broken) go through the real YAML loader, then both validators:
jsonschema with the published schema/*.schema.json, factbook with its in-code schema.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import random
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from factbook.knowledge import schema
from factbook.knowledge.yamlsrc import load_located

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = {
    "facts": schema.FACT_FILE_SCHEMA,
    "milestones": schema.MILESTONES_SCHEMA,
    "targets": schema.TARGETS_SCHEMA,
}
ODD_VALUES: list[Any] = [
    *("", "x", "a\n", "Hw.GPU", "hw..gpu", "hw.gpu-1", "2024-01-01", "ünï", " lead"),
    *(0, -1, 1, 7, 65535, 65536, 2**70, 2.0, 2.5, -0.0, 1e300, math.inf, math.nan),
    *(True, False, None, [], ["x"], [1, "x"], {}, {"x": 1}, {1: "int key"}),
]


class _NoAliases(yaml.SafeDumper):
    """Shared objects written out in full: factbook's loader refuses YAML aliases."""

    def ignore_aliases(self, data: object) -> bool:
        return True


@functools.cache  # read and checked against its meta-schema once, not per judged file
def _published(which: str) -> jsonschema.protocols.Validator:
    data = json.loads((ROOT / "schema" / f"{which}.schema.json").read_text())
    cls = jsonschema.validators.validator_for(data, default=jsonschema.Draft202012Validator)
    cls.check_schema(data)
    return cls(data)


def _ident(rng: random.Random) -> str:
    parts = ["".join(rng.choice("abcxyz019_") for _ in range(rng.randint(1, 6)))]
    parts += ["".join(rng.choice("abc09_-") for _ in range(rng.randint(1, 5))) for _ in range(3)]
    return ".".join(parts[: rng.randint(1, 4)])


def _valid(sub: dict[str, Any], rng: random.Random, depth: int = 0) -> Any:
    """A random instance the schema accepts (only the keywords the schemas use)."""
    if "enum" in sub:
        return rng.choice(sub["enum"])
    kinds = sub.get("type")
    if kinds is None:
        return rng.choice(ODD_VALUES)
    kind = rng.choice(kinds) if isinstance(kinds, list) else kinds
    if kind == "object":
        props = sub.get("properties", {})
        keys = [k for k in props if k in sub.get("required", ()) or rng.random() < 0.3]
        out = {k: _valid(props[k], rng, depth + 1) for k in keys}
        extra = sub.get("additionalProperties", True)
        if isinstance(extra, dict):
            for _ in range(rng.randint(1, 3)):
                out[_ident(rng)] = _valid(extra, rng, depth + 1)
        elif extra is True and depth < 3 and rng.random() < 0.3:
            out[_ident(rng)] = rng.choice(ODD_VALUES)
        return out
    if kind == "array":
        count = max(sub.get("minItems", 0), rng.randint(0, 3 if depth else 6))
        items = sub.get("items", {})
        return [_valid(items, rng, depth + 1) for _ in range(count)]
    if kind == "string":
        return _ident(rng) if "pattern" in sub else rng.choice(["x", "a b", "3157", "ünï", ""])
    if kind in ("integer", "number"):
        low = sub.get("minimum", sub.get("exclusiveMinimum", -3) + 1)
        value = rng.randint(int(low), int(sub.get("maximum", 5000)))
        return value + 0.5 if kind == "number" and rng.random() < 0.3 else value
    return {"boolean": rng.random() < 0.5, "null": None}[kind]


def _nodes(value: Any, path: tuple = ()) -> list[tuple]:
    found = [path]
    if isinstance(value, dict):
        for key, sub in value.items():
            found += _nodes(sub, (*path, key))
    elif isinstance(value, list):
        for index, sub in enumerate(value):
            found += _nodes(sub, (*path, index))
    return found


def _mutate(value: Any, rng: random.Random) -> Any:
    """Break one random node: replace it, drop a key, add an unknown key, empty a list."""
    path = rng.choice(_nodes(value)[1:] or [()])
    if not path:
        return rng.choice(ODD_VALUES)
    parent = value
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    action = rng.random()
    if action < 0.6:
        parent[last] = copy.deepcopy(rng.choice(ODD_VALUES))  # shared, a later edit would loop
    elif action < 0.75 and isinstance(parent, dict):
        del parent[last]
    elif action < 0.9 and isinstance(parent, dict):
        parent[rng.choice(["bogus", "Title", 3])] = copy.deepcopy(rng.choice(ODD_VALUES))
    elif isinstance(parent[last], list):
        parent[last] = []
    else:
        parent[last] = copy.deepcopy(rng.choice(ODD_VALUES))
    return value


def _judge(path: Path, which: str) -> tuple[bool, bool]:
    """(jsonschema accepts, factbook accepts) the file as loaded by factbook's YAML loader."""
    doc, problems = load_located(path, path.name)
    assert problems == [], problems
    ours = schema.validate(doc.data, SCHEMAS[which], doc) == []
    if not _json_document(doc.data):
        # YAML holds what JSON cannot (a non-string key, NaN, a date): no JSON Schema verdict
        # exists for it, and factbook refuses it (results and the agent speak JSON)
        assert not ours, path.read_text()
        return ours, ours
    return _published(which).is_valid(doc.data), ours


def _json_document(value: Any) -> bool:
    """True when `value` is a JSON document as it stands (string keys, finite numbers)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if value is None or isinstance(value, (str, int, bool)):
        return True
    if isinstance(value, list):
        return all(_json_document(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_document(v) for k, v in value.items())
    return False


def _generated(tmp_path: Path, which: str, count: int, seed: int) -> list[tuple[Path, bool]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        data = _valid(SCHEMAS[which], rng)
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            data = _mutate(data, rng)
        path = tmp_path / f"{which}-{i}.yaml"
        path.write_text(yaml.dump(data, Dumper=_NoAliases, allow_unicode=True, sort_keys=False))
        out.append((path, i))
    return out


@pytest.mark.parametrize(
    ("which", "count"), [("facts", 300), ("milestones", 100), ("targets", 100)]
)
def test_generated_files_are_judged_the_same(tmp_path: Path, which: str, count: int) -> None:
    verdicts = {True: 0, False: 0}
    disagreements = []
    for path, _ in _generated(tmp_path, which, count, seed=1510 + count):
        reference, ours = _judge(path, which)
        verdicts[reference] += 1
        if reference != ours:
            disagreements.append((path.read_text(), reference, ours))
    assert disagreements == []
    # both kinds are plentiful, so agreeing means something
    assert min(verdicts.values()) >= count // 5, verdicts


def _fixtures() -> list[tuple[Path, str]]:
    found = [(p, "facts") for p in sorted((ROOT / "facts").glob("*.yaml"))]
    found += [(ROOT / "milestones.yaml", "milestones"), (ROOT / "targets.yaml", "targets")]
    return found


@pytest.mark.parametrize(("path", "which"), _fixtures(), ids=lambda v: getattr(v, "name", v))
def test_shipped_files_are_valid_for_both(path: Path, which: str) -> None:
    assert _judge(path, which) == (True, True)


def test_docs_examples_are_judged_the_same(tmp_path: Path) -> None:
    """Every fenced YAML example in docs/ that is a whole fact, milestone or target file."""
    judged = 0
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for block in re.findall(r"```yaml\n(.*?)```", page.read_text(), re.S):
            try:
                data = yaml.safe_load(block)
            except yaml.YAMLError:
                continue
            which = next((k for k in SCHEMAS if isinstance(data, dict) and k in data), None)
            if which is None:
                continue
            path = tmp_path / f"example-{judged}.yaml"
            path.write_text(block)
            reference, ours = _judge(path, which)
            assert reference == ours, (page.name, block)
            judged += 1
    assert judged >= 2


@pytest.mark.parametrize(
    ("fragment", "accepted"),
    [
        ({"priority": 2.0}, True),  # JSON Schema: 2.0 is an integer
        ({"priority": True}, False),  # and true is not
        ({"priority": 0}, False),
        ({"status": "verified"}, True),
        ({"token_id": 2.5}, False),
        ({"check": {"probe": "x", "timeout": 0}}, False),
        ({"id": "x.y\n"}, True),  # Python's `$` (both validators) before a final newline
    ],
)
def test_edge_values(fragment: dict[str, Any], accepted: bool, tmp_path: Path) -> None:
    fact = {
        "id": "a.b",
        "category": "progress",
        "title": "t",
        "statement": "s",
        "status": "assumed",
        "sources": [{"seed": "x"}],
        **fragment,
    }
    path = tmp_path / "f.yaml"
    path.write_text(yaml.dump({"facts": [fact]}, Dumper=_NoAliases))
    assert _judge(path, "facts") == (accepted, accepted)


def test_keywords_the_validator_lacks_are_refused_not_ignored(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text("name: abcdef\n")
    doc, _ = load_located(path, "f.yaml")
    sub = {"type": "object", "properties": {"name": {"type": "string", "minLength": 9}}}
    with pytest.raises(schema.UnsupportedKeyword, match=r"not implemented: \['minLength'\]"):
        schema.validate(doc.data, sub, doc)
    sub = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}}
    [problem] = schema.validate(doc.data, sub, doc)  # implemented since fact ids have a bound
    assert "6 characters; at most 3" in problem.message
    with pytest.raises(schema.UnsupportedKeyword, match="'oneOf'"):
        schema.check_supported({"items": {"oneOf": []}})
    for published in SCHEMAS.values():
        schema.check_supported(published)  # what we publish, we implement


def test_every_keyword_the_published_schemas_use_is_implemented() -> None:
    used: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            used.update(node)
            for key, sub in node.items():
                if key == "properties":
                    for prop in sub.values():
                        walk(prop)
                elif isinstance(sub, dict):
                    walk(sub)

    for which in SCHEMAS:
        walk(json.loads((ROOT / "schema" / f"{which}.schema.json").read_text()))
    assert used <= schema.KEYWORDS | schema.ANNOTATIONS


class _Text(str):
    """A str subclass: what YAML never builds, the fast check leaves to the full walk."""


def test_the_quick_json_check_agrees_with_the_walk_that_names_the_path() -> None:
    import datetime

    odd = [*ODD_VALUES, b"x", datetime.date(2026, 1, 1), _Text("x"), {_Text("k"): 1}, {(1,): 2}]
    values = [*odd, [*ODD_VALUES], {"a": list(odd)}, {"a": {"b": [1, {"c": math.inf}]}}]
    values += [[v] for v in odd] + [{"k": v} for v in odd] + [{"k": [{"j": v}]} for v in odd]
    for value in values:
        assert schema._json_ok(value) == (schema._non_json(value) is None), value
