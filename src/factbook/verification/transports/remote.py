"""The command a box runs for every transport: a shell line that starts the supervisor.

Every transport that reaches a box through a command line (paramiko's exec channel, the
system `ssh`, `docker exec`, `pct exec`, `srun`) runs the same thing there: `sh -c SCRIPT`,
where SCRIPT finds a fast Python and execs the supervisor (supervisor.py) with the agent's
argv, and the supervisor's stdin gets the target's env and then the agent script (supervised()
returns both). Only this module turns target fields into shell text, and every word is quoted;
no env value is ever part of it.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from factbook.errors import InputError
from factbook.knowledge.names import check_name

SUPERVISOR = (Path(__file__).with_name("supervisor.py")).read_text()
FAST_PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3")


def remote_command(
    argv: list[str], stdin: bytes, env: dict[str, str], python: str | None = None
) -> tuple[str, bytes]:
    """(the shell line sshd runs, what its stdin gets): see supervised()."""
    words, payload = supervised(argv, stdin, env, python)
    return shell_join(words), payload


def supervised(
    argv: list[str],
    stdin: bytes,
    env: dict[str, str],
    python: str | None = None,
    *,
    preamble: str = "",
) -> tuple[list[str], bytes]:
    """(`["sh", "-c", SCRIPT]`, payload): argv run behind the supervisor, which reads the
    payload from its stdin: the env block, then `stdin` (the agent script) for argv.

    The env values travel in the payload, never on a command line: a `K=V` word would be
    visible in `ps` on the box (and here, in the argv of ssh, docker exec or srun), in audit
    logs, and in Slurm's record of the job. Only the two sizes are words of the script. Keys
    are still checked (check_name): the supervisor refuses any other.

    The supervisor needs any Python >= 3.6, and it starts on every run: a system python3 starts
    in ~20 ms where a pyenv shim takes ~0.27 s (measured here), so the system ones are tried
    first, then argv[0] when it is a python, the target's `python`, and python3 from PATH.
    Every word is quoted; `~/` stays expandable.
    """
    block = env_block(env)
    candidates = list(FAST_PYTHONS)
    if os.path.basename(argv[0]).startswith("python"):
        candidates.append(argv[0])
    candidates += [python] if python else []
    candidates.append("python3")
    words = ["exec", '"$p"', "-c", '"$s"', str(len(block)), str(len(stdin))]
    words += [_quote(a) for a in argv]
    script = (
        (f"{preamble}; " if preamble else "")
        + f"s={shlex.quote(SUPERVISOR)}; "
        + f"for p in {' '.join(_quote(c) for c in dict.fromkeys(candidates))}; do "
        + f'if command -v "$p" >/dev/null 2>&1; then {" ".join(words)}; fi; done; '
        + 'echo "factbook: no python3 on the box" >&2; exit 127'
    )
    return ["sh", "-c", script], block + stdin


def env_block(env: dict[str, str]) -> bytes:
    """The env as the supervisor reads it: JSON (ASCII), {key: value}, keys checked. A value
    no environment can hold (a NUL) is refused here, naming the key, never the value."""
    pairs = {check_name("env key", k): str(v) for k, v in env.items()}
    for key, value in pairs.items():
        if "\0" in value:
            raise InputError(f"env {key}: a value with a NUL byte cannot be set")
    return json.dumps(pairs).encode("ascii")


def shell_join(argv: list[str]) -> str:
    """argv as one shell line, every word quoted (a `~/` prefix stays expandable)."""
    return " ".join(_quote(a) for a in argv)


def _quote(word: str) -> str:
    """shlex.quote, but `~/x` keeps its tilde outside the quotes so the box's shell expands it."""
    if word.startswith("~/"):
        return "~/" + shlex.quote(word[2:])
    return shlex.quote(word)
