"""Shell completion for bash, zsh and fish: thin shell functions, the answers from here.

    factbook completion bash --install   # or: factbook completion bash > FILE

Each shell's function passes the words typed so far to the hidden `factbook __complete INDEX
WORD...`, which answers one candidate per line, already filtered by the word being completed.
So the three shells complete the same things, and one function to test decides them:
subcommands and options from the real argparse parser (a new command completes with no edit
here), and from the knowledge base named by `--root` or $FACTBOOK_ROOT: fact ids, targets
(and `all`, and target groups where the inventory has them), categories, tags, statuses,
runbooks and the step names of the runbook on the line. An option taking a file completes
nothing here, and the shell falls back to file names.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from factbook.errors import visible

SHELLS = ("bash", "zsh", "fish")
PROGRAMS = ("factbook", "verify-facts")

# option (any of its spellings) -> what its value is
_VALUE_KINDS = {
    "--target": "target",
    "--factbook-target": "target",
    "--category": "category",
    "--tag": "tag",
    "--record": "fact",
    "--step": "step",
    "--from": "step",
    "--until": "step",
    "--requires": "fact",
}
# positional dest -> what it is
_POSITIONAL_KINDS = {"patterns": "fact", "fact_id": "fact", "runbook": "runbook"}


def candidates(
    words: list[str],
    index: int,
    *,
    parser: argparse.ArgumentParser,
    env: dict[str, str] | None = None,
) -> list[str]:
    """What may stand at words[index] (the word being completed), given the words before it
    and the whole command line's `parser` (the CLI hands it in: this module imports no CLI)."""
    env = dict(os.environ if env is None else env)
    if not 0 < index <= len(words):
        # a shell hands the index of a word on the line, or one past its end (the word not
        # begun yet); anything else completes nothing: `__complete 99999999999` padded the
        # line with that many empty words (gigabytes), and a negative one was an IndexError
        return []
    words = list(words) + [""] * (index + 1 - len(words))
    if Path(words[0]).name == "verify-facts":
        words, index = ["factbook", "verify", *words[1:]], index + 1
    # the words as typed (bash and zsh hand them over with their quotes and backslashes):
    # `\$x` and `'x y` name $x and x y
    current, before = _dequoted(words[index]), [_dequoted(w) for w in words[1:index]]
    root = Path(env.get("FACTBOOK_ROOT", "."))
    chain = [parser]
    positionals_seen = 0
    skip = False
    for i, word in enumerate(before):
        if skip:
            skip = False
            continue
        if word == "--root" and i + 1 < len(before):
            root = Path(before[i + 1])
        elif word.startswith("--root="):
            root = Path(word.split("=", 1)[1])
        action = _option(chain[-1], word)
        if action is not None:
            skip = action.nargs != 0 and "=" not in word
            continue
        sub = _subcommands(chain[-1]).get(word)
        if sub is not None:
            chain.append(sub)
            positionals_seen = 0
        elif not word.startswith("-"):
            positionals_seen += 1
    parser = chain[-1]
    previous = before[-1] if before else ""
    action = _option(parser, previous)
    if action is not None and action.nargs != 0 and "=" not in previous:
        return _filter(_values(action, root, words), current)
    if current.startswith("-"):
        options = [
            s for a in parser._actions for s in a.option_strings if a.help != argparse.SUPPRESS
        ]
        return _filter(options, current)
    subs = _subcommands(parser)
    if subs and positionals_seen == 0:
        return _filter([name for name in subs if not name.startswith("_")], current)
    positionals = [
        a for a in parser._actions if not a.option_strings and a.dest in _POSITIONAL_KINDS
    ]
    for positional in positionals:
        if positional.choices:
            return _filter(positional.choices, current)
        return _filter(_kind(_POSITIONAL_KINDS[positional.dest], root, words), current)
    plain = [a for a in parser._actions if not a.option_strings and a.choices and not subs]
    return _filter(plain[0].choices, current) if plain else []


def _dequoted(word: str) -> str:
    """A word as the shell will pass it on: backslash escapes and quotes removed, a quote
    still open at the end (being typed) taken as closed."""
    out: list[str] = []
    quote = ""
    at = 0
    while at < len(word):
        char = word[at]
        escaped = word[at + 1] if at + 1 < len(word) else ""
        if quote == "'":
            quote = "" if char == "'" else quote
            out.append(char if quote else "")
        elif char == "\\" and (quote == "" or escaped in '"\\$`'):
            out.append(escaped)
            at += 1
        elif quote == '"':
            quote = "" if char == '"' else quote
            out.append(char if quote else "")
        elif char in "'\"":
            quote = char
        else:
            out.append(char)
        at += 1
    return "".join(out)


def _option(parser: argparse.ArgumentParser, word: str) -> argparse.Action | None:
    name = word.split("=", 1)[0]
    return parser._option_string_actions.get(name) if name.startswith("-") else None


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _values(action: argparse.Action, root: Path, words: list[str]) -> Iterable[str]:
    if action.choices:
        return [str(c) for c in action.choices]
    kind = next((_VALUE_KINDS[s] for s in action.option_strings if s in _VALUE_KINDS), None)
    return _kind(kind, root, words) if kind else []


