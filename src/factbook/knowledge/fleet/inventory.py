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
from collections import deque
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
        looped = {
            name for part in self._components() if _is_loop(part, self.groups) for name in part
        }
        out = []
        for name, group in self.groups.items():
            for child in group.children:
                if child not in self.groups:
                    out.append((name, f"group '{name}': unknown child group '{child}'"))
            for entry in group.targets:
                if not self._expand_entry(entry):
                    out.append((name, f"group '{name}': no target matches '{entry}'"))
            if name in looped:
                out.append((name, f"group '{name}': it contains itself through its children"))
        return out

    def _children(self, name: str) -> list[str]:
        """The known child groups of `name`, once each."""
        return [c for c in dict.fromkeys(self.groups[name].children) if c in self.groups]

    def _components(self) -> list[list[str]]:
        """The groups cut into strongly connected components (the groups of one loop of
        children together), parents' components before their children's: Tarjan's
        algorithm with an explicit stack, so a chain 5,000 groups deep is walked in linear
        time and never hits Python's recursion limit."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        out: list[list[str]] = []
        for root in self.groups:
            if root in index:
                continue
            index[root] = low[root] = len(index)
            stack.append(root)
            on_stack.add(root)
            work = [(root, iter(self._children(root)))]
            while work:
                node, children = work[-1]
                for child in children:
                    if child not in index:
                        index[child] = low[child] = len(index)
                        stack.append(child)
                        on_stack.add(child)
                        work.append((child, iter(self._children(child))))
                        break
                    if child in on_stack:
                        low[node] = min(low[node], index[child])
                else:
                    work.pop()
                    if work:
                        above = work[-1][0]
                        low[above] = min(low[above], low[node])
                    if low[node] == index[node]:
                        out.append(_pop_component(stack, on_stack, node))
        return out[::-1]

    def _parents(self) -> dict[str, list[str]]:
        parents: dict[str, list[str]] = {n: [] for n in self.groups}
        for name in self.groups:
            for child in self._children(name):
                parents[child].append(name)
        return parents

    def _expand_entry(self, entry: str) -> list[str]:
        if any(ch in entry for ch in "*?["):
            return [t for t in self.targets if fnmatch.fnmatchcase(t, entry)]
        return [entry] if entry in self.targets else []

    def members(self, group: str) -> list[str]:
        """Every target in `group` or any of its children, in declaration order, once each."""
        return self.members_of([group])

    def members_of(self, groups: list[str]) -> list[str]:
        """Every target in any of `groups` or their children, once each: one walk over all
        of them, each group visited once however many of `groups` reach it."""
        if ALL in groups and ALL not in self.groups:
            return list(self.targets)
        out: dict[str, None] = {}
        seen: set[str] = set()
        todo = deque(groups)
        while todo:
            name = todo.popleft()
            if name in seen or name not in self.groups:
                continue
            seen.add(name)
            for entry in self.groups[name].targets:
                out.update(dict.fromkeys(self._expand_entry(entry)))
            todo += self.groups[name].children
        if ALL in groups:
            out.update(dict.fromkeys(self.targets))
        return list(out)

    def depths(self) -> dict[str, int]:
        """Each group's depth: 0 for `all` and top-level groups, a child one deeper than its
        deepest parent (a loop is cut: the groups of one loop share a depth; problems()
        reports it). Computed over the components in order, parents first: linear."""
        parents = self._parents()
        depth: dict[str, int] = {}
        for part in self._components():
            inside = set(part)
            ups = [depth[p] for name in part for p in parents[name] if p not in inside]
            value = 1 + max(ups) if ups else 0
            for name in part:
                # ungrouped groups sit under `all`
                top = name != ALL and value == 0 and ALL in self.groups
                depth[name] = 1 if top else value
        if ALL in depth:
            depth[ALL] = 0
        return depth

    def finish(self) -> dict[str, Target]:
        """The targets with their groups and merged variables filled in (and the connection
        fields that ansible_* variables set, wherever they were declared).

        A target's groups are the ancestors of the groups that list it; targets listed by
        the same groups share them and their merged group variables, so 100,000 hosts in a
        few groups cost one walk per distinct set of groups, not one per host and group."""
        direct: dict[str, list[str]] = {t: [] for t in self.targets}
        for name, group in self.groups.items():
            for entry in group.targets:
                for member in self._expand_entry(entry):
                    direct[member].append(name)
        resolved: dict[tuple[str, ...], tuple[tuple[str, ...], dict[str, Any]]] = {}
        parents, depth = self._parents(), self.depths()
        out = {}
        for name, target in self.targets.items():
            key = tuple(dict.fromkeys(direct[name]))
            if key not in resolved:
                resolved[key] = self._resolve(key, parents, depth)
            groups, group_vars = resolved[key]
            merged = {**group_vars, **target.vars}
            out[name] = connection(target, groups=tuple(g for g in groups if g != ALL), vars=merged)
        return out

    def _resolve(
        self, direct: tuple[str, ...], parents: dict[str, list[str]], depth: dict[str, int]
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        """The groups that hold a target listed by `direct` (those and their ancestors, and
        `all`), in Ansible's order (depth, then priority, then name), and their variables
        merged in that order (own vars of every group, then the group_vars/ files layer)."""
        found = set(direct) | ({ALL} if ALL in self.groups else set())
        todo = list(direct)
        while todo:
            for parent in parents[todo.pop()]:
                if parent not in found:
                    found.add(parent)
                    todo.append(parent)
        groups = sorted(found, key=lambda g: (depth.get(g, 0), self.groups[g].priority, g))
        merged: dict[str, Any] = {}
        for layer in ("vars", "file_vars"):
            for group in groups:
                merged.update(getattr(self.groups[group], layer))
        return tuple(groups), merged


def _pop_component(stack: list[str], on_stack: set[str], root: str) -> list[str]:
    """Tarjan's step: the component rooted at `root` is the stack down to it."""
    part: list[str] = []
    while True:
        name = stack.pop()
        on_stack.discard(name)
        part.append(name)
        if name == root:
            return part


def _is_loop(part: list[str], groups: dict[str, Group]) -> bool:
    """Whether a component is a loop of children (two groups or more, or a group that
    names itself as a child)."""
    return len(part) > 1 or part[0] in groups[part[0]].children
