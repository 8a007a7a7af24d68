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
  what ssh itself refuses (a second `-J`, `-J` after a ProxyCommand, a port that ssh's a2port
  reads as no port: `-p http` is 80, `-p 0x10` is refused) is refused by field_problems();
- `-F FILE` (the last one, as ssh.c keeps it) replaces ~/.ssh/config: the target keeps the
  file and goes through the `openssh` transport, so the system ssh resolves the host there
  exactly as Ansible's does (`-F none`: no config, /dev/null); combined with a jump or a
  HostName from the arguments, which factbook cannot hand to that ssh, it is refused;
- ansible_connection paramiko / paramiko_ssh: Ansible's paramiko plugin reads no ssh
  arguments and no ssh config, only its own variables (`ansible_paramiko_host`, `_port`,
  `_user`, `_private_key_file` over the ssh ones) and `ansible_paramiko_proxy_command`
  (`%h`, `%p`, `%r` replaced, then split into words and run without a shell): the target
  gets those, an empty ssh config, and that command as a ProxyCommand (openssh transport);
- ansible_connection: local, ssh, smart, paramiko; any other (winrm, docker...) is refused
  by field_problems() with a line naming the host, never silently run over ssh.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from factbook.knowledge.fleet.ansibleyaml import Unsafe, Vaulted
from factbook.knowledge.kbfiles import escapes
from factbook.knowledge.limits import PORT_MAX_DIGITS, split_words
from factbook.knowledge.model import Target
from factbook.knowledge.names import shown

# ssh(1)'s getopt string: the letters that take an argument
_SSH_FLAGS_WITH_ARG = set("BbcDEeFIiJLlmOoPpQRSWw")
_SSH_FLAGS = set("1246afgknqstvxACGKMNTVXYy") | _SSH_FLAGS_WITH_ARG
_OPTION = re.compile(r"\s*([A-Za-z]+)(?:\s*=\s*|\s+)(.*)", re.S)
_PARAMIKO = ("paramiko", "paramiko_ssh")
_SSH_CONNECTIONS = ("ssh", "smart", *_PARAMIKO)
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
    "ansible_paramiko_host",
    "ansible_paramiko_port",
    "ansible_paramiko_user",
    "ansible_paramiko_private_key_file",
    "ansible_paramiko_proxy_command",
)
# Each field's variables, the one that wins first (Ansible: the last one listed that is set).
_SSH_VARS = {
    "host": ("ansible_ssh_host", "ansible_host"),
    "port": ("ansible_ssh_port", "ansible_port"),
    "user": ("ansible_ssh_user", "ansible_user"),
    "key": ("ansible_ssh_private_key_file", "ansible_private_key_file"),
}
_PARAMIKO_VARS = {
    field: (f"ansible_paramiko_{field if field != 'key' else 'private_key_file'}", *names)
    for field, names in _SSH_VARS.items()
}


@dataclass
class SSHOptions:
    """What an ssh command line sets, first value of each winning (as OpenSSH reads it)."""

    host: str | None = None
    port: int | None = None
    user: str | None = None
    identity_file: str | None = None
    jump: tuple[str, ...] = ()
    proxy_command: str | None = None
    config: str | None = None  # -F FILE: the last one wins (ssh.c keeps the last)
    jump_set: bool = False  # ssh's jump_host is set (-J or -o ProxyJump; `none` too)
    command_set: bool = False  # ssh's proxy_command is set (ProxyCommand, `none`, a jump)
    problem: str | None = None

    def refuse(self, problem: str) -> None:
        """Keep the first problem: it is the one ssh stops at."""
        self.problem = self.problem or problem


def _first_set(v: dict[str, Any], names: tuple[str, ...]) -> Any:
    """The first of `names` that is set. Ansible reads an option's variable list last one
    wins: the legacy `ansible_ssh_*` name is listed after the modern one (and
    `ansible_paramiko_*` after both), so it wins when both are set."""
    for name in names:
        value = v.get(name)
        if value not in (None, ""):
            return value
    return None


def _words(value: Any, key: str, options: SSHOptions) -> list[str]:
    if not isinstance(value, str) or not value.strip():
        return []
    try:
        return split_words(value)
    except ValueError as exc:
        options.refuse(f"{key} cannot be split into words: {exc}")
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
                options.refuse(f"unknown ssh option -{flag} in {word!r}")
                break
            if flag not in _SSH_FLAGS_WITH_ARG:
                continue
            if j < len(word):
                arg = word[j:]
            elif i < len(words):
                arg = words[i]
                i += 1
            else:
                options.refuse(f"ssh option -{flag} needs a value")
                break
            _flag(flag, arg, options)
            break
    return options


