"""The command a box runs for every transport: a shell line that starts the supervisor.

Every transport that reaches a box through a command line (paramiko's exec channel, the
system `ssh`, `docker exec`, `pct exec`, `srun`) runs the same thing there: `sh -c SCRIPT`,
where SCRIPT finds a fast Python and execs the supervisor (supervisor.py) with the agent's
argv. Only this module turns target fields into shell text, and every word is quoted.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from factbook.knowledge.names import check_name

SUPERVISOR = (Path(__file__).with_name("supervisor.py")).read_text()
FAST_PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3")


def remote_command(
    argv: list[str], stdin_size: int, env: dict[str, str], python: str | None = None
) -> str:
    """The shell command sshd runs: `sh -c '... exec env K=V PY -c SUPERVISOR N ARGV...'`."""
    return shell_join(supervised_argv(argv, stdin_size, env, python))


def supervised_argv(
    argv: list[str],
    stdin_size: int,
    env: dict[str, str],
    python: str | None = None,
    *,
    preamble: str = "",
) -> list[str]:
    """`["sh", "-c", SCRIPT]`: argv run behind the supervisor, fed the first N stdin bytes.

    The supervisor needs any Python >= 3.6, and it starts on every run: a system python3 starts
    in ~20 ms where a pyenv shim takes ~0.27 s (measured here), so the system ones are tried
    first, then argv[0] when it is a python, the target's `python`, and python3 from PATH.
    Every word is quoted; `~/` stays expandable.
    """
    candidates = list(FAST_PYTHONS)
    if os.path.basename(argv[0]).startswith("python"):
        candidates.append(argv[0])
    candidates += [python] if python else []
    candidates.append("python3")
    pairs = [shlex.quote(f"{check_name('env key', k)}={v}") for k, v in env.items()]
    words = ["exec", "env", "--", *pairs, '"$p"']  # `--`: no key is ever read as an option
    words += ["-c", '"$s"', str(stdin_size), *(_quote(a) for a in argv)]
    script = (
        (f"{preamble}; " if preamble else "")
        + f"s={shlex.quote(SUPERVISOR)}; "
        + f"for p in {' '.join(_quote(c) for c in dict.fromkeys(candidates))}; do "
        + f'if command -v "$p" >/dev/null 2>&1; then {" ".join(words)}; fi; done; '
        + 'echo "factbook: no python3 on the box" >&2; exit 127'
    )
    return ["sh", "-c", script]


def shell_join(argv: list[str]) -> str:
    """argv as one shell line, every word quoted (a `~/` prefix stays expandable)."""
    return " ".join(_quote(a) for a in argv)


def _quote(word: str) -> str:
    """shlex.quote, but `~/x` keeps its tilde outside the quotes so the box's shell expands it."""
    if word.startswith("~/"):
        return "~/" + shlex.quote(word[2:])
    return shlex.quote(word)
