"""ssh_config evaluated the way OpenSSH 9 does it, for the paramiko transport.

paramiko's SSHConfig ignores `Include` (a host defined in an included file resolves to a direct
connection and loses its ProxyJump) and differs from OpenSSH on Match. This module follows
ssh_config(5) and readconf.c:

- one pass over the file, `Include` expanded in place (globs; relative paths are relative to
  ~/.ssh); an Include inside a non-matching Host/Match block includes nothing that matches;
- words split as OpenSSH splits them (sshwords.py: quotes, escapes, `#`);
- the FIRST value obtained for a keyword wins, except IdentityFile and CertificateFile, which
  accumulate; ProxyJump and ProxyCommand compete (whichever comes first); `none` is a value;
- `Host` patterns (`*`, `?`, `!negated`) match the host as typed, case-sensitively; `Match host`
  matches the HostName already set (else the host as typed), `Match user` the User already set
  (else the local user), plus originalhost, localuser, tagged, all; host names compare
  case-insensitively there;
- `Match final` (and `canonical`) as ssh: a second pass once the host name is known, in which
  `Host` patterns match that name and the values of the first pass stay;
- command-line user and port (the target's fields) come first, as `ssh -l/-p` do;
- tokens (`%h %p %r %n %%`, and `%C %d %i %k %L %l %u` in file names) expanded where ssh
  expands them: HostName, ProxyJump, ProxyCommand, IdentityFile, CertificateFile,
  UserKnownHostsFile.

`Match exec` is never run: when its outcome changes what a host resolves to (both outcomes are
evaluated), that host alone is refused with the file and line; so are `Match localnetwork` and
a CanonicalizeHostname that would need DNS. `transport: openssh` handles those.
tests/test_transport_sshconfig.py and tests/test_sshconfig_oracle.py check the result against
`ssh -G` and real ssh runs.
"""

from __future__ import annotations

import fnmatch
import glob
import hashlib
import os
import socket
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from factbook.errors import UsageError
from factbook.knowledge.kbfiles import current_root, escapes, outside_problem
from factbook.knowledge.names import shown
from factbook.verification.transports.sshwords import (
    WordError,
    a2port,
    argv_split,
    convtime,
    dollar_expand,
    file_lines,
    is_address,
    local_tokens,
    local_user,
    match_pattern,
    match_pattern_list,
    parse_jump_host,
    percent_expand,
    tilde,
    valid_hostname,
)

MULTI = frozenset({"identityfile", "certificatefile"})
DEFAULT_IDENTITIES = (
    "~/.ssh/id_rsa",
    "~/.ssh/id_ecdsa",
    "~/.ssh/id_ecdsa_sk",
    "~/.ssh/id_ed25519",
    "~/.ssh/id_ed25519_sk",
    "~/.ssh/id_xmss",
    "~/.ssh/id_dsa",
)
MAX_INCLUDE_DEPTH = 16
# Files one evaluation may read through Include, counting each time a file is read again:
# an Include naming one file ten times, sixteen levels deep, is 10**16 reads (`ssh -G` runs
# until killed). Depth alone does not bound the work, the number of reads does.
MAX_INCLUDE_READS = 16384  # four full globs (MAX_INCLUDE_MATCHES), both passes
MAX_CONFIG_BYTES = 4 << 20
MAX_UNDECIDED = 6  # Match exec/localnetwork outcomes explored per host (2**6 evaluations)
RAW = frozenset({"proxycommand", "proxyjump", "localcommand", "remotecommand"})
RAW |= frozenset({"knownhostscommand"})
UNDECIDABLE = frozenset({"exec", "localnetwork"})
WORDS = frozenset({"userknownhostsfile", "globalknownhostsfile"})  # every word is a value
# ssh_config(5)'s keywords, lower-cased (knowledge.fleet: a file whose first line starts with
# one is an ssh config)
_KEYWORD_TEXT = """
    host match include addkeystoagent addressfamily batchmode bindaddress bindinterface
    canonicaldomains canonicalizefallbacklocal canonicalizehostname canonicalizemaxdots
    canonicalizepermittedcnames casignaturealgorithms certificatefile checkhostip ciphers
    clearallforwardings compression connectionattempts connecttimeout controlmaster controlpath
    controlpersist dynamicforward enableescapecommandline enablesshkeysign escapechar
    exitonforwardfailure fingerprinthash forkafterauthentication forwardagent forwardx11
    forwardx11timeout forwardx11trusted gatewayports globalknownhostsfile gssapiauthentication
    gssapidelegatecredentials hashknownhosts hostbasedacceptedalgorithms
    hostbasedauthentication hostkeyalgorithms hostkeyalias hostname identitiesonly
    identityagent identityfile ignoreunknown kbdinteractiveauthentication kexalgorithms
    knownhostscommand localcommand localforward loglevel logverbose macs
    nohostauthenticationforlocalhost numberofpasswordprompts passwordauthentication
    permitlocalcommand permitremoteopen pkcs11provider port preferredauthentications
    proxycommand proxyjump proxyusefdpass pubkeyacceptedalgorithms pubkeyauthentication
    rekeylimit remotecommand remoteforward requesttty requiredrsasize revokedhostkeys
    securitykeyprovider sendenv serveralivecountmax serveraliveinterval sessiontype setenv
    stdinnull streamlocalbindmask streamlocalbindunlink stricthostkeychecking syslogfacility
    tcpkeepalive tag tunnel tunneldevice updatehostkeys user userknownhostsfile
    verifyhostkeydns visualhostkey xauthlocation
"""
KEYWORDS = frozenset(_KEYWORD_TEXT.split())
# the keywords OpenSSH reads more than one word for (readconf.c): any other with a second
# word is refused, in any Host or Match block, "keyword X extra arguments at end of line"
MANY_WORDS = frozenset(
    {
        "host", "match", "include", "addkeystoagent", "canonicaldomains",
        "canonicalizepermittedcnames", "globalknownhostsfile", "userknownhostsfile",
        "knownhostscommand", "localcommand", "remotecommand", "proxycommand", "proxyjump",
        "localforward", "remoteforward", "permitremoteopen", "logverbose", "rekeylimit",
        "sendenv", "setenv", "channeltimeout",
    }
)  # fmt: skip


