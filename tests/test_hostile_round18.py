# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile input, round 18 (issue 25, "Hardening III"): hostile Slurm options. An attacker
who can write a shared knowledge base's targets.yaml, and a user who makes mistakes, against
a slurm target's `nodes`, `partition`, `srun_args`, `via` and `env`, and against what srun and
the nodes print back.

Tried: node lists that are options (`--wrap=id`, `-w x`), shell (`a;b`, `$(...)`, backticks,
a newline, a bidi override), malformed brackets, empty names, huge ranges and 5000-digit
bounds, non-strings; partitions likewise; srun_args that redirect the step's I/O (`--output`,
`--out=` abbreviated, `-o`, `--error`, `--input`, `--open-mode`), run a program (`--prolog`,
`--epilog`, `--task-prolog`, `--task-epilog`, abbreviated, `--container`, `--bcast`, `--mpi`,
`--multi-prog`, `--pty`), change the environment or folder (`--export=ALL,LD_PRELOAD=...`,
`--chdir`, `-D`), the user (`--uid`, `--gid`), the shape factbook relies on (`--label`,
`--nodes`, `--ntasks`, `--nodelist`, `-w`, `--job-name`, `--kill-on-bad-exit`,
`--distribution`), sbatch's `--wrap`, a bare program word, `--`, `:` (srun's het-job
separator), an optional value written as the next entry (`--immediate`, `60`: srun would run
`60`), bundled short flags, values with shell, a newline or a NUL, 70,000 entries,
non-strings, a string instead of a list; `via` naming a local, exec or slurm target, or an
ssh target whose host is an option; `env` keys that are srun's input variables
(SLURM_STDOUTMODE, SLURM_EXPORT_ENV); output: a TaskProlog printing a `factbook-node` line
for another node (old and new form) or a node name with control characters and a bidi
override, a 20 MB line, result lines longer than srun's 1024-byte I/O pieces, a node list too
long for one argument, a TaskProlog that fails on one node; srun waiting for a busy node with and without
`--immediate`; an inventory's `ansible_connection=slurm`.

The table cases run through tests/test_hostile_kb.py's `run_case`; the rest run the real
test cluster (tests/slurm.py), here started with a TaskProlog that prints what a test asks.

Counted: 100 table cases (87 findings' cases, 13 held), 12 real-cluster runs (8 findings', 4
held): 112 tried. Findings, by class: srun_args reached srun whatever they said; nodes and
partition unchecked at lint and exit 3 at verify; via naming a non-ssh target passed lint; env
steered srun; a prolog's node line was believed; results over 1 kB were lost; a long node list
was one argument too many; a never-started node's reason spanned lines; a busy node's wait
ended without srun's reason.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import cli, fact, make_kb, require
from slurm import Cluster, slurm_missing_reason, start_cluster
from test_hostile_kb import Case, run_case

from factbook.knowledge.fleet.slurmwords import compressed


def own(entry: str, more: str = "") -> dict[str, str]:
    """targets.yaml with slurm target `c` written as `entry` (and `more` target lines)."""
    return {
        "targets.yaml": "targets:\n  here: {transport: local}\n  box: {host: box.invalid, user: root}\n  c: "
        + entry
        + "\n"
        + more
    }


def args(*entries: str) -> dict[str, str]:
    """Target `c` on node n1 with these srun_args (each a YAML flow scalar as written)."""
    return own("{transport: slurm, nodes: n1, srun_args: [" + ", ".join(entries) + "]}")


def nodes(value: str) -> dict[str, str]:
    return own("{transport: slurm, nodes: " + value + "}")


def part(value: str) -> dict[str, str]:
    return own("{transport: slurm, partition: " + value + "}")


DRY = ["verify", "--dry-run", "--target", "c"]
NOT_ALLOWED = "is not allowed"
RUNS = "is not allowed: it runs a program"
IO = "is not allowed: it redirects the step's I/O"
OWNED = "is not allowed: factbook sets it"
ENV = "is not allowed: the checks' environment is the target's env:"
BARE = "is not an option: srun would run it as the program"
NOT_ONE = "is not an option srun_args allows"
SHAPE = "is not a value it takes"
NOT_NODES = "is not a node name"

