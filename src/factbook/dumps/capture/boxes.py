"""The boxes a dump talks about, from its access lines, and which box each fact is about.

An access line (`Node (h100-a): ssh ubuntu@[REDACTED] -p 2202`, `ssh -J admin@bastion
root@node`, `pct exec 301 -- bash` on the Proxmox host, `docker exec -it trtllm-dev bash`)
becomes a proposed target for targets.yaml:

- its name: a host-like word of the line's label (`h100-a`, `llm-two`: a word with a digit or
  a dash, not one after `on`/`via`), else the container's name, else the host's first label,
  else `ct<N>` for `pct exec N`, else its role;
- ssh: user, host, port (`-p`), jump hosts (`-J a,b`, or a second command on the line that
  reaches this box through another); a host the dump redacts (`[REDACTED]`, `<host>`, `…`)
  becomes `<name>.invalid`, tagged `placeholder`, to be pointed at the real box;
- `pct exec N`, `docker|podman exec`, `kubectl exec`: transport exec with that argv, run `via`
  the box the line says it is on (`on pve-mi`), else the one hypervisor or node of the dump;
- its role (hypervisor, container, vm, jump, workstation, node), which lets `the container`
  and `the VM` name it when only one box has that role.

Targets already in targets.yaml are boxes too (their names, hosts and the roles their
descriptions give); a line naming one of them proposes nothing new.

A fact is about the box its own label names, else the box its headings name (innermost
first: `### Current Software on Container`, `**Files (bench-vm)**`), else the box its text
names, else the dump's working box: the one the dump says the work runs on ("this is where
inference and training run", "all serving … run here"), or the only one that could be.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factbook.dumps.capture.boxindex import BoxIndex
from factbook.dumps.capture.entry import Entry
from factbook.dumps.capture.quickre import starting_with
from factbook.knowledge.kb import KnowledgeBase
from factbook.knowledge.limits import JUMP_MAX_HOPS, PORT_MAX_DIGITS
from factbook.knowledge.names import name_problem

ROLES: list[tuple[str, str, tuple[str, ...]]] = [
    # role, pattern on a line or description, what the dump calls it
    ("hypervisor", r"proxmox|hypervisor|\bpve\b|\besxi\b", ("proxmox host", "hypervisor")),
    ("container", r"\blxc\b|container|\bct\s*\d+|\bpod\b", ("container", "lxc", "pod")),
    ("vm", r"\bvm\b|\bkvm\b|virtual machine", ("vm", "kvm", "virtual machine")),
    (
        "jump",
        r"bastion|jump ?host|gateway|\blogin\b",
        ("bastion", "jump host", "login host", "login node"),
    ),
    (
        "workstation",
        r"workstation|laptop|local machine|my machine|desktop",
        ("local machine", "workstation", "laptop"),
    ),
    ("node", r"\bnode\b|server|\bbox\b|machine|\bhost\b", ("node", "gpu host", "server", "box")),
]
_ROLE_PATTERNS = {role: re.compile(pattern, re.I) for role, pattern, _ in ROLES}  # in order
REDACTED = re.compile(r"^\[.*\]$|^<.*>$|…|\.\.\.|^x{3,}$|\*{2,}|redacted|^host$|^hostname$", re.I)
DESCRIBED = 2000  # characters of a target's description the role and work cues are read in


def _word(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"\b(?:{pattern})\b", re.I)


@dataclass(frozen=True)
class InOrder:
    """Words in this order within one clause: `A[^.;]*B[^.;]*C` without its backtracking.

    `re` retries the gap from every A, so `where where where ...` costs quadratic time (an
    hour for a 1 MB line); here each clause is scanned once a word, leftmost match first (a
    later A leaves B less room, never more), so the time is linear in the text."""

    words: tuple[re.Pattern[str], ...]
    stop: re.Pattern[str] = re.compile(r"[.;]")  # what ends a clause

    def search(self, text: str) -> bool:
        return any(self._in(clause) for clause in self.stop.split(text))

    def _in(self, clause: str) -> bool:
        at = 0
        for word in self.words:
            found = word.search(clause, at)
            if found is None:
                return False
            at = found.end()
        return True


@dataclass(frozen=True)
class AnyOf:
    """Any of several patterns (`re.Pattern` or `InOrder`): one `search` for all."""

    patterns: tuple[re.Pattern[str] | InOrder, ...]

    def search(self, text: str) -> bool:
        return any(p.search(text) for p in self.patterns)


WORK = AnyOf(
    (
        InOrder((_word("where"), _word("run|runs|running|happens?"))),
        InOrder(
            (
                _word("all|every"),
                _word("serving|builds?|benchmarks?|training|inference"),
                _word("runs?"),
            )
        ),
        starting_with(
            "ors",
            r"\b(?:run|runs|running) (?:here|inside|there|on it)\b"
            r"|\bserving (?:container|node|box|host|vm|machine|pod)\b|\bonly visible on\b",
            re.I,
        ),
    )
)
_KNOWN_WORK = AnyOf(
    (
        InOrder((_word("run|runs"), _word("here"))),
        InOrder((_word("where"), _word("runs?")), stop=re.compile("\n")),
    )
)
NO_WORK = starting_with(
    "clnsw", r"\bno GPUs?\b|\bwithout GPUs?\b|\bCPU[- ]only\b|\bload generator\b|\bstopped\b", re.I
)
_SSH = re.compile(r"(?<![\w-])ssh\s+(?P<args>[^`;\n)]*)")
_EXEC = starting_with(
    "dklp",
    r"(?<![\w-])(?P<tool>pct|lxc-attach)\s+(?:exec|enter)\s+(?P<ct>\d+)"
    r"|(?<![\w-])(?P<engine>docker|podman|kubectl)\s+exec\s+(?P<rest>[^`;\n]*)",
)


def _may_command(text: str) -> bool:
    """Whether `_SSH` or `_EXEC` can match: each needs `ssh`, `exec` or `enter` written
    out. Most lines hold none, and the two scans were a twentieth of a large import."""
    return "ssh" in text or "exec" in text or "enter" in text


# exec options that take a value, and those kept in the argv (a namespace, a container)
_EXEC_ARGS = {
    "-u",
    "--user",
    "-w",
    "--workdir",
    "-e",
    "--env",
    "--env-file",
    "-n",
    "--namespace",
    "-c",
    "--container",
    "--context",
}
_EXEC_KEEP = {"-n", "--namespace", "-c", "--container", "--context", "-u", "--user"}
_WITH_ARG = set("bcDEeFIiJLlmOoPpQRSWw")
_ONWORD = starting_with(
    "fiotv", r"\b(?:on|via|through|from|inside|in)\s+(?:the\s+)?`?([\w.-]+)`?", re.I
)
_HOSTY = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)+$|^[a-z]+\d+[a-z0-9]*$")
_USER = starting_with("(a", r"\((?:as\s+)?user\s+([\w.-]+)\)|\bas user\s+`?([\w.-]+)`?", re.I)
_IP = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
_BOX_LABEL = re.compile(r"^([^:]{1,60}):\s")  # `gpu-box: …`: the box an item is about


@dataclass
class Box:
    """One box: a target already in targets.yaml, or one the dump's access lines propose."""

    name: str
    role: str = "node"
    host: str | None = None
    user: str | None = None
    port: int | None = None
    jump: list[str] = field(default_factory=list)
    exec: list[str] = field(default_factory=list)
    via: str | None = None
    placeholder: bool = False
    unnamed: str = "the dump redacts its host"  # why the host is a placeholder
    work: bool = False
    idle: bool = False  # the dump says no work runs there (no GPUs, stopped)
    aliases: set[str] = field(default_factory=set)
    existing: bool = False
    line: int = 0
    notes: list[str] = field(default_factory=list)

    def target(self, dump: str) -> dict[str, Any]:
        """Its targets.yaml entry."""
        out: dict[str, Any] = {}
        if self.exec:
            out["transport"] = "exec"
            out["exec"] = list(self.exec)
            if self.via:
                out["via"] = self.via
        else:
            out["host"] = self.host or f"{self.name}.invalid"
            if self.user:
                out["user"] = self.user
            if self.port:
                out["port"] = self.port
            if self.jump:
                out["jump"] = self.jump[0] if len(self.jump) == 1 else list(self.jump)
        where = f"{Path(dump).name}:{self.line}"
        text = f"{self.role} from {where}"
        if self.placeholder:
            text += f"; {self.unnamed}: point `host` at the real box"
        out["description"] = text
        out["tags"] = ["imported", *(["placeholder"] if self.placeholder else [])]
        return out


