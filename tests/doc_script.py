"""A docs page as a script: its `console` blocks run in one bash, its outputs compared.

Conventions (docs/getting-started.md states them to its readers):

- A ```console block holds `$ COMMAND` lines (a trailing backslash continues a command on the
  next line); the lines after a command, up to the next `$`, are its expected output.
- A fenced block with `title="PATH"` (```yaml title="facts/ours.yaml"```) is written to PATH
  (relative to the shell's current folder) when the script reaches it.
- In expected output, `...` inside a line matches any text; a line of only `...` matches any
  number of lines; runs of spaces count as one; trailing spaces are ignored.

Commands run in order in one `bash` (so `cd`, `export`, `. activate` and `cmd &` then
`kill $!` behave as in a terminal), stdout and stderr merged, stdin from /dev/null.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^```(\w*)([^\n]*)$")
TITLE = re.compile(r'title="([^"]+)"')


@dataclass
class Step:
    """A command with its expected output, or a file to write (`path` set)."""

    text: str
    line: int  # in the page, for messages
    expected: list[str] = field(default_factory=list)
    path: str | None = None


def parse(page: str) -> list[Step]:
    """The steps of a page, in order."""
    steps: list[Step] = []
    lines = page.splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match or not match.group(1):
            i += 1
            continue
        lang, info = match.group(1), match.group(2)
        start = i + 1
        end = next(j for j in range(start, len(lines)) if lines[j].startswith("```"))
        body = lines[start:end]
        title = TITLE.search(info)
        if title:
            steps.append(Step("\n".join(body) + "\n", start + 1, path=title.group(1)))
        elif lang == "console":
            steps += _console(body, start + 1)
        i = end + 1
    return steps


def _console(body: list[str], first_line: int) -> list[Step]:
    steps: list[Step] = []
    k = 0
    while k < len(body):
        line = body[k]
        if line.startswith("$ "):
            command, at = line[2:], first_line + k
            while command.endswith("\\") and k + 1 < len(body):
                k += 1
                command = command[:-1] + "\n" + body[k]
            steps.append(Step(command, at))
        elif steps:
            steps[-1].expected.append(line)
        else:
            raise ValueError(f"line {first_line + k}: output before any `$` command")
        k += 1
    return steps


def _norm(line: str) -> str:
    return re.sub(r"[ \t]+", " ", line).rstrip()


def expected_pattern(expected: list[str]) -> re.Pattern[str]:
    """The regex the normalized output must match in full."""
    parts = []
    for line in expected:
        line = _norm(line)
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in line.split("...")) + r"\n")
    return re.compile("".join(parts), re.DOTALL)


def matches(expected: list[str], output: str) -> bool:
    text = "".join(_norm(line) + "\n" for line in output.splitlines())
    return expected_pattern(expected).fullmatch(text) is not None


@dataclass
class Ran:
    step: Step
    output: str
    seconds: float


class Shell:
    """One bash process fed a command at a time; each answer read up to a unique marker."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.mark = f"__fbdoc_{uuid.uuid4().hex}__"
        self.cwd = cwd
        self.proc = subprocess.Popen(
            ["bash", "--norc", "--noprofile"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,  # its process group: close() ends whatever it left
        )
        self._buf = b""

    def run(self, command: str, timeout: float) -> str:
        """Run `command`; its output (stdout and stderr merged)."""
        assert self.proc.stdin is not None
        script = f"{{ {command}\n}} </dev/null 2>&1\nprintf '\\n{self.mark}\\n'\n"
        self.proc.stdin.write(script.encode())
        self.proc.stdin.flush()
        end = f"\n{self.mark}\n".encode()
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while end not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer within {timeout:g} s; so far: {self._buf[-2000:]!r}")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise RuntimeError(f"bash ended; output: {self._buf[-2000:]!r}")
                self._buf += chunk
        out, _, self._buf = self._buf.partition(end)
        return out.decode(errors="replace")

    def write_file(self, rel: str, text: str) -> None:
        """Write a file relative to the shell's current folder (asked of the shell itself)."""
        here = Path(self.run("pwd", 30).strip())
        path = here / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def run_page(
    steps: list[Step],
    shell: Shell,
    *,
    timeout: float = 300,
    rewrite: Callable[[str], str] = lambda s: s,
    drop: re.Pattern[str] | None = None,
) -> list[Ran]:
    """Run every step; `rewrite` adapts a command (a free port for a fixed one), `drop` removes
    output lines that come from the test machine rather than the page (pip's own warnings)."""
    done = []
    for step in steps:
        started = time.monotonic()
        if step.path is not None:
            shell.write_file(step.path, step.text)
            output = ""
        else:
            output = shell.run(rewrite(step.text), timeout)
            if drop is not None:
                output = "".join(
                    line for line in output.splitlines(keepends=True) if not drop.search(line)
                )
        done.append(Ran(step, output, time.monotonic() - started))
        if step.path is None and not matches(step.expected, output):
            raise Mismatch(step, output)
    return done


class Mismatch(AssertionError):
    """A command printed something else than its page shows."""

    def __init__(self, step: Step, output: str) -> None:
        super().__init__(
            f"line {step.line}: `{step.text}` printed\n{output}\nthe page shows\n"
            + "\n".join(step.expected)
        )


# this machine's pip configuration, not the page: an extra index that lacks some projects
PIP_NOISE = re.compile(r"^WARNING: Location '.*' is ignored: it is neither a file nor a directory")


def login_env(wheel: Path) -> dict[str, str]:
    """A login-like environment: no venv on PATH, nothing of this repository importable, and
    $FACTBOOK naming the wheel the page installs. A developer's or agent's
    PYTHONDONTWRITEBYTECODE is dropped too: a new user's shell lets Python cache what it
    compiles, so a module imported by one command is not compiled again by the next."""
    base = Path(getattr(sys, "_base_executable", sys.executable)).parent
    drop = (
        "PYTHONPATH",
        "FACTBOOK_ROOT",
        "VIRTUAL_ENV",
        "NO_MKDOCS_2_WARNING",
        "PYTEST_ADDOPTS",
        "PYTHONDONTWRITEBYTECODE",
    )
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PYTEST_")}
    env["PATH"] = os.pathsep.join([str(base), "/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin"])
    env["FACTBOOK"] = str(wheel)
    env["LC_ALL"] = env["LANG"] = "C.UTF-8"
    env["COLUMNS"] = "80"  # pytest and the tables as the page shows them
    return env


@dataclass
class Day:
    """One run of a page: its steps as run, wall and CPU seconds (children of this process)."""

    ran: list[Ran]
    wall: float
    cpu: float

    def report(self) -> str:
        return "\n".join(
            f"{r.seconds:6.1f} s  {r.step.text.splitlines()[0][:90]}" for r in self.ran
        )


def run_first_day(page: Path, folder: Path, wheel: Path, port: int) -> Day:
    """Every step of `page` in an empty `folder`, as a new user would type them (the fixed
    port 9108 replaced by `port`); raises Mismatch on the first output unlike the page."""
    steps = parse(page.read_text(encoding="utf-8"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    shell = Shell(folder, login_env(wheel))
    try:
        ran = run_page(
            steps,
            shell,
            rewrite=lambda c: c.replace("127.0.0.1:9108", f"127.0.0.1:{port}"),
            drop=PIP_NOISE,
        )
    finally:
        shell.close()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Day(ran, time.monotonic() - started, cpu)
