"""The connection fields Ansible's variables set on a target, and what those fields must not be.

Shared by the Ansible reader (host variables in an inventory) and by inventory.py, which
merges group variables first. Resolved as Ansible's ssh connection resolves them (tests
compare with the ssh command line `ansible` builds, read back through `ssh -G`):

- host: ansible_ssh_host, else ansible_host, else the inventory name (the legacy
  `ansible_ssh_*` spelling wins when both are set, as in Ansible); port: ansible_ssh_port,
  else ansible_port; user: ansible_ssh_user, else ansible_user; key:
  ansible_ssh_private_key_file, else ansible_private_key_file;
- the ssh command line is `ansible_ssh_args`, then the options above, then
  `ansible_ssh_common_args`, then `ansible_ssh_extra_args`; OpenSSH takes the first value of
  each option, so an option in these arguments (`-p`, `-l`, `-i`, `-J`, `-o Port=`,
  `-oProxyJump=`, `-o ProxyCommand=`, `-o HostName=`...) counts only where Ansible's own did
  not set it first;
- ProxyJump (`-J`, `-o ProxyJump=`) becomes the target's jump chain; ProxyCommand is kept on
  the target and the target goes through the `openssh` transport, which passes it to `ssh`;
- ansible_connection: local, ssh, smart, paramiko; any other (winrm, docker...) is refused
  by field_problems() with a line naming the host, never silently run over ssh.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, replace
from typing import Any

from factbook.knowledge.fleet.ansibleyaml import Unsafe, Vaulted
from factbook.knowledge.model import Target

# ssh(1)'s getopt string: the letters that take an argument
_SSH_FLAGS_WITH_ARG = set("BbcDEeFIiJLlmOoPpQRSWw")
_SSH_FLAGS = set("1246afgknqstvxACGKMNTVXYy") | _SSH_FLAGS_WITH_ARG
_OPTION = re.compile(r"\s*([A-Za-z]+)(?:\s*=\s*|\s+)(.*)", re.S)
_SSH_CONNECTIONS = ("ssh", "smart", "paramiko", "paramiko_ssh")
_TEMPLATE = re.compile(r"\{\{|\{%")
_CONNECTION_VARS = (
    "ansible_host",
    "ansible_ssh_host",
    "ansible_port",
    "ansible_ssh_port",
    "ansible_user",
    "ansible_ssh_user",
    "ansible_ssh_private_key_file",
    "ansible_private_key_file",
    "ansible_ssh_common_args",
    "ansible_ssh_extra_args",
    "ansible_ssh_args",
    "ansible_connection",
    "ansible_python_interpreter",
)


@dataclass
class SSHOptions:
    """What an ssh command line sets, first value of each winning (as OpenSSH reads it)."""

    host: str | None = None
    port: str | None = None
    user: str | None = None
    identity_file: str | None = None
    jump: tuple[str, ...] = ()
    proxy_command: str | None = None
    proxy_set: bool = False  # ProxyJump or ProxyCommand seen (the first one wins)
    problem: str | None = None


def _legacy_first(v: dict[str, Any], legacy: str, modern: str) -> Any:
    """Ansible reads its variable list last-one-wins: the legacy `ansible_ssh_*` name is
    listed after the modern one, so it wins when both are set."""
    value = v.get(legacy)
    return value if value not in (None, "") else v.get(modern)


def _words(value: Any, key: str, options: SSHOptions) -> list[str]:
    if not isinstance(value, str) or not value.strip():
        return []
    try:
        return shlex.split(value)
    except ValueError as exc:
        options.problem = options.problem or f"{key} cannot be split into words: {exc}"
        return []


def read_ssh_args(words: list[str], options: SSHOptions) -> SSHOptions:
    """Fold ssh command-line words into `options` (values already set are kept)."""
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("-") or word == "-" or word == "--":
            continue  # a stray word: ssh would take it as the destination; Ansible's comes later
        j = 1
        while j < len(word):
            flag = word[j]
            j += 1
            if flag not in _SSH_FLAGS:
                options.problem = options.problem or f"unknown ssh option -{flag} in {word!r}"
                break
            if flag not in _SSH_FLAGS_WITH_ARG:
                continue
            if j < len(word):
                arg = word[j:]
            elif i < len(words):
                arg = words[i]
                i += 1
            else:
                options.problem = options.problem or f"ssh option -{flag} needs a value"
                break
            _flag(flag, arg, options)
            break
    return options


def _flag(flag: str, arg: str, options: SSHOptions) -> None:
    if flag == "o":
        found = _OPTION.fullmatch(arg)
        if not found:
            options.problem = options.problem or f"ssh option -o {arg!r} is not Key=Value"
            return
        _option(found.group(1).lower(), found.group(2), options)
    elif flag == "p":
        options.port = options.port or arg
    elif flag == "l":
        options.user = options.user or arg
    elif flag == "i":
        options.identity_file = options.identity_file or arg
    elif flag == "J":
        if options.proxy_command is not None:
            options.problem = options.problem or "ssh refuses -J after a ProxyCommand"
        elif not options.proxy_set:
            _proxy_jump(arg, options)


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1]
    return text


def _option(key: str, value: str, options: SSHOptions) -> None:
    if key == "proxycommand":
        if not options.proxy_set and value.strip().lower() != "none":
            options.proxy_command = value.strip()  # ssh takes the rest of the line as is
            options.proxy_set = True
        return
    plain = _unquote(value)
    if key == "proxyjump":
        if not options.proxy_set and plain.lower() != "none":
            _proxy_jump(plain, options)
    elif key == "port":
        options.port = options.port or plain
    elif key == "user":
        options.user = options.user or plain
    elif key == "hostname":
        options.host = options.host or plain
    elif key == "identityfile":
        options.identity_file = options.identity_file or plain


def _proxy_jump(value: str, options: SSHOptions) -> None:
    options.jump = tuple(j.strip() for j in value.split(",") if j.strip())
    options.proxy_set = True


def ssh_options(v: dict[str, Any], name: str) -> SSHOptions:
    """The options Ansible's ssh command line for host `name` sets, as ssh reads them."""
    options = SSHOptions()
    read_ssh_args(_words(v.get("ansible_ssh_args"), "ansible_ssh_args", options), options)
    port = _legacy_first(v, "ansible_ssh_port", "ansible_port")
    user = _legacy_first(v, "ansible_ssh_user", "ansible_user")
    key = _legacy_first(v, "ansible_ssh_private_key_file", "ansible_private_key_file")
    options.port = options.port or (str(port) if port not in (None, "") else None)
    options.identity_file = options.identity_file or _str(key)
    options.user = options.user or _str(user)
    for var in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        read_ssh_args(_words(v.get(var), var, options), options)
    address = _str(_legacy_first(v, "ansible_ssh_host", "ansible_host")) or name
    if options.host:  # HostName from -o: %h is the address Ansible passed, %% a percent
        options.host = re.sub(r"%[h%]", lambda m: address if m[0] == "%h" else "%", options.host)
    options.host = options.host or address
    return options


