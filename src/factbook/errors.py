"""The exceptions factbook raises, rooted in one CLI-friendly error.

    FactbookError                 exit 2 unless stated
    ├── InputError                the user's files are wrong (bad YAML, unknown key, ...)
    │   ├── LintFailed            several located problems at once
    │   │   └── ResultsUnreadable results/latest.json unreadable; never overwritten
    │   ├── WritebackError        a fact file cannot be edited safely (flow style, clash)
    │   └── LaunchRefused         an SGLang launch the linter is sure is wrong (not started)
    ├── WriteFailed               a file could not be saved (disk full, read-only); old kept
    ├── ResultsTooLarge           a run's results would not fit what factbook reads back
    ├── UsageError                the command line is wrong (unknown id, milestone, target)
    │   └── MissingDependency     an optional module (torch, safetensors, ...) is not installed
    ├── TargetError               exit 3: a box cannot be reached or refuses us
    │   ├── HostKeyError          unknown or changed host key
    │   ├── AuthError             authentication failed
    │   ├── UnreachableError      DNS, refused, timeout while connecting
    │   └── WrongTarget           the box is not the target it is named as (its identity)
    ├── BenchError                exit 3: a server could not be benchmarked
    ├── ServerNotReady            exit 1: a managed server died or missed its readiness deadline
    ├── CommandFailed             exit 1: a step's command failed (also a RuntimeError)
    ├── KernelDied                exit 4: a runbook's kernel died
    └── Interrupted               exit 130: Ctrl-C, state saved

`expectations.PathMissing` is not in this tree on purpose: it is internal to expectation
evaluation (a path into an observed value that is absent), always caught there and turned into
a drift with its reason, so it never reaches the user.

Errors of underlying libraries (yaml, paramiko, nbclient) are mapped to these at the boundary,
so the CLI prints one line per problem and never a traceback.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2
EXIT_ERRORED = 3
EXIT_KERNEL_DIED = 4
EXIT_INTERRUPTED = 130


# Characters no reader sees: zero-width spaces and joiners, the word joiner and invisible
# operators, the BOM, the soft hyphen, fillers that render as nothing, and the tag block
# (U+E0000..E007F, ASCII spelled invisibly: text a person reviewing a fact or an MCP answer
# never sees but a model reads). Round 21: lint passed them and every output printed them raw.
INVISIBLE_CHARS = (
    "\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200d\u2060-\u2064"
    "\u206a-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb\U0001d173-\U0001d17a\U000e0000-\U000e007f"
)
# Control characters, line breaks, bidirectional overrides and invisible characters: in a
# file name or a message they would start a new line (a GitHub Actions `::error` command of
# their own), repaint a terminal, reorder what it shows or hide text. Every message names
# them escaped instead.
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff\ufffe\uffff" + INVISIBLE_CHARS + "]"
)
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def visible(text: str, *, keep: str = "") -> str:
    """`text` with every control, line-break and bidi character shown escaped (`\\n`, `\\x1b`),
    except those in `keep` (a format that escapes them its own way)."""

    def escape(m: re.Match[str]) -> str:
        char = m.group()
        return char if char in keep else escaped(char)

    return _UNSAFE.sub(escape, text)


def escaped(char: str) -> str:
    """One character as Python would escape it in a string: `\\n`, `\\x1b`, `\\u202e`,
    `\\U000e0069` (a tag character, astral). Every escaping writer shows them so."""
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code > 0xFFFF:
        return f"\\U{code:08x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def warn(message: str) -> None:
    """One `warning:` line on stderr, shown as `visible` shows it: a warning names a file of
    the knowledge base, and `docs` printed `docs/a<newline>::error file=x::...md` raw, a
    GitHub Actions workflow command of its own (round 21). Every warning goes through here."""
    print(f"warning: {visible(message)}", file=sys.stderr)


@dataclass(frozen=True, order=True)
class Problem:
    """One located problem in a user's file: rendered as `file:line: message`, one line
    whatever the file name or message contains."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{visible(self.file)}:{self.line}: {visible(self.message)}"


class FactbookError(Exception):
    """Base of every error the CLI reports as a message and an exit code."""

    exit_code = EXIT_INVALID


class InputError(FactbookError):
    """A user's file is invalid."""


class LintFailed(InputError):
    """One or more located problems; all of them, not only the first."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class WritebackError(InputError):
    """A fact file cannot be edited safely (flow-style fact, unparsable file, id clash)."""


class ResultsUnreadable(LintFailed):
    """results/latest.json exists but cannot be read as results (not UTF-8, not JSON, a merge
    conflict, the wrong shape); it is never silently replaced. Each problem names its line."""

    ADVICE = (
        "fix it (git checkout / resolve the conflict) or delete it to start afresh "
        "(results/runs/ keeps every run); not overwritten"
    )

    def __init__(self, problems: list[Problem]):
        super().__init__([Problem(p.file, p.line, f"{p.message}; {self.ADVICE}") for p in problems])


class LaunchRefused(InputError):
    """A launch command has errors the linter is sure of; it is not started."""


class WriteFailed(FactbookError):
    """A file could not be written (a full disk, a read-only folder, a file size limit); the
    file it was to replace is unchanged and no temp file is left."""


class ResultsTooLarge(FactbookError):
    """A run's results would exceed what factbook reads back (limits.py) even with every
    value as a short preview; refused before anything is written, old files kept."""


class UsageError(FactbookError):
    """The command line names something that does not exist or contradicts itself."""


class MissingDependency(UsageError):
    """An optional module (torch, safetensors, transformers) is not installed."""


class TargetError(FactbookError):
    """A target box cannot be used; the message names the host."""

    exit_code = EXIT_ERRORED


class HostKeyError(TargetError):
    """The host key is unknown or changed; never accepted silently."""


class AuthError(TargetError):
    """The box refused every credential offered."""


class UnreachableError(TargetError):
    """The box (or a jump host) cannot be reached."""


class WrongTarget(TargetError):
    """The machine reached is not the target named: its declared identity did not match, so
    nothing ran and nothing was written to results/."""


class BenchError(FactbookError):
    """The server could not be benchmarked (unreachable, every request failed)."""

    exit_code = EXIT_ERRORED


class ServerNotReady(FactbookError):
    """A managed server exited or missed its readiness deadline (it was torn down)."""

    exit_code = EXIT_FAILED


class CommandFailed(FactbookError, RuntimeError):
    """A command a step needed returned non-zero or timed out; the step fails with its stderr.

    Still a RuntimeError, as it was before it joined this tree: cells that catch RuntimeError
    around `box.run(...).check()` keep working. `result` is a runbooks.remote.CommandResult.
    """

    exit_code = EXIT_FAILED

    def __init__(self, result: Any):
        self.result = result
        why = "timed out" if result.timed_out else f"exit {result.rc}"
        tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
        super().__init__(
            f"{result.argv[0]} on {result.target}: {why}" + ("\n" + "\n".join(tail) if tail else "")
        )


class KernelDied(FactbookError):
    """A runbook's kernel died during a step."""

    exit_code = EXIT_KERNEL_DIED


class Interrupted(FactbookError):
    """The user pressed Ctrl-C; state was saved."""

    exit_code = EXIT_INTERRUPTED
