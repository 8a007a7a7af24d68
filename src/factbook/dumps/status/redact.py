"""Redaction for sharing: hosts, IPs, users, secrets and key paths become placeholders.

Redaction runs on the rendered text, after any template (shipped or overridden), so nothing a
template prints can slip past it: statements, values, sources, notes, observed results and
error reasons alike. Placeholders are consistent within one document (the same host is
`host-1` everywhere, whatever its case or spelling), so the document still reads, and a
redacted document redacts to itself. What is redacted (shapes.py has the patterns):

- `host-N`: every `host` of targets.yaml, its short name when that looks like a host name
  (`kpro6`, `llm-two`, not `workstation`), `hosts:` of redact.yaml, in any case, also inside
  words (`kpro6_backup`); the domain of `user@domain.tld` (not `git@github.com`);
- `user-N`: every target `user` except system accounts (root, ...), `users:` of redact.yaml,
  names of home directories (`/home/NAME`, `/Users/NAME`, `/var/home/NAME`, `~NAME`), the
  user of `user@host` and of `scheme://user:pass@host`;
- `ip-N`: IPv4 (also with leading zeros, glued to words, or dashed as in `ip-10-1-2-3`) and
  IPv6 (validated; an IPv4-mapped address is its IPv4 address);
- `secret-N`: `secrets:` of redact.yaml and $FACTBOOK_SECRETS (anywhere, any case), matches
  of `patterns:` of redact.yaml, well-known token shapes (Hugging Face, OpenAI, GitHub,
  GitLab, AWS, Slack, Google, Stripe, npm, PyPI, JWT, private key blocks, long random
  strings), the value of `password=`/`DB_PASS=`/`token: `/`--api-key ` assignments and
  `Bearer` headers (also as Markdown notes write them: `**Password:** x`, `pass: `x``),
  the password of a URL, the password flag of the commands that take one
  (`mysql -pPASS`, `sshpass -p PASS`, `curl -u user:PASS`, `redis-cli -a`, `ipmitool -P`;
  not `ssh -p 22`); a configured secret holding whitespace also where a document shows its
  tab or line break as a space or as `\\t`;
- `key-N`: private key paths (`~/.ssh/id_ed25519`, `*.pem`, `certs/x.key`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from factbook.dumps.status import shapes
from factbook.dumps.status.redact_config import (
    MIN_SECRET,
    NO_WORD_CHARACTER,
    REDACT_FILE,
    SECRETS_ENV,
    has_word_character,
    load_redact_config,
)
from factbook.errors import InputError
from factbook.judging import userregex
from factbook.knowledge.kb import KnowledgeBase

REDACT_TIMEOUT_S = 10.0  # a whole document; a 1,000-fact one is redacted in ~0.3 s

SYSTEM_USERS = frozenset(
    {"root", "admin", "nobody", "ubuntu", "user", "users", "git", "daemon", "www-data"}
)
IPV4 = shapes.IPV4


@dataclass
class Redactor:
    """Replaces sensitive strings with placeholders; one instance per document."""

    hosts: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    mapping: dict[str, str] = field(default_factory=dict)
    # secrets only: hosts, users, IPs and key paths stay (what an assistant needs to work)
    secrets_only: bool = False
    _counts: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._kinds: dict[str, str] = {}
        for kind, values in (("secret", self.secrets), ("host", self.hosts), ("user", self.users)):
            for value in values:
                if value and value.lower() not in self._kinds:
                    self._kinds[value.lower()] = kind
        self._aliases = {h.split(".")[0].lower(): h.lower() for h in self.hosts if "." in h}
        self._compiled: dict[bool, Any] = {}  # whether the text may end a key block -> pattern

    def _pattern(self, text: str) -> Any:
        """The pattern for `text`: without the private-key block's look ahead for its END where
        the text has none (the same matches; see shapes.PRIVATE_KEY_LINE). redact.yaml's own
        patterns run on the `regex` module, whose matcher can be stopped."""
        ended = shapes.KEY_BLOCK_END in text
        pattern = self._compiled.get(ended)
        if pattern is None:
            joined = "|".join(self._parts(ended))
            # redact.yaml's patterns each passed userregex.check when it was read; the
            # joined whole (with every host and user escaped) may be longer than one may be
            pattern = userregex.compile_checked(joined) if self.patterns else re.compile(joined)
            self._compiled[ended] = pattern
        return pattern

    def _parts(self, ended: bool) -> list[str]:
        """The alternatives, most specific first (at one position the first that matches wins)."""

        def alternation(values: Iterable[str], escape: Any = re.escape) -> str:
            return "|".join(map(escape, sorted(set(values), key=len, reverse=True)))

        # a secret as a table cell or Markdown shows it (`|` -> `\\|`, `<x` -> `&lt;x`):
        # documents are escaped before they are redacted, so both forms are looked for
        secrets = [e for v, k in self._kinds.items() if k == "secret" for e in _escaped(v)]
        names = [v for v, k in self._kinds.items() if k != "secret"]
        hosts = [v for v, k in self._kinds.items() if k == "host"]
        parts = [
            rf"(?P<keep>\[REDACTED[\w-]*\]|(?<![A-Za-z0-9]){shapes.PLACEHOLDER.pattern}(?![A-Za-z0-9-]))",
            shapes.PRIVATE_KEY_BLOCK if ended else shapes.PRIVATE_KEY_LINE,
            rf"(?P<keypath>{shapes.KEY_PATH})",
            shapes.URL_USERINFO,
        ]
        if secrets:
            parts.append(rf"(?P<secret>(?i:{alternation(secrets, _loose)}))")
        parts += [rf"(?P<custom{i}>{p})" for i, p in enumerate(self.patterns)]
        parts += [rf"(?P<tok_{name}>{p})" for name, p in shapes.TOKEN_SHAPES.items()]
        parts += [shapes.BEARER, shapes.FLAG_ASSIGNMENT, shapes.ASSIGNMENT, shapes.COMMAND_FLAG]
        parts.append(rf"(?P<homepre>{shapes.HOME_PREFIX})(?P<home>[A-Za-z_][\w.-]*)")
        parts.append(shapes.TILDE_HOME)
        parts.append(shapes.user_at_host(alternation(hosts) if hosts else "(?!)"))
        if names:
            parts.append(rf"(?P<lit>(?<![A-Za-z0-9])(?i:{alternation(names)})(?![A-Za-z0-9]))")
        parts.append(rf"(?P<ip4>{shapes.IPV4.pattern}|{shapes.IPV4_DASHED})")
        parts.append(rf"(?P<ip6>{shapes.IPV6_CANDIDATE})")
        return parts

    def placeholder(self, kind: str, original: str) -> str:
        """The placeholder of `original`, allocating `kind-N` on first sight."""
        key = original.lower()
        if kind == "host":
            key = self._aliases.get(key, key)
        key = f"{kind}:{key}"
        if key not in self.mapping:
            self._counts[kind] = self._counts.get(kind, 0) + 1
            self.mapping[key] = f"{kind}-{self._counts[kind]}"
        return self.mapping[key]

    def _replace(self, m: re.Match[str]) -> str:
        text, group = m.group(0), m.lastgroup or ""
        if group == "keep" or shapes.PLACEHOLDER.fullmatch(text):
            return text
        if group == "secret":
            return self.placeholder("secret", _LOOSE_SPACE.sub(" ", _unescaped(text)))
        if group.startswith("custom"):
            return self._custom(text)
        if group == "pkblock" or group.startswith("tok_"):
            if group == "tok_high_entropy" and not shapes.looks_random(text):
                return text
            return self.placeholder("secret", text)
        if group == "keypath":
            return text if self.secrets_only else self.placeholder("key", text)
        if m.group("uinfo") is not None:
            return m.group("uscheme") + self._userinfo(m.group("uinfo")) + "@"
        for key, value in (("bkey", "bval"), ("fkey", "fval"), ("akey", "aval")):
            if m.group(key) is not None:
                head = text[: m.start(value) - m.start()]
                # `key: value` and a table's `| key | value |` may be prose: the value must
                # look like a credential unless the key says it is one
                prose = ":" in head or "|" in head
                return head + self._value(m.group(key), m[value], prose=prose)
        if m.group("cflag") is not None:
            return self._command_flag(m)
        if self.secrets_only:  # what is left names a user, a host or an address
            return text
        if m.group("home") is not None:
            return m.group("homepre") + self._name(m.group("home"), "user")
        if m.group("tilde") is not None:
            return "~" + self._name(m.group("tilde"), "user")
        if m.group("auser") is not None:
            return self._user_at_host(m.group("auser"), m.group("aknown"), m.group("adomain"))
        if group == "lit":
            return self.placeholder(self._kinds[text.lower()], text)
        if group in ("ip4", "ip6"):
            canonical = shapes.normalise_ip(text)
            return self.placeholder("ip", canonical) if canonical else text
        return text

    def _custom(self, text: str) -> str:
        """A match of a redact.yaml pattern, hidden line by line: its line breaks and any
        line of it without a letter or digit are kept. A pattern may match Markdown itself
        (`\\n`, `#`, `[|]`, `.*` across a line end): one placeholder for the whole match made
        the document one line and took its headings and table rows with it. A secret has a
        letter or digit; every line of the match that has one is still hidden."""
        lines = text.split("\n")
        hidden = self.placeholder("secret", text) if any(map(has_word_character, lines)) else ""
        return "\n".join(hidden if has_word_character(ln) else ln for ln in lines)

    def _user_at_host(self, user: str, known: str | None, domain: str | None) -> str:
        """`git@github.com` stays; `dave@build-3.corp.example.com` hides both parts."""
        system = user.lower() in SYSTEM_USERS
        user_part = user if system else self._name(user, "user")
        if known is not None:
            return f"{user_part}@{self(known)}"
        assert domain is not None
        return f"{user}@{domain}" if system else f"{user_part}@{self._name(domain, 'host')}"

    def _name(self, name: str, kind: str) -> str:
        if shapes.PLACEHOLDER.fullmatch(name) or self.secrets_only:
            return name
        return self.placeholder(self._kinds.get(name.lower(), kind), name)

    def _userinfo(self, info: str) -> str:
        user, sep, password = info.partition(":")
        if not sep:  # `https://TOKEN@host`: a lone user part is as often a token
            if shapes.looks_random(user):
                return self.placeholder("secret", user)
            return user if user.lower() in SYSTEM_USERS else self._name(user, "user")
        user_part = user if not user or user.lower() in SYSTEM_USERS else self._name(user, "user")
        if not password or shapes.PLACEHOLDER.fullmatch(password):
            return f"{user_part}:{password}"
        return f"{user_part}:{self.placeholder('secret', password)}"

    def _value(self, key: str, value: str, *, prose: bool) -> str:
        quote = value[0] if value[:1] in "\"'`" and value[-1:] == value[:1] else ""
        core = value[1:-1] if quote else value
        if shapes.PLACEHOLDER.fullmatch(core) or shapes.NOT_A_SECRET_VALUE.fullmatch(core):
            return value
        if prose and not shapes.ALWAYS_SECRET_KEY.match(key) and not _credential_like(core):
            return value
        return f"{quote}{self.placeholder('secret', core)}{quote}"

    def _command_flag(self, m: re.Match[str]) -> str:
        """`-pPASS` after mysql, `-u user:PASS` after curl: the password hidden; any other
        flag's value (`ssh -p 22`, `docker -p 10.0.0.5:80:80`) redacted as any text is."""
        flag, sep, value = m["cflag"], m["csep"] or "", m["cval"]
        how = shapes.password_flag(m.string, m.start(), flag, attached=not sep)
        if how is None:
            return flag + sep + self._sub(value)
        if how != shapes.USERINFO:
            return flag + sep + self._value(flag, value, prose=False)
        quote = value[0] if len(value) > 1 and value[0] in "\"'" and value[-1] == value[0] else ""
        core = value[1:-1] if quote else value
        user, colon, password = core.partition(":")
        if not colon:  # `curl -u user` asks for the password
            return flag + sep + self._sub(value)
        hidden = self._value(flag, password, prose=False) if password else ""
        return f"{flag}{sep}{quote}{self._sub(user)}:{hidden}{quote}"

    def __call__(self, text: str) -> str:
        """Redact `text`; a user or host first seen in `user@host` (or a home folder) is then
        also hidden where it stands alone, by a second pass that knows it."""
        out = self._sub(text)
        learned = self._learned()
        if learned:
            for kind, name in learned:
                (self.hosts if kind == "host" else self.users).append(name)
            self.__post_init__()
            out = self._sub(text)
        return out

    def _learned(self) -> list[tuple[str, str]]:
        """Users and hosts given a placeholder that the pattern does not know by name."""
        found = []
        for key in self.mapping:
            kind, _, name = key.partition(":")
            if kind in ("host", "user") and len(name) >= 3 and name not in self._kinds:
                found.append((kind, name))
        return found

    def _sub(self, text: str) -> str:
        pattern = self._pattern(text)
        if not self.patterns:
            return pattern.sub(self._replace, text)  # type: ignore[no-any-return]
        try:
            return userregex.sub(pattern, self._replace, text, timeout=REDACT_TIMEOUT_S)
        except userregex.RegexTimeout:
            raise InputError(
                f"redact.yaml: patterns took longer than {REDACT_TIMEOUT_S:g} s on "
                f"{len(text)} characters (catastrophic backtracking?); nothing written"
            ) from None


