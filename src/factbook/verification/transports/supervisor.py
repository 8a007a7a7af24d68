"""Runs on the box, in front of the agent: nothing outlives the SSH channel that started it.

Without a pty, sshd does not signal a session's processes when the channel closes or the
connection drops: a hanging check would run on forever. The SSH transport therefore starts
`PYTHON -c <this file> N ARGV...` instead of ARGV. This supervisor reads the N-byte payload
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
import os
import signal
import subprocess
import sys
import threading
import time


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


def main():
    size, argv = int(sys.argv[1]), sys.argv[2:]
    chunks, left = [], size
    while left > 0:
        data = os.read(0, min(left, 1 << 20))
        if not data:
            break
        chunks.append(data)
        left -= len(data)
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
