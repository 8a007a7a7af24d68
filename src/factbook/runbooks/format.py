"""Parse a runbook (a jupytext MyST notebook) into steps, reporting every problem with its line.

A runbook's front matter holds a `factbook:` mapping (target, timeout, facts, pitfalls); each
code cell's YAML front matter holds the step's metadata. Keys are closed, like fact files, so
a typo (`destuctive: true`) is an error instead of a silently ignored safety switch.
"""

from __future__ import annotations

import ast
import bisect
import contextlib
import math
import os
import re
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factbook.errors import LintFailed, Problem, UsageError
from factbook.knowledge.kbfiles import confined
from factbook.knowledge.names import known_names, name_problem, shown
from factbook.knowledge.yamlsrc import read_text_bounded, refusal

RUNBOOKS_DIR = "runbooks"
STEP_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
STEP_KEYS = {
    "name": "the step's name (unique in the runbook; --step/--from/--until use it)",
    "timeout": "seconds this step may run (default: the runbook's step_timeout, else 600)",
    "requires": "fact ids verified on the target before the step runs",
    "destructive": "true: asks before running (or needs --yes)",
    "target": "the box this step's box/server calls reach (default: the runbook's target)",
    "records": "fact ids this step's record() calls may update",
    "setup": "true: re-run whenever a later step runs alone (--step, --from, --resume)",
}
# Keys Jupyter and jupytext themselves put on cells: allowed, ignored.
PASSTHROUGH_KEYS = {
    "tags",
    "jupyter",
    "editable",
    "deletable",
    "collapsed",
    "scrolled",
    "execution",
}
RUNBOOK_KEYS = {
    "title": "a short title (default: the first heading)",
    "target": "the default target of every step",
    "timeout": "seconds the whole run may take",
    "step_timeout": "the default per-step timeout in seconds",
    "facts": "fact ids this runbook relies on or measures (shown in the handbook)",
    "pitfalls": "pitfall fact ids an operator should read first",
    "description": "one paragraph for the handbook",
}
DEFAULT_STEP_TIMEOUT = 600.0
CODE_FENCE = re.compile(r"^(`{3,}|~{3,})\{code-cell\}", re.MULTILINE)
FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)^---[ \t]*$", re.MULTILINE | re.DOTALL)
# A code cell's options: `:key: value` lines, or a YAML block between `---` lines.
CELL_OPTIONS = re.compile(r"\n((?::[^\n]*\n)+|---[ \t]*\n.*?\n---[ \t]*\n)", re.DOTALL)
FENCE_CLOSE = re.compile(r"^(`{3,}|~{3,})[ \t]*$", re.MULTILINE)
MARKDOWN_BREAK = re.compile(r"^\+\+\+", re.MULTILINE)  # MyST's cell separator
# cells one runbook may hold: jupytext validates each with nbformat's JSON schema and reads
# its options with PyYAML, ~0.5 ms a cell here (a 1 MiB runbook of 35,000 tiny cells: ~15 s);
# the shipped runbooks hold at most 30
MAX_CELLS = 1000


@dataclass
class Step:
    """One code cell: what runs, where, under which safety rules."""

    name: str
    index: int  # position among the notebook's cells
    source: str
    line: int  # line of the cell's fence in the .md file
    timeout: float = DEFAULT_STEP_TIMEOUT
    requires: list[str] = field(default_factory=list)
    destructive: bool = False
    target: str | None = None
    records: list[str] = field(default_factory=list)
    setup: bool = False


@dataclass
class Runbook:
    """A parsed runbook: its steps in order and the notebook they came from."""

    name: str
    path: Path
    display: str  # path as messages show it (runbooks/x.md)
    title: str
    target: str | None
    timeout: float | None
    facts: list[str]
    pitfalls: list[str]
    description: str
    steps: list[Step]
    notebook: Any  # nbformat.NotebookNode
    problems: list[Problem]

    def step(self, name: str) -> Step:
        for step in self.steps:
            if step.name == name:
                return step
        known = ", ".join(s.name for s in self.steps)
        raise UsageError(f"runbook {self.name}: no step '{name}' (steps: {known})")

    def step_target(self, step: Step) -> str | None:
        return step.target or self.target


