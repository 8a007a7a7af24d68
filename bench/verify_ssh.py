"""Benchmark: 300 mixed checks on a box behind a jump host, factbook against the usual ways.

    .venv/bin/python bench/verify_ssh.py            # 300 checks (needs root: sshd + netns)
    .venv/bin/python bench/verify_ssh.py --quick    # 40 checks
    .venv/bin/python bench/verify_ssh.py --bashrc   # box runs root's ~/.bashrc per command

It starts the lab of tests/sshd.py (a real sshd box reachable only through a real sshd jump
host, in a network namespace), writes a knowledge base of N checks (a quarter each: file sha256,
commands, pip package versions, values in JSON files) with the expected values computed here,
and times, in one run:

  factbook ssh     `factbook verify --target box` (a CLI process; ~/.ssh/config: ProxyJump)
  factbook openssh the same through the system ssh binary (`transport: openssh`)
  openssh + CM     the same with ControlMaster/ControlPersist in ~/.ssh/config: after the
                   first run every run rides the already logged-in master connection
  testinfra        pytest-testinfra's paramiko backend, the same checks with its idioms
                   (host.file().sha256sum, host.run(), host.pip().version,
                   host.file().content_string + json), one process. Its paramiko backend ignores
                   ProxyJump, so its ssh config gives `ProxyCommand ssh -W %h:%p jump`: one
                   connection through the jump, reused for every command, as ProxyJump would.
  ssh per check    one `ssh box CMD` per check (ProxyJump from the config, a new connection each)
  ssh box true     the bare cost of one connection through the jump
  factbook local   the same batch run on this machine (`--target local`)

Every contender's answers are compared with the expected values, so a fast wrong run shows.
The fast three run --repeat times (5), interleaved, and report medians: this machine is shared.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from sshd import Lab, start_lab  # noqa: E402

KINDS = ("hash", "cmd", "pkg", "json")

TESTINFRA_RUNNER = r"""
import json, sys, time
import testinfra
spec = json.load(open(sys.argv[1]))
started = time.monotonic()
host = testinfra.get_host("paramiko://tbox", ssh_config=spec["ssh_config"])
answers = []
for c in spec["checks"]:
    if c["kind"] == "hash":
        answers.append(host.file(c["path"]).sha256sum)
    elif c["kind"] == "cmd":
        answers.append(host.run(c["shell"]).stdout)
    elif c["kind"] == "pkg":
        answers.append(host.pip(c["name"]).version)
    else:
        data = json.loads(host.file(c["path"]).content_string)
        answers.append(data[c["key"]])
