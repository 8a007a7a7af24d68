"""A dump's secrets hidden before anything is read from it.

A dump is someone's notes: `export HF_TOKEN=hf_...`, `sshpass -p PASS ssh root@box`,
`pip install -i https://u:PASS@pypi...`. Imported as written, each secret became a fact's
statement and quote (and `sshpass -p PASS` the name of a box) in files a team shares. The
text goes through the redaction `status --hide-secrets` uses (redact.py, secrets only:
the hosts and users stay), each secret a `secret-N` placeholder consistent over the dump.

That redaction costs ~1 s a MB, as much as the rest of an import. So it runs only on the
lines where a secret can be: one search of the lowered text (15-35 ms a MB) for the words
and prefixes every secret shape the redactor knows holds (a key word, a command taking a
password, a token prefix, a URL with a password, a configured secret). A long random
string with none of them (a checksum, a commit) is kept: it is what the dump says. A
private key block or redact.yaml's own patterns have the whole dump redacted."""

from __future__ import annotations

import re

from factbook.dumps.status import shapes
from factbook.dumps.status.redact import Redactor

# what each shape of shapes.py needs in its text, lowered. A key word (`HF_TOKEN=`,
# `--token x`, `password: x`) only counts followed by `:` or `=`, or ending a flag: a
# tokenizer's dump says `token` on every other line (`token 163586`, `tokens per step`)
_KEYS = [
    "password",
    "passwd",
    "passphrase",
    "pass",
    "pwd",
    "token",
    "secret",
    "apikey",
    "api_key",
    "api-key",
    "accesskey",
    "access_key",
    "access-key",
    "privatekey",
    "private_key",
    "private-key",
    "authkey",
    "auth_key",
    "auth-key",
    "credentials",
    "credential",
    "auth",
]
_SCHEMES = ["bearer", "basic"]  # `Bearer <token>`: followed by a space
# the commands that take a password (shapes.PASSWORD_FLAGS, not those whose flags are
# ports) and the well-known token prefixes: any mention counts
_ANYWHERE = [
    *(command for command, flags in shapes.PASSWORD_FLAGS.items() if flags),
    "hf_",
    "sk-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "akia",
    "asia",
    "xoxa-",
    "xoxb-",
    "xoxp-",
    "xoxr-",
    "xoxs-",
    "xoxo-",
    "xoxe-",
    "xapp-",
    "hooks.slack.com",
    "aiza",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "rk_test_",
    "pk_live_",
    "pk_test_",
    "npm_",
    "pypi-",
    "eyj",
]
# a word holding another (`mysqldump`, `mysql`) finds no line the other does not
_ANYWHERE = [w for w in _ANYWHERE if not any(o != w and o in w for o in _ANYWHERE)]
_URL_PASSWORD = re.compile(r"://[^\s/?#@]*:[^\s@]*@")  # `scheme://user:PASS@host`
# `password=`, `"api_key":`, `**Password**:`, `| password | x |` (`\\|` in a rendered cell)
_ASSIGNED = re.compile(r"[\"'`*_]*[ \t]*(?:[:=|]|\\\|)")
# `-J ops:PASS@jump`, `ops:PASS@host` without a scheme (the redactor hides a URL's): the
# password as `***`; not an image's `ubuntu:22.04@sha256:...` digest
_HIDDEN_USERINFO = r"\1:***@"
_USERINFO = re.compile(r"(?<![^\s,=\[(])([A-Za-z0-9_][\w.-]*):([^\s:@/]+)@(?!sha\d)(?=[\w\[])")
_KEY_SET = frozenset(_KEYS)
_FLAG_MAX = 64  # characters a flag holding a key word (`--hf-token`) is sought back in


def hide_userinfo(text: str) -> str:
    """Each `user:PASS@host` without a scheme with its password as `***`."""
    return _USERINFO.sub(_HIDDEN_USERINFO, text)


def _found(lowered: str, words: set[str]) -> list[tuple[int, int, str]]:
    """(start, end, word) of every place a word is, and of a URL with a password, in
    order. Each word by str.find, in C: one regex alternation of them all tried each word
    at each position, 50 ms a MB."""
    out = [(m.start(), m.end(), "://") for m in _URL_PASSWORD.finditer(lowered)]
    for word in words:
        at = lowered.find(word)
        while at >= 0:
            out.append((at, at + len(word), word))
            at = lowered.find(word, at + 1)
    out.sort()
    return out


def _may_hold(lowered: str, start: int, end: int, word: str, configured: set[str]) -> bool:
    """Whether the word found at `start` can begin a secret shape where it stands."""
    if word in configured:
        return True
    if word == "@":  # after `user:PASS`, the word back to a space holding a colon, no path
        head = lowered[max(0, start - _FLAG_MAX) : start]
        userinfo = head[1 + max(head.rfind(c) for c in " \t\n,=[(") :]
        return ":" in userinfo and "/" not in userinfo and not lowered.startswith("sha", end)
    if word in _SCHEMES:
        return lowered[end : end + 1] in (" ", "\t")
    if word not in _KEY_SET:
        return True
    if _ASSIGNED.match(lowered, end):
        return True
    back = max(0, start - _FLAG_MAX)  # a word longer than a flag is none
    word_start = 1 + max(lowered.rfind(c, back, start) for c in " \t\n")
    word_start = max(word_start, back)
    flag = lowered.startswith("-", word_start)  # `--token x`, `--hf-token=x`
    return flag and lowered[end : end + 1] in (" ", "\t", "=")


def secrets_hidden(text: str, redactor: Redactor) -> str:
    """`text` with every secret `redactor` (secrets only) finds hidden, on the lines that
    may hold one; the other lines as they are."""
    lowered = text.lower()
    # redact.yaml's own patterns (no word tells where they match), a private key block (its
    # lines hold no word), a character that lowers to two (positions differ): all of it
    if redactor.patterns or "-----begin" in lowered or len(lowered) != len(text):
        return hide_userinfo(redactor(text))
    configured = {s.lower() for s in redactor.secrets}
    spans: list[tuple[int, int]] = []  # the lines that may hold a secret, in order
    done = 0
    for at, after, word in _found(lowered, {*_KEYS, *_SCHEMES, *_ANYWHERE, "@", *configured}):
        if at < done or not _may_hold(lowered, at, after, word, configured):
            continue  # on a line taken already, or a word that is no secret's here
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", after)
        done = len(text) if end < 0 else end
        spans.append((start, done))
    if not spans:
        return text
    # one call for all of them (a call costs ~0.5 ms however short its text), its lines
    # then put back where they were; the redactor keeps every line break of a text
    joined = redactor("\n".join(text[a:b] for a, b in spans))
    hidden = hide_userinfo(joined).split("\n")
    if len(hidden) != len(spans):  # a placeholder never holds one: not seen, but be sure
        return hide_userinfo(redactor(text))
    out, at = [], 0
    for (start, end), line in zip(spans, hidden, strict=True):
        out += [text[at:start], line]
        at = end
    return "".join(out) + text[at:]
