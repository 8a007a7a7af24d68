"""What runbook cells import: facts in, commands and servers out, measurements back.

    from factbook.runbooks.api import fact, box, server, record

    model = fact("inv.model.kimi-k25-int4").get("path")      # never pasted by hand
    box.run(["nvidia-smi", "-L"], timeout=30, check=True)     # on the step's target
    server.start("sglang", argv, env=..., ready="http://127.0.0.1:8000/health", deadline=900)
    record("bench.sglang.nccl_tuned.single_stream", 91.2, unit="tok/s")

The executor starts the kernel with FACTBOOK_RUN_DIR (whose context.json names the knowledge
base, runbook, run id and default target) and tells this module which step runs before each
cell (`_begin_step`), so cells paste no paths and every record carries its provenance.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factbook.errors import FactbookError, UsageError
from factbook.judging.sanitize import for_terminal
from factbook.knowledge.kb import KnowledgeBase, load_kb
from factbook.knowledge.limits import split_words
from factbook.knowledge.model import Fact, Target
from factbook.knowledge.names import known_names
from factbook.runbooks import servers as _servers
from factbook.runbooks.remote import BoxClient, CommandResult

CONTEXT_ENV = "FACTBOOK_RUN_DIR"
CONTEXT_FILE = "context.json"
RECORDS_FILE = "records.jsonl"


@dataclass
class RunContext:
    """The run a kernel serves; written by the executor, read here."""

    root: str
    runbook: str
    run_id: str
    run_dir: str
    target: str | None
    step: str | None = None
    step_target: str | None = None
    step_records: list[str] = field(default_factory=list)

    def save(self) -> None:
        path = Path(self.run_dir) / CONTEXT_FILE
        fields = {k: getattr(self, k) for k in ("root", "runbook", "run_id", "run_dir", "target")}
        path.write_text(json.dumps(fields, indent=1), encoding="utf-8")

    @classmethod
    def load(cls, run_dir: str | Path) -> RunContext:
        data = json.loads((Path(run_dir) / CONTEXT_FILE).read_text(encoding="utf-8"))
        return cls(**data)


class _State:
    """Per-kernel state: the context, the knowledge base and open box connections."""

    def __init__(self) -> None:
        self._ctx: RunContext | None = None
        self._kb: KnowledgeBase | None = None
        self.boxes: dict[str, BoxClient] = {}

    @property
    def ctx(self) -> RunContext:
        if self._ctx is None:
            run_dir = os.environ.get(CONTEXT_ENV)
            if not run_dir:
                raise UsageError(
                    "not inside a `factbook run` kernel (no FACTBOOK_RUN_DIR); "
                    "call factbook.runbooks.api.use_context() first"
                )
            self._ctx = RunContext.load(run_dir)
        return self._ctx

    @property
    def kb(self) -> KnowledgeBase:
        if self._kb is None:
            self._kb = load_kb(self.ctx.root, strict=False)
        return self._kb


_STATE = _State()


def use_context(ctx: RunContext) -> None:
    """Bind this process to a run (the executor's setup, or a test without a kernel)."""
    _STATE._ctx = ctx
    _STATE._kb = None


def _begin_step(name: str, target: str | None, records: list[str]) -> None:
    """Called by the executor (hidden) before each step's cell."""
    ctx = _STATE.ctx
    ctx.step, ctx.step_target, ctx.step_records = name, target, list(records)


def context() -> RunContext:
    """The current run: root, runbook, run_id, run_dir, step, target."""
    return _STATE.ctx


# ---- facts ------------------------------------------------------------------------------


class FactView:
    """Read-only access to one fact: `.value`, `.unit`, `.get("path")` for category keys."""

    def __init__(self, fact: Fact):
        self._fact = fact

    id = property(lambda self: self._fact.id)
    value = property(lambda self: self._fact.value)
    unit = property(lambda self: self._fact.unit)
    status = property(lambda self: self._fact.status)
    statement = property(lambda self: self._fact.statement)

    @property
    def check_args(self) -> dict[str, Any]:
        """The arguments of the fact's check (a port, a URL, a path the check probes)."""
        return dict(self._fact.check.args) if self._fact.check else {}

    def get(self, key: str, default: Any = None) -> Any:
        """A category key (path, symptom, fix, config ...), `value`, or a key of a mapping value."""
        if key in ("value", "unit", "status", "statement", "title", "target"):
            return getattr(self._fact, key)
        if key in self._fact.extra:
            return self._fact.extra[key]
        if isinstance(self._fact.value, dict) and key in self._fact.value:
            return self._fact.value[key]
        if default is not None:
            return default
        raise KeyError(f"fact {self._fact.id} has no '{key}'")

    def __repr__(self) -> str:
        return f"<fact {self._fact.id} = {self._fact.value!r}>"


def fact(fact_id: str) -> FactView:
    """A fact of the run's knowledge base (as it is now, not as of a milestone)."""
    return FactView(_STATE.kb.get(fact_id))


def env_from(fact_id: str) -> dict[str, str]:
    """The `env` mapping of a fact's value (e.g. the NCCL tuning of sw.sglang.tuned_config)."""
    value = fact(fact_id).value
    env = value.get("env") if isinstance(value, dict) else None
    if not isinstance(env, dict):
        raise FactbookError(f"fact {fact_id}: value has no 'env' mapping")
    return {str(k): str(v) for k, v in env.items()}


def flags_from(fact_id: str) -> list[str]:
    """Command-line flags held by a fact: its value's `flags` list, or the value as a string."""
    value = fact(fact_id).value
    flags = value.get("flags") if isinstance(value, dict) else value
    try:
        if isinstance(flags, str):
            return split_words(flags)
        if isinstance(flags, list):
            return [part for item in flags for part in split_words(str(item))]
    except ValueError as exc:
        raise FactbookError(f"fact {fact_id}: flags cannot be split into words: {exc}") from None
    raise FactbookError(f"fact {fact_id}: value holds no flags")


# ---- the box ----------------------------------------------------------------------------


def _target_name(name: str | None) -> str:
    ctx = _STATE.ctx
    chosen = name or ctx.step_target or ctx.target
    if not chosen:
        raise UsageError("this step has no target: set `target:` in the runbook or the step")
    return chosen


def _client(name: str | None = None) -> BoxClient:
    chosen = _target_name(name)
    if chosen not in _STATE.boxes:
        targets: dict[str, Target] = _STATE.kb.targets
        if chosen not in targets:
            raise UsageError(f"unknown target '{chosen}' (known: {known_names(targets)})")
        _STATE.boxes[chosen] = BoxClient(targets[chosen], targets)
    return _STATE.boxes[chosen]


class _Box:
    """The step's target. `box.run(...)`; `box.on("kpro6").run(...)` for another box."""

    def __init__(self, name: str | None = None):
        self._name = name

    def on(self, name: str) -> _Box:
        return _Box(name)

    @property
    def name(self) -> str:
        return _target_name(self._name)

    @property
    def python(self) -> str:
        """The target's interpreter (targets.yaml `python`, e.g. ~/ml-env/bin/python3)."""
        return _client(self._name).target.python or "python3"

    def run(
        self,
        argv: list[str] | str,
        *,
        timeout: float = 600,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stdin: str | None = None,
        check: bool = False,
        quiet: bool = False,
    ) -> CommandResult:
        """Run a bounded command; output streams live; `check=True` raises on failure.

        A string is run by `sh -c` (for pipes); a list is run as is, never through a shell.
        """
        if isinstance(argv, str):
            argv = ["sh", "-c", argv]
        if not quiet:
            print(f"$ {shlex.join(str(a) for a in argv)}", flush=True)

        def show(stream: str, text: str) -> None:
            if not quiet:
                (sys.stderr if stream == "stderr" else sys.stdout).write(text)

        result = _client(self._name).run(
            argv, timeout=timeout, env=env, cwd=cwd, stdin=stdin, on_output=None if quiet else show
        )
        sys.stdout.flush()
        if check:
            result.check()
        return result

    def run_python(
        self,
        code: str,
        *,
        modules: list[str] = (),  # type: ignore[assignment]
        args: list[str] = (),  # type: ignore[assignment]
        timeout: float = 600,
        check: bool = True,
        quiet: bool = False,
    ) -> CommandResult:
        """Run Python `code` with the target's interpreter, with stdlib-only factbook modules.

        `modules` (e.g. ["factbook.serving.benchclient"]) are shipped with the code, as a
        package tree in a temp folder on the box removed afterwards, so a step can run
        factbook's own client on the box where the server listens on 127.0.0.1.
        """
        script = ship_script(code, list(modules))
        return self.run(
            [self.python, "-", *args], stdin=script, timeout=timeout, check=check, quiet=quiet
        )


_SHIP_TEMPLATE = """\
import os, shutil, sys, tempfile
_root = tempfile.mkdtemp(prefix="factbook-mod-")
for _rel, _text in {sources!r}.items():
    _path = os.path.join(_root, _rel)
    os.makedirs(os.path.dirname(_path), exist_ok=True)
    with open(_path, "w", encoding="utf-8") as _handle:
        _handle.write(_text)
sys.path.insert(0, _root)
try:
    exec(compile({code!r}, "<step>", "exec"), {{"__name__": "__main__"}})
finally:
    shutil.rmtree(_root, ignore_errors=True)
"""


def ship_script(code: str, modules: list[str]) -> str:
    """A self-contained script: `modules`' sources (with empty package __init__ files) + code."""
    import importlib.util

    sources: dict[str, str] = {}
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            raise UsageError(f"cannot ship module '{name}': no Python source found")
        parts = name.split(".")
        for depth in range(1, len(parts)):
            sources.setdefault("/".join(parts[:depth]) + "/__init__.py", "")
        sources["/".join(parts) + ".py"] = Path(spec.origin).read_text(encoding="utf-8")
    return _SHIP_TEMPLATE.format(sources=sources, code=code)


class _Servers:
    """Managed background processes of this run (see factbook.runbooks.servers)."""

    def start(
        self,
        name: str,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        ready: int | str | dict[str, Any] | None = None,
        deadline: float = 300,
        keep: bool = False,
        target: str | None = None,
    ) -> _servers.ServerInfo:
        ctx = _STATE.ctx
        box_client = _client(target)
        print(
            f"starting server '{name}' on {box_client.name}: {shlex.join(map(str, argv))}",
            flush=True,
        )
        spec = _servers.ServerSpec(name, argv, env, cwd, ready, deadline, keep)
        info = _servers.start(
            box_client,
            spec,
            run_dir=Path(ctx.run_dir),
            runbook=ctx.runbook,
            run_id=ctx.run_id,
            step=ctx.step or "",
        )
        print(
            f"server '{name}' pid {info.pid}, log {info.log}"
            + (
                f", ready after {info.ready_after_s:.1f}s" if info.ready_after_s is not None else ""
            ),
            flush=True,
        )
        return info

    def stop(self, name: str, *, grace: float = 10) -> dict[str, Any]:
        ctx = _STATE.ctx
        for info in _servers.registered(Path(ctx.run_dir)):
            if info.name == name:
                return _servers.stop(
                    _client(info.target), info, run_dir=Path(ctx.run_dir), grace=grace
                )
        raise UsageError(f"no running server '{name}' in this run")

    def running(self) -> list[_servers.ServerInfo]:
        return _servers.registered(Path(_STATE.ctx.run_dir))


box = _Box()
server = _Servers()


# ---- measurements -----------------------------------------------------------------------


def record(
    fact_id: str,
    value: Any,
    *,
    unit: str | None = None,
    note: str | None = None,
    status: str = "verified",
    fields: dict[str, Any] | None = None,
) -> None:
    """Queue a measured value for fact `fact_id`; the executor writes it back with provenance.

    `fields` sets further keys of the fact (a benchmark's accept_len, config). Only ids
    declared in the step's `records:` are accepted, so a runbook's effect on the knowledge
    base is visible (and linted) before it runs.
    """
    ctx = _STATE.ctx
    if fact_id not in ctx.step_records:
        raise UsageError(
            f"step '{ctx.step}' records '{fact_id}' but does not declare it in "
            f"`records:` (declared: {', '.join(ctx.step_records) or 'none'})"
        )
    _STATE.kb.get(fact_id)  # an unknown id fails here, in the cell, not at write-back
    entry = {
        "fact": fact_id,
        "value": value,
        "unit": unit,
        "note": note,
        "status": status,
        "fields": fields or {},
        "step": ctx.step,
        "target": _target_name(None),
        "time": time.time(),
    }
    with (Path(ctx.run_dir) / RECORDS_FILE).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, default=str) + "\n")
    # the value is often a box's output: its ESC or bidi control reaches the terminal (and a
    # CI log) escaped, as the executor's own `wrote ...` line shows it; long ones clipped
    said = f"{value}{' ' + unit if unit else ''}"
    print(f"recorded {fact_id} = {for_terminal(said)}", flush=True)