print(json.dumps({"answers": answers, "seconds": time.monotonic() - started}))
"""


def build_checks(data: Path, n: int, packages: dict[str, str]) -> list[dict[str, Any]]:
    """n checks, a quarter of each kind, each with its expected answer."""
    rng = random.Random(20261129)
    data.mkdir(parents=True, exist_ok=True)
    names = sorted(packages)
    per_file = 16
    checks: list[dict[str, Any]] = []
    for i in range(n):
        kind = KINDS[i % 4]
        if kind == "hash":
            path = data / f"blob{i}.bin"
            blob = rng.randbytes(64 * 1024)
            path.write_bytes(blob)
            checks.append(
                {"kind": kind, "path": str(path), "want": hashlib.sha256(blob).hexdigest()}
            )
        elif kind == "cmd":
            shell = f"echo check {i} on $(uname -s)"
            checks.append({"kind": kind, "shell": shell, "want": f"check {i} on Linux\n"})
        elif kind == "pkg":
            name = names[(i // 4) % len(names)]
            checks.append({"kind": kind, "name": name, "want": packages[name]})
        else:
            path = data / f"conf{(i // 4) // per_file}.json"
            doc = json.loads(path.read_text()) if path.exists() else {}
            key, value = f"key{i}", rng.randint(0, 10**6)
            doc[key] = value
            path.write_text(json.dumps(doc))
            checks.append({"kind": kind, "path": str(path), "key": key, "want": value})
    return checks


def fact_of(i: int, c: dict[str, Any]) -> dict[str, Any]:
    if c["kind"] == "hash":
        check = {"probe": "file.sha256", "args": {"path": c["path"]}, "expect": {"eq": c["want"]}}
    elif c["kind"] == "cmd":
        argv = ["sh", "-c", c["shell"]]
        check = {
            "probe": "cmd",
            "args": {"argv": argv},
            "expect": {"path": "stdout", "eq": c["want"]},
        }
    elif c["kind"] == "pkg":
        check = {"probe": "pkg.version", "args": {"name": c["name"]}, "expect": {"eq": c["want"]}}
    else:
        args = {"path": c["path"], "key": c["key"]}
        check = {"probe": "config.value", "args": args, "expect": {"eq": c["want"]}}
    return {
        "id": f"bench.{c['kind']}.c{i:04d}",
        "category": "software",
        "title": f"bench check {i}",
        "statement": f"bench check {i} ({c['kind']})",
        "status": "assumed",
        "sources": [{"note": "bench/verify_ssh.py"}],
        "check": check,
    }


def write_kb(root: Path, checks: list[dict[str, Any]], python: str) -> None:
    import yaml

    (root / "facts").mkdir(parents=True)
    targets = {
        "box": {"host": "box", "python": python, "description": "the lab box, via ~/.ssh/config"},
        "box-openssh": {"host": "box", "transport": "openssh", "python": python},
        "box-cm": {"host": "box-cm", "transport": "openssh", "python": python},
        "local": {"transport": "local", "python": python},
    }
    (root / "targets.yaml").write_text(yaml.safe_dump({"targets": targets}))
    facts = [fact_of(i, c) for i, c in enumerate(checks)]
    (root / "facts" / "bench.yaml").write_text(yaml.safe_dump({"facts": facts}, sort_keys=False))


def add_control_master(lab: Lab, work: Path) -> Path:
    """A `box-cm` alias in the lab's ssh config: the box with ControlMaster/ControlPersist."""
    sockets = work / "cm"
    sockets.mkdir()
    text = lab.ssh_config.read_text()
    box = text[text.index("Host box\n") :].replace("Host box\n", "Host box-cm\n", 1)
    extra = f"  ControlMaster auto\n  ControlPath {sockets}/%C\n  ControlPersist 120\n"
    lab.ssh_config.write_text(text + "\n" + box.rstrip("\n") + "\n" + extra)
    return sockets


def ssh_out(lab: Lab, *remote: str) -> str:
    return subprocess.run(lab.ssh_argv(*remote), check=True, capture_output=True, text=True).stdout


def time_factbook(
    kb: Path, target: str, env: dict[str, str], jobs: int | None
) -> tuple[float, int, int]:
    argv = [
        sys.executable,
        "-c",
        "from factbook.commands.cli import main; main()",
        "--root",
        str(kb),
    ]
    argv += ["verify", "--target", target, "--format", "json", "--no-save", "-q"]
    argv += ["--jobs", str(jobs)] if jobs else []
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"factbook --target {target} failed ({proc.returncode}): {proc.stderr}")
    summary = json.loads(proc.stdout)["summary"]
    return seconds, summary["pass"], sum(summary.values())


def matches(c: dict[str, Any], answer: Any) -> bool:
    if c["kind"] in ("hash", "pkg"):
        return str(answer).strip() == c["want"]
    return answer == c["want"]


