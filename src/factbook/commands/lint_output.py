"""`factbook lint` problems in the formats editors and CI read: text, JSON, SARIF, GitHub.

- text: `file:line: message`, one a line (what people and most editors' problem matchers read)
- json: a list of `{"file", "line", "message", "rule", "severity"}` objects
- sarif: SARIF 2.1.0, for GitHub code scanning and IDE SARIF viewers
- github: `::error file=F,line=L::message` workflow commands, shown as annotations on a PR

Text keeps paths relative to the knowledge base root as today. SARIF and GitHub need paths
relative to the repository (the working directory in CI), so there a problem's path is
taken relative to the working directory when the knowledge base lies inside it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

from factbook.errors import Problem, visible
from factbook.judging.sanitize import json_safe
from factbook.store.stamps import FACTBOOK_VERSION as __version__

FORMATS = ("text", "json", "sarif", "github")
SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)

# A rule per kind of file, so code scanning can group and filter problems.
RULES = {
    "fact-file": "a fact file under facts/ is invalid",
    "targets": "targets.yaml is invalid",
    "milestones": "milestones.yaml is invalid",
    "custom-probe": "a custom probe under checks/ is invalid",
    "runbook": "a runbook under runbooks/ is invalid",
    "launch-command": "a server launch command in a runbook is refused or misconfigured",
    "knowledge-base": "a knowledge base file is invalid",
}


def rule_of(problem: Problem) -> str:
    """The rule a problem belongs to, from the file it is in."""
    path = problem.file.replace("\\", "/")
    if path.startswith("runbooks/"):
        return "launch-command" if "launch" in problem.message else "runbook"
    if path.startswith("facts/"):
        return "fact-file"
    if path.startswith("checks/"):
        return "custom-probe"
    return {"targets.yaml": "targets", "milestones.yaml": "milestones"}.get(path, "knowledge-base")


def render(fmt: str, problems: list[Problem], *, root: Path, cwd: Path | None = None) -> str:
    """All problems in one format; '' for text and github when there are none."""
    if fmt == "text":
        return "".join(f"{p}\n" for p in problems)  # Problem shows controls escaped
    if fmt == "json":
        # ASCII: a bidi override or line separator in a file name stays an escape, not raw
        return json.dumps([_as_dict(p) for p in problems], indent=1) + "\n"
    base = Path(cwd or Path.cwd())
    if fmt == "sarif":
        return json.dumps(to_sarif(problems, root=root, cwd=base), indent=1) + "\n"
    if fmt == "github":
        return "".join(github_command(p, path=repo_path(p, root=root, cwd=base)) for p in problems)
    raise ValueError(f"unknown lint format {fmt!r}")


def _as_dict(problem: Problem) -> dict[str, object]:
    return {
        "file": json_safe(problem.file),
        "line": problem.line,
        "message": json_safe(problem.message),
        "rule": rule_of(problem),
        "severity": "error",
    }


def repo_path(problem: Problem, *, root: Path, cwd: Path) -> str:
    """The problem's file relative to `cwd` when inside it, else absolute (POSIX slashes)."""
    full = Path(os.path.abspath(Path(root) / problem.file))
    try:
        return full.relative_to(os.path.abspath(cwd)).as_posix()
    except ValueError:
        return full.as_posix()


def to_sarif(problems: list[Problem], *, root: Path, cwd: Path) -> dict[str, object]:
    """A SARIF 2.1.0 log of one run, valid against the OASIS schema."""
    rule_ids = list(RULES)
    results = []
    for problem in problems:
        rule = rule_of(problem)
        path = repo_path(problem, root=root, cwd=cwd)
        location: dict[str, object] = {"artifactLocation": {"uri": _uri(path)}}
        if problem.line >= 1:
            location["region"] = {"startLine": problem.line}
        results.append(
            {
                "ruleId": rule,
                "ruleIndex": rule_ids.index(rule),
                "level": "error",
                "message": {"text": json_safe(problem.message) or "(no message)"},
                "locations": [{"physicalLocation": location}],
            }
        )
    driver = {
        "name": "factbook",
        "version": __version__,
        "rules": [
            {
                "id": rule,
                "shortDescription": {"text": text},
                "defaultConfiguration": {"level": "error"},
            }
            for rule, text in RULES.items()
        ],
    }
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "results": results}],
    }


def _uri(path: str) -> str:
    """A URI reference: relative paths percent-encoded, absolute ones as file: URIs."""
    if path.startswith("/"):
        return Path(path).as_uri()
    return quote(json_safe(path), safe="/")


def github_command(problem: Problem, *, path: str) -> str:
    """One `::error` workflow command, escaped as GitHub's toolkit escapes them."""
    props = [f"file={_gh_property(path)}"]
    if problem.line >= 1:
        props.append(f"line={problem.line}")
    props.append(f"title={_gh_property('factbook lint: ' + rule_of(problem))}")
    message = _gh_data(visible(problem.message, keep="\n"))  # GitHub escapes LF
    return f"::error {','.join(props)}::{message}\n"


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_data(visible(text, keep="\n")).replace(":", "%3A").replace(",", "%2C")
