"""The exceptions factbook raises, rooted in one CLI-friendly error.

    FactbookError                 exit 2 unless stated
    ├── InputError                the user's files are wrong (bad YAML, unknown key, ...)
    │   ├── LintFailed            several located problems at once
    │   ├── WritebackError        a fact file cannot be edited safely (flow style, clash)
    │   └── ResultsUnreadable     results/latest.json does not parse; never overwritten
    ├── UsageError                the command line is wrong (unknown id, milestone, target)
    ├── TargetError               exit 3: a box cannot be reached or refuses us
    │   ├── HostKeyError          unknown or changed host key
    │   ├── AuthError             authentication failed
    │   └── UnreachableError      DNS, refused, timeout while connecting
    ├── KernelDied                exit 4: a runbook's kernel died
    └── Interrupted               exit 130: Ctrl-C, state saved

`expectations.PathMissing` is not in this tree on purpose: it is internal to expectation
evaluation (a path into an observed value that is absent), always caught there and turned into
a drift with its reason, so it never reaches the user.

Errors of underlying libraries (yaml, paramiko, nbclient) are mapped to these at the boundary,
so the CLI prints one line per problem and never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2
EXIT_ERRORED = 3
EXIT_KERNEL_DIED = 4
EXIT_INTERRUPTED = 130


@dataclass(frozen=True, order=True)
class Problem:
    """One located problem in a user's file: rendered as `file:line: message`."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


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


class ResultsUnreadable(InputError):
    """results/latest.json exists but does not parse; it is never silently replaced."""


class UsageError(FactbookError):
    """The command line names something that does not exist or contradicts itself."""


class TargetError(FactbookError):
    """A target box cannot be used; the message names the host."""

    exit_code = EXIT_ERRORED


class HostKeyError(TargetError):
    """The host key is unknown or changed; never accepted silently."""


class AuthError(TargetError):
    """The box refused every credential offered."""


class UnreachableError(TargetError):
    """The box (or a jump host) cannot be reached."""


class KernelDied(FactbookError):
    """A runbook's kernel died during a step."""

    exit_code = EXIT_KERNEL_DIED


class Interrupted(FactbookError):
    """The user pressed Ctrl-C; state was saved."""

    exit_code = EXIT_INTERRUPTED
