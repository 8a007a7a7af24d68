"""The Jinja2 environment for templates a knowledge base can override: data, never code.

A knowledge base is shared with write access by many people; `factbook status` must not run
what one of them put in `templates/status/*.j2`. Jinja2's immutable sandbox refuses the
known escapes (`cycler.__init__.__globals__`, `''.__class__.__mro__[1].__subclasses__()`,
`'{0.__class__}'.format(x)`, `namespace`/`joiner` internals, `list.append`), and this
subclass also bounds what the sandbox leaves open: exponent and repetition arithmetic that
would build huge numbers or strings (`9**9**9`, `'x' * 10**10`, which Jinja would even fold
at compile time), and a render that loops for too long (checked at every call, attribute,
operator and output) or emits more than MAX_OUTPUT characters.
"""

from __future__ import annotations

import os
import time
from typing import Any

import jinja2.sandbox
from jinja2.runtime import Context

MAX_EXPONENT = 256  # 2**256 is plenty for a status document
MAX_REPEAT = 1 << 20  # characters or items made by `*`
MAX_RENDER_S = 20.0  # a 1,000-fact document renders in well under 0.5 s
MAX_OUTPUT = 16 << 20  # characters a render may emit through `{{ }}` (a 1,000-fact one: ~0.5 Mi)

SecurityError = jinja2.sandbox.SecurityError


class TemplateTimeout(SecurityError):
    """A template ran longer than MAX_RENDER_S."""


class KBSandbox(jinja2.sandbox.ImmutableSandboxedEnvironment):
    """An immutable sandbox with bounded arithmetic and a render deadline."""

    intercepted_binops = frozenset({"**", "*"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.deadline = float("inf")
        self.seconds = MAX_RENDER_S
        self.emitted = 0
        self.finalize = self._finalize

    def start(self, seconds: float | None = None) -> None:
        """Arm the deadline and the output budget for one render."""
        if seconds is None:  # FACTBOOK_TEMPLATE_SECONDS: a slower machine, a larger document
            seconds = float(os.environ.get("FACTBOOK_TEMPLATE_SECONDS") or MAX_RENDER_S)
        self.seconds = seconds
        self.deadline = time.monotonic() + self.seconds
        self.emitted = 0

    def _tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise TemplateTimeout(f"rendering took longer than {self.seconds:g} s; stopped")

    def _finalize(self, value: Any) -> Any:
        self._tick()
        if isinstance(value, str):
            self.emitted += len(value)
            if self.emitted > MAX_OUTPUT:
                raise SecurityError(f"the document grew beyond {MAX_OUTPUT} characters")
        return value

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        self._tick()
        if operator == "**":
            if isinstance(right, (int, float)) and abs(right) > MAX_EXPONENT:
                raise SecurityError(f"exponent {right} is larger than {MAX_EXPONENT}")
        elif operator == "*":
            for seq, times in ((left, right), (right, left)):
                sized = isinstance(seq, (str, list, tuple, bytes)) and isinstance(times, int)
                if sized and len(seq) * times > MAX_REPEAT:
                    raise SecurityError(f"repetition of more than {MAX_REPEAT} items")
        return super().call_binop(context, operator, left, right)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        self._tick()
        return super().call(context, obj, *args, **kwargs)

    def getattr(self, obj: Any, attribute: str) -> Any:
        self._tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        self._tick()
        return super().getitem(obj, argument)
