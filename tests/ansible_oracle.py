"""Ansible's own view of many inventories, from one Python start: run with the Python that has
ansible-core, as `python ansible_oracle.py CASES_DIR [--ssh NAME...]`.

For every case folder under CASES_DIR (each holding `inventory`, the path of its inventory
relative to the folder), a forked child runs `ansible-inventory -i INV --list` through
ansible-core's own entry point (InventoryCLI.cli_executor, what the `ansible-inventory`
script calls), so each case gets a fresh Ansible and the slow import is paid once. For the
cases named after --ssh, a second child runs `ansible -i INV all -m ping` (AdHocCLI) with
`ansible_ssh_executable` pointing at a tracer per host: a symlink named after the host to a
small script that records the argv Ansible's ssh connection built and exits 255
(unreachable), so nothing is contacted. Two children run at a time. Writes CASE/list.json,
CASE/list.rc and CASE/ssh/HOST.json; stderr of each child goes to CASE/*.err.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

TRACER = """#!{python}
import json, sys
from pathlib import Path
me = Path(sys.argv[0])  # the link, named after the inventory host
(me.parent.parent / "ssh" / (me.name + ".json")).write_text(json.dumps(sys.argv[1:]))
sys.exit(255)  # what ssh exits with when it cannot connect
"""


def _child(case: Path, kind: str) -> int:
    """Fork one Ansible command for `case`; returns the child's pid."""
    pid = os.fork()
    if pid:
        return pid
    code = 99
    try:
        os.chdir(case)  # no group_vars/ beside a playbook dir: the cwd holds only the case
        err = os.open(case / f"{kind}.err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(err, 2)
        os.dup2(err, 1)
        inventory = (case / "inventory").read_text().strip()
        if kind == "list":
            from ansible.cli.inventory import InventoryCLI

            argv = ["ansible-inventory", "-i", inventory, "--list", "--output", "list.json"]
            code = InventoryCLI.cli_executor(argv)
        else:
            from ansible.cli.adhoc import AdHocCLI

            tracer = f"{case / 'tracers'}/{{{{ inventory_hostname }}}}"
            argv = ["ansible", "-i", inventory, "all", "-m", "ping", "-f", "4"]
            argv += ["-e", f"ansible_ssh_executable={tracer}"]
            code = AdHocCLI.cli_executor(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    except BaseException:
        code = 98
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _prepare_ssh(case: Path, tracer: Path) -> None:
    """One tracer link per host Ansible listed, so each trace names its inventory host."""
    listed = json.loads((case / "list.json").read_text())
    (case / "tracers").mkdir(exist_ok=True)
    (case / "ssh").mkdir(exist_ok=True)
    hosts = set(listed["_meta"]["hostvars"])  # only hosts with variables are listed there
    hosts |= {h for name, g in listed.items() if name != "_meta" for h in g.get("hosts", [])}
    for host in sorted(hosts):
        link = case / "tracers" / host
        if not link.exists():
            link.symlink_to(tracer)


def main(root: Path, ssh_cases: set[str]) -> None:
    import ansible.cli.adhoc
    import ansible.cli.inventory  # noqa: F401

    tracer = root / "tracer.py"
    tracer.write_text(TRACER.format(python=sys.executable))
    tracer.chmod(0o755)
    jobs = [(case, "list") for case in sorted(root.iterdir()) if (case / "inventory").exists()]
    running: dict[int, tuple[Path, str]] = {}
    while jobs or running:
        while jobs and len(running) < 2:
            case, kind = jobs.pop(0)
            running[_child(case, kind)] = (case, kind)
        pid, status = os.wait()
        case, kind = running.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        (case / f"{kind}.rc").write_text(str(code))
        if kind == "list" and code == 0 and case.name in ssh_cases:
            _prepare_ssh(case, tracer)
            jobs.insert(0, (case, "ssh"))


if __name__ == "__main__":
    args = sys.argv[1:]
    ssh = set(args[args.index("--ssh") + 1 :]) if "--ssh" in args else set()
    os.environ["ANSIBLE_NOCOLOR"] = "1"
    main(Path(args[0]), ssh)
