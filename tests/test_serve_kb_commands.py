"""Issue 25, connections: `factbook serve` and `factbook mcp` run no command a knowledge base's
targets name unless started with --run-kb-probes. Each hole is a real knowledge base whose
command would leave a marker file: an exec transport's argv, a local python or env that makes
the agent load the knowledge base's file, a ProxyCommand (an Ansible inventory's ssh arguments,
an ssh-config inventory, a jump host's ssh config with `Match exec`). Without
the flag: no marker, and each check is an error naming the target, the field and the flag;
with it the command runs (the marker appears even where the connection then fails).
srun's --prolog and the like are refused outright (srun_args is an allow-list)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from slurm import Cluster

from factbook.integrations.kb_probes import FLAG, withhold_kb_probes
from factbook.integrations.serve import ServeSettings, verify_snapshot
from factbook.knowledge.kb import load_kb
from factbook.store.results import ResultRecord
from factbook.verification.targets import plan_checks
from tests.helpers import fact, make_kb

HOME_FACT = "sw.env.home"


def _kb(root: Path, targets: dict[str, Any], files: dict[str, str] | None = None) -> Path:
    """root/kb with one built-in check (env.var HOME) on target `box`, and `files` (relative
    path -> text) beside targets.yaml."""
    facts = [fact(HOME_FACT, "env.var", {"exists": True}, args={"name": "HOME"}, target="box")]
    kb = make_kb(root / "kb", facts, targets=targets)
    for name, text in (files or {}).items():
        (kb / name).parent.mkdir(parents=True, exist_ok=True)
        (kb / name).write_text(text)
    return kb


def _record(kb: Path, allow: bool) -> ResultRecord:
    """serve's run of the knowledge base (verify_snapshot): the one check's record."""
    snap = verify_snapshot(ServeSettings(root=kb, interval=300.0, run_kb_probes=allow))
    assert not snap.problem, snap.problem
    [record] = [r for r in snap.records if r.fact == HOME_FACT]
    return record


def _withheld(record: ResultRecord, *words: str) -> None:
    assert record.outcome == "error", record
    assert f"started with {FLAG}" in record.reason, record.reason
    for word in words:
        assert word in record.reason, record.reason


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


# --- commands run on this machine ----------------------------------------------------------


def test_an_exec_transport_runs_its_argv_only_with_the_flag(tmp_path: Path) -> None:
    marker = tmp_path / "exec-ran"
    argv = ["sh", "-c", f'touch {marker}; exec "$@"', "sh"]
    kb = _kb(tmp_path, {"targets": {"box": {"transport": "exec", "exec": argv}}})
    _withheld(_record(kb, allow=False), "target 'box'", "exec: command `sh ...`")
    assert not marker.exists()
    assert _record(kb, allow=True).outcome == "pass"
    assert marker.exists()


@pytest.mark.parametrize("inside", [True, False], ids=["in-kb", "wrapper-outside"])
def test_a_local_python_that_is_a_kb_file_or_no_interpreter(tmp_path: Path, inside: bool) -> None:
    """`python:` of a local target is run here: a file of the knowledge base (even one named
    python3), or a wrapper that is no plain interpreter, only with the flag."""
    marker = tmp_path / "python-ran"
    script = f'#!/bin/sh\ntouch {marker}\nexec {sys.executable} "$@"\n'
    where = tmp_path / "kb" / "bin" / "python3" if inside else tmp_path / "run-agent.sh"
    python = _executable(where, script)
    kb = _kb(tmp_path, {"targets": {"box": {"transport": "local", "python": str(python)}}})
    why = "a file of the knowledge base as its python" if inside else "no plain Python"
    _withheld(_record(kb, allow=False), "target 'box'", why)
    assert not marker.exists()
    assert _record(kb, allow=True).outcome == "pass"
    assert marker.exists()


def test_a_local_pythonpath_to_a_kb_sitecustomize(tmp_path: Path) -> None:
    marker = tmp_path / "site-ran"
    box = {"transport": "local", "env": {"PYTHONPATH": str(tmp_path / "kb" / "lib")}}
    site = {"lib/sitecustomize.py": f"open({str(marker)!r}, 'a').close()\n"}
    kb = _kb(tmp_path, {"targets": {"box": box}}, site)
    _withheld(_record(kb, allow=False), "target 'box'", "env PYTHONPATH")
    assert not marker.exists()
    assert _record(kb, allow=True).outcome == "pass"
    assert marker.exists()


@pytest.mark.parametrize(
    "key",
    ["LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "PYTHONSTARTUP", "PYTHONINSPECT",
     "PYTHONUSERBASE", "PYTHONHOME", "PATH", "HOME", "BASH_ENV", "ENV", "OPENSSL_CONF"],
)  # fmt: skip
def test_env_that_steers_a_local_agent_is_withheld(tmp_path: Path, key: str) -> None:
    """Whatever its value: the agent starts here, and these decide what it loads."""
    kb = _kb(tmp_path, {"targets": {"box": {"transport": "local", "env": {key: "/opt/x"}}}})
    _withheld(_record(kb, allow=False), "target 'box'", f"env {key}")
    assert "/opt/x" not in _record(kb, allow=False).reason  # a value is never shown


def test_an_inventory_proxy_command_runs_only_with_the_flag(tmp_path: Path) -> None:
    """An Ansible inventory's `-o ProxyCommand=` makes an openssh target: ssh runs it here
    before connecting (so the marker appears with the flag though nothing listens)."""
    marker = tmp_path / "proxy-ran"
    inventory = {
        "all": {
            "hosts": {
                "box": {
                    "ansible_host": "127.0.0.1",
                    "ansible_ssh_common_args": f"-o ProxyCommand=\"sh -c 'touch {marker}'\"",
                }
            }
        }
    }
    files = {"hosts.yml": yaml.safe_dump(inventory)}
    kb = _kb(tmp_path, {"inventory": ["hosts.yml"], "targets": {}}, files)
    _withheld(_record(kb, allow=False), "target 'box'", "proxy_command `sh ...`")
    assert not marker.exists()
    _require_ssh()
    assert _record(kb, allow=True).outcome == "error"  # nothing answers: it ran all the same
    assert marker.exists()


def test_an_ssh_config_inventory_proxy_command(tmp_path: Path) -> None:
    marker = tmp_path / "config-ran"
    config = f"Host box\n  HostName 127.0.0.1\n  ProxyCommand sh -c 'touch {marker}'\n"
    kb = _kb(tmp_path, {"inventory": ["hosts.conf"], "targets": {}}, {"hosts.conf": config})
    _withheld(_record(kb, allow=False), "target 'box'", "ProxyCommand `sh ...`", "hosts.conf:3")
    assert not marker.exists()
    _require_ssh()
    assert _record(kb, allow=True).outcome == "error"
    assert marker.exists()


def test_a_jump_hosts_ssh_config_match_exec(tmp_path: Path) -> None:
    """box (targets.yaml, openssh) is reached through gw, a host of the knowledge base's ssh
    config whose `Match exec` ssh runs while reading it: box is withheld through gw."""
    marker = tmp_path / "match-ran"
    config = f'Match exec "touch {marker}"\nHost gw\n  HostName 127.0.0.1\n  Port 1\n'
    targets = {
        "inventory": ["hosts.conf"],
        "targets": {"box": {"transport": "openssh", "host": "127.0.0.2", "jump": ["gw"]}},
    }
    kb = _kb(tmp_path, targets, {"hosts.conf": config})
    _withheld(_record(kb, allow=False), "target 'box'", "through 'gw'", "Match exec")
    assert not marker.exists()
    _require_ssh()
    assert _record(kb, allow=True).outcome == "error"
    assert marker.exists()


def test_srun_prolog_and_epilog_are_refused_where_targets_yaml_is_read(tmp_path: Path) -> None:
    """srun runs --prolog/--epilog on the submitting host, --task-* on the nodes (which share
    its files); getopt takes an unambiguous prefix. srun_args is an allow-list of options that
    bound or place the step (fleet/slurmwords.py, hostile round 18): serve refuses the
    knowledge base before anything runs, with or without the flag. An env: SLURM_TASK_PROLOG
    (srun's input variable) is still withheld without the flag."""
    marker = tmp_path / "prolog-ran"
    prolog = _executable(tmp_path / "kb" / "prolog.sh", f"#!/bin/sh\ntouch {marker}\n")
    for arg in (f"--prolog={prolog}", "--epilog=/bin/true", "--task-pro=/bin/true", "--ep"):
        box = {"transport": "slurm", "nodes": "n1", "srun_args": ["--immediate=5", arg]}
        kb = _kb(tmp_path, {"targets": {"box": box}})
        for allow in (False, True):
            snap = verify_snapshot(ServeSettings(root=kb, interval=300.0, run_kb_probes=allow))
            assert "target 'box': srun_args '--" in snap.problem and not snap.records, snap
    assert not marker.exists()
    box = {"transport": "slurm", "nodes": "n1", "env": {"SLURM_TASK_PROLOG": "/bin/true"}}
    _withheld(_record(_kb(tmp_path, {"targets": {"box": box}}), allow=False), "SLURM_TASK_PROLOG")


@pytest.mark.parametrize("hook", ["prolog", "epilog"])
def test_srun_prolog_and_epilog_never_run_even_with_the_flag(
    slurm_env: Cluster, tmp_path: Path, hook: str
) -> None:
    """Through the real test cluster (conftest.py's slurm_env): a knowledge base whose
    srun_args name a --prolog or --epilog starts no srun, with the flag too; the same target
    without it passes on n1 (one record per node)."""
    marker = tmp_path / f"{hook}-ran"  # absolute: the script runs in srun's folder, not the kb
    script = _executable(tmp_path / "kb" / f"{hook}.sh", f"#!/bin/sh\ntouch {marker}\n")
    box: dict[str, Any] = {"transport": "slurm", "nodes": "n1"}
    box["srun_args"] = ["--immediate=30", f"--{hook}={script}"]
    kb = _kb(tmp_path, {"targets": {"box": box}})
    jobs = slurm_env.jobs_started()
    snap = verify_snapshot(ServeSettings(root=kb, interval=300.0, run_kb_probes=True))
    assert f"srun's --{hook} is not allowed: it runs a program" in snap.problem, snap
    assert not marker.exists() and slurm_env.jobs_started() == jobs
    box["srun_args"] = ["--immediate=30"]
    kb = _kb(tmp_path, {"targets": {"box": box}})
    record = _record(kb, allow=True)
    assert (record.outcome, record.target) == ("pass", "box.n1"), record  # one per node
    assert slurm_env.jobs_started() == jobs + 1


def test_mcp_verify_facts_withholds_the_same(tmp_path: Path) -> None:
    from factbook.integrations.mcp.tools import Toolbox

    marker = tmp_path / "mcp-ran"
    argv = ["sh", "-c", f'touch {marker}; exec "$@"', "sh"]
    kb = _kb(tmp_path, {"targets": {"box": {"transport": "exec", "exec": argv}}})
    [result] = Toolbox(kb).verify_facts([HOME_FACT])["results"]
    assert result["outcome"] == "error" and FLAG in result["reason"]
    assert "target 'box'" in result["reason"] and not marker.exists()
    [result] = Toolbox(kb, run_kb_probes=True).verify_facts([HOME_FACT])["results"]
    assert result["outcome"] == "pass" and marker.exists()


# --- what is vetted, and what is the box's business -----------------------------------------


def _reasons(kb: Path, after_load: Any = None) -> dict[str, str]:
    """Target -> why its checks are withheld (nothing connects); `after_load()` runs between
    reading the knowledge base and vetting its targets."""
    loaded = load_kb(kb)
    if after_load is not None:
        after_load()
    _, withheld = withhold_kb_probes(loaded, plan_checks(loaded, list(loaded.facts.values()), []))
    return {check.target: why for check, why in withheld}


def test_includes_of_a_kb_ssh_config_are_vetted(tmp_path: Path) -> None:
    """Included files are read (confined) and vetted like the file; one that cannot be read
    so (here it names a file outside the knowledge base after the load accepted it) withholds."""
    kb = tmp_path / "kb"
    host = "Host {0}\n  HostName 127.0.0.1\n"
    configs = {
        "clean": f"Include {kb}/inc/plain.conf\n" + host.format("clean"),
        "nested": f"Include {kb}/inc/known.conf\n" + host.format("nested"),
        "late": host.format("late"),
    }
    targets = {"inventory": [f"{name}.conf" for name in configs], "targets": {}}
    facts = [
        fact(f"f.{name}", "env.var", {"exists": True}, args={"name": "HOME"}, target=name)
        for name in configs
    ]
    make_kb(kb, facts, targets=targets)
    (kb / "inc").mkdir()
    (kb / "inc" / "plain.conf").write_text("Host *\n  ServerAliveInterval 5\n")
    (kb / "inc" / "known.conf").write_text("Host *\n  KnownHostsCommand /bin/echo %H\n")
    for name, text in configs.items():
        (kb / f"{name}.conf").write_text(text)
    outside = tmp_path / "elsewhere.conf"
    outside.write_text("Host *\n  ConnectTimeout 5\n")

    def include_outside() -> None:
        (kb / "late.conf").write_text(f"Include {outside}\n" + host.format("late"))

    reasons = _reasons(kb, include_outside)
    assert "clean" not in reasons
    assert "KnownHostsCommand `/bin/echo ...`" in reasons["nested"]
    assert "inc/known.conf:2" in reasons["nested"]
    assert "cannot be vetted" in reasons["late"] and "outside the knowledge base" in reasons["late"]


def test_a_remote_box_python_and_env_are_its_own_unless_they_name_kb_files(
    tmp_path: Path,
) -> None:
    """Over ssh, python and env name things on the box, which the knowledge base cannot
    write; a path into the knowledge base is its file wherever the box shares this machine's
    (ssh to localhost, a cluster's home)."""
    kb = tmp_path / "kb"
    box = {"host": "127.0.0.1", "port": 1}
    targets = {
        "venv": {**box, "python": "~/venv/bin/python3", "env": {"LD_LIBRARY_PATH": "/usr/lib"}},
        "path": {**box, "env": {"PATH": "/usr/local/bin:/usr/bin", "HF_HOME": "/data/hf"}},
        "kbpython": {**box, "python": f"{kb}/bin/python3"},
        "kbpath": {**box, "env": {"PYTHONPATH": f"/usr/lib:{kb}/lib"}},
        "kbdata": {**box, "env": {"TORCH_EXTENSIONS_DIR": f"{kb}/ext"}},
    }
    facts = [
        fact(f"f.{name}", "env.var", {"exists": True}, args={"name": "HOME"}, target=name)
        for name in targets
    ]
    make_kb(kb, facts, targets={"targets": targets})
    reasons = _reasons(kb)
    assert set(reasons) == {"kbpython", "kbpath", "kbdata"}
    assert "a file of the knowledge base as its python" in reasons["kbpython"]
    assert "env PYTHONPATH" in reasons["kbpath"] and "env TORCH_EXTENSIONS_DIR" in reasons["kbdata"]


def test_jump_chains_are_followed_to_the_end_through_loops(tmp_path: Path) -> None:
    from factbook.integrations.kb_probes import TargetVetter
    from factbook.knowledge.model import Target

    kb = load_kb(_kb(tmp_path, {"targets": {"box": {"transport": "local"}}}))
    targets = {
        "box": Target(name="box", host="h", jump=("a",)),
        "a": Target(name="a", host="a", jump=("b",)),
        "b": Target(name="b", host="b", jump=("a", "c", "ops@bastion:22")),
        "c": Target(name="c", host="c", transport="openssh", proxy_command="nc %h %p"),
        "ring": Target(name="ring", host="r", jump=("ring",)),
    }
    vetter = TargetVetter(kb, targets)
    assert "through 'c'" in (vetter.why("box") or "")
    assert vetter.why("ring") is None


def test_ordinary_local_and_ssh_targets_still_run(tmp_path: Path) -> None:
    """A local target with a plain interpreter and harmless env, an ssh and an openssh target
    with nothing of the knowledge base's: not withheld (the ssh ones fail to connect)."""
    local = {"transport": "local", "python": sys.executable, "env": {"OMP_NUM_THREADS": "1"}}
    targets = {
        "box": local,
        "ssh": {"host": "127.0.0.1", "port": 1, "connect_timeout": 2},
        "openssh": {"transport": "openssh", "host": "127.0.0.1", "port": 1, "connect_timeout": 2},
    }
    facts = [
        fact(f"f.{name}", "env.var", {"exists": True}, args={"name": "HOME"}, target=name)
        for name in targets
    ]
    kb = make_kb(tmp_path / "kb", facts, targets={"targets": targets})
    assert _reasons(kb) == {}
    snap = verify_snapshot(ServeSettings(root=kb, interval=300.0))
    records = {r.target: r for r in snap.records}
    assert records["box"].outcome == "pass"
    for name in ("ssh", "openssh"):
        assert records[name].outcome == "error" and FLAG not in records[name].reason


def _require_ssh() -> None:
    if shutil.which("ssh") is None:
        pytest.skip("no ssh client here: the with-flag half needs it to run the ProxyCommand")


SHADOW_JSON = "open({marker!r}, 'a').close()\nfrom _json import *  # noqa\n"


def test_a_json_py_in_the_working_folder_is_not_the_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """serve started inside the knowledge base: `python3 -` (the agent) and `python -c` (a
    probe asking a venv's interpreter) put the working folder first on sys.path, so the
    knowledge base's json.py was imported by both, flag or not."""
    marker = tmp_path / "json-imported"
    kb = _kb(
        tmp_path,
        {"targets": {"box": {"transport": "local"}}},
        {"json.py": SHADOW_JSON.format(marker=str(marker))},
    )
    pkg = fact(
        "sw.py.version", "python.version", {"regex": r"^3\."},
        args={"python": sys.executable}, target="box",
    )  # fmt: skip
    facts = yaml.safe_load((kb / "facts" / "facts.yaml").read_text())
    facts["facts"].append(pkg)
    (kb / "facts" / "facts.yaml").write_text(yaml.safe_dump(facts))
    monkeypatch.chdir(kb)
    snap = verify_snapshot(ServeSettings(root=kb, interval=300.0))
    assert not snap.problem, snap.problem
    assert {r.fact: r.outcome for r in snap.records} == {HOME_FACT: "pass", "sw.py.version": "pass"}
    assert not marker.exists()
