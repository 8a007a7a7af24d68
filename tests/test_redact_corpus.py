"""Redaction measured: planted secrets vanish, and nothing else in a document changes.

1. A corpus of planted secrets (configured ones touching `_`, `.`, `-`; case variants of
   hosts and users; IPs glued to words, with leading zeros, IPv4-mapped, dashed; every
   well-known token shape; assignments; URL credentials; user@host; key paths; homes outside
   /home). Each is planted into one carrier of a real knowledge base in tmp (statement,
   value, source run, history note, observed result, error reason, rationale, source quote),
   `factbook status --redact` runs through the CLI, and every secret must be gone (100%).
   A printed carrier must show the secret in the plain document, so the test can fail.
2. The shipped knowledge base's 3157/3478/4504 documents, redacted, differ from the plain
   ones only where a target host, user or an IP stood (each changed token is checked).
3. Idempotence, and a table of text that must survive untouched (versions, token ids, ...).
"""

from __future__ import annotations

import ipaddress
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from factbook.commands.cli import run
from factbook.dumps.status import StatusOptions, redactor_for, render_status
from factbook.dumps.status.hint import split_hint
from factbook.dumps.status.redact import Redactor
from factbook.knowledge.kb import load_kb
from factbook.store.results import ResultRecord, write_run

ROOT = Path(__file__).resolve().parents[1]
HF = "hf_" + "Qw3rTy7uIoPaSdFgHjKlZxCvBnM1234567"
GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ "
    "-----END OPENSSH PRIVATE KEY-----"
)

