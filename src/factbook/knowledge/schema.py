"""The fact file schema, published as JSON Schema and enforced with located messages.

One definition serves both: `factbook schema` prints it for editors, and `validate()` walks
the same dict (the subset of JSON Schema used here) to report every violation at its line.
Categories and their extra keys come from categories.py. Rules that JSON Schema cannot say
well (per-category keys, links, milestones, probes) live in
the loader's semantic pass.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from factbook.errors import Problem
from factbook.knowledge import categories
from factbook.knowledge.model import TRANSPORTS
from factbook.knowledge.names import shown
from factbook.knowledge.yamlsrc import LocatedDoc, PathKey

STATUSES = ["assumed", "verified", "refuted", "stale"]
CATEGORIES = categories.NAMES
LINK_RELATIONS = [
    "fixed_by",
    "fixes",
    "checked_by",
    "checks",
    "justified_by",
    "justifies",
    "replaced_by",
    "replaces",
    "caused_by",
    "causes",
    "see_also",
]
# Derived from the category registry: which category may (and must) carry which extra keys.
CATEGORY_KEYS: dict[str, set[str]] = {c.name: set(c.keys) for c in categories.CATEGORIES if c.keys}
CATEGORY_REQUIRED: dict[str, set[str]] = {
    c.name: set(c.required) for c in categories.CATEGORIES if c.required
}
ID_PATTERN = r"^[a-z0-9_]+(\.[a-z0-9_-]+)*$"
MILESTONE_REF = {"type": ["string", "integer"]}

_STR = {"type": "string"}
_ANY: dict[str, Any] = {}

SOURCE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "seed": _STR,
        "message": {"type": "integer"},
        "quote": _STR,
        "run": _STR,
        "runbook": _STR,
        "step": _STR,
        "target": _STR,
        "date": {"type": ["string"]},
        "note": _STR,
    },
}

CHECK_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["probe"],
    "properties": {
        "probe": _STR,
        "args": {"type": "object"},
        "expect": {"type": "object"},
        "timeout": {"type": "number", "exclusiveMinimum": 0},
        "target": _STR,
    },
}

FACT_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "category", "title", "statement", "status", "sources"],
    "properties": {
        "id": {"type": "string", "pattern": ID_PATTERN, "maxLength": 200},
        "category": {"type": "string", "enum": CATEGORIES},
        "title": _STR,
        "statement": _STR,
        "value": _ANY,
        "unit": {"type": ["string", "null"]},
        "status": {"type": "string", "enum": STATUSES},
        "target": {"type": ["string", "null"]},
        "tags": {"type": "array", "items": _STR},
        "since": {"type": ["string", "integer", "null"]},
        "until": {"type": ["string", "integer", "null"]},
        "history": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["at", "status"],
                "properties": {
                    "at": MILESTONE_REF,
                    "status": {"type": "string", "enum": STATUSES},
                    "note": _STR,
                },
            },
        },
        "sources": {"type": "array", "minItems": 1, "items": SOURCE_SCHEMA},
        "check": CHECK_SCHEMA,
        "links": {
            "type": "object",
            "additionalProperties": False,
            "properties": {r: {"type": "array", "items": _STR} for r in LINK_RELATIONS},
        },
        # category-specific keys (the loader checks which category may use which)
        **categories.category_key_schemas(),
    },
}

FACT_FILE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://factbook.invalid/schema/facts.schema.json",
    "title": "factbook fact file",
    "type": "object",
    "additionalProperties": False,
    "required": ["facts"],
    "properties": {"facts": {"type": "array", "items": FACT_SCHEMA}},
}

# The file's top level alone: facts are validated one by one so each gets its own messages.
# Its list is not walked here for values JSON cannot hold, as a free-form schema's would be
# (`_free_form`; the empty `properties` makes it not one): each fact's own schema reaches
# every value of it, and the walk here went over every value of every fact a second time
# (16 ms a file of 1,600 facts) to repeat the first such fact's message without its id.
FACT_FILE_TOP_SCHEMA = {
    **FACT_FILE_SCHEMA,
    "properties": {"facts": {"type": "array", "properties": {}}},
}

MILESTONES_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["milestones"],
    "properties": {
        "milestones": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "title"],
                "properties": {
                    "id": {"type": ["string", "integer"]},
                    "title": _STR,
                    "seed": _STR,
                    "message": {"type": "integer"},
                    "date": _STR,
                },
            },
        }
    },
}

TARGET_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "transport": {"type": "string", "enum": list(TRANSPORTS)},
        "host": _STR,
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "user": _STR,
        "jump": {"type": ["string", "array"], "items": _STR},
        "python": _STR,
        "identity_file": _STR,
        "env": {
            "type": "object",
            "additionalProperties": {"type": ["string", "integer", "number", "boolean"]},
        },
        "description": _STR,
        "tags": {"type": "array", "items": _STR},
        "connect_timeout": {"type": "number", "exclusiveMinimum": 0},
        "exec": {"type": "array", "items": _STR, "minItems": 1},
        "via": _STR,
        "nodes": _STR,
        "partition": _STR,
        "srun_args": {"type": "array", "items": _STR},
        "vars": {"type": "object"},
        "identity": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "hostname": _STR,
                "machine_id": _STR,
                "gpu_uuids": {"type": "array", "items": _STR, "minItems": 1},
                "facts": {"type": "array", "items": _STR, "minItems": 1},
            },
        },
    },
}

GROUP_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "targets": {"type": "array", "items": _STR},
        "children": {"type": "array", "items": _STR},
        "vars": {"type": "object"},
        "description": _STR,
    },
}

TARGETS_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "targets": {"type": "object", "additionalProperties": TARGET_SCHEMA},
        "groups": {"type": "object", "additionalProperties": GROUP_SCHEMA},
        "inventory": {"type": ["string", "array"], "items": _STR},
    },
}

_FRIENDLY = {"object": "mapping", "array": "list"}
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


# the one type name each of these exact types matches (lint checks every value of every fact)
_EXACT_TYPE = {str: "string", dict: "object", list: "array", type(None): "null", bool: "boolean"}


def _type_ok(value: Any, types: str | list[str]) -> bool:
    """JSON Schema's types: booleans are not numbers; 2.0 is an integer (draft 2020-12)."""
    exact = _EXACT_TYPE.get(type(value))
    if exact is not None:
        return types == exact if isinstance(types, str) else exact in types
    names = [types] if isinstance(types, str) else types
    for name in names:
        if isinstance(value, bool) and name in ("integer", "number"):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            continue  # .nan and .inf pass every comparison check: never a valid number
        if name == "integer" and isinstance(value, float) and value.is_integer():
            return True
        if isinstance(value, _JSON_TYPES[name]):
            return True
    return False


