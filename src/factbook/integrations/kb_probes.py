"""Which probes `factbook serve` and `factbook mcp` run: factbook's own, a knowledge base's
only when the person who started the server asked for them (`--run-kb-probes`); the same for
the commands a knowledge base's targets name.

Issue 25: reading commands never execute code from the knowledge base; only `verify` (its
probes) and `run` (its cells) do. serve and mcp verify for whoever scrapes or asks, over a
knowledge base that may have been pulled from anywhere, so by default they run only the probes
factbook ships. The rule is one for every target: on a remote box a probe's code is sent there
and runs as the target's user, which is no safer than running it here.

A check withheld is reported as an error that names the flag, never skipped in silence. A
probe that checks/*.py declares counts as the knowledge base's even under a built-in's name:
the file would be shipped and its top-level code run. Where identities are checked before a
run (mcp's verify_facts), a target whose identity fact needs such a probe is withheld whole.
The flag is a command-line option on purpose: factbook.yaml belongs to the knowledge base,
which cannot vouch for itself.

Connecting can run code too, so a target is withheld whole (looked at once, whatever its
number of checks) when reaching it would run a command or file the knowledge base chose:

- `transport: exec`: its `exec:` argv is a command of the knowledge base's, here or on `via`
  (a command line is code wherever it runs, as a probe is);
- `proxy_command` (an Ansible inventory's ssh arguments), on the target or on any target it
  is reached through (`jump:` names, `via`, followed to the end with a visited set): the
  system ssh runs it here. Only the box's own is run today; the hops' are withheld too;
- `ssh_config` (an inventory that is an ssh config, or Ansible's `-F`), on the target or a
  hop, when the file is the knowledge base's: ssh reads the whole file, so one ProxyCommand,
  KnownHostsCommand, LocalCommand, PKCS11Provider, SecurityKeyProvider, XAuthLocation (each
  runs or loads a program here) or `Match exec` anywhere in it, or in a file it includes,
  withholds every host read through it. Includes are read with the transports' own reader,
  confined to the knowledge base; one it cannot vet (outside the root, unreadable) counts as
  a command. The user's ~/.ssh/config and /dev/null are the user's; any other file outside
  the knowledge base is not vetted and withholds;
- `srun_args` of a slurm target: --prolog and --epilog (srun runs them on the submitting
  host), --task-prolog and --task-epilog (run on the nodes, which share the submitting host's
  files on a cluster), also abbreviated as getopt takes them. targets.yaml's loader refuses
  them already (srun_args is an allow-list, fleet/slurmwords.py); this stays as a second wall;
- where the agent (transport local) or the transport's command (exec or slurm without `via`)
  starts on this machine: a `python:` that is not a plain interpreter name (python3,
  python3.11, pypy3), and an `env:` key that steers what an interpreter, the dynamic loader
  or a shell loads: PYTHON* (PYTHONINSPECT alone runs nothing, stdin being a pipe, but no
  PYTHON* key is needed to read a box), LD_*, DYLD_*, PATH, HOME (user site-packages),
  BASH_ENV, ENV, OPENSSL_* and the rest of `_STEERING` below (srun no longer gets a slurm
  target's env, which reaches the checks only; its steering keys are still withheld);
- on any box, a `python:` or `env:` value that names a file inside the knowledge base (as
  this machine sees it; `~` and, for the steering keys, paths relative to the login's home
  resolved here): over ssh to this machine, or on a cluster sharing it, that is the knowledge
  base's own file.

Otherwise a remote box's `python:` and `env:` are the box's business: they name programs and
folders already on the box, which the knowledge base cannot write, where a probe carries the
knowledge base's own code there. A reason names the target, the field and at most the first
word of a command (escaped), never an env value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from factbook.errors import UsageError
from factbook.judging.outcomes import OUTCOMES
from factbook.judging.sanitize import for_terminal
from factbook.knowledge.kb import CHECKS_DIR, KnowledgeBase
from factbook.knowledge.kbfiles import confined
from factbook.knowledge.model import Target
from factbook.probes.catalog import builtin_catalog
from factbook.probes.scan import custom_modules, scan_file
from factbook.store.results import load_latest, write_run
from factbook.verification.engine import error_record
from factbook.verification.run import VerifyRun, VerifySettings
from factbook.verification.targets import Plan, PlannedCheck

FLAG = "--run-kb-probes"
Withheld = list[tuple[PlannedCheck, str]]

# ssh_config keywords that make ssh run (or dlopen) a program on this machine
_CONFIG_COMMANDS = {
    "proxycommand": "ProxyCommand",
    "knownhostscommand": "KnownHostsCommand",
    "localcommand": "LocalCommand",
    "pkcs11provider": "PKCS11Provider",
    "securitykeyprovider": "SecurityKeyProvider",
    "xauthlocation": "XAuthLocation",
}
_BUILT_IN_VALUES = frozenset({"none", "internal"})  # SecurityKeyProvider internal: ssh's own
_SRUN_HOOKS = ("prolog", "epilog", "task-prolog", "task-epilog")
_PLAIN_PYTHON = re.compile(r"(python|pypy)(\d+(\.\d+)?)?t?")
# env keys that steer what a process started here loads or runs: interpreters' and the
# loader's search paths and startup hooks, shells' startup and tracing, where programs and
# dotfiles are found, libraries loaded by name, git's hooks and srun's input options
_STEERING_PREFIXES = (
    "PYTHON", "LD_", "DYLD_", "PERL", "RUBY", "NODE_", "JAVA_", "_JAVA_", "JDK_JAVA_",
    "BASH_FUNC_", "OPENSSL_", "GIT_", "SLURM_",
)  # fmt: skip
_STEERING = frozenset(
    {
        "PATH", "HOME", "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS4", "IFS",
        "PROMPT_COMMAND", "GCONV_PATH", "GLIBC_TUNABLES", "LOCPATH", "NLSPATH",
    }
)  # fmt: skip


def kb_probes(kb: KnowledgeBase) -> dict[str, str]:
    """Probe name -> the checks/ file that declares it (read as lint reads it, bounded)."""
    found: dict[str, str] = {}
    for path in custom_modules(kb.root / CHECKS_DIR):
        display = f"{CHECKS_DIR}/{path.name}"
        for name in scan_file(path, display).declared:
            found[name] = display
    return found


def _why(probe: str, own: dict[str, str], builtin: set[str]) -> str | None:
    """Why a probe may not run without the flag; None when it is factbook's own."""
    if probe in own:
        return f"the knowledge base's own probe '{probe}' ({own[probe]})"
    if probe not in builtin:
        return f"probe '{probe}' is not one of factbook's"
    return None


