"""The words of an ssh_config line, read as OpenSSH 9 reads them (misc.c, readconf.c).

- `argv_split`: double and single quotes, backslash escaping a quote, a backslash or (outside
  quotes) a space, any other backslash kept; `#` starts a comment only at the start of a word;
- `a2port`: a number 0-65535 (strtonum: ASCII digits), else a service name from
  /etc/services (getservbyname), so `Port ssh` is 22;
- `match_pattern`, `match_pattern_list`: Host, Match and known_hosts patterns (match.c: `*`
  and `?` only, `!` negates);
- `percent_expand`: `%x` tokens, `%%` a literal %; an unknown token is an error, as in ssh;
- `tilde` and `dollar_expand`: `~`, `~user` and `${VAR}` in file names;
- `parse_jump_host`: one ProxyJump entry, `[user@]host[:port]` or `ssh://[user@]host[:port]`
  (readconf.c parse_jump, misc.c parse_uri, parse_user_host_port);
- `local_tokens`: the tokens that describe this side (%d %i %L %l %u);
- `file_lines`: a file's lines as OpenSSH's getline reads them (ssh_config, known_hosts).
"""

from __future__ import annotations

import os
import pwd
import re
import socket
import string
from collections.abc import Mapping

from factbook.knowledge.limits import PORT_MAX_DIGITS

_SHELLISH = set("'`\"$\\;&<>|(){},")


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


_STRTONUM = re.compile(r"[ \t\n\v\f\r]*[+-]?[0-9]+")  # strtoll's decimal form, ASCII only


def a2port(text: str) -> int | None:
    """misc.c a2port: strtonum(0..65535) (`+22` and ` 22` are 22; `²` or `٢٢` are no
    number), else a service name from /etc/services; None when it names no port. Callers
    refuse 0 as ssh does (`<= 0`)."""
    if _STRTONUM.fullmatch(text):
        if len(text.lstrip(" \t\n\v\f\r+-").lstrip("0")) > PORT_MAX_DIGITS:  # strtonum's range
            return None  # (and int() refuses 4,300 digits)
        value = int(text)
        return value if 0 <= value <= 65535 else None
    try:
        return socket.getservbyname(text, "tcp")
    except (OSError, UnicodeError, ValueError):  # no such service; not encodable; a NUL
        return None


def match_pattern(text: str, pattern: str) -> bool:
    """match.c match_pattern: `*` any run of characters, `?` any one, everything else itself
    (`[ab]` is two brackets and two letters, not a class as in fnmatch). The greedy walk
    with one backtrack point: linear for most patterns, never exponential."""
    t = p = 0
    star_p, star_t = -1, 0
    while t < len(text):
        if p < len(pattern) and (pattern[p] == "?" or pattern[p] == text[t]):
            t, p = t + 1, p + 1
        elif p < len(pattern) and pattern[p] == "*":
            star_p, star_t = p, t
            p += 1
        elif star_p >= 0:
            star_t += 1
            t, p = star_t, star_p + 1
        else:
            return False
    return all(c == "*" for c in pattern[p:])


def match_pattern_list(text: str, patterns: list[str] | tuple[str, ...]) -> bool | None:
    """match.c match_pattern_list over already split patterns: True on a positive match,
    False when a negated pattern (`!x`) matches (it wins over any positive one), None when
    none matches."""
    hit: bool | None = None
    for pattern in patterns:
        negated = pattern.startswith("!")
        if match_pattern(text, pattern[1:] if negated else pattern):
            if negated:
                return False
            hit = True
    return hit


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


_TIME_PART = re.compile(r"[ \t\n\v\f\r]*([+-]?)([0-9]+)([sSmMhHdDwW]?)")
_TIME_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_INT_MAX = 2**31 - 1


def convtime(text: str) -> int | None:
    """misc.c convtime, which ssh reads ConnectTimeout, ServerAliveInterval and
    ForwardX11Timeout with: ASCII digits (strtol: leading space, a sign) each with an
    optional unit (`1m30s`), at most INT_MAX seconds; None where ssh says "invalid time
    value" (`²`, `nan`, `1e400`, 400 digits: Python's float() took them, one as a
    ValueError, the others as infinity or nan)."""
    total, i = 0, 0
    while i < len(text) or not text:
        found = _TIME_PART.match(text, i)
        if found is None:
            return None
        sign, digits, unit = found.groups()
        if len(digits) > 18 or (not unit and found.end() != len(text)):
            return None
        seconds = int(digits)
        if sign == "-" and seconds:
            return None
        multiplier = _TIME_UNITS[unit.lower()]
        if seconds > _INT_MAX // multiplier or total > _INT_MAX - seconds * multiplier:
            return None
        total += seconds * multiplier
        i = found.end()
    return total


def valid_hostname(name: str) -> bool:
    """ssh.c valid_hostname: what ssh refuses before it connects (shell characters, spaces)."""
    if not name or name.startswith("-"):
        return False
    # every white space but " " is unprintable to Python (a character at a time: 12 us a
    # host name, an inventory's every host)
    return name.isprintable() and " " not in name and _SHELLISH.isdisjoint(name)


_RUSER_BAD = set("'`\";&<>|(){}")


