"""ssh configs generated from a table of features, for the `ssh -G` oracle (issue 26).

Each feature is a list of lines a config may contain (Host and Match lines with every pattern
form ssh reads: case, quotes, `=`, negation, wildcards; HostName, Port, User, IdentityFile,
CertificateFile, ProxyJump and ProxyCommand values with tokens, service names, quoting, bare
jump names, jump lists and URIs). `cases(n)` draws n configs from them with a fixed seed, each
with the host names to ask for: what OpenSSH does with them is the expected answer, never
written here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

NAMES = [
    "web",
    "Web",
    "db1",
    "gpu-a",
    "gpu-b",
    "bastion",
    "gw0",
    "MyBox",
    "mybox",
    "10.0.0.5",
    "x.example",
    "Edge.Example",
]

HOST_LINES = [
    "Host {name}",
    'Host "{name}"',
    "Host '{name}'",
    "Host={name}",
    "Host {name} {other}",
    "Host gpu-* !gpu-b",
    "Host *.example",
    "Host *.Example",
    "Host 10.0.0.*",
    "Host ?b1",
    "Host My*",
    "Host !web *",
    "Host bastion gw0",
    "HOST {name}",
]

MATCH_LINES = [
    "Match host {lname}",
    "Match host {name}",
    "Match originalhost {name}",
    "Match !host {lname}",
    "Match host {lname},{lother}",
    "Match host *.internal",
    "Match user ops",
    "Match user root",
    "Match localuser root",
    "Match final host *.internal",
    "Match canonical host {lname}",
    "Match final",
    "Match all",
    "Match originalhost {name} user admin",
]

SETTINGS = [
    "HostName %h.internal",
    "HostName 10.1.2.3",
    "HostName Real.Example",
    "HostName %h",
    "HostName db-%h",
    "HostName a%%b",
    "HostName 2001:DB8::1",
    "Hostname=gpu.internal",
    "Port 2222",
    "Port ssh",
    "Port http",
    "Port domain",
    "Port=2200",
    "Port 22",
    "User ops",
    'User "admin"',
    "User deploy # a comment",
    "User a#b",
    "user Root",
    "IdentityFile ~/.ssh/id_%h",
    "IdentityFile /keys/%r@%h:%p",
    'IdentityFile "/k/with space/%n"',
    "IdentityFile ~/.ssh/%u-%L",
    "IdentityFile /k/%C",
    "IdentityFile %d/.ssh/k_%k",
    "IdentityFile /k/%%literal",
    "IdentityFile=/k/%i-%l",
    "CertificateFile ~/.ssh/%h-cert.pub",
    "CertificateFile /certs/%r/%n",
    "ProxyJump bastion",
    "ProxyJump gw0",
    "ProxyJump %h-jump",
    "ProxyJump ops@bastion:2222",
    "ProxyJump bastion,gw0",
    "ProxyJump gw0,bastion",
    "ProxyJump ssh://jumper@edge.example:ssh",
    "ProxyJump none",
    "ProxyJump lonely-jump",
    "ProxyJump 10.0.0.5",
    "ProxyJump %r@bastion",
    "ProxyJump [2001:db8::7]:2022",
    "ProxyCommand false %h %p",
    "ProxyCommand none",
    "HostKeyAlias key-%h",
    "ConnectTimeout 7",
]


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    hosts: tuple[str, ...]


def _fill(line: str, rng: random.Random) -> str:
    name, other = rng.sample(NAMES, 2)
    return line.format(name=name, other=other, lname=name.lower(), lother=other.lower())


def _block(rng: random.Random, head: str) -> list[str]:
    return [head] + ["  " + rng.choice(SETTINGS) for _ in range(rng.randint(1, 4))]


def case(index: int) -> Case:
    """One config: optional global lines, 2-5 Host/Match blocks, optional `Host *` defaults."""
    rng = random.Random(1000 + index)
    lines = [f"# case {index}"]
    lines += [rng.choice(SETTINGS) for _ in range(rng.choice([0, 0, 1, 2]))]
    for _ in range(rng.randint(2, 5)):
        pool = HOST_LINES if rng.random() < 0.7 else MATCH_LINES
        lines += _block(rng, _fill(rng.choice(pool), rng))
    if rng.random() < 0.5:
        lines += _block(rng, "Host *")
    hosts = tuple(rng.sample(NAMES, 4))
    return Case(f"gen-{index:03d}", "\n".join(lines) + "\n", hosts)


def cases(count: int) -> list[Case]:
    return [case(i) for i in range(count)]
