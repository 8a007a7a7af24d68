"""What in a knowledge base's mkdocs.yml would make MkDocs run the knowledge base's code or
publish what lies outside it.

MkDocs builds more than pages from its config: `hooks:` are Python files it imports,
`theme.custom_dir` and `extra_templates` are Jinja templates it renders with no sandbox (full
reach into Python, unlike factbook's status templates), plugins and Markdown extensions are
imported and called with the config's options, and its YAML loader constructs
`!!python/object/apply:` and friends (any call) and `!ENV` (the builder's environment) while
it reads the file. A knowledge base is shared with write access, and reading it (`mkdocs
build`, `mkdocs serve`) must not run what someone put in it nor publish the builder's files.

What may run is an allow-list, because a deny-list of keys cannot know what a third-party
plugin or extension does (mkdocs-macros renders every page as Jinja):

- plugins: factbook, search and Material's search, tags, offline, typeset, meta, blog,
  optimize, group (its plugins checked alike) and privacy with `assets_fetch: false`; their
  path options (`*_dir`, `*_file`, jieba dictionaries) inside the root;
- Markdown extensions of Python-Markdown, PyMdown and Material; pymdownx.snippets and b64
  without a base path outside the root, an unrestricted path or `url_download`;
- `!!python/name:` of a function those packages define (Material's emoji index, a fence);
- `docs_dir` and `site_dir` inside the root; no `!ENV`, `hooks`, `extra_templates`,
  `theme.custom_dir` or `theme.static_templates`, no module lying in the knowledge base.

The factbook plugin refuses them when MkDocs loads it (before hooks are imported or a
template rendered); `factbook lint` names all of them: the tags and Markdown extensions run
while MkDocs reads and validates the file, before any plugin exists, so lint in CI or
pre-commit is what stops those. Whoever builds decides to trust the config, not the file:
FACTBOOK_TRUST_MKDOCS_CODE=1 in the environment.

    problems = code_in(Path("mkdocs.yml"), "mkdocs.yml")   # [] when nothing runs
"""

from __future__ import annotations

import ast
import importlib.util
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points
from pathlib import Path

import yaml

from factbook.errors import Problem
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.kbfiles import Refused, escapes, read_text
from factbook.knowledge.limits import YAML_MAX_BYTES, YAML_MAX_NODES
from factbook.knowledge.walk import MAX_DEPTH
from factbook.knowledge.yamlsrc import FastSafeLoader

TRUST_ENV = "FACTBOOK_TRUST_MKDOCS_CODE"
MAX_INHERIT = 8
CONFIG_NAMES = ("mkdocs.yml", "mkdocs.yaml")  # the names `mkdocs` looks for
_RUNS_TAGS = ("tag:yaml.org,2002:python/object", "tag:yaml.org,2002:python/module")
_NAME_TAG = "tag:yaml.org,2002:python/name:"
_WHY = f"review it, then set {TRUST_ENV}=1 where you build to allow it"
# packages whose Markdown extensions and `!!python/name:` functions a config may name
_SAFE_PACKAGES = ("markdown.extensions", "pymdownx", "material.extensions", "materialx")
# The short names Python-Markdown 3 registers for its own extensions: where Markdown is not
# installed (lint without the handbook extra) no entry point says where a name leads, and
# these are the only names that would lead into Markdown itself once it is.
_MARKDOWN_OWN = frozenset(
    [
        "abbr",
        "admonition",
        "attr_list",
        "codehilite",
        "def_list",
        "extra",
        "fenced_code",
        "footnotes",
        "legacy_attrs",
        "legacy_em",
        "md_in_html",
        "meta",
        "nl2br",
        "sane_lists",
        "smarty",
        "tables",
        "toc",
        "wikilinks",
    ]
)
# plugins vetted in the installed Material 9.x: they run no code of the knowledge base and,
# with their path options inside it, read nothing outside (projects and info load further
# mkdocs.yml files with MkDocs' unsafe loader; social draws any file a layout names)
_VETTED_MATERIAL = ("search", "tags", "offline", "privacy", "typeset", "meta", "blog", "optimize")
VETTED_PLUGINS = frozenset(
    {"factbook.handbook.plugin", "mkdocs.contrib.search"}
    | {f"material.plugins.{name}.plugin" for name in (*_VETTED_MATERIAL, "group")}
)
# the names the vetted plugins register, for lint where MkDocs is not installed (a core
# install, a CI runner): a bare name loads THEME/name, so both spellings are vetted
_VETTED_NAMES = frozenset(
    {"factbook", "search"}
    | {f"{prefix}{name}" for name in (*_VETTED_MATERIAL, "group") for prefix in ("", "material/")}
)
_PATH_SUFFIXES = ("_dir", "_file", "base_path", "root_path", "jieba_dict", "jieba_dict_user")
_PATH_KEYS = frozenset({"root"})  # the factbook plugin's knowledge base
# an option that, set to the value, makes an extension read past its base or the network
_WIDENING = {
    "restrict_base_path": (False, "lets it include any file of the builder"),
    "restrict_path": (False, "lets it embed any file of the builder"),
    "url_download": (True, "lets it include what any URL returns to the builder"),
}


