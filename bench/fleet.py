"""Benchmark: one fleet fact set on N real sshd boxes behind one jump, factbook against Ansible.

    .venv/bin/python bench/fleet.py                      # N = 1, 8, 32, 64 (needs root: netns)
    .venv/bin/python bench/fleet.py --sizes 1,8 --json out.json
    .venv/bin/python bench/fleet.py --no-ansible         # factbook only
    .venv/bin/python bench/fleet.py --no-ansible --against /path/to/main/src  # A/B, interleaved
    .venv/bin/python bench/fleet.py --no-ansible --sizes 64 --timeline 0.05   # where it waited

It starts the lab of tests/sshd.py (a jump sshd and a box sshd in a network namespace) and
N-1 more box sshds beside the box (tests/fleet_lab.py): every box is reachable only through the
one jump. A knowledge base of 100 mixed checks (file sha256 and size and existence, commands,
values in JSON files, environment variables; expected values computed here) targets group
`fleet`. For each N, in one run:

  factbook   `factbook verify --target @fleet --forks F` (a CLI process; F = N unless --forks)
  ansible    `ansible all -i INVENTORY -m setup -f F`: ansible-core's fact gathering on the same
             boxes, through the same jump (`-J`), with the same forks; it checks nothing

and reports, for each: wall time; the boxes' CPU seconds divided by this machine's cores, the
floor any tool meets when all boxes share these cores; the client's own CPU seconds (the
tool's process tree); and how many connections and logins the jump logged. CPU seconds come
from a cpuacct cgroup per side (boxes, jump, client) where the bench can make them (root),
else from /proc (each sshd's own and reaped children's CPU, the client's rusage), which
misses what no parent waits for: 0.7 of the boxes' 13.7 core-seconds at N = 64. Ratios
printed: factbook wall / floor, factbook wall / ansible wall, client CPU growth per added
box, jump connections. For each factbook run it also says where the machine's core-seconds
went (boxes, client, jump, the kernel's interrupt work, steal, idle, other processes) and the
wall that the work alone allows ((boxes + client + jump) / cores): the client shares
the boxes' cores here, so the wall / floor ratio can never be below that bound / floor.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fleet_lab import add_boxes, fleet_targets_yaml, stop_boxes  # noqa: E402
from sshd import Lab, SSHDInstance, start_lab  # noqa: E402

CHECKS = 100
KINDS = ("sha256", "cmd", "json", "env", "exists", "size")
BIN = Path(sys.executable).parent


def build_facts(data: Path) -> list[dict[str, Any]]:
    """CHECKS facts targeting group `fleet`, a sixth of each kind, expected values from here."""
    data.mkdir(parents=True, exist_ok=True)
    facts = []
    for i in range(CHECKS):
        kind = KINDS[i % len(KINDS)]
        path = data / f"f{i:03d}.bin"
        blob = hashlib.sha256(str(i).encode()).digest() * (8 + i)
        path.write_bytes(blob)
        if kind == "sha256":
            check = {"probe": "file.sha256", "args": {"path": str(path)}}
            check["expect"] = {"eq": hashlib.sha256(blob).hexdigest()}
        elif kind == "cmd":
            check = {"probe": "cmd", "args": {"argv": ["echo", f"check {i}"]}}
            check["expect"] = {"path": "stdout", "eq": f"check {i}\n"}
        elif kind == "json":
            cfg = data / f"c{i:03d}.json"
            cfg.write_text(json.dumps({"model": {"layers": i, "name": f"m{i}"}}))
            check = {"probe": "config.value", "args": {"path": str(cfg), "key": "model.layers"}}
            check["expect"] = {"eq": i}
        elif kind == "env":
            name = "PATH" if i % 2 else f"FACTBOOK_BENCH_UNSET_{i}"
            check = {"probe": "env.var", "args": {"name": name}}
            check["expect"] = {"exists": bool(i % 2)}
        elif kind == "exists":
            check = {"probe": "file.exists", "args": {"path": str(path)}, "expect": {"eq": True}}
        else:
            check = {"probe": "file.size", "args": {"path": str(path)}}
            check["expect"] = {"eq": len(blob)}
        facts.append(
            {
                "id": f"fleet.{kind}.c{i:03d}",
                "category": "software",
                "title": f"check {i}",
                "statement": f"fleet bench check {i} ({kind})",
                "status": "assumed",
                "sources": [{"note": "bench/fleet.py"}],
                "target": "fleet",
                "check": check,
            }
        )
    return facts


def _cpu_ticks(pid: int) -> int:
    """utime + stime + cutime + cstime of pid (reaped children included), in clock ticks."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return sum(int(f) for f in fields[11:15])


