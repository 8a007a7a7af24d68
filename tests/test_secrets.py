"""Secrets stay out of what factbook writes: the password flags of the commands that take one,
configured secrets holding whitespace, a private key in a budgeted JSON dump, and the value of
a credential environment variable (masked on the box by `env.var`)."""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from pathlib import Path

import pytest
from helpers import cli, fact, make_kb

from factbook.dumps.status.redact import Redactor
from factbook.judging.expectations import evaluate
from factbook.judging.sanitize import hide_url_passwords
from factbook.probes import host

PW = "Hunter2pass"
# (text, what must survive redaction); PW must not
REDACTED = [
    (f"mysql -uroot -p{PW} db", "mysql -uroot -p"),
    (f"mysqldump -h db1 -p{PW} --all-databases", "--all-databases"),
    (f"mariadb -u admin -p'{PW}' shop", "mariadb -u admin -p'"),
    (f"docker exec db /usr/bin/mysql -uroot -p{PW}", "docker exec db /usr/bin/mysql -uroot -p"),
    (f"sudo mysqladmin -P 3306 -p{PW} status", "-P 3306"),
    (f"sshpass -p {PW} ssh -p 2222 box", "ssh -p 2222 box"),
    (f"sshpass -p{PW} scp f box:", "scp f box:"),
    (f"sshpass -p '{PW}' rsync -a x box:", "rsync -a x box:"),
    (f"curl -u admin:{PW} https://x.example/api", "curl -u admin:"),
    (f"curl --user 'admin:{PW}' https://x", "curl --user 'admin:"),
    (f"curl -uadmin:{PW} https://x", "curl -uadmin:"),
    (f"curl -s -U proxy:{PW} https://x", "-U proxy:"),
    (f"redis-cli -a {PW} ping", "ping"),
    (f"ipmitool -I lanplus -H bmc1 -U admin -P {PW} power status", "power status"),
    (f"mongosh -u root -p {PW} db", "mongosh -u root -p"),
    (f"run --password={PW}", "run --password="),
    (f"mysql --password {PW}", "mysql --password "),
    (f"PASSWORD={PW} ./start.sh", "./start.sh"),
    (f"env DB_PASSWORD={PW} MYSQL_PWD={PW} ./x", "./x"),
    (f"export DB_PASS={PW}", "export DB_PASS="),
    (f"SSHPASS={PW} sshpass -e ssh box", "sshpass -e ssh box"),
    (f"REDISCLI_AUTH={PW} redis-cli", "redis-cli"),
    (f"PGPASSWORD='{PW} x' psql", "psql"),
    (f'password: "{PW}\tx"', 'password: "'),
    (f"first `mysql -p{PW}`; then ssh -p 22 box", "then ssh -p 22 box"),
]
# Left as they are: ports, folders, prompts, references, words.
KEPT = [
    "ssh -p 22 root@box",
    "ssh -p 2222 -i key box; mkdir -p /tmp/x",
    "mysql -u root -p shop",  # `-p shop` prompts for the password; shop is the database
    "mysql -p$MYSQL_PWD shop",
    "mysql -psecret-1 shop",
    "curl -u admin https://x",  # curl prompts
    "pip install --user torch",
    "docker run -p 8080:80 img",
    "scp -P 2222 f box:",
    "bypass=yes compass=north",
    "db_auth: kerberos; first pass: done",
    "TOKENIZERS_PARALLELISM=false",
]


@pytest.mark.parametrize(("text", "kept"), REDACTED, ids=[t for t, _ in REDACTED])
def test_password_is_redacted(text: str, kept: str) -> None:
    out = Redactor()(text)
    assert PW not in out, out
    assert kept in out, out
    assert "secret-1" in out, out
    assert Redactor()(out) == out  # a redacted text redacts to itself


@pytest.mark.parametrize("text", KEPT)
def test_ports_folders_and_prompts_are_kept(text: str) -> None:
    assert Redactor()(text) == text