@dataclass(frozen=True)
class _Where:
    """The config being checked: its name as shown, its folder, the knowledge base root."""

    shown: str
    folder: Path
    roots: tuple[Path, ...]  # where its paths may lead

    def problem(self, node: yaml.Node, what: str) -> Problem:
        return Problem(self.shown, _line(node), f"{what}; {_WHY}")


def trusted() -> bool:
    """Whether the person building has said the config's code may run."""
    return os.environ.get(TRUST_ENV, "") not in ("", "0")


def code_in(
    path: Path,
    shown: str,
    *,
    root: Path | None = None,
    also: tuple[Path, ...] = (),
    depth: int = 0,
    hazards_only: bool = False,
) -> list[Problem]:
    """Each place in the mkdocs.yml at `path` (named `shown`), and in the files it INHERITs,
    that runs code or publishes what lies outside `root` (or `also`: a knowledge base that
    the config names) when MkDocs reads or builds it. The files are composed into YAML nodes
    only: nothing in them is constructed."""
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
    if hazards_only:  # trusted: code may run and paths lead anywhere, but nothing may hang
        where = _Where(shown, path.parent, (Path("/"),))
        problems = _expansion_problems(top, where) + _docs_walk(top, where)
    else:
        where = _Where(shown, path.parent, (Path(root or path.parent), *also))
        problems = _scan(top, where) + _expansion_problems(top, where)
    inherited = _inherit(top)
    if inherited is not None and depth < MAX_INHERIT:  # MkDocs merges `INHERIT: base.yml`
        parent = path.parent / inherited
        named = str(Path(shown).parent / inherited)
        problems += code_in(
            parent, named, root=root, also=also, depth=depth + 1, hazards_only=hazards_only
        )
    return sorted(set(problems)) if depth == 0 else problems  # a loop of INHERITs says it once


def _docs_walk(top: yaml.Node | None, where: _Where) -> list[Problem]:
    """The docs_dir walk alone (_walk_problem), for a config whose code is trusted: a link
    loop hangs MkDocs whoever vouches for the file."""
    value = dict((k, v) for k, v in _pairs(top) if isinstance(k, str)).get("docs_dir")
    if value is None and isinstance(top, yaml.MappingNode):
        value = yaml.ScalarNode("tag:yaml.org,2002:str", _DEFAULT_DIRS["docs_dir"])
    walked = _walk_problem(value, where) if value is not None else None
    return [] if walked is None else [Problem(where.shown, _line(value), walked)]


def _inherit(top: yaml.Node | None) -> str | None:
    """The file a config names in its top-level `INHERIT:`, which MkDocs reads first."""
    for key, value in _pairs(top):
        if key == "INHERIT" and isinstance(value, yaml.ScalarNode) and value.value:
            return value.value
    return None


def _scan(top: yaml.Node | None, where: _Where) -> list[Problem]:
    """Every node's tag, then each top-level key MkDocs acts on."""
    problems = [p for node in _nodes(top) for p in _tag_problems(node, where)]
    for key, value in _pairs(top):
        check = _KEYS.get(key) if isinstance(key, str) else None
        if check is not None:
            problems += check(value, where)
    named = {key for key, _ in _pairs(top)}
    for key, default in _DEFAULT_DIRS.items():  # `docs` or `site` itself a link out
        if key not in named and isinstance(top, yaml.MappingNode) and "INHERIT" not in named:
            problems += _KEYS[key](yaml.ScalarNode("tag:yaml.org,2002:str", default), where)
    return sorted(problems, key=lambda p: p.line)