def _boxes_cpu(boxes: list[SSHDInstance]) -> float:
    ticks = sum(_cpu_ticks(b.proc.pid) for b in boxes if b.proc is not None)
    return ticks / os.sysconf("SC_CLK_TCK")


def _machine_cpu() -> tuple[float, float]:
    """(idle, all) core-seconds this machine has spent since boot (/proc/stat's cpu line)."""
    fields = _stat_fields()
    tick = os.sysconf("SC_CLK_TCK")
    return (fields[3] + fields[4]) / tick, sum(fields[:8]) / tick


def _kernel_cpu() -> tuple[float, float]:
    """(irq + softirq, steal) core-seconds since boot: the kernel's own packet work (the
    boxes', the jump's and the client's TCP and veth traffic is processed there, charged to
    no process) and the time the hypervisor gave these cores to someone else."""
    fields = _stat_fields()
    tick = os.sysconf("SC_CLK_TCK")
    return (fields[5] + fields[6]) / tick, fields[7] / tick


def _stat_fields() -> list[int]:
    return [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]


class CpuGroups:
    """CPU accounting groups (cgroup v1 cpuacct, or v2) for the boxes, the jump and the
    client: every CPU second a process in one spends is counted, including its descendants
    that no parent waits for (which /proc's reaped-children figures miss: 0.6-0.7 of the
    0.85 core-seconds the bench once called "other" at N = 64 were inside its own process
    tree). None of this where no cgroup file system can be written (not root): the
    /proc figures then."""

    def __init__(self) -> None:
        v1 = Path("/sys/fs/cgroup/cpuacct")
        v2 = Path("/sys/fs/cgroup")
        self.base: Path | None = None
        self.v2 = False
        for base, v2_layout in ((v1, False), (v2, True)):
            if v2_layout and not (v2 / "cgroup.controllers").exists():
                continue
            if not base.is_dir():
                continue
            group = base / f"factbook-fleet-bench-{os.getpid()}"
            try:
                group.mkdir()
                for name in ("boxes", "jump", "client"):
                    (group / name).mkdir()
            except OSError:
                continue
            self.base, self.v2 = group, v2_layout
            break

    def join(self, name: str, pid: int) -> bool:
        """Move `pid` into group `name` (the processes it starts later follow)."""
        if self.base is None:
            return False
        try:
            (self.base / name / "cgroup.procs").write_text(str(pid))
        except OSError:
            return False
        return True

    def seconds(self, name: str) -> float | None:
        if self.base is None:
            return None
        if self.v2:
            stat = (self.base / name / "cpu.stat").read_text().split()
            return int(stat[stat.index("usage_usec") + 1]) / 1e6
        return int((self.base / name / "cpuacct.usage").read_text()) / 1e9

    def remove(self) -> None:
        """Empty groups only (every process has left by now)."""
        if self.base is None:
            return
        for name in ("boxes", "jump", "client", ""):
            with contextlib.suppress(OSError):
                (self.base / name).rmdir()


GROUPS: list[CpuGroups] = []  # main's, when the bench made them


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run_sampled(
    argv: list[str], env: dict[str, str], every: float, join: Any = None
) -> tuple[Any, list[Any]]:
    """Run argv as subprocess.run would, sampling every `every` s: (seconds, the client's CPU
    seconds, the machine's idle core-seconds, the seconds the client's threads waited
    runnable (schedstat: ready to run, no core given))."""
    tick = os.sysconf("SC_CLK_TCK")
    waits: dict[str, int] = {}
    samples = []
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err, preexec_fn=join)
        started, idle0 = time.monotonic(), _machine_cpu()[0]
        while proc.poll() is None:
            time.sleep(every)
            used = _cpu_ticks(proc.pid)  # a live process: its threads' CPU so far
            with contextlib.suppress(OSError):
                for tid in os.listdir(f"/proc/{proc.pid}/task"):
                    with contextlib.suppress(OSError, ValueError):
                        stat = Path(f"/proc/{proc.pid}/task/{tid}/schedstat").read_text()
                        waits[tid] = int(stat.split()[1])
            if used:
                samples.append((time.monotonic() - started, used / tick,
                                _machine_cpu()[0] - idle0, sum(waits.values()) / 1e9))  # fmt: skip
        proc.wait(timeout=1800)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(
            argv, proc.returncode, out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
        )  # fmt: skip
    return done, samples