def test_the_password_of_each_command_gets_its_own_placeholder() -> None:
    text = "curl -U proxy:Pr0xyPass -u dave:Other9pw x && sshpass -p Third3pw ssh -p 22 box"
    assert Redactor()(text) == (
        "curl -U proxy:secret-1 -u dave:secret-2 x && sshpass -p secret-3 ssh -p 22 box"
    )


def test_values_of_other_flags_are_still_redacted() -> None:
    """A flag consumed as no password still has its value redacted as any text."""
    out = Redactor(users=["dave"])("docker run -p 10.1.2.3:8080:80 img; mysql -udave -pX1y2z3")
    assert out == "docker run -p ip-1:8080:80 img; mysql -uuser-1 -psecret-1"


@pytest.mark.parametrize(
    "shown",
    ["Hunter2\tpass", "Hunter2 pass", "Hunter2   pass", "Hunter2\n  pass", "Hunter2\\tpass"],
    ids=["tab", "space", "spaces", "newline", "escaped tab"],
)
def test_a_configured_secret_with_a_tab_is_found_however_shown(shown: str) -> None:
    redactor = Redactor(secrets=["Hunter2\tpass"])
    assert redactor(f"the key is {shown} now") == "the key is secret-1 now"


def test_a_configured_secret_with_a_tab_leaves_the_status_document(tmp_path: Path) -> None:
    root = make_kb(
        tmp_path / "kb",
        [
            fact(
                "hw.a",
                "cpu.threads",
                {"ge": 1},
                statement="pw Hunter2\tpass",
                value="Hunter2\tpass",
            )
        ],
    )
    (root / "redact.yaml").write_text('secrets: ["Hunter2\\tpass"]\n')
    for argv in (
        ["--out", "-"],
        ["--budget", "900", "--out", "-"],
        ["--budget", "900", "--format", "json"],
    ):
        code, out, err = cli(root, "status", "--redact", *argv)
        assert code == 0, err
        assert "Hunter2" not in out, out
        assert "secret-1" in out


KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\\n"
    "-----END OPENSSH PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    "statement",
    [f"the key is {KEY}", "only a header -----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXkt"],
    ids=["block", "header"],
)
def test_budgeted_json_with_a_private_key_stays_json(tmp_path: Path, statement: str) -> None:
    root = make_kb(tmp_path / "kb", [])
    (root / "facts" / "facts.yaml").write_text(
        "facts:\n  - id: hw.k\n    category: hardware\n    title: Key\n"
        f'    statement: "{statement}"\n    status: assumed\n    sources: [{{seed: a.txt}}]\n'
    )
    code, out, err = cli(root, "status", "--redact", "--budget", "2000", "--format", "json")
    assert code == 0 and "Traceback" not in err, err
    data = json.loads(out)
    assert "BEGIN OPENSSH" not in out and "b3BlbnNzaC1rZXkt" not in out
    lines = [ln for s in data["sections"] for g in s["groups"] for ln in g["lines"]]
    assert any("secret-1" in ln["text"] for ln in lines), data


def test_new_password_patterns_stay_linear() -> None:
    """Hostile repetitions of what the new alternatives look for: each within a second or
    two on 300,000 characters (quadratic backtracking would take minutes)."""
    for text in (
        "-p " * 100_000,
        "mysql " * 50_000 + "-pX",
        "mysql -p" * 40_000,
        "-u a:" * 60_000,
        "sshpass " * 40_000 + "-p x",
        "a_" * 150_000 + "pass=x",
        "DB_PASS " * 40_000,
        "Hunter2 " * 40_000,
    ):
        started = time.perf_counter()
        Redactor(secrets=["Hunter2\tpass"])(text)
        assert time.perf_counter() - started < 6, text[:20]


# --- env.var: a credential's value is masked on the box ---------------------------------

