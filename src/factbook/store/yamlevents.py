"""Plain data → the YAML events PyYAML's safe representer and serializer would make for it.

`yaml.dump` with libyaml's emitter still represents every value in Python (one node per
value, then the serializer asks the resolver twice per scalar which tag its text implies);
for the flat data of a fact (str keys; str, int, float, bool and None leaves; lists and
dicts) that is most of the cost of writing it. `emit_plain` hands libyaml's emitter the
event stream directly, with the same tags, implicit flags and flow styles
(`default_flow_style=None`: a collection whose items are all scalars is written in flow
style), so libyaml's emitter writes the same bytes. Anything else (another type, a
subclass, a collection reached twice, which the representer would anchor) returns None:
the caller dumps it as before.

    text = emit_plain([fact], width=100, allow_unicode=True)  # None: not plain data

`emit_counted` also says how many values it wrote and how deep: what the reader counts
against its bounds, so a writer that knows the text reads back as its data (yamlsrc.grown)
need not parse it to know the bounds hold.
"""

from __future__ import annotations

import io
from typing import Any, NamedTuple

import yaml
from yaml.events import (
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (_TAG + t for t in ("str", "int", "float", "bool", "null"))
_MAP, _SEQ = _TAG + "map", _TAG + "seq"
_RESOLVER = yaml.resolver.Resolver()  # the safe dumpers' resolver: no path resolvers
_PLAIN_TAG: dict[str, str] = {}  # text -> the tag it implies when written plain
_MEMO_MAX = 50_000
_SCALARS = (str, int, float, bool, type(None))
C_DUMPER = getattr(yaml, "CSafeDumper", None)  # libyaml's; callers check it is there


def implied_tag(text: str) -> str:
    """The tag a plain scalar `text` reads back as (`1` int, `yes` bool, `x` str). The
    resolver tries only the patterns filed under a text's first character: a text starting
    with one that has none (most words, a path) is a string without asking it."""
    resolvers = _RESOLVER.yaml_implicit_resolvers
    if text and text[0] not in resolvers and None not in resolvers:
        return _STR
    tag = _PLAIN_TAG.get(text)
    if tag is None:
        tag = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))
        if len(text) <= 256:
            if len(_PLAIN_TAG) >= _MEMO_MAX:
                _PLAIN_TAG.clear()
            _PLAIN_TAG[text] = tag
    return tag


def float_text(value: float) -> str:
    """SafeRepresenter.represent_float's text."""
    if value != value:
        return ".nan"
    if value == float("inf"):
        return ".inf"
    if value == -float("inf"):
        return "-.inf"
    text = repr(value).lower()
    if "." not in text and "e" in text:  # 1e17 -> 1.0e+17, which reads back as a float
        text = text.replace("e", ".0e", 1)
    return text


class _NotPlain(Exception):
    """The data holds something only the representer writes faithfully."""


class Emitted(NamedTuple):
    """`emit_counted`'s answer."""

    text: str
    nodes: int  # values written, as the reader counts them: each scalar (keys too), collection
    depth: int  # the deepest collection's nesting; the outermost is 1
    exact: bool  # read back, equal to the data: no NaN (unequal to itself), no huge integer


_INT_BITS_EXACT = 64  # past it the reader may refuse an integer (yamlsrc.MAX_INT_BITS)


class _Emitter:
    """Walks plain data, handing libyaml's emitter one event per value. The event objects
    are reused: libyaml copies what it needs from each before `emit` returns."""

    def __init__(self, dumper: Any) -> None:
        self.nodes = self.level = self.depth = 0
        self.exact = True
        self.emit = dumper.emit
        self.scalar = ScalarEvent(None, None, (True, False), "")
        self.starts = {
            (dict, True): MappingStartEvent(None, _MAP, True, flow_style=True),
            (dict, False): MappingStartEvent(None, _MAP, True, flow_style=False),
            (list, True): SequenceStartEvent(None, _SEQ, True, flow_style=True),
            (list, False): SequenceStartEvent(None, _SEQ, True, flow_style=False),
        }
        self.ends = {dict: MappingEndEvent(), list: SequenceEndEvent()}
        self.seen: set[int] = set()

    def value(self, value: Any) -> None:
        kind = type(value)
        if kind is str:
            tag, text = _STR, value
        elif kind is dict or kind is list:
            self.collection(value, kind)
            return
        elif kind is bool:
            tag, text = _BOOL, "true" if value else "false"
        elif kind is int:
            tag, text = _INT, str(value)
            self.exact = self.exact and value.bit_length() <= _INT_BITS_EXACT
        elif kind is float:
            tag, text = _FLOAT, float_text(value)
            self.exact = self.exact and value == value
        elif value is None:
            tag, text = _NULL, "null"
        else:
            raise _NotPlain
        self.nodes += 1
        event = self.scalar
        # the serializer's implicit flags: (plain reads back as `tag`, quoted reads back as it)
        event.tag, event.value = tag, text
        event.implicit = (implied_tag(text) == tag, tag is _STR)
        self.emit(event)

    def collection(self, value: Any, kind: type) -> None:
        if id(value) in self.seen:  # the representer would anchor it (&id001)
            raise _NotPlain
        self.seen.add(id(value))
        self.level += 1
        self.depth = max(self.depth, self.level)
        self.nodes += 1
        emit, event, tags = self.emit, self.scalar, _PLAIN_TAG
        if kind is dict:
            # default_flow_style=None: flow when every key and value is a scalar
            flow = all(type(k) in _SCALARS and type(v) in _SCALARS for k, v in value.items())
            emit(self.starts[dict, flow])
            for key, item in value.items():
                if type(key) is str:  # `value`'s string case, inline: most keys and values
                    self.nodes += 1
                    event.tag, event.value = _STR, key
                    event.implicit = ((tags.get(key) or implied_tag(key)) == _STR, True)
                    emit(event)
                elif type(key) not in _SCALARS:
                    raise _NotPlain  # a collection as a key: the representer's business
                else:
                    self.value(key)
                if type(item) is str:
                    self.nodes += 1
                    event.tag, event.value = _STR, item
                    event.implicit = ((tags.get(item) or implied_tag(item)) == _STR, True)
                    emit(event)
                else:
                    self.value(item)
        else:
            emit(self.starts[list, all(type(item) in _SCALARS for item in value)])
            for item in value:
                self.value(item)
        emit(self.ends[kind])
        self.level -= 1


def emit_plain(data: Any, *, width: int, allow_unicode: bool) -> str | None:
    """`yaml.dump(data, Dumper=CSafeDumper, default_flow_style=None, sort_keys=False, width=,
    allow_unicode=)`'s text, or None when `data` is not plain (see the module docstring)."""
    emitted = emit_counted(data, width=width, allow_unicode=allow_unicode)
    return None if emitted is None else emitted.text


def emit_counted(data: Any, *, width: int, allow_unicode: bool) -> Emitted | None:
    """`emit_plain`'s text with the values it holds and their depth; None when not plain."""
    stream = io.StringIO()
    dumper = C_DUMPER(stream, width=width, allow_unicode=allow_unicode)
    walker = _Emitter(dumper)
    try:
        dumper.emit(StreamStartEvent())
        dumper.emit(DocumentStartEvent(explicit=False))
        walker.value(data)
        dumper.emit(DocumentEndEvent(explicit=False))
        dumper.emit(StreamEndEvent())
    except _NotPlain:
        return None
    finally:
        dumper.dispose()
    return Emitted(stream.getvalue(), walker.nodes, walker.depth, walker.exact)
