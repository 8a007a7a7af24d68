"""Oracle (issue 26): generated ssh configs x hosts, resolved by factbook and by OpenSSH.

tests/sshconfig_cases.py draws configs from a table of features. For every config and host:

- `ssh -G` is the reference for host name, port, user, identity files, certificate files and
  ProxyJump (a host ssh refuses, a jump loop or a bad host name, factbook refuses too);
- a real `ssh` run is the reference for the jump chain, hop by hop: the ssh binary is started
  under the name of a tracing script (`sshtrace`), so the implicit `ssh -W` ProxyCommand that
  OpenSSH builds from ProxyJump runs that script. It records the forward (`-W host:port`) and
  the hop's own `ssh -G`, then execs the real ssh, which does the same for the next jump out.
  Nothing connects anywhere: the outermost jump's script exits, and the run fails as it must.
  factbook's ChainResolver must give the same hops (host, port, user) and forwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sshconfig_cases import Case, cases

from factbook.errors import UsageError
from factbook.knowledge.model import Target
from factbook.verification.transports.base import TransportOptions
from factbook.verification.transports.sshconfig import SSHConfigFile
from factbook.verification.transports.sshconnect import ChainResolver
from factbook.verification.transports.sshwords import parse_jump_host

SSH = shutil.which("ssh")
COUNT = 120
pytestmark = pytest.mark.skipif(SSH is None, reason="OpenSSH client missing")

TRACER = r"""#!/bin/bash
# how the real ssh runs itself for one ProxyJump hop, and what that hop resolves to
depth=$(( ${TRACE_DEPTH:-0} + 1 )); export TRACE_DEPTH=$depth
args=(); fwd=
while [ $# -gt 0 ]; do
  if [ "$1" = -W ]; then fwd=$2; shift 2; else args+=("$1"); shift; fi
done
seen=$("$REAL_SSH" -G "${args[@]}" 2>&1 </dev/null)
{ printf 'HOP %s\n' "$fwd"
  printf '%s\n' "$seen" | grep -E '^(hostname|port|user|identityfile) |loop|invalid|Invalid'
  printf 'END\n'; } >> "$TRACE_LOG"
me="$fwd ${args[*]}"  # the same hop asked again: ssh would go round forever
case "$TRACE_SEEN" in *"<$me>"*) echo DEEP >> "$TRACE_LOG"; exit 1;; esac
export TRACE_SEEN="$TRACE_SEEN<$me>"
if [ "$depth" -gt 20 ]; then echo DEEP >> "$TRACE_LOG"; exit 1; fi
printf '%s\n' "$seen" | grep -q '^proxyjump ' || exit 1
n=${#args[@]}
exec -a "$0" "$REAL_SSH" "${args[@]:0:n-1}" -W "$fwd" "${args[n-1]}"
"""


class Refused(Exception):
    pass


def ssh_g(config: Path, host: str) -> dict[str, list[str]]:
    done = subprocess.run(
        [SSH, "-G", "-F", str(config), host],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise Refused(done.stderr.strip())
    seen: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        seen.setdefault(key, []).append(value)
    return seen


def _jump_text(raw: str | None) -> str | None:
    """ProxyJump as `ssh -G` prints it: the list, its last entry rebuilt from its parts."""
    if raw is None:
        return None
    *extra, last = raw.split(",")
    user, host, port = parse_jump_host(last)
    numeric = host.replace(".", "").isdigit()  # ssh -G brackets addresses
    host = f"[{host}]" if ":" in host or numeric else host
    text = f"{user + '@' if user else ''}{host}{f':{port}' if port else ''}"
    return ",".join([*[e.strip() for e in extra], text])


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Case, Path]]:
    root = tmp_path_factory.mktemp("generated")
    out = []
    for item in cases(COUNT):
        path = root / item.name
        path.write_text(item.text)
        out.append((item, path))
    return out


def _answers(generated: list[tuple[Case, Path]]) -> list[tuple[Case, Path, str, object]]:
    jobs = [(c, p, h) for c, p in generated for h in c.hosts]

    def one(job: tuple[Case, Path, str]) -> object:
        try:
            return ssh_g(job[1], job[2])
        except Refused as exc:
            return exc

    with ThreadPoolExecutor(4) as pool:
        found = list(pool.map(one, jobs))
    return [(c, p, h, f) for (c, p, h), f in zip(jobs, found, strict=True)]


@pytest.fixture(scope="module")
def answers(generated: list[tuple[Case, Path]]) -> list[tuple[Case, Path, str, object]]:
    return _answers(generated)


def test_the_table_gives_enough_distinct_cases(answers) -> None:
    assert len({c.name for c, *_ in answers}) >= 100
    assert len(answers) >= 400
    resolved = [a for *_, a in answers if isinstance(a, dict)]
    assert sum("proxyjump" in a for a in resolved) >= 60  # many jump chains to trace
    assert sum(a["port"] != ["22"] for a in resolved) >= 60
    assert any(isinstance(a, Refused) for *_, a in answers)  # and some hosts ssh refuses


def test_every_host_resolves_as_ssh_G(answers) -> None:
    wrong = []
    for item, path, host, want in answers:
        where = f"{item.name} {host!r}:\n{item.text}"
        try:
            got = SSHConfigFile(path).lookup(host)
            got.jumps()  # a jump loop is refused by ssh -G as well
        except UsageError as exc:
            if not isinstance(want, Refused):
                wrong.append(f"{where}factbook refused: {exc}")
            continue
        if isinstance(want, Refused):
            wrong.append(f"{where}ssh refused ({want}), factbook resolved {got}")
            continue
        assert isinstance(want, dict)
        ours = {
            "hostname": got.hostname,
            "port": str(got.port),
            "user": got.user,
            "identityfile": got.identity_files,
            "certificatefile": got.certificate_files,
            "proxyjump": _jump_text(got.proxy_jump),
        }
        theirs = {
            "hostname": want["hostname"][0],
            "port": want["port"][0],
            "user": want["user"][0],
            "identityfile": want.get("identityfile", []),
            "certificatefile": want.get("certificatefile", []),
            "proxyjump": want.get("proxyjump", [None])[0],
        }
        if ours != theirs:
            diff = {k: (ours[k], theirs[k]) for k in ours if ours[k] != theirs[k]}
            wrong.append(f"{where}differs (factbook, ssh): {diff}")
    assert not wrong, f"{len(wrong)} of {len(answers)}:\n" + "\n\n".join(wrong[:5])


def _trace(tmp: Path, config: Path, host: str) -> tuple[list[tuple], str]:
    """The hops a real ssh run goes through, outermost first:
    (forward, host, port, user, identity files)."""
    tracer = tmp / "sshtrace"
    log = tmp / f"trace-{os.getpid()}-{abs(hash((str(config), host)))}.log"
    env = {**os.environ, "REAL_SSH": str(SSH), "TRACE_LOG": str(log)}
    env.pop("TRACE_DEPTH", None)
    env.pop("TRACE_SEEN", None)
    done = subprocess.run(
        [str(tracer), "-F", str(config), "-o", "BatchMode=yes", host, "true"],
        executable=SSH,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=30,
    )
    hops = []
    text = log.read_text() if log.exists() else ""
    for block in text.split("END\n"):
        lines = [s for s in block.splitlines() if s]
        if not lines or not lines[0].startswith("HOP "):
            continue
        got: dict[str, list[str]] = {}
        for line in lines[1:]:
            key, _, value = line.partition(" ")
            got.setdefault(key, []).append(value)
        one = [got.get(k, ["?"])[0] for k in ("hostname", "port", "user")]
        hops.append((lines[0][4:], *one, tuple(got.get("identityfile", []))))
    return hops[::-1], done.stderr + text


def _identities(path: Path, spec: str) -> tuple[str, ...]:
    """The raw identity files factbook's config gives the jump `spec` (`ssh -l -p host`)."""
    user, host, port = parse_jump_host(spec)
    return tuple(SSHConfigFile(path).lookup(host, user=user, port=port).identity_files)


def test_jump_chains_hop_by_hop_as_a_traced_ssh_run(answers, tmp_path: Path) -> None:
    tracer = tmp_path / "sshtrace"
    tracer.write_text(TRACER)
    tracer.chmod(0o755)
    jobs, seen = [], set()
    for c, p, h, a in answers:  # one host a config, the first with a jump
        if isinstance(a, dict) and "proxyjump" in a and c.name not in seen and len(jobs) < 64:
            seen.add(c.name)
            jobs.append((c, p, h))

    def one(job: tuple[Case, Path, str]) -> tuple[Case, Path, str, list, str]:
        hops, said = _trace(tmp_path, job[1], job[2])
        return (*job, hops, said)

    with ThreadPoolExecutor(4) as pool:
        traced = list(pool.map(one, jobs))
    wrong = []
    for item, path, host, hops, said in traced:
        where = f"{item.name} {host!r}:\n{item.text}"
        resolver = ChainResolver({}, TransportOptions(ssh_config=str(path)))
        refused = "DEEP" in said or "loop" in said or "nvalid" in said
        try:
            ours = resolver.resolve(Target(name=host, host=host))
        except UsageError as exc:
            if not refused:
                wrong.append(f"{where}factbook refused ({exc}); ssh went through {hops}")
            continue
        if refused:
            wrong.append(f"{where}ssh refused ({said[-300:]}), factbook: {ours}")
            continue
        want = [(h, p, u, i) for _, h, p, u, i in hops]
        got = [(h.host, str(h.port), h.user, _identities(path, h.name)) for h in ours[:-1]]
        forwards = [f for f, *_ in hops]
        ours_fwd = [f"[{h.host}]:{h.port}" for h in ours[1:]]
        if got != want or forwards != ours_fwd:
            wrong.append(f"{where}hops {got} {ours_fwd}\n  ssh {want} {forwards}")
    assert len(traced) >= 50
    assert not wrong, f"{len(wrong)} of {len(traced)}:\n" + "\n\n".join(wrong[:5])
