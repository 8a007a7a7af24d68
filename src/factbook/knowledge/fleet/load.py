"""Reading targets.yaml (targets, groups, vars, `inventory:`) and `--inventory` files.

    inventory: [inventories/prod.ini, ~/.ssh/config]   # read first; targets.yaml adds to them
    targets:
      node-01: {host: 10.0.0.11, vars: {gpu_count: 8}}
    groups:
      h100: {targets: ["node-0*"], vars: {driver: 580.95.05}}

Every problem is reported with targets.yaml's file:line; a problem inside an inventory file
names that file (and its line where the format has lines).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from factbook.errors import InputError, Problem
from factbook.knowledge import schema
from factbook.knowledge.fleet.connection import field_problems
from factbook.knowledge.fleet.inventory import Group, Inventory
from factbook.knowledge.kbfiles import confined, escapes, scrub
from factbook.knowledge.model import Target
from factbook.knowledge.names import name_problem, shown
from factbook.knowledge.yamlsrc import LocatedDoc, load_located


def load_targets_file(
    path: Path, display: str, root: Path
) -> tuple[dict[str, Target], dict[str, Group], list[Problem]]:
    """targets.yaml (and the inventories it names) -> its targets (groups and connection
    fields filled in: Inventory.finish, made once), its groups and every problem found."""
    doc, problems = load_located(path, display)
    inventory = Inventory()
    if doc.data is None:
        return inventory.finish(), inventory.groups, problems
    problems += schema.validate(doc.data, schema.TARGETS_SCHEMA, doc)
    data = doc.data if isinstance(doc.data, dict) else {}
    sources = data.get("inventory") or []
    if not isinstance(sources, (str, list)):
        sources = []  # a date, a bool, a number: schema.validate named it at its line
    for i, source in enumerate([sources] if isinstance(sources, str) else sources):
        if not isinstance(source, str):
            continue
        where = ("inventory",) if isinstance(sources, str) else ("inventory", i)
        path = _relative(root, source)
        try:
            if escapes(path, root) and _is_own_ssh_config(path):
                inventory.add(read_sources([str(path)], root))  # the user's, as ssh reads it
            else:
                inventory.add(read_source(path))
        except InputError as exc:
            problems.append(doc.problem(where, f"inventory {source}: {exc}"))
    own = Inventory()
    raw_targets = data.get("targets")
    for name, raw in (raw_targets or {}).items() if isinstance(raw_targets, dict) else ():
        target, found = _target(doc, str(name), raw)
        problems += found
        if target is not None:
            own.targets[target.name] = target
    raw_groups = data.get("groups")
    for name, found in (raw_groups or {}).items() if isinstance(raw_groups, dict) else ():
        bad = name_problem("target name", name)
        if bad:
            problems.append(doc.problem(("groups", name), f"group: {bad}"))
            continue
        raw = schema.conform(found, schema.GROUP_SCHEMA)  # validate() reported the rest
        if raw is schema.INVALID:
            continue
        own.groups[str(name)] = Group(
            name=str(name),
            targets=[str(t) for t in raw.get("targets") or []],
            children=[str(c) for c in raw.get("children") or []],
            vars=dict(raw.get("vars") or {}),
        )
    inventory.add(own)
    for name in inventory.groups:
        if name in inventory.targets:
            problems.append(
                doc.problem(("groups", name), f"group '{name}': a target has the same name")
            )
    for group, message in inventory.problems():
        at = ("groups", group) if group in own.groups else ("inventory",)
        problems.append(doc.problem(at, message))
    problems += _jump_problems(doc, own.targets, inventory.targets)
    finished = inventory.finish()  # once: 200,000 hosts take seconds
    for name, target in finished.items():
        at = ("targets", name) if name in own.targets else ("inventory",)
        problems += [doc.problem(at, f"target '{name}': {m}") for m in field_problems(target)]
    return finished, inventory.groups, problems


def read_source(path: Path) -> Inventory:
    """An inventory file or directory: Ansible (INI, YAML, JSON, directory) or an ssh config."""
    from factbook.knowledge.fleet.ansible import read_ansible
    from factbook.knowledge.fleet.sshconfig import is_ssh_config, read_ssh_config

    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.is_file() and is_ssh_config(path):
        return read_ssh_config(path)
    return read_ansible(path)


def read_sources(paths: list[str], base: Path, *, root: Path | None = None) -> Inventory:
    """`--inventory FILE` (repeatable) -> one Inventory; a bad file is an InputError naming it.

    These are the user's own paths, read wherever they are; an error about one quotes none of
    its content (it may be a file the user did not mean, such as /etc/shadow). Paths a
    knowledge base names itself (factbook.yaml's `mcp.inventories`) pass its `root`: then
    they and what they include are read only inside it, as targets.yaml's `inventory:` is
    (round 21: an ssh config there included a file outside, read unconfined)."""
    inventory = Inventory()
    for source in paths:
        path = _relative(base, source)
        with confined(root):
            try:
                inventory.add(read_source(path))
            except InputError as exc:
                # confined to the root, no content from outside can be in it: said whole
                raise InputError(scrub(str(exc), path) if root is None else str(exc)) from None
    return inventory


def _is_own_ssh_config(path: Path) -> bool:
    """The user's ~/.ssh/config: outside the knowledge base, but what `ssh` reads anyway."""
    own = Path("~/.ssh/config").expanduser()
    return os.path.realpath(path) == os.path.realpath(own)


def _relative(root: Path, source: str) -> Path:
    path = Path(source).expanduser()
    return path if path.is_absolute() else root / path


def _target(doc: LocatedDoc, name: str, found: Any) -> tuple[Target | None, list[Problem]]:
    raw = schema.conform(found, schema.TARGET_SCHEMA)  # what validate() reported is left out
    if raw is schema.INVALID:
        return None, []
    bad = [name_problem("target name", name)]
    env = raw.get("env") if isinstance(raw.get("env"), dict) else {}
    bad += [name_problem("env key", k) for k in env]  # identifiers, as the supervisor sets them
    if any(bad):
        return None, [doc.problem(("targets", name), f"target: {b}") for b in bad if b]
    problems = []
    jump = raw.get("jump") or ()
    transport = raw.get("transport", "ssh")
    if transport == "ssh" and not raw.get("host"):
        problems.append(doc.problem(("targets", name), f"target '{name}': ssh needs 'host'"))
    problems += _transport_problems(doc, name, transport, raw)
    target = Target(
        name=name,
        transport=transport,
        host=raw.get("host"),
        port=int(raw["port"]) if isinstance(raw.get("port"), float) else raw.get("port"),
        user=raw.get("user"),
        jump=(jump,) if isinstance(jump, str) else tuple(jump),
        python=raw.get("python"),
        identity_file=raw.get("identity_file"),
        env={str(k): str(v) for k, v in (raw.get("env") or {}).items()},
        description=raw.get("description"),
        tags=tuple(raw.get("tags") or ()),
        connect_timeout=raw.get("connect_timeout"),
        exec=tuple(str(w) for w in raw.get("exec") or ()),
        via=raw.get("via"),
        nodes=raw.get("nodes"),
        partition=raw.get("partition"),
        srun_args=tuple(str(w) for w in raw.get("srun_args") or ()),
        identity=dict(raw["identity"]) if isinstance(raw.get("identity"), dict) else {},
        vars=dict(raw.get("vars") or {}) if isinstance(raw.get("vars"), dict) else {},
    )
    return target, problems


def _transport_problems(
    doc: LocatedDoc, name: str, transport: str, raw: dict[str, Any]
) -> list[Problem]:
    """Fields a transport needs (exec: the argv prefix; slurm: nodes or a partition)."""
    if transport == "exec" and not raw.get("exec"):
        return [doc.problem(("targets", name), f"target '{name}': exec needs 'exec' (an argv)")]
    if transport == "slurm" and not (raw.get("nodes") or raw.get("partition")):
        return [
            doc.problem(("targets", name), f"target '{name}': slurm needs 'nodes' or 'partition'")
        ]
    if transport == "slurm":
        return _slurm_problems(doc, name, raw)
    return []


def _slurm_problems(doc: LocatedDoc, name: str, raw: dict[str, Any]) -> list[Problem]:
    """A slurm target's node list, partition and srun options (fleet/slurmwords.py): refused
    here, with the line, rather than handed to scontrol and srun."""
    from factbook.knowledge.fleet.slurmwords import (
        hostlist_problem,
        partition_problem,
        srun_args_problems,
    )

    problems = []
    for key, check in (("nodes", hostlist_problem), ("partition", partition_problem)):
        value = raw.get(key)
        bad = check(value) if isinstance(value, str) and value else None
        if bad:
            why = f"target '{name}': {key} {shown(value)!r} {bad}"
            problems.append(doc.problem(("targets", name, key), why))
    args = raw.get("srun_args") if isinstance(raw.get("srun_args"), list) else []
    for bad in srun_args_problems(args):
        problems.append(doc.problem(("targets", name, "srun_args"), f"target '{name}': {bad}"))
    return problems


def _jump_problems(
    doc: LocatedDoc, own: dict[str, Target], targets: dict[str, Target]
) -> list[Problem]:
    """Jumps and `via` of targets.yaml's own targets name known targets (an inventory's jumps may be
    `user@host:port` specs, as ProxyJump writes them) and never loop."""
    problems = []
    for name, target in own.items():
        if target.via is not None and target.via not in targets:
            why = f"target '{name}': unknown via '{target.via}'"
            problems.append(doc.problem(("targets", name, "via"), why))
        elif target.via is not None and target.transport in ("exec", "slurm"):
            outer = targets[target.via].transport
            if outer not in ("ssh", "openssh"):  # the login node srun or the exec runs on
                why = f"target '{name}': via '{target.via}' is a {outer} target, not ssh/openssh"
                problems.append(doc.problem(("targets", name, "via"), why))
        for hop in target.jump:
            if hop not in targets:
                problems.append(
                    doc.problem(("targets", name, "jump"), f"target '{name}': unknown jump '{hop}'")
                )
        seen, current = {name}, list(target.jump)
        while current:
            hop = current.pop()
            if hop == name:
                problems.append(
                    doc.problem(("targets", name, "jump"), f"target '{name}': jump loop")
                )
                break
            if hop in targets and hop not in seen:
                seen.add(hop)
                current.extend(targets[hop].jump)
    return problems


def add_inventories(
    targets: dict[str, Target],
    groups: dict[str, Group],
    paths: Sequence[str],
    base: Path | None = None,
    *,
    root: Path | None = None,
) -> tuple[dict[str, Target], dict[str, Group]]:
    """`--inventory FILE...`: the targets and groups of a loaded knowledge base with theirs
    added (a target of the same name is replaced). Paths are relative to `base` (the working
    directory); with `root` they are the knowledge base's own, read only inside it."""
    if not paths:
        return targets, groups
    extra = read_sources(list(paths), base or Path.cwd(), root=root)
    inventory = Inventory(dict(targets), dict(groups))
    inventory.add(extra)
    problems = [message for _, message in inventory.problems()]
    finished = inventory.finish()  # once: 100,000 hosts take a second
    problems += [
        f"target '{name}': {message}"
        for name, target in finished.items()
        for message in field_problems(target)
    ]
    if problems:
        raise InputError(f"--inventory {', '.join(paths)}: {problems[0]}")
    return finished, inventory.groups