# fmt: off
CASES: list[Case] = [
    # --- 1. srun_args: any srun option reached srun, so a knowledge base could redirect the
    #        step's output into a file (--output=/etc/x wrote it, the run said only "srun
    #        started no task"), run a program here or on the nodes, or put a bare word first,
    #        which srun ran INSTEAD of the agent (serve's withholding did not see it). Now an
    #        allow-list of options that bound or place the step, spelled in full, with values
    #        of a shape; refused where targets.yaml is read, with its line, exit 2 ---
    Case("srun_args --output=/etc/x", args("--output=/etc/x"), "lint", 2, f"targets.yaml:4: target 'c': srun_args '--output=/etc/x': srun's --output {IO}"),
    Case("srun_args --out= abbreviated", args("--out={out}/x"), "lint", 2, "write the option in full (srun reads --out as any option it begins: --output)"),
    Case("srun_args -o FILE (short, two entries)", args("-o", "{out}/x"), "lint", 2, f"srun_args '-o': srun's --output {IO}"),
    Case("srun_args -oFILE", args("-o{out}/x"), "lint", 2, f"srun's --output {IO}"),
    Case("srun_args --error", args("--error={out}/x"), "lint", 2, f"srun's --error {IO}"),
    Case("srun_args --open-mode", args("--open-mode=append"), "lint", 2, f"srun's --open-mode {IO}"),
    Case("srun_args --input", args("--input=none"), "lint", 2, f"srun's --input {OWNED}"),
    Case("srun_args -i0", args("-i0"), "lint", 2, f"srun's --input {OWNED}"),
    Case("srun_args --prolog", args("--prolog=/bin/true"), "lint", 2, f"srun's --prolog {RUNS}"),
    Case("srun_args --epilog", args("--epilog=/bin/true"), "lint", 2, f"srun's --epilog {RUNS}"),
    Case("srun_args --task-prolog", args("--task-prolog=/bin/true"), "lint", 2, f"srun's --task-prolog {RUNS}"),
    Case("srun_args --task-epilog", args("--task-epilog=/bin/true"), "lint", 2, f"srun's --task-epilog {RUNS}"),
    Case("srun_args --task-pro= abbreviated", args("--task-pro=/bin/true"), "lint", 2, "write the option in full"),
    Case("srun_args --ep abbreviated", args("--ep"), "lint", 2, "write the option in full"),
    Case("srun_args --container", args("--container=/srv/bundle"), "lint", 2, f"srun's --container {RUNS}"),
    Case("srun_args --bcast", args("--bcast=/tmp/x"), "lint", 2, f"srun's --bcast {RUNS}"),
    Case("srun_args --mpi", args("--mpi=pmix"), "lint", 2, f"srun's --mpi {RUNS}"),
    Case("srun_args --multi-prog", args("--multi-prog"), "lint", 2, f"srun's --multi-prog {RUNS}"),
    Case("srun_args --pty", args("--pty"), "lint", 2, f"srun's --pty {RUNS}"),
    Case("srun_args --export LD_PRELOAD", args("'--export=ALL,LD_PRELOAD={out}/x.so'"), "lint", 2, f"srun's --export {ENV}"),
    Case("srun_args -E", args("-E"), "lint", 2, f"srun's --preserve-env {ENV}"),
    Case("srun_args --chdir", args("--chdir=/"), "lint", 2, f"srun's --chdir {NOT_ALLOWED}"),
    Case("srun_args -D/", args("-D/"), "lint", 2, f"srun's --chdir {NOT_ALLOWED}"),
    Case("srun_args --uid", args("--uid=0"), "lint", 2, "srun's --uid is not allowed: factbook runs as you"),
    Case("srun_args --gid", args("--gid=0"), "lint", 2, "srun's --gid is not allowed: factbook runs as you"),
    Case("srun_args --label", args("--label"), "lint", 2, f"srun's --label {OWNED}"),
    Case("srun_args -l", args("-l"), "lint", 2, f"srun's --label {OWNED}"),
    Case("srun_args --nodes", args("--nodes=1"), "lint", 2, f"srun's --nodes {OWNED}"),
    Case("srun_args -N1", args("-N1"), "lint", 2, f"srun's --nodes {OWNED}"),
    Case("srun_args --ntasks", args("--ntasks=99"), "lint", 2, f"srun's --ntasks {OWNED}"),
    Case("srun_args --nodelist", args("--nodelist=n9"), "lint", 2, f"srun's --nodelist {OWNED}"),
    Case("srun_args -w n9", args("-w", "n9"), "lint", 2, f"srun's --nodelist {OWNED}"),
    Case("srun_args --job-name", args("--job-name=x"), "lint", 2, f"srun's --job-name {OWNED}"),
    Case("srun_args --kill-on-bad-exit", args("--kill-on-bad-exit=1"), "lint", 2, f"srun's --kill-on-bad-exit {OWNED}"),
    Case("srun_args --distribution", args("--distribution=arbitrary"), "lint", 2, f"srun's --distribution {OWNED}"),
    Case("srun_args --wrap (sbatch's)", args("--wrap=id"), "lint", 2, NOT_ONE),
    Case("srun_args --reboot", args("--reboot"), "lint", 2, NOT_ONE),
    Case("srun_args --begin", args("--begin=now+1hour"), "lint", 2, NOT_ONE),
    Case("srun_args --hold", args("--hold"), "lint", 2, NOT_ONE),
    Case("srun_args bare program", args("/usr/bin/env", "FOO=1"), "lint", 2, f"srun_args '/usr/bin/env': {BARE}"),
    Case("srun_args python3 -c", args("python3", "-c", "'import os'"), "lint", 2, f"srun_args 'python3': {BARE}"),
    Case("srun_args --", args("--", "id"), "lint", 2, "ends srun's options: what follows would be the program it runs"),
    Case("srun_args : (het separator)", args("':'", "id"), "lint", 2, f"srun_args ':': {BARE}"),
    Case("srun_args --immediate then 60 (srun would run 60)", args("--immediate", "'60'"), "lint", 2, f"srun_args '60': {BARE}"),
    Case("srun_args bundled short flags", args("-sQ"), "lint", 2, "write each option as its own entry"),
    Case("srun_args a flag given a value", args("--overlap=1"), "lint", 2, "srun_args '--overlap=1': takes no value"),
    Case("srun_args --time with shell", args("'--time=5;id'"), "lint", 2, f"srun_args --time: '5;id' {SHAPE}"),
    Case("srun_args --time at the end, no value", args("--time"), "lint", 2, "srun_args --time needs a value"),
    Case("srun_args --partition=-x", args("--partition=-x"), "lint", 2, f"'-x' {SHAPE}"),
    Case("srun_args --exclude=/etc/shadow (srun reads a list with a / from that file)", args("--exclude=/etc/shadow"), "lint", 2, "'/etc/shadow' does not start with a letter or digit"),
    Case("srun_args --exclude $(x)", args("'--exclude=$(touch {out}/MARKER)'"), "lint", 2, "does not start with a letter or digit"),
    Case("srun_args --comment with a newline", args('"--comment=a\\nb"'), "lint", 2, f"srun_args --comment: 'a\\nb' {SHAPE}"),
    Case("srun_args --comment with a NUL", args('"--comment=a\\0b"'), "lint", 2, SHAPE),
    Case("srun_args a 2000-character entry", args("--comment=" + "x" * 2000), "lint", 2, "is longer than 1024 characters"),
    Case("srun_args 70,000 entries", args(*["-s"] * 70000), "lint", 2, "srun_args has 70000 entries; at most 64"),
    Case("srun_args refused by verify too", args("--output={out}/x"), DRY, 2, f"srun's --output {IO}"),
    # ... held (guards): the schema's types, and what bounds or places the step passes
    Case("srun_args a string", own("{transport: slurm, nodes: n1, srun_args: --time=5}"), "lint", 2, "targets.c.srun_args: expected list, got string"),
    Case("srun_args an integer entry", args("5"), "lint", 2, "targets.c.srun_args[0]: expected string, got integer"),
    Case("srun_args that bound or place the step", args("--time=5", "-t", "'1-02:03:04'", "--immediate=60", "-I60", "-I", "'--comment=$(touch {out}/MARKER)'", "-p", "gpu", "'--exclude=n[2-3]'", "'--gres=gpu:8'", "--mem=10G", "--account=ml", "--qos=high", "--overlap", "--exclusive", "--exclusive=user", "'--constraint=a100&ib'", "--gpus-per-node=8", "--jobid=123", "--deadline=2027-01-01T00:00:00", "--time-min=5"), "lint", 0, "ok: 1 facts"),
    # --- 2. nodes: lint took any string; verify refused only what a regex caught, as exit 3
    #        (unreachable) instead of 2, and a malformed or huge list reached scontrol, whose
    #        error was dropped ("no nodes"). Now Slurm's hostlist syntax, its names counted
    #        without expanding them (at most 65,536), each bound at most 18 digits ---
    Case("nodes --wrap=id", nodes("--wrap=id"), "lint", 2, "targets.yaml:4: target 'c': nodes '--wrap=id' does not start with a letter or digit"),
    Case("nodes -w x", nodes("'-w x'"), "lint", 2, "does not start with a letter or digit"),
    Case("nodes a;b", nodes("'a;b'"), "lint", 2, f"nodes 'a;b' {NOT_NODES}"),
    Case("nodes $(touch)", nodes("'n1,$(touch {out}/MARKER)'"), "lint", 2, "does not start with a letter or digit"),
    Case("nodes backticks", nodes("'n`id`'"), "lint", 2, NOT_NODES),
    Case("nodes with a newline", nodes('"n1\\nn2"'), "lint", 2, NOT_NODES),
    Case("nodes with a bidi override", nodes('"n1\\u202e"'), "lint", 2, NOT_NODES, absent=("\u202e",)),
    Case("nodes n[1-4 (unclosed)", nodes("'n[1-4'"), "lint", 2, "has an unbalanced '[' or ']'"),
    Case("nodes n1-4] (no opening)", nodes("'n1-4]'"), "lint", 2, "has an unbalanced '[' or ']'"),
    Case("nodes n[[1]] (nested)", nodes("'n[[1]]'"), "lint", 2, "has an unbalanced '[' or ']'"),
    Case("nodes n[a-b]", nodes("'n[a-b]'"), "lint", 2, "has a range that is not N or N-M"),
    Case("nodes n[] (empty range)", nodes("'n[]'"), "lint", 2, "has a range that is not N or N-M"),
    Case("nodes n[5-3]", nodes("'n[5-3]'"), "lint", 2, "has a range that runs from high to low"),
    Case("nodes gpu[1-99999999]", nodes("'gpu[1-99999999]'"), "lint", 2, "names more than 65536 nodes"),
    Case("nodes two ranges multiplying past the bound", nodes("'r[1-300]n[1-300]'"), "lint", 2, "names more than 65536 nodes"),
    Case("nodes many lists adding past the bound", nodes("'" + ",".join(f"r{i}-[1-9000]" for i in range(8)) + "'"), "lint", 2, "names more than 65536 nodes"),
    Case("nodes a 5000-digit bound", nodes("'n[1-" + "9" * 5000 + "]'"), "lint", 2, "has a range that is not N or N-M (18 digits at most)"),
    Case("nodes a,,b", nodes("'a,,b'"), "lint", 2, "has an empty name"),
    Case("nodes trailing comma", nodes("'a,'"), "lint", 2, "has an empty name"),
    Case("nodes 10,000 characters", nodes("'" + "n" * 10000 + "'"), "lint", 2, "is longer than 8192 characters"),
    Case("nodes refused by verify as exit 2", nodes("'a;b'"), DRY, 2, NOT_NODES),
    # ... held (guards): the schema's types; a good list
    Case("nodes an integer", nodes("5"), "lint", 2, "targets.c.nodes: expected string, got integer"),
    Case("nodes a 40-digit integer", nodes("9" * 40), "lint", 2, "expected string, got integer"),
    Case("nodes a list", nodes("[a]"), "lint", 2, "expected string, got list"),
    Case("nodes empty", nodes("''"), "lint", 2, "slurm needs 'nodes' or 'partition'"),
    Case("nodes a good list", nodes("'n[1-4],login[01-02,07],x.y_z-1'"), "lint", 0, "ok: 1 facts"),
    # --- 3. partition: likewise unchecked at lint, exit 3 at verify ---
    Case("partition --wrap=x", part("--wrap=x"), "lint", 2, "partition '--wrap=x' is not a partition name"),
    Case("partition -p x", part("'-p x'"), "lint", 2, "is not a partition name"),
    Case("partition $(x)", part("'$(touch {out}/MARKER)'"), "lint", 2, "is not a partition name"),
    Case("partition with a newline", part('"gpu\\nx"'), "lint", 2, "is not a partition name"),
    Case("partition trailing comma", part("'gpu,'"), "lint", 2, "is not a partition name"),
    Case("partition refused by verify as exit 2", part("'a;b'"), DRY, 2, "is not a partition name"),
    Case("partition a comma list", part("'gpu,debug'"), "lint", 0, "ok: 1 facts"),
    # --- 4. via: lint accepted a via naming a local, exec or slurm target; verify refused it
    #        as exit 3. Now refused where targets.yaml is read ---
    Case("via a local target", own("{transport: slurm, nodes: n1, via: here}"), "lint", 2, "target 'c': via 'here' is a local target, not ssh/openssh"),
    Case("via itself", own("{transport: slurm, nodes: n1, via: c}"), "lint", 2, "via 'c' is a slurm target, not ssh/openssh"),
    Case("exec via a slurm target", own("{transport: slurm, nodes: n1}", "  e: {transport: exec, exec: [sh], via: c}\n"), "lint", 2, "target 'e': via 'c' is a slurm target"),
    Case("via refused by verify as exit 2", own("{transport: slurm, nodes: n1, via: here}"), DRY, 2, "is a local target"),
    # ... held (guards): an unknown via, and a via whose host ssh refuses
    Case("via unknown, option-shaped", own("{transport: slurm, nodes: n1, via: -oProxyCommand=x}"), "lint", 2, "unknown via '-oProxyCommand=x'"),
    Case("via an ssh target whose host is an option", own("{transport: slurm, nodes: n1, via: login}", "  login: {host: '-oProxyCommand=touch {out}/MARKER'}\n"), "lint", 2, "target 'login': host '-oProxyCommand=touch "),
    Case("via an ssh target, fine", own("{transport: slurm, nodes: n1, via: box}"), "lint", 0, "ok: 1 facts"),
    # ... held (guards): an inventory cannot make a slurm target
    Case("ini: ansible_connection=slurm", {"targets.yaml": "inventory: inv.ini\ntargets:\n  here: {transport: local}\n", "inv.ini": "[g]\nn1 ansible_host=ok.invalid ansible_connection=slurm\n"}, "lint", 2, "ansible_connection=slurm: factbook connects over ssh or locally only"),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round18(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


# --- 5. the real cluster, its TaskProlog printing what `prolog-NODE` files say ---
@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """conftest's cluster, with a TaskProlog: a node's task prints the `print ...` lines of
    WORKDIR/prolog-NODE before it runs (a hostile or broken node's prolog), and fails while
    WORKDIR/prolog-NODE.fail exists."""
    require(slurm_missing_reason())
    workdir = tmp_path_factory.mktemp("slurm18")
    prolog = workdir / "taskprolog"
    script = f'#!/bin/sh\nf={workdir}/prolog-$SLURMD_NODENAME\n[ -f "$f.fail" ] && exit 1\n'
    prolog.write_text(script + '[ -f "$f" ] && cat "$f"\nexit 0\n')
    prolog.chmod(0o755)
    c = start_cluster(workdir, extra=(f"TaskProlog={prolog}",))
    try:
        yield c
    finally:
        assert c.stop() == [], "slurmstepd survived its slurmd (tests/slurm.py: Cluster.stop)"


def _verify(root: Path, target: str) -> tuple[int, list[dict]]:
    code, out, err = cli(root, "verify", "--target", target, "--format", "json", "--no-save")
    assert out, err
    return code, json.loads(out)["results"]


NODE = fact("t.node", "env.var", {"eq": "n2"}, args={"name": "SLURMD_NODENAME"})


@pytest.mark.parametrize(
    "said",
    [
        "print factbook-node 0 n2 7.0",  # the form before round 18
        "print factbook-node 0000000000000000 0 n2 7.0",  # held: the new form, a guessed token
        "print factbook-node 0 n1\x1b[31m\u202e 7.0",  # a node name with controls and bidi
    ],
    ids=["old-form", "no-token", "controls"],
)
def test_a_prolog_claiming_another_node_is_not_believed(
    slurm_env: Cluster, tmp_path: Path, said: str
) -> None:
    """A finding: n1's task printed a `factbook-node` line for n2 before the agent ran; the
    first claim won, so n1's results could be recorded as n2's (a race) and n1 read "the
    agent never started". Now a node line carries a token made for the step, the task's own
    id and an unclaimed node of the step: n1 drifts as itself, n2 passes, every time."""
    prolog = slurm_env.workdir / "prolog-n1"
    prolog.write_text(said + "\n")
    root = make_kb(
        tmp_path / "kb",
        [NODE],
        targets={"targets": {"c": {"transport": "slurm", "nodes": "n[1-2]"}}},
    )
    try:
        for _ in range(3):
            code, results = _verify(root, "c")
            got = {r["target"]: (r["outcome"], r.get("observed")) for r in results}
            assert got == {"c.n1": ("drift", "n1"), "c.n2": ("pass", "n2")}, results
            assert code == 1
    finally:
        prolog.unlink()


@pytest.mark.parametrize("size", [1500, 300_000])
def test_a_result_line_longer_than_srun_pieces_reads_back(
    slurm_env: Cluster, tmp_path: Path, size: int
) -> None:
    """A finding: srun --label cuts every line over 1024 bytes into labelled 1024-byte pieces,
    so any result over ~1 kB (a cmd check's stdout) was lost on every node: "agent finished
    without this result". The pieces are joined again."""
    argv = ["python3", "-c", f"print('x' * {size})"]
    facts = [fact("t.big", "cmd", {"path": "stdout", "eq": "x" * size + "\n"}, args={"argv": argv})]
    root = make_kb(
        tmp_path / "kb",
        facts,
        targets={"targets": {"c": {"transport": "slurm", "nodes": "n[1-2]"}}},
    )
    code, results = _verify(root, "c")
    assert code == 0, [r["reason"] for r in results]
    assert sorted(r["target"] for r in results) == ["c.n1", "c.n2"]


def test_env_is_the_checks_never_srun_options(slurm_env: Cluster, tmp_path: Path) -> None:
    """A finding: the target's env was srun's environment here, and srun reads SLURM_* input
    variables as options: SLURM_STDOUTMODE=FILE wrote the step's output into FILE (the run
    said "srun started no task"), SLURM_EXPORT_ENV=NONE left the tasks without PATH. Now env
    reaches the checks only (the agent's `env --` on the nodes)."""
    out = tmp_path / "stdout-here"
    env = {"SLURM_STDOUTMODE": str(out), "SLURM_EXPORT_ENV": "NONE", "FB_SEEN": "yes"}
    facts = [fact("t.env", "env.var", {"eq": "yes"}, args={"name": "FB_SEEN"})]
    root = make_kb(
        tmp_path / "kb",
        facts,
        targets={"targets": {"c": {"transport": "slurm", "nodes": "n1", "env": env}}},
    )
    code, results = _verify(root, "c")
    assert code == 0, [r["reason"] for r in results]
    assert not out.exists()


def test_a_node_list_longer_than_one_argument_reaches_srun(
    slurm_env: Cluster, tmp_path: Path
) -> None:
    """A finding: the step's --nodelist named every node, so 9,000 nodes of 22-character names
    were one 200 kB argument, which Linux refuses ("Argument list too long", once per node).
    It is now a hostlist again (`gpu-node-rack-a-[00001-09000]`): srun gets it and says what
    a real cluster would (these nodes do not exist here)."""
    facts = [fact("t.ok", "cmd", {"path": "exit_code", "eq": 0}, args={"argv": ["true"]})]
    target = {
        "transport": "slurm",
        "nodes": "gpu-node-rack-a-[00001-09000]",
        "srun_args": ["--immediate=5"],
    }
    root = make_kb(tmp_path / "kb", facts, targets={"targets": {"c": target}})
    code, results = _verify(root, "c")
    assert code == 3 and len(results) == 9000
    reasons = {r["reason"] for r in results}
    assert not any("Argument list too long" in r for r in reasons), reasons
    assert any("Invalid node name specified" in r for r in reasons), reasons


@contextlib.contextmanager
def busy(cluster: Cluster, node: str) -> Iterator[None]:
    """`node` held by another job (an srun sleeping on it) for the duration."""
    argv = ["srun", "-w", node, "--job-name=fb18-blocker", "sleep", "60"]
    blocker = subprocess.Popen(
        argv, env=cluster.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 20
        while (
            cluster.node_state(node) not in ("allocated", "mixed") and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        yield
    finally:  # scancel, not a killed srun: that leaves its step running on the node
        cluster.run("scancel", "--quiet", "--name=fb18-blocker")
        try:
            blocker.wait(10)
        except subprocess.TimeoutExpired:
            blocker.kill()
            blocker.wait()


def _no_job_of_ours(cluster: Cluster) -> None:
    deadline = time.monotonic() + 10  # a job srun gave up on leaves the queue in seconds
    while "factbook-verify" in (queue := cluster.run("squeue", "-h", "-o", "%j").stdout):
        assert time.monotonic() < deadline, queue
        time.sleep(0.2)


def test_a_busy_node_with_immediate_is_bounded_and_leaves_no_job(
    slurm_env: Cluster, tmp_path: Path
) -> None:
    """Held (a guard): a node taken by another job and `--immediate=1`: srun gives up within
    seconds, one line says why (exit 3), and nothing of ours is left in the queue."""
    facts = [fact("t.ok", "cmd", {"path": "exit_code", "eq": 0}, args={"argv": ["true"]})]
    target = {"transport": "slurm", "nodes": "n3", "srun_args": ["--immediate=1"]}
    root = make_kb(tmp_path / "kb", facts, targets={"targets": {"c": target}})
    with busy(slurm_env, "n3"):
        started = time.monotonic()
        code, results = _verify(root, "c")
        assert time.monotonic() - started < 15
        assert code == 3 and len(results) == 1
        reason = results[0]["reason"]
        assert (
            "is unreachable" in reason
            and "Requested nodes are busy" in reason
            and "\n" not in reason
        )
        _no_job_of_ours(slurm_env)


def test_without_immediate_srun_gives_up_itself_and_says_why(
    slurm_env: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finding: without --immediate in srun_args, a step waiting for a busy node ended at
    START_LIMIT (120 s) as "no answer within 120 s", srun's reason unsaid (over `via`, where
    START_LIMIT does not apply, only the pass watchdog ended it). factbook now adds
    --immediate (90% of START_LIMIT) when srun_args has none: srun gives up itself and says
    why. START_LIMIT is made 4 s here."""
    from factbook.verification.transports import slurm

    monkeypatch.setattr(slurm, "START_LIMIT", 4.0)
    facts = [fact("t.ok", "cmd", {"path": "exit_code", "eq": 0}, args={"argv": ["true"]})]
    root = make_kb(
        tmp_path / "kb", facts, targets={"targets": {"c": {"transport": "slurm", "nodes": "n3"}}}
    )
    with busy(slurm_env, "n3"):
        code, results = _verify(root, "c")
        assert code == 3 and len(results) == 1
        reason = results[0]["reason"]
        assert "Requested nodes are busy" in reason and "no answer within" not in reason, reason
        _no_job_of_ours(slurm_env)


def test_a_node_whose_task_never_starts_is_one_line(slurm_env: Cluster, tmp_path: Path) -> None:
    """A finding: n2's TaskProlog fails, so its task never runs; its reason was srun's whole
    stderr, two lines (one error is one line everywhere else: lost_reason's ` | `)."""
    failing = slurm_env.workdir / "prolog-n2.fail"
    failing.write_text("")
    target = {"transport": "slurm", "nodes": "n[1-2]"}
    root = make_kb(tmp_path / "kb", [NODE], targets={"targets": {"c": target}})
    try:
        code, results = _verify(root, "c")
    finally:
        failing.unlink()
    got = {r["target"]: r for r in results}
    assert code == 3 and got["c.n1"]["outcome"] == "drift"
    reason = got["c.n2"]["reason"]
    assert reason.startswith("node n2: the agent never started (srun exit 1): "), reason
    assert "TaskProlog failed" in reason and " | " in reason and "\n" not in reason, reason


def test_the_node_list_srun_gets_names_the_same_nodes(slurm_env: Cluster) -> None:
    """Held (a guard of the nodelist fix above): the hostlist the step's --nodelist is made of
    expands, by scontrol itself, to the same names in the same order (padding, gaps, mixed
    prefixes, a descending run, names without digits)."""
    lists = [
        ["n1", "n2", "n3", "n10", "n11", "gpu-a01", "gpu-a02", "gpu-a04", "x", "y1z", "n007",
         "n008", "n0", "n00", "a.b1"],
        ["n9", "n10", "n099", "n100", "n0999", "n1000"],
        ["n3", "n1", "n2"],
        [f"rack{r}-n{i:03d}" for r in range(1, 4) for i in range(1, 200, 3)],
    ]  # fmt: skip
    for names in lists:
        hostlist = compressed(names)
        assert slurm_env.run("scontrol", "show", "hostnames", hostlist).stdout.split() == names
    assert compressed(lists[-1]) == ",".join(
        f"rack{r}-n[{','.join(f'{i:03d}' for i in range(1, 200, 3))}]" for r in range(1, 4)
    )


def test_a_prolog_printing_a_20_mb_line_is_dropped_and_the_node_still_answers(
    slurm_env: Cluster, tmp_path: Path
) -> None:
    """Held (a guard of the joining above): n1's TaskProlog prints one 20 MB line before the
    agent (20,000 pieces of 1024 bytes); what is held of it is bounded (MAX_LINE_BYTES a task),
    the line is dropped, and both nodes answer as themselves."""
    prolog = slurm_env.workdir / "prolog-n1"
    prolog.write_text("print " + "x" * 20_000_000 + "\n")
    target = {"transport": "slurm", "nodes": "n[1-2]"}
    root = make_kb(tmp_path / "kb", [NODE], targets={"targets": {"c": target}})
    try:
        code, results = _verify(root, "c")
    finally:
        prolog.unlink()
    got = {r["target"]: (r["outcome"], r.get("observed")) for r in results}
    assert got == {"c.n1": ("drift", "n1"), "c.n2": ("pass", "n2")}, results
    assert code == 1