# readconf.c's other spellings of a keyword: read as the keyword itself (`IdentityFile2 k`
# adds an identity, as in ssh)
ALIASES = {
    "identityfile2": "identityfile",
    "pubkeyacceptedkeytypes": "pubkeyacceptedalgorithms",
    "hostbasedkeytypes": "hostbasedacceptedalgorithms",
    "challengeresponseauthentication": "kbdinteractiveauthentication",
    "skeyauthentication": "kbdinteractiveauthentication",
    "tisauthentication": "kbdinteractiveauthentication",
    "dsaauthentication": "pubkeyauthentication",
    "keepalive": "tcpkeepalive",
    "smartcarddevice": "pkcs11provider",
}
# What ssh 9 reads besides KEYWORDS and ALIASES: deprecated and unsupported keywords (a
# warning, not an error), Debian's GSSAPI ones, and those of later releases (a config written
# for them is read as they read it). Any other keyword makes ssh refuse the file ("Bad
# configuration option") unless an IgnoreUnknown set before it names it.
_OTHER_TEXT = """
    afstokenpassing cipher compressionlevel fallbacktorsh globalknownhostsfile2
    gssapiclientidentity gssapikexalgorithms gssapikeyexchange gssapirenewalforcesrekey
    gssapiserveridentity gssapitrustdns ipqos kbdinteractivedevices kerberosauthentication
    kerberostgtpassing protocol protocolkeepalives rhostsauthentication rhostsrsaauthentication
    rsaauthentication setuptimeout useblacklistedkeys useprivilegedport userknownhostsfile2
    useroaming usersh channeltimeout obscurekeystroketiming refuseconnection warnweakcrypto
"""
OTHER_KEYWORDS = frozenset(_OTHER_TEXT.split())
_FLAG = ("yes", "no", "true", "false")
_FLAG_KEYWORDS = """
    batchmode canonicalizefallbacklocal checkhostip clearallforwardings enableescapecommandline
    enablesshkeysign exitonforwardfailure forkafterauthentication forwardx11 forwardx11trusted
    gatewayports hashknownhosts hostbasedauthentication identitiesonly
    kbdinteractiveauthentication nohostauthenticationforlocalhost passwordauthentication
    permitlocalcommand proxyusefdpass stdinnull streamlocalbindunlink tcpkeepalive visualhostkey
"""
# readconf.c parse_time: read by convtime, a bad value refuses the file like a bad port
TIME_KEYWORDS = frozenset({"connecttimeout", "serveraliveinterval", "forwardx11timeout"})
# readconf.c's multistate tables: a value outside its keyword's table makes ssh refuse the
# whole file, in whichever block it stands (values are parsed before activity is checked)
CHOICES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(_FLAG_KEYWORDS.split(), _FLAG),
    "stricthostkeychecking": (*_FLAG, "ask", "off", "accept-new"),
    "canonicalizehostname": (*_FLAG, "always"),
    "verifyhostkeydns": (*_FLAG, "ask"),
    "updatehostkeys": (*_FLAG, "ask"),
    "pubkeyauthentication": (*_FLAG, "unbound", "host-bound"),
    "addressfamily": ("inet", "inet6", "any"),
    "controlmaster": (*_FLAG, "auto", "ask", "autoask"),
    "requesttty": (*_FLAG, "force", "auto"),
    "sessiontype": ("none", "subsystem", "default"),
    "tunnel": (*_FLAG, "ethernet", "point-to-point"),
    "compression": ("yes", "no"),
}


# Apple's ssh reads these too (its keychain); the ssh of any other system refuses them
APPLE_KEYWORDS = frozenset({"usekeychain"})


def known_keywords(platform: str = sys.platform) -> frozenset[str]:
    """The keywords the ssh of `platform` reads: a config written on a Mac says `UseKeychain
    yes`, which macOS's ssh takes and Linux's refuses (unless IgnoreUnknown names it)."""
    known = KEYWORDS | OTHER_KEYWORDS | frozenset(ALIASES.values())
    return known | APPLE_KEYWORDS if platform == "darwin" else known


KNOWN = known_keywords()


def flag(value: str | None) -> bool:
    """A yes/no keyword's value as ssh reads it (`yes` and `true`, any case, are yes)."""
    return value is not None and value.lower() in ("yes", "true")


