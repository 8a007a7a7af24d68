"""paramiko, imported without `invoke` and `importlib.metadata`: half its import time, for a
feature not used and a version string.

paramiko.config imports `invoke` (when installed) at import time, only to run the commands of
`Match exec` in ssh configs read by paramiko's own SSHConfig. factbook never uses that class:
it reads ssh configs itself (sshconfig.py). With invoke installed (Fabric brings it) the import
costs ~60 ms of CPU on every SSH run, so paramiko is imported with `invoke` hidden: its
`Match exec` then reports invoke missing, and nothing else changes. `invoke` is hidden only
for the duration of the import and only when nothing imported it already; an `import invoke`
later (by anyone) imports it as usual.

paramiko's `__init__` also imports importlib.metadata (email, zipfile, csv: ~25 ms of CPU) for
one call, `metadata.version("paramiko")`. While paramiko is imported, `importlib.metadata` is a
stand-in whose `version` reads the `.dist-info` folder as importlib.metadata would
(probes/software.py's lookup, tested against it); where that lookup cannot decide, the
stand-in steps aside and paramiko is imported with the real module.
"""

from __future__ import annotations

import sys
import types

from factbook.probes.software import UNDECIDED, dist_info_version

METADATA = "importlib.metadata"


class _Undecided(Exception):
    """The stand-in cannot answer: import paramiko with the real importlib.metadata."""


def _standin() -> types.ModuleType:
    module = types.ModuleType(METADATA, "version() from .dist-info, while paramiko imports")

    def version(name: str) -> str:
        found = dist_info_version(name)
        if found is UNDECIDED or found is None:
            raise _Undecided(name)
        return str(found)

    module.version = version  # type: ignore[attr-defined]
    return module


def _import_paramiko() -> types.ModuleType:
    """paramiko with `invoke` hidden and, unless something imported it already, the
    importlib.metadata stand-in; each put back as it was right after the import."""
    hidden = {"invoke": None} if "invoke" not in sys.modules else {}
    if METADATA not in sys.modules:
        hidden[METADATA] = _standin()
    for name, value in hidden.items():
        sys.modules[name] = value  # type: ignore[assignment]  # None: import invoke -> ImportError
    try:
        import paramiko
    except _Undecided:
        sys.modules.pop(METADATA, None)
        hidden.pop(METADATA)
        import paramiko
    finally:
        for name, value in hidden.items():
            if sys.modules.get(name, 0) is value:
                del sys.modules[name]
    return paramiko


paramiko = sys.modules["paramiko"] if "paramiko" in sys.modules else _import_paramiko()

__all__ = ["paramiko"]
