"""Lint refuses a runbook step that runs a destructive command without `destructive: true`.

`factbook run` asks before a destructive step (or needs --yes); a step that ran `rm -rf`,
`kill -9` or `systemctl stop` without the mark ran without asking (hostile round 15). The
commands are read as the runner hands them on: shell lines, a %%bash body, strings and argv
lists, each cut at shell separators; prose that merely mentions a command is passed. The
shipped runbooks mark every such step and lint clean.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import REPO, cli, make_kb
from test_hostile_kb import RUNBOOK

from factbook.runbooks.destructive import destructive_command

DESTRUCTIVE = [
    "box.run(['rm', '-rf', '/data/x'])",
    "box.run('sudo rm -rf /x', shell=True)",
    "!rm -r /tmp/x",
    "%%bash\nset -e\npkill -f sglang\n",
    "box.run(['systemctl', 'stop', unit])",
    "x = 'kill -9 1234'",
    "box.run('ls -la && dd if=/dev/zero of=/dev/sda bs=1M', shell=True)",
    "box.run(['env', 'A=1', 'timeout', '10', 'rm', '-f', 'x'])",
    "s = f'rm -rf {path}'",
    "box.run(['git', 'reset', '--hard'])",
    "box.run(['sudo', '-u', 'x', 'killall', 'python'])",
    "box.run(['mkfs.ext4', '/dev/nvme1n1'])",
    "box.run('cd /x; shutdown -h now', shell=True)",
]
HARMLESS = [
    "print('never run rm -rf / on the box')",
    "box.run(['systemctl', 'status', 'x'])",
    "box.run(['kill', '-15', pid])",
    "box.run(['rm', 'file.txt'])",
    "box.run(['git', 'status'])",
    "# rm -rf /\nx = 1",
    "box.run([cmd, '-rf'])",
    "box.run(['python', '-m', 'sglang.launch_server', '--tp', '8'])",
]


def _kb(tmp_path: Path, code: str, *, marked: bool) -> Path:
    root = make_kb(tmp_path / "kb", [], targets={"targets": {"here": {"transport": "local"}}})
    text = RUNBOOK.replace("print('hi')", code)
    if marked:
        text = text.replace(":name: hello\n", ":name: hello\n:destructive: true\n")
    (root / "runbooks").mkdir()
    (root / "runbooks" / "rb.md").write_text(text)
    return root


@pytest.mark.parametrize("code", DESTRUCTIVE)
def test_an_unmarked_destructive_step_is_refused_and_a_marked_one_passes(
    tmp_path: Path, code: str
) -> None:
    code_, out, err = cli(_kb(tmp_path, code, marked=False), "lint")
    assert code_ == 2, (out, err)
    assert "step 'hello': runs `" in out + err
    assert "is not marked `destructive: true`" in out + err
    code_, out, err = cli(_kb(tmp_path / "marked", code, marked=True), "lint")
    assert "destructive" not in out + err, (out, err)


@pytest.mark.parametrize("code", HARMLESS)
def test_prose_and_harmless_commands_pass(code: str) -> None:
    assert destructive_command(code) is None


def test_the_shipped_runbooks_mark_their_destructive_steps() -> None:
    code, out, err = cli(REPO, "lint")
    assert code == 0, out + err