def _flag(flag: str, arg: str, options: SSHOptions) -> None:
    if flag == "o":
        found = _OPTION.fullmatch(arg)
        if not found:
            options.refuse(f"ssh option -o {arg!r} is not Key=Value")
            return
        _option(found.group(1).lower(), found.group(2), options)
    elif flag == "p" and options.port is None:  # ssh reads -p only while no port is set
        options.port = _port(arg, "-p", options)
    elif flag == "l":
        options.user = options.user or arg
    elif flag == "i":
        options.identity_file = options.identity_file or arg
    elif flag == "F":
        options.config = arg
    elif flag == "J":
        _dash_j(arg, options)


def _dash_j(arg: str, options: SSHOptions) -> None:
    """ssh.c's -J: fatal after any jump (-J or -o ProxyJump, `none` too) or ProxyCommand."""
    if options.jump_set:
        options.refuse(f"ssh refuses -J {arg} after a first jump: only a single -J is permitted")
    elif options.command_set:
        options.refuse("ssh refuses -J after a ProxyCommand")
    else:
        _proxy_jump(arg, options)


def _port(text: str, where: str, options: SSHOptions) -> int | None:
    """A port as ssh's a2port reads it (`http` is 80); ssh exits on one it is not (or 0)."""
    # imported here: reading a knowledge base imports no transport (only ports in ssh args do)
    from factbook.verification.transports.sshwords import a2port

    value = a2port(text)
    if not value:
        options.refuse(f"ssh refuses port {text!r} ({where}): not a port number or service")
        return None
    return value


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1]
    return text


def _option(key: str, value: str, options: SSHOptions) -> None:
    if key == "proxycommand":
        if not options.command_set:
            options.command_set = True
            if value.strip().lower() != "none":
                options.proxy_command = value.strip()  # ssh takes the rest of the line as is
        return
    plain = _unquote(value)
    if key == "proxyjump":
        if not options.jump_set and not options.command_set:
            _proxy_jump(plain, options)
    elif key == "port":  # checked even when a port is set already, as readconf.c does
        port = _port(plain, f"-o Port={plain}", options)
        options.port = options.port or port
    elif key == "user":
        options.user = options.user or plain
    elif key == "hostname":
        options.host = options.host or plain
    elif key == "identityfile":
        options.identity_file = options.identity_file or plain


def _proxy_jump(value: str, options: SSHOptions) -> None:
    """A jump (`none` marks the jump set and sets nothing else, as ssh 9.2 does)."""
    options.jump_set = True
    if value.strip().lower() == "none":
        return
    options.jump = tuple(j.strip() for j in value.split(",") if j.strip())
    options.command_set = True


def ssh_options(v: dict[str, Any], name: str) -> SSHOptions:
    """The options Ansible's ssh command line for host `name` sets, as ssh reads them."""
    options = SSHOptions()
    read_ssh_args(_words(v.get("ansible_ssh_args"), "ansible_ssh_args", options), options)
    options.port = options.port or _var_port(v, _SSH_VARS["port"])
    options.identity_file = options.identity_file or _str(_first_set(v, _SSH_VARS["key"]))
    options.user = options.user or _str(_first_set(v, _SSH_VARS["user"]))
    for var in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        read_ssh_args(_words(v.get(var), var, options), options)
    address = _str(_first_set(v, _SSH_VARS["host"])) or name
    if options.host:  # HostName from -o: %h is the address Ansible passed, %% a percent
        options.host = re.sub(r"%[h%]", lambda m: address if m[0] == "%h" else "%", options.host)
    options.host = options.host or address  # with -F: what ssh looks up in that file
    return options


def paramiko_options(v: dict[str, Any], name: str) -> SSHOptions:
    """What Ansible's paramiko_ssh connection uses: its own variables, never the ssh
    arguments, no ssh config (an empty one), and ansible_paramiko_proxy_command."""
    host = _str(_first_set(v, _PARAMIKO_VARS["host"])) or name
    user = _str(_first_set(v, _PARAMIKO_VARS["user"]))
    options = SSHOptions(
        host=host.lower(),  # paramiko_ssh connects to remote_addr.lower()
        port=_var_port(v, _PARAMIKO_VARS["port"]),
        user=user,
        identity_file=_str(_first_set(v, _PARAMIKO_VARS["key"])),
    )
    command = v.get("ansible_paramiko_proxy_command")
    if isinstance(command, str) and command:
        replaced = {"%h": host, "%p": str(options.port or 22), "%r": str(user)}
        for token, value in replaced.items():  # str.replace in this order, as paramiko_ssh
            command = command.replace(token, value)
        options.proxy_command = _as_proxy_command(command, options)
    return options


