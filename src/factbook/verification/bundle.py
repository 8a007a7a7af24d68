"""Build the one script a target runs: the agent, the probe modules it needs, and the calls.

The script goes to `PYTHON -` on stdin, so nothing is installed on the box. Only the probe
modules a batch uses are included; a knowledge base's checks/*.py travel the same way.
Identical calls (same probe, same arguments) are merged, so torch is imported once per batch
however many facts read `torch.info`.

Measurement probes (every probe named `measure.*`, built-in or in checks/) are exclusive: the
agent runs them after the other calls, one at a time, never beside anything else, so one
measurement's load never skews another's figure.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from factbook.probes.catalog import builtin_catalog
from factbook.probes.scan import custom_modules, scan_source

_PACKAGE = Path(__file__).resolve().parent.parent
DEFAULT_TIMEOUT = 60.0
SLOW_FIRST = frozenset({"torch.info", "process.gpu_holders", "file.sha256", "file.size"})
EXCLUSIVE_PREFIX = "measure."


def is_exclusive(probe: str) -> bool:
    """Whether a probe measures (and so runs alone, after the quick checks)."""
    return probe.startswith(EXCLUSIVE_PREFIX)


@dataclass
class Call:
    """One probe invocation on the box, shared by every check with the same probe and args."""

    id: str
    probe: str
    args: dict[str, Any]
    timeout: float
    keys: list[str] = field(default_factory=list)  # the checks answered by this call

    @property
    def exclusive(self) -> bool:
        return is_exclusive(self.probe)

    def to_wire(self) -> dict[str, Any]:
        wire = {"id": self.id, "probe": self.probe, "args": self.args, "timeout": self.timeout}
        if self.exclusive:
            wire["exclusive"] = True
        return wire


@cache
def _source(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def builtin_index() -> dict[str, str]:
    """Built-in probe name -> the module that implements it."""
    return builtin_catalog().modules


def custom_probe_files(checks_dir: Path) -> dict[str, Path]:
    """Custom probe name -> the checks/*.py file declaring it in PROBES (later files win).

    Every declared name counts, even one lint rejects: the box reports the real failure.
    """
    return {
        name: path
        for path in custom_modules(checks_dir)
        for name in scan_source(_source(path), path.name).declared
    }


def merge_calls(
    checks: list[tuple[str, str, dict[str, Any], float | None]],
    memo: dict[int, tuple[Any, str, str]] | None = None,
) -> list[Call]:
    """(key, probe, args, timeout) per check -> one Call per distinct (probe, args).

    `memo` (kept by the caller across targets) remembers each args object's signature: a
    fleet's targets share their facts' args, so each is written as JSON once per run."""
    calls: dict[str, Call] = {}
    for key, probe, args, timeout in checks:
        known = memo.get(id(args)) if memo is not None else None
        if known is not None and known[0] is args and known[1] == probe:
            signature = known[2]
        else:
            signature = json.dumps([probe, args], sort_keys=True, default=str)
            if memo is not None:
                memo[id(args)] = (args, probe, signature)
        call = calls.get(signature)
        limit = float(timeout or DEFAULT_TIMEOUT)
        if call is None:
            call = calls[signature] = Call(f"c{len(calls)}", probe, args, limit)
        call.timeout = max(call.timeout, limit)
        call.keys.append(key)
    return list(calls.values())


def build_script(
    calls: list[Call], *, jobs: int = 16, checks_dir: Path | None = None, nonce: str = ""
) -> str:
    """The complete agent script for one target and one batch of calls; every line the agent
    writes carries `nonce`, so the client can tell the agent's lines from anything else."""
    needed = {c.probe for c in calls}
    custom = custom_probe_files(checks_dir) if checks_dir else {}
    index = builtin_index()
    modules = tuple(sorted({index[p] for p in needed if p in index}))
    files = tuple(sorted({custom[p] for p in needed if p in custom}))
    # Slow starters first, so they overlap everything else (torch + CUDA init take ~4 s);
    # measurements last, in the order asked.
    ordered = sorted(calls, key=lambda c: (c.exclusive, c.probe not in SLOW_FIRST))
    batch = {"jobs": jobs, "nonce": nonce, "calls": [c.to_wire() for c in ordered]}
    # The bootstrap parses on any Python (ASCII only, no f-strings), so an old interpreter on
    # the box fails with a clear message instead of a SyntaxError about the agent's source.
    return BOOTSTRAP % (_payload(modules, files), ascii(json.dumps(batch, default=str)))


@cache
def _payload(modules: tuple[str, ...], files: tuple[Path, ...]) -> str:
    """The agent, its shared modules and these probe modules, encoded once per process: every
    target of a fleet run with the same probes ships the same text (only the calls differ)."""
    sources = {f"factbook/probes/{m}.py": _source(_PACKAGE / "probes" / f"{m}.py") for m in modules}
    sources.update({f"checks/{path.name}": _source(path) for path in files})
    payload = {
        "agent": _source(_PACKAGE / "verification" / "agent.py"),
        "shared": {
            "factbook.probes.common": _source(_PACKAGE / "probes" / "common.py"),
            "factbook.verification.transports.supervisor": _source(
                _PACKAGE / "verification" / "transports" / "supervisor.py"
            ),
        },
        "sources": sources,
    }
    return ascii(json.dumps(payload))


# `python3 -` puts the working folder first on sys.path: a json.py lying there (the knowledge
# base, when factbook runs inside it; a home folder on the box) would be imported as the
# agent's own. It goes before the first import that is not built in.
BOOTSTRAP = """\
import sys
if sys.path and sys.path[0] in ("", "."):
    del sys.path[0]
import json
if sys.version_info < (3, 7):
    sys.stderr.write("factbook: the agent needs Python 3.7+ on the target; %%s is %%s\\n"
                     %% (sys.executable, sys.version.split()[0]))
    sys.exit(3)
PAYLOAD = json.loads(%s)
BATCH = json.loads(%s)
scope = {"__name__": "factbook_agent"}
exec(compile(PAYLOAD["agent"], "factbook/verification/agent.py", "exec"), scope)
scope["main"](PAYLOAD["sources"], BATCH, PAYLOAD["shared"])
"""


def agent_argv(python: str | None) -> list[str]:
    """`sh -c` that execs the target's python (`~` expanded there), falling back to python3."""
    if not python:
        return ["python3", "-"]
    if python.startswith("~/"):
        chosen = '"$HOME"/' + shlex.quote(python[2:])
    else:
        chosen = shlex.quote(python)
    script = (
        f'p={chosen}; if ! command -v "$p" >/dev/null 2>&1; then '
        f'echo "factbook: $p not found on target; using python3" >&2; p=python3; fi; '
        'exec "$p" -'
    )
    return ["sh", "-c", script]
