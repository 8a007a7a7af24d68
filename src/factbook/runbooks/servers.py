"""Managed background servers: started in their own session, probed, always torn down.

A cell never runs `nohup ... &`: `server.start()` spawns the process on the box in a new
session (so pid == process group), writes its log and a pid file, waits for a readiness probe
with a deadline (failing fast, with the log tail, when the process dies first), and appends the
server to the run's registry (`servers.jsonl` in the run folder). The executor, not the
kernel, tears every registered server down at the end of the run, on failure, on Ctrl-C and
when the kernel died, so a crash of the kernel leaves no orphan behind. `keep=True` servers
outlive a successful run (their pid file and log are named in the run record) and are torn
down like the others when the run fails.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from factbook.errors import FactbookError, ServerNotReady, TargetError
from factbook.knowledge.limits import KB_FILE_MAX_BYTES
from factbook.knowledge.names import check_name, name_problem
from factbook.knowledge.yamlsrc import read_text_bounded
from factbook.runbooks.remote import BoxClient
from factbook.serving.sglang.launch import preflight
from factbook.serving.sglang.reference import local_sglang_python

REGISTRY = "servers.jsonl"
REMOTE_RUNS = "/tmp/factbook-runs"


@dataclass
class ServerInfo:
    """What teardown needs to find a server again, on any box."""

    name: str
    target: str
    pid: int
    started: str | None  # /proc start time: guards against pid reuse
    log: str  # on the box
    pidfile: str | None
    step: str
    keep: bool = False
    ready_after_s: float | None = None
    url: str | None = None


def log_path(box: BoxClient, run_dir: Path, runbook: str, run_id: str, name: str) -> str:
    """Local targets log into the run folder; remote ones under /tmp/factbook-runs/ on the box."""
    check_name("server name", name)  # it becomes a file name here and on the box
    if box.target.transport == "local":
        return str(run_dir / "servers" / f"{name}.log")
    return f"{REMOTE_RUNS}/{runbook}/{run_id}/{name}.log"


def parse_ready(ready: int | str | dict[str, Any] | None) -> dict[str, Any] | None:
    """8000 / "127.0.0.1:8000" -> port probe; "http://..." -> HTTP probe; a dict as is."""
    if ready is None or isinstance(ready, dict):
        return ready
    if isinstance(ready, int):
        return {"port": ready}
    if ready.startswith(("http://", "https://")):
        return {"url": ready}
    host, _, port = ready.rpartition(":")
    return {"host": host or "127.0.0.1", "port": int(port)}


@dataclass(frozen=True)
class ServerSpec:
    """What to start: `ready` is a port, `host:port`, a URL or a probe mapping (parse_ready);
    `keep` leaves it running after the run."""

    name: str
    argv: list[str]
    env: dict[str, str] | None = None
    cwd: str | None = None
    ready: int | str | dict[str, Any] | None = None
    deadline: float = 300
    keep: bool = False


def start(
    box: BoxClient,
    spec: ServerSpec,
    *,
    run_dir: Path,
    runbook: str,
    run_id: str,
    step: str,
) -> ServerInfo:
    """Spawn, register, then wait for readiness; on failure stop it and raise ServerNotReady.

    An SGLang launch is linted first with the values it really has (LaunchRefused on errors).
    On a remote box paths cannot be read from here, so only the flags are checked.
    """
    name, argv, ready, deadline = spec.name, spec.argv, spec.ready, spec.deadline
    if box.target.transport == "local":  # sglang installed here resolves the flags itself
        preflight(argv, sglang_python=local_sglang_python())
    else:
        preflight(argv, read_config=lambda _path: None, exists=lambda _path: None)
    for other in registered(run_dir):
        if other.name == name and other.target == box.name:
            raise FactbookError(
                f"server '{name}' already runs in this run on {box.name} "
                f"(pid {other.pid}); stop it first"
            )
    log = log_path(box, run_dir, runbook, run_id, name)
    pidfile = log[: -len(".log")] + ".pid"
    spawned = box.job(
        {
            "op": "spawn",
            "argv": [str(a) for a in argv],
            "env": spec.env or {},
            "cwd": spec.cwd,
            "log": log,
            "pidfile": pidfile,
        }
    )
    if spawned.get("error"):
        raise ServerNotReady(
            f"server '{name}' on {box.name}: cannot start {argv[0]}: {spawned['error']}"
        )
    probe = parse_ready(ready)
    info = ServerInfo(
        name=name,
        target=box.name,
        pid=int(spawned["pid"]),
        started=spawned.get("started"),
        log=spawned["log"],
        pidfile=spawned.get("pidfile"),
        step=step,
        keep=spec.keep,
        url=probe.get("url") if probe else None,
    )
    _append(run_dir, {"event": "start", **asdict(info)})
    if probe is None:
        return info
    waited = box.job(
        {
            "op": "wait_ready",
            "pid": info.pid,
            "started": info.started,
            "ready": probe,
            "deadline": deadline,
            "log": info.log,
        },
        wait_s=deadline + 30,
    )
    if not waited.get("ready"):
        stop(box, info, run_dir=run_dir, grace=5)
        raise ServerNotReady(
            f"server '{name}' on {box.name}: {waited.get('reason')}; "
            f"log {info.log} ends with:\n{waited.get('log_tail', '')[-2000:]}"
        )
    info.ready_after_s = waited.get("after_s")
    return info


def stop(box: BoxClient, info: ServerInfo, *, run_dir: Path, grace: float = 10) -> dict[str, Any]:
    """TERM then KILL the server's process group; copy a remote log into the run folder."""
    _check_own_files(box, info, Path(run_dir))
    result = box.job(
        {
            "op": "stop",
            "pid": info.pid,
            "started": info.started,
            "pidfile": info.pidfile,
            "grace": grace,
        },
        wait_s=grace + 30,
    )
    if box.target.transport != "local":
        tail = box.job({"op": "tail", "log": info.log, "limit": 256 * 1024})
        local = run_dir / "servers" / f"{info.name}.log"
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_text(tail.get("text", ""), encoding="utf-8")
    _append(
        run_dir,
        {
            "event": "stop",
            "name": info.name,
            "target": info.target,
            "result": result,
            "time": time.time(),
        },
    )
    if result.get("survivors"):
        raise TargetError(
            f"server '{info.name}' on {info.target}: processes "
            f"{result['survivors']} survived SIGKILL"
        )
    return result