def _escaped(secret: str) -> list[str]:
    """`secret` and the forms Markdown escaping gives it in a document."""
    cell = secret.replace("|", "\\|")
    tag = re.sub(r"<(?=[A-Za-z/|!])", "&lt;", secret)
    return list(dict.fromkeys([secret, cell, tag, re.sub(r"<(?=[A-Za-z/|!])", "&lt;", cell)]))


# A configured secret's whitespace, as a document may show it: folded into spaces, or a tab
# and a line break written `\t`, `\n` (one character or escape per step: linear).
_LOOSE_SPACE = re.compile(r"(?:\s|\\[tn])+")
_SPACE_RUN = re.compile(r"\s+")


def _loose(secret: str) -> str:
    """A configured secret as a pattern: each run of its whitespace matches any such run."""
    return _LOOSE_SPACE.pattern.join(map(re.escape, _SPACE_RUN.split(secret)))


def _unescaped(text: str) -> str:
    return text.replace("\\|", "|").replace("&lt;", "<")


def _credential_like(value: str) -> bool:
    """A bare value after `token:`: a credential has digits or symbols, or is long; prose
    (`token: the draft's`) and identifiers (`_STR`) have neither."""
    return len(value) >= 16 or any(c.isdigit() or not (c.isalnum() or c in "_-.'") for c in value)