def runbook_paths(root: Path) -> list[Path]:
    """Every runbook of a knowledge base, sorted by name."""
    folder = Path(root) / RUNBOOKS_DIR
    return sorted(p for p in folder.glob("*.md") if not p.name.startswith(("_", "README")))


def find_runbook(root: Path, ref: str) -> Path:
    """A runbook by name (`sglang-base`) or path (`runbooks/sglang-base.md`)."""
    candidate = Path(ref)
    if candidate.suffix == ".md" and candidate.exists():
        return candidate.resolve()
    by_name = Path(root) / RUNBOOKS_DIR / f"{ref}.md"
    if by_name.exists():
        return by_name.resolve()
    known = known_names([p.stem for p in runbook_paths(root)])
    raise UsageError(f"no runbook '{shown(ref)}' (known: {known})")


_FENCE_LANGUAGE = re.compile(r"\{code-cell\}[ \t]*(\S*)")


def _parser_warnings(
    said: list[warnings.WarningMessage],
    text: str,
    fences: list[re.Match[str]],
    fence_lines: list[int],
    display: str,
) -> list[Problem]:
    """jupytext's warnings as located problems, not lines Python prints on stderr (lint's
    output is one line per problem). A cell whose language differs from the first cell's
    (jupytext keeps only one per notebook, and the kernel runs them all) is named by its
    fence's line; any other warning by the file's first line. A ResourceWarning or a
    deprecation is not about the text: the garbage collector closing another object's file
    while jupytext parsed (an earlier test of the same process) made `lint` fail with
    `jupytext: unclosed file <_io.FileIO ...>` (round 21's corpus run)."""
    noise = (ResourceWarning, DeprecationWarning, PendingDeprecationWarning)
    said = [w for w in said if not issubclass(w.category, noise)]
    if not said:
        return []
    languages = [_FENCE_LANGUAGE.match(text, m.end() - len("{code-cell}")) for m in fences]
    names = [m.group(1) if m else "" for m in languages]
    problems = [
        Problem(display, line, f"code cell in '{shown(name)}', not '{shown(names[0])}': "
                "every cell of a runbook runs in the same kernel")
        for name, line in zip(names[1:], fence_lines[1:], strict=True)
        if name != names[0]
    ]  # fmt: skip
    if problems:
        return problems
    first = str(said[0].message).strip().splitlines()
    return [Problem(display, 1, f"jupytext: {shown(first[0] if first else 'a warning')}")]


