"""`Host` entries of an ssh config as targets: what `ssh NAME` already reaches, factbook can.

Each concrete alias (no `*`, `?` or `!`) of the file becomes a target of that name with the
HostName, Port, User, IdentityFile and ProxyJump the config gives it, evaluated as OpenSSH
does (transports/sshconfig.py: Include, Match, `Host *` defaults, first value wins). A host
reached through a ProxyCommand keeps its alias as host and uses `transport: openssh`, so the
system ssh runs that command (pass the file with `--ssh-config` when it is not
~/.ssh/config). A file is taken for an ssh config when its first keyword line starts with
`Host`, `Match` or `Include`.
"""

from __future__ import annotations

from pathlib import Path

from factbook.errors import InputError, UsageError
from factbook.knowledge.fleet.inventory import Inventory
from factbook.knowledge.model import Target
from factbook.knowledge.names import name_problem
from factbook.knowledge.yamlsrc import read_text_bounded
from factbook.verification.transports.sshconfig import Resolved, SSHConfigFile

MAX_CONFIG_BYTES = 4 << 20


def is_ssh_config(path: Path) -> bool:
    text, problem = read_text_bounded(path, str(path), limit=MAX_CONFIG_BYTES)
    if problem is not None:
        return False
    for line in text.splitlines():
        word = line.strip().split(None, 1)[0] if line.strip() else ""
        if not word or word.startswith("#"):
            continue
        return word.lower() in ("host", "match", "include")
    return False


def read_ssh_config(path: Path) -> Inventory:
    """Concrete `Host` aliases -> targets, each resolved as `ssh ALIAS` would resolve it."""
    text, problem = read_text_bounded(path, str(path), limit=MAX_CONFIG_BYTES)
    if problem is not None:
        raise InputError(f"{problem.file}:{problem.line}: {problem.message}")
    config = SSHConfigFile(path)
    inv = Inventory()
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].replace("=", " ", 1).split()
        if not words or words[0].lower() != "host":
            continue
        for alias in words[1:]:
            if any(ch in alias for ch in "*?!"):
                continue
            bad = name_problem("target name", alias)
            if bad:
                raise InputError(f"{path}:{number}: Host: {bad}")
            try:
                found = config.lookup(alias)
            except UsageError as exc:  # a bad Port, an unsupported Match: file:line inside
                raise InputError(str(exc)) from None
            inv.targets.setdefault(alias, _target(found, alias))
    return inv


def _target(found: Resolved, alias: str) -> Target:
    proxy = found.proxy_jump or ""
    timeout = found.get("connecttimeout") or ""
    through_command = found.proxy_command is not None
    return Target(
        name=alias,
        transport="openssh" if through_command else "ssh",
        host=alias if through_command else found.hostname,
        port=found.port if "port" in found.where else None,
        user=found.user if "user" in found.where else None,
        identity_file=found.identity_files[0] if found.identity_files_set else None,
        jump=tuple(j.strip() for j in proxy.split(",")) if proxy else (),
        connect_timeout=float(timeout) if timeout.isdigit() else None,
    )
