"""Ansible inventories as factbook targets: INI, YAML, `ansible-inventory --list` JSON, and
directories of them with group_vars/ and host_vars/.

Read as ansible-core 2.16+ reads them (tests compare with `ansible-inventory --list` and with
the ssh command line `ansible` builds):

- a file is tried as YAML when its suffix is none, .yml, .yaml or .json, then as INI;
  a folder is every file in it (recursively, sorted; hidden files, group_vars/, host_vars/
  and Ansible's ignored suffixes left out); only the top folder's group_vars/ apply;
  each real folder is walked once (a link back up adds nothing), at most 10,000 files, and
  in a knowledge base no folder leading out of it is listed;
- every host is in `all`; hosts in no other group are in `ungrouped`; host patterns as
  fleet/hostpattern.py reads them (ranges anywhere, `:port`);
- INI: `[g]`, `[g:vars]`, `[g:children]`; a group named only in `:vars` or as a child must
  be declared by a `[g]` or `[g:children]` section somewhere; values through
  `ast.literal_eval`; YAML: `hosts`, `vars` and `children` must be mappings, other keys and
  groups that are not mappings are skipped (Ansible warns and skips them);
- `ansible_group_priority` sets the group's priority, not a variable;
- group_vars/NAME and host_vars/NAME: the first of NAME, NAME.yml, NAME.yaml, NAME.json, or
  every file of a folder NAME (sorted, recursively); they land in a layer above the
  inventory's own group variables (fleet/inventory.py merges the layers as Ansible does).

Connection variables become target fields once all vars are merged (fleet/connection.py).
An inventory is read, never run: inventory scripts and plugin configurations are refused.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from factbook.errors import InputError
from factbook.knowledge.fleet import ansibleyaml
from factbook.knowledge.fleet.hostpattern import PatternError, parse_host
from factbook.knowledge.fleet.inventory import ALL, Group, Inventory
from factbook.knowledge.kbfiles import outside_problem
from factbook.knowledge.limits import INVENTORY_MAX_BYTES, split_words
from factbook.knowledge.model import Target
from factbook.knowledge.names import name_problem
from factbook.knowledge.yamlsrc import read_text_bounded, refusal

UNGROUPED = "ungrouped"
MAX_INVENTORY_BYTES = INVENTORY_MAX_BYTES
# Host names one read may expand to (all patterns together): 60 ranges of 100k hosts is a
# typo or an attack, and is refused before any name is made.
MAX_INVENTORY_HOSTS = 200_000
# One walk of an inventory folder (or of a group_vars/NAME folder): files read, names listed.
MAX_INVENTORY_FILES = 10_000
MAX_FOLDER_NAMES = 100_000
_YAML_SUFFIXES = ("", ".yml", ".yaml", ".json")
_IGNORED_SUFFIXES = (".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst")
_IGNORED_SUFFIXES += (".orig", ".cfg", ".retry")
_SECTION = re.compile(r"\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?")
_GROUP_LINE = re.compile(r"([^:\]\s]+)\s*(?:#.*)?")
_MAX_INT_BITS = 4000 * 3  # an int whose text passes Python's 4300-digit limit stays text


@dataclass
class _Group:
    hosts: dict[str, None] = field(default_factory=dict)
    children: dict[str, None] = field(default_factory=dict)
    vars: dict[str, Any] = field(default_factory=dict)
    priority: int = 1


class _Builder:
    """An inventory being read: membership in dicts, so adding a host is O(1)."""

    def __init__(self, where: str):
        self.where = where
        self.hosts: dict[str, dict[str, Any]] = {}
        self.groups: dict[str, _Group] = {ALL: _Group(), UNGROUPED: _Group()}
        self.expanded = 0

    def group(self, name: Any, at: str) -> _Group:
        if not isinstance(name, str):
            raise InputError(f"{at}: group name {name!r} is not a string")
        bad = name_problem("inventory name", name)
        if bad:
            raise InputError(f"{at}: group: {bad}")
        if name not in self.groups:
            self.groups[name] = _Group()
        return self.groups[name]

    def set_group_var(self, group: str, key: Any, value: Any, at: str) -> None:
        found = self.group(group, at)
        if key == "ansible_group_priority":
            try:
                found.priority = int(value)
            except (TypeError, ValueError):
                raise InputError(
                    f"{at}: ansible_group_priority {value!r} is not a number"
                ) from None
            return
        found.vars[key] = value

    def hosts_of(self, spec: Any, at: str) -> tuple[list[str], int | None]:
        try:
            names, port = parse_host(spec)  # one pattern: at most MAX_RANGE_HOSTS names
            self.expanded += len(names)
            if self.expanded > MAX_INVENTORY_HOSTS:
                raise PatternError(f"more than {MAX_INVENTORY_HOSTS} hosts in one inventory")
        except PatternError as exc:
            raise InputError(f"{at}: {exc}") from None
        for host in names:
            bad = name_problem("inventory name", host)
            if bad:
                raise InputError(f"{at}: host: {bad}")
        return names, port

    def add_host(self, name: str, group: str | None, port: int | None, at: str) -> None:
        if name not in self.hosts:
            self.hosts[name] = {"ansible_port": port} if port else {}
        if group is not None:
            self.group(group, at).hosts[name] = None

    def set_host_var(self, name: str, key: Any, value: Any) -> None:
        self.hosts[name][key] = value

    def inventory(self) -> Inventory:
        """Ansible's reconciliation: a host in some group leaves `ungrouped`, one in none
        joins it; a group without a parent is a child of `all`."""
        grouped = {
            h for name, g in self.groups.items() if name not in (ALL, UNGROUPED) for h in g.hosts
        }
        ungrouped = self.groups[UNGROUPED].hosts
        for name in self.hosts:
            if name in grouped:
                ungrouped.pop(name, None)
            else:
                ungrouped[name] = None
        children = {c for g in self.groups.values() for c in g.children}
        everything = self.groups[ALL]
        for name in self.groups:
            if name != ALL and name not in children:
                everything.children[name] = None
        everything.hosts.clear()
        inv = Inventory()
        inv.targets = {name: Target(name=name, vars=v) for name, v in self.hosts.items()}
        for name, g in self.groups.items():
            inv.groups[name] = Group(
                name=name,
                targets=list(g.hosts),
                children=list(g.children),
                vars=g.vars,
                priority=g.priority,
            )
        return inv


def read_ansible(path: Path) -> Inventory:
    """An inventory file or directory -> an Inventory (targets with their own vars, groups with
    theirs); InputError naming the file (and line) when it cannot be read."""
    builder = _Builder(str(path))
    if path.is_dir():
        for item in _inventory_files(path):
            _read_file(builder, item)
        base = path
    else:
        _read_file(builder, path)
        base = path.parent
    inventory = builder.inventory()
    _apply_var_dirs(inventory, base)
    return inventory


def _inventory_files(folder: Path) -> list[Path]:
    """The files of an inventory folder, as Ansible walks it (sorted, recursively)."""

    def skip(item: Path) -> bool:
        name = item.name
        hidden = name.startswith(".") or name in ("group_vars", "host_vars", "vars_plugins")
        return hidden or name.endswith(_IGNORED_SUFFIXES)

    return _walk(folder, skip=skip, descend=Path.is_dir, take=Path.is_file)


def _walk(
    top: Path,
    *,
    skip: Callable[[Path], bool],
    descend: Callable[[Path], bool],
    take: Callable[[Path], bool],
) -> list[Path]:
    """The files under `top` in Ansible's order (each folder sorted, its subfolders walked in
    place), without recursion. Each real folder is listed once: a link back to one already
    walked (`a -> .`, `up -> ..`) adds nothing, where Ansible walks it again until the path
    no longer opens and re-reads the same files (the same hosts; with two such links, 2**40
    walks). A folder reached a second time through another link is read where first reached."""
    seen: set[tuple[int, int]] = set()
    names = [0]  # names listed so far, over the whole walk
    out: list[Path] = []
    stack = [iter(_listing(top, seen, names, top))]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
        elif skip(item):
            continue
        elif descend(item):
            stack.append(iter(_listing(item, seen, names, top)))
        elif take(item):
            out.append(item)
            if len(out) > MAX_INVENTORY_FILES:
                raise InputError(f"{top}: more than {MAX_INVENTORY_FILES} files; not read")
    return out


def _listing(folder: Path, seen: set[tuple[int, int]], names: list[int], top: Path) -> list[Path]:
    """A folder's entries, sorted; none for one already listed. In a knowledge base
    (kbfiles.confined) a folder that leads out of it is refused before it is listed: a link
    to `/` would walk the whole machine."""
    outside = outside_problem(folder, str(folder))
    if outside is not None:
        raise InputError(f"{outside.file}: {outside.message}")
    try:
        info = folder.stat()
        if (info.st_dev, info.st_ino) in seen:
            return []
        seen.add((info.st_dev, info.st_ino))
        found = sorted(os.listdir(folder))
    except OSError as exc:
        raise InputError(f"{folder}: cannot list folder: {exc.strerror or exc}") from None
    names[0] += len(found)
    if names[0] > MAX_FOLDER_NAMES:
        raise InputError(f"{top}: more than {MAX_FOLDER_NAMES} names in its folders; not read")
    return [folder / name for name in found]


def _read(path: Path) -> str:
    """A file's text within the size bound (never a FIFO, never a folder)."""
    text, problem = read_text_bounded(path, str(path), limit=MAX_INVENTORY_BYTES)
    if problem is not None:
        raise InputError(f"{problem.file}:{problem.line}: {problem.message}")
    return text


