"""What a fleet run's client does once per run instead of once per box, and the same answers.

A run that shares connections (the verify engine sets `sharing`) reads each ssh config file
once: every target of that run resolves against the same reading, as the run's other choices
do. Outside a run, each resolver reads the file afresh. File-name tokens are expanded as
before, with or without `%`.
"""

from __future__ import annotations

from pathlib import Path

from factbook.knowledge.model import Target
from factbook.verification.transports.base import TransportOptions
from factbook.verification.transports.sshconnect import ChainResolver
from factbook.verification.transports.sshwords import local_tokens, percent_expand

CONFIG = """\
Host box-*
  User {user}
  Port 2222
  IdentityFile {keys}/id_%r_%h
  IdentityFile {keys}/fleet
"""


def test_a_sharing_run_reads_the_ssh_config_once(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(CONFIG.format(user="ops", keys=tmp_path))
    options = TransportOptions(ssh_config=str(config))
    options.sharing = True
    (first,) = ChainResolver({}, options).resolve(Target(name="box-1", host="box-1"))
    config.write_text(CONFIG.format(user="changed", keys=tmp_path))  # an edit while the run goes on
    (second,) = ChainResolver({}, options).resolve(Target(name="box-2", host="box-2"))
    assert (first.user, second.user) == ("ops", "ops")
    assert second.port == 2222
    options.close_shared()  # the run ends: the next one reads the file again
    options.sharing = True
    (third,) = ChainResolver({}, options).resolve(Target(name="box-3", host="box-3"))
    assert third.user == "changed"


def test_without_sharing_every_resolver_reads_the_file(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(CONFIG.format(user="ops", keys=tmp_path))
    options = TransportOptions(ssh_config=str(config))
    (first,) = ChainResolver({}, options).resolve(Target(name="box-1", host="box-1"))
    config.write_text(CONFIG.format(user="changed", keys=tmp_path))
    (second,) = ChainResolver({}, options).resolve(Target(name="box-2", host="box-2"))
    assert (first.user, second.user) == ("ops", "changed")


def test_identity_files_are_expanded_with_and_without_tokens(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(CONFIG.format(user="ops", keys=tmp_path))
    for name in ("id_ops_box-7", "fleet"):  # ssh skips identity files that do not exist
        (tmp_path / name).write_text("key")
    (hop,) = ChainResolver({}, TransportOptions(ssh_config=str(config))).resolve(
        Target(name="box-7", host="box-7")
    )
    assert hop.identity_files == [str(tmp_path / "id_ops_box-7"), str(tmp_path / "fleet")]
    assert local_tokens()["u"]
    assert percent_expand("/plain/path", {}, "IdentityFile") == "/plain/path"
    assert percent_expand("%%%r", {"r": "u"}, "IdentityFile") == "%u"


def test_merged_calls_with_the_runs_memo_are_the_same_calls() -> None:
    """The engine keeps one signature per args object for the run; the calls it merges for
    each target are the ones merge_calls makes without it, and a different probe over the
    same args object, or an equal but separate args object, is never mistaken for another."""
    from factbook.verification.bundle import merge_calls

    shared = {"path": "/etc/hostname"}
    checks = [
        ("a@t", "file.sha256", shared, 5),
        ("b@t", "file.size", shared, None),
        ("c@t", "file.sha256", {"path": "/etc/hostname"}, 9),
        ("d@t", "file.sha256", {"path": "/etc/hosts"}, None),
    ]
    memo: dict = {}
    for _ in range(3):  # three targets of one run
        with_memo = merge_calls(checks, memo)
        assert [vars(c) for c in with_memo] == [vars(c) for c in merge_calls(checks)]
    assert [c.keys for c in with_memo] == [["a@t", "c@t"], ["b@t"], ["d@t"]]
