"""The Jinja2 environment for templates a knowledge base can override: data, never code.

A knowledge base is shared with write access by many people; `factbook status` must not run
what one of them put in `templates/status/*.j2`. Jinja2's immutable sandbox refuses the
known escapes (`cycler.__init__.__globals__`, `''.__class__.__mro__[1].__subclasses__()`,
`'{0.__class__}'.format(x)`, `namespace`/`joiner` internals, `list.append`), and this
subclass also bounds what the sandbox leaves open: exponent and repetition arithmetic that
would build huge numbers or strings (`9**9**9`, `'x' * 10**10`, which Jinja would even fold
at compile time), and a render that runs for too long or emits more than MAX_OUTPUT
characters. The deadline is checked at every call, attribute, operator and output, and at
every item of every `for` loop (the compiled loop iterates a `Ticking` wrapper) and of the
`sum` filter (quadratic on lists): a template has no other way to repeat work, so no template
outlives its deadline by more than one step. Strings a template asks for by
size are checked before they are made: `%` and `.format` widths (`'%999999999d' % 1`), the
padding methods and filters (`center`, `ljust`, `rjust`, `zfill`, `expandtabs`, `indent`),
`replace` and the `format` filter. What no rule names (`translate` with a long mapping, ...)
meets `bounded_memory`: the render runs with at most MAX_RENDER_MEMORY more address space, so
it ends in a MemoryError, not in the machine's swap.
"""

from __future__ import annotations

import os
import re
import string
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import jinja2.lexer
import jinja2.sandbox
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context

MAX_EXPONENT = 256  # 2**256 is plenty for a status document
MAX_REPEAT = 1 << 20  # characters or items made by `*`
MAX_RENDER_S = 20.0  # a 1,000-fact document renders in well under 0.5 s
RENDER_S_RANGE = (0.1, 3600.0)  # what FACTBOOK_TEMPLATE_SECONDS may say


def render_seconds(text: str | None) -> float:
    """FACTBOOK_TEMPLATE_SECONDS (`text`) as a render deadline, MAX_RENDER_S when unset; a
    UsageError unless it is a number of seconds in RENDER_S_RANGE. `abc` was a ValueError
    (a traceback out of `docs`), `nan` a deadline never reached, `inf` none at all."""
    if not text:
        return MAX_RENDER_S
    low, high = RENDER_S_RANGE
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not low <= seconds <= high:  # nan fails both
        from factbook.errors import UsageError, visible

        shown = visible(text[:40])
        raise UsageError(
            f"FACTBOOK_TEMPLATE_SECONDS={shown!r}: expected seconds from {low:g} to {high:g}"
        )
    return seconds


MAX_OUTPUT = 16 << 20  # characters a render may emit through `{{ }}` (a 1,000-fact one: ~0.5 Mi)
MAX_STRING = MAX_OUTPUT  # characters one padding, format or replace may make
MAX_RENDER_MEMORY = 512 << 20  # address space a render may add (a 1,000-fact one: ~50 MiB)
# Jinja parses and compiles recursively, and Python's compiler bounds what it compiles: 80
# brackets deep was a RecursionError, 100 `if`s an IndentationError, ~25 `for`s "too many
# statically nested blocks", none of them naming a line. factbook's own templates nest 6 deep.
MAX_NESTING = 48  # brackets and blocks, together
MAX_LOOPS = 16  # `for` blocks inside each other
_PERCENT = re.compile(r"%(?:\([^)]*\))?[#0 +-]*(\*|\d+)?(?:\.(\*|\d+))?")
_NUMBER = re.compile(r"\d+")
_PADDING = frozenset({"center", "ljust", "rjust", "zfill"})

SecurityError = jinja2.sandbox.SecurityError


class OutputTooLarge(SecurityError):
    """A render emitted more than MAX_OUTPUT characters: a payload, or a knowledge base too
    large for one document (the caller says which it can be)."""


class TemplateTimeout(SecurityError):
    """A template ran longer than MAX_RENDER_S."""


_OPENERS = frozenset(
    {"if", "for", "macro", "call", "filter", "block", "with", "autoescape", "trans"}
)
_BRACKETS = {"lparen": 1, "lbracket": 1, "lbrace": 1, "rparen": -1, "rbracket": -1, "rbrace": -1}


