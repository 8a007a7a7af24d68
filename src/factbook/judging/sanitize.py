"""Make text that came from a box safe for each place factbook writes it.

A box answers with whatever its commands print: ESC sequences that repaint a terminal, NUL
bytes and other code points XML 1.0 forbids, lone surrogates (undecodable bytes) that no UTF-8
writer accepts, `]]>`, text that looks like a TAP line, megabytes of log. Each output format
has its own rules, so each gets one function here, and the renderers pass every string from a
result through the one for their format.

Unprintable characters are not dropped but shown escaped (`\\x1b`, `\\x00`, `\\ud800`), so a
reader still sees that they were there and which they were.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from json.encoder import encode_basestring_ascii
from typing import Any

from factbook.errors import INVISIBLE_CHARS, escaped

# C0 controls except tab and newline, DEL, C1 controls, lone surrogates, and the two code
# points XML excludes (U+FFFE, U+FFFF). None of these is text in any of our formats.
_CONTROL_CHARS = "\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff"
# Bidirectional controls and line/paragraph separators reorder or break what a reader sees
# ("Trojan source"); escaped on terminals and in documents, where no one could see them.
# Invisible characters (errors.INVISIBLE_CHARS: zero-width, BOM, tags) hide text the same way.
_REORDERING_CHARS = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069" + INVISIBLE_CHARS
_CONTROL = re.compile(f"[{_CONTROL_CHARS}]")
_TERMINAL_EXTRA = re.compile(f"[{_REORDERING_CHARS}]")
_HIDDEN = re.compile(f"[{_CONTROL_CHARS}{_REORDERING_CHARS}]")
# What str.splitlines() and YAML 1.1 take for a line break beyond the controls.
_LINE_BREAKS = re.compile("[\u2028\u2029]")

# Longest string a human-facing format shows of one field; JSON keeps everything.
CLIP_AT = 4000


def _escape_char(match: re.Match[str]) -> str:
    return escaped(match.group(0))


def escape_controls(text: str) -> str:
    """Every control character, lone surrogate and XML-excluded code point, shown escaped."""
    return _CONTROL.sub(_escape_char, text)


def first_hidden(text: str) -> re.Match[str] | None:
    """The first character no reader sees for what it is (a control other than tab and
    newline, a lone surrogate, a bidi control, a line separator), if any: lint names it."""
    return _HIDDEN.search(text)


def for_document(text: Any) -> str:
    """Text for a Markdown or plain-text document: lines and tabs kept, every other control,
    bidi control and line separator shown escaped (a `cat` of the file repaints nothing, and
    no line reads in another order than it is stored)."""
    return _HIDDEN.sub(_escape_char, str(text))


def hidden_escaped(value: Any) -> Any:
    """`value` with each string in it (keys too) passed through for_document: what a writer
    of facts/ stores of a value from a box or someone's file, since lint refuses a hidden
    character in a fact file. Depth is the caller's bound (a preview, a recorded value)."""
    return each_string(value, for_document, keys=True)


def each_string(value: Any, change: Callable[[str], str], *, keys: bool = False) -> Any:
    """`value` with `change` applied to every string in it (mapping keys too with `keys`).
    Redaction runs string by string: run over serialized JSON, a pattern that spans a line
    (a private key block) cut through the quotes and escapes around it and left text that
    no longer parsed."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {
            (change(k) if keys and isinstance(k, str) else k): each_string(v, change, keys=keys)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [each_string(v, change, keys=keys) for v in value]
    return value


def json_hidden_escaped(text: str) -> str:
    """JSON text with each character `first_hidden` finds written as a `\\uXXXX` escape:
    the same JSON when parsed, and nothing raw in the document that carries it."""
    return _HIDDEN.sub(lambda m: _json_escape(ord(m.group())), text)


def _json_escape(code: int) -> str:
    """One code point as JSON writes it: beyond U+FFFF as its surrogate pair."""
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def clip(text: str, limit: int = CLIP_AT) -> str:
    """At most `limit` characters, saying how many were left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


def for_terminal(text: Any, *, limit: int = CLIP_AT) -> str:
    """One line for a terminal: no ESC sequence, no newline, no bidi override reaches it."""
    line = escape_controls(str(text)).replace("\t", " ").replace("\n", " ")
    return clip(_TERMINAL_EXTRA.sub(_escape_char, line), limit)