def _safe_yaml(path: Path, text: str) -> Any:
    """YAML as Ansible reads it (fleet/ansibleyaml.py: aliases, merge keys, `!vault`,
    `!unsafe`) within the loader's bounds (depth, size, what aliases expand to), or
    InputError at file:line."""
    problem = refusal(text, str(path), aliases=True)
    if problem is not None:
        raise InputError(f"{problem.file}:{problem.line}: {problem.message}")
    try:
        return ansibleyaml.load(text)
    except ansibleyaml.AliasBomb as exc:
        raise InputError(f"{path}: {exc}; not read") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(exc, "problem", None) or "not valid YAML"
        raise InputError(f"{_where(path, line)}: not valid YAML: {reason}") from None


def _json_or_yaml(path: Path, text: str) -> Any:
    """JSON parsed as JSON (fast for a large `--list`), anything else as YAML."""
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except RecursionError:
            raise InputError(f"{path}: not valid JSON: nested too deep") from None
        except ValueError:
            pass  # JSON with YAML in it: Ansible's loader tries YAML next, so do we
    return _safe_yaml(path, text)


def _read_file(builder: _Builder, path: Path) -> None:
    if path.suffix == ".toml":
        raise InputError(f"{path}: TOML inventories are not read; convert it to YAML or INI")
    _refuse_program(path)
    text = _read(path)
    yaml_error: InputError | None = None
    if path.suffix in _YAML_SUFFIXES:
        try:
            data = _json_or_yaml(path, text)
        except InputError as exc:
            data, yaml_error = None, exc
        if isinstance(data, dict) and data:
            if "_meta" in data and path.suffix == ".json":
                _from_list_json(builder, path, data)
            else:
                _from_yaml(builder, path, data)
            return
    try:  # what is not a YAML inventory is tried as INI, as Ansible's plugins are in turn
        _refuse_byte_order_mark(path)
        _from_ini(builder, path, text)
    except InputError:
        if yaml_error is not None and path.suffix:  # a .yml that is neither: say why as YAML
            raise yaml_error from None
        raise


