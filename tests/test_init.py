"""`factbook init DIR` makes a knowledge base that works at once (issue 14.2): in it, lint,
verify-facts --target local (its checks run and pass here), status and a real `mkdocs build`
through the `factbook` plugin all succeed; the plugin keeps a user's own nav (14.3)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from handbook_support import mkdocs_build
from helpers import REPO, cli

from factbook.commands.cli import run
from factbook.knowledge.schema import FACT_FILE_SCHEMA
from factbook.knowledge.starter import this_hostname


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("init") / "team-kb"
    assert run(["init", str(root), "--name", "Team"]) == 0
    return root


def test_init_writes_the_starter_files(started: Path) -> None:
    for rel in (
        "targets.yaml",
        "milestones.yaml",
        "facts/team.yaml",
        "facts/discovered-local.yaml",
        "runbooks/hello.md",
        "mkdocs.yml",
        ".gitignore",
        ".github/workflows/factbook.yml",
    ):
        assert (started / rel).is_file(), rel
    targets = yaml.safe_load((started / "targets.yaml").read_text())
    assert targets["targets"]["local"] == {
        "transport": "local",
        "description": "the machine factbook runs on",
        "identity": {"hostname": this_hostname()},  # its discovered facts are about it
    }
    # the `$schema` the fact files name exists, and is factbook's schema of fact files
    for rel in ("facts/team.yaml", "facts/discovered-local.yaml"):
        head = (started / rel).read_text().splitlines()[0]
        assert head == "# yaml-language-server: $schema=../schema/facts.schema.json", rel
    schema = json.loads((started / "schema" / "facts.schema.json").read_text())
    assert schema == FACT_FILE_SCHEMA
    text = (started / "targets.yaml").read_text()
    assert "# gpu-box:" in text and "#   jump: bastion" in text  # commented SSH and jump
    config = yaml.safe_load((started / "mkdocs.yml").read_text())
    assert "factbook" in config["plugins"] and "hooks" not in config
    assert config["site_name"] == "Team handbook"
    ci = yaml.safe_load((started / ".github/workflows/factbook.yml").read_text())
    steps = [s.get("run", "") for job in ci["jobs"].values() for s in job["steps"]]
    assert any(s.startswith("factbook lint") for s in steps)
    assert any(s.startswith("verify-facts --target local") for s in steps)


def test_init_refuses_a_non_empty_folder(started: Path) -> None:
    code, _out, err = cli(started, "init", str(started))
    assert code == 2
    assert "exists and is not empty" in err


@pytest.mark.parametrize("folder", ["new\nkb", "a\x1b[31m", "x" * 101])
def test_init_refuses_a_bad_name_before_making_the_folder(tmp_path: Path, folder: str) -> None:
    """A folder name that cannot be the handbook's name is refused with nothing left behind
    (the folder was made first, and stayed empty after the refusal)."""
    code, _out, err = cli(tmp_path, "init", str(tmp_path / folder), "--no-discover")
    assert code == 2 and "one line of at most 100 characters" in err, err
    assert list(tmp_path.iterdir()) == []
    assert len(err) < 300, "a long name is quoted by its head"


def test_lint_verify_status_in_the_new_kb(started: Path) -> None:
    code, out, err = cli(started, "lint")
    assert code == 0, out + err
    code, out, err = cli(started, "verify", "--target", "local", "--format", "json")
    assert code == 0, err
    records = json.loads(out)["results"]
    assert len(records) >= 5  # discovered facts about this machine, checked here
    assert {r["outcome"] for r in records} == {"pass"}
    code, out, err = cli(started, "status", "--out", "-")
    assert code == 0, err
    assert out.startswith("# ")
    assert "Run `verify-facts --target NAME` on a box before relying" in out


def _build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return mkdocs_build(root, "--strict", "-d", str(site), timeout=300)


def test_mkdocs_build_in_the_new_kb(started: Path, tmp_path: Path) -> None:
    built = _build(started, tmp_path / "site")
    assert built.returncode == 0, built.stderr
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "Team handbook" in index
    hardware = (tmp_path / "site" / "facts" / "hardware.html").read_text(encoding="utf-8")
    assert "discovered.local.cpu.cores" in hardware


def test_plugin_keeps_the_users_nav(started: Path, tmp_path: Path) -> None:
    config = yaml.safe_load((started / "mkdocs.yml").read_text())
    config["nav"] = [{"About us": "about.md"}, {"Facts": [{"Mine": "https://wiki.invalid/facts"}]}]
    (started / "mkdocs-nav.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    built = mkdocs_build(started, "-f", "mkdocs-nav.yml", "-d", str(tmp_path / "site"), timeout=300)
    (started / "mkdocs-nav.yml").unlink()
    assert built.returncode == 0, built.stderr
    index = (tmp_path / "site" / "about.html").read_text(encoding="utf-8")
    nav = index.split('class="md-nav md-nav--primary"', 1)[1]
    # the user's entries first and kept; the handbook's sections appended, except the
    # "Facts" title the user took
    assert nav.index("About us") < nav.index("Runbooks") < nav.index("Status documents")
    assert "Mine" in nav and "All facts" not in nav


# issue 27.2: the engine has no words of the shipped knowledge base

TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-.+][A-Za-z0-9]+)*")
# words of any GPU-server handbook (the engine's own categories and probes use them) and of
# any shell or Python text
GENERIC = {"GPU", "GPUs", "CPU", "CPUs", "CUDA", "NUMA", "NVIDIA", "PCIe", "SSH", "RAM", "GiB"}
GENERIC |= {"MiB", "HOME", "HOST", "PID", "CLI", "True", "False", "ERROR", "DEBUG", "python3"}


def _strings(node: object) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield str(key)
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def shipped_words() -> set[str]:
    """The shipped knowledge base's names, from its facts/ and mkdocs.yml: words seen at least
    twice that are written like names (an inner capital: SGLang; letters and digits: K2.5,
    H200; or capitalised and never lower-case there: Kimi), not generic hardware words."""
    texts: list[str] = []
    for path in sorted((REPO / "facts").glob("*.yaml")):
        texts += _strings(yaml.safe_load(path.read_text(encoding="utf-8")))
    config = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    texts += [config.get("site_name", ""), config.get("site_description", "")]
    count: Counter[str] = Counter(w for t in texts for w in TOKEN.findall(t))
    lower = {w for w in count if w.islower()}

    def name_like(w: str) -> bool:
        inner = any(c.isupper() for c in w[1:])
        mixed = any(c.isdigit() for c in w) and any(c.isalpha() for c in w)
        proper = w[0].isupper() and w[1:].islower() and w.lower() not in lower
        return len(w) >= 3 and (inner or mixed or proper)

    return {w for w, n in count.items() if n >= 2 and name_like(w)} - GENERIC


def _visible_text(site: Path) -> str:
    chunks = []
    for path in sorted(site.rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        text = re.sub(r"<script.*?</script>|<style.*?</style>", " ", text, flags=re.S)
        chunks.append(html.unescape(re.sub(r"<[^>]+>", " ", text)))
    return "\n".join(chunks)


def test_no_shipped_kb_words_in_a_new_kb(started: Path, tmp_path: Path) -> None:
    words = shipped_words()
    assert {"Kimi-K2.5", "SGLang", "EAGLE-3"} <= words  # the derivation finds the obvious
    assert len(words) > 50
    # what the new team wrote (its facts were discovered on this machine) may say anything
    own = {w for p in started.rglob("*.y*ml") for w in TOKEN.findall(p.read_text())}
    built = _build(started, tmp_path / "site")
    assert built.returncode == 0, built.stderr
    code, status, err = cli(started, "status", "--out", "-")
    assert code == 0, err
    rendered = _visible_text(tmp_path / "site") + status
    found = sorted({w for w in TOKEN.findall(rendered) if w in words and w not in own})
    assert found == [], f"the shipped knowledge base's words in a new one's handbook: {found}"
    # and in the engine's templates themselves
    engine = REPO / "src" / "factbook"
    for folder in ("handbook/templates", "dumps/status/templates", "knowledge/init_template"):
        for path in (engine / folder).rglob("*"):
            if path.is_file() and path.suffix != ".pyc":
                hits = sorted(set(TOKEN.findall(path.read_text(encoding="utf-8"))) & words)
                assert hits == [], f"{path.relative_to(REPO)}: {hits}"
    assert '<h1 id="team-handbook">Team handbook' in (tmp_path / "site/index.html").read_text()


def test_status_and_handbook_read_well(started: Path, tmp_path: Path) -> None:
    """A dated note is shown as one, an expectation in words, status/index.md not warned
    about by mkdocs, and a drift with its expectation in the status document."""
    root = tmp_path / "kb"
    shutil.copytree(started, root)
    (root / "facts" / "ours.yaml").write_text(
        yaml.safe_dump(
            {
                "facts": [
                    {
                        "id": "sw.python.future",
                        "category": "software",
                        "title": "Python 3.99 or newer",
                        "statement": "A version no box has yet.",
                        "status": "assumed",
                        "target": "local",
                        "sources": [{"note": "our plan", "date": "2026-12-01"}],
                        "check": {"probe": "python.version", "expect": {"version": ">=3.99"}},
                    }
                ]
            }
        )
    )
    code, _out, err = cli(root, "verify", "--target", "local", "sw.python.future")
    assert code == 1, err
    code, _out, err = cli(root, "status")
    assert code == 0, err
    status = next((root / "docs" / "status").glob("*-status.md")).read_text()
    assert "expected version >=3.99, observed " in status
    assert "version=" not in status
    built = _build(root, tmp_path / "site")
    assert built.returncode == 0, built.stderr
    assert "factbook:" in built.stderr  # INFO lines shown, and none of them says
    assert "status/index.md" not in built.stderr  # "not included in the nav"
    page = _visible_text(tmp_path / "site" / "facts")
    assert "Source: 2026-12-01 (our plan)" in re.sub(r"\s+", " ", page)
    assert "run 2026-12-01" not in page
    assert "(written by factbook init)" in page