def timed(
    argv: list[str],
    env: dict[str, str],
    boxes: list[SSHDInstance],
    lab: Lab,
    timeline: float = 0.0,
) -> dict[str, Any]:
    """Run argv; wall, client CPU, box CPU, jump connections and logins it caused (and with
    `timeline`, samples of the client and the machine every that many seconds)."""
    log_at = len(lab.jump.log_text())
    groups = GROUPS[0] if GROUPS and GROUPS[0].base is not None else None
    box_cpu, client_cpu = _boxes_cpu(boxes), _children_cpu()
    jump_cpu = _boxes_cpu([lab.jump])
    reaped = (box_cpu, client_cpu, jump_cpu)  # /proc's figures, shown beside the groups'
    if groups is not None:  # whole groups: box_cpu counts every box, not only the first n
        box_cpu, jump_cpu = groups.seconds("boxes") or 0.0, groups.seconds("jump") or 0.0
        client_cpu = groups.seconds("client") or 0.0
    idle, every = _machine_cpu()
    irq, steal = _kernel_cpu()
    started = time.monotonic()
    samples: list[Any] = []
    join = (lambda: groups.join("client", os.getpid())) if groups is not None else None
    if timeline > 0:
        done, samples = _run_sampled(argv, env, timeline, join)
    else:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=1800, preexec_fn=join
        )
    wall = time.monotonic() - started
    idle_after, every_after = _machine_cpu()
    irq_after, steal_after = _kernel_cpu()
    time.sleep(0.5)  # sshd session processes are reaped just after the client leaves
    jump_log = lab.jump.log_text()[log_at:]
    by_proc = (
        _boxes_cpu(boxes) - reaped[0],
        _children_cpu() - reaped[1],
        _boxes_cpu([lab.jump]) - reaped[2],
    )
    boxes_s, client_s, jump_s = by_proc
    if groups is not None:
        boxes_s = (groups.seconds("boxes") or 0.0) - box_cpu
        client_s = (groups.seconds("client") or 0.0) - client_cpu
        jump_s = (groups.seconds("jump") or 0.0) - jump_cpu
    return {
        "rc": done.returncode,
        "wall_s": round(wall, 3),
        "accounting": "cgroup" if groups is not None else "proc",
        "client_cpu_s": round(client_s, 3),
        "boxes_cpu_s": round(boxes_s, 3),
        "jump_cpu_s": round(jump_s, 3),
        # /proc's figures (each tree's reaped children), which miss what no parent waits for
        "proc_boxes_client_jump_s": [round(x, 3) for x in by_proc],
        # every core-second of the machine during the run: idle ones, and all of them (what
        # neither the boxes, the client nor the jump used went to other processes)
        "idle_core_s": round(idle_after - idle, 2),
        "machine_core_s": round(every_after - every, 2),
        "irq_core_s": round(irq_after - irq, 2),
        "steal_core_s": round(steal_after - steal, 2),
        "jump_connections": jump_log.count("Connection from"),
        "jump_logins": jump_log.count("Accepted publickey"),
        "stdout": done.stdout,
        "stderr": done.stderr[-2000:],
        "timeline": samples,
    }


def timeline_report(samples: list[Any], step: float = 0.5) -> str:
    """The samples per `step` seconds: the cores the client used, the idle cores, and how
    many of the client's threads waited to run on average (the scheduler's queue for it)."""
    lines = ["  time s | client cores | idle cores | client threads waiting to run"]
    last = (0.0, 0.0, 0.0, 0.0)
    for sample in samples:
        if sample[0] - last[0] >= step or sample is samples[-1]:
            span = max(sample[0] - last[0], 1e-9)
            rates = [(sample[i] - last[i]) / span for i in (1, 2, 3)]
            lines.append(
                f"  {sample[0]:6.2f} | {rates[0]:12.2f} | {rates[1]:10.2f} | {rates[2]:6.1f}"
            )
            last = sample
    return "\n".join(lines)


def write_inventory(path: Path, lab: Lab, boxes: list[SSHDInstance], home: Path) -> None:
    """Ansible's view of the same boxes: ProxyJump through the jump with the lab's ssh config."""
    config = home / ".ssh" / "config"
    ssh_args = (
        f"-F {config} -J jump -o UserKnownHostsFile={home / '.ssh' / 'known_hosts'} "
        "-o StrictHostKeyChecking=yes"
    )
    lines = ["[fleet]"]
    lines += [
        f"box-{i + 1:03d} ansible_host={b.host} ansible_port={b.port}" for i, b in enumerate(boxes)
    ]
    lines += [
        "",
        "[fleet:vars]",
        f"ansible_user={lab.user}",
        f"ansible_ssh_private_key_file={home / '.ssh' / 'id_ed25519'}",
        f"ansible_ssh_common_args={shlex.quote(ssh_args)}",
        "ansible_python_interpreter=/usr/bin/python3",
    ]
    path.write_text("\n".join(lines) + "\n")