_PROGRAM_MAGIC = (b"#!", b"\x7fELF")  # a script, a Linux binary: what execve runs


def _refuse_program(path: Path) -> None:
    """Ansible's script plugin runs an executable inventory file (and takes its stdout as
    JSON); factbook never runs one and says so. A binary was refused as `not UTF-8 (byte
    0xd0)`, which did not tell the reader that Ansible would have run it. An executable text
    file without `#!` is read as INI: execve refuses it, and Ansible then reads it as INI."""
    if outside_problem(path, str(path)) is not None:
        return  # _read refuses it, naming where it leads and reading nothing of it
    if path.is_file() and path.stat().st_mode & 0o111:
        with open(path, "rb") as handle:
            head = handle.read(4)
        if head.startswith(_PROGRAM_MAGIC):
            raise InputError(
                f"{path}: an executable inventory script or program, which Ansible would run; "
                "factbook never runs one: save its `ansible-inventory --list` output as JSON "
                "and read that"
            )


def _refuse_byte_order_mark(path: Path) -> None:
    """Ansible's INI plugin reads a leading byte order mark as part of the first line: a
    first section `[g]` becomes a host range it refuses (no host of the file is read), a
    first host a name with U+FEFF in it. factbook refuses the file, saying why, rather than
    read hosts and groups Ansible does not."""
    with open(path, "rb") as handle:
        if handle.read(3) == b"\xef\xbb\xbf":
            raise InputError(
                f"{path}:1: starts with a UTF-8 byte order mark, which Ansible's INI inventory "
                "plugin reads as part of the first section or host name; remove it"
            )


