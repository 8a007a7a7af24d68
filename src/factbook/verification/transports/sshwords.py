"""The words of an ssh_config line, read as OpenSSH 9 reads them (misc.c, readconf.c).

- `argv_split`: double and single quotes, backslash escaping a quote, a backslash or (outside
  quotes) a space, any other backslash kept; `#` starts a comment only at the start of a word;
- `a2port`: a number 0-65535, else a service name from /etc/services (getservbyname), so
  `Port ssh` is 22;
- `percent_expand`: `%x` tokens, `%%` a literal %; an unknown token is an error, as in ssh;
- `tilde` and `dollar_expand`: `~`, `~user` and `${VAR}` in file names;
- `parse_jump_host`: one ProxyJump entry, `[user@]host[:port]` or `ssh://[user@]host[:port]`;
- `local_tokens`: the tokens that describe this side (%d %i %L %l %u);
- `file_lines`: a file's lines as OpenSSH's getline reads them (ssh_config, known_hosts).
"""

from __future__ import annotations

import os
import pwd
import re
import socket
from collections.abc import Mapping

_SHELLISH = set("'`\"$\\;&<>|(){}")


class WordError(ValueError):
    """A value OpenSSH would refuse; the caller adds file:line."""


def file_lines(text: str) -> list[str]:
    """The lines of an ssh_config or known_hosts file as OpenSSH reads them: cut at newlines
    only, each ending at a NUL (a C string). A vertical tab, form feed, NEL, LS or PS inside a
    line belongs to it: str.splitlines cut there, so `# note<VT>HostName evil` became a
    HostName line that ssh never reads, and factbook connected elsewhere than ssh does."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.split("\0", 1)[0] for line in lines]


def argv_split(text: str) -> list[str]:
    """misc.c argv_split(s, terminate_on_comment=1)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] in " \t":
            i += 1
            continue
        if text[i] == "#":
            break
        word: list[str] = []
        quote = ""
        while i < n:
            c = text[i]
            if (
                c == "\\"
                and i + 1 < n
                and (text[i + 1] in "'\"\\" or (not quote and text[i + 1] == " "))
            ):
                word.append(text[i + 1])
                i += 2
                continue
            if not quote and c in " \t":
                break
            if not quote and c in "'\"":
                quote = c
            elif quote and c == quote:
                quote = ""
            else:
                word.append(c)
            i += 1
        if quote:
            raise WordError("invalid quotes")
        out.append("".join(word))
    return out


def a2port(text: str) -> int | None:
    """misc.c a2port: the port a Port value names, or None when it names none."""
    if text.isdigit():
        value = int(text)
        return value if value <= 65535 else None
    try:
        return socket.getservbyname(text, "tcp")
    except OSError:
        return None


def percent_expand(text: str, tokens: Mapping[str, str], what: str) -> str:
    """misc.c percent_expand: `%%` is %, `%x` is tokens[x]; anything else is refused."""
    if "%" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(text):
            raise WordError(f"{what}: a lone % at the end of {text!r}")
        key = text[i + 1]
        if key == "%":
            out.append("%")
        elif key in tokens:
            out.append(tokens[key])
        else:
            raise WordError(f"{what}: unknown token %{key} in {text!r}")
        i += 2
    return "".join(out)


def tilde(path: str) -> str:
    """misc.c tilde_expand_filename (the home from $HOME, as the rest of factbook)."""
    return os.path.expanduser(path) if path.startswith("~") else path


_DOLLAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def dollar_expand(text: str, what: str) -> str:
    """misc.c dollar_expand: `${VAR}` from the environment; an unset one is refused."""

    def one(match: re.Match[str]) -> str:
        value = os.environ.get(match.group(1))
        if value is None:
            raise WordError(f"{what}: environment variable ${{{match.group(1)}}} is not set")
        return value

    return _DOLLAR.sub(one, text)


def local_user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def local_tokens() -> dict[str, str]:
    """%d home, %i uid, %L short host name, %l host name, %u local user."""
    this = socket.gethostname()
    return {
        "d": os.path.expanduser("~"),
        "i": str(os.getuid()),
        "L": this.split(".")[0],
        "l": this,
        "u": local_user(),
    }


def valid_hostname(name: str) -> bool:
    """ssh.c valid_hostname: what ssh refuses before it connects (shell characters, spaces)."""
    if not name or name.startswith("-"):
        return False
    return not any(c in _SHELLISH or c.isspace() or not c.isprintable() for c in name)


def is_address(name: str) -> bool:
    """A numeric address (ssh keeps its case; a name is lower-cased)."""
    try:
        socket.getaddrinfo(name, None, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError, ValueError):
        return False
    return True


def parse_jump_host(spec: str) -> tuple[str | None, str, int | None]:
    """One ProxyJump entry -> (user, host, port), as misc.c parse_ssh_uri and
    parse_user_host_port read it (a port may be a service name)."""
    text = spec.strip()
    if text[:6].lower() == "ssh://":
        text = text[6:]
        if text.endswith("/"):
            text = text[:-1]
        if "/" in text:
            raise WordError(f"bad jump host {spec!r}: a path in an ssh:// URI")
    user: str | None = None
    if "@" in text:
        user, _, text = text.rpartition("@")
        if not user:
            raise WordError(f"bad jump host {spec!r}: empty user")
        user = user.split(";", 1)[0]  # ssh:// URIs may carry ;parameters after the user
    port_text = ""
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise WordError(f"bad jump host {spec!r}")
        port_text = rest[1:]
    else:
        host, _, port_text = text.partition(":")
    if not host:
        raise WordError(f"bad jump host {spec!r}: no host")
    port: int | None = None
    if port_text:
        port = a2port(port_text)
        if not port:
            raise WordError(f"bad jump host {spec!r}: bad port {port_text!r}")
    return user, host, port
