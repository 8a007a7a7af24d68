"""Redaction for sharing: hosts, IPs, user names and configured secrets become placeholders.

Redaction runs on the rendered text, after any template (shipped or overridden), so nothing a
template prints can slip past it. Placeholders are consistent within one document: the same
host is `host-1` everywhere, so the document still reads. What is redacted:

- every `host` of targets.yaml, and its short name when that looks like a host name (has a
  digit or a hyphen: `kpro6`, `llm-two`, not `workstation`);
- every `user` of targets.yaml except system accounts (root, ...), user names in
  `/home/NAME` paths and before `@` in `user@host`;
- every IPv4 address and every IPv6 address (validated, so versions and times survive);
- secrets: `secrets:` (and extra `hosts:` / `users:`) in the knowledge base's redact.yaml,
  and the comma-separated environment variable FACTBOOK_SECRETS.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import LintFailed
from ..kb import KnowledgeBase
from ..yamlsrc import load_located

REDACT_FILE = "redact.yaml"
SECRETS_ENV = "FACTBOOK_SECRETS"
SYSTEM_USERS = frozenset({"root", "admin", "nobody", "ubuntu", "user", "users"})
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
IPV4 = re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?!\.?\d)(?!\w)")
_IPV6_CANDIDATE = r"(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:%\w+)?(?![\w:])"
_HOME = r"(?<=/home/)[A-Za-z_][\w.-]*"


@dataclass
class Redactor:
    """Replaces sensitive strings with placeholders; one instance per document."""

    hosts: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)
    mapping: dict[str, str] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        literals: dict[str, str] = {}
        for kind, values in (("secret", self.secrets), ("host", self.hosts), ("user", self.users)):
            for value in values:
                if value and value not in literals:
                    literals[value] = kind
        self._kinds = literals
        alternatives = "|".join(map(re.escape, sorted(literals, key=len, reverse=True)))
        parts = [
            rf"(?P<lit>(?<![\w.-])(?:{alternatives})(?![\w-]))" if literals else None,
            rf"(?P<home>{_HOME})",
            rf"(?P<ip4>{IPV4.pattern})",
            rf"(?P<ip6>{_IPV6_CANDIDATE})",
        ]
        # user@host: the user part is redacted when the host part is one we redact
        at_hosts = [IPV4.pattern, *map(re.escape, sorted(self.hosts, key=len, reverse=True))]
        parts.append(rf"(?P<at>(?<![\w.-])[A-Za-z_][\w.-]*(?=@(?:{'|'.join(at_hosts)})))")
        self._pattern = re.compile("|".join(p for p in parts if p))
        self._aliases = {h.split(".")[0]: h for h in self.hosts if "." in h}

    def placeholder(self, kind: str, original: str) -> str:
        """The placeholder of `original`, allocating `kind-N` on first sight."""
        key = self._aliases.get(original, original) if kind == "host" else original
        if key not in self.mapping:
            self._counts[kind] = self._counts.get(kind, 0) + 1
            self.mapping[key] = f"{kind}-{self._counts[kind]}"
        return self.mapping[key]

    def _replace(self, match: re.Match[str]) -> str:
        text = match.group(0)
        group = match.lastgroup
        if group == "lit":
            return self.placeholder(self._kinds[text], text)
        if group == "home":
            return self.placeholder("user", text)
        if group == "ip4":
            return self.placeholder("ip", text)
        if group == "ip6":
            return self.placeholder("ip", text) if _is_ipv6(text) else text
        if group == "at":
            return text if text in SYSTEM_USERS else self.placeholder("user", text)
        return text

    def __call__(self, text: str) -> str:
        return self._pattern.sub(self._replace, text)


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text.split("%")[0])
    except ValueError:
        return False
    return sum(1 for part in text.split(":") if part) >= 2


def _hostlike(name: str) -> bool:
    return any(c.isdigit() for c in name) or "-" in name


def redactor_for(kb: KnowledgeBase, *, env: dict[str, str] | None = None) -> Redactor:
    """A redactor for one document of `kb`: targets, redact.yaml and $FACTBOOK_SECRETS."""
    hosts: list[str] = []
    users: list[str] = []
    for target in kb.targets.values():
        if target.host:
            hosts.append(target.host)
            short = target.host.split(".")[0]
            if short != target.host and _hostlike(short):
                hosts.append(short)
        if target.user and target.user not in SYSTEM_USERS:
            users.append(target.user)
    extra = load_redact_file(kb.root / REDACT_FILE)
    hosts += extra.get("hosts", [])
    users += extra.get("users", [])
    secrets = list(extra.get("secrets", []))
    environ = os.environ if env is None else env
    secrets += [s.strip() for s in environ.get(SECRETS_ENV, "").split(",") if s.strip()]
    return Redactor(hosts=_unique(hosts), users=_unique(users), secrets=_unique(secrets))


def load_redact_file(path: Path) -> dict[str, list[str]]:
    """redact.yaml: `secrets:`, `hosts:`, `users:` lists of strings (all optional)."""
    if not (path.exists() or path.is_symlink()):
        return {}
    doc, problems = load_located(path, path.name)  # bounded: no alias bomb, no traceback
    if problems:
        raise LintFailed(problems)
    data = doc.data or {}
    if not isinstance(data, dict):
        raise LintFailed([doc.problem((), "expected a mapping with secrets/hosts/users lists")])
    out: dict[str, list[str]] = {}
    for key, values in data.items():
        if key not in ("secrets", "hosts", "users"):
            raise LintFailed(
                [doc.problem((key,), f"unknown key '{key}' (known: secrets, hosts, users)")]
            )
        if not isinstance(values, list) or not all(isinstance(v, (str, int)) for v in values):
            raise LintFailed([doc.problem((key,), f"'{key}' must be a list of strings")])
        out[key] = [str(v) for v in values if str(v)]
    return out


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))