def _json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema's `enum` means it: true is not 1, 1.0 is 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if _is_num(a) and _is_num(b):
        return a == b
    return type(a) is type(b) and a == b


def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# The JSON Schema keywords validate() implements; any other one is refused (UnsupportedKeyword)
# rather than silently ignored, so the published schema can never promise more than lint checks.
KEYWORDS = frozenset(
    {
        *("type", "enum", "pattern", "maxLength", "minimum", "maximum", "exclusiveMinimum"),
        *("properties", "required", "additionalProperties", "minItems", "items"),
    }
)
ANNOTATIONS = frozenset({"$schema", "$id", "title", "description"})
_KNOWN_KEYS = KEYWORDS | ANNOTATIONS


class UnsupportedKeyword(ValueError):
    """A schema uses a JSON Schema keyword factbook's validator does not implement."""


def check_supported(schema: dict[str, Any], where: str = "#") -> None:
    """Raise UnsupportedKeyword for any keyword in `schema` (recursively) validate() lacks."""
    unknown = sorted(set(schema) - KEYWORDS - ANNOTATIONS)
    if unknown:
        raise UnsupportedKeyword(f"{where}: JSON Schema keyword(s) not implemented: {unknown}")
    for name, sub in schema.get("properties", {}).items():
        check_supported(sub, f"{where}/properties/{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            check_supported(schema[key], f"{where}/{key}")


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "list",
        dict: "mapping",
    }.get(type(value), type(value).__name__)


def validate(
    value: Any, schema: dict[str, Any], doc: LocatedDoc, path: PathKey = (), where: str = ""
) -> list[Problem]:
    """Every violation of `schema` by `value`, each at the line of the offending key.

    Most values conform: `_conforms` answers that without building a path, a label or a
    message per value (lint checks every value of every fact; an import's scratch lint,
    thousands); only a value that does not is walked again for its problems."""
    if _conforms(value, schema):
        return []
    return _problems(value, schema, doc, path, where)