@dataclass(frozen=True)
class Line:
    keyword: str  # lower case
    args: tuple[str, ...]
    where: str  # file:line
    raw: str = ""  # the value as written (ProxyCommand keeps its quotes)


@dataclass(frozen=True)
class Jump:
    """One ProxyJump entry after token expansion: what `ssh -l user -p port host` gets."""

    spec: str
    user: str | None
    host: str
    port: int | None


@dataclass
class Resolved:
    """What OpenSSH would use for one host (the fields `ssh -G` prints, raw)."""

    host: str  # as typed
    hostname: str
    port: int
    user: str
    identity_files: list[str]  # raw (tokens and ~ unexpanded); the defaults when none is set
    identity_files_set: bool
    options: dict[str, str] = field(default_factory=dict)  # other keywords, first value
    where: dict[str, str] = field(default_factory=dict)  # keyword -> file:line
    certificate_files: list[str] = field(default_factory=list)  # raw
    sources: dict[str, list[str]] = field(default_factory=dict)  # multi keyword -> file:line each
    words: dict[str, list[str]] = field(default_factory=dict)  # WORDS keyword -> every word

    def get(self, keyword: str) -> str | None:
        return self.options.get(keyword.lower())

    def settings(self) -> tuple[object, ...]:
        """What decides the connection (not where it was written): two equal settings connect
        the same way."""
        return (
            self.hostname,
            self.port,
            self.user,
            tuple(self.identity_files),
            tuple(self.certificate_files),
            tuple(sorted(self.options.items())),
            tuple(sorted((k, tuple(v)) for k, v in self.words.items())),
        )

    @property
    def proxy_jump(self) -> str | None:
        """The jump list, its comment cut; None for `none` as written (readconf.c compares
        the uncut text: `ProxyJump none # direct` jumps through a host named none)."""
        value = self.get("proxyjump")
        return None if value is None or value.lower() == "none" else _jump_text(value)

    @property
    def proxy_command(self) -> str | None:
        value = self.get("proxycommand")
        return None if value is None or value.lower() == "none" else value

    def tokens(self) -> dict[str, str]:
        """The tokens of file-name keywords (IdentityFile, CertificateFile, ...)."""
        local = local_tokens()
        conn = f"{local['l']}{self.hostname}{self.port}{self.user}"
        return {
            **local,
            "C": hashlib.sha1(conn.encode()).hexdigest(),
            "h": self.hostname,
            "k": self.get("hostkeyalias") or self.host,
            "n": self.host,
            "p": str(self.port),
            "r": self.user,
        }

    def _proxy_tokens(self) -> dict[str, str]:
        return {"h": self.hostname, "n": self.host, "p": str(self.port), "r": self.user}

    def expand(self, text: str, keyword: str = "IdentityFile") -> str:
        """A file name as ssh opens it: `~`, then tokens and `${VAR}`."""
        where = self.where.get(keyword.lower(), keyword)
        try:
            return dollar_expand(percent_expand(tilde(text), self.tokens(), keyword), keyword)
        except WordError as exc:
            raise UsageError(f"{where}: {exc}") from None

    def _expand_multi(self, keyword: str, values: list[str]) -> list[str]:
        wheres = self.sources.get(keyword.lower(), [])
        out = []
        # the tokens once for all values, and only when one has a `%`: each costs a user and
        # host name lookup and a hash (a fleet resolves several per box)
        tokens = self.tokens() if any("%" in v for v in values) else {}
        for i, value in enumerate(values):
            where = wheres[i] if i < len(wheres) else keyword
            try:
                path = percent_expand(tilde(value), tokens, keyword)
            except WordError as exc:
                raise UsageError(f"{where}: {exc}") from None
            try:
                out.append(dollar_expand(path, keyword))
            except WordError:
                continue  # ssh: "the setting for that keyword will be ignored"
        return out

    def identity_paths(self) -> list[str]:
        """Every identity file, expanded (present or not: ssh skips the missing ones)."""
        return self._expand_multi("IdentityFile", self.identity_files)

    def certificate_paths(self) -> list[str]:
        return self._expand_multi("CertificateFile", self.certificate_files)

    def proxy_command_expanded(self) -> str | None:
        """ProxyCommand with %h %n %p %r %% expanded (the shell runs the rest)."""
        command = self.proxy_command
        if command is None:
            return None
        try:
            return percent_expand(command, self._proxy_tokens(), "ProxyCommand")
        except WordError as exc:
            raise UsageError(f"{self.where.get('proxycommand')}: {exc}") from None

    def jumps(self) -> list[Jump]:
        """ProxyJump's hosts, outermost first, tokens expanded as ssh expands the implicit
        `ssh -W` command it builds from them (%h %n %p %r of this host)."""
        value = self.proxy_jump
        if value is None:
            return []
        where = self.where.get("proxyjump", "ProxyJump")
        out = []
        specs = value.split(",")
        tokens = self._proxy_tokens()
        for i, spec in enumerate(specs):
            try:
                user, host, port = parse_jump_host(spec)  # ssh reads the raw syntax first
                if i < len(specs) - 1:  # `-J EXPANDED` for the next ssh, read again there
                    user, host, port = parse_jump_host(percent_expand(spec, tokens, "ProxyJump"))
                else:  # `[-l USER] [-p PORT] HOST` of the `ssh -W` command, each expanded
                    user = percent_expand(user, tokens, "ProxyJump") if user else None
                    host = percent_expand(host, tokens, "ProxyJump")
            except WordError as exc:
                raise UsageError(f"{where}: {exc}") from None
            shown = f"[{host}]" if ":" in host and port else host
            text = f"{user + '@' if user else ''}{shown}{f':{port}' if port else ''}"
            out.append(Jump(text, user, host, port))
        last = out[-1]
        _, written, _ = parse_jump_host(value.split(",")[-1])  # ssh compares it unexpanded
        if (
            written == self.hostname
            and (last.port or 22) == self.port
            and ((last.user or self.user) == self.user)
        ):
            raise UsageError(f"{where}: jumphost loop via {last.host} (host {self.host})")
        return out


