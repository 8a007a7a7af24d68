"""Commands a runbook step spells that destroy or stop something: such a step must be marked
`destructive: true`, so that `factbook run` asks before it (or needs `--yes`).

A step is trusted to say what it does; one that runs `rm -rf`, `kill -9` or `systemctl stop`
without the mark ran without asking (hostile round 15). Lint reads the commands a cell
spells, as the runner would hand them to a shell or to `box.run`: its `!` shell lines and
`%%bash` body, each string in it and each list of strings (an argv), cut at shell
separators; a command is its first word after `sudo`, `env` and `VAR=value` prefixes. Prose
that mentions a command (`print("never rm -rf /")`) does not start with it and is passed.
"""

from __future__ import annotations

import ast
import re

from factbook.runbooks.format import cell_nodes

_SEPARATORS = re.compile(r"\s*(?:&&|\|\||[;|&\n]|\$\(|`)\s*")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PREFIXES = {"sudo", "env", "nohup", "exec", "command", "time", "timeout", "nice", "ionice"}
_ALWAYS = {
    "mkfs", "wipefs", "shred", "fdisk", "sfdisk", "parted", "sgdisk", "pkill", "killall",
    "reboot", "shutdown", "poweroff", "halt", "truncate",
}  # fmt: skip
_SYSTEMCTL_STOPS = {"stop", "restart", "kill", "disable", "mask", "isolate", "reboot"}
_MAX_TEXT = 100_000  # characters of one string looked at: a longer one is data, not a command


def destructive_command(source: str) -> str | None:
    """The first destructive command the cell spells (as written, at most 80 characters),
    or None."""
    for text in _command_texts(source):
        for command in _SEPARATORS.split(text[:_MAX_TEXT]):
            words = _command_words(command.split())
            if words and _destroys(words):
                return " ".join(words)[:80]
    return None


def _command_texts(source: str) -> list[str]:
    """What the cell may hand to a shell or to `box.run`: shell lines, a `%%bash` body, its
    strings and its lists (argvs) joined by spaces."""
    stripped = source.lstrip()
    if stripped.startswith("%%"):
        return [stripped.split("\n", 1)[1] if "\n" in stripped else ""]
    texts = [line.strip()[1:] for line in source.splitlines() if line.strip().startswith("!")]
    for node in cell_nodes(source):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            texts.append(node.value)
        elif isinstance(node, (ast.List, ast.Tuple)) and node.elts and _text(node.elts[0]):
            # an argv; a word known only at run time (`unit`) stands as `_`
            texts.append(" ".join(_text(e) or "_" for e in node.elts))
    return texts


def _text(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _command_words(words: list[str]) -> list[str]:
    """`words` from the command itself: `sudo`, `env`, `timeout 10` and `VAR=x` dropped."""
    at = 0
    while at < len(words):
        word = words[at]
        if word in _PREFIXES or _ASSIGNMENT.match(word) or (at and word.isdigit()):
            at += 1
        elif word.startswith("-") and at and words[at - 1] in _PREFIXES:
            at += 1  # a prefix's own flag (`sudo -u x`, `timeout -s 9`)
        else:
            break
    return words[at:]


def _destroys(words: list[str]) -> bool:
    name = words[0].rsplit("/", 1)[-1]
    flags = [w for w in words[1:] if w.startswith("-")]
    if name in _ALWAYS or name.startswith("mkfs."):
        return True
    if name == "rm":
        return any(
            f in ("--recursive", "--force") or (not f.startswith("--") and set(f[1:]) & set("rRf"))
            for f in flags
        )
    if name == "dd":
        return any(w.startswith("of=") for w in words[1:])
    if name == "kill":
        return any(f in ("-9", "-KILL", "-SIGKILL", "-s") for f in flags)
    if name == "systemctl":
        return any(w in _SYSTEMCTL_STOPS for w in words[1:])
    if name == "git":
        return ("reset" in words and "--hard" in words) or (
            "clean" in words and any("f" in f for f in flags)
        )
    return False