def yaml_key(key: object) -> str:
    """A mapping key as the file spells it (`null`, `true`, `1.5`), its head when long."""
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return shown(str(key))


def _problems(
    value: Any, schema: dict[str, Any], doc: LocatedDoc, path: PathKey = (), where: str = ""
) -> list[Problem]:
    problems: list[Problem] = []
    label = where
    pre = f"{where}: " if where else ("top level: " if not path else "")
    if "type" in schema and not _type_ok(value, schema["type"]):
        names = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
        want = " or ".join(_FRIENDLY.get(n, n) for n in names)
        return [doc.problem(path, f"{pre}expected {want}, got {_describe(value)}")]
    if _free_form(schema):
        bad = _non_json(value)
        if bad is not None:
            return [doc.problem((*path, *bad[0]), f"{pre}unsupported value of type {bad[1]}")]
    if not schema.keys() <= _KNOWN_KEYS:
        check_supported(schema)
    if "enum" in schema and not any(_json_equal(value, c) for c in schema["enum"]):
        choices = ", ".join(str(c) for c in schema["enum"])
        problems.append(doc.problem(path, f"{pre}{value!r} is not one of: {choices}"))
    longest = schema.get("maxLength")
    if longest is not None and isinstance(value, str) and len(value) > longest:
        problems.append(doc.problem(path, f"{pre}{len(value)} characters; at most {longest}"))
    elif "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        shown = repr(value) if len(value) <= 80 else repr(value[:80]) + "..."
        problems.append(doc.problem(path, f"{pre}{shown} does not match {schema['pattern']}"))
    if "minimum" in schema and _type_ok(value, "number") and value < schema["minimum"]:
        problems.append(doc.problem(path, f"{pre}must be >= {schema['minimum']}"))
    if "maximum" in schema and _type_ok(value, "number") and value > schema["maximum"]:
        problems.append(doc.problem(path, f"{pre}must be <= {schema['maximum']}"))
    lo = schema.get("exclusiveMinimum")
    if lo is not None and _type_ok(value, "number") and value <= lo:
        problems.append(doc.problem(path, f"{pre}must be > {lo}"))
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                problems.append(doc.problem(path, f"{pre}missing required key '{key}'"))
        extra = schema.get("additionalProperties", True)
        for key, sub in value.items():
            sub_label = f"{where}.{key}" if where else str(key)
            if key in props:
                problems += _problems(sub, props[key], doc, (*path, key), sub_label)
            elif extra is False:
                known = ", ".join(sorted(props))
                said = f"unknown key '{yaml_key(key)}' (known: {known})"
                problems.append(doc.problem((*path, key), said))
            elif isinstance(extra, dict):
                if type(key) is not str:  # a name: `1:`, `~:`, `yes:` are not the text shown
                    said = f"{pre}key {yaml_key(key)} is read as {_describe(key)}, not a name"
                    problems.append(doc.problem((*path, key), f"{said} (quote it)"))
                    continue
                problems += _problems(sub, extra, doc, (*path, key), sub_label)
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            problems.append(doc.problem(path, f"{pre}needs at least {schema['minItems']} item"))
        items = schema.get("items")
        if items is not None:
            for i, item in enumerate(value):
                problems += _problems(item, items, doc, (*path, i), f"{label or 'item'}[{i}]")
    return problems


# schema (by identity) -> (the schema, its compiled `_conforms` check)
_CHECKS: dict[int, tuple[Any, Callable[[Any], bool]]] = {}


# the categories owning each category key, in CATEGORY_KEYS' order (lint's rule "key X is
# only for category Y", asked per key of every fact: made once)
KEY_OWNERS: dict[str, list[str]] = {}
for _category, _keys in CATEGORY_KEYS.items():
    for _key in _keys:
        KEY_OWNERS.setdefault(_key, []).append(_category)