def _nodes(top: yaml.Node | None) -> Iterator[yaml.Node]:
    """Each node once (an alias is the node it names)."""
    seen: set[int] = set()
    stack: list[yaml.Node] = [top] if top is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        if isinstance(node, yaml.MappingNode):
            stack.extend(n for pair in node.value for n in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


MAX_EXPANDED = YAML_MAX_NODES
_LOOP = "YAML alias loop: a value contains itself"


def _expansion_problems(top: yaml.Node | None, where: _Where) -> list[Problem]:
    """An alias loop, or aliases that spell out more than MAX_EXPANDED values. MkDocs' loader
    builds an alias as the one shared value, then validates and walks what it built: `nav:
    *a8` (eight levels of ten aliases, 500 bytes) is 10**8 entries (a MemoryError traceback,
    before any plugin runs), `&r [*r]` a value that contains itself. The sizes are summed
    over the composed nodes, each node once."""
    size: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(top, False)] if top is not None else []
    open_: set[int] = set()
    while stack:
        node, done = stack.pop()
        children = _children(node)
        if done:
            open_.discard(id(node))
            size[id(node)] = min(1 + sum(size[id(c)] for c in children), MAX_EXPANDED + 1)
            if size[id(node)] > MAX_EXPANDED:
                what = f"spells out more than {MAX_EXPANDED:,} values through aliases"
                return [Problem(where.shown, _line(node), f"YAML {what}")]
            continue
        if id(node) in size:
            continue
        open_.add(id(node))
        stack.append((node, True))
        for child in children:
            if id(child) in open_:
                return [Problem(where.shown, _line(child), _LOOP)]
            stack.append((child, False))
    return []


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _tag_problems(node: yaml.Node, where: _Where) -> list[Problem]:
    """Python tags construct objects as MkDocs reads the file; `!ENV` copies the builder's
    environment (a CI secret) into whatever the key feeds, pages included."""
    if node.tag.startswith(_RUNS_TAGS):
        name = node.tag.removeprefix("tag:yaml.org,2002:")
        return [where.problem(node, f"!!{name} runs Python while MkDocs reads it")]
    if node.tag.startswith(_NAME_TAG):
        return _python_name(node.tag.removeprefix(_NAME_TAG), node, where)
    if node.tag == "!ENV":
        return [where.problem(node, "!ENV puts the builder's environment into the site")]
    return []


def _python_name(name: str, node: yaml.Node, where: _Where) -> list[Problem]:
    """`!!python/name:` imports a module and hands one of its objects to whatever calls it:
    only a function or class that Markdown, PyMdown or Material define is allowed."""
    local = _shadowed(name, node, where)
    if local:
        return local
    module, _, attr = name.rpartition(".")
    if _safe_module(module) and _defined_in(module, attr):
        return []
    if _safe_module(module) and _module_file(module) is None:
        return [
            where.problem(
                node,
                f"!!python/name:{name}: cannot be vetted here, {module} is not installed; "
                "lint where the handbook's packages are (factbook[handbook])",
            )
        ]
    return [
        where.problem(
            node,
            f"!!python/name:{name}: not a function of Markdown, PyMdown or Material; MkDocs "
            "imports it and calls it with the config's and pages' values",
        )
    ]


def _safe_module(module: str) -> bool:
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return False
    if len(parts) == 3 and parts[:2] == ["material", "plugins"]:  # sort and slug helpers
        return True
    return any(module == p or module.startswith(p + ".") for p in _SAFE_PACKAGES)


@lru_cache(maxsize=256)
def _defined_in(module: str, attr: str) -> bool:
    """Whether the installed `module` itself defines `attr` at its top level (a function,
    class or constant), found in its source without importing it: not a name it imported."""
    if not attr.isidentifier() or attr.startswith("_"):
        return False
    source = _module_file(module)
    if source is None:
        return False
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return False
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) and stmt.name == attr:
            return True
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == attr for t in targets):
            return True
    return False


