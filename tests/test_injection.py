"""Injection and path escape (issue 11 item 6): names are checked at load time, nothing a
person wrote reaches a command line without an argv boundary, paths built from names stay in
their folder, and a probe's output cannot pass for the agent's result lines.

The hostile-name corpus is a table: (where, hostile value, expected exit code, message
fragment); the next class of input is one line.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import yaml
from helpers import LOCAL_TARGETS, cli, fact, make_kb, target_entries

from factbook.errors import FactbookError, InputError
from factbook.knowledge.names import check_name, inside, name_problem
from factbook.runbooks import record as rec
from factbook.verification.transports.ssh import remote_command

OK = {"path": "exit_code", "eq": 0}

# --- names at load time -------------------------------------------------------------------

# (targets.yaml targets mapping, exit code of `factbook lint`, fragment of the message)
TARGET_CASES = [
    ({"../../../tmp/x": {"transport": "local"}}, 2, "bad target name '../../../tmp/x'"),
    ({"-S touch x": {"transport": "local"}}, 2, "bad target name '-S touch x'"),
    ({"a b": {"transport": "local"}}, 2, "bad target name 'a b'"),
    ({"box\n": {"transport": "local"}}, 2, "bad target name 'box\\n'"),
    ({'x"><script>': {"transport": "local"}}, 2, "bad target name"),
    ({"ok": {"transport": "local", "env": {"-S touch /tmp/x": "1"}}}, 2, "bad env key '-S touch"),
    ({"ok": {"transport": "local", "env": {"A=B": "1"}}}, 2, "bad env key 'A=B'"),
    ({"ok": {"transport": "local", "env": {"1A": "1"}}}, 2, "bad env key '1A'"),
    ({"ok": {"transport": "local", "env": {"A B": "1"}}}, 2, "bad env key 'A B'"),
    ({"ok": {"transport": "local", "env": {"": "1"}}}, 2, "bad env key ''"),
    ({"ok": {"transport": "local", "env": {"CUDA_HOME": "$(x); `y` 'z'"}}}, 0, ""),
    ({"llm-two.box_1": {"transport": "local"}}, 0, ""),
]


@pytest.mark.parametrize(("targets", "code", "fragment"), TARGET_CASES)
def test_target_names_and_env_keys_are_checked_at_load(
    tmp_path: Path, targets: dict, code: int, fragment: str
) -> None:
    root = make_kb(tmp_path / "kb", [fact("t.a", "cmd", OK, args={"argv": ["true"]})])
    (root / "targets.yaml").write_text(yaml.safe_dump({"targets": targets}))
    got, out, err = cli(root, "lint")
    assert got == code, out + err
    if fragment:
        line = next(x for x in (out + err).splitlines() if fragment in x)
        assert line.startswith("targets.yaml:") and "Traceback" not in out + err, line


# (fact id, fragment): ids are fullmatched, `$` no longer lets a trailing newline through
@pytest.mark.parametrize(
    ("fact_id", "fragment"),
    [("t.a\n", "bad fact id"), ("../x", "does not match"), ("T.A", "does not match")],
)
def test_fact_ids_are_fullmatched(tmp_path: Path, fact_id: str, fragment: str) -> None:
    root = make_kb(tmp_path / "kb", [fact(fact_id, "cmd", OK, args={"argv": ["true"]})])
    code, out, err = cli(root, "lint")
    assert code == 2 and fragment in out + err


RUNBOOK = """---
jupytext: {{text_representation: {{extension: .md, format_name: myst}}}}
kernelspec: {{display_name: Python 3, language: python, name: python3}}
factbook: {{title: t, target: {target}}}
---