# (planted text, the parts that must vanish); configured below: secrets abc and Zebra-Pass-77
# (redact.yaml), envsecret9 ($FACTBOOK_SECRETS), pattern corp-\d{6}, targets' hosts and users.
CORPUS: list[tuple[str, list[str]]] = [
    ("| password | tbl9Secret |", ["tbl9Secret"]),
    (
        "docker login -u ops -p Reg1stryPw registry.example",
        ["Reg1stryPw"],
    ),  # a table's key cell, then its value
    ("| DB password | `tblPw2x` |", ["tblPw2x"]),
    ("| api_key | aB3dE5gH7jK9mN1pQ3 |", ["aB3dE5gH7jK9mN1pQ3"]),
    ("TOKEN_abc", ["abc"]),
    ("abc_v2", ["abc"]),
    ("x.abc.y", ["abc"]),
    ("pre-abc-post", ["abc"]),
    ("ABC in capitals", ["abc"]),
    ("pw(Zebra-Pass-77)", ["Zebra-Pass-77"]),
    ("from env: envsecret9_suffix", ["envsecret9"]),
    ("ticket corp-123456 filed", ["corp-123456"]),
    ("GPU-BOX-7.CORP.EXAMPLE is up", ["gpu-box-7"]),
    ("short gpu-box-7 name", ["gpu-box-7"]),
    ("ssh to Gpu-Box-7:22", ["gpu-box-7"]),
    ("node_gpu-box-7_log", ["gpu-box-7"]),
    ("ALICE logged in", ["alice"]),
    ("cd /home/Alice/x", ["alice"]),
    ("bob_ops@bastion.example.org", ["bob_ops", "bastion.example.org"]),
    ("via Bastion.Example.Org", ["bastion.example.org"]),
    ("ip_10.20.30.41", ["10.20.30.41"]),
    ("host10.20.30.42x", ["10.20.30.42"]),
    ("010.020.030.043", ["010.020.030.043", "10.20.30.43"]),
    ("::ffff:10.20.30.44", ["10.20.30.44", "ffff"]),
    ("mapped ::ffff:a14:1e2d", ["a14:1e2d"]),
    ("fe80::1ff:fe23:4567:890a%eth0", ["fe23:4567"]),
    ("2001:db8:85a3::8a2e:370:7334", ["8a2e:370"]),
    ("[2001:db8::42]:8080", ["2001:db8"]),
    ("ip-10-20-30-46.ec2.internal", ["10-20-30-46"]),
    ("http://10.20.30.47:8000/v1", ["10.20.30.47"]),
    (f"token {HF} used", [HF]),
    (f"HF_TOKEN={HF}", [HF]),
    ("sk-" + "T3stAbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd", ["T3stAbCdEfGh"]),
    ("sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56", ["Ab12Cd34Ef56"]),
    ("sk-ant-api03-" + "Zx98Yw76Vu54Ts32Rq10Po98Nm76", ["Zx98Yw76Vu54"]),
    (GHP, [GHP]),
    ("gho_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2", ["Z9y8X7w6V5u4"]),
    ("ghs_" + "B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9", ["B2c3D4e5F6g7"]),
    ("github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", ["11ABCDEFG0123456789"]),
    ("glpat-" + "xYz123AbC456dEf789gH", ["xYz123AbC456"]),
    ("AKIAIOSFODNN7EXAMPL3", ["AKIAIOSFODNN7EXAMPL3"]),
    ("ASIAY34FZKBOKMUTVV7A", ["ASIAY34FZKBOKMUTVV7A"]),
    (AWS_SECRET, [AWS_SECRET]),
    ("aws_secret_access_key = wJalrXUtnFEMI+K7MDENG+bPxRfiCYzz1PLEKEY", ["wJalrXUtnFEMI"]),
    ("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", ["AbCdEfGhIjKlMnOp"]),
    ("xoxp-2222222222-3333333333-abcdef0123", ["abcdef0123"]),
    (JWT, ["SflKxwRJSMeKKF2QT4fw", "eyJzdWIiOiIxMjM0"]),
    ("AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", ["SyA1b2C3d4E5f6"]),
    ("sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", ["4eC39HqLyjWDarjt"]),
    ("npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", ["a1B2c3D4e5F6g7H8"]),
    ("pypi-" + "AgEIcHlwaS5vcmcCJDAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAw", ["AgEIcHlwaS5v"]),
    (PEM, ["b3BlbnNzaC1rZXktdjEAAAAA"]),
    ("password=hunter2", ["hunter2"]),
    ('password: "correct horse battery"', ["correct horse"]),
    ("passwd=s3cr3t!", ["s3cr3t"]),
    ("token: tkn_9f8e7d6c5b", ["tkn_9f8e7d6c5b"]),
    ("api_key=abcdEFGH1234", ["abcdEFGH1234"]),
    ("API-KEY: 7f3a9c2e1b", ["7f3a9c2e1b"]),
    ('{"client_secret": "cs-998877"}', ["cs-998877"]),
    ("--token s3cretTok9 --port 8000", ["s3cretTok9"]),
    ("Authorization: Bearer eyBearerTokenValue123", ["eyBearerTokenValue123"]),
    ("DB_PASSWORD='pa ss wd'", ["pa ss wd"]),
    ("PGPASSWORD=pg_pw_42", ["pg_pw_42"]),
    ("https://carol:Sup3rS3cret@git.example.net/repo.git", ["carol", "Sup3rS3cret"]),
    ("postgres://dbuser:dbpass99@10.20.30.48:5432/app", ["dbuser", "dbpass99", "10.20.30.48"]),
    (f"https://{GHP}@github.com/org/repo", [GHP]),
    ("redis://:onlypass77@cache.example.com:6379", ["onlypass77"]),
    ("dave@build-3.corp.example.com", ["dave", "build-3.corp.example.com"]),
    ("erin@10.20.30.49", ["erin", "10.20.30.49"]),
    ("frank@gpu-box-7", ["frank", "gpu-box-7"]),
    ("ssh -i ~/.ssh/id_ed25519", ["id_ed25519"]),
    ("/home/alice/.ssh/id_rsa_work", ["id_rsa_work", "alice"]),
    ("ssh -i /opt/keys/deploy.pem box", ["deploy.pem"]),
    ("~/.ssh/kpro6_key", ["kpro6_key"]),
    ("/Users/grace/models", ["grace"]),
    ("/var/home/heidi/x", ["heidi"]),
    ("C:\\Users\\ivan\\x", ["ivan"]),
    ("~judy/.bashrc", ["judy"]),
    ("/export/home/mallory/", ["mallory"]),
]
PRINTED = ("statement", "value", "source", "note", "observed", "reason", "rationale")
CARRIERS = (*PRINTED, "quote")
TARGETS = {
    "targets": {
        "bastion": {"host": "bastion.example.org", "user": "root"},
        "box": {"host": "gpu-box-7.corp.example", "user": "alice", "jump": "bastion"},
        "ops": {"host": "10.20.30.40", "user": "bob_ops"},
    }
}
MILESTONES = {"milestones": [{"id": "100", "title": "first", "seed": "s.txt", "message": 100}]}
REDACT_YAML = "secrets: [abc, Zebra-Pass-77]\npatterns: ['corp-[0-9]{6}']\n"