def document_redactor(kb: KnowledgeBase, *, redact: bool, hide_secrets: bool) -> Redactor | None:
    """The redactor one document of `kb` is asked for: everything (`redact`), its secrets
    only (`hide_secrets`), or None."""
    if redact or hide_secrets:
        return redactor_for(kb, secrets_only=not redact)
    return None


def redactor_for(
    kb: KnowledgeBase, *, env: dict[str, str] | None = None, secrets_only: bool = False
) -> Redactor:
    """A redactor for one document of `kb`: targets, redact.yaml and $FACTBOOK_SECRETS;
    with `secrets_only`, the secrets alone (an assistant over MCP works with the hosts)."""
    hosts: list[str] = []
    users: list[str] = []
    for target in kb.targets.values():
        if target.host:
            hosts.append(target.host)
            short = target.host.split(".")[0]
            is_ip = shapes.normalise_ip(target.host) is not None
            if short != target.host and not is_ip and shapes.hostlike(short):
                hosts.append(short)
        if target.user and target.user.lower() not in SYSTEM_USERS:
            users.append(target.user)
    config = load_redact_config(kb.root / REDACT_FILE)
    environ = os.environ if env is None else env
    extra = [s.strip() for s in environ.get(SECRETS_ENV, "").split(",") if s.strip()]
    for n, secret in enumerate(extra, 1):
        if len(secret) < MIN_SECRET:
            raise InputError(
                f"${SECRETS_ENV}: entry {n} has {len(secret)} character(s); a secret needs at "
                f"least {MIN_SECRET} (shorter ones would redact ordinary words)"
            )
        if not has_word_character(secret):
            raise InputError(f"${SECRETS_ENV}: entry {n} {NO_WORD_CHARACTER}")
    return Redactor(
        hosts=_unique(hosts + config.hosts),
        users=_unique(users + config.users),
        secrets=_unique(config.secrets + extra),
        patterns=config.patterns,
        secrets_only=secrets_only,
    )


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))
