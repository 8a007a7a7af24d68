"""The connection fields Ansible's variables set on a target, and what those fields must not be.

Shared by the Ansible reader (host variables in an inventory) and by inventory.py, which
merges group variables first: ansible_host, ansible_port, ansible_user,
ansible_ssh_private_key_file, ansible_python_interpreter, ansible_connection=local, and
`-J`/`ProxyJump` in ansible_ssh_common_args / ansible_ssh_extra_args.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from typing import Any

from factbook.knowledge.model import Target


def _jumps(variables: dict[str, Any]) -> tuple[str, ...]:
    words: list[str] = []
    for key in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        value = variables.get(key)
        if isinstance(value, str):
            try:
                words += shlex.split(value)
            except ValueError:
                continue
    found: list[str] = []
    for i, word in enumerate(words):
        if word == "-J" and i + 1 < len(words):
            found += words[i + 1].split(",")
        elif word.startswith("-J") and len(word) > 2:
            found += word[2:].split(",")
        elif word in ("-o",) and i + 1 < len(words):
            key, _, value = words[i + 1].partition("=")
            if key.strip().lower() == "proxyjump" and value.strip().lower() != "none":
                found += value.split(",")
    return tuple(j.strip() for j in found if j.strip())


def connection(target: Target) -> Target:
    """Target fields from its merged ansible_* variables (fields already set are kept)."""
    v = target.vars
    if not any(k.startswith("ansible_") for k in v):
        return target
    local = v.get("ansible_connection") == "local"
    port = v.get("ansible_port")
    return replace(
        target,
        transport="local" if local else target.transport,
        host=target.host or (None if local else str(v.get("ansible_host") or target.name)),
        port=target.port or (int(port) if str(port or "").isdigit() else None),
        user=target.user or _str(v.get("ansible_user") or v.get("ansible_ssh_user")),
        identity_file=target.identity_file
        or _str(v.get("ansible_ssh_private_key_file") or v.get("ansible_private_key_file")),
        python=target.python or _str(v.get("ansible_python_interpreter")),
        jump=target.jump or _jumps(v),
    )


def field_problems(target: Target) -> list[str]:
    """What a connection field must not be: a port outside 1-65535 (or not a number), a host
    or user that an ssh command line would read as an option or split."""
    out = []
    port = target.vars.get("ansible_port", target.port)
    if port is not None and not (str(port).isdigit() and 1 <= int(port) <= 65535):
        out.append(f"port {port!r} is not a number from 1 to 65535")
    for field, value in (("host", target.host), ("user", target.user)):
        if value and (value.startswith("-") or not value.isprintable() or " " in value):
            out.append(f"{field} {value!r} is not a host or user name")
    return out


def _str(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None