def _where(path: Path, line: int | None) -> str:
    return f"{path}:{line}" if line else str(path)


# --- INI ---------------------------------------------------------------------------------


def ini_value(text: str) -> Any:
    """An INI value as Ansible reads it: a Python literal when one parses, else the text
    (tuples and sets become lists; bytes text; `...` and complex numbers their text).

    A host or path name (`node7.example.com`, `/usr/bin/python3`, `10.0.0.7`) is no
    literal, and is known to be none without parsing it: Python reads it as a name,
    attribute, operation or bad syntax, never a literal (an inventory's every host has
    such values: 200,000 hosts, 200,000 parses)."""
    if _NO_LITERAL.fullmatch(text) and text not in _NAMED_LITERALS:
        return text
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return text
    return _plain(value, text)


# ASCII names joined by `.`, `-`, `/`, `:` or `@` (no quote, bracket, space, digit first, or
# `#`), or three or more dotted numbers (an IPv4 address): never a Python literal
_NO_LITERAL = re.compile(r"[A-Za-z_/][A-Za-z0-9_./:@-]*|[0-9]+(?:\.[0-9]+){2,}")
_NAMED_LITERALS = frozenset({"True", "False", "None"})


def _plain(value: Any, text: str) -> Any:
    if isinstance(value, (list, tuple, set)):
        return [_plain(v, text) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v, text) for k, v in value.items()}
    if value is ...:
        return "..."
    if isinstance(value, complex):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value.bit_length() > _MAX_INT_BITS
    ):
        return text
    return value


def _from_ini(builder: _Builder, path: Path, text: str) -> None:
    pending: dict[str, dict[str, Any]] = {}  # groups named before their own section
    group, state = UNGROUPED, "hosts"
    for number, raw in enumerate(text.splitlines(), 1):
        at = f"{path}:{number}"
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        section = _SECTION.fullmatch(line)
        if section:
            group, state = section.group(1), section.group(2) or "hosts"
            if state not in ("hosts", "children", "vars"):
                raise InputError(f"{at}: section [{line[1:].split(']')[0]}] has unknown type")
            if group not in builder.groups:
                if state == "vars" and group not in pending:
                    pending[group] = {"line": number, "state": state, "parents": []}
                builder.group(group, at)
            if group in pending and state != "vars":
                _declared(builder, group, pending, at)
            continue
        if line.startswith("[") and line.endswith("]"):
            raise InputError(f"{at}: invalid section {line!r} (no spaces in a section name)")
        if state == "hosts":
            _ini_hosts(builder, group, line, at)
        elif state == "vars":
            key, sep, value = line.partition("=")
            if not sep:
                raise InputError(f"{at}: expected key=value, got {line!r}")
            builder.set_group_var(group, key.strip(), ini_value(value.strip()), at)
        else:
            found = _GROUP_LINE.fullmatch(line)
            if not found:
                raise InputError(f"{at}: expected a group name, got {line!r}")
            child = found.group(1)
            bad = name_problem("inventory name", child)
            if bad:
                raise InputError(f"{at}: child group: {bad}")
            if child in builder.groups:
                builder.groups[group].children[child] = None
            elif child in pending:
                pending[child]["parents"].append(group)
            else:
                pending[child] = {"line": number, "state": "children", "parents": [group]}
    for name, decl in pending.items():
        at = f"{path}:{decl['line']}"
        if decl["state"] == "vars":
            raise InputError(f"{at}: section [{name}:vars] names a group declared nowhere")
        raise InputError(
            f"{at}: section [{decl['parents'][-1]}:children] names undefined group '{name}'"
        )