def time_testinfra(lab: Lab, checks: list[dict[str, Any]], work: Path) -> tuple[float, int]:
    config = work / "testinfra_ssh_config"
    config.write_text(
        "\n".join(
            [
                "Host tbox",
                f"  HostName {lab.box.host}",
                f"  Port {lab.box.port}",
                f"  User {lab.user}",
                f"  IdentityFile {lab.home / '.ssh' / 'id_ed25519'}",
                f"  ProxyCommand ssh -F {lab.ssh_config} -W %h:%p jump",
                "",
            ]
        )
    )
    spec = work / "testinfra_spec.json"
    spec.write_text(json.dumps({"ssh_config": str(config), "checks": checks}))
    runner = work / "testinfra_runner.py"
    runner.write_text(TESTINFRA_RUNNER)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(runner), str(spec)], capture_output=True, text=True)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"testinfra run failed: {proc.stderr[-3000:]}")
    answers = json.loads(proc.stdout.strip().splitlines()[-1])["answers"]
    return seconds, sum(matches(c, a) for c, a in zip(checks, answers, strict=True))


def per_check_command(c: dict[str, Any]) -> str:
    if c["kind"] == "hash":
        return f"sha256sum {shlex.quote(c['path'])} | cut -d ' ' -f 1"
    if c["kind"] == "cmd":
        return c["shell"]
    if c["kind"] == "pkg":
        return f"pip show {shlex.quote(c['name'])} | grep Version: | cut -d' ' -f2"
    return f"cat {shlex.quote(c['path'])}"


def time_ssh_per_check(lab: Lab, checks: list[dict[str, Any]]) -> tuple[float, int]:
    good = 0
    started = time.monotonic()
    for c in checks:
        out = subprocess.run(
            lab.ssh_argv(per_check_command(c)), capture_output=True, text=True
        ).stdout
        answer = json.loads(out)[c["key"]] if c["kind"] == "json" and out else out
        good += matches(c, answer)
    return time.monotonic() - started, good