def planted_fact(n: int, text: str, carrier: str) -> dict[str, Any]:
    """Fact `p.N` carrying `text` in `carrier` (the result carriers need a check)."""
    fact: dict[str, Any] = {
        "id": f"p.f{n}",
        "category": "instructions",
        "title": f"Planted {n}",
        "statement": f"Planted item {n}.",
        "status": "verified",
        "sources": [{"seed": "s.txt", "message": 100}],
        "since": "100",
    }
    if carrier == "statement":
        fact["statement"] = f"Planted item {n}: {text} end."
    elif carrier == "value":
        fact.update(category="benchmarks", metric="m", value=text, config={"n": n})
    elif carrier == "source":
        fact["sources"] = [{"run": text}]
    elif carrier == "quote":
        fact["sources"] = [{"seed": "s.txt", "message": 100, "quote": text}]
    elif carrier == "note":
        fact["status"] = "refuted"
        fact["history"] = [{"at": "100", "status": "refuted", "note": text}]
    elif carrier in ("observed", "reason"):
        fact.update(
            target="box", value=1, check={"probe": "gpu.count", "args": {}, "expect": {"eq": 1}}
        )
    elif carrier == "rationale":
        fact.update(category="decisions", rationale=text)
    return fact


def planted_records(plants: list[tuple[int, str, str]]) -> list[ResultRecord]:
    records = []
    for n, text, carrier in plants:
        if carrier == "observed":
            records.append(ResultRecord(f"p.f{n}", "box", "drift", "differs", observed=text))
        elif carrier == "reason":
            records.append(ResultRecord(f"p.f{n}", "box", "error", f"probe failed: {text}"))
    for record in records:
        record.time = "2026-11-29T12:00:00+00:00"
    return records


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[int, str, str]]]:
    root = tmp_path_factory.mktemp("planted")
    plants = [(n, text, CARRIERS[n % len(CARRIERS)]) for n, (text, _) in enumerate(CORPUS)]
    facts = [planted_fact(n, text, carrier) for n, text, carrier in plants]
    (root / "facts").mkdir()
    (root / "facts" / "planted.yaml").write_text(yaml.safe_dump({"facts": facts}))
    (root / "targets.yaml").write_text(yaml.safe_dump(TARGETS))
    (root / "milestones.yaml").write_text(yaml.safe_dump(MILESTONES))
    (root / "redact.yaml").write_text(REDACT_YAML)
    write_run(root, "r1", {"targets": ["box"]}, planted_records(plants))
    return root, plants