def _declared(builder: _Builder, group: str, pending: dict[str, dict[str, Any]], at: str) -> None:
    """A pending group got its own section: link the parents that named it first."""
    decl = pending.pop(group)
    for parent in decl["parents"]:
        builder.group(parent, at).children[group] = None
        if parent in pending and pending[parent]["state"] == "children":
            _declared(builder, parent, pending, at)


def _ini_hosts(builder: _Builder, group: str, line: str, at: str) -> None:
    try:
        words = split_words(line, comments=True)
    except ValueError as exc:
        raise InputError(f"{at}: cannot split host line: {exc}") from None
    if not words:
        return
    names, port = builder.hosts_of(words[0], at)
    variables: dict[str, Any] = {}
    for word in words[1:]:
        key, sep, value = word.partition("=")
        if not sep:
            raise InputError(f"{at}: expected key=value host variable, got {word[:80]!r}")
        variables[key] = ini_value(value)
    for name in names:
        builder.add_host(name, group, port, at)
        for key, value in variables.items():
            builder.set_host_var(name, key, value)


# --- YAML --------------------------------------------------------------------------------


def _from_yaml(builder: _Builder, path: Path, data: dict[Any, Any]) -> None:
    if data.get("plugin"):
        raise InputError(
            f"{path}: an inventory plugin configuration ('plugin: {data['plugin']}'); factbook "
            "reads inventories, it runs no plugin: save `ansible-inventory --list` and use that"
        )
    for name, body in data.items():
        _yaml_group(builder, path, name, body, depth=0)


def _yaml_group(builder: _Builder, path: Path, name: Any, body: Any, depth: int) -> str | None:
    at = f"{path}: group {str(name)[:80]!r}"
    if depth > 64:
        raise InputError(f"{at}: children nested more than 64 deep")
    if not isinstance(body, (dict, type(None))):
        return None  # Ansible skips (with a warning) a group that is not a mapping
    builder.group(name, str(path))
    if body is None:
        return name
    sections = {}
    for key in ("vars", "children", "hosts"):
        value = body.get(key)
        if isinstance(value, str):
            value = {value: None}
        if key in body and not isinstance(value, (dict, type(None))):
            kind = type(value).__name__
            raise InputError(f"{at}: '{key}' must be a mapping, not a {kind}")
        sections[key] = value
    for key in body:  # in the file's order, as Ansible walks them
        value = sections.get(key)
        if not value:
            continue
        if key == "vars":
            for var, val in value.items():
                builder.set_group_var(name, var, val, at)
        elif key == "children":
            for child, child_body in value.items():
                added = _yaml_group(builder, path, child, child_body, depth + 1)
                if added is not None:
                    builder.groups[name].children[added] = None
        elif key == "hosts":
            for spec, host_vars in value.items():
                _yaml_host(builder, name, spec, host_vars, at)
    return name


def _yaml_host(builder: _Builder, group: str, spec: Any, host_vars: Any, at: str) -> None:
    names, port = builder.hosts_of(spec, at)
    if not isinstance(host_vars, (dict, type(None))):
        kind = type(host_vars).__name__
        raise InputError(
            f"{at}: host {str(spec)[:80]!r}: variables must be a mapping, not a {kind}"
        )
    for host in names:
        builder.add_host(host, group, port, at)
        for key, value in (host_vars or {}).items():
            builder.set_host_var(host, key, value)