_RUN = re.compile(r"[\w-]+")
_NAMED_MAX = 50_000  # texts whose boxes `mentioned` remembers (per state of the boxes)
# what the dump calls each role, as whole words (a plural too): one pattern a role
_ROLE_WORDS = [
    (
        role,
        starting_with(
            re.escape("".join(sorted({w[0] for w in words}))),
            rf"(?<![\w-])(?:{'|'.join(map(re.escape, words))})s?(?![\w-])",
        ),
    )
    for role, _, words in ROLES
]


@dataclass
class _AliasIndex:
    """`Boxes.mentioned`'s lookup tables, for one state of the boxes."""

    state: tuple[int, int, int]
    by_word: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # (box, alias)
    by_role: dict[str, list[Box]] = field(default_factory=dict)
    # text -> the boxes it names: headings and labels repeat on every item under them
    named: dict[str, list[Box]] = field(default_factory=dict)


@dataclass
class Boxes:
    """Every box, and the one each entry is about."""

    boxes: list[Box]  # in the order found; add() and merge() keep `by` up to date
    own: dict[int, Box]  # id(entry) of an access line → its box
    dump: str
    _index: _AliasIndex | None = field(default=None, repr=False, compare=False)
    by: BoxIndex[Box] = field(default_factory=BoxIndex, repr=False, compare=False)
    _default: tuple[tuple[int, int], Box | None] | None = field(
        default=None, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        for box in self.boxes:
            self.by.add(box)

    @property
    def proposed(self) -> list[Box]:
        return [b for b in self.boxes if not b.existing]

    def get(self, name: str) -> Box | None:
        named = self.by.by_name.get(name)
        return named[0] if named else None

    def add(self, box: Box) -> None:
        self.boxes.append(box)
        self.by.add(box)

    def merge(self, into: Box, box: Box) -> None:
        """Another line's `box` is `into`: what it adds is filed too."""
        _merge(into, box)
        self.by.refresh(into)

    def mentioned(self, text: str) -> list[Box]:
        """The boxes a text names: by name, host, `CT 129`, or a role only one box has.

        Only the aliases whose first word (a run of word characters and `-`) is a word of the
        text are tried: an alias can match nowhere else. Trying every alias of every box on
        every line was quadratic in a dump that names many boxes."""
        index = self._alias_index()
        known = index.named.get(text)
        if known is None:
            if len(index.named) >= _NAMED_MAX:
                index.named.clear()
            known = index.named[text] = self._mentioned(text, index)
        return list(known)

    def _mentioned(self, text: str, index: _AliasIndex) -> list[Box]:
        lower = " " + text.lower() + " "
        hits: set[int] = set()
        for word in {*_RUN.findall(lower), ""}:
            for at, alias in index.by_word.get(word, ()):
                if at not in hits and _names(lower, alias):
                    hits.add(at)
        found = [self.boxes[at] for at in sorted(hits)]
        if found:
            return found
        for role, pattern in _ROLE_WORDS:
            having = index.by_role.get(role, [])
            if len(having) == 1 and pattern.search(lower):
                found.append(having[0])
        return found

    def _alias_index(self) -> _AliasIndex:
        """Every alias keyed by its first word; rebuilt when boxes change."""
        state = (len(self.boxes), self.by.version, id(self.boxes))
        if self._index is None or self._index.state != state:
            index = _AliasIndex(state)
            for at, box in enumerate(self.boxes):
                index.by_role.setdefault(box.role, []).append(box)
                for alias in box.aliases:
                    first = _RUN.search(alias)
                    index.by_word.setdefault(first.group() if first else "", []).append((at, alias))
            self._index = index
        return self._index

    def default(self) -> Box | None:
        """The box the dump's work runs on, when that is clear (kept until the boxes change:
        bind asks for each entry naming no box)."""
        state = (len(self.boxes), self.by.version)
        if self._default is None or self._default[0] != state:
            self._default = (state, self._find_default())
        return self._default[1]

    def _find_default(self) -> Box | None:
        working = [b for b in self.boxes if b.work]
        if len(working) == 1:
            return working[0]
        if working:
            return None
        able = [
            b
            for b in self.boxes
            if not b.existing and not b.idle and b.role not in ("hypervisor", "jump", "workstation")
        ]
        return able[0] if len(able) == 1 else None

    def bind(self, entry: Entry) -> tuple[Box | None, str]:
        """(the box an entry is about, how that was decided) — or (None, why not)."""
        if id(entry) in self.own:
            return self.own[id(entry)], "its access line"
        label = _BOX_LABEL.match(entry.text)
        levels = [("its label", label.group(1) if label else "")]
        levels += [("its heading", h) for h in reversed(entry.headings)]
        levels += [("its text", entry.text)]
        for how, text in levels:
            found = self.mentioned(text) if text else []
            if len(found) == 1:
                return found[0], f"{how} names it"
            if len(found) > 1:
                names = ", ".join(b.name for b in found)
                return None, f"{how} names several boxes ({names})"
        box = self.default()
        if box is not None:
            return box, "the dump's working box"
        if not self.boxes:
            box = self.placeholder_box()
            box.line = entry.line
            return box, "the one box the dump describes (it names no access)"
        return None, "the dump names several boxes and this item none of them"

    def placeholder_box(self) -> Box:
        """A box for a dump that names none: facts about a box must name one."""
        stem = re.sub(r"[^a-z0-9]+", "-", Path(self.dump).stem.lower()).strip("-")[:40] or "box"
        box = Box(stem, placeholder=True, work=True, unnamed="the dump names no access to it")
        self.add(box)
        return box


def _names(text: str, alias: str) -> bool:
    r"""Whether `alias` stands in `text` as a whole name, as `(?<![\w-])ALIAS(?![\w-])`
    finds it (`\w`: what `str.isalnum` says, and `_`), without a pattern compiled per alias:
    0.1 ms each, seconds for a dump of thousands of boxes."""
    at = text.find(alias)
    while at >= 0:
        end = at + len(alias)
        if not (at and _wordish(text[at - 1])) and not (end < len(text) and _wordish(text[end])):
            return True
        at = text.find(alias, at + 1)
    return False


def _wordish(char: str) -> bool:
    return char.isalnum() or char in "_-"


def find_boxes(entries: list[Entry], kb: KnowledgeBase, dump: str) -> Boxes:
    """The targets of targets.yaml and those the dump's access lines propose."""
    known = [_known(name, t) for name, t in kb.targets.items() if t.transport != "local"]
    boxes = Boxes(list(known), {}, dump)
    pending: list[tuple[Entry, Box, list[re.Match[str]]]] = []
    for entry in entries:
        if entry.hint is not None or not _may_command(entry.text):
            continue
        commands = sorted(
            list(_SSH.finditer(entry.text)) + list(_EXEC.finditer(entry.text)),
            key=lambda m: m.start(),
        )
        if not commands:
            continue
        box = _box(entry, commands[0])
        if box is None:
            continue
        same = _same(boxes, box)
        if same is not None:
            boxes.merge(same, box)
            box = same
        else:
            box.name = _unique(boxes, box.name)
            boxes.add(box)
        boxes.own[id(entry)] = box
        pending.append((entry, box, commands))
    for entry, box, commands in pending:
        _relations(boxes, entry, box, commands)
    _local_machine(boxes, entries)
    return boxes


def _local_machine(boxes: Boxes, entries: list[Entry]) -> None:
    """`### Local Machine — /home/…`: the writer's own machine holds files too; without a
    target for it those would be bound to the working box."""
    if any(b.role == "workstation" for b in boxes.boxes):
        return
    pattern = _ROLE_PATTERNS["workstation"]
    for entry in entries:
        if entry.hint is None and any(_names_role(pattern, h) for h in entry.headings):
            box = Box(_unique(boxes, "workstation"), role="workstation", placeholder=True)
            box.line, box.unnamed = entry.line, "the dump's own local machine, no host given"
            box.aliases = {box.name}
            boxes.add(box)
            return


def _known(name: str, target: Any) -> Box:
    # a description is a sentence or two; what follows DESCRIBED characters is no cue
    described = (target.description or "")[:DESCRIBED]
    text = " ".join(x for x in (name, described) if x)
    box = Box(name, role=_role(described or name), existing=True)
    box.host, box.user, box.port = target.host, target.user, target.port
    box.aliases = {name.lower()}
    if target.host and not target.host.endswith(".invalid"):
        box.aliases |= {target.host.lower(), target.host.split(".")[0].lower()}
    if box.role in ("container", "vm"):
        for kind, number in re.findall(r"\b(CT|VM)\s*(\d+)", described, re.I):
            if kind.lower() == ("ct" if box.role == "container" else "vm"):
                box.aliases |= {f"{kind.lower()} {number}", f"{kind.lower()}{number}"}
    box.work = _KNOWN_WORK.search(text)
    return box


def _role(text: str) -> str:
    for role, pattern in _ROLE_PATTERNS.items():
        if pattern.search(text):
            return role
    return "node"


@functools.lru_cache(maxsize=4096)
def _names_role(pattern: re.Pattern[str], heading: str) -> bool:
    """Whether a heading names the role: asked of every entry's headings, which repeat."""
    return pattern.search(heading) is not None


# commands that run the ssh after them (`sshpass -p PASS ssh ...`, `sudo -u ops ssh ...`):
# their words are not the box's name (a password, hidden or not, named the box)
_WRAPPER = re.compile(r"(?<![\w-])(?:sshpass|sudo|env|timeout|nohup|exec|doas|torify)\s.*$", re.S)


def _box(entry: Entry, command: re.Match[str]) -> Box | None:
    text = entry.text
    label = _WRAPPER.sub("", text[: command.start()])
    box = Box("", role=_role(label or text), line=entry.line)
    box.work = bool(WORK.search(text))
    box.idle = bool(NO_WORK.search(text))
    groups = command.groupdict()
    if groups.get("args") is not None:
        if not _ssh_into(box, command.group("args")):
            return None
    elif groups.get("ct"):
        box.exec = ["pct", "exec", groups["ct"], "--"]
        box.role = "container"
        box.aliases |= {f"ct {groups['ct']}", f"ct{groups['ct']}"}
    elif groups.get("engine"):
        argv = _exec_argv(groups["engine"], groups["rest"])
        if argv is None:
            return None
        box.exec, box.role = argv, "container"
        groups = {**groups, "name": argv[-2] if argv[-1] == "--" else argv[-1]}
        box.aliases.add(groups["name"].lower())
    user = _USER.search(text)
    if user and not box.user:
        box.user = user.group(1) or user.group(2)
    for kind, number in re.findall(r"\b(CT|VM)\s*(\d+)", label, re.I):
        box.aliases |= {f"{kind.lower()} {number}", f"{kind.lower()}{number}"}
    box.name = _name(box, label, groups)
    box.aliases.add(box.name.lower())
    return box


def _exec_argv(engine: str, rest: str) -> list[str] | None:
    """`docker exec -it -u root trainer bash` → [docker, exec, -i, -u, root, trainer]; kubectl
    keeps its namespace and container and ends with `--`. None without a container name."""
    tokens = [t.strip("`'\",") for t in rest.split()]
    kept: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "--":
            return None
        if tok.startswith("-"):
            flag, eq, _ = tok.partition("=")
            if flag in _EXEC_ARGS and not eq:
                if flag in _EXEC_KEEP and i + 1 < len(tokens):
                    kept += [flag, tokens[i + 1]]
                i += 2
                continue
            if flag in _EXEC_KEEP and eq:
                kept.append(tok)
            i += 1
            continue
        if not re.fullmatch(r"[A-Za-z0-9][\w.-]*", tok):
            return None
        argv = [engine, "exec", "-i", *kept, tok]
        return [*argv, "--"] if engine == "kubectl" else argv
    return None


def _ssh_into(box: Box, args: str) -> bool:
    """Fill user, host, port and jump from `ssh` arguments; False when no destination."""
    tokens = [t.strip("`'\",") for t in args.split()]
    dest = None
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("-") and len(tok) >= 2:
            flag, rest = tok[1], tok[2:]
            value = rest or (tokens[i + 1] if i + 1 < len(tokens) else "")
            if flag in _WITH_ARG and not rest:
                i += 1
            if flag == "p" and value.isdigit() and len(value) <= PORT_MAX_DIGITS:
                box.port = int(value)
            elif flag == "J":
                hops = value.split(",", JUMP_MAX_HOPS)
                if len(hops) > JUMP_MAX_HOPS:  # no chain factbook follows (a line of 200,000
                    return False  # hops made as many boxes: 10 s, 660 MB)
                box.jump = [j for j in hops if j]
            elif flag == "l":
                box.user = value
        elif dest is None:
            dest = tok
        else:
            break
        i += 1
    if not dest or not (
        "@" in dest or dest[0] in "[<" or "." in dest or box.port or box.jump or box.user
    ):
        return False  # `ssh keys`, `via ssh from …`: not a command
    dest = re.sub(r"^ssh://", "", dest)
    if "@" in dest:
        box.user, dest = dest.rsplit("@", 1)
    port = re.match(rf"^(.*?):(\d{{1,{PORT_MAX_DIGITS}}})$", dest)
    if port and not dest.startswith("["):
        dest, box.port = port.group(1), int(port.group(2))
    if REDACTED.search(dest) or not re.fullmatch(r"[\w.-]+", dest):
        box.placeholder = True
        box.host = None
    else:
        box.host = dest
        box.aliases.add(dest.lower())
        if not _IP.match(dest):
            box.aliases.add(dest.split(".")[0].lower())
    return True


def _name(box: Box, label: str, groups: dict[str, Any]) -> str:
    after_on = {m.group(1).lower() for m in _ONWORD.finditer(label)}
    for inside in re.findall(r"\(([^()]*)\)", label):  # `Login host (gw)`, `(CT 129, llm-two)`
        for part in (p.strip(" `") for p in inside.split(",")):
            word = part.lower()
            if re.fullmatch(r"[a-z0-9][\w.-]*", word) and not _common(word):
                return word
    words = re.findall(r"[A-Za-z0-9][\w.-]*", re.sub(r"[()`,:]", " ", label))
    for word in words:
        w = word.lower().rstrip(".")
        if _HOSTY.match(w) and w not in after_on and not name_problem("target name", w):
            return w
    if groups.get("name"):
        return groups["name"].lower()
    if box.host and not _IP.match(box.host):
        return box.host.split(".")[0].lower()
    if groups.get("ct"):
        return f"ct{groups['ct']}"
    return box.role


def _common(word: str) -> bool:
    """A word that names a kind of box or a count, not one box."""
    roles = {w for _, _, words in ROLES for w in words}
    return word in roles or word.isdigit() or word in {"root", "user", "admin", "the", "gpu"}


def _same(boxes: Boxes, box: Box) -> Box | None:
    """The first box of the same name (unless the two name different hosts) or of the same
    host, in any case."""
    named = (
        other
        for other in boxes.by.by_name.get(box.name, ())
        if other.existing or not (other.host and box.host and other.host != box.host)
    )
    hosted = boxes.by.host(box.host) if box.host else None
    return boxes.by.first([next(named, None), hosted])


def _merge(into: Box, box: Box) -> None:
    into.aliases |= box.aliases
    into.work = into.work or box.work
    if into.existing:
        return
    for key in ("user", "port", "host", "via"):
        if getattr(into, key) is None and getattr(box, key) is not None:
            setattr(into, key, getattr(box, key))
    into.jump = into.jump or box.jump
    into.exec = into.exec or box.exec


def _unique(boxes: Boxes, name: str) -> str:
    return boxes.by.unique(name)


def _relations(boxes: Boxes, entry: Entry, box: Box, commands: list[re.Match[str]]) -> None:
    """Jump hosts named by `-J`, a second command that reaches another box through this
    one, and the box an exec line runs `via`."""
    if box.existing:
        return
    box.jump = [_jump_name(boxes, j, box) for j in box.jump]
    for command in commands[1:]:
        if command.groupdict().get("args") is None:
            continue
        other = Box("")
        if not _ssh_into(other, command.group("args")) or not other.jump:
            continue
        target = _lookup(boxes, other.host or "")
        if target is not None and not target.existing and not target.jump:
            target.jump = [_jump_name(boxes, j, target) for j in other.jump]
    if box.exec and box.via is None:
        label = entry.text[: commands[0].start()] + " " + entry.text[commands[0].end() :]
        for found in _ONWORD.finditer(label):
            other = _lookup(boxes, found.group(1))
            if other is not None and other is not box:
                box.via = other.name
                break
        if box.via is None:
            role = "hypervisor" if box.exec[0] == "pct" else "node"
            able = (b for b in boxes.by.by_role.get(role, ()) if not b.exec and b is not box)
            hosts = list(itertools.islice(able, 2))  # is there one only?
            if len(hosts) == 1:
                box.via = hosts[0].name
            else:
                box.notes.append("the dump does not say which box runs the command: set `via`")


def _lookup(boxes: Boxes, word: str) -> Box | None:
    word = word.lower().strip("`'\".,")
    return boxes.by.word(word) if word else None


def _jump_name(boxes: Boxes, spec: str, for_box: Box) -> str:
    """A `-J` hop (`user@host[:port]`) as a target name: a known box, or a new one."""
    if spec in boxes.by.by_name:
        return spec
    hop = Box("", role="jump", line=for_box.line)
    if not _ssh_into(hop, spec):
        return spec
    found = _lookup(boxes, hop.host or "") or _lookup(boxes, spec.rsplit("@", 1)[-1])
    if found is not None:
        if found.user is None and hop.user:
            found.user = hop.user
        return found.name
    hop.name = _unique(boxes, (hop.host or "jump").split(".")[0].lower())
    hop.aliases.add(hop.name)
    boxes.add(hop)
    return hop.name