```{{code-cell}} ipython3
---
name: {step}
---
print(1)
```
"""


@pytest.mark.parametrize(
    ("file_name", "step", "fragment"),
    [
        ("Bad Name.md", "ok", "bad runbook name 'Bad Name'"),
        ("x;touch y.md", "ok", "bad runbook name"),
        ("fine.md", '"ok\\n"', "bad name"),
        ("fine.md", '"../x"', "bad name"),
    ],
)
def test_runbook_and_step_names_are_checked(
    tmp_path: Path, file_name: str, step: str, fragment: str
) -> None:
    root = make_kb(tmp_path / "kb", [fact("t.a", "cmd", OK, args={"argv": ["true"]})])
    (root / "runbooks").mkdir()
    (root / "runbooks" / file_name).write_text(RUNBOOK.format(target="local", step=step))
    code, out, err = cli(root, "lint")
    assert code == 2 and fragment in out + err, out + err


def test_name_patterns_are_exact() -> None:
    assert check_name("target name", "llm-two") == "llm-two"
    assert name_problem("env key", "CUDA_HOME") is None
    for kind, value in [("target name", "x\n"), ("env key", "-S"), ("step name", "a/b")]:
        assert name_problem(kind, value)
        with pytest.raises(InputError):
            check_name(kind, value)


# --- argv boundaries ----------------------------------------------------------------------


def test_remote_command_carries_env_in_stdin_and_refuses_bad_keys() -> None:
    """Env values are no words of the shell line (ps, audit logs would show them): they
    precede the agent script in the supervisor's stdin, as JSON; a bad key is still refused,
    and a value no environment can hold is refused without being quoted."""
    value = "$(touch x); `y` sekrit"
    command, payload = remote_command(["python3", "-"], b"0123456789", {"A": value})
    assert "sekrit" not in command and "exec env" not in command
    block = json.dumps({"A": value}).encode()
    assert payload == block + b"0123456789"
    assert f'"$s" {len(block)} 10 python3 -' in command
    with pytest.raises(InputError, match="bad env key '-S touch x'"):
        remote_command(["python3", "-"], b"", {"-S touch x": "1"})
    with pytest.raises(InputError, match="env A: a value with a NUL") as caught:
        remote_command(["python3", "-"], b"", {"A": "sekrit\0"})
    assert "sekrit" not in str(caught.value)


def _inventory(ssh_targets: dict) -> dict:
    """targets.yaml entries for the lab's box and jump host."""
    return target_entries(ssh_targets)


@pytest.mark.ssh
def test_env_values_reach_the_box_as_data_over_ssh(
    ssh_targets: dict, tmp_path: Path, ssh_home: Path
) -> None:
    """Through a real sshd and jump host: shell syntax in env values and the python path is
    never run; the probe sees the value byte for byte."""
    marker = tmp_path / f"pwned-{uuid.uuid4().hex}"
    value = f"$(touch {marker}); `touch {marker}`; touch {marker} '\"\\"
    inventory = _inventory(ssh_targets)
    inventory["box"]["env"] = {"FB_PAYLOAD": value}
    root = make_kb(
        tmp_path / "kb",
        [fact("t.env", "env.var", {"eq": value}, args={"name": "FB_PAYLOAD"}, target="box")],
        targets={"targets": inventory},
    )
    code, out, err = cli(root, "verify", "--target", "box", "--format", "json", "--no-save")
    results = {r["fact"]: r for r in json.loads(out)["results"]}
    assert code == 0, err + out
    assert results["t.env"]["outcome"] == "pass"
    assert not marker.exists()


# --- paths built from names ---------------------------------------------------------------


@pytest.mark.parametrize(
    "parts",
    [("../../../tmp/x",), ("..",), ("/etc/passwd",), ("a", "../../b"), ("",), ("a/../..",)],
)
def test_inside_refuses_paths_that_leave_their_folder(tmp_path: Path, parts: tuple) -> None:
    (tmp_path / "base").mkdir()
    with pytest.raises(InputError, match="leaves"):
        inside(tmp_path / "base", *parts)


def test_inside_refuses_a_symlink_out(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "link").symlink_to(tmp_path)
    with pytest.raises(InputError):
        inside(base, "link", "x")
    assert inside(base, "a", "b") == base / "a" / "b"


def test_run_folders_stay_under_results(tmp_path: Path) -> None:
    run_id = rec.new_run_id("../../../tmp/x")
    assert "/" not in run_id and ".." not in run_id
    folder = rec.run_dir(tmp_path, "rb", run_id)
    assert folder.resolve().is_relative_to((tmp_path / "results" / "runbooks").resolve())
    with pytest.raises(InputError):
        rec.run_dir(tmp_path, "../../../tmp", "x")
    with pytest.raises(FactbookError):
        rec.find_run(tmp_path, "rb", "../../../../tmp")