def _as_proxy_command(command: str, options: SSHOptions) -> str | None:
    """paramiko runs the command's shlex words without a shell; ssh runs a ProxyCommand with
    `sh -c` after expanding %-tokens: the words quoted and `%` doubled run the same argv."""
    try:
        words = split_words(command)
    except ValueError as exc:
        options.refuse(f"ansible_paramiko_proxy_command cannot be split into words: {exc}")
        return None
    if not words:
        return None
    return shlex.join(words).replace("%", "%%")


def _var_port(v: dict[str, Any], names: tuple[str, ...]) -> int | None:
    port = _first_set(v, names)
    text = str(port)
    # a longer run is no port (field_problems says so) and int() refuses 4,300 digits
    if port is None or not text.isdigit() or len(text) > PORT_MAX_DIGITS:
        return None
    return int(text)


def connection_options(target: Target) -> SSHOptions:
    """The options Ansible's connection plugin for this target reads from its variables."""
    return _options(target.vars, target.name)


def _options(v: dict[str, Any], name: str) -> SSHOptions:
    if _kind(v) in _PARAMIKO:
        return paramiko_options(v, name)
    return ssh_options(v, name)


def connection(target: Target, **fields: Any) -> Target:
    """`replace(target, **fields)` with the connection fields its merged ansible_* variables
    set (fields already set are kept): one copy of the target, not two (an inventory's
    every host is copied with its groups and variables, then with these)."""
    v = fields.get("vars", target.vars)
    if not any(k in v for k in _CONNECTION_VARS):
        return replace(target, **fields) if fields else target
    if _kind(v) == "local":
        return replace(
            target,
            **fields,
            transport="local",
            python=target.python or _str(v.get("ansible_python_interpreter")),
        )
    found = _options(v, target.name)
    proxied = found.proxy_command is not None and not target.jump and not target.proxy_command
    configured = found.config is not None and not (target.jump or found.jump)
    by_ssh = (proxied or configured) and target.transport == "ssh"
    return replace(
        target,
        **fields,
        transport="openssh" if by_ssh else target.transport,
        host=target.host or found.host,
        port=target.port or found.port,
        user=target.user or found.user,
        identity_file=target.identity_file or found.identity_file,
        python=target.python or _str(v.get("ansible_python_interpreter")),
        jump=target.jump or found.jump,
        proxy_command=target.proxy_command or found.proxy_command,
        ssh_config=target.ssh_config or _config_path(found.config, _kind(v)),
    )


def _config_path(config: str | None, kind: str | None) -> str | None:
    """The ssh config the connection reads instead of ~/.ssh/config: -F's (`none`: no config
    at all, as /dev/null: once -F is given /etc/ssh/ssh_config is not read either); none for
    paramiko, which reads no ssh config."""
    if kind in _PARAMIKO:
        return os.devnull
    if config is None:
        return None
    return os.devnull if config.lower() == "none" else config


def is_port(text: str) -> bool:
    """Whether `text` is a TCP port, 1 to 65535 (read as an int only when it has at most five
    digits: Python refuses over 4,300, and an inventory may hold anything)."""
    return text.isdigit() and len(text) <= PORT_MAX_DIGITS and 1 <= int(text) <= 65535


def address_problems(target: Target) -> list[str]:
    """What ssh itself refuses in the host, user and jump hops factbook would connect to
    (ssh.c valid_hostname and valid_ruser: shell characters, white space, a comma, a
    leading `-`), whichever source named them: targets.yaml, an inventory's ansible_host,
    ansible_user or -J, an ssh:// URL. Refused where the target is read (lint, `verify`
    before anything connects), not discovered as one connection error per check."""
    from factbook.verification.transports.sshwords import (
        WordError,
        parse_jump_host,
        valid_hostname,
        valid_ruser,
    )

    out = []
    if target.transport == "local" and not target.host:
        return out
    checks: list[tuple[str, str | None, bool]] = [
        ("host", target.host, bool(target.host) and not valid_hostname(target.host or "")),
        ("user", target.user, bool(target.user) and not valid_ruser(target.user or "")),
    ]
    for field, value, bad in checks:
        password = field == "user" and ":" in (value or "")
        if not (value and (password or bad or not value.isprintable() or " " in value)):
            continue
        if any(_said_elsewhere(target.vars.get(k)) for k in _PARAMIKO_VARS[field]):
            continue  # field_problems names a vaulted or templated variable as such
        if password:
            out.append(_password_problem(field, value))
        else:
            out.append(f"{field} {shown(value)!r} is not a host or user name ssh accepts")
    port = target.port
    if port is not None and not (isinstance(port, int) and 1 <= port <= 65535):
        # an ssh:// URL's `:0` passed urllib and connected to port 22 instead (round 16)
        out.append(f"port {shown(str(port))!r} is not a number from 1 to 65535")
    for hop in target.jump:
        try:
            user, host, _ = parse_jump_host(hop)
        except WordError as exc:
            out.append(f"jump {shown(hop)!r}: {exc}")
            continue
        if not valid_hostname(host) or (user is not None and not valid_ruser(user)):
            out.append(f"jump {shown(hop)!r} is not a host or user name ssh accepts")
    return out