TOKEN = "hf_" + "Qw3rTy7uIoPaSdFgHjKlZxCvBnM1234567"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("HF_TOKEN", "short-Zq9"),
        ("GITHUB_PAT", "pat-Zq9"),
        ("OPENAI_API_KEY", "key-Zq9"),
        ("DB_PASSWORD", "pw-Zq9"),
        ("MYSQL_PWD", "pw-Zq9"),
        ("DB_PASS", "pw-Zq9"),
        ("PASSWD", "pw-Zq9"),
        ("AWS_SECRET_ACCESS_KEY", "secret-Zq9"),
        ("GOOGLE_APPLICATION_CREDENTIALS", "/etc/k.json"),
        ("HTTP_AUTH", "basic-Zq9"),
        ("apiKey", "key-Zq9"),
        ("MY_SETTING", TOKEN),  # the value gives it away
        ("DATABASE_URL", "postgres://app:S3cretPw@db:5432/x"),
        ("BLOB", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        ("KEYDATA", "-----BEGIN RSA PRIVATE KEY-----"),
    ],
)
def test_env_var_masks_credentials(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    observed = host.env_var(name)
    digest = hashlib.sha256(value.encode()).hexdigest()[:12]
    assert observed == {"masked": True, "length": len(value), "sha256": digest}
    assert value not in json.dumps(observed)
    assert evaluate({"exists": True}, observed).passed
    assert evaluate({"path": "sha256", "eq": digest}, observed).passed
    assert not evaluate({"path": "sha256", "eq": "0" * 12}, observed).passed


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("HOME", "/root"),
        ("PWD", "/srv/app"),
        ("TOKENIZERS_PARALLELISM", "false"),
        ("CUDA_VISIBLE_DEVICES", "GPU-8a3f1c2e-1234-5678-9abc-def012345678"),
        ("PATH", "/usr/local/cuda-12.4/bin:/opt/NVIDIA/NsightSystems2024/lib64:/usr/bin"),
        ("MODEL", "Qwen/Qwen4ExpForConditionalGeneration"),
        ("KEYBOARD", "us"),
        ("NCCL_IB_HCA", "mlx5_0,mlx5_1"),
    ],
)
def test_env_var_keeps_ordinary_values(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    assert host.env_var(name) == value
    monkeypatch.delenv(name)
    assert host.env_var(name) is None


def test_a_credential_never_reaches_results_output_or_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FACTBOOK_TEST_TOKEN", TOKEN)
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()[:12]
    args = {"name": "FACTBOOK_TEST_TOKEN"}
    expects = {"sw.tok": {"exists": True}, "sw.eq": {"eq": "wrong"}}
    expects["sw.sha"] = {"path": "sha256", "eq": digest}
    facts = [fact(fid, "env.var", e, args=args, target="local") for fid, e in expects.items()]
    root = make_kb(tmp_path / "kb", facts)
    code, out, err = cli(root, "verify", "--format", "json")
    assert code == 1, err  # sw.eq drifts: a masked value equals no plain text
    outcomes = {r["fact"]: r["outcome"] for r in json.loads(out)["results"]}
    assert outcomes == {"sw.tok": "pass", "sw.eq": "drift", "sw.sha": "pass"}, out
    code, status, err = cli(root, "status", "--out", "-")
    assert code == 0, err
    written = [p.read_text() for p in (root / "results").rglob("*") if p.is_file()]
    assert written
    for text in (out, err, status, *written):
        assert TOKEN not in text and TOKEN[3:20] not in text


_OLD_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:?#]*):[^\s/?#]*@")


def test_url_passwords_are_hidden_as_the_pattern_hid_them_in_linear_time() -> None:
    """The pattern was tried from every letter of a word and scanned the rest of it: a
    128 KiB argument of `a1a1...` or of letters took seconds. It is found from each `://`
    now; the pattern is the oracle on random command-line words."""
    rng = random.Random(4)
    pieces = ["a", "B", "1", "+", ".", "-", ":", "/", "://", "@", " ", "?", "#", "ssh", "é",
              "x:y@", "ssh://u:p@h"]  # fmt: skip
    for _ in range(100_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        want = _OLD_URL_PASSWORD.sub(lambda m: f"{m['head']}:***@", text)
        assert hide_url_passwords(text) == want, text
    for word in ("a1" * 64_000, "a" * 128_000 + "://", "a://:" * 25_000):
        started = time.process_time()
        hide_url_passwords(word)
        assert time.process_time() - started < 0.5
