"""paramiko, imported without `invoke`: a third of its import time, for a feature not used.

paramiko.config imports `invoke` (when installed) at import time, only to run the commands of
`Match exec` in ssh configs read by paramiko's own SSHConfig. factbook never uses that class:
it reads ssh configs itself (sshconfig.py). With invoke installed (Fabric brings it) the import
costs ~60 ms of CPU on every SSH run, so paramiko is imported with `invoke` hidden: its
`Match exec` then reports invoke missing, and nothing else changes. `invoke` is hidden only
for the duration of the import and only when nothing imported it already; an `import invoke`
later (by anyone) imports it as usual.
"""

from __future__ import annotations

import sys

if "paramiko" not in sys.modules and "invoke" not in sys.modules:
    sys.modules["invoke"] = None  # type: ignore[assignment]  # import invoke -> ImportError
    try:
        import paramiko
    finally:
        if sys.modules.get("invoke", 0) is None:
            del sys.modules["invoke"]
else:
    import paramiko

__all__ = ["paramiko"]