def _password_problem(field: str, value: str) -> str:
    """A user `ops:PASS` (a URL's userinfo, `ssh://ops:PASS@host`, as an imported dump's
    access line gave it): no account is named with a ':', ssh would log in as `ops:PASS`,
    and the password sat in clear in targets.yaml. Named with the password hidden. (A jump
    hop of an ssh:// URL is not one: its password is dropped where the URL is parsed.)"""
    hidden = value.partition(":")[0] + ":***"
    return (
        f"{field} {shown(hidden)!r} holds a password after ':' (user:PASSWORD); "
        "a target keeps no password: remove it and use a key or ssh-agent"
    )


def _said_elsewhere(value: object) -> bool:
    """A vaulted or templated value: named as such, not as a bad host or user."""
    if isinstance(value, Vaulted):
        return True
    return (
        isinstance(value, str) and not isinstance(value, Unsafe) and bool(_TEMPLATE.search(value))
    )


def field_problems(target: Target) -> list[str]:
    """What a connection field must not be: a port outside 1-65535 (or not a number), a host
    or user that an ssh command line would read as an option or split, a Jinja2 template
    (factbook evaluates none), a connection type factbook has no transport for, what ssh
    refuses on its command line, an ssh config (-F) factbook cannot hand over faithfully."""
    out = []
    v = target.vars
    names = _PARAMIKO_VARS if _kind(v) in _PARAMIKO else _SSH_VARS
    port = _first_set(v, names["port"])
    port = target.port if port is None else port
    if port is not None and not is_port(str(port)):
        out.append(f"port {shown(str(port))!r} is not a number from 1 to 65535")
    out += address_problems(target)
    for key in _CONNECTION_VARS:
        value = v.get(key)
        if isinstance(value, Vaulted):
            out.append(f"{key} is encrypted with ansible-vault, which factbook does not decrypt")
        # an `!unsafe` text is used as written, as Ansible does
        elif isinstance(value, str) and not isinstance(value, Unsafe) and _TEMPLATE.search(value):
            out.append(f"{key} is a Jinja2 template, which factbook does not evaluate")
    kind = _kind(v)
    if kind is not None and kind not in (*_SSH_CONNECTIONS, "local"):
        kind = v.get("ansible_connection")
        out.append(f"ansible_connection={kind}: factbook connects over ssh or locally only")
    if kind != "local" and any(k in v for k in _CONNECTION_VARS):
        found = connection_options(target)
        out += [found.problem] if found.problem else []
        out += _config_problems(found, target)
    if target.proxy_command is not None and target.transport != "openssh":
        out.append(
            f"a ProxyCommand needs transport openssh (the system ssh), not {target.transport}"
        )
    return out


def _config_problems(found: SSHOptions, target: Target) -> list[str]:
    """An ssh config given by -F is honoured by handing it to the system ssh (`ssh -F FILE
    HOST`, the address Ansible passes): what that cannot carry is refused, never dropped."""
    config = found.config
    if config is None:
        return []
    if config.lower() != "none" and not os.path.isabs(config):
        return [
            f"-F {config}: a relative path, which ssh opens from the folder Ansible runs in; "
            "give an absolute path"
        ]
    outside = escapes(config) if config.lower() != "none" else None
    if outside is not None and outside != _own_ssh_config():
        return [f"-F {config}: resolves to {outside}, outside the knowledge base; refusing it"]
    address = _str(_first_set(target.vars, _SSH_VARS["host"])) or target.name
    if found.jump or target.jump or found.host != address:
        what = "a jump (-J, ProxyJump)" if found.jump or target.jump else "-o HostName"
        return [f"-F {config} with {what} in the ssh arguments: factbook cannot pass both to ssh"]
    if target.transport != "openssh":
        return [f"-F {config} needs transport openssh (the system ssh), not {target.transport}"]
    return []


def _own_ssh_config() -> Path:
    """The user's ~/.ssh/config, which ssh reads anyway (load.py allows it as inventory)."""
    return Path(os.path.realpath(os.path.expanduser("~/.ssh/config")))


def _kind(v: dict[str, Any]) -> str | None:
    """ansible_connection without its collection (`ansible.builtin.local` -> local)."""
    kind = v.get("ansible_connection")
    return None if kind in (None, "") else str(kind).rsplit(".", 1)[-1]


def _str(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None
