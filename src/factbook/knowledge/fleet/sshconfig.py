"""`Host` entries of an ssh config as targets: what `ssh NAME` already reaches, factbook can.

Each concrete alias (no `*`, `?` or `!`; quoted ones unquoted) of the file and of the files it
includes becomes a target of that name. It is connected to as `ssh -F FILE NAME` would connect:
the target remembers the file (`Target.ssh_config`) and the SSH transport resolves NAME there
(transports/sshconfig.py: Include, Match, `Host *` defaults, first value wins, tokens), every
jump host of its ProxyJump too; the HostName is never matched against the Host patterns a
second time. The target's host, port, user and jump show what that resolution gives. A host
reached through a ProxyCommand keeps its alias as host and uses `transport: openssh` with the
file (`ssh -F FILE`), so the system ssh runs that command.

A host the file cannot be resolved for here (its outcome hangs on a `Match exec`, which factbook
never runs; a bad Port; a jump loop) is still a target; using it fails with that file:line,
and every other host of the file works. A file is taken for an ssh config when it has no
`[section]` line and its first keyword line starts with an ssh_config keyword.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from factbook.errors import InputError, UsageError
from factbook.knowledge.fleet.inventory import Inventory
from factbook.knowledge.kbfiles import current_root, escapes
from factbook.knowledge.model import Target
from factbook.knowledge.names import name_problem, shown
from factbook.knowledge.yamlsrc import read_text_bounded
from factbook.verification.transports.knownhosts import GLOBAL_KNOWN_HOSTS, USER_KNOWN_HOSTS
from factbook.verification.transports.sshconfig import KEYWORDS, Resolved, SSHConfigFile
from factbook.verification.transports.sshwords import convtime, file_lines

MAX_CONFIG_BYTES = 4 << 20
_FIRST_WORD = re.compile(r"\s*([A-Za-z0-9]+)(\s*=|\s+)")


def is_ssh_config(path: Path) -> bool:
    text, problem = read_text_bounded(path, str(path), limit=MAX_CONFIG_BYTES)
    if problem is not None:
        return False
    first: str | None = None
    for line in file_lines(text):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")):
            continue
        if stripped.startswith("[") or "ansible_" in stripped:
            return False  # an INI section or a connection variable: an Ansible inventory
        if first is None:
            found = _FIRST_WORD.match(line)
            if not found:
                return False
            first = found.group(1).lower()
    return first in KEYWORDS


def read_ssh_config(path: Path) -> Inventory:
    """Concrete `Host` aliases -> targets, each resolved as `ssh -F path ALIAS` would."""
    _, problem = read_text_bounded(path, str(path), limit=MAX_CONFIG_BYTES)
    if problem is not None:
        raise InputError(f"{problem.file}:{problem.line}: {problem.message}")
    config = SSHConfigFile(path)
    try:
        lines = config.host_lines()
    except UsageError as exc:  # a line OpenSSH itself could not read (unbalanced quotes)
        raise InputError(str(exc)) from None
    inv = Inventory()
    source = os.path.abspath(path)
    for line in lines:
        for alias in line.args:
            if any(ch in alias for ch in "*?!") or alias in inv.targets:
                continue
            bad = name_problem("inventory name", alias)
            if bad:
                raise InputError(f"{line.where}: Host: {bad}")
            try:
                found = config.lookup(alias)
                _known_hosts_inside(found)  # an InputError: the whole file is refused
                target = _target(found, alias, source)
            except UsageError:  # refused for this host only: using it reports the line
                target = Target(name=alias, host=alias, ssh_config=source)
            inv.targets[alias] = target
    return inv


# What a knowledge base's ssh config may name as known_hosts outside its root: the files ssh
# reads anyway (the user's and the machine's defaults) and /dev/null (no known hosts).
_OWN_KNOWN_HOSTS = (*USER_KNOWN_HOSTS, *GLOBAL_KNOWN_HOSTS, os.devnull)
_KNOWN_KEYWORDS = {
    "userknownhostsfile": "UserKnownHostsFile",
    "globalknownhostsfile": "GlobalKnownHostsFile",
}


def _known_hosts_inside(found: Resolved) -> None:
    """A knowledge base's ssh config (read while confined to its root) names known_hosts
    files inside the root or ssh's own defaults: any other file outside it would be read as
    the trust anchor of every connection and, with --accept-new-host-keys, appended to (a
    write outside the knowledge base). Refused with the file:line and the path, never its
    content."""
    if current_root() is None:  # the user's own config (~/.ssh/config, --inventory FILE)
        return
    own = {os.path.realpath(os.path.expanduser(p)) for p in _OWN_KNOWN_HOSTS}
    for keyword, name in _KNOWN_KEYWORDS.items():
        words = found.words.get(keyword) or []
        if [word.lower() for word in words] == ["none"]:
            continue
        where = found.where.get(keyword, keyword)
        for word in words:
            path = found.expand(word, keyword)
            if os.path.realpath(path) in own:
                continue
            real = escapes(path)
            if real is not None:
                raise InputError(
                    f"{where}: {name} {shown(word)} resolves to {real}, outside the knowledge "
                    "base; refusing it (keep known_hosts inside it, or use ~/.ssh/known_hosts)"
                )


def _target(found: Resolved, alias: str, source: str) -> Target:
    seconds = convtime(found.get("connecttimeout") or "")  # as ssh reads it: `1m` is 60 s
    connect_timeout = float(seconds) if seconds is not None else None
    if found.proxy_command is not None:  # the system ssh runs it: `ssh -F source alias`
        return Target(
            name=alias,
            transport="openssh",
            host=alias,
            connect_timeout=connect_timeout,
            ssh_config=source,
        )
    return Target(
        name=alias,
        transport="ssh",
        host=found.hostname,
        port=found.port if "port" in found.where else None,
        user=found.user if "user" in found.where else None,
        jump=tuple(jump.spec for jump in found.jumps()),
        connect_timeout=connect_timeout,
        ssh_config=source,
    )