def status_stdout(root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    code = run(["--root", str(root), "status", "--out", "-", *extra])
    out = capsys.readouterr().out
    assert code == 0
    return out


def test_corpus_is_large_and_covers_every_carrier() -> None:
    assert len(CORPUS) >= 60
    assert {CARRIERS[n % len(CARRIERS)] for n in range(len(CORPUS))} == set(CARRIERS)


def test_every_planted_secret_is_redacted_through_the_cli(
    planted: tuple[Path, list[tuple[int, str, str]]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root, plants = planted
    monkeypatch.setenv("FACTBOOK_SECRETS", "envsecret9")
    plain = status_stdout(root, capsys).lower()
    redacted = status_stdout(root, capsys, "--redact")
    lowered = redacted.lower()
    leaks, invisible = [], []
    for (n, _text, carrier), (_, parts) in zip(plants, CORPUS, strict=True):
        if carrier in PRINTED and parts[0].lower() not in plain:
            invisible.append((n, carrier, parts[0]))
        for part in parts:  # the first as planted; more: other spellings of it
            if part.lower() in lowered:
                leaks.append((n, carrier, part))
    assert not invisible, f"planted but not printed (the test would prove nothing): {invisible}"
    assert not leaks, f"{len(leaks)} of {len(CORPUS)} planted secrets leaked: {leaks}"
    for n in range(len(CORPUS)):  # the rest of each line survived around the secret
        assert f"Planted {n}" in redacted or f"Planted item {n}" in redacted


def test_redaction_is_idempotent(
    planted: tuple[Path, list[tuple[int, str, str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = planted
    monkeypatch.setenv("FACTBOOK_SECRETS", "envsecret9")
    kb = load_kb(root, strict=False)
    once = render_status(kb, StatusOptions(redact=True))
    assert re.search(r"secret-\d+", once) and re.search(r"ip-\d+", once)
    assert redactor_for(kb)(once) == once


SURVIVES = [
    "torch 2.10.0+cu128",
    "driver 580.95.05",
    "CUDA 13.0",
    "token id 151643 and <think> = 163606",
    "82.5 tok/s, 1,536 tok/s",
    "at 14:53:07",
    "std::vector<int>",
    "pip install torch@2.10",
    "max_tokens=512 and token_id=5",
    "eos_token: <|im_end|>",
    "the draft token: accepted",
    "--max-new-tokens 512",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "Qwen4ExpForConditionalGeneration",
    "DeepseekV3ForCausalLMWithMTPHead12",
    "/root/ml-env/bin/python3",
    "ssh root@box and git@github.com",
    "HF_TOKEN=$HF_TOKEN and token: ${TOKEN}",
    "password: <your password>",
    "layers [3, 31, 59], loss 6.127",
    "1.2.3.4.5 and 590.48.01",
    "| token | 163586 |",  # a table's key cell names a token, its value is an id
    "| test | pass | notes here |",
    "| pass | fail |",
    "| auth | key-based |",
    "the login node: ssh -p 2222x root@x and docker run -p 8080:80 vllm",
]


@pytest.mark.parametrize("text", SURVIVES)
def test_ordinary_text_survives(text: str) -> None:
    assert Redactor(hosts=["box.example"], users=["alice"])(text) == text


# --- the shipped knowledge base: nothing but hosts, users and IPs changes ----------------

_PLACEHOLDER = re.compile(r"(?:host|user|ip|secret|key)-\d+")


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _explain(plain: str, redacted: str) -> list[str]:
    """The originals behind the placeholders of one changed token; fails if the token
    changed anywhere else."""
    pieces = _PLACEHOLDER.split(redacted)
    pattern = "(.+?)".join(map(re.escape, pieces))
    match = re.fullmatch(pattern, plain)
    assert match, f"{plain!r} -> {redacted!r} changed outside a placeholder"
    return list(match.groups())


@pytest.mark.parametrize("milestone", ["3157", "3478", "4504"])
def test_shipped_documents_change_only_where_something_sensitive_stood(milestone: str) -> None:
    kb = load_kb(ROOT, strict=False)
    sensitive: set[str] = set()
    for target in kb.targets.values():
        if target.host:
            sensitive |= {target.host.lower(), target.host.split(".")[0].lower()}
        if target.user:
            sensitive.add(target.user.lower())
    plain = render_status(kb, StatusOptions(as_of=milestone))
    redacted = redactor_for(kb, env={})(plain)
    plain_lines, red_lines = plain.splitlines(), redacted.splitlines()
    assert len(plain_lines) == len(red_lines)
    changed = 0
    for before, after in zip(plain_lines, red_lines, strict=True):
        if before == after:
            continue
        words_before, words_after = before.split(), after.split()
        assert len(words_before) == len(words_after), (before, after)
        for old, new in zip(words_before, words_after, strict=True):
            if old == new:
                continue
            for original in _explain(old, new):
                assert original.lower() in sensitive or _is_ip(original), (old, new)
                changed += 1
    assert changed >= 10  # the targets are named throughout the documents
    # the CLI's document is this text plus the "redacted for sharing" note
    full = render_status(kb, StatusOptions(as_of=milestone, redact=True))
    # the CLI's redacted document carries no import hints (ids and values may name hosts)
    unhinted = "\n".join(split_hint(line)[0] for line in redacted.splitlines())
    assert _without_stamp(full) == _without_stamp(unhinted)


def _without_stamp(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("> Generated")]


# --- hostile text: every pattern stays linear (each was quadratic or worse once) -------

HOSTILE = {
    "dots": "a." * 60000,
    "dashes": "a-" * 60000,
    "tildes": "~a" * 60000,
    "colons": "ab:" * 40000,
    "ats": "a@" * 60000,
    "digits": "1." * 60000,
    "assignments": "password " * 13000,
    "flags": "--token " * 15000,
    "paths": "/a" * 60000,
    "key begins": "-----BEGIN RSA PRIVATE KEY-----\n" * 4000,
    "mapped": "::ffff:" * 17000,
    "mixed": "ip_10.1.2.3 user@host.example.com sk-abc token: x1 " * 2400,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_text_is_redacted_in_linear_time(name: str) -> None:
    redact = Redactor(hosts=["box.example", "box"], users=["alice"], secrets=["abcdef"])
    started = time.perf_counter()
    redact(HOSTILE[name])
    assert time.perf_counter() - started < 5.0  # ~0.3 s here; quadratic took 10 s to minutes


# --- redact.yaml is user input: every mistake is one located line, exit 2 ----------------

BAD_CONFIG = [
    ("- a list\n", "redact.yaml:1: expected a mapping"),
    ("passwords: [x]\n", "redact.yaml:1: unknown key 'passwords'"),
    ("secrets: hunter2\n", "redact.yaml:1: 'secrets' must be a list of strings"),
    ("secrets:\n  - ok-secret\n  - {a: 1}\n", "redact.yaml:3: secrets[1] must be a string"),
    ("secrets: [true]\n", "redact.yaml:1: secrets[0] must be a string"),
    ("secrets:\n  - ab\n", "redact.yaml:2: secrets[0] has 2 character(s)"),
    ("patterns:\n  - '[unclosed'\n", "redact.yaml:2: patterns[0] is not a regular expression"),
    ("patterns: ['(?P<x>a)']\n", "patterns[0] must not use named groups"),
    ("patterns: ['a*']\n", "patterns[0] matches the empty string"),
    ("secrets: [a\n", "redact.yaml:2: YAML syntax error"),
    ("hosts: [[nested]]\n", "redact.yaml:1: hosts[0] must be a string"),
]


@pytest.mark.parametrize(("text", "message"), BAD_CONFIG)
def test_bad_redact_config_is_one_located_line(
    planted: tuple[Path, list[tuple[int, str, str]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str,
    message: str,
) -> None:
    root = tmp_path / "kb"
    shutil.copytree(planted[0], root)
    (root / "redact.yaml").write_text(text)
    assert run(["--root", str(root), "status", "--redact", "--out", "-"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2  # the message (and at most a lint warning)


def test_short_environment_secret_is_refused(
    planted: tuple[Path, list[tuple[int, str, str]]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FACTBOOK_SECRETS", "long-enough, xy")
    assert run(["--root", str(planted[0]), "status", "--redact", "--out", "-"]) == 2
    assert "$FACTBOOK_SECRETS: entry 2 has 2 character(s)" in capsys.readouterr().err


def test_a_text_without_a_key_blocks_end_is_redacted_as_the_block_pattern_does() -> None:
    """Where no `-----END` stands, the private-key block cannot match and a BEGIN line is
    redacted by its own pattern (shapes.PRIVATE_KEY_LINE): the same output as the block's."""
    texts = [text[:6000] for text in HOSTILE.values()]  # their shapes; the block's way is slow
    texts += ["key: -----BEGIN OPENSSH PRIVATE KEY----- abc\nnext line"]
    texts += ["-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----BEGIN EC PRIVATE KEY-----x\n"]
    for text in texts:
        assert "-----END" not in text
        quick = Redactor(hosts=["box.example", "box"], users=["alice"], secrets=["abcdef"])
        block = Redactor(hosts=["box.example", "box"], users=["alice"], secrets=["abcdef"])
        block._compiled[False] = re.compile("|".join(block._parts(True)))
        assert quick(text) == block(text)
        assert quick.mapping == block.mapping
    ended = "-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\nok"
    assert Redactor()(ended) == "secret-1\nok"  # a whole block, where its END stands


# what a secrets-only redactor (an assistant over MCP) keeps: names of boxes, people,
# addresses and key files, which the assistant works with
NOT_SECRET = re.compile(
    r"gpu-box-7|alice|bob_ops|bastion\.example\.org|build-3\.corp\.example\.com|carol|dbuser"
    r"|dave|erin|frank|grace|heidi|ivan|judy|mallory|id_ed25519|id_rsa_work|deploy\.pem"
    r"|kpro6_key|ffff|[0-9a-f]+:[0-9a-f:]+|[0-9]+[.-][0-9]+[.-][0-9]+[.-][0-9]+",
    re.I,
)


@pytest.mark.parametrize(("text", "parts"), CORPUS, ids=[t[:40] for t, _ in CORPUS])
def test_secrets_only_hides_every_secret_and_keeps_the_names(
    planted: tuple[Path, list[tuple[int, str, str]]], text: str, parts: list[str]
) -> None:
    kb = load_kb(planted[0], strict=False)
    redactor = redactor_for(kb, env={"FACTBOOK_SECRETS": "envsecret9"}, secrets_only=True)
    out = redactor(text)
    for part in parts:
        if NOT_SECRET.fullmatch(part):
            assert part.lower() not in text.lower() or part.lower() in out.lower(), (text, out)
        else:
            assert part.lower() not in out.lower(), (text, out)
    named = re.compile(r"\b(?:host|user|ip|key)-\d+\b")
    assert set(named.findall(out)) <= set(named.findall(text)), out  # no name replaced