def load_runbook(path: Path, root: Path | None = None) -> Runbook:
    """Read and parse; structural problems are collected in `.problems`, never raised."""
    import jupytext

    path = Path(path)
    display = _display(path, root)
    inside_root = root is not None and Path(os.path.abspath(path)).is_relative_to(
        os.path.realpath(root)
    )
    with confined(root if inside_root else None):  # a link from runbooks/ out is refused
        text, unreadable = read_text_bounded(path, display)
    if unreadable is not None:
        raise LintFailed([unreadable])
    fences = list(CODE_FENCE.finditer(text))
    line_at = _lines(text)
    too_many = _too_many_cells(text, fences, line_at, display)
    if too_many is not None:  # refused before jupytext reads every cell
        raise LintFailed([too_many])
    problems = _unsafe_yaml(text, display, fences, line_at)
    if problems:  # jupytext would expand an alias bomb: never hand it such YAML
        raise LintFailed(problems)
    problems = _unclosed_fences(text, display, fences, line_at)
    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            notebook = jupytext.reads(text, fmt="md:myst")
    except Exception as exc:  # jupytext raises plain Exceptions on bad YAML front matter
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise LintFailed(
            [*problems, Problem(display, 1, f"cannot parse as a MyST notebook: {first}")]
        ) from None
    fence_lines = [line_at(m.start()) for m in fences]
    problems += _parser_warnings(said, text, fences, fence_lines, display)
    meta_line = _key_line(text, "factbook")
    meta = notebook.metadata.get("factbook") or {}
    if not isinstance(meta, dict):
        problems.append(Problem(display, meta_line, "front matter 'factbook:' must be a mapping"))
        meta = {}
    target = meta.get("target")
    if target is not None and not isinstance(target, str):
        problems.append(Problem(display, meta_line, "factbook.target must be a target name"))
        target = None
    for key in meta:
        if key not in RUNBOOK_KEYS:
            problems.append(
                Problem(
                    display,
                    1,
                    f"unknown runbook key 'factbook.{key}' (known: {', '.join(RUNBOOK_KEYS)})",
                )
            )
    step_default = _number(
        meta.get("step_timeout"),
        DEFAULT_STEP_TIMEOUT,
        display,
        1,
        "factbook.step_timeout",
        problems,
    )
    steps: list[Step] = []
    seen: dict[str, int] = {}
    code_no = 0
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        line = fence_lines[code_no] if code_no < len(fence_lines) else 1
        code_no += 1
        step = _step(cell, index, line, step_default, display, problems)
        if step.name in seen:
            problems.append(
                Problem(
                    display,
                    line,
                    f"duplicate step name '{step.name}' (first at line {seen[step.name]})",
                )
            )
        seen.setdefault(step.name, line)
        steps.append(step)
    if not steps:
        problems.append(Problem(display, 1, "runbook has no code cells (steps)"))
    bad_name = name_problem("runbook name", path.stem)  # it names folders under results/
    if bad_name:
        problems.append(Problem(display, 1, f"file name: {bad_name}"))
    return Runbook(
        name=path.stem,
        path=path,
        display=display,
        title=str(meta.get("title") or _first_heading(notebook) or path.stem),
        target=target,
        timeout=_number(meta.get("timeout"), None, display, 1, "factbook.timeout", problems),
        facts=_id_list(meta.get("facts"), display, 1, "factbook.facts", problems),
        pitfalls=_id_list(meta.get("pitfalls"), display, 1, "factbook.pitfalls", problems),
        description=str(meta.get("description") or ""),
        steps=steps,
        notebook=notebook,
        problems=problems,
    )


def _step(
    cell: Any, index: int, line: int, default_timeout: float, display: str, problems: list[Problem]
) -> Step:
    meta = dict(cell.metadata)
    name = meta.get("name")
    if not isinstance(name, str) or not STEP_NAME.fullmatch(name):
        what = (
            "has no 'name'" if name is None else f"has a bad name {shown(repr(name))} ([a-z0-9_-]+)"
        )
        problems.append(Problem(display, line, f"code cell {what}"))
        name = f"cell-{index}"
    for key in meta:
        if key not in STEP_KEYS and key not in PASSTHROUGH_KEYS:
            problems.append(
                Problem(
                    display,
                    line,
                    f"step '{name}': unknown key '{shown(str(key))}' "
                    f"(known: {', '.join(STEP_KEYS)})",
                )
            )
    for key in ("destructive", "setup"):
        if key in meta and not isinstance(meta[key], bool):
            problems.append(Problem(display, line, f"step '{name}': '{key}' must be true/false"))
    target = meta.get("target")
    if target is not None and not isinstance(target, str):
        problems.append(Problem(display, line, f"step '{name}': 'target' must be a name"))
        target = None
    return Step(
        name=name,
        index=index,
        source=cell.source,
        line=line,
        timeout=_number(
            meta.get("timeout"), default_timeout, display, line, f"step '{name}': timeout", problems
        )
        or default_timeout,
        requires=_id_list(
            meta.get("requires"), display, line, f"step '{name}': requires", problems
        ),
        destructive=meta.get("destructive") is True,
        target=target,
        records=_id_list(meta.get("records"), display, line, f"step '{name}': records", problems),
        setup=meta.get("setup") is True,
    )