def for_line(text: Any, *, limit: int = CLIP_AT) -> str:
    """One line for a line-oriented format (TAP): newlines and tabs shown escaped too."""
    line = escape_controls(str(text)).replace("\t", "\\t").replace("\n", "\\n")
    return clip(_LINE_BREAKS.sub(_escape_char, line), limit)


def for_xml(text: Any, *, limit: int | None = CLIP_AT) -> str:
    """Text every XML 1.0 parser accepts: only tab and newline kept of the controls.

    Escaping `<`, `&` and quotes is the serializer's job; this removes what no escaping
    can express (XML 1.0 has no way to write U+0000 or U+001B, not even as `&#27;`).
    """
    text = escape_controls(str(text))
    return clip(text, limit) if limit is not None else text


_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Markdown punctuation, backslash-escaped: the escapes CommonMark and Python-Markdown share.
_MARKDOWN = re.compile(r"[\\`*_{}\[\]()#+\-.!|]")


def for_markdown_cell(text: Any, *, limit: int = 500) -> str:
    """One table cell of Markdown: literal text, no pipe, link, emphasis or HTML of its own."""
    cell = _MARKDOWN.sub(lambda m: "\\" + m.group(0), for_terminal(text, limit=limit))
    return re.sub(r"[&<>]", lambda m: _HTML[m.group(0)], cell)


# Past this depth a value from a box is summarised, so no renderer recurses without bound.
MAX_DEPTH = 64
# Python refuses to print ints beyond 4300 digits (CVE-2020-10735); such values become text.
_MAX_INT_BITS = 4000 * 3


def finite_number(value: Any) -> float | None:
    """A number read from someone's file (a record, a benchmark's JSON) as a finite float,
    else None: JSON as Python reads it holds `Infinity`, `NaN` and integers of up to 4300
    digits, and float() of a 400-digit one, or math.isfinite() of it, is an OverflowError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def json_safe(value: Any, *, _depth: int = 0) -> Any:
    """A value any strict JSON parser reads back: no NaN, no lone surrogate, bounded depth.

    Non-finite floats and unprintable huge ints become strings, mapping keys strings, tuples
    and sets lists, unknown objects their `str()`.
    """
    if isinstance(value, str):
        return escape_lone_surrogates(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        bits = value.bit_length()
        return value if bits <= _MAX_INT_BITS else f"<int of {bits} bits>"
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if _depth >= MAX_DEPTH:
        return f"<nested deeper than {MAX_DEPTH} levels>"
    if isinstance(value, dict):
        return {
            escape_lone_surrogates(str(k)): json_safe(v, _depth=_depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v, _depth=_depth + 1) for v in value]
    return escape_lone_surrogates(str(value))


def dumps_safe(value: Any, *, indent: int = 1) -> str:
    """`json.dumps(json_safe(value), indent=indent, allow_nan=False)`, byte for byte, in one
    pass: a report of 100 results per box (N boxes) was a third of the fleet client's CPU in
    json's pure-Python indenting encoder (the C one takes no indent) and json_safe's copy."""
    return _encode(value, 0, " " * indent, {})


def _text(value: str) -> str:
    """A JSON string (ASCII); a lone surrogate shown escaped as json_safe shows it. The C
    encoder writes every surrogate as `\\udXXX`, so only text with one takes the regex."""
    encoded = encode_basestring_ascii(value)
    if "\\ud" in encoded:  # a surrogate, lone or half of a pair (or a literal `\\ud`)
        return encode_basestring_ascii(escape_lone_surrogates(value))
    return encoded


def _scalar(value: Any) -> str | None:
    """The JSON of a str or a plain int (nearly every leaf), or None for anything else."""
    kind = type(value)
    if kind is str:
        return _text(value)
    if kind is int and -_SMALL_INT < value < _SMALL_INT:
        return int.__repr__(value)
    return None


_SMALL_INT = 1 << 64  # far below json_safe's bound: written as is


# Key tuples of dicts already seen to have only ASCII keys of type str, and those keys
# written: a report's thousands of records share a handful of shapes, so their keys are
# checked and encoded once, not once per record (a str subclass's key equals its text, so
# a hit still checks that every key is a str).
_PLAIN_SHAPES: dict[tuple[Any, ...], tuple[str, ...]] = {}
# id -> (the container, its depth, its JSON) for one dumps_safe call
_Memo = dict[int, tuple[Any, int, str]]


def _inline(value: Any, depth: int, unit: str, memo: _Memo) -> str:
    """_encode for a member: the common leaves without the function calls of _scalar."""
    kind = type(value)
    if kind is str:
        encoded = encode_basestring_ascii(value)
        return encoded if "\\ud" not in encoded else _text(value)
    if kind is int and -_SMALL_INT < value < _SMALL_INT:
        return int.__repr__(value)
    if value is None:
        return "null"
    return _encode(value, depth, unit, memo)


@lru_cache(maxsize=4096)
def _key(key: str) -> str:
    """A mapping key's JSON and separator: the same few keys recur in every record."""
    return _text(key) + ": "


