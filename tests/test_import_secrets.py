"""An import keeps no secret a dump holds (dumps/capture/secrets.py): tokens, passwords of
commands and URLs, a private key, configured secrets become `secret-N` in every fact and
in the review, and a wrapper's password never names a box; what the redaction of a whole
document finds, found on the lines that may hold a secret alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import kb_copy

from factbook.commands.cli import run
from factbook.dumps.capture.secrets import hide_userinfo, secrets_hidden
from factbook.dumps.status.redact import Redactor

REPO = Path(__file__).resolve().parents[1]
SECRETS = {
    "hf": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "gh": "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "sshpass": "hunter2x",
    "url": "Url9Pass",
    "mysql": "S3cretDb",
    "key": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
    "api": "sk-abc123def456ghi789jkl012",
    "configured": "tea-kettle-42",
    "flag": "Zq8vT3mK9pL2xW7r",
    "json": "Jk4Lm7Np2Qr5St8v",
    "db": "Pw0rdHidden77",
    "jump": "JumpPw99x",
    "bold": "B0ldPw55x",
    "table": "TblPw77x",
    "registry": "Reg1stryPw",
}
DUMP = f"""# Status

## Instructions

- export HF_TOKEN={SECRETS["hf"]} before serving
- Box sp: sshpass -p {SECRETS["sshpass"]} ssh root@sp.example
- pip install -i https://ops:{SECRETS["url"]}@pypi.example/simple vllm
- the bench DB: mysql -p{SECRETS["mysql"]} results
- GitHub token {SECRETS["gh"]} for the CI
- the OpenAI client takes --api-key {SECRETS["api"]}
- the vault word is {SECRETS["configured"]}
- the server runs with --hf-token={SECRETS["flag"]} and 8 GPUs
- config.json holds "api_key": "{SECRETS["json"]}"
- DB_PASS={SECRETS["db"]} in the env file
- pull access: docker login -u ops -p {SECRETS["registry"]} registry.example
- the bastion: ssh -J ops:{SECRETS["jump"]}@j.example root@inner.example
- **Password**: {SECRETS["bold"]} for the web UI
- the image is pinned as vllm-openai:v0.8.5@sha256:0a1b2c3d (a digest, no password)

| what | value |
| --- | --- |
| DB password | {SECRETS["table"]} |
| token | 163586 |

## Tokenizer

- `<|im_end|>` is token 163586 (not 163533)

## Files

- `/root/.ssh/deploy` is the deploy key:

```
-----BEGIN PRIVATE KEY-----
{SECRETS["key"]}
-----END PRIVATE KEY-----
```
"""


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = kb_copy(tmp_path / "kb", ())
    (root / "facts").mkdir()
    (root / "redact.yaml").write_text(f"secrets: [{SECRETS['configured']}]\n")
    (root / "dump.md").write_text(DUMP)
    return root


def test_an_import_writes_and_shows_no_secret(kb: Path, capsys) -> None:
    argv = ["--root", str(kb), "import", str(kb / "dump.md"), "--milestone", "4504"]
    assert run([*argv, "--write"]) == 0
    said = capsys.readouterr()
    written = {
        p.relative_to(kb).as_posix(): p.read_text()
        for p in kb.rglob("*")
        if p.is_file() and p.name not in ("dump.md", "redact.yaml")
    }
    for name, secret in SECRETS.items():
        assert secret not in said.out + said.err, name
        assert not [f for f, text in written.items() if secret in text], name
    facts = "".join(text for f, text in written.items() if f.startswith("facts/"))
    assert "secret-" in facts and "163586" in facts and "163533" in facts
    assert "sshpass -p secret-" in facts
    assert "v0.8.5@sha256:0a1b2c3d" in facts and "ops:***@j.example" in said.out
    assert "\n  sp:\n    host: sp.example" in written["targets.yaml"]  # not named by its password
    assert run(["--root", str(kb), "lint"]) == 0


def test_only_lines_that_may_hold_a_secret_are_redacted_and_the_same_way() -> None:
    """secrets_hidden equals the secrets-only redaction of the whole text (and a password
    before `@` without a scheme hidden) on the shipped
    dumps, the seeds and every secret shape above (numbered alike, in document order)."""
    texts = [DUMP.partition("```")[0]]  # a bare long random string is kept: see the module
    texts += [p.read_text() for p in sorted((REPO / "tests" / "data" / "dumps").glob("*.md"))]
    texts += [p.read_text() for p in sorted((REPO.parent / "shared" / "seeds").glob("*"))]
    for text in texts:
        whole = Redactor(secrets=[SECRETS["configured"]], secrets_only=True)
        lines = Redactor(secrets=[SECRETS["configured"]], secrets_only=True)
        assert secrets_hidden(text, lines) == hide_userinfo(whole(text))
    hidden = secrets_hidden(texts[0], Redactor(secrets=[SECRETS["configured"]], secrets_only=True))
    for name, secret in SECRETS.items():
        assert secret not in hidden or name == "key", name


def test_a_private_key_block_is_hidden_whole() -> None:
    hidden = secrets_hidden(DUMP, Redactor(secrets_only=True))
    assert SECRETS["key"] not in hidden and "163586" in hidden