def parse_cell(source: str) -> ast.Module | None:
    """A code cell's syntax tree, or None when Python cannot parse it: a syntax error, a NUL
    byte, or nesting past its parser's recursion (50,000 chained `+` raised a RecursionError
    out of `lint`). Every reader of a cell's code parses it here; inside `shared_cells()`
    each cell is parsed once for all of them. The tree is shared: its readers only read it."""
    return _cell(source)[0]


def cell_nodes(source: str) -> list[ast.AST]:
    """Every node of the cell's tree in `ast.walk`'s order (none when it does not parse),
    walked once for all its readers inside `shared_cells()`."""
    tree, nodes = _cell(source)
    if tree is not None and not nodes:
        nodes.extend(ast.walk(tree))
    return nodes


@contextlib.contextmanager
def shared_cells() -> Iterator[None]:
    """Inside: each cell's tree and nodes made once for all its readers, then let go. Lint
    reads a cell for its records, the facts it uses and its launches: each parsed it again
    (0.45 s apiece for a cell of 15,000 lines). Kept for the whole process instead, the
    trees of the last cells read stayed alive in a long-lived server."""
    stack = _SHARED.__dict__.setdefault("stack", [])
    stack.append({})
    try:
        yield
    finally:
        stack.pop()


def _cell(source: str) -> tuple[ast.Module | None, list[ast.AST]]:
    stack = getattr(_SHARED, "stack", None)
    memo = stack[-1] if stack else None
    if memo is not None and source in memo:
        return memo[source]
    try:
        tree: ast.Module | None = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    made: tuple[ast.Module | None, list[ast.AST]] = (tree, [])
    if memo is not None:
        memo[source] = made
    return made


_SHARED = threading.local()  # this thread's shared_cells() blocks, innermost last


def _number(
    raw: Any, default: float | None, display: str, line: int, what: str, problems: list[Problem]
) -> float | None:
    """A positive, finite number of seconds; a problem otherwise. An integer too large for a
    float (`timeout: 1000...0`, 400 digits) is refused here, not an OverflowError later."""
    if raw is None:
        return default
    seconds = math.nan
    if not isinstance(raw, bool) and isinstance(raw, (int, float)):
        with contextlib.suppress(OverflowError):
            seconds = float(raw)
    if not 0 < seconds < math.inf:
        problems.append(Problem(display, line, f"{what} must be a positive number of seconds"))
        return default
    return seconds


def _id_list(raw: Any, display: str, line: int, what: str, problems: list[Problem]) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        problems.append(Problem(display, line, f"{what} must be a list of fact ids"))
        return []
    return list(raw)


def _lines(text: str) -> Callable[[int], int]:
    """The 1-based line of an offset in `text`: counting the newlines before each of a
    runbook's thousand cells again was quadratic."""
    newlines = [m.start() for m in re.finditer("\n", text)]
    return lambda offset: bisect.bisect_left(newlines, offset) + 1


def _too_many_cells(
    text: str, fences: list[re.Match[str]], line_at: Callable[[int], int], display: str
) -> Problem | None:
    """One line when the runbook holds more than MAX_CELLS cells (code fences and `+++`)."""
    breaks = list(MARKDOWN_BREAK.finditer(text))
    if len(fences) + len(breaks) <= MAX_CELLS:
        return None
    starts = sorted(m.start() for m in [*fences, *breaks])
    return Problem(
        display,
        line_at(starts[MAX_CELLS]),
        f"{len(starts)} cells; at most {MAX_CELLS} in one runbook (split it into several)",
    )