def _shown(command: str | tuple[str, ...]) -> str:
    """A command's first word, escaped and short: enough to recognise it, no token after it."""
    words = command.split() if isinstance(command, str) else command
    head = for_terminal(words[0] if words else "", limit=40)
    return f"`{head}{' ...' if len(words) > 1 else ''}`"


def _steers(key: str) -> bool:
    """Whether an env key changes what an interpreter, the loader or a shell runs."""
    upper = key.upper()
    return upper in _STEERING or upper.startswith(_STEERING_PREFIXES)


def _starts_here(target: Target) -> bool:
    """Whether a process with the target's env starts on this machine: the agent (local),
    or the transport's own command (exec, slurm) when there is no `via`."""
    return target.transport == "local" or (target.transport in ("exec", "slurm") and not target.via)


def _srun_hook(arg: str) -> str | None:
    """The prolog/epilog option an srun argument sets (getopt takes any unique prefix)."""
    if not arg.startswith("--"):
        return None
    name = arg[2:].split("=", 1)[0]
    if len(name) >= 2 and any(hook.startswith(name) for hook in _SRUN_HOOKS):
        return f"--{name}"
    return None


class TargetVetter:
    """Why reaching a target would run a command or file the knowledge base chose; each
    target, hop and ssh config file is looked at once."""

    def __init__(self, kb: KnowledgeBase, targets: dict[str, Target]):
        self.kb_root = kb.root
        self.root = Path(os.path.realpath(kb.root))
        self.targets = targets
        self.home = os.path.expanduser("~")
        self.own_config = Path(os.path.realpath(self.home)) / ".ssh" / "config"
        self._hops: dict[str, str | None] = {}
        self._configs: dict[str, str | None] = {}

    def why(self, name: str) -> str | None:
        """The reason checks on target `name` may not run without the flag, if any."""
        target = self.targets.get(name)
        if target is None:
            return None
        found = self._own_fields(target)
        if found is not None:
            return f"target '{name}' would run {found}"
        for hop in self._chain(target):
            found = self._connection(hop)
            if found is not None:
                through = "" if hop is target else f" through '{hop.name}'"
                return f"target '{name}' would run{through} {found}"
        return None

    def _chain(self, target: Target) -> list[Target]:
        """The target and every target it is reached through (jumps, `via`, theirs...)."""
        seen, order, todo = {target.name}, [target], [target]
        while todo:
            current = todo.pop()
            for name in (*current.jump, *([current.via] if current.via else [])):
                hop = self.targets.get(name)  # a `user@host` jump spec names no fields
                if hop is not None and name not in seen:
                    seen.add(name)
                    order.append(hop)
                    todo.append(hop)
        return order

    def _own_fields(self, target: Target) -> str | None:
        """exec, srun_args, python and env: what the target itself makes run."""
        if target.transport == "exec" and target.exec:
            where = f"on '{target.via}'" if target.via else "here"
            return f"its exec: command {_shown(target.exec)} {where}"
        if target.transport == "slurm":
            found = self._srun(target)
            if found is not None:
                return found
        return self._python(target) or self._env(target)

    def _srun(self, target: Target) -> str | None:
        for arg in target.srun_args:
            hook = _srun_hook(arg)
            if hook is not None:
                return f"the program its srun_args {for_terminal(hook, limit=40)} names"
            pieces = re.split(r"[=,]", arg)
            if any(self._into_kb(piece, ()) for piece in pieces):
                name = for_terminal(arg.split("=", 1)[0], limit=40)
                return f"a file of the knowledge base that its srun_args {name} names"
        return None

    def _python(self, target: Target) -> str | None:
        python = target.python
        if not python:
            return None
        here = _starts_here(target)
        shown = for_terminal(python, limit=80)
        bases = (self._base(target),) if "/" in python else ()  # a bare name: a PATH lookup
        if self._into_kb(python, bases):
            return f"a file of the knowledge base as its python ({shown})"
        if here and not _PLAIN_PYTHON.fullmatch(os.path.basename(python)):
            return f"its python {shown} on this machine, which is no plain Python interpreter"
        return None

    def _env(self, target: Target) -> str | None:
        here = _starts_here(target)
        for key, value in target.env.items():
            shown = for_terminal(key, limit=60)
            if here and _steers(key):
                return f"what its env {shown} makes a process on this machine load"
            bases = (self._base(target),) if _steers(key) else ()
            if self._into_kb(value, bases):
                return f"a file of the knowledge base that its env {shown} names"
        return None

    def _base(self, target: Target) -> str:
        """Where a relative path is read: the login's home over ssh (this machine's, when the
        box is this machine), else this process's folder (srun's tasks start there)."""
        return os.getcwd() if _starts_here(target) else self.home

    def _into_kb(self, text: str, bases: tuple[str, ...]) -> bool:
        """Whether any path in `text` (`:`-separated) lies inside the knowledge base; a
        relative one is tried against each of `bases`."""
        for piece in text.split(os.pathsep):
            path = os.path.expanduser(piece.strip())
            if not path:
                continue
            places = [path] if os.path.isabs(path) else [os.path.join(b, path) for b in bases]
            if any(self._inside(place) for place in places):
                return True
        return False

    def _inside(self, path: str | Path) -> bool:
        real = Path(os.path.realpath(path))
        return real == self.root or self.root in real.parents

    def _connection(self, hop: Target) -> str | None:
        """proxy_command and ssh_config: what connecting to or through `hop` runs here."""
        if hop.name not in self._hops:
            command = hop.proxy_command
            if command and command.strip().lower() != "none":
                self._hops[hop.name] = f"its proxy_command {_shown(command)} here"
            elif hop.ssh_config:
                self._hops[hop.name] = self._config(hop.ssh_config)
            else:
                self._hops[hop.name] = None
        return self._hops[hop.name]

    def _config(self, path: str) -> str | None:
        if path not in self._configs:
            self._configs[path] = self._vet_config(path)
        return self._configs[path]

    def _vet_config(self, path: str) -> str | None:
        """What an ssh config (and what it includes) makes ssh run here, if anything."""
        real = Path(os.path.realpath(os.path.expanduser(path)))
        if real == Path(os.devnull) or real == self.own_config:
            return None  # no config, or the user's own: what `ssh` reads anyway
        shown = for_terminal(self._display(path), limit=120)
        if not self._inside(real):
            return f"ssh with the config {shown}, outside the knowledge base (not vetted)"
        try:
            with confined(self.root):
                return self._config_commands(real)
        except UsageError as exc:
            said = for_terminal(self._display(str(exc).splitlines()[0]), limit=300)
            return f"ssh with its config {shown}, which cannot be vetted here ({said})"

    def _config_commands(self, top: Path) -> str | None:
        """The first line of `top` or its includes that runs or loads a program here."""
        from factbook.verification.transports.sshconfig import MAX_INCLUDE_DEPTH, SSHConfigFile

        reader = SSHConfigFile(top)
        todo, seen = [(top, 0)], set()
        while todo:
            path, depth = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            # the reader's own parse and Include expansion (glob, ~/.ssh, confinement)
            for line in reader._lines(path):
                found = _config_command(line.keyword, line.args, line.raw)
                if found is not None:
                    return f"{found} of its ssh config ({self._display(line.where)})"
                if line.keyword == "include":
                    if depth >= MAX_INCLUDE_DEPTH:
                        raise UsageError(f"{line.where}: Include nested deeper than {depth}")
                    todo += [(p, depth + 1) for p in reader._included(line)]
        return None

    def _display(self, text: str) -> str:
        """Paths in `text` shown relative to the knowledge base's root."""
        for root in dict.fromkeys((str(self.root), str(self.kb_root))):
            text = text.replace(root + os.sep, "")
        return text


