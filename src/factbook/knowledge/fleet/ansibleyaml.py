"""YAML as Ansible's loader reads an inventory, group_vars or host_vars file.

Ansible loads YAML with PyYAML's safe constructors plus its own tags, so an inventory may use
what factbook's own files may not: anchors and aliases, merge keys (`<<: *defaults`, the
mapping's own keys winning), and the tags `!vault` (an ansible-vault ciphertext) and `!unsafe`
(a text Ansible never templates). factbook refused such a file ("YAML alias '*common' is not
allowed here", "could not determine a constructor for the tag '!vault'") where
`ansible-inventory` reads it.

A vaulted value stays opaque (`Vaulted`: factbook decrypts nothing; a connection variable
that is one is refused by fleet/connection.py, naming it). What aliases expand to is bounded:
nine lines of nested aliases ("billion laughs") make 10**9 values for whoever walks them, and
`&a [*a]` a value that contains itself; both are refused with the file's name.
"""

from __future__ import annotations

from typing import Any

import yaml

from factbook.knowledge.yamlsrc import BEYOND_FLOAT, MAX_INT_BITS

MAX_EXPANDED = 2_000_000  # values after aliases: ten times the most a file may hold written out


class Vaulted:
    """An `!vault` value: ansible-vault ciphertext, never decrypted by factbook."""

    __slots__ = ("ciphertext",)

    def __init__(self, ciphertext: str) -> None:
        self.ciphertext = ciphertext

    def __repr__(self) -> str:
        return "<vaulted>"  # the ciphertext is nobody's business in a message

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vaulted) and other.ciphertext == self.ciphertext

    def __hash__(self) -> int:
        return hash(self.ciphertext)


class Unsafe(str):
    """An `!unsafe` text: Ansible uses it as written, never as a template."""

    __slots__ = ()


class AliasBomb(ValueError):
    """What the aliases of a file expand to is past MAX_EXPANDED, or contains itself."""


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML's safe loader with Ansible's two tags."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """A value PyYAML's scalar constructors cannot build is a YAMLError at its line:
        they raise plain Python errors on a 5,000-digit integer (int()'s 4,300-digit
        limit), `!!int ''` or `!!bool ''` (IndexError, KeyError) and `!!timestamp
        2001-02-30` (ValueError), which reached the user as tracebacks. An integer no
        float holds (`0x` and 5,000 hex digits, which int() takes) is refused as the
        knowledge base's own files refuse it: str() of it raised where a port was read."""
        try:
            value = super().construct_object(node, deep=deep)
        except (ValueError, IndexError, KeyError, TypeError, AttributeError) as exc:
            if isinstance(exc, ValueError) and str(exc).strip():
                reason = f"invalid value: {str(exc).split(';')[0]}"
            else:
                kind = str(node.tag).rsplit(":", 1)[-1]
                reason = f"invalid value: {str(node.value)[:40]!r} is not a valid {kind}"
            raise yaml.constructor.ConstructorError(None, None, reason, node.start_mark) from None
        if type(value) is int and value.bit_length() >= MAX_INT_BITS:
            try:
                float(value)
            except OverflowError:
                raise yaml.constructor.ConstructorError(
                    None, None, BEYOND_FLOAT, node.start_mark
                ) from None
        return value


def _vault(loader: yaml.SafeLoader, node: yaml.Node) -> Vaulted:
    return Vaulted(str(loader.construct_scalar(node)))  # type: ignore[arg-type]


def _unsafe(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """ansible's construct_yaml_unsafe: the value, every text in it marked unsafe."""
    if isinstance(node, yaml.ScalarNode):
        return Unsafe(loader.construct_scalar(node))
    if isinstance(node, yaml.SequenceNode):
        return _marked(loader.construct_sequence(node, deep=True))
    return _marked(loader.construct_mapping(node, deep=True))


def _marked(value: Any) -> Any:
    """`value` with every text in it marked unsafe: each distinct list or dict copied once, an
    alias to it the same copy again, without recursion. A walk of the values as written
    spelled out every alias: `!unsafe` over 20 aliases of a 10**7-value alias tree ran for
    minutes before load() could measure it (expanded_size refuses the copy, which shares
    as the original did)."""
    copies: dict[int, Any] = {}
    pending: list[Any] = []

    def shell(item: Any) -> Any:
        if isinstance(item, str) and not isinstance(item, Unsafe):
            return Unsafe(item)
        if isinstance(item, (list, dict)):
            if id(item) not in copies:
                copies[id(item)] = [] if isinstance(item, list) else {}
                pending.append(item)
            return copies[id(item)]
        return item

    top = shell(value)
    while pending:
        item = pending.pop()
        copy = copies[id(item)]
        if isinstance(item, list):
            copy.extend(shell(v) for v in item)
        else:
            copy.update((k, shell(v)) for k, v in item.items())
    return top


_Loader.add_constructor("!vault", _vault)
_Loader.add_constructor("!unsafe", _unsafe)


def load(text: str) -> Any:
    """The document as Ansible reads it; AliasBomb when its aliases expand past the bound.
    yaml.YAMLError as PyYAML raises it."""
    data = yaml.load(text, Loader=_Loader)  # a safe loader with two tags more
    expanded_size(data)
    return data


def expanded_size(data: Any, limit: int = MAX_EXPANDED) -> int:
    """The values a walk of `data` meets, an alias's target counted wherever it is used;
    AliasBomb past `limit` or on a collection that contains itself. Linear in the distinct
    collections (each one's size is kept), with no recursion."""
    sizes: dict[int, int] = {}
    open_now: set[int] = set()
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        value, closing = stack.pop()
        if type(value) is not dict and type(value) is not list:
            continue
        key = id(value)
        children = list(value.values()) if type(value) is dict else value
        if closing:
            total = 1 + (len(value) if type(value) is dict else 0)
            total += sum(sizes.get(id(child), 1) for child in children)
            if total > limit:
                raise AliasBomb(f"its aliases expand to more than {limit} values")
            sizes[key] = total
            open_now.discard(key)
            continue
        if key in sizes:
            continue
        if key in open_now:
            raise AliasBomb("a value contains itself through an alias")
        open_now.add(key)
        stack.append((value, True))
        stack.extend((child, False) for child in children)
    return sizes.get(id(data), 1)