def time_bare_ssh(lab: Lab, repeat: int = 5) -> float:
    samples = []
    for _ in range(repeat):
        started = time.monotonic()
        subprocess.run(lab.ssh_argv("true"), check=True, capture_output=True)
        samples.append(time.monotonic() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--checks", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="40 checks")
    parser.add_argument("--bashrc", action="store_true", help="box sources ~/.bashrc per command")
    parser.add_argument("--skip-slow", action="store_true", help="no testinfra, no ssh per check")
    parser.add_argument("--no-per-check", action="store_true", help="no ssh per check")
    parser.add_argument(
        "--against",
        metavar="SRC",
        help="also time factbook ssh from another source tree (e.g. main's src/), interleaved",
    )
    parser.add_argument("--jobs", type=int, help="factbook's checks at once (its default: 16)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of the fast contenders (5)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures here")
    args = parser.parse_args()
    n = 40 if args.quick else args.checks
    # bytecode for every module, as an installed package has (PYTHONDONTWRITEBYTECODE would
    # otherwise make every factbook run compile itself from source)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "src")], check=True,
                   capture_output=True)  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="factbook-bench-"))
    lab = start_lab(work / "lab", skip_bashrc=not args.bashrc)
    try:
        # this checkout's factbook (ROOT/src, compiled above), whatever the venv has installed
        # (an editable install may point at another checkout)
        paths = [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "HOME": str(lab.home), "PYTHONPATH": os.pathsep.join(paths)}
        env.pop("SSH_AUTH_SOCK", None)
        python = ssh_out(lab, "command -v python3").strip()
        code = "import importlib.metadata as m, json; "
        code += "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
        packages = json.loads(ssh_out(lab, shlex.join([python, "-c", code])))
        checks = build_checks(work / "data", n, packages)
        write_kb(work / "kb", checks, python)
        print(
            f"{n} checks ({n // 4} each: file sha256, command, pip version, JSON value); box "
            f"python {python}; box {'sources' if args.bashrc else 'skips'} ~/.bashrc; "
            f"box isolated behind the jump: {lab.isolated}; "
            f"factbook --jobs {args.jobs or 'default'}",
            flush=True,
        )
        rows: dict[str, dict[str, Any]] = {}

        def row(name: str, seconds: float, checks: int, ok: int, samples: list[float]) -> None:
            rows[name] = {"seconds": seconds, "checks": checks, "ok": ok, "samples": samples}
            print(f"  {name}: {seconds:.2f} s", file=sys.stderr, flush=True)

        # The fast contenders run `--repeat` times, interleaved so that they share the machine's
        # load at the time (medians reported); the slow ones once.
        add_control_master(lab, work)
        fast: dict[str, list[tuple[float, int, int]]] = {
            k: [] for k in ("ssh", "openssh", "cm", "local", "bare", "against")
        }
        other = env
        if args.against:
            subprocess.run([sys.executable, "-m", "compileall", "-q", args.against],
                           check=True, capture_output=True)  # fmt: skip
            other = {**env, "PYTHONPATH": os.pathsep.join([args.against, *sys.path[1:]])}
            # its own copy: the knowledge-base cache is keyed on factbook's code, so a shared
            # one would be parsed again by every run that follows the other tree's
            shutil.copytree(work / "kb", work / "kb-against")
        for i in range(args.repeat):
            fast["bare"].append((time_bare_ssh(lab, 1), 0, 0))
            # with --against, the two trees' `box` runs take turns right after `ssh box true`:
            # that slot measured 10-15% slower than the one after `local` (same tree, load ~6)
            ab = [("ssh", work / "kb", env), ("against", work / "kb-against", other)]
            for key, kb, run_env in ab[:: -1 if i % 2 else 1] if args.against else ab[:1]:
                fast[key].append(time_factbook(kb, "box", run_env, args.jobs))
            fast["openssh"].append(time_factbook(work / "kb", "box-openssh", env, args.jobs))
            fast["cm"].append(time_factbook(work / "kb", "box-cm", env, args.jobs))
            fast["local"].append(time_factbook(work / "kb", "local", env, args.jobs))
        subprocess.run(
            ["ssh", "-F", str(lab.ssh_config), "-O", "exit", "box-cm"], capture_output=True
        )
        for key, name in (
            ("bare", "ssh box true (via jump)"),
            ("ssh", "factbook ssh (via jump)"),
            ("openssh", "factbook openssh (via jump)"),
            ("cm", "factbook openssh + CM (warm)"),
            ("local", "factbook local"),
            ("against", f"factbook ssh, {args.against}"),
        ):
            if not fast[key]:
                continue
            samples = [t for t, _, _ in fast[key]]
            worst_ok = min(ok for _, ok, _ in fast[key])
            row(name, statistics.median(samples), fast[key][0][2], worst_ok, samples)
        bare = rows["ssh box true (via jump)"]["seconds"]
        if not args.skip_slow:
            s, ok = time_testinfra(lab, checks, work)
            row("testinfra paramiko (via jump)", s, n, ok, [s])
            if not args.no_per_check:
                s, ok = time_ssh_per_check(lab, checks)
                row("one ssh per check (via jump)", s, n, ok, [s])
        report(rows, bare)
        if args.json:
            Path(args.json).write_text(json.dumps({"checks": n, "rows": rows}, indent=1))
    finally:
        lab.stop()
        shutil.rmtree(work, ignore_errors=True)


def report(rows: dict[str, dict[str, Any]], bare: float) -> None:
    fb = rows["factbook ssh (via jump)"]["seconds"]
    print(f"\n{'contender':32} {'checks':>6} {'right':>6} {'seconds':>9} {'x factbook ssh':>15}")
    for name, row in rows.items():
        ratio = row["seconds"] / fb
        right = row["ok"] if row["checks"] else "-"
        print(
            f"{name:32} {row['checks'] or '-':>6} {right:>6} {row['seconds']:9.2f} {ratio:14.1f}x"
        )
    local = rows["factbook local"]["seconds"]
    print(
        f"\nfactbook ssh - factbook local = {fb - local:.2f} s; one connection through the jump "
        f"= {bare:.2f} s: {'within' if fb <= local + bare else 'OVER'} budget"
    )
    for name in ("testinfra paramiko (via jump)", "one ssh per check (via jump)"):
        if name in rows:
            ratio = rows[name]["seconds"] / fb
            print(f"factbook ssh is {ratio:.0f}x faster than {name}")


if __name__ == "__main__":
    main()
