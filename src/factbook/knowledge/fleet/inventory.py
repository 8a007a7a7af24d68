"""Groups of targets and their variables, as targets.yaml and Ansible inventories declare them.

    groups:
      gpu-nodes: {children: [h100, b200], vars: {driver: 580.95.05}}
      h100: {targets: [node-01, "node-1*"], vars: {gpu_count: 8}}

A group lists targets (names or globs over known names) and child groups; a target belongs to
a group directly or through any child. Variables merge as Ansible merges them, a later value
replacing an earlier one: the `all` group's own vars, then each group's own vars from the
outermost to the innermost (same depth: lower `ansible_group_priority` first, then by name),
then the same two steps for the group_vars/ files layer (`file_vars`), then the target's own
(host_vars/ files already merged over them). `finish()` writes each target's groups and merged
vars into it, so the engine and lint read `target.vars` directly.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
from typing import Any

from factbook.knowledge.fleet.connection import connection
from factbook.knowledge.model import Target

ALL = "all"


@dataclass
class Group:
    """A named set of targets and child groups, with variables for all of them."""

    name: str
    targets: list[str] = field(default_factory=list)  # names or globs over target names
    children: list[str] = field(default_factory=list)
    vars: dict[str, Any] = field(default_factory=dict)
    # from group_vars/ files beside an Ansible inventory: above every group's own vars
    file_vars: dict[str, Any] = field(default_factory=dict)
    priority: int = 1  # ansible_group_priority: orders groups of the same depth

    def absorb(self, other: Group) -> None:
        """Merge a second declaration of the same group (another inventory file)."""
        targets, children = set(self.targets), set(self.children)
        self.targets += [t for t in dict.fromkeys(other.targets) if t not in targets]
        self.children += [c for c in dict.fromkeys(other.children) if c not in children]
        self.vars.update(other.vars)
        self.file_vars.update(other.file_vars)
        if other.priority != 1:
            self.priority = other.priority


@dataclass
class Inventory:
    """Targets and groups from one or more sources; later sources add to earlier ones."""

    targets: dict[str, Target] = field(default_factory=dict)
    groups: dict[str, Group] = field(default_factory=dict)

    def add(self, other: Inventory) -> None:
        """Targets of `other` replace same-named ones (their vars merged, `other`'s winning);
        groups are merged."""
        for name, target in other.targets.items():
            old = self.targets.get(name)
            self.targets[name] = (
                replace(target, vars={**old.vars, **target.vars}) if old is not None else target
            )
        for name, group in other.groups.items():
            if name in self.groups:
                self.groups[name].absorb(group)
            else:
                self.groups[name] = replace(
                    group,
                    targets=list(group.targets),
                    children=list(group.children),
                    vars=dict(group.vars),
                    file_vars=dict(group.file_vars),
                )

    def problems(self) -> list[tuple[str, str]]:
        """(group, message) for unknown children, child loops and globs matching nothing."""
        out = []
        for name, group in self.groups.items():
            for child in group.children:
                if child not in self.groups:
                    out.append((name, f"group '{name}': unknown child group '{child}'"))
            for entry in group.targets:
                if not self._expand_entry(entry):
                    out.append((name, f"group '{name}': no target matches '{entry}'"))
            if self._reaches(name, name):
                out.append((name, f"group '{name}': it contains itself through its children"))
        return out

    def _reaches(self, start: str, goal: str) -> bool:
        seen: set[str] = set()
        todo = list(self.groups[start].children) if start in self.groups else []
        while todo:
            name = todo.pop()
            if name == goal:
                return True
            if name in seen or name not in self.groups:
                continue
            seen.add(name)
            todo += self.groups[name].children
        return False

    def _expand_entry(self, entry: str) -> list[str]:
        if any(ch in entry for ch in "*?["):
            return [t for t in self.targets if fnmatch.fnmatchcase(t, entry)]
        return [entry] if entry in self.targets else []

    def members(self, group: str) -> list[str]:
        """Every target in `group` or any of its children, in declaration order, once each."""
        if group == ALL and ALL not in self.groups:
            return list(self.targets)
        out: dict[str, None] = {}
        seen: set[str] = set()
        todo = [group]
        while todo:
            name = todo.pop(0)
            if name in seen or name not in self.groups:
                continue
            seen.add(name)
            for entry in self.groups[name].targets:
                out.update(dict.fromkeys(self._expand_entry(entry)))
            todo += self.groups[name].children
        if group == ALL:
            out.update(dict.fromkeys(self.targets))
        return list(out)

    def depths(self) -> dict[str, int]:
        """Each group's depth: 0 for `all` and top-level groups, a child one deeper than its
        deepest parent (loops are cut, reported by problems())."""
        parents: dict[str, list[str]] = {n: [] for n in self.groups}
        for name, group in self.groups.items():
            for child in group.children:
                if child in parents:
                    parents[child].append(name)
        depth: dict[str, int] = {}

        def walk(name: str, stack: frozenset[str]) -> int:
            if name in depth:
                return depth[name]
            ups = [p for p in parents[name] if p not in stack]
            value = 0 if not ups else 1 + max(walk(p, stack | {name}) for p in ups)
            if name != ALL and value == 0 and ALL in self.groups:
                value = 1  # ungrouped groups sit under `all`
            depth[name] = value
            return value

        for name in self.groups:
            walk(name, frozenset())
        if ALL in depth:
            depth[ALL] = 0
        return depth

    def finish(self) -> dict[str, Target]:
        """The targets with their groups and merged variables filled in (and the connection
        fields that ansible_* variables set, wherever they were declared)."""

        depth = self.depths()
        belongs: dict[str, list[str]] = {t: [] for t in self.targets}
        for name in self.groups:
            for member in self.members(name):
                belongs[member].append(name)
        out = {}
        for name, target in self.targets.items():
            groups = sorted(
                belongs[name],
                key=lambda g: (depth.get(g, 0), self.groups[g].priority, g),
            )
            merged: dict[str, Any] = {}
            for layer in ("vars", "file_vars"):
                for group in groups:
                    merged.update(getattr(self.groups[group], layer))
            merged.update(target.vars)
            done = replace(target, groups=tuple(g for g in groups if g != ALL), vars=merged)
            out[name] = connection(done)
        return out