def fact_problem(fact: Any) -> str | None:
    """The first reason the loader would not take `fact` as written, before its knowledge
    base is known: the fact schema (types, the status vocabulary, finite numbers), then a
    key only another category may have. None when it would load. Write-back asks it of
    the facts it edits, so that no edit drops a fact from its knowledge base."""
    if not _conforms(fact, FACT_SCHEMA):
        found = _problems(fact, FACT_SCHEMA, LocatedDoc("", fact))
        return found[0].message if found else "does not match the fact schema"
    if not isinstance(fact, dict):
        return "not a mapping"
    allowed = CATEGORY_KEYS.get(fact.get("category", ""), set())
    for key in fact:
        owners = KEY_OWNERS.get(key, ())
        if owners and key not in allowed:
            return f"key '{key}' is only for category {' or '.join(owners)}"
    return None


def _conforms(value: Any, schema: Any) -> bool:
    """Whether `_problems(value, schema)` finds nothing (and raises nothing): the same tests,
    in a check compiled once per schema. False whenever unsure; the caller then walks."""
    return _checker(schema)(value)


def _checker(schema: Any) -> Callable[[Any], bool]:
    """`schema`'s compiled check, compiled on first use and kept."""
    kept = _CHECKS.get(id(schema))
    if kept is None or kept[0] is not schema:
        if len(_CHECKS) >= 1024:  # schemas are constants; a caller making them anew is bounded
            _CHECKS.clear()
        kept = _CHECKS[id(schema)] = (schema, _compile(schema))
    return kept[1]


def _is_str(value: Any) -> bool:
    """`{"type": "string"}`'s check (a str subclass is left to the walk)."""
    return type(value) is str


_UNBOUNDED: Any = object()


def _never(value: Any) -> bool:
    return False


def _compile(schema: Any) -> Callable[[Any], bool]:
    """`_conforms` for one schema, with the checks of the schemas nested in it: a member is
    checked by calling its own check, not by looking it up by its schema (that lookup was
    a third of checking a fact: an import's scratch lint checks every value of thousands)."""
    if not isinstance(schema, dict) or not schema.keys() <= _KNOWN_KEYS:
        return _never  # the walk reports (or refuses: UnsupportedKeyword) what it finds
    if schema.keys() - ANNOTATIONS == {"type"} and schema["type"] == "string":
        return _is_str
    has_type, types = "type" in schema, schema.get("type")
    free = _free_form(schema)
    has_enum, choices = "enum" in schema, schema.get("enum")
    pattern = re.compile(schema["pattern"]) if "pattern" in schema else None
    longest = schema.get("maxLength")
    minimum = schema.get("minimum", _UNBOUNDED)
    maximum = schema.get("maximum", _UNBOUNDED)
    above = schema.get("exclusiveMinimum")  # null: no bound, as `_problems` reads it
    bounded = minimum is not _UNBOUNDED or maximum is not _UNBOUNDED or above is not None
    props = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    min_items = schema.get("minItems", 0)
    items = schema.get("items")
    # a string, or a mapping or list under a schema without `enum` (exactly those types):
    # the general check below, with what depends only on the schema (does the type allow
    # it) decided once and the tests that cannot apply to it (bounds, a pattern) left out;
    # only a choice of `enum` that is a string equals a string (_json_equal)
    simple = not has_enum
    str_choices = None
    if has_enum and isinstance(choices, list):
        str_choices = frozenset(c for c in choices if type(c) is str)
    fast_str = not has_enum or str_choices is not None
    str_ok = not has_type or _type_ok("", types)
    dict_ok = not has_type or _type_ok({}, types)
    list_ok = not has_type or _type_ok([], types)

    prop_checks = {key: _checker(sub) for key, sub in props.items()}
    extra_check = _checker(extra) if isinstance(extra, dict) else None
    items_check = _checker(items) if items is not None else None

    def members(value: dict[Any, Any]) -> bool:
        """A mapping's required keys, and each member under its property's schema."""
        for key in required:
            if key not in value:
                return False
        for key, sub in value.items():
            check = prop_checks.get(key)
            if check is not None:
                if not check(sub):
                    return False
            elif extra is False or (
                extra_check is not None and (type(key) is not str or not extra_check(sub))
            ):
                return False
        return True

    def elements(value: list[Any]) -> bool:
        """A list's length, and each item under `items`."""
        if len(value) < min_items:
            return False
        return items_check is None or all(map(items_check, value))

    def check(value: Any) -> bool:
        kind = type(value)
        if kind is str and fast_str:  # its type, enum and pattern; nothing below a string
            return (
                str_ok
                and (str_choices is None or value in str_choices)
                and (longest is None or len(value) <= longest)
                and (pattern is None or pattern.search(value) is not None)
            )
        if kind is dict and simple:
            if not dict_ok or (free and not _json_ok(value)):
                return False
            return members(value)
        if kind is list and simple:
            if not list_ok or (free and not _json_ok(value)):
                return False
            return elements(value)
        if has_type and not _type_ok(value, types):
            return False
        if free and not _json_ok(value):
            return False
        if has_enum and not any(_json_equal(value, c) for c in choices):
            return False
        if longest is not None and isinstance(value, str) and len(value) > longest:
            return False
        if pattern is not None and isinstance(value, str) and not pattern.search(value):
            return False
        if bounded and _type_ok(value, "number"):
            if minimum is not _UNBOUNDED and value < minimum:
                return False
            if maximum is not _UNBOUNDED and value > maximum:
                return False
            if above is not None and value <= above:
                return False
        if isinstance(value, dict) and not members(value):
            return False
        return not isinstance(value, list) or elements(value)

    return check