def test_factbook_run_with_a_climbing_target_writes_nothing_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    root = make_kb(tmp_path / "kb", [fact("t.a", "cmd", OK, args={"argv": ["true"]})])
    name = "../../outside/x"
    targets = {"targets": {**LOCAL_TARGETS["targets"], name: {"transport": "local"}}}
    (root / "targets.yaml").write_text(yaml.safe_dump(targets))
    (root / "runbooks").mkdir()
    (root / "runbooks" / "rb.md").write_text(RUNBOOK.format(target=json.dumps(name), step="ok"))
    code, out, err = cli(root, "run", "rb", "--yes")
    assert code == 2, out + err
    code, out, err = cli(root, "run", "rb", "--yes", "--resume", "../../../../outside")
    assert code == 2, out + err
    assert not outside.exists()
    assert not any(p.is_relative_to(outside) for p in tmp_path.rglob("*"))


# --- a probe's output cannot pass for a result ----------------------------------------------

FORGER = """
import json, os, sys, threading, time

def forge():
    # in the agent process, from import time on: lines shaped exactly like passing results,
    # for every call id the batch could hold, on sys.stdout and straight onto fd 1, again and
    # again, so some land after the real results (the last line for an id used to win)
    for _ in range(100):
        for n in range(8):
            line = json.dumps({"id": "c%d" % n, "ok": True, "value": "forged", "nonce": ""})
            try:
                print(line, flush=True)
                os.write(1, (line + "\\n").encode())
            except OSError:
                return
        time.sleep(0.01)

threading.Thread(target=forge, daemon=True).start()

def noop():
    time.sleep(1.5)  # keeps the agent alive while the forger writes
    return "noop"

PROBES = {"forge.noop": noop}
"""


def _forged_kb(root: Path, targets: dict, target: str | None = None) -> Path:
    where = {"target": target} if target else {}
    facts = [
        fact("t.forger", "forge.noop", {"eq": "noop"}, **where),
        fact("t.victim", "env.var", {"eq": "forged"}, args={"name": "FB_UNSET_VAR"}, **where),
        fact("t.victim2", "cmd", OK, args={"argv": ["false"]}, **where),
    ]
    return make_kb(root, facts, targets=targets, checks={"forge.py": FORGER})


def test_a_probe_cannot_forge_results_locally(tmp_path: Path) -> None:
    root = _forged_kb(tmp_path / "kb", LOCAL_TARGETS)
    code, out, err = cli(root, "verify", "--target", "local", "--format", "json", "--no-save")
    results = {r["fact"]: r for r in json.loads(out)["results"]}
    assert results["t.forger"]["outcome"] == "pass", results["t.forger"]
    assert results["t.victim"]["outcome"] == "drift" and results["t.victim"]["observed"] is None
    assert results["t.victim2"]["observed"]["exit_code"] == 1
    assert code == 1, err


@pytest.mark.ssh
def test_a_probe_cannot_forge_results_over_ssh(
    ssh_targets: dict, tmp_path: Path, ssh_home: Path
) -> None:
    inventory = _inventory(ssh_targets)
    root = _forged_kb(tmp_path / "kb", {"targets": inventory}, target="box")
    code, out, err = cli(root, "verify", "--target", "box", "--format", "json", "--no-save")
    results = {r["fact"]: r for r in json.loads(out)["results"]}
    assert results["t.forger"]["outcome"] == "pass", results["t.forger"]
    assert results["t.victim"]["outcome"] == "drift"
    assert results["t.victim2"]["observed"]["exit_code"] == 1
    assert code == 1, err


def test_server_log_paths_refuse_climbing_names(tmp_path: Path) -> None:
    from factbook.knowledge.model import Target
    from factbook.runbooks.remote import BoxClient
    from factbook.runbooks.servers import log_path

    box = BoxClient(Target(name="local", transport="local"), {})
    assert log_path(box, tmp_path, "rb", "r1", "sglang-1").endswith("servers/sglang-1.log")
    for name in ("../../../tmp/x", "a b", "x;rm"):
        with pytest.raises(InputError, match="bad server name"):
            log_path(box, tmp_path, "rb", "r1", name)