def _unsafe_yaml(
    text: str, display: str, fences: list[re.Match[str]], line_at: Callable[[int], int]
) -> list[Problem]:
    """Aliases, bombs and forbidden characters in the front matter and cell options."""
    regions = []
    front = FRONT_MATTER.match(text)
    if front:
        regions.append((front.group(1), 2))
    for n, fence in enumerate(fences):
        end = text.find("\n", fence.end())
        # a cell's options lie inside it: an unclosed `---` block is not looked for past
        # the next cell (each search to the end of the file was quadratic)
        stop = fences[n + 1].start() if n + 1 < len(fences) else len(text)
        options = CELL_OPTIONS.match(text, end, stop) if 0 <= end < stop else None
        if options:
            block = options.group(1)
            body = "\n".join(
                line[1:] if line.startswith(":") else line
                for line in block.splitlines()
                if line.strip() != "---"
            )
            line = line_at(end) + 1 + (1 if block.startswith("---") else 0)
            regions.append((body, line))
    found = [refusal(body, display, first_line=line) for body, line in regions]
    return [p for p in found if p is not None]


def _unclosed_fences(
    text: str, display: str, fences: list[re.Match[str]], line_at: Callable[[int], int]
) -> list[Problem]:
    """A code cell whose fence is never closed swallows the rest of the file into one step:
    one whose character, at least as long, closes no line after it. One pass from the end,
    keeping the longest closing run of each character seen (a search per cell was
    quadratic)."""
    closers = [(m.start(), m.group(1)) for m in FENCE_CLOSE.finditer(text)]
    longest = {"`": 0, "~": 0}
    out = []
    at = len(closers)
    for fence in reversed(fences):
        opener = fence.group(1)
        start = text.find("\n", fence.end())
        while at > 0 and start >= 0 and closers[at - 1][0] > start:
            at -= 1
            char, length = closers[at][1][0], len(closers[at][1])
            longest[char] = max(longest[char], length)
        if start < 0 or longest[opener[0]] < len(opener):
            line = line_at(fence.start())
            out.append(Problem(display, line, f"code cell fence {opener} is never closed"))
    return out[::-1]


def _key_line(text: str, key: str) -> int:
    """The line of a top-level front-matter key (1 when absent)."""
    front = FRONT_MATTER.match(text)
    found = re.search(rf"^{key}:", front.group(1), re.MULTILINE) if front else None
    return front.group(1).count("\n", 0, found.start()) + 2 if front and found else 1


def _first_heading(notebook: Any) -> str | None:
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for text_line in cell.source.splitlines():
                if text_line.startswith("# "):
                    return text_line[2:].strip()
    return None


def _display(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            pass
    return path.as_posix()


def select_steps(
    runbook: Runbook,
    *,
    only: list[str] | None = None,
    start: str | None = None,
    until: str | None = None,
    after: str | None = None,
) -> list[Step]:
    """The steps a run executes, in order; setup steps before the range are kept.

    `only` (--step, repeatable) wins; otherwise the range [start, until], or the steps after
    `after` (--resume). Setup steps that come before a chosen step run too, so the kernel
    holds the variables later steps expect.
    """
    names = [s.name for s in runbook.steps]
    for ref in [*(only or []), start, until, after]:
        if ref is not None:
            runbook.step(ref)  # raises a UsageError naming the known steps
    if only:
        chosen = set(only)
    else:
        lo = names.index(start) if start else 0
        if after is not None:
            lo = max(lo, names.index(after) + 1)
        hi = names.index(until) if until else len(names) - 1
        if lo > hi and after is None:
            raise UsageError(f"--from {start} comes after --until {until}")
        chosen = {n for i, n in enumerate(names) if lo <= i <= hi}
    last = max((names.index(n) for n in chosen), default=-1)
    return [s for i, s in enumerate(runbook.steps) if s.name in chosen or (s.setup and i < last)]