def valid_ruser(name: str) -> bool:
    """ssh.c valid_ruser: a user ssh refuses on its command line (`-l USER`, `USER@host`):
    a leading `-`, shell characters, a `-` after white space, a trailing backslash. factbook
    hands every user to ssh or paramiko as that command-line user, so it refuses the same."""
    if not name or name.startswith("-") or name.endswith("\\"):
        return False
    if any(c in _RUSER_BAD or not c.isprintable() for c in name):
        return False
    return not any(c.isspace() and name[i + 1 : i + 2] == "-" for i, c in enumerate(name))


def is_address(name: str) -> bool:
    """A numeric address (ssh keeps its case; a name is lower-cased)."""
    try:
        socket.getaddrinfo(name, None, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError, ValueError):
        return False
    return True


def parse_jump_host(spec: str) -> tuple[str | None, str, int | None]:
    """One ProxyJump entry -> (user, host, port), as readconf.c parse_jump reads it: an
    `ssh://` URI (the scheme as written, lower case; the user up to the first `@`,
    URL-decoded, `;parameters` dropped; the host a valid domain name; no path), else
    `[user@]host[:port]` (the user up to the last `@`). Nothing is stripped: `a, b` is a
    host ` b`, which ssh refuses. A port may be a service name; 0 is no port."""
    if spec[:1].isspace():  # `ProxyJump a, b`: ssh refuses the entry ` b`
        raise WordError(f"bad jump host {spec!r}: leading white space")
    if spec.startswith("ssh://"):
        return _parse_ssh_uri(spec)
    user: str | None = None
    text = spec
    if "@" in text:
        user, _, text = text.rpartition("@")
        if not user:
            raise WordError(f"bad jump host {spec!r}: empty user")
    host, rest, delim = _hpdelim(text, spec)
    if delim == "/":
        raise WordError(f"bad jump host {spec!r}: a '/' after the host")
    return user, _clean_host(host), _jump_port(rest, spec)


def _parse_ssh_uri(spec: str) -> tuple[str | None, str, int | None]:
    """misc.c parse_uri("ssh", ...) without a path."""
    text = spec[len("ssh://") :]
    user: str | None = None
    if "@" in text:
        info, _, text = text.partition("@")
        info = info.split(";", 1)[0]
        if not info:
            raise WordError(f"bad jump host {spec!r}: empty user")
        user = _urldecode(info, spec)
    host, rest, delim = _hpdelim(text, spec)
    host = _valid_domain(_clean_host(host), spec)
    port = None
    if rest and delim == ":":
        port_text, slash, path = rest.partition("/")
        port = _jump_port(port_text, spec)
        rest = path if slash else ""
    if rest:
        raise WordError(f"bad jump host {spec!r}: a path in an ssh:// URI")
    return user, host, port


def _hpdelim(text: str, spec: str) -> tuple[str, str, str]:
    """misc.c hpdelim2: (host, the rest after the delimiter, the delimiter `:` or `/` or
    ""); a bracketed host ends at `]`, which must end the text or precede a delimiter."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise WordError(f"bad jump host {spec!r}: no closing ']'")
        at = end + 1
    else:
        found = [i for i in (text.find(":"), text.find("/")) if i >= 0]
        at = min(found) if found else len(text)
    if at == len(text):
        host, rest, delim = text, "", ""
    elif text[at] in ":/":
        host, rest, delim = text[:at], text[at + 1 :], text[at]
    else:
        raise WordError(f"bad jump host {spec!r}: text after ']'")
    if not host:
        raise WordError(f"bad jump host {spec!r}: no host")
    return host, rest, delim


def _clean_host(host: str) -> str:
    """misc.c cleanhostname: `[name]` -> `name`."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def _jump_port(text: str, spec: str) -> int | None:
    if not text:
        return None
    port = a2port(text)
    if not port:
        raise WordError(f"bad jump host {spec!r}: bad port {text!r}")
    return port


def _urldecode(text: str, spec: str) -> str:
    """misc.c urldecode: `+` a space, `%XX` a byte; a `%` without two hex digits is refused."""
    out = bytearray()
    data = text.encode("utf-8", "surrogateescape")
    i = 0
    while i < len(data):
        c = data[i]
        if c == ord("+"):
            out.append(ord(" "))
        elif c == ord("%"):
            pair = data[i + 1 : i + 3]
            if len(pair) < 2 or not all(chr(b) in string.hexdigits for b in pair):
                raise WordError(f"bad jump host {spec!r}: bad %-escape in the user")
            out.append(int(pair, 16))
            i += 2
        else:
            out.append(c)
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _valid_domain(name: str, spec: str) -> str:
    """misc.c valid_domain: ASCII letters, digits, `.`, `-`, `_`, starting with a letter or
    digit, no `..`; a trailing dot dropped."""
    ok = (
        name[:1].isascii()
        and name[:1].isalnum()
        and ".." not in name
        and all(c.isascii() and (c.isalnum() or c in ".-_") for c in name)
    )
    if not ok:
        raise WordError(f"bad jump host {spec!r}: {name!r} is not a valid domain name")
    return name[:-1] if name.endswith(".") else name
