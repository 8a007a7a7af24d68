"""Runs ON the box (stdlib only, shipped to `python3 -` through a transport): one job per call.

Jobs: `run` a bounded command (own process group, killed whole on timeout or when the caller
goes away), `spawn` a server (new session, log file, pid file), `wait_ready` (port or HTTP
probe with a deadline, failing fast when the server dies), `stop` (TERM then KILL to the whole
process group, then confirm nothing of the group is left), `tail` a log.

Output: JSON lines. `{"stream": "stdout"|"stderr", "text": ...}` while a command runs, then
one `{"result": {...}}`. The caller prepends `JOB = {...}` to this file's text.
"""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

JOB = globals().get("JOB") or {}


def emit(obj):
    try:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        pass


def start_time(pid):
    """The kernel's start time of a pid (field 22 of /proc/PID/stat): guards against pid reuse."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data[data.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def state(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            data = handle.read()
    except OSError:
        return None
    return data[data.rfind(")") + 2 :].split()[0]


def group_members(pgid):
    """Live (non-zombie) pids whose process group is `pgid`."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                data = handle.read()
        except OSError:
            continue
        fields = data[data.rfind(")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(name))
    return out


def alive(pid, started):
    current = start_time(pid)
    return current is not None and (started is None or current == started) and state(pid) != "Z"


def kill_group(pgid, grace):
    """TERM the group, wait `grace` s, KILL what is left; the pids that were signalled."""
    members = group_members(pgid)
    if not members:
        return {"was_running": False, "killed": False, "survivors": []}
    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.time() + grace
    while time.time() < deadline and group_members(pgid):
        time.sleep(0.05)
    killed = False
    if group_members(pgid):
        killed = True
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
        deadline = time.time() + 5
        while time.time() < deadline and group_members(pgid):
            time.sleep(0.05)
    return {"was_running": True, "killed": killed, "survivors": group_members(pgid)}


def command_env(job):
    env = dict(os.environ)
    env.update({k: str(v) for k, v in (job.get("env") or {}).items()})
    return env


def expand(path):
    return os.path.expanduser(os.path.expandvars(path)) if path else path


def argv_of(job):
    """The job's argv with `~` in the program expanded (targets name ~/ml-env/bin/python3)."""
    argv = list(job["argv"])
    argv[0] = expand(argv[0])
    return argv


def run(job):
    started = time.time()
    try:
        proc = subprocess.Popen(
            argv_of(job),
            stdin=subprocess.PIPE if job.get("stdin") else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=command_env(job),
            cwd=expand(job.get("cwd")),
            start_new_session=True,
        )
    except OSError as exc:
        emit({"result": {"rc": 127, "error": str(exc), "timed_out": False, "duration_s": 0.0}})
        return
    emit({"spawned": proc.pid, "started": start_time(proc.pid)})
    if job.get("stdin"):
        try:
            proc.stdin.write(job["stdin"].encode())
            proc.stdin.close()
        except OSError:
            pass

    def pump(stream, name):
        for raw in iter(stream.readline, b""):
            emit({"stream": name, "text": raw.decode("utf-8", "replace")})

    pumps = [
        threading.Thread(target=pump, args=(proc.stdout, "stdout"), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr, "stderr"), daemon=True),
    ]
    for thread in pumps:
        thread.start()
    parent = os.getppid()
    timeout = job.get("timeout")
    deadline = started + timeout if timeout else None
    timed_out = orphaned = False
    while proc.poll() is None:
        if deadline is not None and time.time() > deadline:
            timed_out = True
        elif os.getppid() != parent:  # the caller (kernel, ssh session) went away
            orphaned = True
        if timed_out or orphaned:
            kill_group(proc.pid, float(job.get("grace", 2)))
            break
        # returns as soon as the command exits (short commands cost no polling tick)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.05)
    rc = proc.wait()
    for thread in pumps:
        thread.join(timeout=2)
    emit(
        {
            "result": {
                "rc": rc,
                "timed_out": timed_out,
                "orphaned": orphaned,
                "duration_s": round(time.time() - started, 4),
            }
        }
    )


def spawn(job):
    log = expand(job["log"])
    os.makedirs(os.path.dirname(log) or ".", exist_ok=True)
    with open(log, "ab") as handle:
        try:
            proc = subprocess.Popen(
                argv_of(job),
                stdin=subprocess.DEVNULL,
                stdout=handle,
                stderr=subprocess.STDOUT,
                env=command_env(job),
                cwd=expand(job.get("cwd")),
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            emit({"result": {"error": str(exc)}})
            return
    pidfile = expand(job.get("pidfile"))
    if pidfile:
        with open(pidfile, "w") as handle:
            handle.write(f"{proc.pid}\n")
    emit(
        {
            "result": {
                "pid": proc.pid,
                "started": start_time(proc.pid),
                "log": log,
                "pidfile": pidfile,
                "host": socket.gethostname(),
            }
        }
    )


def probe(ready):
    if "url" in ready:
        import urllib.request  # only here: it costs ~30 ms of every job's start-up

        try:
            with urllib.request.urlopen(ready["url"], timeout=2) as resp:
                return 200 <= resp.status < 400
        except Exception:
            return False
    try:
        with socket.create_connection((ready.get("host", "127.0.0.1"), int(ready["port"])), 1):
            return True
    except OSError:
        return False


def tail_text(path, limit):
    try:
        with open(expand(path), "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            return handle.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"(no log: {exc})"


def wait_ready(job):
    started = time.time()
    deadline = started + float(job["deadline"])
    interval = float(job.get("interval", 0.2))
    while True:
        if not alive(job["pid"], job.get("started")):
            emit(
                {
                    "result": {
                        "ready": False,
                        "reason": "the process exited before it was ready",
                        "after_s": round(time.time() - started, 3),
                        "log_tail": tail_text(job["log"], 4000),
                    }
                }
            )
            return
        if probe(job["ready"]):
            emit({"result": {"ready": True, "after_s": round(time.time() - started, 3)}})
            return
        if time.time() > deadline:
            reason = "not ready after {}s".format(job["deadline"])
            emit(
                {
                    "result": {
                        "ready": False,
                        "reason": reason,
                        "after_s": round(time.time() - started, 3),
                        "log_tail": tail_text(job["log"], 4000),
                    }
                }
            )
            return
        time.sleep(interval)


def stop(job):
    pid, started = int(job["pid"]), job.get("started")
    if started is not None and start_time(pid) not in (None, started):
        # the pid was reused by an unrelated process: only our group's members may be hit
        result = {"was_running": False, "killed": False, "survivors": [], "pid_reused": True}
    else:
        result = kill_group(pid, float(job.get("grace", 10)))
    pidfile = expand(job.get("pidfile"))
    if pidfile and not result["survivors"]:
        with contextlib.suppress(OSError):
            os.unlink(pidfile)
    emit({"result": result})


def status(job):
    emit(
        {
            "result": {
                "alive": alive(int(job["pid"]), job.get("started")),
                "members": group_members(int(job["pid"])),
            }
        }
    )


def tail(job):
    emit({"result": {"text": tail_text(job["log"], int(job.get("limit", 65536)))}})


if __name__ == "__main__":
    # Ctrl-C reaches the kernel's process group; the caller stops our command group itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    {
        "run": run,
        "spawn": spawn,
        "wait_ready": wait_ready,
        "stop": stop,
        "status": status,
        "tail": tail,
    }[JOB["op"]](JOB)
