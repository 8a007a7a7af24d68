"""`Host` entries of an ssh config as targets: what `ssh NAME` already reaches, factbook can.

Each concrete alias (no `*`, `?` or `!`) becomes a target of that name with the HostName,
Port, User, IdentityFile and ProxyJump that the config gives it (paramiko's lookup, so `Host *`
defaults and Match apply as ssh applies them); a ProxyJump naming another alias of the file
names that target. A file is taken for an ssh config when its first
keyword line starts with `Host`, `Match` or `Include`.
"""

from __future__ import annotations

from pathlib import Path

import paramiko

from ..errors import InputError
from ..model import Target
from ..names import name_problem
from .inventory import Inventory


def is_ssh_config(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    for line in text.splitlines():
        word = line.strip().split(None, 1)[0] if line.strip() else ""
        if not word or word.startswith("#"):
            continue
        return word.lower() in ("host", "match", "include")
    return False


def read_ssh_config(path: Path) -> Inventory:
    """Concrete `Host` aliases -> targets (transport ssh, host = the alias)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    try:
        config = paramiko.SSHConfig.from_text(text)
    except paramiko.ConfigParseError as exc:
        raise InputError(f"{path}: cannot read ssh config: {exc}") from None
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
            inv.targets.setdefault(alias, _target(config, alias))
    return inv


def _target(config: paramiko.SSHConfig, alias: str) -> Target:
    found = config.lookup(alias)
    port = str(found.get("port", ""))
    proxy = str(found.get("proxyjump") or "")
    jumps = () if proxy.lower() in ("", "none") else tuple(j.strip() for j in proxy.split(","))
    idents = found.get("identityfile") or []
    return Target(
        name=alias,
        host=str(found.get("hostname") or alias),
        port=int(port) if port.isdigit() else None,
        user=found.get("user"),
        identity_file=idents[0] if idents else None,
        jump=jumps,
        connect_timeout=float(found["connecttimeout"]) if "connecttimeout" in found else None,
    )
