"""Shell completion driven through real bash (`complete -p`, COMP_WORDS/COMP_CWORD and the
registered function), `completion --install`, and `--color` / NO_COLOR on a real pty."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from factbook.commands.cli import build_parser
from factbook.integrations.completion import SCRIPTS, candidates
from factbook.runbooks.format import load_runbook
from tests.helpers import REPO, cli, fact, make_kb
from tests.test_hostile_kb import HOSTILE_TAGS, bash_completes, make_outside, plant

BIN = Path(sys.executable).parent
RUNBOOK = "gpu-cleanup"


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    facts = [
        fact("hw.cpu.threads", "cpu.threads", {"ge": 1}, target="local", tags=["cpu"]),
        fact("hw.cpu.too_many", "cpu.threads", {"eq": 100000}, target="local", tags=["cpu"]),
        fact("sw.env.home", "env.var", {"exists": True}, args={"name": "HOME"},
             category="software", target="local", tags=["shell-env"]),
    ]  # fmt: skip
    root = make_kb(tmp_path / "kb", facts)
    (root / "runbooks").mkdir()
    shutil.copy(REPO / "runbooks" / f"{RUNBOOK}.md", root / "runbooks")
    return root


def _env(kb: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
        "FACTBOOK_ROOT": str(kb),
        **extra,
    }


def _bash_complete(kb: Path, *words: str) -> list[str]:
    """Source the script in bash, check it is registered, call it as bash would."""
    script = kb.parent / "factbook.bash"
    script.write_text(SCRIPTS["bash"])
    quoted = " ".join(f"'{w}'" for w in words)
    program = f"""
source {script}
complete -p {words[0]} || exit 9
COMP_WORDS=({quoted})
COMP_CWORD={len(words) - 1}
COMP_LINE="{" ".join(words)}"
_factbook_complete
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    proc = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program],
        capture_output=True, text=True, env=_env(kb), timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("complete -o default -F _factbook_complete")
    return [line for line in lines[1:] if line]


def test_bash_completes_ids_targets_runbooks_steps_categories(kb: Path) -> None:
    assert _bash_complete(kb, "factbook", "verify", "hw.cpu") == [
        "hw.cpu.threads",
        "hw.cpu.too_many",
    ]
    assert _bash_complete(kb, "factbook", "verify", "--target", "") == ["all", "local", "other"]
    assert _bash_complete(kb, "verify-facts", "-c", "soft") == ["software"]
    assert _bash_complete(kb, "factbook", "verify", "--tag", "sh") == ["shell-env"]
    assert _bash_complete(kb, "factbook", "run", "gpu") == [RUNBOOK]
    steps = [s.name for s in load_runbook(kb / "runbooks" / f"{RUNBOOK}.md", kb).steps]
    assert steps and _bash_complete(kb, "factbook", "run", RUNBOOK, "--step", "") == steps
    assert "serve" in _bash_complete(kb, "factbook", "se")
    assert _bash_complete(kb, "factbook", "verify", "--form") == ["--format"]
    assert "openmetrics" in _bash_complete(kb, "factbook", "verify", "--format", "")
    assert _bash_complete(kb, "factbook", "completion", "") == ["bash", "zsh", "fish"]


def test_root_on_the_line_wins_and_a_broken_kb_completes_nothing(kb: Path, tmp_path: Path) -> None:
    env = {"FACTBOOK_ROOT": str(tmp_path / "nowhere")}
    words = ["factbook", "--root", str(kb), "show", "sw."]
    assert candidates(words, 4, parser=build_parser(), env=env) == ["sw.env.home"]
    assert candidates(["factbook", "show", "sw."], 2, parser=build_parser(), env=env) == []
    # never a hidden command, never a traceback
    assert "__complete" not in candidates(["factbook", ""], 1, parser=build_parser(), env=env)