def connection(target: Target) -> Target:
    """Target fields from its merged ansible_* variables (fields already set are kept)."""
    v = target.vars
    if not any(k in v for k in _CONNECTION_VARS):
        return target
    if _kind(v) == "local":
        return replace(
            target,
            transport="local",
            python=target.python or _str(v.get("ansible_python_interpreter")),
        )
    found = ssh_options(v, target.name)
    port = found.port
    proxied = found.proxy_command is not None and not target.jump and not target.proxy_command
    return replace(
        target,
        transport="openssh" if proxied and target.transport == "ssh" else target.transport,
        host=target.host or found.host,
        port=target.port or (int(port) if port and port.isdigit() else None),
        user=target.user or found.user,
        identity_file=target.identity_file or found.identity_file,
        python=target.python or _str(v.get("ansible_python_interpreter")),
        jump=target.jump or found.jump,
        proxy_command=target.proxy_command or found.proxy_command,
    )


def field_problems(target: Target) -> list[str]:
    """What a connection field must not be: a port outside 1-65535 (or not a number), a host
    or user that an ssh command line would read as an option or split, a Jinja2 template
    (factbook evaluates none), a connection type factbook has no transport for."""
    out = []
    v = target.vars
    port = _legacy_first(v, "ansible_ssh_port", "ansible_port")
    port = target.port if port in (None, "") else port
    if port is not None and not (str(port).isdigit() and 1 <= int(port) <= 65535):
        out.append(f"port {port!r} is not a number from 1 to 65535")
    for field, value in (("host", target.host), ("user", target.user)):
        if value and (value.startswith("-") or not value.isprintable() or " " in value):
            out.append(f"{field} {value!r} is not a host or user name")
    for key in _CONNECTION_VARS:
        value = v.get(key)
        if isinstance(value, Vaulted):
            out.append(f"{key} is encrypted with ansible-vault, which factbook does not decrypt")
        # an `!unsafe` text is used as written, as Ansible does
        elif isinstance(value, str) and not isinstance(value, Unsafe) and _TEMPLATE.search(value):
            out.append(f"{key} is a Jinja2 template, which factbook does not evaluate")
    kind = _kind(v)
    if kind is not None and kind not in (*_SSH_CONNECTIONS, "local"):
        shown = v.get("ansible_connection")
        out.append(f"ansible_connection={shown}: factbook connects over ssh or locally only")
    if kind != "local" and any(k in v for k in _CONNECTION_VARS):
        problem = ssh_options(v, target.name).problem
        if problem:
            out.append(problem)
    if target.proxy_command is not None and target.transport != "openssh":
        out.append(
            f"a ProxyCommand needs transport openssh (the system ssh), not {target.transport}"
        )
    return out


def _kind(v: dict[str, Any]) -> str | None:
    """ansible_connection without its collection (`ansible.builtin.local` -> local)."""
    kind = v.get("ansible_connection")
    return None if kind in (None, "") else str(kind).rsplit(".", 1)[-1]


def _str(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None
