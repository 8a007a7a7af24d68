# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile knowledge bases (issue 25): reading one never runs its code, reads outside it,
hangs, or locks you out of it.

The corpus is a table. Each case: files planted over a small valid knowledge base, the
command, the exit code, a fragment its output must contain, the most RSS and seconds it may
take, and two properties checked for every case: no file outside the knowledge base changes
(and the content of a planted secret outside it never appears in any output), and no marker
file appears (a payload that ran would create it).

A case runs in-process (fast; a SIGALRM time limit and the growth of this process's peak RSS)
unless it is `isolated`: then it runs as `prlimit --as=... python -m factbook` with a
wall-clock limit and its own peak RSS, because what it checks (a hang, a memory bomb) must be
stopped from outside.
"""

from __future__ import annotations

import io
import os
import resource
import signal
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from factbook.commands.cli import run

SECRET = "s3cr3t-0f-the-0utside"  # the content of every file outside the knowledge base
BASE = {
    "milestones.yaml": 'milestones:\n  - {id: "1", title: first}\n',
    "targets.yaml": "targets:\n  here: {transport: local}\n  box: {host: box.invalid, user: root}\n",
    "facts/good.yaml": (
        "facts:\n  - id: hw.gpu.count\n    category: hardware\n    title: GPU count\n"
        "    statement: The box has 8 GPUs.\n    value: 8\n    status: verified\n"
        "    target: here\n    sources: [{seed: a.txt}]\n"
        "    check: {probe: env.var, args: {name: HOME}, expect: {exists: true}}\n"
    ),
}


@dataclass(frozen=True)
class Link:
    """A symbolic link to plant; `{out}` in `to` is the folder outside the knowledge base."""

    to: str


FIFO = Link("")

COMMANDS = {
    "lint": ["lint"],
    "list": ["list"],
    "show": ["show", "hw.gpu.count"],
    "status": ["status", "--out", "-"],
    "docs": ["docs", "--out", "_site_md"],
    "verify-dry": ["verify", "--dry-run"],
    "export-ansible": ["export-ansible", "--out", "-"],
}


@dataclass(frozen=True)
class Case:
    """One hostile input and what must come of it."""

    name: str
    files: dict[str, str | bytes | Link]
    command: str | list[str]  # a COMMANDS key, or argv after --root ({out}/{kb} expanded)
    code: int
    fragment: str
    max_rss_mb: int = 200
    max_s: float = 10.0
    isolated: bool = False
    env: dict[str, str] = field(default_factory=dict)


def tpl(payload: str) -> dict[str, str | bytes | Link]:
    """The status template replaced by `payload`."""
    return {"templates/status/status.md.j2": payload}


def macros(payload: str) -> dict[str, str | bytes | Link]:
    """Only `_macros.j2` overridden (in templates/, the less specific folder)."""
    return {
        "templates/_macros.j2": "{% macro line(item) %}"
        + payload
        + "{% endmacro %}{% macro items(list) %}{% for i in list %}{{ line(i) }}{% endfor %}{% endmacro %}{% macro progress(list, numbered=false) %}{{ items(list) }}{% endmacro %}"
    }


MARK = "{out}/MARKER"
# Known Jinja2 escapes: each would create MARK (or print Python internals) if it ran.
ESCAPES = {
    "cycler globals": "{{ cycler.__init__.__globals__.os.system('touch " + MARK + "') }}",
    "joiner globals": "{{ joiner.__init__.__globals__.os.popen('touch " + MARK + "').read() }}",
    "namespace globals": "{{ namespace.__init__.__globals__.os.system('touch " + MARK + "') }}",
    "lipsum globals": "{{ lipsum.__globals__['os'].system('touch " + MARK + "') }}",
    "range self": "{{ range.__self__.__import__('os').system('touch " + MARK + "') }}",
    "subclasses": "{% for c in ''.__class__.__mro__[1].__subclasses__() %}{% if c.__name__ == 'Popen' %}{{ c(['touch', '"
    + MARK
    + "']) }}{% endif %}{% endfor %}",
    "attr filter": "{{ ''|attr('__class__')|attr('__mro__') }}",
    "format string": "{{ '{0.__class__.__mro__[1].__subclasses__}'.format('') }}",
    "format_map": "{{ '{x.__class__}'.format_map({'x': 1}) }}",
    "percent format": "{{ '%(a)s' % {'a': cycler.__init__} }}",
    "list mutation": "{% set xs = [1] %}{{ xs.append(2) }}{{ xs }}",
    "dict mutation": "{% set d = {} %}{{ d.update(a=1) }}",
    "self context": "{{ self._TemplateReference__context.environment }}",
    "macro func globals": "{% macro m() %}{% endmacro %}{{ m._func.__globals__ }}",
    "loop internals": "{% for i in [1] %}{{ loop.__class__.__init__.__globals__ }}{% endfor %}",
    "getitem dunder": "{{ cycler['__init__']['__globals__'] }}",
    "power bomb": "{{ 99999 ** 9999999 }}",
    "repeat bomb": "{{ 'x' * 10000000000 }}",
    "self include": "{% include 'status.md.j2' %}",
}
# fmt: off
CASES: list[Case] = [
    *[Case(f"status.md.j2 {n}", tpl(p), "status", 2, "status template:") for n, p in ESCAPES.items()],
    *[Case(f"_macros.j2 {n}", macros(p), "status", 2, "status template:") for n, p in ESCAPES.items() if n != "self include"],
    Case("status.md.j2 nested loop", tpl("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"), "status", 2, "rendering took longer than", env={"FACTBOOK_TEMPLATE_SECONDS": "1"}),
    Case("status.md.j2 output bomb", tpl("{% for i in range(100000) %}{{ 'x' * 1000000 }}{% endfor %}"), "status", 2, "grew beyond", max_rss_mb=400, isolated=True),
    Case("status.md.j2 benign", tpl("{% for f in [1, 2] %}{{ f * 2 }}{% endfor %} {{ '%s' % 'ok' }}"), "status", 0, "24 ok"),
]
# fmt: on


def plant(root: Path, out: Path, files: dict[str, str | bytes | Link]) -> None:
    """The base knowledge base with `files` planted over it; `{out}` -> the outside folder."""
    for rel, content in {**BASE, **files}.items():
        path = root / rel
        for parent in path.parents:
            if parent.is_file() or parent.is_symlink():
                parent.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.is_file():
            path.unlink()
        if isinstance(content, Link):
            if content is FIFO:
                os.mkfifo(path)
            else:
                path.symlink_to(content.to.replace("{out}", str(out)))
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content.replace("{out}", str(out)), encoding="utf-8")


def outside_tree(out: Path) -> dict[str, tuple[int, int]]:
    """Every file outside the knowledge base: (size, mtime_ns)."""
    found = {}
    for path in out.rglob("*"):
        if path.is_file() and not path.is_symlink():
            st = path.stat()
            found[str(path)] = (st.st_size, st.st_mtime_ns)
    return found


def make_outside(out: Path) -> None:
    """Secrets a hostile knowledge base would like to read: a shadow file, an environ."""
    out.mkdir(parents=True)
    (out / "shadow").write_text(f"root:{SECRET}:19000:0:99999:7:::\n")
    (out / "environ").write_bytes(f"AWS_SECRET={SECRET}\0HOME=/root\0".encode())
    (out / "facts").mkdir()
    (out / "facts" / "x.yaml").write_text(f"facts: [{{id: {SECRET}}}]\n")
    (out / "inventory.ini").write_text(f"[{SECRET}]\nroot:{SECRET}\n")
    (out / "ssh_config").write_text(f"{SECRET} yes\nHost {SECRET}\n")
    (out / "latest.json").write_text('{"' + SECRET + '": 1}')


def argv_for(case: Case, root: Path, out: Path) -> list[str]:
    argv = COMMANDS[case.command] if isinstance(case.command, str) else case.command
    return [a.replace("{out}", str(out)).replace("{kb}", str(root)) for a in argv]


class _Alarm(Exception):
    pass


def _in_process(argv: list[str], seconds: float) -> tuple[int, str, float]:
    """The CLI run here under a SIGALRM limit; (exit code, output, peak RSS growth in MB)."""

    def ring(signum: int, frame: object) -> None:
        raise _Alarm

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = run(argv)
            except SystemExit as exc:
                code = int(exc.code or 0)
    except _Alarm:
        code = -1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    return code, out.getvalue() + err.getvalue(), grown


MEASURE = (
    "import resource, sys\n"
    "from factbook.commands.cli import run\n"
    "code = run(sys.argv[1:])\n"
    "sys.stdout.flush()\n"
    "print('\\nmaxrss_kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _isolated(argv: list[str], case: Case, cwd: Path) -> tuple[int, str, float]:
    """The CLI in a child under prlimit (address space) and a wall-clock limit."""
    limit = (case.max_rss_mb + 400) << 20  # address space > RSS: the interpreter maps more
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **case.env}
    cmd = ["prlimit", f"--as={limit}", sys.executable, "-c", MEASURE, *argv]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=case.max_s, env=env, cwd=cwd
        )
    except subprocess.TimeoutExpired:
        return -1, "timed out", 0.0
    output = proc.stdout + proc.stderr
    rss = 0.0
    if "maxrss_kb" in output:
        output, tail = output.rsplit("maxrss_kb", 1)
        rss = int(tail.split()[0]) / 1024
    return proc.returncode, output, rss


def run_case(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Plant, run, and check every property of `case`; the output."""
    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, case.files)
    before = outside_tree(out)
    argv = ["--root", str(root), *argv_for(case, root, out)]
    if case.isolated:
        code, output, rss = _isolated(argv, case, root)
    else:
        for key, value in case.env.items():
            monkeypatch.setenv(key, value)
        monkeypatch.chdir(root)
        code, output, rss = _in_process(argv, case.max_s)
    assert code != -1, f"{case.name}: still running after {case.max_s} s"
    assert "Traceback" not in output, output[-3000:]
    assert code == case.code, (code, output[-3000:])
    assert case.fragment in output, output[-3000:]
    assert SECRET not in output, output[-3000:]
    assert rss <= case.max_rss_mb, f"{case.name}: {rss:.0f} MB > {case.max_rss_mb} MB"
    assert not (out / "MARKER").exists(), f"{case.name}: the payload ran"
    assert outside_tree(out) == before, f"{case.name}: a file outside the knowledge base changed"
    return output


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_knowledge_base(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_corpus_is_large_and_named_once() -> None:
    assert len(CASES) >= 100
    assert len({c.name for c in CASES}) == len(CASES)
