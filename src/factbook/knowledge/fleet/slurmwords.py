"""What a slurm target may say: its node list, partition and srun options, checked where
targets.yaml is read (lint, and `verify` before anything runs), each problem one line.

    nodes: gpu[01-16],login1       # Slurm's hostlist syntax, counted, never expanded here
    partition: gpu                 # a partition name (or a comma list of them)
    srun_args: [--time=5, --immediate=60, --account=ml, --gres=gpu:8]

`srun_args` is an allow-list: options that only BOUND the step (its time, how long it may
wait) or PLACE it (partition, account, QOS, reservation, constraint, excluded nodes, the
resources it asks for, an existing allocation). Everything else is refused, because srun
options can change what runs or where its output goes: `--output`/`--error`/`--input`
(redirect the step's I/O, open files), `--prolog`/`--epilog`/`--task-prolog`/`--task-epilog`
(run a program here or on the nodes), `--export` (LD_PRELOAD into the tasks), `--chdir`,
`--container`, `--bcast`, `--mpi`, `--pty`, `--uid`, a bare word (srun would run it instead
of the agent), and the options factbook sets itself (`--nodes`, `--ntasks`, `--label`,
`--nodelist`, `--job-name`, `--kill-on-bad-exit`). Options are spelled in full: srun (getopt)
takes any unambiguous prefix, so `--out=F` is `--output=F`; an abbreviation is refused rather
than resolved. Each value has a shape (a time, a count, a size, a name list) and may be
attached (`--time=5`, `-t5`) or the next entry (`--time`, `5`); flags take no value and short
flags are not bundled (`-sQ`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from factbook.knowledge.limits import (
    NUMBER_MAX_DIGITS,
    SLURM_MAX_ARG,
    SLURM_MAX_ARGS,
    SLURM_MAX_NODES,
    SLURM_MAX_TEXT,
)
from factbook.knowledge.names import shown

_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
_NAMES = rf"{_NAME}(,{_NAME})*"
_HOST_CHARS = re.compile(r"[A-Za-z0-9_.-]*")
_RANGE = re.compile(rf"(\d{{1,{NUMBER_MAX_DIGITS}}})(?:-(\d{{1,{NUMBER_MAX_DIGITS}}}))?")

# the value shapes of the options srun_args allows
TIME = r"(\d+([-:]\d+){0,3}|INFINITE|UNLIMITED|infinite|unlimited)"  # min, m:s, h:m:s, d-h...
COUNT = r"\d{1,9}"
SIZE = r"\d{1,15}[KMGTkmgt]?[Bb]?"
GPUS = rf"({_NAME}:)?{COUNT}"
# option -> (short letter or "", value shape: None a flag, "?..." an optional attached value)
ALLOWED: dict[str, tuple[str, str | None]] = {
    # bound the step
    "time": ("t", TIME),
    "time-min": ("", TIME),
    "immediate": ("I", "?" + COUNT),
    "deadline": ("", r"[0-9A-Za-z][0-9A-Za-z:/+.-]*"),
    # place it
    "partition": ("p", _NAMES),
    "account": ("A", _NAME),
    "qos": ("q", _NAMES),
    "reservation": ("", _NAMES),
    "wckey": ("", _NAME),
    "clusters": ("M", _NAMES),
    "exclude": ("x", "HOSTLIST"),
    "constraint": ("C", r"[A-Za-z0-9_.&|*,:()!\[\]-]+"),
    "cluster-constraint": ("", r"[A-Za-z0-9_.&|*,:()!\[\]-]+"),
    "jobid": ("", COUNT),
    "overlap": ("", None),
    "exact": ("", None),
    "exclusive": ("", "?(user|mcs)"),
    "oversubscribe": ("s", None),
    "contiguous": ("", None),
    "licenses": ("L", r"[A-Za-z0-9_.:@,-]+"),
    "switches": ("", rf"{COUNT}(@{TIME})?"),
    "comment": ("", r"[^\x00-\x1f\x7f]*"),  # free text; srun's argv, quoted over ssh
    # what the step asks of each node
    "cpus-per-task": ("c", COUNT),
    "mincpus": ("", COUNT),
    "mem": ("", SIZE),
    "mem-per-cpu": ("", SIZE),
    "mem-per-gpu": ("", SIZE),
    "tmp": ("", SIZE),
    "gres": ("", r"[A-Za-z0-9_.:,=-]+"),
    "gres-flags": ("", r"[A-Za-z0-9_,-]+"),
    "gpus": ("G", GPUS),
    "gpus-per-node": ("", GPUS),
    "gpus-per-task": ("", GPUS),
    "gpus-per-socket": ("", GPUS),
    "cpus-per-gpu": ("", COUNT),
    "sockets-per-node": ("", COUNT),
    "cores-per-socket": ("", COUNT),
    "threads-per-core": ("", COUNT),
}
_SHORT = {short: long for long, (short, _) in ALLOWED.items() if short}
# why the options srun_args refuses are refused (the rest: "not one srun_args allows")
OWNED = ("nodes", "ntasks", "ntasks-per-node", "input", "label", "kill-on-bad-exit",
         "job-name", "nodelist")  # fmt: skip
_OWNS = "factbook sets it (the step's shape and output)"
_IO = "it redirects the step's I/O (files opened, output factbook never reads)"
_RUNS = "it runs a program"
_PROGRAMS = ("prolog", "epilog", "task-prolog", "task-epilog", "container", "mpi", "multi-prog",
             "bcast", "pty")  # fmt: skip
_ENV = "the checks' environment is the target's env:"
_WHY = {
    **dict.fromkeys((*OWNED, "distribution"), _OWNS),
    **dict.fromkeys(("output", "error", "open-mode"), _IO),
    **dict.fromkeys(_PROGRAMS, _RUNS),
    **dict.fromkeys(("export", "export-file", "preserve-env", "get-user-env"), _ENV),
    "chdir": "the checks run in the agent's folder",
    "uid": "factbook runs as you",
    "gid": "factbook runs as you",
}
_SHORT_REFUSED = {
    "N": "nodes", "n": "ntasks", "i": "input", "l": "label", "K": "kill-on-bad-exit",
    "J": "job-name", "w": "nodelist", "o": "output", "e": "error", "E": "preserve-env",
    "D": "chdir", "m": "distribution",
}  # fmt: skip


def _q(text: str) -> str:
    return repr(shown(text))


def hostlist_problem(text: str) -> str | None:
    """Why `text` is not a Slurm node list factbook hands to scontrol and srun; None when it
    is one of at most SLURM_MAX_NODES names (counted from its ranges, never expanded)."""
    if not text:
        return "is empty"
    if len(text) > SLURM_MAX_TEXT:
        return f"is longer than {SLURM_MAX_TEXT} characters"
    total = 0
    for expr in _split_top(text):
        if expr is None:
            return "has an unbalanced '[' or ']'"
        count = _expr_count(expr)
        if isinstance(count, str):
            return count if expr == text else f"has {_q(expr)}, which {count}"
        total += count
        if total > SLURM_MAX_NODES:
            return f"names more than {SLURM_MAX_NODES} nodes"
    return None


def _split_top(text: str) -> list[str | None]:
    """The comma-separated expressions of a hostlist (commas inside brackets kept); None for
    an unbalanced bracket."""
    out: list[str | None] = []
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                return [None]
        elif ch == "]":
            depth -= 1
            if depth < 0:
                return [None]
        elif ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    if depth:
        return [None]
    out.append(text[start:])
    return out


def _expr_count(expr: str) -> int | str:
    """How many names `prefix[1-4,7]suffix[..]...` stands for, or why it is no host name."""
    if not expr:
        return "has an empty name (two commas, or one at an end)"
    if not expr[0].isascii() or not expr[0].isalnum():
        return "does not start with a letter or digit"
    count = 1
    for i, part in enumerate(re.split(r"(\[[^\]]*\])", expr)):
        if i % 2 == 0:
            if not _HOST_CHARS.fullmatch(part):
                return "is not a node name (letters, digits, '.', '_', '-' and [ranges])"
            continue
        size = 0
        for item in part[1:-1].split(","):
            m = _RANGE.fullmatch(item)
            if m is None:
                return f"has a range that is not N or N-M ({NUMBER_MAX_DIGITS} digits at most)"
            low, high = int(m.group(1)), int(m.group(2) or m.group(1))
            if high < low:
                return "has a range that runs from high to low"
            size += high - low + 1
            if size > SLURM_MAX_NODES:
                return f"names more than {SLURM_MAX_NODES} nodes"
        count *= size
        if count > SLURM_MAX_NODES:
            return f"names more than {SLURM_MAX_NODES} nodes"
    return count


def partition_problem(text: str) -> str | None:
    """Why `text` is not a partition name (or a comma list of them)."""
    if len(text) > SLURM_MAX_TEXT:
        return f"is longer than {SLURM_MAX_TEXT} characters"
    if not re.fullmatch(_NAMES, text):
        return "is not a partition name (letters, digits, '.', '_', '-'; a comma list)"
    return None


def srun_args_problems(args: Sequence[object]) -> list[str]:
    """Why `srun_args` may not be passed to srun: one message per refused entry (at most 3)."""
    if len(args) > SLURM_MAX_ARGS:
        return [f"srun_args has {len(args)} entries; at most {SLURM_MAX_ARGS}"]
    out: list[str] = []
    i = 0
    while i < len(args) and len(out) < 3:
        arg = args[i]
        i += 1
        if not isinstance(arg, str):
            continue  # the schema says so
        if len(arg) > SLURM_MAX_ARG:
            out.append(f"srun_args entry {_q(arg)} is longer than {SLURM_MAX_ARG} characters")
            continue
        name, value, needs_next = _parse(arg)
        if isinstance(name, _Refusal):
            out.append(f"srun_args {_q(arg)}: {name.text}")
            continue
        if needs_next:
            if i >= len(args) or not isinstance(args[i], str):
                out.append(f"srun_args --{name} needs a value")
                continue
            value = str(args[i])
            i += 1
        bad = _value_problem(name, value)
        if bad:
            out.append(f"srun_args --{name}: {bad}")
    return out


def option_names(args: Sequence[str]) -> set[str]:
    """The full names of the options `args` sets (values skipped); refused entries left out."""
    names, i = set(), 0
    while i < len(args):
        name, _, needs_next = _parse(args[i])
        i += 2 if needs_next else 1
        if isinstance(name, str):
            names.add(name)
    return names


class _Refusal:
    def __init__(self, text: str):
        self.text = text


def _parse(arg: str) -> tuple[str | _Refusal, str | None, bool]:
    """(the option's full name, its attached value, whether the next entry is its value)."""
    if arg == "--":
        why = "ends srun's options: what follows would be the program it runs"
        return _Refusal(why), None, False
    if arg.startswith("--"):
        name, eq, value = arg[2:].partition("=")
        if name not in ALLOWED:
            return _Refusal(_refused(name)), None, False
        shape = ALLOWED[name][1]
        if shape is None:
            return (_Refusal("takes no value"), None, False) if eq else (name, None, False)
        if shape.startswith("?"):
            return name, value if eq else None, False
        return name, value if eq else None, not eq
    if arg.startswith("-") and len(arg) >= 2:
        letter, rest = arg[1], arg[2:]
        if letter not in _SHORT:
            long = _SHORT_REFUSED.get(letter)
            why = _refused(long) if long else "is not an option srun_args allows"
            return _Refusal(why), None, False
        name = _SHORT[letter]
        shape = ALLOWED[name][1]
        if shape is None:
            if rest:
                return _Refusal("write each option as its own entry"), None, False
            return name, None, False
        if shape.startswith("?"):
            return name, rest or None, False
        return name, rest or None, not rest
    return (
        _Refusal("is not an option: srun would run it as the program, instead of factbook's agent"),
        None,
        False,
    )


def _refused(name: str) -> str:
    why = _WHY.get(name)
    if why:
        return f"srun's --{name} is not allowed: {why}"
    if name and any(o.startswith(name) for o in (*ALLOWED, *_WHY)):
        full = sorted(o for o in (*ALLOWED, *_WHY) if o.startswith(name))[0]
        return f"write the option in full (srun reads --{name} as any option it begins: --{full})"
    return "is not an option srun_args allows (they bound or place the step: see transports)"


def _value_problem(name: str, value: str | None) -> str | None:
    shape = ALLOWED[name][1]
    if shape is None or (shape.startswith("?") and value is None):
        return None
    shape = shape.lstrip("?")
    if value is None or value == "":
        return "needs a value"
    if shape == "HOSTLIST":
        bad = hostlist_problem(value)
        return f"{_q(value)} {bad}" if bad else None
    if not re.fullmatch(shape, value):
        return f"{_q(value)} is not a value it takes"
    return None


def compressed(nodes: Sequence[str]) -> str:
    """`nodes` as one hostlist in the same order: runs of the same prefix and zero-padded
    width with consecutive numbers become `prefix[a-b,c]`, so 30,000 names are not 30,000
    words of srun's command line (Linux refuses one argument over 128 kB)."""
    groups: list[tuple[str, int, list[tuple[int, int]]]] = []  # prefix, width, ranges
    out: list[str] = []

    def flush() -> None:
        for prefix, width, ranges in groups:
            parts = [
                f"{a:0{width}d}" if a == b else f"{a:0{width}d}-{b:0{width}d}" for a, b in ranges
            ]
            only = len(ranges) == 1 and ranges[0][0] == ranges[0][1]
            out.append(f"{prefix}{parts[0]}" if only else f"{prefix}[{','.join(parts)}]")
        groups.clear()

    for node in nodes:
        m = re.fullmatch(r"(.*?)(\d{1,18})", node)
        if m is None:
            flush()
            out.append(node)
            continue
        prefix, digits = m.group(1), m.group(2)
        padded = len(digits) > 1 and digits.startswith("0")
        width = len(digits) if padded else 0  # 0: written as it is
        number = int(digits)
        last = groups[-1] if groups else None
        if last and last[0] == prefix and (last[1] == len(digits) or last[1] == width == 0):
            ranges = groups[-1][2]
            if ranges[-1][1] + 1 == number:
                ranges[-1] = (ranges[-1][0], number)
            else:
                ranges.append((number, number))
            continue
        flush()
        groups.append((prefix, width, [(number, number)]))
    flush()
    return ",".join(out)