def run_size(
    n: int,
    forks: int,
    lab: Lab,
    boxes: list[SSHDInstance],
    work: Path,
    ansible: bool,
    against: str | None = None,
    timeline: float = 0.0,
) -> dict[str, Any]:
    home = lab.home
    kb = work / f"kb-{n}"
    (kb / "facts").mkdir(parents=True, exist_ok=True)
    (kb / "facts" / "fleet.yaml").write_text(json.dumps({"facts": build_facts(work / "data")}))
    (kb / "targets.yaml").write_text(fleet_targets_yaml(lab, boxes[:n], home))
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT / "src")}
    env.pop("SSH_AUTH_SOCK", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode as an installed package has it
    argv = [str(BIN / "factbook"), "--root", str(kb), "verify", "--target", "@fleet"]
    argv += ["--forks", str(forks), "--no-save", "--format", "json", "-q"]
    fb = timed(argv, env, boxes[:n], lab, timeline)
    summary = json.loads(fb.pop("stdout"))["summary"] if fb["rc"] in (0, 1, 3) else {}
    fb["summary"] = summary
    out: dict[str, Any] = {"n": n, "forks": forks, "factbook": fb}
    if against:  # the same run from another source tree, right after (the same load)
        other = timed(argv, {**env, "PYTHONPATH": against}, boxes[:n], lab)
        other["summary"] = (
            json.loads(other.pop("stdout"))["summary"] if other["rc"] in (0, 1, 3) else {}
        )
        out["against"] = other
    if ansible:
        inventory = work / f"inventory-{n}.ini"
        write_inventory(inventory, lab, boxes[:n], home)
        aenv = {
            **env,
            "ANSIBLE_HOME": str(work / "ansible"),
            "ANSIBLE_SSH_CONTROL_PATH_DIR": str(work / "cp"),
            "ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=2s",
            "ANSIBLE_LOCALHOST_WARNING": "false",
        }
        argv = [str(BIN / "ansible"), "all", "-i", str(inventory), "-m", "setup"]
        argv += ["-f", str(forks), "-o"]
        ans = timed(argv, aenv, boxes[:n], lab)
        stdout = ans.pop("stdout")
        ans["hosts_ok"] = stdout.count("SUCCESS")
        out["ansible"] = ans
        time.sleep(2.5)  # ControlPersist masters leave before the next size
    return out


def report(rows: list[dict[str, Any]], cores: int) -> str:
    lines = [
        f"{'N':>3} {'forks':>5} | {'factbook s':>10} {'floor s':>8} {'wall/floor':>10} "
        f"{'client cpu s':>12} {'jump conn':>9} | {'ansible s':>9} {'fb/ansible':>10} "
        f"{'ans jump conn':>13}"
    ]
    for row in rows:
        fb = row["factbook"]
        floor = fb["boxes_cpu_s"] / cores
        ans = row.get("ansible")
        line = (
            f"{row['n']:>3} {row['forks']:>5} | {fb['wall_s']:>10.2f} {floor:>8.2f} "
            f"{fb['wall_s'] / max(floor, 1e-9):>10.2f} {fb['client_cpu_s']:>12.2f} "
            f"{fb['jump_connections']:>9} |"
        )
        if ans:
            line += (
                f" {ans['wall_s']:>9.2f} {fb['wall_s'] / ans['wall_s']:>10.2f} "
                f"{ans['jump_connections']:>13}"
            )
        lines.append(line)
    if len(rows) >= 2:
        a, b = rows[0], rows[-1]
        for key, name in (("factbook", "this tree"), ("against", "--against")):
            if key in a and key in b:
                slope = (b[key]["client_cpu_s"] - a[key]["client_cpu_s"]) / (b["n"] - a["n"])
                lines.append(
                    f"client CPU growth ({name}): {slope * 1000:.1f} ms per added box "
                    "(target <= 20)"
                )
    for row in rows:
        if "against" in row:
            o = row["against"]
            floor = o["boxes_cpu_s"] / cores
            lines.append(
                f"N={row['n']} --against: wall {o['wall_s']:.2f} s, floor {floor:.2f} s, "
                f"wall/floor {o['wall_s'] / max(floor, 1e-9):.2f}, client cpu "
                f"{o['client_cpu_s']:.2f} s, {o['summary']}"
            )
    lines.append(
        "where the cores went (core-seconds; irq = the kernel's interrupt and packet work, "
        "charged to no process; other = processes outside the bench):"
    )
    for row in rows:
        for key, name in (("factbook", "this tree"), ("against", "--against")):
            if key in row:
                lines.append(f"  N={row['n']} {name}: {_cores(row[key], cores)}")
    lines.append(f"load average at the end: {os.getloadavg()[0]:.1f}")
    return "\n".join(lines)


def _cores(run: dict[str, Any], cores: int) -> str:
    """Where the run's core-seconds went, and the wall the work alone allows: the boxes, the
    client and the jump share the same cores, so even without an idle core the wall is at
    least their CPU / cores."""
    work = run["boxes_cpu_s"] + run["client_cpu_s"] + run["jump_cpu_s"]
    irq, steal = run.get("irq_core_s", 0.0), run.get("steal_core_s", 0.0)
    other = run["machine_core_s"] - run["idle_core_s"] - work - irq - steal
    bound = work / cores
    with_irq = (work + irq) / cores
    floor = run["boxes_cpu_s"] / cores
    return (
        f"boxes {run['boxes_cpu_s']:.2f}, client {run['client_cpu_s']:.2f}, jump "
        f"{run['jump_cpu_s']:.2f}, irq {irq:.2f}, steal {steal:.2f}, idle "
        f"{run['idle_core_s']:.2f}, other {max(other, 0):.2f} of {run['machine_core_s']:.2f}; "
        f"(boxes + client + jump) / {cores} = {bound:.2f} s, wall / that "
        f"{run['wall_s'] / max(bound, 1e-9):.2f}; with irq {with_irq:.2f} s "
        f"({with_irq / max(floor, 1e-9):.2f}x the floor)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,8,32,64")
    parser.add_argument("--forks", type=int, help="forks for both tools (default: N)")
    parser.add_argument("--no-ansible", action="store_true")
    parser.add_argument("--json", metavar="FILE", help="write every figure here")
    parser.add_argument(
        "--against", metavar="SRC", help="also run factbook from another source tree, interleaved"
    )
    parser.add_argument(
        "--timeline", type=float, default=0.0, metavar="S",
        help="sample this tree's run at the largest N every S seconds (e.g. 0.05): where the "
        "client ran and where the cores idled",
    )  # fmt: skip
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    ansible = not args.no_ansible and (BIN / "ansible").exists()
    cores = os.cpu_count() or 1
    for src in [ROOT / "src", *([args.against] if args.against else [])]:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)],
                       check=True, capture_output=True)  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="factbook-fleet-"))
    lab = start_lab(work / "lab")
    extra: list[SSHDInstance] = []
    rows = []
    groups = CpuGroups()
    GROUPS[:] = [groups]
    try:
        extra = add_boxes(lab, max(sizes) - 1)
        boxes = [lab.box, *extra]
        grouped = (
            all(groups.join("boxes", b.proc.pid) for b in boxes if b.proc is not None)
            and lab.jump.proc is not None
            and groups.join("jump", lab.jump.proc.pid)
        )
        if not grouped:
            groups.base = None  # partly moved: the /proc figures for every run instead
        how = "cgroups" if grouped else "/proc: reaped children only"
        print(
            f"{len(boxes)} boxes behind one jump (isolated={lab.isolated}), {cores} cores; "
            f"CPU accounted by {how}"
        )
        for n in sizes:
            sampled = args.timeline if n == max(sizes) else 0.0
            row = run_size(n, args.forks or n, lab, boxes, work, ansible, args.against, sampled)
            rows.append(row)
            fb = row["factbook"]
            print(
                f"N={n}: factbook {fb['wall_s']:.2f}s rc={fb['rc']} {fb['summary']}"
                + (
                    f"; ansible {row['ansible']['wall_s']:.2f}s rc={row['ansible']['rc']} "
                    f"ok={row['ansible']['hosts_ok']}"
                    if "ansible" in row
                    else ""
                ),
                flush=True,
            )
            if fb["rc"] != 0:
                print(fb["stderr"], file=sys.stderr)
    finally:
        stop_boxes(extra)
        lab.stop()
        groups.remove()
        shutil.rmtree(work, ignore_errors=True)
    print(report(rows, cores))
    if rows and rows[-1]["factbook"]["timeline"]:
        print(f"timeline of this tree's run at N={rows[-1]['n']}:")
        print(timeline_report(rows[-1]["factbook"]["timeline"]))
    if args.json:
        Path(args.json).write_text(json.dumps({"cores": cores, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
