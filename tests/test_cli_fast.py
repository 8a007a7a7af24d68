"""A run that names its command imports only that command's module: the table that says which
module registers which name is checked against the modules, and the parser built for one
command parses, helps and errs exactly as the whole parser does."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from factbook.commands.cli import COMMAND_MODULES, COMMAND_OF, build_parser, command_named


def test_the_table_names_every_command_of_every_module() -> None:
    registered = {}
    for name in COMMAND_MODULES:
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        importlib.import_module(f"factbook.commands.{name}").register(sub)
        registered.update({command: name for command in sub.choices})
    assert registered == COMMAND_OF


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["verify", "--target", "x"], "verify"),
        (["--root", "kb", "list"], "list"),
        (["--root=kb", "--color", "never", "show", "id"], "show"),
        (["--color=always", "launch-lint"], "launch-lint"),
        (["-h"], None),
        (["--ro", "kb", "verify"], None),  # an abbreviation: the whole parser decides
        (["nonsense"], None),
        ([], None),
    ],
)
def test_command_named(argv: list[str], named: str | None) -> None:
    assert command_named(argv) == named


def _outcome(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[object, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            args = vars(parser.parse_args(argv))
            args.pop("handler", None)
            result: object = args
        except SystemExit as exc:
            result = exc.code
    return result, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "argv",
    [
        ["verify", "--help"],
        ["verify", "--target", "local", "-j", "4", "--root", "kb", "hw.*"],
        ["verify", "--bogus"],
        ["verify", "--format", "nope"],
        ["list", "--help"],
        ["show"],
        ["eagle3", "--help"],
        ["bench", "import", "--help"],
        ["completion", "bash"],
    ],
)
def test_one_command_parser_behaves_as_the_whole_one(argv: list[str]) -> None:
    for prog in ("factbook", "verify-facts"):
        if prog == "verify-facts" and argv[0] != "verify":
            continue
        whole = _outcome(build_parser(prog), argv)
        one = _outcome(build_parser(prog, only=command_named(argv)), argv)
        assert one == whole


def test_verify_does_not_import_the_other_commands() -> None:
    code = (
        "import json, sys; from factbook.commands.cli import build_parser; "
        "build_parser(only='verify'); "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('factbook.commands.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    assert "factbook.commands.verify" in loaded
    assert not {"factbook.commands.serve", "factbook.commands.docs", "factbook.commands.run"} & set(
        loaded
    )


def test_reading_a_knowledge_base_imports_no_transport() -> None:
    """lint, status, import and the handbook read a knowledge base: none of them reaches a
    box, so none pays for the transports (and the subprocess machinery they import)."""
    repo = Path(__file__).resolve().parents[1]
    code = (
        "import json, sys; from pathlib import Path; "
        "from factbook.knowledge.kb import load_kb_with_problems; "
        "import factbook.dumps.capture; "
        f"load_kb_with_problems(Path({str(repo)!r})); "
        "print(json.dumps(sorted(m for m in sys.modules if 'transports' in m "
        "or m == 'subprocess')))"
    )
    # the first load may parse (the cache is this user's and stamped with the code): the
    # second is what every run after it does
    subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