def _encode(value: Any, depth: int, unit: str, memo: _Memo) -> str:
    """One value of dumps_safe, with json_safe's rules in json_safe's order (the exact types
    first, and their leaves inline: they are nearly every value). A dict or list met again
    (the same object: a fact's args and expectation in each of its targets' results) at the
    same depth is written as the first time, from `memo`."""
    leaf = _scalar(value)
    if leaf is not None:
        return leaf
    kind = type(value)
    if (kind is dict or kind is list) and depth < MAX_DEPTH:
        seen = memo.get(id(value))
        if seen is not None and seen[0] is value and seen[1] == depth:
            return seen[2]
        text = _container(value, depth, unit, memo)
        memo[id(value)] = (value, depth, text)
        return text
    return _other(value, depth, unit, memo)


def _container(value: Any, depth: int, unit: str, memo: _Memo) -> str:
    """A dict or a list (exactly those types) less than MAX_DEPTH deep."""
    if type(value) is dict:
        if not value:
            return "{}"
        shape = tuple(value)
        written = _PLAIN_SHAPES.get(shape)  # str keys, all ASCII (so distinct once written)
        if written is not None and (len(shape) * (str,) == tuple(map(type, shape))):
            items: Any = zip(written, value.values(), strict=True)
        else:
            keys = [k if type(k) is str else str(k) for k in shape]
            pairs = list(zip(keys, value.values(), strict=True))
            if len(set(keys)) != len(keys) or not all(map(str.isascii, keys)):
                # keys equal once made text (or once a surrogate is escaped): the last value wins
                pairs = list({escape_lone_surrogates(k): v for k, v in pairs}.items())
            elif len(_PLAIN_SHAPES) < 1024 and all(type(k) is str for k in shape):
                _PLAIN_SHAPES[shape] = tuple(_key(k) for k in keys)
            items = [(_key(k), v) for k, v in pairs]
        inner = "\n" + unit * (depth + 1)
        parts = [k + _inline(v, depth + 1, unit, memo) for k, v in items]
        return "{" + inner + ("," + inner).join(parts) + "\n" + unit * depth + "}"
    if not value:
        return "[]"
    inner = "\n" + unit * (depth + 1)
    parts = [_inline(v, depth + 1, unit, memo) for v in value]
    return "[" + inner + ("," + inner).join(parts) + "\n" + unit * depth + "]"