class _Undecided(Exception):
    """The outcome of a criterion factbook does not evaluate (Match exec) is needed."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def _split(text: str, where: str) -> tuple[str, tuple[str, ...], str] | None:
    """readconf.c: the keyword (up to whitespace or one `=`), then the rest split in words.
    Whitespace before the keyword is space, tab, CR or LF (strdelim); after the last word,
    a form feed too."""
    text = text.lstrip(" \t\r\n").rstrip(" \t\r\n\f")
    if not text or text.startswith("#"):
        return None
    i = 0
    while i < len(text) and text[i] not in " \t=":
        i += 1
    key, rest = text[:i], text[i:]
    if not key.isascii() or not key.isalnum():  # `\v  HostName x`: no keyword ssh knows
        raise UsageError(f"{where}: Bad configuration option: {shown(key)!r}")
    rest = rest.lstrip(" \t")
    if rest.startswith("="):
        rest = rest[1:].lstrip(" \t")
    if not key:
        return None
    if not rest:
        raise UsageError(f'{where}: no argument after keyword "{key}"')
    key = key.lower()
    key = ALIASES.get(key, key)
    if key == "proxyjump":
        _check_jump(rest, where)
        return key, tuple(rest.split()), rest
    if key in RAW:
        return key, tuple(rest.split()), rest
    if key == "match":
        return key, tuple(strdelim_words(rest)), rest
    try:
        args = argv_split(rest)
    except WordError as exc:
        raise UsageError(f"{where}: {exc}") from None
    if len(args) > 1 and key in KEYWORDS and key not in MANY_WORDS:
        raise UsageError(f"{where}: keyword {key} extra arguments at end of line")
    if args:
        _check_value(key, args[0], where)
    return key, tuple(args), rest


def _check_value(key: str, value: str, where: str) -> None:
    """The value checks readconf.c makes of every line, active or not: a file with one bad
    value is refused for every host, by ssh and so here."""
    if key == "port":
        port = a2port(value)
        if not port:
            raise UsageError(f"{where}: Bad port {shown(value)!r}")
    if key in TIME_KEYWORDS and convtime(value) is None:
        raise UsageError(f"{where}: invalid time value {shown(value)!r} for {key}")
    choices = CHOICES.get(key)
    if choices is not None and value.lower() not in choices:
        raise UsageError(f"{where}: unsupported option {shown(value)!r} for {key}")


def _jump_text(value: str) -> str:
    """readconf.c parse_jump: the list is the text up to a `#`, trailing space trimmed."""
    return value.split("#", 1)[0].rstrip(" \t\n\v\f\r")


def _check_jump(raw: str, where: str) -> None:
    """Every entry of every ProxyJump line, active or not, as ssh checks its syntax."""
    if raw.lower() == "none":
        return
    for spec in _jump_text(raw).split(","):
        try:
            parse_jump_host(spec)
        except WordError as exc:
            raise UsageError(f"{where}: Invalid ProxyJump: {exc}") from None


def strdelim_words(text: str) -> list[str]:
    """misc.c strdelim, repeated, as match_cfg_line cuts a Match line: words end at space,
    tab, CR, LF or one `=`; only double quotes group (`'web'` keeps its quotes); no
    backslash escapes. An unclosed quote ends the words there, as in ssh."""
    words: list[str] = []
    rest: str | None = text
    while rest is not None:
        cut = next((i for i, c in enumerate(rest) if c in ' \t\r\n"='), None)
        if cut is None:
            words.append(rest)
            break
        if rest[cut] == '"':
            closing = rest.find('"', cut + 1)
            if closing < 0:
                break
            words.append(rest[:cut] + rest[cut + 1 : closing])
            rest = rest[closing + 1 :].lstrip(" \t\r\n")
            continue
        words.append(rest[:cut])
        equals = rest[cut] == "="
        rest = rest[cut + 1 :].lstrip(" \t\r\n")
        if not equals and rest.startswith("="):
            rest = rest[1:].lstrip(" \t\r\n")
    return words


def _pattern_list(patterns: list[str], value: str, *, lower: bool) -> bool:
    """match.c match_pattern_list: a matching negated pattern wins over any positive one;
    `lower`: both lower-cased (match_hostname, for Match host/originalhost)."""
    if lower:
        value, patterns = value.lower(), [pattern.lower() for pattern in patterns]
    return match_pattern_list(value, patterns) is True


def _host_line(patterns: tuple[str, ...], host: str, where: str) -> bool:
    """readconf.c oHost: each word a case-sensitive pattern; a negated match ends the line."""
    active = False
    for pattern in patterns:
        if not pattern:
            raise UsageError(f"{where}: Host has an empty pattern")
        negated = pattern.startswith("!")
        if match_pattern(host, pattern[1:] if negated else pattern):
            if negated:
                return False
            active = True
    return active


MAX_INCLUDE_MATCHES = 4096  # files one Include pattern may name (ssh has no bound; a walk may)


def _globbed(pattern: str, where: str) -> list[str]:
    """The files an Include pattern matches, sorted, as glob(3) finds them (`*` and `?`
    skip names starting with a dot). In a knowledge base's own config (kbfiles.confined)
    the pattern's fixed folder must lie inside the root before anything is listed, and no
    folder the walk enters may lead out of it (a link to `/`): `/*/*/*/x` would walk the
    whole machine, and what it found would tell what exists outside. The walk stops past
    MAX_INCLUDE_MATCHES names."""
    parts = pattern.split("/")
    fixed = next((i for i, part in enumerate(parts) if glob.has_magic(part)), len(parts))
    folder = "/".join(parts[:fixed]) or "/"
    if fixed == len(parts):  # no wildcard: the file itself (read, and confined, by _lines)
        return [pattern] if os.path.lexists(pattern) else []
    outside = outside_problem(folder, where)
    if outside is not None:
        raise UsageError(f"{where}: Include {shown(pattern)}: {outside.message}")
    found = [folder]
    for depth, part in enumerate(parts[fixed:], fixed + 1):
        last = depth == len(parts)
        found = [hit for base in found for hit in _matches(base, part, last, pattern, where)]
        if len(found) > MAX_INCLUDE_MATCHES:
            raise UsageError(
                f"{where}: Include {shown(pattern)} names over {MAX_INCLUDE_MATCHES} files"
            )
    return sorted(found)


def _matches(base: str, part: str, last: bool, pattern: str, where: str) -> list[str]:
    """The names in folder `base` that `part` matches; folders only, unless `last`. A
    folder that leads out of a confining root is refused, never listed."""
    if not glob.has_magic(part):
        path = os.path.join(base, part)
        return [path] if (os.path.lexists(path) if last else os.path.isdir(path)) else []
    if escapes(base) is not None:
        raise UsageError(
            f"{where}: Include {pattern}: {base} leads outside the knowledge base; "
            "refusing to list it"
        )
    try:
        names = os.listdir(base)
    except OSError:
        return []
    hidden = part.startswith(".")
    out = []
    for name in fnmatch.filter(names, part):
        path = os.path.join(base, name)
        if (hidden or not name.startswith(".")) and (last or os.path.isdir(path)):
            out.append(path)
    return out


def check_owner(path: Path, where: str) -> None:
    """readconf.c SSHCONF_CHECKPERM, which ssh applies to included files: refused when
    another user owns it or others may write it; group-writable only where the group is
    the reader's own (Debian's secure_permissions)."""
    try:
        info = os.stat(path)
    except OSError:
        return  # _lines says why it cannot be read
    mine = os.getuid()
    others_write = info.st_mode & 0o002 or (info.st_mode & 0o020 and info.st_gid != os.getgid())
    if info.st_uid not in (0, mine) or others_write:
        raise UsageError(f"{where}: Include {path}: bad owner or permissions (ssh refuses it)")


def _count_read(reads: list[int], line: Line) -> None:
    """One more file read through an Include; refused past MAX_INCLUDE_READS, so that the
    work of one lookup is bounded by the reads, not by the product of the Include lines'
    widths over their depth (which ssh does not bound either)."""
    reads[0] += 1
    if reads[0] > MAX_INCLUDE_READS:
        raise UsageError(
            f"{line.where}: Include: more than {MAX_INCLUDE_READS} files read for one host "
            "(files included again and again); not read further"
        )


class SSHConfigFile:
    """One ssh_config file (and what it includes), evaluated per host like OpenSSH."""

    def __init__(self, path: str | os.PathLike[str] | None, *, ssh_dir: str = "~/.ssh"):
        self.path = Path(os.path.expanduser(str(path))) if path else None
        self.ssh_dir = Path(os.path.expanduser(ssh_dir))
        self._cache: dict[Path, list[Line]] = {}
        self._runs: dict[Path, dict[int, _Run]] = {}
        self._includes: dict[tuple[str, Path | None], list[Path]] = {}

    def _lines(self, path: Path) -> list[Line]:
        if path not in self._cache:
            try:
                if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block forever
                    raise UsageError(f"{path}: not a regular file; refusing to read it")
                with open(path, "rb") as handle:
                    data = handle.read(MAX_CONFIG_BYTES + 1)
            except OSError as exc:
                raise UsageError(f"{path}: cannot read ssh config: {exc}") from None
            if len(data) > MAX_CONFIG_BYTES:
                raise UsageError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes; not read")
            text = data.decode("utf-8", errors="replace")
            lines = []
            for number, raw in enumerate(file_lines(text), 1):
                where = f"{path}:{number}"
                parsed = _split(raw, where)
                if parsed:
                    lines.append(Line(parsed[0], parsed[1], where, parsed[2]))
            self._cache[path] = lines
        return self._cache[path]

    def host_lines(self) -> list[Line]:
        """Every `Host` line of the file and of what it includes, in reading order."""
        out: list[Line] = []
        if self.path is not None and self.path.is_file():
            self._collect_hosts(self.path, out, 0)
        return out

    def _collect_hosts(
        self, path: Path, out: list[Line], depth: int, reads: list[int] | None = None
    ) -> None:
        reads = [0] if reads is None else reads
        for line in self._lines(path):
            if line.keyword == "host":
                out.append(line)
            elif line.keyword == "include" and depth < MAX_INCLUDE_DEPTH:
                for found in self._included(line):
                    _count_read(reads, line)
                    self._collect_hosts(found, out, depth + 1, reads)

    def _included(self, line: Line) -> list[Path]:
        """The files an `Include` line names, in ssh's order (each glob sorted); found once
        per confining root, as the files' lines are read once (each host's lookup listed
        the folders again)."""
        key = (line.where, current_root())
        if key not in self._includes:
            self._includes[key] = self._include_paths(line)
        return self._includes[key]

    def _include_paths(self, line: Line) -> list[Path]:
        out = []
        for pattern in line.args:
            full = os.path.expanduser(pattern)
            if not os.path.isabs(full):
                full = str(self.ssh_dir / full)
            for found in _globbed(full, line.where):
                outside = outside_problem(found, line.where)  # a knowledge base's own config
                if outside is not None:  # includes nothing beyond its root (kbfiles.confined)
                    raise UsageError(f"{line.where}: Include {found}: {outside.message}")
                if os.path.isdir(found):  # ssh reads a folder as an empty file
                    continue
                check_owner(Path(found), line.where)
                out.append(Path(found))
        return out

    def lookup(self, host: str, *, user: str | None = None, port: int | None = None) -> Resolved:
        """What `ssh [-l user] [-p port] host` would use."""
        return self._explore(host, user, port, ())

    def _explore(
        self, host: str, user: str | None, port: int | None, assumed: tuple[bool, ...]
    ) -> Resolved:
        """Evaluate with `assumed` outcomes for Match exec (in order); when one more is needed,
        evaluate both and refuse the host only if they differ."""
        try:
            return self._evaluate_host(host, user, port, assumed)
        except _Undecided as undecided:
            if len(assumed) >= MAX_UNDECIDED:
                raise UsageError(undecided.message) from None
            try:
                yes = self._explore(host, user, port, (*assumed, True))
                no = self._explore(host, user, port, (*assumed, False))
            except UsageError:  # a later line depends on it too: name the first one
                raise UsageError(undecided.message) from None
            if yes.settings() != no.settings():
                raise UsageError(undecided.message) from None
            return yes

    def _evaluate_host(
        self, host: str, user: str | None, port: int | None, assumed: tuple[bool, ...]
    ) -> Resolved:
        state = _State(host, user, port, assumed)
        if self.path is None or not self.path.is_file():
            return state.result()
        self._evaluate(self.path, state, True, 0)
        canonicalize = (state.options.get("canonicalizehostname") or "no").lower()
        if canonicalize in ("yes", "always"):
            self._refuse_canonical(state, canonicalize)
        if state.want_final or canonicalize != "no":
            state.begin_final()
            self._evaluate(self.path, state, True, 0)
        return state.result()

    def _refuse_canonical(self, state: _State, mode: str) -> None:
        """CanonicalizeHostname looks names up in DNS; refused where ssh would do so."""
        proxied = state.options.get("proxyjump", "none").lower() != "none" or (
            state.options.get("proxycommand", "none").lower() != "none"
        )
        name = state.current_hostname()
        if (mode == "yes" and proxied) or is_address(name):
            return
        dots = name.rstrip(".").count(".")
        most = state.options.get("canonicalizemaxdots", "1")
        # (a bound of 19 digits or more: more dots than any name has, and int() refuses 4,300)
        if not name.endswith(".") and most.isdigit() and len(most) <= 18 and dots > int(most):
            return
        if not name.endswith(".") and not state.options.get("canonicaldomains"):
            return
        raise UsageError(
            f"{state.where['canonicalizehostname']}: CanonicalizeHostname {mode} needs DNS to "
            f"resolve {name}, which factbook does not do; use transport: openssh for this host"
        )

    def _evaluate(self, path: Path, state: _State, enabled: bool, depth: int) -> None:
        """`enabled` False: the Include sat in a non-matching block, so nothing here matches."""
        active = enabled
        lines, runs = self._lines(path), self._runs_of(path)
        i = 0
        while i < len(lines):
            run = runs.get(i)
            if run is not None:  # only the blocks naming this host can set anything
                active = self._run(run, lines, state, enabled)
                i = run.end
                continue
            line = lines[i]
            i += 1
            if line.keyword == "host":
                active = enabled and _host_line(line.args, state.host_for_patterns(), line.where)
            elif line.keyword == "match":
                active = self._match(line, state, enabled)
            elif line.keyword == "include":
                if depth >= MAX_INCLUDE_DEPTH:
                    raise UsageError(f"{line.where}: Include nested deeper than {depth}")
                for found in self._included(line):
                    _count_read(state.reads, line)
                    self._evaluate(found, state, active, depth + 1)
            elif line.keyword not in KNOWN:
                state.unknown(line)
            elif active:
                state.set(line)

    def _runs_of(self, path: Path) -> dict[int, _Run]:
        """The runs of literal Host blocks of a file, by the index of their first line."""
        if path not in self._runs:
            self._runs[path] = _literal_runs(self._lines(path))
        return self._runs[path]

    def _run(self, run: _Run, lines: list[Line], state: _State, enabled: bool) -> bool:
        """Evaluate a run of literal Host blocks as the line-by-line walk would: a block
        whose Host line does not name the host sets nothing, so only those that name it
        are looked at. Returns whether the run's last block is active (an Include after
        it reads its files under that)."""
        host = state.host_for_patterns()
        named = [
            index
            for start, end in (run.blocks.get(host, ()) if enabled else ())
            if run.names_host(start, host)
            for index in range(start + 1, end)
        ]
        if run.unknown:  # ssh refuses those in every block, matching or not: in file order
            named = sorted({*named, *run.unknown})
        for index in named:
            line = lines[index]
            if line.keyword not in KNOWN:
                state.unknown(line)
            else:
                state.set(line)
        return enabled and run.names_host(run.last, host)

    def _match(self, line: Line, state: _State, enabled: bool) -> bool:
        """readconf.c match_cfg_line; criteria after a false one still count for `final`.
        `all` stands alone, or last after one other criterion, as in ssh."""
        args = list(line.args)
        if not args or not args[0]:
            raise UsageError(f"{line.where}: Match needs criteria")
        result, attributes, i = True, 0, 0
        while i < len(args) and args[i]:
            word = args[i]
            i += 1
            if word.startswith("#"):
                break
            negate = word.startswith("!")
            criterion = (word[1:] if negate else word).lower()
            if criterion == "all":
                after = args[i] if i < len(args) else ""
                if attributes > 1 or (after and not after.startswith("#")):
                    raise UsageError(
                        f"{line.where}: '{word}' cannot be combined with other Match attributes"
                    )
                result = result and not negate
                break
            attributes += 1
            if criterion in ("canonical", "final"):
                state.want_final |= criterion == "final"
                result = result and (state.final != negate)
                continue
            arg = args[i] if i < len(args) else ""
            i += 1
            if not arg or arg.startswith("#"):
                raise UsageError(f"{line.where}: Missing Match criteria for {criterion}")
            patterns = arg.split(",")
            if criterion == "host":
                hit = _pattern_list(patterns, state.current_hostname(), lower=True)
            elif criterion == "originalhost":
                hit = _pattern_list(patterns, state.original, lower=True)
            elif criterion == "user":
                hit = _pattern_list(patterns, state.current_user(), lower=False)
            elif criterion == "localuser":
                hit = _pattern_list(patterns, local_user(), lower=False)
            elif criterion == "tagged":  # OpenSSH 9.4: the Tag set so far
                hit = _pattern_list(patterns, state.options.get("tag", ""), lower=False)
            elif criterion in UNDECIDABLE:
                if not (enabled and result):
                    continue  # ssh skips it (exec) or its outcome cannot matter
                hit = state.decide(line, criterion, patterns)
            else:
                raise UsageError(f"{line.where}: unknown Match criterion {shown(criterion)!r}")
            result = result and (hit != negate)
        return enabled and result


@dataclass
class _Run:
    """Consecutive Host blocks whose patterns are all literal (no `*` or `?`): a host is
    matched by a literal pattern only when it is that very name, so a lookup goes straight
    to the blocks naming it (a file of 5,000 aliases was walked whole for each alias)."""

    end: int  # index of the first line after the run
    last: int  # index of the run's last Host line: whether it matches sets `active` after
    blocks: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # name -> blocks
    # each Host line's names and negated names, by the line's index: one line of 20,000
    # names was matched pattern by pattern for each of them (80 s)
    names: dict[int, tuple[frozenset[str], frozenset[str]]] = field(default_factory=dict)
    unknown: list[int] = field(default_factory=list)  # lines of keywords ssh does not know

    def names_host(self, index: int, host: str) -> bool:
        """_host_line for the literal Host line at `index`: named, and not negated."""
        named, negated = self.names[index]
        return host in named and host not in negated


_BLOCK_ENDS = frozenset({"host", "match", "include"})


def _literal(args: tuple[str, ...]) -> bool:
    """Host patterns that match only the names written (each non-empty, no wildcard)."""
    words = [arg[1:] if arg.startswith("!") else arg for arg in args]
    return bool(words) and all(w and "*" not in w and "?" not in w for w in words)


def _literal_runs(lines: list[Line]) -> dict[int, _Run]:
    """The runs of literal Host blocks of a file's lines, by their first line's index."""
    runs: dict[int, _Run] = {}
    current: _Run | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.keyword != "host" or not _literal(line.args):
            current = None
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end].keyword not in _BLOCK_ENDS:
            end += 1
        if current is None:
            current = runs[i] = _Run(end=end, last=i)
        current.end, current.last = end, i
        named = frozenset(a for a in line.args if not a.startswith("!"))
        current.names[i] = (named, frozenset(a[1:] for a in line.args if a.startswith("!")))
        current.unknown += [k for k in range(i + 1, end) if lines[k].keyword not in KNOWN]
        for name in named:
            current.blocks.setdefault(name, []).append((i, end))
        i = end
    return runs


class _State:
    """The options collected so far for one lookup (first value wins)."""

    def __init__(self, original: str, user: str | None, port: int | None, assumed=()):
        self.original = original
        self.options: dict[str, str] = {}
        self.multi: dict[str, list[str]] = {}
        self.sources: dict[str, list[str]] = {}
        self.where: dict[str, str] = {}
        self.words: dict[str, list[str]] = {}
        self.assumed: tuple[bool, ...] = assumed
        self.decided: dict[str, bool] = {}  # Match line -> the outcome assumed for it
        self.want_final = False
        self.final = False
        self.reads = [0]  # files read through Include, both passes together (_count_read)
        self.final_hostname: str | None = None
        if user:
            self.options["user"] = user
            self.where["user"] = "target"
        if port:
            self.options["port"] = str(port)
            self.where["port"] = "target"

    def decide(self, line: Line, criterion: str, patterns: list[str]) -> bool:
        """The assumed outcome of the next undecidable criterion, or _Undecided."""
        if line.where in self.decided:
            return self.decided[line.where]
        if len(self.decided) < len(self.assumed):
            self.decided[line.where] = self.assumed[len(self.decided)]
            return self.decided[line.where]
        what = " ".join(patterns)
        raise _Undecided(
            f"{line.where}: Match {criterion} {what} decides how host {self.original} is "
            f"reached, and factbook never runs it; use transport: openssh for this host"
        )

    def unknown(self, line: Line) -> None:
        """readconf.c parse_token: a keyword ssh does not know refuses the file, in any block
        (a misspelt `Hostnmae` or `ProxyJmup` would otherwise connect somewhere ssh never
        goes), unless the IgnoreUnknown set so far names it."""
        ignored = self.options.get("ignoreunknown")
        if ignored and _pattern_list(ignored.split(","), line.keyword, lower=True):
            return
        raise UsageError(f"{line.where}: Bad configuration option: {shown(line.keyword)!r}")

    def set(self, line: Line) -> None:
        key = line.keyword
        if key in MULTI:  # accumulate, a duplicate ignored (readconf.c add_identity_file)
            values = self.multi.setdefault(key, [])
            if line.args and line.args[0] not in values:
                values.append(line.args[0])
                self.sources.setdefault(key, []).append(line.where)
            self.where.setdefault(key, line.where)
            return
        if not line.args:
            raise UsageError(f"{line.where}: {key} needs a value")
        if key in ("proxyjump", "proxycommand") and (
            "proxyjump" in self.options or "proxycommand" in self.options
        ):
            return  # they compete: the first one given wins
        if key in self.options:
            return
        if key in WORDS:
            self.words[key] = list(line.args)
        value = line.raw if key in RAW else line.args[0]
        if key == "port":  # checked when the file was read (_check_value)
            value = str(a2port(value))
        elif key == "hostkeyalias":  # readconf.c lower-cases it (known_hosts names are)
            value = value.lower()
        self.options[key] = value
        self.where[key] = line.where

    def begin_final(self) -> None:
        """ssh's second pass: the host name is fixed, Host patterns now match it."""
        self.final_hostname = _normal(self.current_hostname())
        self.final = True

    def host_for_patterns(self) -> str:
        return self.final_hostname if self.final_hostname is not None else self.original

    def current_hostname(self) -> str:
        if self.final_hostname is not None:
            return self.final_hostname
        name = self.options.get("hostname")
        if not name:
            return self.original
        try:
            return percent_expand(name, {"h": self.original}, "HostName")
        except WordError as exc:
            raise UsageError(f"{self.where['hostname']}: {exc}") from None

    def current_user(self) -> str:
        return self.options.get("user") or local_user()

    def result(self) -> Resolved:
        hostname = _normal(self.current_hostname())
        if not valid_hostname(hostname):
            where = self.where.get("hostname", f"host {self.original!r}")
            raise UsageError(f"{where}: hostname {shown(hostname)!r} contains invalid characters")
        idents = self.multi.get("identityfile", [])
        return Resolved(
            host=self.original,
            hostname=hostname,
            port=int(self.options.get("port", 22)),
            user=self.current_user(),
            identity_files=list(idents) if idents else list(DEFAULT_IDENTITIES),
            identity_files_set=bool(idents),
            options=dict(self.options),
            where=dict(self.where),
            certificate_files=list(self.multi.get("certificatefile", [])),
            sources={k: list(v) for k, v in self.sources.items()},
            words={k: list(v) for k, v in self.words.items()},
        )


def _normal(name: str) -> str:
    """ssh lower-cases a host name; an address it writes in its canonical numeric form
    (ssh.c resolve_canonicalize: `127.1` is 127.0.0.1, `2001:DB8:0::1` is 2001:db8::1),
    the name Match final, Host patterns and known_hosts then see."""
    if not is_address(name):
        return name.lower()
    try:
        found = socket.getaddrinfo(name, None, flags=socket.AI_NUMERICHOST)
        canonical = socket.getnameinfo(found[0][4], socket.NI_NUMERICHOST)[0]
    except (OSError, UnicodeError, ValueError):
        return name
    # only a text that differs beyond case is replaced (strcasecmp): 2001:DB8::1 stays
    return name if canonical.lower() == name.lower() else canonical