for _published in (FACT_FILE_SCHEMA, MILESTONES_SCHEMA, TARGETS_SCHEMA):
    check_supported(_published)


_JSON_SCALARS = (str, int, float, bool, type(None))


def _free_form(schema: dict[str, Any]) -> bool:
    """A schema that accepts any content below it (a fact's value, a check's args)."""
    return (
        "properties" not in schema
        and "additionalProperties" not in schema
        and ("items" not in schema)
    )


_PLAIN_JSON = frozenset({str, int, bool, type(None)})


def _json_ok(value: Any) -> bool:
    """Whether `_non_json(value)` finds nothing: its walk without the path it would report
    (a tuple per value, most of its cost; lint asks it of every fact's free-form values).
    A type other than the plain ones (a subclass) gets `_non_json`'s own answer."""
    kind = type(value)
    if kind in _PLAIN_JSON:
        return True
    if kind is float:
        return math.isfinite(value)
    if kind is list:
        return all(map(_json_ok, value))
    if kind is dict and all(type(key) is str for key in value):
        return all(map(_json_ok, value.values()))
    return _non_json(value) is None


def _non_json(value: Any, path: PathKey = ()) -> tuple[PathKey, str] | None:
    """The first value inside `value` that JSON cannot hold (a date, bytes, NaN), if any.

    Results, the handbook and the agent exchange values as JSON; such a value would break
    them far from its line, so it is refused here, where the line is known.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return path, str(value)
    if isinstance(value, _JSON_SCALARS):
        return None
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _non_json(item, (*path, i))
            if found:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return (*path, key), f"{type(key).__name__} (as a key; quote it)"
            found = _non_json(item, (*path, key))
            if found:
                return found
        return None
    return path, f"{type(value).__name__} (quote it)"


INVALID: Any = object()


def conform(value: Any, schema: dict[str, Any]) -> Any:
    """`value` with everything `validate` would report removed; INVALID if nothing is left.

    The loader builds facts, targets and milestones only from conformed values, so code
    downstream (status, handbook, verify) may trust every type, even when lint reported
    problems and the command carries on with a warning.
    """
    if "type" in schema and not _type_ok(value, schema["type"]):
        return INVALID
    if _free_form(schema) and not _json_ok(value):
        return INVALID
    if "enum" in schema and not any(_json_equal(value, c) for c in schema["enum"]):
        return INVALID
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        return INVALID
    if _type_ok(value, "number"):
        lo = schema.get("exclusiveMinimum")
        if (
            ("minimum" in schema and value < schema["minimum"])
            or ("maximum" in schema and value > schema["maximum"])
            or (lo is not None and value <= lo)
        ):
            return INVALID
    if isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        out = {}
        for key, sub in value.items():
            sub_schema = props.get(key, extra if isinstance(extra, dict) else None)
            if sub_schema is None:
                if key in props or extra is not False:
                    out[key] = sub
                continue
            cleaned = conform(sub, sub_schema)
            if cleaned is not INVALID:
                out[key] = cleaned
        if any(key not in out for key in schema.get("required", [])):
            return INVALID
        return out
    if isinstance(value, list):
        items = schema.get("items")
        out_list = [conform(item, items) for item in value] if items is not None else list(value)
        out_list = [item for item in out_list if item is not INVALID]
        if len(out_list) < schema.get("minItems", 0):
            return INVALID
        return out_list
    return value
