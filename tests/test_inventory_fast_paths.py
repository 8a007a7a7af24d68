"""An inventory of 200,000 hosts is read in seconds, and its load is cached like any other.

Each host line used to pay shlex (a character at a time), a Python parse of every value, a
character walk of its host name, two copies of its target and a second `finish()` of the
whole inventory; and an inventory over 4 MiB was never cached, so every command parsed it
again (~22 s at 200,000 hosts on two cores). The fast paths below each take only texts on
which they give the slow path's answer; these tests hold them to that, and the cache to a
real parse. bench/inventory_commands.py times it."""

from __future__ import annotations

import ast
import random
import shlex
import time
from pathlib import Path

import pytest

from factbook.knowledge import kb as kbmod
from factbook.knowledge import kbcache
from factbook.knowledge.fleet.ansible import _plain, ini_value
from factbook.knowledge.kb import load_kb_with_problems, parse_kb_with_problems
from factbook.knowledge.limits import split_words
from factbook.knowledge.model import Fact, Target
from factbook.verification.transports.sshwords import _SHELLISH, valid_hostname


def _literal(text: str) -> object:
    """ini_value as it was: a literal when one parses, else the text."""
    try:
        return _plain(ast.literal_eval(text), text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return text


def _texts(alphabet: str, count: int, longest: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest))) for _ in range(count)
    ]


@pytest.mark.parametrize("comments", [True, False])
def test_split_words_is_shlex_split(comments: bool) -> None:
    alphabet = " \t\r\na'\"\\#b=\x0b\x0c\xa0\u2028é-"
    cases = [*_texts(alphabet, 30_000, 9, 7), "node1 ansible_host=10.0.0.1", "a#b c", "a #b"]
    cases += ["x\x0by", "x\u3000y", "", "   "]
    for text in cases:
        try:
            expected: object = shlex.split(text, comments=comments)
        except ValueError:
            expected = ValueError
        try:
            got: object = split_words(text, comments=comments)
        except ValueError:
            got = ValueError
        assert got == expected, repr(text)


def test_ini_values_that_skip_the_parse_are_no_literals() -> None:
    cases = [*_texts("aZ_/.:@-019T", 30_000, 8, 11)]
    cases += [
        "True", "False", "None", "True#x", "None.x", "a.b", "/usr/bin/python3", "10.0.0.1",
        "1.2", "1.2.3", "1e5", "0x1f", "node7.example.com", "a:b", "a@b", "x-", "_", "b'x'",
        "[1, 2]", "{'a': 1}", "...", "1j", "-1", "+1", "u'x'", "f'x'", "r'x'", "1_000",
    ]  # fmt: skip
    for text in cases:
        got, expected = ini_value(text), _literal(text)
        assert got == expected and type(got) is type(expected), repr(text)


def test_valid_hostname_is_ssh_valid_hostname_for_every_character() -> None:
    """ssh.c's test is per character: every code point, alone and inside a name."""
    for code in range(0x110000):
        c = chr(code)
        expected = not (c in _SHELLISH or c.isspace() or not c.isprintable())
        assert valid_hostname(f"a{c}b") is expected, hex(code)
    assert not valid_hostname("") and not valid_hostname("-h") and valid_hostname("h-1.x")


def test_the_cache_leaves_defaults_out_and_makes_them_again() -> None:
    plain = Target("a")
    odd = Target("b", transport="openssh", port=22, jump=("j",), env={"A": "1"}, tags=("t",))
    fact = Fact("f", "hardware", "t", "s", "assumed", [], "f.yaml", 3, value=0, tags=["x"])
    encoded = kbcache.to_json([plain, odd, fact])
    assert encoded.count(b'"transport"') == 1, "a default was written"
    back = kbcache.from_json(encoded)
    assert back == [plain, odd, fact]
    assert type(back[1].jump) is tuple and back[2].value == 0 and back[2].unit is None
    assert back[0].env == {} and back[0].env is not Target("c").env


def _inventory_kb(root: Path, hosts: int) -> Path:
    (root / "facts").mkdir(parents=True)
    (root / "facts" / "a.yaml").write_text(
        "facts:\n  - {id: hw.a, category: hardware, title: a, statement: a, status: assumed,"
        " target: node7, sources: [{seed: s}]}\n"
    )
    lines = ["[gpu]"] + [
        f"node{i} ansible_host=10.{i >> 16}.{(i >> 8) & 255}.{i & 255} ansible_user=ops"
        for i in range(hosts)
    ]
    lines += ["[gpu:vars]", "ansible_port=2222", "ansible_python_interpreter=/usr/bin/python3"]
    (root / "hosts.ini").write_text("\n".join(lines) + "\n")
    (root / "targets.yaml").write_text("inventory: hosts.ini\n")
    return root


def test_an_inventory_over_4_mib_is_cached_and_loads_as_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FACTBOOK_CACHE", raising=False)
    root = _inventory_kb(tmp_path / "kb", 90_000)
    assert (root / "hosts.ini").stat().st_size > 4 << 20
    time.sleep(kbcache.CLOCK_SLACK_NS / 1e9 + 0.02)  # written just before a load: not cached
    parsed: list[Path] = []
    real = kbmod.parse_kb_with_problems
    monkeypatch.setattr(kbmod, "parse_kb_with_problems", lambda r: parsed.append(r) or real(r))
    first, problems = load_kb_with_problems(root)
    assert problems == [] and len(first.targets) == 90_000
    node = first.targets["node7"]
    assert (node.host, node.user, node.port, node.python) == ("10.0.0.7", "ops", 2222,
                                                              "/usr/bin/python3")  # fmt: skip
    second, _ = load_kb_with_problems(root)
    assert len(parsed) == 1, "the inventory was parsed again"
    fresh, _ = parse_kb_with_problems(root.resolve())
    assert second.targets == fresh.targets and second.groups == fresh.groups