def _module_file(module: str) -> Path | None:
    """The installed source of a dotted module, found from its top package's folder."""
    top, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(top)  # a top-level package: nothing is imported
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    base = Path(next(iter(spec.submodule_search_locations))).joinpath(*rest)
    plain = base.with_suffix(".py")
    found = plain if rest and plain.is_file() else base / "__init__.py"
    return found if found.is_file() else None


def _shadowed(name: str, node: yaml.Node, where: _Where) -> list[Problem]:
    """A module named in the config that lies in the knowledge base: `python -m mkdocs` puts
    the folder on the path first, so MkDocs would import the knowledge base's copy."""
    top = name.split(".", 1)[0].split(":", 1)[0].strip()
    if not top or not _local_module(where.folder, top):
        return []
    return [
        where.problem(
            node,
            f"{name}: a Python module of the knowledge base ({top}); MkDocs imports it where "
            "the folder is on the path (`python -m mkdocs` here)",
        )
    ]


def _local_module(folder: Path, top: str) -> bool:
    """Whether `import top` would find a module or package in `folder`."""
    if not top.isidentifier():
        return False
    return (folder / f"{top}.py").is_file() or (folder / top).is_dir()


def _check_hooks(value: yaml.Node, where: _Where) -> list[Problem]:
    if _empty(value):
        return []
    return [where.problem(value, "hooks: MkDocs imports these Python files")]


def _check_extra_templates(value: yaml.Node, where: _Where) -> list[Problem]:
    if _empty(value):
        return []
    return [
        where.problem(
            value,
            "extra_templates: MkDocs renders these files with a plain Jinja2 Template "
            "(no sandbox: they reach Python)",
        )
    ]


def _check_theme(value: yaml.Node, where: _Where) -> list[Problem]:
    problems = []
    for key, inner in _pairs(value):
        if key == "custom_dir" and not _empty(inner):
            problems.append(
                where.problem(
                    inner,
                    "theme.custom_dir: MkDocs renders its templates with no sandbox "
                    "(they reach Python)",
                )
            )
        elif key == "static_templates" and not _empty(inner):
            problems.append(
                where.problem(
                    inner,
                    "theme.static_templates: MkDocs renders these as Jinja templates with no "
                    "sandbox (they reach Python)",
                )
            )
    return problems


def _check_dir(name: str, does: str) -> Callable[[yaml.Node, _Where], list[Problem]]:
    """`docs_dir` (published) and `site_dir` (written, and emptied first) stay inside."""

    def check(value: yaml.Node, where: _Where) -> list[Problem]:
        outside = _outside(value, where)
        if outside is None:
            walked = _walk_problem(value, where) if name == "docs_dir" else None
            return [] if walked is None else [Problem(where.shown, _line(value), walked)]
        return [
            where.problem(
                value, f"{name}: resolves to {outside}, outside the knowledge base; MkDocs {does}"
            )
        ]

    return check


MAX_DOCS_FOLDERS = 10_000