def nesting_checked(
    stream: Iterator[jinja2.lexer.Token], name: str | None, file: str | None
) -> Iterator[jinja2.lexer.Token]:
    """The template's tokens as the parser reads them, and a TemplateSyntaxError at the line
    where it nests past MAX_NESTING brackets and blocks or MAX_LOOPS `for`s: counted as the
    tokens pass (the lexer is a loop, not a recursion), before the parser's recursion or
    Python's compiler meets that depth."""
    open_blocks: list[str] = []
    brackets = loops = 0
    tag: str | None = None  # the tag of the block statement being read
    assigns = False  # `{% set x = 1 %}` is a statement, `{% set x %}...{% endset %}` a block
    for token in stream:
        kind = token.type
        if kind in _BRACKETS:
            brackets = max(0, brackets + _BRACKETS[kind])
        elif kind == "block_begin":
            tag, assigns = "", False
        elif kind == "name" and tag == "":
            tag = token.value
            if tag.startswith("end") and open_blocks:
                loops -= open_blocks.pop() == "for"
            elif tag in _OPENERS:
                open_blocks.append(tag)
                loops += tag == "for"
        elif kind == "assign" and tag == "set":
            assigns = True
        elif kind == "block_end":
            if tag == "set" and not assigns:
                open_blocks.append("set")
            tag = None
        if brackets + len(open_blocks) > MAX_NESTING:
            why = f"nested more than {MAX_NESTING} levels deep (brackets and blocks)"
            raise jinja2.TemplateSyntaxError(why, token.lineno, name, file)
        if loops > MAX_LOOPS:
            why = f"more than {MAX_LOOPS} `for` loops inside each other"
            raise jinja2.TemplateSyntaxError(why, token.lineno, name, file)
        yield token


class TickingCodeGenerator(CodeGenerator):
    """Jinja's code generator, except that every `for` loop iterates
    `environment.ticking(<iterable>)`, a deadline check at each item: nested loops over a
    range made once (`{% for i in r %}{% for j in r %}`) reach no other hook. (Jinja allows
    no custom node, so the loop's own iterable node is recognised as it is written.)"""

    _loop_iter: nodes.Node | None = None

    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        outer, self._loop_iter = self._loop_iter, node.iter
        try:
            super().visit_For(node, frame)
        finally:
            self._loop_iter = outer

    def visit(self, node: nodes.Node, *args: Any, **kwargs: Any) -> Any:
        if node is not self._loop_iter or self.environment.is_async:
            return super().visit(node, *args, **kwargs)
        self.write("environment.ticking(")
        super().visit(node, *args, **kwargs)
        self.write(")")
        return None


class Ticking:
    """`items` iterated with a deadline check at each item; its length is theirs, if any
    (`loop.length` and `loop.last` need no copy of a list)."""

    __slots__ = ("_env", "_items")

    def __init__(self, items: Any, env: KBSandbox) -> None:
        self._items, self._env = items, env

    def __len__(self) -> int:
        return len(self._items)  # TypeError for an iterator: LoopContext then counts

    def __iter__(self) -> Iterator[Any]:
        env = self._env
        for item in self._items:
            if time.monotonic() > env.deadline:
                env._tick()
            yield item


class KBSandbox(jinja2.sandbox.ImmutableSandboxedEnvironment):
    """An immutable sandbox with bounded arithmetic and a render deadline."""

    intercepted_binops = frozenset({"**", "*", "%"})
    code_generator_class = TickingCodeGenerator

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.deadline = float("inf")
        self.seconds = MAX_RENDER_S
        self.emitted = 0
        self.finalize = self._finalize
        self.filters.update(bounded_filters(dict(self.filters)))
        self.filters["sum"] = ticking_sum(self.filters["sum"])

    def _tokenize(
        self,
        source: str,
        name: str | None,
        filename: str | None = None,
        state: str | None = None,
    ) -> jinja2.lexer.TokenStream:
        """The tokens the parser reads, their nesting checked as they pass (one lexing)."""
        stream = super()._tokenize(source, name, filename, state)
        return jinja2.lexer.TokenStream(nesting_checked(stream, name, filename), name, filename)

    def start(self, seconds: float | None = None) -> None:
        """Arm the deadline and the output budget for one render."""
        if seconds is None:  # FACTBOOK_TEMPLATE_SECONDS: a slower machine, a larger document
            seconds = render_seconds(os.environ.get("FACTBOOK_TEMPLATE_SECONDS"))
        self.seconds = seconds
        self.deadline = time.monotonic() + self.seconds
        self.emitted = 0

    def _tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise TemplateTimeout(f"rendering took longer than {self.seconds:g} s; stopped")

    def ticking(self, items: Any) -> Ticking:
        """What a compiled `for` loop iterates: `items`, checked against the deadline."""
        return Ticking(items, self)

    def _finalize(self, value: Any) -> Any:
        self._tick()
        if isinstance(value, str):
            self.emitted += len(value)
            if self.emitted > MAX_OUTPUT:
                raise OutputTooLarge(f"the document grew beyond {MAX_OUTPUT} characters")
        return value

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        self._tick()
        if operator == "**":
            if isinstance(right, (int, float)) and abs(right) > MAX_EXPONENT:
                raise SecurityError(f"exponent {right} is larger than {MAX_EXPONENT}")
        elif operator == "%" and isinstance(left, str):
            check_percent(left, right)
        elif operator == "*":
            for seq, times in ((left, right), (right, left)):
                sized = isinstance(seq, (str, list, tuple, bytes)) and isinstance(times, int)
                if sized and len(seq) * times > MAX_REPEAT:
                    raise SecurityError(f"repetition of more than {MAX_REPEAT} items")
        return super().call_binop(context, operator, left, right)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        self._tick()
        check_str_call(obj, args, kwargs)
        return super().call(context, obj, *args, **kwargs)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """`str.format`/`format_map` as the sandbox wraps them, widths checked first."""
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        text, mapping = value.__self__, value.__name__ == "format_map"

        def checked(*args: Any, **kwargs: Any) -> str:
            if mapping and len(args) == 1 and isinstance(args[0], dict):
                check_format(text, (), args[0])
            else:
                check_format(text, args, kwargs)
            return wrapped(*args, **kwargs)

        return checked

    def getattr(self, obj: Any, attribute: str) -> Any:
        self._tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        self._tick()
        return super().getitem(obj, argument)


