"""What `factbook mcp` sends an assistant is redacted as factbook.yaml's `mcp.redact` says:
secrets by default (redact.yaml's, token shapes, command-line passwords), hosts, users and
addresses too with `all`, nothing with `none`. Driven over the SDK's own stdio client.

Found in hostile round 13: status_brief, the status resource and show_fact sent redact.yaml's
secrets, `mysql -pPASSWORD` and `hf_…` tokens to the assistant as they stood.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import make_kb
from test_mcp_server import call, serve

from factbook.errors import LintFailed
from factbook.integrations.mcp.settings import load_settings

VAULT = "corp-vault-Qz81-unlock"
HF = "hf_Qw3rTy7uIoPaSdFgHjKlZxCvBnM1234567"
SECRETS = (VAULT, "Hunter2pass", HF[3:20])
HOST = "gpu-box-7.corp.example"


def _kb(root: Path, redact: str | None) -> Path:
    facts = [
        {
            "id": "instr.db",
            "category": "instructions",
            "title": "Database access",
            "statement": f"Run mysql -uroot -pHunter2pass db on {HOST}; the vault key is {VAULT}.",
            "status": "assumed",
            "sources": [{"note": f"token {HF}"}],
        }
    ]
    targets = {"targets": {"box": {"host": HOST, "user": "dave"}}}
    make_kb(root, facts, targets=targets)
    (root / "redact.yaml").write_text(f"secrets: ['{VAULT}']\n")
    if redact is not None:
        (root / "factbook.yaml").write_text(f"mcp:\n  redact: {redact}\n")
    return root


def _answers(root: Path) -> list[str]:
    """Every answer that carries the fact: two tools, the dense and the full dump, and the
    status and fact resources, each as the text that came over the wire."""
    texts: list[str] = []

    async def scenario(session: Any) -> None:
        texts.append(json.dumps(await call(session, "show_fact", id="instr.db")))
        texts.append(json.dumps(await call(session, "search_facts", query="mysql vault")))
        texts.append(json.dumps(await call(session, "status_brief", budget=2000)))
        texts.append(json.dumps(await call(session, "status_brief")))
        for uri in ("factbook://status", "factbook://fact/instr.db"):
            read = await session.read_resource(uri)
            texts.append(read.contents[0].text)

    serve(root, scenario)
    return texts


@pytest.mark.parametrize(
    ("redact", "hidden", "shown"),
    [
        (None, SECRETS, ("gpu-box-7", "-uroot -psecret-")),
        ("all", (*SECRETS, "gpu-box-7"), ("host-1",)),
        ("none", (), (VAULT, "Hunter2pass")),
    ],
)
def test_answers_are_redacted_as_mcp_redact_says(
    tmp_path: Path, redact: str | None, hidden: tuple[str, ...], shown: tuple[str, ...]
) -> None:
    for text in _answers(_kb(tmp_path / "kb", redact)):
        for secret in hidden:
            assert secret not in text, (secret, text[:3000])
        assert "Run mysql -uroot" in text  # the fact's statement is in each answer
        for part in shown:
            assert part in text, (part, text[:3000])


def test_an_unknown_redact_mode_is_refused_with_its_line(tmp_path: Path) -> None:
    root = _kb(tmp_path / "kb", "maybe")
    with pytest.raises(LintFailed) as refused:
        load_settings(root)
    assert "factbook.yaml:2: mcp.redact: one of secrets, all, none" in str(refused.value)


@pytest.mark.parametrize("redact", [None, "all"])
def test_the_status_document_is_redacted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redact: str | None
) -> None:
    """The full document is redacted while it is rendered (a cell escaped after its secret
    is hidden); the walk every answer goes through passed its 120 kB again (~125 ms)."""
    from factbook.dumps.status import redact as redact_module
    from factbook.integrations.mcp import tools

    seen: list[str] = []
    made = redact_module.redactor_for

    def counting(*args: Any, **kwargs: Any) -> Any:
        redactor = made(*args, **kwargs)

        def each(text: str) -> str:
            seen.append(text)
            return redactor(text)

        return each

    monkeypatch.setattr(tools, "redactor_for", counting)
    box = tools.Toolbox(_kb(tmp_path / "kb", redact))
    answer = box.redacted(box.status_brief())
    document = answer["document"]
    assert "Run mysql -uroot" in document and VAULT not in document
    assert not any("Run mysql -uroot" in text for text in seen)  # not walked again
    assert box.redacted(box.status_document()) == document  # the resource alike
    assert not any("Run mysql -uroot" in text for text in seen)