def _kind(kind: str, root: Path, words: list[str]) -> list[str]:
    """Candidates of one kind from the knowledge base; none when it cannot be read."""
    if kind == "category":
        from factbook.knowledge.schema import CATEGORIES

        return list(CATEGORIES)
    if kind == "runbook":
        from factbook.runbooks.format import runbook_paths

        return [p.stem for p in runbook_paths(root)]
    if kind == "step":
        return _steps(root, words)
    kb = _kb(root)
    if kb is None:
        return []
    if kind == "fact":
        return list(kb.facts)
    if kind == "tag":
        return sorted({t for f in kb.facts.values() for t in f.tags})
    if kind == "target":
        groups = getattr(kb, "groups", None) or {}
        return ["all", *kb.targets, *groups]
    return []


def _kb(root: Path) -> Any:
    from factbook.errors import FactbookError
    from factbook.knowledge.kb import load_kb_with_problems

    try:
        return load_kb_with_problems(root)[0]
    except (FactbookError, OSError):
        return None


def _steps(root: Path, words: list[str]) -> list[str]:
    """Step names of the runbook named on the line (`factbook run NAME --step ...`)."""
    from factbook.errors import FactbookError
    from factbook.runbooks.format import find_runbook, load_runbook

    names = {p for p in _kind("runbook", root, words)}
    ref = next((w for w in words if w in names or w.endswith(".md")), None)
    if ref is None:
        return []
    try:
        return [s.name for s in load_runbook(find_runbook(root, ref), root).steps]
    except (FactbookError, OSError, ValueError):
        return []


def _filter(values: Iterable[Any], prefix: str) -> list[str]:
    """Values starting with `prefix`, one per line to the shell: a value holding a line break
    or another control or bidi character (a tag `a\\nb` from a knowledge base) would be two
    candidates there, or repaint the terminal; it is left out (it cannot be typed anyway)."""
    out = []
    for value in values:
        text = str(value)
        if text.startswith(prefix) and visible(text) == text:
            out.append(text)
    return out


# One candidate per line, read into COMPREPLY as it is: `COMPREPLY=($(...))` would expand a
# candidate `*` to the file names of the current folder. Each is quoted (%q) for the command
# line, so a tag `a b` or `*` is inserted as one literal word.
BASH = """\
# bash completion for factbook and verify-facts (factbook completion bash)
_factbook_complete() {
    local line quoted
    COMPREPLY=()
    while IFS= read -r line; do
        printf -v quoted '%q' "$line"
        COMPREPLY+=("$quoted")
    done < <(command factbook __complete "$COMP_CWORD" "${COMP_WORDS[@]}" 2>/dev/null)
}
complete -o default -F _factbook_complete factbook verify-facts
"""

ZSH = """\
#compdef factbook verify-facts
# zsh completion for factbook and verify-facts (factbook completion zsh)
_factbook() {
    local -a found
    found=("${(@f)$(command factbook __complete $((CURRENT - 1)) "${words[@]}" 2>/dev/null)}")
    if (( ${#found[@]} )) && [[ -n "${found[1]}" ]]; then
        compadd -a found
    else
        _files
    fi
}
# sourced: register it; autoloaded from $fpath (`completion install zsh`), this file is the
# body of _factbook itself, run on the first Tab: complete then, not only define
if [[ "${funcstack[1]}" == _factbook ]]; then
    _factbook "$@"
else
    compdef _factbook factbook verify-facts
fi
"""

FISH = """\
# fish completion for factbook and verify-facts (factbook completion fish)
function __factbook_complete
    set -l words (commandline -opc) (commandline -ct)
    command factbook __complete (math (count $words) - 1) $words 2>/dev/null
end
complete -c factbook -f -a '(__factbook_complete)'
complete -c verify-facts -f -a '(__factbook_complete)'
"""

SCRIPTS = {"bash": BASH, "zsh": ZSH, "fish": FISH}


def install_paths(shell: str, env: dict[str, str] | None = None) -> list[Path]:
    """Where each shell looks for a user's completion files (no rc file is edited)."""
    env = dict(os.environ if env is None else env)
    home = Path(env.get("HOME", "~")).expanduser()
    data = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
    config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    if shell == "bash":  # bash-completion loads one file per command name, on demand
        folder = data / "bash-completion" / "completions"
        return [folder / name for name in PROGRAMS]
    if shell == "zsh":  # a folder to add to $fpath before compinit (docs say how)
        return [data / "zsh" / "site-functions" / "_factbook"]
    return [config / "fish" / "completions" / f"{name}.fish" for name in PROGRAMS]


def install(shell: str, env: dict[str, str] | None = None) -> list[Path]:
    """Write the shell's script where it loads it from; return the files written."""
    from factbook.store.atomic import write_text_atomic

    paths = install_paths(shell, env)
    for path in paths:
        write_text_atomic(path, SCRIPTS[shell])
        path.chmod(0o644)
    return paths