def _other(value: Any, depth: int, unit: str, memo: _Memo) -> str:
    """Everything but a plain leaf, dict or list: json_safe's remaining rules."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _text(str.__str__(value))
    if isinstance(value, int):
        bits = value.bit_length()
        return int.__repr__(value) if bits <= _MAX_INT_BITS else f'"<int of {bits} bits>"'
    if isinstance(value, float):
        return float.__repr__(value) if math.isfinite(value) else _text(str(value))
    if depth >= MAX_DEPTH:
        return f'"<nested deeper than {MAX_DEPTH} levels>"'
    if isinstance(value, dict):
        return _encode(dict(value), depth, unit, memo)
    if isinstance(value, (list, tuple, set, frozenset)):
        return _encode(list(value), depth, unit, memo)
    return _text(str(value))


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_lone_surrogates(text: str) -> str:
    """Lone surrogates (bytes that were not UTF-8) shown escaped; nothing else changed."""
    return _SURROGATE.sub(_escape_char, text)


# `scheme://user:PASSWORD@host`: the password part, up to the last `@` before the host.
# As a pattern, `[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:?#]*:[^\s/?#]*@` was tried from every
# letter of a long word and scanned the rest of it (a 128 KiB argument: seconds); it is
# found from each `://` instead, with the same matches (tests/test_secrets.py's oracle).
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_USER_END = re.compile(r"[\s/@:?#]")
_PASSWORD_END = re.compile(r"[\s/?#]")


def loads_without_surrogates(text: str | bytes) -> Any:
    """`json.loads(text)` with every lone surrogate in a string or key shown escaped
    (`\\ud800`), as escape_lone_surrogates shows it. JSON may spell one (`"\\ud800"`) and no
    UTF-8 writer takes it: a run record, a run file or the handbook's manifest holding one
    stopped `docs` with a UnicodeEncodeError. Walked with a stack, changed in place (a
    parsed value is the caller's own); only text spelling a `\\u` escape is walked."""
    value = json.loads(text)
    if (b"\\u" if isinstance(text, bytes) else "\\u") not in text:
        return value
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            for at, child in enumerate(item):
                if isinstance(child, str):
                    item[at] = escape_lone_surrogates(child)
                else:
                    stack.append(child)
        elif isinstance(item, dict):
            pairs = list(item.items())
            item.clear()
            for key, child in pairs:
                key = escape_lone_surrogates(key) if isinstance(key, str) else key
                item[key] = escape_lone_surrogates(child) if isinstance(child, str) else child
                stack.append(child)
    return escape_lone_surrogates(value) if isinstance(value, str) else value


def hide_url_passwords(text: str) -> str:
    """`ssh://ops:PASS@host` -> `ssh://ops:***@host`: a command line stored in run files
    (their `argv`) keeps which target it named, never the password given in the URL; the
    jump hosts of its query too (`?jump=ops:PASS@bastion` -> `?jump=ops:***@bastion`)."""
    return _hide_jump_passwords(_hide_authority_passwords(text))


_WORD = re.compile(r"\S+")
_JUMP_END = re.compile(r"[&#]")


def _hide_jump_passwords(text: str) -> str:
    """Each `user:PASS@host` of a `jump=` value (comma-separated specs) in a URL's query,
    with its password as `***`: a jump spec is a URL without its scheme, and its password
    became the jump target's name, in every message and result (round 21). Word by word,
    in linear time."""
    if "jump=" not in text:
        return text
    return _WORD.sub(lambda m: _hide_in_word(m.group()), text)


def _hide_in_word(word: str) -> str:
    url = word.find("://")
    if url == -1:
        return word
    out, pos = [], 0
    key = word.find("jump=", url)
    while key != -1:
        if word[key - 1] in "?&":
            end = _JUMP_END.search(word, key)
            stop = end.start() if end else len(word)
            specs = []
            for spec in word[key + 5 : stop].split(","):
                at = spec.rfind("@")
                scheme = spec.find("://", 0, at if at != -1 else 0)  # `ssh://u:p@h` as a spec
                colon = spec.find(":", scheme + 3 if scheme != -1 else 0, at) if at != -1 else -1
                specs.append(spec[:colon] + ":***" + spec[at:] if colon != -1 else spec)
            out += [word[pos : key + 5], ",".join(specs)]
            pos = stop
        key = word.find("jump=", max(key + 1, pos))
    return "".join(out) + word[pos:]


def _hide_authority_passwords(text: str) -> str:
    """The password of each `scheme://user:PASS@` (found from each `://`, in linear time)."""
    out, pos = [], 0
    sep = text.find("://")
    while sep != -1:
        start = sep  # the scheme: the first letter of the run before `://`
        while start > pos and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        head = next((i for i in range(start, sep) if text[i].isascii() and text[i].isalpha()), -1)
        user = _USER_END.search(text, sep + 3)
        if head != -1 and user is not None and user.group() == ":":
            end = _PASSWORD_END.search(text, user.end())
            at = text.rfind("@", user.end(), end.start() if end else len(text))
            if at != -1:
                out += [text[pos:head], text[head : user.start()], ":***@"]
                pos = at + 1
        sep = text.find("://", max(sep + 1, pos))
    return "".join(out) + text[pos:]


def strings_in(value: Any) -> Iterator[str]:
    """Every string in a parsed JSON or YAML value, keys as well as values, walked with a
    stack (no recursion, whatever the depth): for the checks that look at each string a
    box or a client sent before it is kept or written."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