def _walk_problem(node: yaml.Node, where: _Where) -> str | None:
    """Why MkDocs' walk of docs_dir would not end, if it would not. MkDocs lists the pages
    with os.walk(followlinks=True) before any plugin runs: `docs/a -> .` and `docs/b -> .`
    walk 2**N paths until names grow too long, `docs/r -> /` the whole machine. The walk
    here follows links as MkDocs does but enters each real folder once; a folder reached a
    second way, a link leading out of the knowledge base, or more than MAX_DOCS_FOLDERS
    folders is named. So is a tree deeper than MAX_DEPTH: MkDocs' recursive walk raises
    RecursionError 1,000 levels down, and realpath() of each folder made a tree 2,500
    levels deep a walk of minutes here."""
    if not isinstance(node, yaml.ScalarNode) or node.tag != "tag:yaml.org,2002:str":
        return None  # `!relative` and the like: its folder is checked, not walked
    docs = where.folder / (node.value or "docs")
    if not docs.is_dir():
        return None
    seen = {os.path.realpath(docs)}
    stack = [(docs, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue  # MkDocs skips it too (os.walk's onerror is None)
        for entry in entries:
            if not entry.is_dir():  # follows a link, as os.walk(followlinks=True) does
                continue
            real = os.path.realpath(entry.path)
            shown = Path(entry.path).relative_to(where.folder).as_posix()
            if entry.is_symlink() and None not in [escapes(real, r) for r in where.roots]:
                return f"docs_dir: {shown} leads to {real}, outside the knowledge base"
            if real in seen:
                return (
                    f"docs_dir: {shown} leads to {real}, a folder MkDocs walks already "
                    "(a link loop, or a second way in); MkDocs follows folder links and "
                    "would walk it again, without end in a loop"
                )
            if len(seen) >= MAX_DOCS_FOLDERS:
                return f"docs_dir: more than {MAX_DOCS_FOLDERS:,} folders to walk"
            if depth >= MAX_DEPTH:
                return f"docs_dir: folders nested more than {MAX_DEPTH} deep"
            seen.add(real)
            stack.append((Path(entry.path), depth + 1))
    return None


def _outside(node: yaml.Node, where: _Where) -> Path | None:
    """Where a path option really leads when that is outside the root (relative paths from
    the config's folder, `!relative $config_dir/...` and `$docs_dir` alike)."""
    if not isinstance(node, yaml.ScalarNode) or _empty(node) or node.tag == "!ENV":
        return None
    text = node.value
    if node.tag == "!relative":
        text = text.replace("$config_dir", ".", 1).replace("$docs_dir", "docs", 1) or "docs"
    text = text.replace("{blog}", ".")  # Material blog's placeholders, inside its folder
    leads = [escapes(where.folder / text, root) for root in where.roots]
    return None if None in leads else leads[0]


def _entries(value: yaml.Node) -> list[tuple[str, yaml.Node, yaml.Node]]:
    """(name, node naming it, options node) of a list or mapping of plugins or extensions."""
    found: list[tuple[str, yaml.Node, yaml.Node]] = []
    items = value.value if isinstance(value, yaml.SequenceNode) else [value]
    for item in items:
        if isinstance(item, yaml.ScalarNode) and isinstance(value, yaml.SequenceNode):
            found.append((item.value, item, item))
        if isinstance(item, yaml.MappingNode):
            for key, options in item.value:
                if isinstance(key, yaml.ScalarNode):
                    found.append((key.value, key, options))
    return found


def _check_extensions(value: yaml.Node, where: _Where) -> list[Problem]:
    """Markdown imports each extension and calls it with its options while MkDocs validates
    the config: only those of Markdown, PyMdown and Material, kept inside the root."""
    problems: list[Problem] = []
    for name, node, options in _entries(value):
        shadow = _shadowed(name, node, where)
        if shadow:
            problems += shadow
        elif not _vetted_extension(name):
            problems.append(
                where.problem(
                    node,
                    f"markdown_extensions: {name}: not an extension of Markdown, PyMdown or "
                    "Material; MkDocs imports it and runs it on every page",
                )
            )
        else:
            problems += _option_problems(f"markdown_extensions: {name}", options, where)
    return problems


def _vetted_extension(name: str) -> bool:
    """A short name Markdown registers, or a dotted module (`mod:Class`) of a safe package."""
    module, _, cls = name.partition(":")
    if cls and not (cls.isidentifier() and cls.endswith("Extension")):
        return False
    if "." not in module and not cls:
        found = [e.value for e in entry_points(group="markdown.extensions", name=module)]
        if not found:  # Markdown not installed here (lint in a core install, a CI runner)
            return module in _MARKDOWN_OWN
        return all(_safe_module(v.partition(":")[0]) for v in found)
    return _safe_module(module)


def _check_plugins(value: yaml.Node, where: _Where) -> list[Problem]:
    """MkDocs imports each plugin and runs it on the whole site: only vetted ones, with
    their path options inside the root."""
    problems: list[Problem] = []
    for name, node, options in _entries(value):
        refused = _plugin_refusal(name)
        if refused:
            problems.append(where.problem(node, f"plugins: {name}: {refused}"))
            continue
        problems += _option_problems(f"plugins: {name}", options, where)
        if name.removeprefix("/").split("/")[-1] == "privacy" and _fetches(options):
            problems.append(
                where.problem(
                    node,
                    f"plugins: {name}: downloads every external URL the pages name into the "
                    "site (an address only the builder reaches, too); set assets_fetch: false",
                )
            )
        for key, nested in _pairs(options):
            if key == "plugins":  # material/group: plugins of its own
                problems += _check_plugins(nested, where)
    return problems


def _plugin_refusal(name: str) -> str | None:
    """Why the plugin(s) `name` can load are refused (a bare name may load THEME/name);
    None when every one is vetted."""
    installed = {e.name: e.value for e in entry_points(group="mkdocs.plugins")}
    bare = name.removeprefix("/")
    themed = [n for n in installed if n.endswith("/" + bare)] if "/" not in name else []
    modules = [installed[n].partition(":")[0] for n in [bare, *themed] if n in installed]
    if not modules:  # not installed here: the name alone says whether it would be vetted
        return None if bare in _VETTED_NAMES else "not an installed plugin factbook has vetted"
    for module in modules:
        if module not in VETTED_PLUGINS:
            return _PLUGIN_WHY.get(module, _PLUGIN_DEFAULT_WHY)
    return None


_PLUGIN_DEFAULT_WHY = (
    "not a plugin factbook has vetted: a plugin runs its own Python over every page and "
    "file (mkdocs-macros renders pages as Jinja)"
)
_PLUGIN_WHY = {
    "material.plugins.projects.plugin": "builds projects/*/mkdocs.yml, read with MkDocs' "
    "unsafe YAML loader (a !!python tag in them runs)",
    "material.plugins.info.plugin": "reads the configs with MkDocs' unsafe YAML loader and "
    "zips the project",
    "material.plugins.social.plugin": "draws any file a card layout names into the site",
}


def _fetches(options: yaml.Node) -> bool:
    """Whether Material's privacy plugin, so configured, downloads external assets."""
    flags = {key: value for key, value in _pairs(options) if isinstance(value, yaml.ScalarNode)}
    off = ("false", "False", "FALSE", "no", "off")
    return not any(key in flags and flags[key].value in off for key in _FETCH_SWITCHES)


_FETCH_SWITCHES = ("enabled", "assets", "assets_fetch")


def _option_problems(label: str, options: yaml.Node, where: _Where) -> list[Problem]:
    """Path options that lead outside the root, and switches that widen where it reads."""
    problems: list[Problem] = []
    for key, value in _pairs(options):
        if not isinstance(key, str):
            continue
        if key in _WIDENING and _flag(value) is _WIDENING[key][0]:
            problems.append(
                where.problem(value, f"{label}: {key}: {value.value} {_WIDENING[key][1]}")
            )
        elif key in _PATH_KEYS or key.endswith(_PATH_SUFFIXES):
            values = value.value if isinstance(value, yaml.SequenceNode) else [value]
            for item in values:
                outside = _outside(item, where)
                if outside is not None:
                    problems.append(
                        where.problem(
                            item,
                            f"{label}: {key}: resolves to {outside}, outside the knowledge base",
                        )
                    )
    return problems


def _flag(node: yaml.Node) -> bool | None:
    """A YAML 1.1 boolean scalar's value (None for anything else)."""
    if not isinstance(node, yaml.ScalarNode):
        return None
    word = node.value.lower()
    return (
        True if word in ("true", "yes", "on") else False if word in ("false", "no", "off") else None
    )


_DEFAULT_DIRS = {"docs_dir": "docs", "site_dir": "site"}  # MkDocs' defaults
_KEYS: dict[str, Callable[[yaml.Node, _Where], list[Problem]]] = {
    "hooks": _check_hooks,
    "extra_templates": _check_extra_templates,
    "theme": _check_theme,
    "docs_dir": _check_dir("docs_dir", "would publish it"),
    "site_dir": _check_dir("site_dir", "would empty it and write the site there"),
    "markdown_extensions": _check_extensions,
    "plugins": _check_plugins,
}


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
    """The linter (knowledge/linters.py): what in the knowledge base's mkdocs.yml runs code or
    publishes outside it, unless the person running lint trusts it."""
    hazards_only = trusted()  # trust lets its code run, never an alias bomb or a link loop
    return [
        problem
        for name in CONFIG_NAMES
        for problem in code_in(kb.root / name, name, root=kb.root, hazards_only=hazards_only)
    ]
