"""What a secret, an address or a personal path looks like, as regular expressions.

The redactor (redact.py) combines these with the literals it is configured with. Each pattern
is written so that what it must never touch survives: versions (`2.10.0`, `580.95.05`, CUDA
`13.0`), times (`14:53:07`), token ids and tok/s figures, C++ scopes (`std::vector`), hashes
(lowercase hex). Boundaries are alphanumeric only: `_`, `.` and `-` separate words here, so a
secret glued to a word (`TOKEN_abc`, `ip_10.20.30.41`) is still found.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections import Counter

# --- addresses --------------------------------------------------------------------
# An octet may carry leading zeros (`010.001.002.003` is how some tools print addresses).
OCTET = r"0{0,2}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_QUAD = rf"{OCTET}(?:\.{OCTET}){{3}}"
# Not part of a longer dotted number (`1.2.3.4.5`, `590.48.01.7`) on either side.
IPV4 = re.compile(rf"(?<!\d)(?<!\d\.){_QUAD}(?!\.?\d)")
# AWS-style host names spell an address with dashes: ip-10-1-2-3.ec2.internal.
IPV4_DASHED = rf"(?<![A-Za-z0-9])ip-{OCTET}(?:-{OCTET}){{3}}(?![\d])"
# A candidate only: validated by `ipaddress` (std::vector and 14:53:07 are not addresses).
IPV6_CANDIDATE = (
    rf"(?<![0-9A-Fa-f:.])(?:[0-9A-Fa-f]{{0,4}}:){{2,7}}(?:{_QUAD}|[0-9A-Fa-f]{{1,4}})?"
    r"(?:%[A-Za-z0-9_.]+)?(?![0-9A-Fa-f:]|\.\d)"
)

# --- well-known token shapes ------------------------------------------------------
_B = r"(?<![A-Za-z0-9])"  # start of a token: `_`, `-`, `=` or `.` may precede it
_E = r"(?![A-Za-z0-9])"
TOKEN_SHAPES: dict[str, str] = {
    "huggingface": rf"{_B}(?:hf_|api_org_)[A-Za-z0-9]{{20,}}{_E}",
    "openai": rf"{_B}sk-(?:proj-|svcacct-|admin-|ant-(?:api|admin)\d\d-)?[A-Za-z0-9_-]{{20,}}{_E}",
    "github": rf"{_B}(?:gh[pousr]_[A-Za-z0-9]{{20,}}|github_pat_[A-Za-z0-9_]{{20,}}){_E}",
    "gitlab": rf"{_B}glpat-[A-Za-z0-9_-]{{20,}}{_E}",
    "aws_access_key": (
        rf"{_B}(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{{16}}{_E}"
    ),
    "slack": rf"{_B}(?:xox[abposre]-[A-Za-z0-9-]{{10,}}|xapp-\d-[A-Za-z0-9-]{{10,}})",
    "slack_webhook": r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+",
    "google": rf"{_B}AIza[0-9A-Za-z_-]{{35}}{_E}",
    "stripe": rf"{_B}[rsp]k_(?:live|test)_[A-Za-z0-9]{{16,}}{_E}",
    "npm": rf"{_B}npm_[A-Za-z0-9]{{36}}{_E}",
    "pypi": rf"{_B}pypi-[A-Za-z0-9_-]{{50,}}",
    "jwt": rf"{_B}eyJ[A-Za-z0-9_-]{{8,}}\.eyJ[A-Za-z0-9_-]{{8,}}\.[A-Za-z0-9_-]*",
    # An AWS secret key, a base64 credential: long, and mixing upper, lower and digits
    # (checked in code); hex digests (one case) and identifiers (with `_`/`-`) are not matched.
    "high_entropy": r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{32,}={0,2}(?![A-Za-z0-9+/=_-])",
}
HIGH_ENTROPY_KIND = "high_entropy"
PRIVATE_KEY_BLOCK = (
    r"(?P<pkblock>-----BEGIN[A-Z ]*PRIVATE KEY-----"
    r"(?:[\s\S]{0,20000}?-----END[A-Z ]*PRIVATE KEY-----|[^\n]*))"
)
# PRIVATE_KEY_BLOCK in a text holding no `-----END`, where its block can never match: each
# BEGIN would look 20,000 characters ahead for an END in vain (4,000 such lines: 1.6 s)
PRIVATE_KEY_LINE = r"(?P<pkblock>-----BEGIN[A-Z ]*PRIVATE KEY-----[^\n]*)"
KEY_BLOCK_END = "-----END"

# `password=...`, `HF_TOKEN: ...`, `"api_key": "..."`, `--token ...`, `Bearer ...`: the value.
# `pass` and `auth` only as a word after a separator (`DB_PASS`, `REDISCLI_AUTH`; not
# `bypass`, `oauth`), and sshpass's own variable.
_SECRET_KEY = (
    r"(?:[A-Za-z0-9_.-]*?(?i:password|passwd|passphrase|pwd|secret|token|api[_-]?key|"
    r"access[_-]?key|private[_-]?key|auth[_-]?key|credentials?)"
    r"|[A-Za-z0-9_.-]*[_.-](?i:pass|auth)|(?i:sshpass|pass))"
)
# Tokenizer vocabulary: `eos_token: <|im_end|>` names a token of the model, not a credential.
_NOT_SECRET_KEY = r"(?i:bos|eos|pad|unk|sep|cls|mask|special|added|stop|start|end|chat|think)_token"
# A Markdown notes file decorates either side: `**Password:** x`, `**token**: x`, `` pass:
# `x` `` (emphasis around the key or after its colon, a code span around the value).
_EMPHASIS = r"(?:\*\*?|__?|`)?"
ASSIGNMENT = (
    rf"(?<![A-Za-z0-9_.-])(?!{_NOT_SECRET_KEY}\b)(?P<akey>{_SECRET_KEY})(?![A-Za-z0-9])"
    # `|` (`\\|` escaped in a rendered cell): a table's key cell, its value the next one
    rf"(?P<asep>[\"']?{_EMPHASIS}[ \t]*(?:[:=]|\\?\|){_EMPHASIS}[ \t]*)"
    r"(?P<aval>\"[^\"\n]+\"|'[^'\n]+'|`[^`\n]+`|[^\s,;'\"`)\]}<>|*]*[^\s,;'\"`)\]}<>|*.:])"
)
# Keys whose every value is a secret; for the others (`token: ...` in prose) the value must
# look like a credential, not a word (`DB_PASS: unset` and `db_auth: kerberos` are prose).
ALWAYS_SECRET_KEY = re.compile(r"(?i).*(?:pass(?!$)|pwd|secret|credential)")
# The space-separated form is a command-line flag only (`--token abc`), never prose.
FLAG_ASSIGNMENT = (
    rf"(?<![A-Za-z0-9_-])(?P<fkey>--?(?!{_NOT_SECRET_KEY}\b){_SECRET_KEY})(?![A-Za-z0-9_-])"
    r"(?P<fsep>\s+|=)"
    r"(?P<fval>\"[^\"\n]+\"|'[^'\n]+'|[^\s,;'\"`)\]}<>|*-][^\s,;'\"`)\]}<>|*]*)"
)
# `mysql -pPASS`, `sshpass -p PASS`, `curl -u user:PASS`, `ipmitool -P PASS`: a short flag
# and its value. Whether the value is a password depends on the command (`ssh -p 22` is a
# port, `mysql -p db` asks for one): password_flag() decides from PASSWORD_FLAGS.
COMMAND_FLAG = (
    r"(?<![\w-])(?P<cflag>--user|--proxy-user|-[paPuU])(?P<csep>=|[ \t]+)?"
    r"(?P<cval>'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"`;|&<>()]+)"
)
ATTACHED, ANY, USERINFO = "attached", "any", "userinfo"  # how a flag gives the password
_MYSQL_LIKE = "mysql mysqldump mysqladmin mysqlimport mysqlshow mysqlcheck mysqlpump mariadb"
_MARIADB_TOOLS = "mariadb-dump mariadb-admin mariadb-import"
_MONGO_LIKE = "mongo mongosh mongodump mongorestore mongoexport"
PASSWORD_FLAGS: dict[str, dict[str, str]] = {
    # `-p VALUE` prompts (VALUE is then the database): only `-pVALUE` gives the password
    **{name: {"-p": ATTACHED} for name in f"{_MYSQL_LIKE} {_MARIADB_TOOLS}".split()},
    **{name: {"-p": ANY} for name in _MONGO_LIKE.split()},
    "sshpass": {"-p": ANY},
    # `docker login -p X`, `podman login`, `helm registry login`: the registry password
    # (`docker run -p 80:80` is a port: the last command word before the flag decides)
    "login": {"-p": ANY},
    # commands whose -p/-P is a port: after `login node: ssh -p 22` the flag is ssh's
    "ssh": {},
    "scp": {},
    "redis-cli": {"-a": ANY},
    "ipmitool": {"-P": ANY},
    "curl": {flag: USERINFO for flag in ("-u", "--user", "-U", "--proxy-user")},
}
WRAPPERS = frozenset({"sshpass"})  # their options end where the command they run starts
COMMAND_LOOKBACK = 300  # characters searched back from a flag for its command
_COMMAND_WORD = re.compile(
    r"(?<![^\s/])(?:" + "|".join(map(re.escape, PASSWORD_FLAGS)) + r")(?=\s)"
)


def password_flag(text: str, start: int, flag: str, *, attached: bool) -> str | None:
    """How the flag at `text[start]` gives a password (ATTACHED, ANY, USERINFO), or None
    when it is no password flag of the command it belongs to: the last known command word
    before it in the same shell command, within COMMAND_LOOKBACK characters."""
    head = text[max(0, start - COMMAND_LOOKBACK) : start]
    head = head[max(head.rfind(c) for c in "\n;|&(`") + 1 :]  # `$(` ends in `(`
    commands = list(_COMMAND_WORD.finditer(head))
    if not commands:
        return None
    found = commands[-1]
    command = found.group()
    if command in WRAPPERS and any(not w.startswith("-") for w in head[found.end() :].split()):
        return None  # `sshpass -p X ssh -p 22`: the second -p is ssh's
    how = PASSWORD_FLAGS[command].get(flag)
    return None if how == ATTACHED and not attached else how


BEARER = r"(?<![A-Za-z0-9])(?P<bkey>(?i:bearer|basic)\s+)(?P<bval>[A-Za-z0-9._~+/=-]{8,})"
# Values that name no secret: references, placeholders, empties, numbers (token ids).
NOT_A_SECRET_VALUE = re.compile(
    r"[$%<{*\[].*|(?:none|null|nil|true|false|yes|no|n/a|unset|empty|required|optional|"
    r"redacted|hidden|xxx+|\.\.\.|…)|[\d.,/%]+",  # 8, 3/3, 98%: a count or a rate
    re.IGNORECASE,
)

# --- credentials in URLs and user@host --------------------------------------------
URL_USERINFO = (
    r"(?P<uscheme>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://)"
    r"(?P<uinfo>[^\s/@:?#{}\[\]()<>\"'`]+(?::[^\s/@{}\[\]()<>\"'`]*)?"
    r"|:[^\s/@{}\[\]()<>\"'`]+)@"
)
HOSTNAME = r"[A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*"

# --- private keys and home directories ---------------------------------------------
_SSH_NOT_KEYS = r"(?:config|known_hosts|authorized_keys|environment|rc)(?![\w.-])"
KEY_PATH = (
    r"(?<![\w.-])(?:~|\$HOME|/[\w.-]+(?:/[\w.-]+)*)?/\.ssh/(?!" + _SSH_NOT_KEYS + r")[\w.@-]+"
    r"|(?<![\w~./-])[\w~./-]*[\w-]\.(?:pem|ppk|p12|pfx|jks|keystore)(?![\w.-])"
    r"|(?<![\w~./-])[\w~.-]*/[\w./-]*[\w-]\.key(?![\w.-])"
)
# The prefix of a personal home directory; the name after it is the user.
HOME_PREFIX = r"(?:/(?:var/|usr/|export/)?home/|/Users/|\b[A-Za-z]:\\Users\\)"
TILDE_HOME = r"(?<![\w/~])~(?P<tilde>[A-Za-z_][\w.-]*)(?=/)"

PLACEHOLDER = re.compile(r"(?:host|user|ip|secret|key)-\d+")


def normalise_ip(text: str) -> str | None:
    """The canonical form of an address (leading zeros dropped, IPv4-mapped IPv6 as IPv4),
    or None when `text` is not one. Two spellings of one address share a placeholder."""
    text = text.split("%")[0]
    if text.startswith("ip-") and text.count("-") == 4:
        text = text[3:].replace("-", ".")
    if IPV4.fullmatch(text):
        return ".".join(str(int(o)) for o in text.split("."))
    try:
        addr = ipaddress.IPv6Address(text)
    except ValueError:
        return None
    if sum(1 for part in text.split(":") if part) < 2:
        return None  # `d::`, `::1`-like fragments of code, not addresses worth hiding
    mapped = addr.ipv4_mapped
    return str(mapped) if mapped else str(addr)


_CAMEL_WORD = re.compile(r"[A-Z]?[a-z]{3,}")


def looks_random(text: str) -> bool:
    """A long run mixing upper case, lower case and digits (or `/`, `+`), with high entropy
    and few word-like pieces: a credential, not `Qwen4ExpForConditionalGeneration`."""
    core = text.rstrip("=")
    if not (any(c.isupper() for c in core) and any(c.islower() for c in core)):
        return False
    if not any(c.isdigit() or c in "/+" for c in core):
        return False
    counts = Counter(core)
    entropy = -sum(n / len(core) * math.log2(n / len(core)) for n in counts.values())
    wordy = sum(len(w) for w in _CAMEL_WORD.findall(core)) / len(core)
    return entropy >= 4.0 and wordy < 0.5


def hostlike(name: str) -> bool:
    """A short name worth hiding: has a digit or a hyphen (`kpro6`, `llm-two`, not `local`)."""
    has_letter = any(c.isalpha() for c in name)
    return has_letter and (any(c.isdigit() for c in name) or "-" in name)


def user_at_host(hosts_alternation: str) -> str:
    """`NAME@HOST` where HOST is an address, a configured host or a domain name: both parts
    are captured (`auser`, and `aknown` or `adomain`), so the redactor decides on the pair."""
    known = rf"{_QUAD}|(?i:{hosts_alternation})(?![A-Za-z0-9])"
    domain = rf"{HOSTNAME}\.[A-Za-z]{{2,}}(?![\w-])"
    return (
        rf"(?<![\w.+/:-])(?P<auser>[A-Za-z_][\w.+-]*)@"
        rf"(?:(?P<aknown>{known})|(?P<adomain>{domain}))"
    )