def test_install_writes_where_each_shell_loads_it(kb: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    for shell, expected in [
        ("bash", [".local/share/bash-completion/completions/factbook",
                  ".local/share/bash-completion/completions/verify-facts"]),
        ("zsh", [".local/share/zsh/site-functions/_factbook"]),
        ("fish", [".config/fish/completions/factbook.fish",
                  ".config/fish/completions/verify-facts.fish"]),
    ]:  # fmt: skip
        proc = subprocess.run(
            [str(BIN / "factbook"), "completion", shell, "--install"],
            capture_output=True, text=True, env={**_env(kb), "HOME": str(home)}, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        for rel in expected:
            assert (home / rel).read_text() == SCRIPTS[shell]
            assert f"wrote {home / rel}" in proc.stderr
    code, out, _ = cli(kb, "completion", "fish")
    assert code == 0 and out == SCRIPTS["fish"]


def test_color_flag(kb: Path) -> None:
    code, out, _ = cli(kb, "--color", "always", "verify", "--no-save")
    assert code == 1
    assert "\x1b[31;1mFAIL " in out and "\x1b[32mok   " in out
    code, out, _ = cli(kb, "verify", "--no-save", "--color", "always")  # verify-facts style
    assert "\x1b[31;1mFAIL " in out
    code, out, _ = cli(kb, "--color", "always", "verify", "--no-save", "--color", "never")
    assert "\x1b" not in out
    code, out, _ = cli(kb, "verify", "--no-save")  # auto, and not a terminal
    assert "\x1b" not in out and "FAIL " in out


def _on_a_tty(kb: Path, *args: str, **env: str) -> str:
    """Run verify with stdout on a real pseudo-terminal; return what it printed."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [str(BIN / "factbook"), *args, "verify", "--no-save", "-q"],
        stdout=follower, stderr=subprocess.DEVNULL, env=_env(kb, **env),
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode()


def test_auto_colours_a_terminal_unless_no_color(kb: Path) -> None:
    assert "\x1b[31;1mFAIL" in _on_a_tty(kb, NO_COLOR="", TERM="xterm")  # empty: not set
    assert "\x1b[" not in _on_a_tty(kb, NO_COLOR="1", TERM="xterm")
    assert "\x1b[" not in _on_a_tty(kb, NO_COLOR="", TERM="dumb")
    assert "\x1b[31;1mFAIL" in _on_a_tty(kb, "--color", "always", NO_COLOR="1")


ZPTY_DRIVE = """
zmodload zsh/zpty
zpty z 'PATH={bin}:$PATH zsh -f -i'
zpty -w z '{setup}; PS1="> "'
sleep 0.5
zpty -w -n z $'factbook ver\\t'
sleep 1.5
zpty -r z out || true
zpty -d z
"""


@pytest.mark.parametrize("how", ["fpath", "source"])
def test_zsh_completes_on_the_first_tab(tmp_path: Path, how: str) -> None:
    """A real interactive zsh (zpty) presses Tab once after `factbook ver`. Installed into
    $fpath (`factbook completion install zsh`), the file is _factbook's body: it used to only
    define the function and register it on that first Tab, asking factbook nothing."""
    from tests.helpers import require

    zsh = shutil.which("zsh")
    require(None if zsh else "zsh is not installed (Debian's zsh; scripts/test installs it)")
    assert zsh is not None
    folder, bin_ = tmp_path / "functions", tmp_path / "bin"
    folder.mkdir()
    bin_.mkdir()
    (folder / "_factbook").write_text(SCRIPTS["zsh"])
    calls = tmp_path / "calls"
    shim = bin_ / "factbook"  # records what completion asks, answers two candidates
    shim.write_text(f'#!/bin/sh\necho "$@" >> {calls}\necho alpha\necho beta\n')
    shim.chmod(0o755)
    init = "autoload -U compinit; compinit -u"
    setup = {
        "fpath": f"fpath=({folder} $fpath); {init}",
        "source": f"{init}; source {folder}/_factbook",
    }
    drive = tmp_path / "drive.zsh"
    drive.write_text(ZPTY_DRIVE.format(bin=bin_, setup=setup[how]))
    subprocess.run([zsh, "-f", str(drive)], capture_output=True, timeout=60)
    assert calls.exists() and "__complete 1 factbook ver" in calls.read_text(), how


@pytest.mark.parametrize(
    ("typed", "completed"),
    [
        ("'", ["\\*", "ok", "x\\ y"]),  # a quote opened, nothing typed in it yet
        ("\\*", ["\\*"]),  # the tag `*`, escaped as bash escapes it
        ("x\\ ", ["x\\ y"]),
        ("'x ", ["x\\ y"]),
        ('"x', ["x\\ y"]),
        ("o", ["ok"]),
    ],
)
def test_bash_completes_a_prefix_typed_with_quotes_or_backslashes(
    tmp_path: Path, typed: str, completed: list[str]
) -> None:
    """bash hands the word over as typed: `\\*` or `'x ` matched nothing, as no tag starts
    with a backslash or a quote. Dequoted first, as the shell will pass it on."""
    root, outside = tmp_path / "kb", tmp_path / "outside"
    make_outside(outside)
    plant(root, outside, HOSTILE_TAGS)
    assert bash_completes(tmp_path, root, typed) == completed