def _config_command(keyword: str, args: tuple[str, ...], raw: str) -> str | None:
    """`ProxyCommand sh ...` / `Match ... exec ...` as a reason; None for any other line."""
    name = _CONFIG_COMMANDS.get(keyword)
    if name is not None and raw.strip().lower() not in _BUILT_IN_VALUES:
        return f"the {name} {_shown(raw)}"
    if keyword == "match" and any(a.lower().lstrip("!") == "exec" for a in args):
        return "the Match exec command"
    return None


def target_commands(kb: KnowledgeBase, plan: Plan) -> dict[str, str]:
    """Target name -> why connecting to it runs what the knowledge base chose, for the
    targets the plan's checks use (each looked at once)."""
    vetter = TargetVetter(kb, plan.targets)
    found = {}
    for name in dict.fromkeys(c.target for c in plan.checks):
        why = vetter.why(name)
        if why is not None:
            found[name] = why
    return found


def withhold_kb_probes(
    kb: KnowledgeBase, plan: Plan, *, identities: bool = False
) -> tuple[Plan, Withheld]:
    """The plan without the checks that need the knowledge base's probes or run on a target
    that runs its commands, and those checks with the reason; with `identities`, also every
    check on a target whose identity facts need such a probe."""
    from factbook.verification.identity import identity_checks

    own, builtin = kb_probes(kb), set(builtin_catalog().specs)
    suffix = f"; it runs only when the server is started with {FLAG}"
    blocked = target_commands(kb, plan)
    if identities:
        for name in sorted({c.target for c in plan.checks} - set(blocked)):
            for check in identity_checks(kb, plan.targets[name]):
                assert check.fact.check is not None
                why = _why(check.fact.check.probe, own, builtin)
                if why is not None and name not in blocked:
                    blocked[name] = f"target '{name}' proves its identity with {why}"
    kept: list[PlannedCheck] = []
    withheld: Withheld = []
    for check in plan.checks:
        assert check.fact.check is not None
        why = blocked.get(check.target) or _why(check.fact.check.probe, own, builtin)
        if why is None:
            kept.append(check)
        else:
            withheld.append((check, f"not run: {why}{suffix}"))
    return replace(plan, checks=kept), withheld


def run_guarded(
    kb: KnowledgeBase,
    plan: Plan,
    settings: VerifySettings,
    run: Callable[[Plan, VerifySettings], VerifyRun],
    *,
    allow: bool,
    identities: bool = False,
) -> VerifyRun:
    """`run(plan, settings)`, unless `allow`, without the checks that need the knowledge
    base's probes: those come back as error records in the same run (and its saved file)."""
    if allow:
        return run(plan, settings)
    options = replace(settings.options, kb_probes=False)  # what checks/ holds now is not sent
    settings = replace(settings, options=options)
    kept, withheld = withhold_kb_probes(kb, plan, identities=identities)
    if not withheld:
        return run(kept, settings)
    if settings.save:
        load_latest(kb.root)  # an unreadable latest.json stops the run before any check
    done = run(kept, replace(settings, save=False))
    done.records += [error_record(check, why, done.id) for check, why in withheld]
    done.header["summary"] = {k: sum(r.outcome == k for r in done.records) for k in OUTCOMES}
    done.header["targets"] = sorted({c.target for c in plan.checks})
    if settings.save and done.records:
        done.saved = write_run(kb.root, done.id, done.header, done.records)
    return done
