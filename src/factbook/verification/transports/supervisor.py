"""Runs on the box, in front of the agent: nothing outlives the SSH channel that started it.

Without a pty, sshd does not signal a session's processes when the channel closes or the
connection drops: a hanging check would run on forever. The SSH transport therefore starts
`PYTHON -c <this file> E N ARGV...` instead of ARGV. This supervisor reads an E-byte env block
(the target's `env:` as JSON, set in its own environment so the agent inherits it: values never
travel on a command line, where `ps` and audit logs would show them) and the N-byte payload
(the agent script) from its stdin, runs ARGV in a new session with the payload as ITS stdin
(closed after), and keeps its own stdin open as a lifeline: the client closes the channel (kill,
Ctrl-C) or the connection dies, sshd closes our stdin, and we kill the agent's session and every
descendant (SIGTERM, then SIGKILL after 2 s). stdout and stderr are inherited: no copy.

On a normal exit the agent's process group is killed too, since a background job left behind
would hold the channel open. A process that must outlive the run has to detach (setsid).
Stdlib only, Python >= 3.6 and Linux (/proc) on the box. Signals become 128+N exit codes,
because sshd reports a signal death as exit-signal, which paramiko cannot tell from a drop.
"""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

_KEY = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]{0,127}\Z")  # names.py's "env key"


def descendants(root):
    """Every process below `root`, from /proc. The agent kills with this walk too (the bundle
    ships this module beside it), so it stays Python 3.6 and stdlib only."""
    kids = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/" + entry + "/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for pid in kids.get(todo.pop(), []):
            out.append(pid)
            todo.append(pid)
    return out


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _kill_all(child):
    pids = [child.pid, *descendants(child.pid)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(OSError):
            os.killpg(child.pid, sig)
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 2.0
        while sig == signal.SIGTERM and time.monotonic() < deadline:
            child.poll()
            if not any(_alive(p) for p in pids):
                return
            time.sleep(0.05)


def _read(size):
    """Exactly `size` bytes of stdin (fewer only at EOF)."""
    chunks, left = [], size
    while left > 0:
        data = os.read(0, min(left, 1 << 20))
        if not data:
            break
        chunks.append(data)
        left -= len(data)
    return b"".join(chunks)


def _set_env(block):
    """The target's env, from the payload's first block (JSON {key: value}): set here, so the
    agent inherits it, and never a word of any command line. Keys as check_name allows them;
    a refusal names the key only (a value may be a token)."""
    if not block:
        return
    try:
        pairs = json.loads(block.decode("ascii"))
    except ValueError:
        _fail("the env block is not JSON")
    if not isinstance(pairs, dict):
        _fail("the env block is not an object")
    for key, value in pairs.items():
        if not (isinstance(key, str) and _KEY.match(key)) or not isinstance(value, str):
            _fail("bad env key " + repr(key))
        try:
            os.environ[key] = value
        except (ValueError, UnicodeError):
            _fail("env " + key + ": its value cannot be set")


def _fail(why):
    sys.stderr.write("factbook supervisor: " + why + "\n")
    sys.stderr.flush()
    os._exit(127)


def main():
    env_size, size, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    _set_env(_read(env_size))
    chunks = [_read(size)]
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, start_new_session=True)

    def feed():
        try:
            child.stdin.write(b"".join(chunks))
            child.stdin.close()
        except OSError:
            pass

    def lifeline():
        try:
            while os.read(0, 65536):
                pass
        except OSError:
            pass
        killing.set()
        _kill_all(child)

    killing = threading.Event()
    watcher = threading.Thread(target=lifeline, daemon=True)

    threading.Thread(target=feed, daemon=True).start()
    watcher.start()
    rc = child.wait()
    if killing.is_set():
        watcher.join()  # the SIGKILL round must run even after the agent itself is gone
    with contextlib.suppress(OSError):
        os.killpg(child.pid, signal.SIGKILL)
    os._exit(rc if rc >= 0 else 128 - rc)


if __name__ == "__main__":
    main()