# --- `ansible-inventory --list` JSON -----------------------------------------------------


def _from_list_json(builder: _Builder, path: Path, data: dict[str, Any]) -> None:
    """The JSON of `ansible-inventory --list` (hostvars under `_meta`); group vars there are
    already merged into hostvars, so they are read as the hosts' own."""
    where = str(path)
    meta = data.get("_meta")
    hostvars = meta.get("hostvars") if isinstance(meta, dict) else None
    if not isinstance(hostvars, (dict, type(None))):
        raise InputError(f"{where}: _meta.hostvars must be an object")
    for name, body in data.items():
        if name == "_meta":
            continue
        if isinstance(body, list):  # the short form: a group as a list of hosts
            body = {"hosts": body}
        if not isinstance(body, dict):
            raise InputError(f"{where}: group {str(name)[:80]!r}: expected an object")
        group = builder.group(name, where)
        for key in ("hosts", "children"):
            if not isinstance(body.get(key) or [], list):
                raise InputError(f"{where}: group {name!r}: '{key}' must be a list")
        variables = body.get("vars") or {}
        if not isinstance(variables, dict):
            raise InputError(f"{where}: group {name!r}: 'vars' must be an object")
        for key, value in variables.items():
            builder.set_group_var(name, key, value, where)
        for child in body.get("children") or []:
            builder.group(child, where)
            group.children[child] = None
        for host in body.get("hosts") or []:
            names, _ = builder.hosts_of(host, where)
            builder.add_host(names[0], name, None, where)
    for host, variables in (hostvars or {}).items():
        names, _ = builder.hosts_of(host, where)
        if not isinstance(variables, (dict, type(None))):
            raise InputError(f"{where}: hostvars of {str(host)[:80]!r} must be an object")
        builder.add_host(names[0], None, None, where)
        for key, value in (variables or {}).items():
            builder.set_host_var(names[0], key, value)


# --- group_vars/ and host_vars/ ----------------------------------------------------------


def _apply_var_dirs(inv: Inventory, base: Path) -> None:
    """group_vars/NAME and host_vars/NAME beside the inventory, for the groups and hosts it
    has: group files into the group's file layer, host files over the host's own vars."""

    def to_group(name: str, found: dict[str, Any]) -> None:
        inv.groups[name].file_vars.update(found)

    def to_host(name: str, found: dict[str, Any]) -> None:
        inv.targets[name].vars.update(found)

    apply: tuple[tuple[str, list[str], Callable[[str, dict[str, Any]], None]], ...] = (
        ("group_vars", list(inv.groups), to_group),
        ("host_vars", list(inv.targets), to_host),
    )
    for folder, names, add in apply:
        root = base / folder
        if not root.is_dir():
            continue
        for name in names:
            for path in _var_files(root, name):
                add(name, _load_vars(path))


def _var_files(root: Path, name: str) -> list[Path]:
    """The first of NAME, NAME.yml, NAME.yaml, NAME.json; a folder: its files, recursively."""
    for suffix in _YAML_SUFFIXES:
        path = root / (name + suffix)
        if path.is_dir():
            return _var_folder(path)
        if path.is_file():
            return [path]
    return []


def _var_folder(folder: Path) -> list[Path]:
    """A group_vars/NAME or host_vars/NAME folder's YAML and JSON files, as Ansible walks it
    (sorted; subfolders without a suffix recursively; each real folder once)."""

    def skip(item: Path) -> bool:
        return item.name.startswith(".") or item.name.endswith("~")

    def descend(item: Path) -> bool:
        return item.is_dir() and not item.suffix

    def take(item: Path) -> bool:
        return item.is_file() and item.suffix in _YAML_SUFFIXES

    return _walk(folder, skip=skip, descend=descend, take=take)


def _load_vars(path: Path) -> dict[str, Any]:
    data = _json_or_yaml(path, _read(path))
    if not data:
        return {}
    if not isinstance(data, dict):
        raise InputError(f"{path}: variables must be a mapping, not a {type(data).__name__}")
    return data
