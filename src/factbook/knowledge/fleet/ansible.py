"""Ansible inventories as factbook targets: INI, YAML, `ansible-inventory --list` JSON, and
directories of them with group_vars/ and host_vars/.

Read as ansible-core reads them (tests cross-check against `ansible-inventory --list`):
every host is in `all`, hosts in no group are in `ungrouped`, `node-[01:64]` and `[a:f]`
ranges expand, INI values go through `ast.literal_eval`, group_vars/host_vars next to a file
or inside a directory apply by group or host name (`NAME`, `NAME.yml|.yaml|.json`, or a folder
of such files). Connection variables become target fields once all vars are merged
(fleet/connection.py): ansible_host, ansible_port, ansible_user, ansible_ssh_private_key_file,
ansible_python_interpreter, ansible_connection=local, and `-J`/`ProxyJump` in
ansible_ssh_common_args or ansible_ssh_extra_args. Every variable stays in `target.vars`.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import string
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from factbook.errors import InputError
from factbook.knowledge.fleet.inventory import ALL, Group, Inventory
from factbook.knowledge.model import Target
from factbook.knowledge.names import name_problem
from factbook.knowledge.yamlsrc import read_text_bounded, refusal

UNGROUPED = "ungrouped"
_RANGE = re.compile(r"\[([^\]:]+):([^\]:]+)(?::(\d+))?\]")
_VAR_SUFFIXES = ("", ".yml", ".yaml", ".json")
_SKIP_IN_DIR = (".ini.bak", ".retry", ".orig", ".pyc", ".pyo", "~", ".md", ".txt", ".cfg")
MAX_INVENTORY_BYTES = 64 << 20  # `ansible-inventory --list` of ~100,000 hosts


def _read(path: Path) -> str:
    """A file's text within the size bound (never a FIFO, never a folder)."""
    text, problem = read_text_bounded(path, str(path), limit=MAX_INVENTORY_BYTES)
    if problem is not None:
        raise InputError(f"{problem.file}:{problem.line}: {problem.message}")
    return text


def _safe_yaml(path: Path, text: str) -> Any:
    """YAML within the loader's bounds (no aliases, depth, size), or InputError at file:line."""
    problem = refusal(text, str(path))
    if problem is not None:
        raise InputError(f"{problem.file}:{problem.line}: {problem.message}")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise InputError(f"{_where(path, line)}: not valid YAML: {exc}") from None


def read_ansible(path: Path) -> Inventory:
    """An inventory file or directory -> an Inventory (targets with their own vars, groups with
    theirs); InputError naming the file (and line, for INI) when it cannot be read."""
    if path.is_dir():
        inventory = Inventory()
        for item in sorted(path.iterdir()):
            if item.name in ("group_vars", "host_vars") or item.name.startswith("."):
                continue
            if item.is_file() and not item.name.endswith(_SKIP_IN_DIR):
                inventory.add(_read_file(item))
        _apply_var_dirs(inventory, path)
        return _finish(inventory)
    inventory = _read_file(path)
    _apply_var_dirs(inventory, path.parent)
    return _finish(inventory)


def _read_file(path: Path) -> Inventory:
    text = _read(path)
    stripped = text.lstrip()
    if path.suffix == ".json" or stripped.startswith("{"):
        return _from_list_json(path, text)
    if path.suffix in (".yml", ".yaml") or _looks_yaml(text):
        return _from_yaml(path, text)
    return _from_ini(path, text)


def _looks_yaml(text: str) -> bool:
    if refusal(text, "") is not None:
        return False
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    return isinstance(data, dict) and all(
        isinstance(v, dict) and set(v) <= {"hosts", "vars", "children"} for v in data.values()
    )


MAX_RANGE_HOSTS = 100_000  # one pattern's expansion; `n[1:99999999]` is a typo, not a fleet


def expand_range(pattern: str) -> list[str]:
    """`node-[01:03]` -> node-01, node-02, node-03; `[a:c]` letters; `[0:10:5]` a stride."""
    total = 1
    for found in _RANGE.finditer(pattern):
        total *= _range_size(found)
        if total > MAX_RANGE_HOSTS:
            raise ValueError(f"{pattern!r} expands to more than {MAX_RANGE_HOSTS} hosts")
    return _expand(pattern)


