"""Every size bound factbook reads with, in one place, so that its writers respect it too.

The rule: nothing factbook writes can exceed what factbook reads. A reader refuses a file
over its bound (one line, exit 2); a writer that produced one would lock its user out of
every command. So each writer takes its bound from here, stores big values as bounded
previews (`preview`), and refuses before writing what still would not fit.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

# --- YAML a knowledge base is made of (yamlsrc reads; write-back, proposals write) ---
YAML_MAX_BYTES = 1 << 20  # one file; 30x the largest shipped fact file
YAML_MAX_DEPTH = 40  # the schema needs ~8 levels (facts/N/check/expect/all/N/...)
YAML_MAX_NODES = 200_000  # 1 MiB of dense facts holds ~105,000; the shipped KB ~25,000 in all

# --- verification results (store/results writes; it, the handbook, status, mcp read) ---
# latest.json: ~80,000 records of ~400 bytes (10,000 facts x 8 targets); parsed, ~400 MB
RESULTS_MAX_BYTES = 32 << 20
RUN_MAX_BYTES = 64 << 20  # one results/runs/<id>.jsonl (the handbook's measured pages)
RUN_HEADER_MAX_BYTES = 1 << 20  # its first line, read for every run listed
OBSERVED_MAX_BYTES = 64 << 10  # one observed value as JSON; beyond it, a preview
PREVIEW_CHARS = 4096  # the head of a value kept in its preview
PREVIEW_MIN_CHARS = 64  # the least a preview keeps when a whole file must shrink to fit

# --- one value a tool's file hands to a fact (bench import's config): kept, or a preview ---
RECORDED_VALUE_MAX_BYTES = 4096
RECORDED_VALUE_MAX_DEPTH = 16  # nested in facts/N/config/KEY: well inside YAML_MAX_DEPTH

# --- probe arguments that size what the agent reads on the box: lint refuses more, and the
# probe itself caps them (probes/files.py READ_MAX_BYTES: stdlib only, kept equal by a test)
PROBE_ARG_MAX = {"max_bytes": 1 << 20}

# --- text split into words like a shell (an inventory's host line, ssh arguments, a fact's
# flags): shlex builds each word a character at a time, so its time grows with the square of
# a word's length (a host line of one 5 MB word took minutes); a real one is under 1 KiB
WORDS_MAX_CHARS = 64 << 10

# --- a model's or draft's config.json (launch-lint, eagle3): a few kB in practice ---
CONFIG_MAX_BYTES = 8 << 20

# --- other files factbook writes and reads back ---
KB_FILE_MAX_BYTES = 8 << 20  # kbfiles.read_bytes' default: runbook records, pages
KNOWN_HOSTS_MAX_BYTES = 64 << 20  # a known_hosts file: ~100,000 hosts' keys
INVENTORY_MAX_BYTES = 64 << 20  # `ansible-inventory --list` of ~100,000 hosts
DUMP_MAX_BYTES = 32 << 20  # `factbook import` (30x the largest hand-written dump in seeds/)
# the items one import reads (bullets, rows, sentences): each costs ~100 us and ~7 kB
# until the import ends, so this bounds an import at a few seconds and a few hundred MB
# whatever the dump's shape; the largest hand-written dump in seeds/ holds 134
DUMP_MAX_ITEMS = 50_000
# A number a dump states (a count, a port, a list number, a token id, a message number) has
# at most this many digits; a longer run is not such a number. Python refuses to read over
# 4,300 digits as an int (ValueError), so a pattern reading one bounds its run by this.
NUMBER_MAX_DIGITS = 18
PORT_MAX_DIGITS = 5  # a TCP port (65535); a longer run of digits is no port
JUMP_MAX_HOPS = 16  # a jump chain (-J, ProxyJump, jump:) followed; past it: a loop, or hostile
# a slurm target (fleet/slurmwords.py): its node list is counted from its ranges, never expanded
SLURM_MAX_NODES = 65536  # Slurm's own hostlist bound (MAX_RANGE: 64k hosts in one range)
SLURM_MAX_TEXT = 8192  # characters of a node list or a partition
SLURM_MAX_ARGS = 64  # entries of srun_args
SLURM_MAX_ARG = 1024  # characters of one entry
# a regex: such a number, and not the head of a longer run
WHOLE_NUMBER = rf"\d{{1,{NUMBER_MAX_DIGITS}}}(?!\d)"
PROPOSAL_MAX_BYTES = 4 << 20  # one pending proposal (its item and the diff it makes)


def preview(
    value: Any, cap: int = OBSERVED_MAX_BYTES, head: int = PREVIEW_CHARS, depth: int = 0
) -> Any:
    """`value` as stored: itself when its JSON is at most `cap` characters (and, with `depth`,
    nested at most that deep), otherwise a string naming its size followed by its first
    `head` characters of JSON."""
    if (
        value is None
        or isinstance(value, bool)
        or (isinstance(value, int) and -(2**53) < value < 2**53)
    ):
        return value
    if isinstance(value, str) and len(value) * 6 <= cap:  # \uXXXX at worst
        return value
    try:
        text = json.dumps(value, default=repr)
    except (ValueError, RecursionError):  # an integer past Python's print limit, a cycle
        return f"<{type(value).__name__} that cannot be written as JSON>"
    if len(text) <= cap and not (depth and nesting(value) > depth):
        return value
    head = min(head, max(0, cap - 48))
    return f"<{len(text)} bytes as JSON; first {head}:> {text[:head]}"


def nesting(value: Any) -> int:
    """How deeply lists and mappings nest in `value` (0 for a scalar); iterative, so a value
    nested 100,000 deep is measured, not a RecursionError."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, (list, tuple)):
            deepest = max(deepest, level + 1)
            stack.extend((child, level + 1) for child in item)
    return deepest


def split_words(text: str, *, comments: bool = False) -> list[str]:
    """shlex.split of `text`; ValueError (as for an unclosed quote) past WORDS_MAX_CHARS.

    A text with no quote, escape or comment character, whose only white space is shlex's
    own (space, tab, CR, LF), splits as `str.split` splits it: an inventory's host lines
    are mostly such, and shlex reads a character at a time (55 us a line, 200,000 lines)."""
    if len(text) > WORDS_MAX_CHARS:
        raise ValueError(f"{len(text):,} characters to split; at most {WORDS_MAX_CHARS:,}")
    if (_PLAIN_WORDS if comments else _PLAIN_WORDS_HASH).fullmatch(text):
        return text.split()
    return shlex.split(text, comments=comments)


# words of anything but white space, quotes and escapes (and `#` where it starts a comment),
# between runs of shlex's white space: where str.split and shlex.split agree
_PLAIN_WORDS = re.compile(r"[^\s'\"\\#]*+(?:[ \t\r\n]++[^\s'\"\\#]*+)*+")
_PLAIN_WORDS_HASH = re.compile(r"[^\s'\"\\]*+(?:[ \t\r\n]++[^\s'\"\\]*+)*+")