def _check_own_files(box: BoxClient, info: ServerInfo, run_dir: Path) -> None:
    """Refuse to stop a server whose log or pidfile is not where this run keeps them. The
    registry is a file of the knowledge base, and the next `run` stops a dead run's servers:
    a planted `log: ~/.ssh/id_ed25519` was copied from the box into the run folder (which
    a team shares), a planted pidfile was deleted on the box."""
    expected = log_path(box, run_dir, run_dir.parent.name, run_dir.name, info.name)
    pidfile = expected[: -len(".log")] + ".pid"
    if box.target.transport == "local":
        same = [Path(info.log).resolve() == Path(expected).resolve()]
        same.append(info.pidfile is None or Path(info.pidfile).resolve() == Path(pidfile).resolve())
    else:
        same = [info.log == expected, info.pidfile in (None, pidfile)]
    if not all(same):
        raise TargetError(
            f"server '{info.name}' on {info.target}: its log or pidfile is not where this run "
            "keeps them; not stopped"
        )


def registered(run_dir: Path, *, include_stopped: bool = False) -> list[ServerInfo]:
    """Servers of this run, in start order; by default only those not stopped yet."""
    path = Path(run_dir) / REGISTRY
    if not path.exists():
        return []
    text, problem = read_text_bounded(path, str(path), limit=KB_FILE_MAX_BYTES)
    if problem is not None:
        return []
    running: dict[tuple[str, str], ServerInfo] = {}
    everything: list[ServerInfo] = []
    for line in text.splitlines():
        event = _event(line)
        if event is None:
            continue
        key = (event["name"], event["target"])
        if event["event"] == "start":
            info = ServerInfo(**{k: event.get(k) for k in ServerInfo.__dataclass_fields__})
            running[key] = info
            everything.append(info)
        else:
            running.pop(key, None)
    return everything if include_stopped else list(running.values())


# what each field of a start event must be; an event written by anyone else is skipped
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "target": (str,),
    "pid": (int,),
    "started": (str, type(None)),
    "log": (str,),
    "pidfile": (str, type(None)),
    "step": (str,),
    "keep": (bool,),
    "ready_after_s": (int, float, type(None)),
    "url": (str, type(None)),
}


def _event(line: str) -> dict[str, Any] | None:
    """One line of the registry as an event factbook writes, else None. The registry sits
    in the knowledge base, and every `run` reads the registries of dead runs to stop their
    servers: a line nested 100,000 deep, a list, a name that is a list or bytes that are not
    UTF-8 ended every `factbook run` in a traceback, a pid `"abc"` reached the box."""
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(event, dict) or event.get("event") not in ("start", "stop"):
        return None
    if name_problem("server name", event.get("name")):  # it becomes a file name
        return None
    wanted = _FIELD_TYPES if event["event"] == "start" else {"name": (str,), "target": (str,)}
    for key, types in wanted.items():
        value = event.get(key, False if key == "keep" else None)
        if not isinstance(value, types) or (key == "pid" and (type(value) is not int or value < 1)):
            return None
    return event


def _append(run_dir: Path, event: dict[str, Any]) -> None:
    path = Path(run_dir) / REGISTRY
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(event, default=str) + "\n")
        handle.flush()
