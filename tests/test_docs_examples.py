"""Every example in the docs runs (issue 14.7): YAML and command examples are extracted from
README.md and docs/*.md and checked here.

- a YAML block with `facts:`, `milestones:` or `targets:` is validated as that file, with the
  loader's own schema and located YAML, its problems reported at the Markdown line;
- any other YAML block must parse;
- every `factbook ...` / `verify-facts ...` command line in a shell block parses with the
  CLI's own parser, and those naming no placeholder run against a copy of the shipped
  knowledge base (read-only commands: lint, list, show, schema, status to stdout).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from helpers import REPO, cli, kb_copy

from factbook.commands.cli import build_parser
from factbook.knowledge import schema
from factbook.knowledge.yamlsrc import load_located

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)")
SHELL_LANGS = {"sh", "bash", "console", "shell"}
PROGRAMS = ("factbook", "verify-facts")
SAFE = {"lint", "list", "show", "schema", "status"}


@dataclass
class Block:
    file: Path
    line: int  # of the first line inside the fence
    lang: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.file.relative_to(REPO)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    out, lines, i = [], path.read_text(encoding="utf-8").splitlines(), 0
    while i < len(lines):
        match = FENCE.match(lines[i].lstrip())
        if not match:
            i += 1
            continue
        fence, lang, start = match.group(1), match.group(2).lower(), i + 1
        i += 1
        while i < len(lines) and not lines[i].lstrip().startswith(fence):
            i += 1
        out.append(Block(path, start + 1, lang, "\n".join(lines[start:i]) + "\n"))
        i += 1
    return out


ALL = [b for path in DOCS for b in blocks(path)]
YAML_BLOCKS = [b for b in ALL if b.lang in ("yaml", "yml")]


def command_lines(block: Block) -> list[tuple[int, list[str]]]:
    """(line, argv) for each factbook / verify-facts command in a shell-ish block."""
    found = []
    for offset, raw in enumerate(block.text.splitlines()):
        line = re.sub(r"^\s*(\$|#)\s+", "", raw) if raw.lstrip().startswith("$ ") else raw
        line = line.strip()
        while re.search(r"\[[^\[\]]*\]", line):  # a synopsis' [--optional ARG] parts
            line = re.sub(r"\s*\[[^\[\]]*\]", "", line)
        for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", line):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                continue
            while words and "=" in words[0] and not words[0].startswith("-"):
                words = words[1:]  # VAR=value prefixes
            if words and Path(words[0]).name in PROGRAMS:
                cut = next((k for k, w in enumerate(words) if w in (">", "<", "2>", ">>")), None)
                found.append((block.line + offset, words[:cut]))
    return found


SHELL_BLOCKS = [b for b in ALL if b.lang in SHELL_LANGS or (b.lang == "" and command_lines(b))]
COMMANDS = [(b, line, argv) for b in SHELL_BLOCKS for line, argv in command_lines(b)]


def test_the_docs_hold_examples() -> None:
    assert len(YAML_BLOCKS) >= 8 and len(COMMANDS) >= 10, (len(YAML_BLOCKS), len(COMMANDS))


def _kb_file_schema(data: object) -> tuple[str, dict] | None:
    if not isinstance(data, dict):
        return None
    if "facts" in data:
        return "facts", schema.FACT_FILE_TOP_SCHEMA
    if "milestones" in data:
        return "milestones", schema.MILESTONES_SCHEMA
    if "targets" in data:
        return "targets", schema.TARGETS_SCHEMA
    return None


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=lambda b: b.where)
def test_yaml_example(block: Block, tmp_path: Path) -> None:
    data = yaml.safe_load(block.text)  # every YAML example parses
    kind = _kb_file_schema(data)
    if kind is None:
        return
    path = tmp_path / "example.yaml"
    path.write_text(block.text, encoding="utf-8")
    doc, problems = load_located(path, "example.yaml")
    problems += schema.validate(doc.data, kind[1], doc)
    if kind[0] == "facts":
        for index, _raw in enumerate(doc.data.get("facts") or []):
            problems += schema.validate(_raw, schema.FACT_SCHEMA, doc, ("facts", index))
    shown = [
        f"{block.file.relative_to(REPO)}:{block.line + p.line - 1}: {p.message}" for p in problems
    ]
    assert shown == []


def _parse(argv: list[str]) -> None:
    parser = build_parser("verify-facts" if Path(argv[0]).name == "verify-facts" else "factbook")
    words = argv[1:]
    if Path(argv[0]).name == "verify-facts":
        words = ["verify", *words]
    args, unknown = parser.parse_known_args(words)
    assert unknown == [], f"unknown arguments {unknown}"
    assert getattr(args, "handler", None) is not None, "no command"


@pytest.mark.parametrize(
    ("line", "argv"),
    [(f"{b.where.split(':')[0]}:{line}", argv) for b, line, argv in COMMANDS],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_command_example_parses(line: str, argv: list[str]) -> None:
    try:
        _parse(argv)
    except SystemExit as exc:
        pytest.fail(f"{line}: `{shlex.join(argv)}` does not parse (exit {exc.code})")


def _runnable(argv: list[str]) -> bool:
    words = argv[1:]
    command = next((w for w in words if not w.startswith("-")), None)
    placeholder = any(re.search(r"[A-Z]{2,}|<|\.\.\.", w) for w in words)
    return Path(argv[0]).name == "factbook" and command in SAFE and not placeholder


RUNNABLE = [
    (f"{b.where.split(':')[0]}:{line}", argv) for b, line, argv in COMMANDS if _runnable(argv)
]


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return kb_copy(tmp_path_factory.mktemp("docs-examples") / "kb")


@pytest.mark.parametrize(
    ("line", "argv"), RUNNABLE, ids=lambda v: v if isinstance(v, str) else None
)
def test_command_example_runs(line: str, argv: list[str], shipped: Path) -> None:
    words = argv[1:]
    if "--root" in words:  # the example's own folder: the copy stands in for it
        words[words.index("--root") + 1] = str(shipped)
    if "status" in words and "--out" not in words:
        words = [*words, "--out", "-"]
    code, _out, err = cli(shipped, *words)
    assert code == 0, f"{line}: `{shlex.join(argv)}` exit {code}: {err[-400:]}"
