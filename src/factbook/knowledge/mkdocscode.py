"""What in a knowledge base's mkdocs.yml would run the knowledge base's own code in MkDocs.

MkDocs builds more than pages from its config: `hooks:` are Python files it imports,
`theme.custom_dir` holds Jinja templates it renders with no sandbox (full reach into Python,
unlike factbook's status templates), and its YAML loader constructs `!!python/object/apply:`
and friends (any call) while it reads the file. A knowledge base is shared with write access,
and reading it (`mkdocs build`, `mkdocs serve`) must not run what someone put in it. So:

- the factbook plugin refuses hooks and a custom_dir when MkDocs loads it, which is before
  MkDocs imports the hooks or renders a template (plugins are set up first);
- `factbook lint` names all of them, the tags included (MkDocs constructs them while reading
  the file, before any plugin exists, so lint in CI or pre-commit is what stops them), and a
  module lying in the knowledge base that `markdown_extensions` or `!!python/name:` names
  (imported from there under `python -m mkdocs`).

Whoever builds decides to trust them, not the file: FACTBOOK_TRUST_MKDOCS_CODE=1 in the
environment. `!!python/name:` of an installed object is left alone: Material's emoji index
is configured that way, and it runs nothing of the knowledge base.

    problems = code_in(Path("mkdocs.yml"), "mkdocs.yml")   # [] when nothing runs
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from factbook.errors import Problem
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.kbfiles import Refused, read_text
from factbook.knowledge.limits import YAML_MAX_BYTES
from factbook.knowledge.yamlsrc import FastSafeLoader

TRUST_ENV = "FACTBOOK_TRUST_MKDOCS_CODE"
MAX_INHERIT = 8
CONFIG_NAMES = ("mkdocs.yml", "mkdocs.yaml")  # the names `mkdocs` looks for
_RUNS_TAGS = ("tag:yaml.org,2002:python/object", "tag:yaml.org,2002:python/module")
_NAME_TAG = "tag:yaml.org,2002:python/name:"
_WHY = f"review it, then set {TRUST_ENV}=1 where you build to allow it"


def trusted() -> bool:
    """Whether the person building has said the config's code may run."""
    return os.environ.get(TRUST_ENV, "") not in ("", "0")


def code_in(path: Path, shown: str, *, root: Path | None = None, depth: int = 0) -> list[Problem]:
    """Each place in the mkdocs.yml at `path` (named `shown`), and in the files it INHERITs,
    that runs code when MkDocs reads or builds it. The files are composed into YAML nodes
    only: nothing in them is constructed. `root`: where they must lie (kbfiles)."""
    try:
        text = read_text(path, root=root, limit=YAML_MAX_BYTES, errors="replace")
    except FileNotFoundError:
        return []
    except Refused as exc:  # names where the path leads, never what is there
        return [Problem(shown, 1, str(exc).replace(str(path), "the file", 1))]
    except OSError as exc:
        return [Problem(shown, 1, f"not read: {exc.strerror or type(exc).__name__}")]
    try:
        top = yaml.compose(text, Loader=FastSafeLoader)  # nodes and tags, nothing constructed
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        return [Problem(shown, line, f"not valid YAML: {getattr(exc, 'problem', None) or exc}")]
    problems = _scan(top, shown, path.parent)
    inherited = _inherit(top)
    if inherited is not None and depth < MAX_INHERIT:  # MkDocs merges `INHERIT: base.yml`
        parent = path.parent / inherited
        problems += code_in(parent, str(Path(shown).parent / inherited), root=root, depth=depth + 1)
    return sorted(set(problems)) if depth == 0 else problems  # a loop of INHERITs says it once


def _inherit(top: yaml.Node | None) -> str | None:
    """The file a config names in its top-level `INHERIT:`, which MkDocs reads first."""
    for key, value in _pairs(top):
        if key == "INHERIT" and isinstance(value, yaml.ScalarNode) and value.value:
            return value.value
    return None


def _scan(top: yaml.Node | None, shown: str, root: Path | None) -> list[Problem]:
    """Walk the nodes once: each node's tag, the top-level `hooks`, `theme` → `custom_dir`,
    and the modules named (`markdown_extensions`, `!!python/name:`) that lie in `root`."""
    problems: list[Problem] = []
    modules: list[tuple[str, yaml.Node]] = []  # dotted names MkDocs will import
    seen: set[int] = set()  # an alias is the node it names: walk each node once
    stack: list[yaml.Node] = [top] if top is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.tag.startswith(_RUNS_TAGS):
            name = node.tag.removeprefix("tag:yaml.org,2002:")
            problems.append(
                Problem(shown, _line(node), f"!!{name} runs Python while MkDocs reads it; {_WHY}")
            )
        elif node.tag.startswith(_NAME_TAG):
            modules.append((node.tag.removeprefix(_NAME_TAG), node))
        if isinstance(node, yaml.MappingNode):
            stack.extend(n for pair in node.value for n in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    for key, value in _pairs(top):
        if key == "hooks" and not _empty(value):
            problems.append(
                Problem(shown, _line(value), f"hooks: MkDocs imports these Python files; {_WHY}")
            )
        elif key == "theme":
            for inner, folder in _pairs(value):
                if inner == "custom_dir" and not _empty(folder):
                    problems.append(
                        Problem(
                            shown,
                            _line(folder),
                            "theme.custom_dir: MkDocs renders its templates with no sandbox "
                            f"(they reach Python); {_WHY}",
                        )
                    )
        elif key == "markdown_extensions" and isinstance(value, yaml.SequenceNode):
            for entry in value.value:
                name = entry.value if isinstance(entry, yaml.ScalarNode) else None
                name = name or next((k for k, _ in _pairs(entry) if isinstance(k, str)), None)
                if name:
                    modules.append((name, entry))
    for name, node in modules:
        top = name.split(".", 1)[0].strip()
        if top and root is not None and _local_module(root, top):
            problems.append(
                Problem(
                    shown,
                    _line(node),
                    f"{name}: a Python module of the knowledge base ({top}); MkDocs imports "
                    f"it where the folder is on the path (`python -m mkdocs` here); {_WHY}",
                )
            )
    return sorted(problems, key=lambda p: p.line)


def _local_module(folder: Path, top: str) -> bool:
    """Whether `import top` would find a module or package in `folder`."""
    if not top.isidentifier():
        return False
    return (folder / f"{top}.py").is_file() or (folder / top).is_dir()


def _pairs(node: yaml.Node | None) -> list[tuple[object, yaml.Node]]:
    """A mapping node's (key text, value node) pairs; nothing for any other node."""
    if not isinstance(node, yaml.MappingNode):
        return []
    return [(k.value if isinstance(k, yaml.ScalarNode) else None, v) for k, v in node.value]


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1 if node.start_mark else 1


def _empty(node: yaml.Node) -> bool:
    if isinstance(node, yaml.ScalarNode):
        return node.value in ("", "~", "null", "Null", "NULL")
    return isinstance(node, (yaml.SequenceNode, yaml.MappingNode)) and not node.value


def lint_mkdocs_config(kb: KnowledgeBase) -> list[Problem]:
    """The linter (knowledge/linters.py): code in the knowledge base's mkdocs.yml, unless the
    person running lint trusts it."""
    if trusted():
        return []
    return [
        problem for name in CONFIG_NAMES for problem in code_in(kb.root / name, name, root=kb.root)
    ]