def _range_size(match: re.Match[str]) -> int:
    start, end, stride = match.group(1), match.group(2), max(1, int(match.group(3) or 1))
    if start.isdigit() and end.isdigit():
        return max(0, (int(end) - int(start)) // stride + 1)
    return 52  # letters: at most a-zA-Z


def _expand(pattern: str) -> list[str]:
    match = _RANGE.search(pattern)
    if not match:
        return [pattern]
    start, end, stride = match.group(1), match.group(2), max(1, int(match.group(3) or 1))
    head, tail = pattern[: match.start()], pattern[match.end() :]
    if start.isdigit() and end.isdigit():
        width = len(start) if start.startswith("0") else 0
        values = [str(i).zfill(width) for i in range(int(start), int(end) + 1, stride)]
    elif len(start) == 1 and len(end) == 1 and start in string.ascii_letters:
        letters = string.ascii_letters
        values = list(letters[letters.index(start) : letters.index(end) + 1 : stride])
    else:
        raise ValueError(f"bad range [{start}:{end}] in {pattern!r}")
    return [name for v in values for name in _expand(head + v + tail)]


def _host(path: Path, line: int | None, spec: str) -> tuple[list[str], int | None]:
    """`name[:port]` with ranges -> (names, port)."""
    name, port = spec, None
    if spec.count(":") == 1 and not spec.endswith("]"):
        name, _, text = spec.partition(":")
        if not text.isdigit():
            raise InputError(f"{_where(path, line)}: bad port in host {spec!r}")
        port = int(text)
    try:
        names = expand_range(name)
    except ValueError as exc:
        raise InputError(f"{_where(path, line)}: {exc}") from None
    for host in names:
        bad = name_problem("target name", host)
        if bad:
            raise InputError(f"{_where(path, line)}: host: {bad}")
    return names, port


def _where(path: Path, line: int | None) -> str:
    return f"{path}:{line}" if line else str(path)


def _value(text: str) -> Any:
    """INI values as Ansible reads them: a Python literal when one parses, else the text."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
    if value is ... or isinstance(value, (complex, bytes)):
        return text
    return list(value) if isinstance(value, (tuple, set)) else value


def _add_host(
    inv: Inventory, name: str, port: int | None, variables: dict[str, Any], group: str | None
) -> None:
    target = inv.targets.get(name) or Target(name=name)
    merged = {**target.vars, **variables}
    if port is not None:
        merged.setdefault("ansible_port", port)
    inv.targets[name] = replace(target, vars=merged)
    if group is not None:
        members = _group(inv, group).targets
        if name not in members:
            members.append(name)


def _group(inv: Inventory, name: str) -> Group:
    if name not in inv.groups:
        inv.groups[name] = Group(name=name)
    return inv.groups[name]


def _from_ini(path: Path, text: str) -> Inventory:
    inv = Inventory()
    _group(inv, ALL)
    section, kind = UNGROUPED, "hosts"
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise InputError(f"{path}:{number}: bad section header {line!r}")
            section, _, kind = line[1:-1].partition(":")
            kind = kind or "hosts"
            if kind not in ("hosts", "vars", "children"):
                raise InputError(f"{path}:{number}: unknown section kind ':{kind}'")
            bad = name_problem("target name", section)
            if bad:
                raise InputError(f"{path}:{number}: group: {bad}")
            _group(inv, section)
            continue
        if kind == "vars":
            key, sep, value = line.partition("=")
            if not sep:
                raise InputError(f"{path}:{number}: expected key=value, got {line!r}")
            _group(inv, section).vars[key.strip()] = _value(value.strip())
        elif kind == "children":
            child = line.split()[0]
            _group(inv, child)
            if child not in inv.groups[section].children:
                inv.groups[section].children.append(child)
        else:
            try:
                words = shlex.split(line, comments=True)
            except ValueError as exc:
                raise InputError(f"{path}:{number}: {exc}") from None
            names, port = _host(path, number, words[0])
            variables = {}
            for word in words[1:]:
                key, sep, value = word.partition("=")
                if not sep:
                    raise InputError(f"{path}:{number}: expected key=value, got {word!r}")
                variables[key] = _value(value)
            for name in names:
                _add_host(inv, name, port, variables, section)
    return inv


def _from_yaml(path: Path, text: str) -> Inventory:
    data = _safe_yaml(path, text)
    if data is None:
        return Inventory()
    if not isinstance(data, dict):
        raise InputError(f"{path}: an inventory is a mapping of groups")
    inv = Inventory()
    _group(inv, ALL)
    for name, body in data.items():
        _yaml_group(inv, path, str(name), body)
    return inv


def _yaml_group(inv: Inventory, path: Path, name: str, body: Any) -> None:
    bad = name_problem("target name", name)
    if bad:
        raise InputError(f"{path}: group: {bad}")
    group = _group(inv, name)
    if body is None:
        return
    if not isinstance(body, dict):
        raise InputError(f"{path}: group {name!r}: expected hosts/vars/children")
    unknown = set(body) - {"hosts", "vars", "children"}
    if unknown:
        raise InputError(f"{path}: group {name!r}: unknown key {sorted(unknown)[0]!r}")
    group.vars.update(body.get("vars") or {})
    for spec, host_vars in (body.get("hosts") or {}).items():
        names, port = _host(path, None, str(spec))
        for host in names:
            _add_host(inv, host, port, dict(host_vars or {}), name)
    for child, child_body in (body.get("children") or {}).items():
        if str(child) not in group.children:
            group.children.append(str(child))
        _yaml_group(inv, path, str(child), child_body)


def _from_list_json(path: Path, text: str) -> Inventory:
    """The JSON of `ansible-inventory --list` (hostvars under `_meta`)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected the JSON object of ansible-inventory --list")
    inv = Inventory()
    hostvars = (data.get("_meta") or {}).get("hostvars") or {}
    for name, body in data.items():
        if name == "_meta":
            continue
        if isinstance(body, list):  # the short form: a group as a list of hosts
            body = {"hosts": body}
        if not isinstance(body, dict):
            raise InputError(f"{path}: group {name!r}: expected an object")
        bad = name_problem("target name", name)
        if bad:
            raise InputError(f"{path}: group: {bad}")
        group = _group(inv, name)
        group.vars.update(body.get("vars") or {})
        group.children += [c for c in body.get("children") or [] if c not in group.children]
        for child in body.get("children") or []:
            _group(inv, child)
        for host in body.get("hosts") or []:
            names, _ = _host(path, None, str(host))
            _add_host(inv, names[0], None, {}, name)
    for host, variables in hostvars.items():
        names, _ = _host(path, None, str(host))
        _add_host(inv, names[0], None, dict(variables or {}), None)
    return inv


def _apply_var_dirs(inv: Inventory, base: Path) -> None:
    """group_vars/NAME and host_vars/NAME beside the inventory (file or folder, any suffix)."""
    for folder, names, apply in (
        ("group_vars", list(inv.groups), lambda n, v: _group(inv, n).vars.update(v)),
        ("host_vars", list(inv.targets), lambda n, v: _add_host(inv, n, None, v, None)),
    ):
        root = base / folder
        if not root.is_dir():
            continue
        for name in names:
            for variables in _var_files(root, name):
                apply(name, variables)


def _var_files(root: Path, name: str) -> list[dict[str, Any]]:
    found = []
    for suffix in _VAR_SUFFIXES:
        path = root / (name + suffix)
        if path.is_file():
            found.append(_load_vars(path))
    folder = root / name
    if folder.is_dir():
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix in (".yml", ".yaml", ".json", ""):
                found.append(_load_vars(path))
    return found


def _load_vars(path: Path) -> dict[str, Any]:
    text = _read(path)
    data = json.loads(text) if path.suffix == ".json" else _safe_yaml(path, text)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(f"{path}: variables must be a mapping")
    return data


def _finish(inv: Inventory) -> Inventory:
    """`all` holds every top-level group, `ungrouped` every host in no other group."""
    all_group = _group(inv, ALL)
    grouped = {
        t for name, g in inv.groups.items() if name not in (ALL, UNGROUPED) for t in g.targets
    }
    ungrouped = _group(inv, UNGROUPED)
    ungrouped.targets = [t for t in ungrouped.targets if t not in grouped]
    for name in inv.targets:
        if name not in grouped and name not in ungrouped.targets:
            ungrouped.targets.append(name)
    all_group.targets = []
    children = {c for g in inv.groups.values() for c in g.children}
    for name in inv.groups:
        if name != ALL and name not in children and name not in all_group.children:
            all_group.children.append(name)
    return inv