def _refuse_wide(number: Any, what: str) -> None:
    if isinstance(number, int) and not isinstance(number, bool) and number > MAX_STRING:
        raise SecurityError(f"{what} of {number} characters is more than {MAX_STRING}")


def check_percent(text: str, args: Any) -> None:
    """`text % args` asks for no field wider or more precise than MAX_STRING."""
    values = args if isinstance(args, tuple) else (args,)
    for found in _PERCENT.finditer(text):
        for number in found.groups():
            if number == "*":  # the width is taken from the arguments
                for value in values:
                    _refuse_wide(value, "a % width")
            elif number:
                _refuse_wide(int(number[:12]), "a % width")


def check_format(text: str, args: Any, kwargs: Any) -> None:
    """`text.format(...)` asks for no field wider than MAX_STRING (a nested `{w}` width is
    judged by the arguments it may take)."""
    for _, _, spec, _ in string.Formatter().parse(text):
        if not spec:
            continue
        for number in _NUMBER.findall(spec):
            _refuse_wide(int(number[:12]), "a format width")
        if "{" in spec:
            for value in [*args, *dict(kwargs).values()]:
                _refuse_wide(value, "a format width")


def check_str_call(method: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """A str method that makes a string of a size the caller names: checked before it runs."""
    owner, name = getattr(method, "__self__", None), getattr(method, "__name__", "")
    if not isinstance(owner, (str, bytes)):
        return
    if name in _PADDING and args:
        _refuse_wide(args[0], f"{name}()")
    elif name == "expandtabs":
        tab = args[0] if args else kwargs.get("tabsize", 8)
        if isinstance(tab, int):
            _refuse_wide(len(owner) * max(tab, 1), "expandtabs()")
    elif name == "replace" and len(args) >= 2:
        check_replace(owner, args[0], args[1])


def check_replace(text: Any, old: Any, new: Any) -> None:
    """`text.replace(old, new)` makes at most MAX_STRING characters."""
    if not all(isinstance(x, (str, bytes)) for x in (text, old, new)):
        return
    growth = len(new) - len(old)
    if growth > 0:
        times = text.count(old) if old else len(text) + 1
        _refuse_wide(len(text) + times * growth, "replace()")


def bounded_filters(filters: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """Jinja's filters that make a string of a size their arguments name, checked first."""

    def center(value: Any, width: int = 80) -> str:
        _refuse_wide(width, "center")
        return filters["center"](value, width)

    def indent(value: Any, width: Any = 4, *args: Any, **kwargs: Any) -> str:
        size = len(width) if isinstance(width, str) else width
        if isinstance(size, int):
            _refuse_wide(size * (str(value).count("\n") + 1), "indent")
        return filters["indent"](value, width, *args, **kwargs)

    def format_filter(value: Any, *args: Any, **kwargs: Any) -> str:
        check_percent(str(value), kwargs or args)
        return filters["format"](value, *args, **kwargs)

    def replace(eval_ctx: Any, value: Any, old: Any, new: Any, count: Any = None) -> str:
        check_replace(str(value), str(old), str(new))
        return filters["replace"](eval_ctx, value, old, new, count)

    replace.jinja_pass_arg = filters["replace"].jinja_pass_arg  # type: ignore[attr-defined]
    return {"center": center, "indent": indent, "format": format_filter, "replace": replace}


def ticking_sum(original: Callable[..., Any]) -> Callable[..., Any]:
    """The `sum` filter, its items checked against the deadline: with a list as `start`
    (`r|batch(1)|sum(start=[])`) it copies quadratically, in C, inside one filter call."""

    def checked(environment: KBSandbox, iterable: Any, *args: Any, **kwargs: Any) -> Any:
        return original(environment, environment.ticking(iterable), *args, **kwargs)

    checked.jinja_pass_arg = original.jinja_pass_arg  # type: ignore[attr-defined]
    return checked


_LIMITING = threading.Lock()  # the limit is the process's: one bounded render at a time


@contextmanager
def bounded_memory(extra: int = MAX_RENDER_MEMORY) -> Iterator[None]:
    """At most `extra` more bytes of address space while inside (RLIMIT_AS, Linux): a render
    that asks for more gets a MemoryError instead of the machine's memory. Never raises the
    limit that is already there; nothing is changed where /proc/self/statm is not. Renders
    in other threads (the MCP server's) wait: each restores the limit it found."""
    with _LIMITING, _address_space(extra):
        yield


@contextmanager
def _address_space(extra: int) -> Iterator[None]:
    try:
        import resource

        with open("/proc/self/statm", encoding="ascii") as handle:
            size = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        yield
        return
    limit = size + extra
    if soft != resource.RLIM_INFINITY:
        limit = min(limit, soft)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
