"""redact.yaml: what a knowledge base adds to redaction, checked before use.

```yaml
secrets: [hf_abc123, "my token"]    # literal strings, found anywhere in any case (>= 3 chars)
patterns: ['corp-[0-9]{6}']         # regular expressions whose matches are secrets
hosts: [gpu-farm.internal]          # besides targets.yaml's hosts
users: [alice]                      # besides targets.yaml's users
```

Every problem is reported as `redact.yaml:LINE: message`: a file shared in git is user input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from factbook.errors import InputError
from factbook.judging import userregex
from factbook.knowledge.kbfiles import confined
from factbook.knowledge.yamlsrc import load_located

REDACT_FILE = "redact.yaml"
SECRETS_ENV = "FACTBOOK_SECRETS"
KEYS = ("secrets", "patterns", "hosts", "users")
MIN_SECRET = 3


@dataclass
class RedactConfig:
    """The lists of redact.yaml (all optional)."""

    secrets: list[str] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)


def load_redact_config(path: Path) -> RedactConfig:
    """Read and check redact.yaml; a missing file is an empty configuration."""
    if not (path.exists() or path.is_symlink()):
        return RedactConfig()
    with confined(path.parent):  # redact.yaml sits at the root of the knowledge base
        doc, problems = load_located(path, path.name)
    if problems:
        raise InputError(str(problems[0]))
    data = doc.data if doc.data is not None else {}
    if not isinstance(data, dict):
        raise InputError(f"{path.name}:1: expected a mapping with {', '.join(KEYS)} lists")
    config = RedactConfig()
    for key, values in data.items():
        where = f"{path.name}:{doc.line((key,))}"
        if key not in KEYS:
            raise InputError(f"{where}: unknown key {str(key)!r} (known: {', '.join(KEYS)})")
        if values is None:
            continue
        if not isinstance(values, list):
            raise InputError(f"{where}: '{key}' must be a list of strings")
        out: list[str] = getattr(config, key)
        for i, value in enumerate(values):
            at = f"{path.name}:{doc.line((key, i))}"
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                raise InputError(f"{at}: {key}[{i}] must be a string")
            text = str(value).strip()
            if not text:
                continue
            if key == "secrets" and len(text) < MIN_SECRET:
                raise InputError(
                    f"{at}: secrets[{i}] has {len(text)} character(s); a secret needs at least "
                    f"{MIN_SECRET} (shorter ones would redact ordinary words)"
                )
            if key != "patterns" and not has_word_character(text):
                raise InputError(f"{at}: {key}[{i}] {NO_WORD_CHARACTER}")
            if key == "patterns":
                _check_pattern(text, at, i)
            out.append(text)
    return config


NO_WORD_CHARACTER = (
    "has no letter or digit; it would redact the document's own Markdown (`---`, `|`, `#`)"
)


def has_word_character(text: str) -> bool:
    """Whether `text` holds a letter or digit. A secret, host or user without one is made of
    what Markdown is built of: `secrets: ['---']` turned the front matter's fences into
    `secret-1`, `hosts: ['|']` every table's cell separator into `host-1`."""
    return any(c.isalnum() for c in text)


def _check_pattern(pattern: str, at: str, index: int) -> None:
    """A pattern must compile, have no named groups and never match the empty string."""
    try:
        userregex.compile_user(pattern)  # `re`'s syntax, bounded (userregex.check), then `regex`
        compiled = re.compile(pattern)
    except userregex.PatternError as exc:
        raise InputError(f"{at}: patterns[{index}] is not a regular expression: {exc}") from None
    slow = userregex.nested_quantifier(pattern)
    if slow:
        raise InputError(f"{at}: patterns[{index}]: {slow}")
    if compiled.groupindex:
        raise InputError(f"{at}: patterns[{index}] must not use named groups (?P<...>)")
    if compiled.fullmatch(""):
        raise InputError(f"{at}: patterns[{index}] matches the empty string")
