"""Lint one SGLang launch command line against the pitfalls that cost the team days.

`check_command("python -m sglang.launch_server ...")` parses the flags (flags.py), resolves
them as sglang does (rules.py) and reports:

- EAGLE with an EAGLE-3 draft (pit.eagle-vs-eagle3-flag): no aux hidden states are captured;
- topk=1 with num_draft_tokens != num_steps + 1 (pit.topk1-num-draft-tokens): silently changed;
- a missing or absent draft model path;
- the draft config's eagle_aux_hidden_state_layer_ids against SGLang's capture convention
  (pit.hidden-state-capture-offset).

The resolved values come back too, so tests/test_sglang_conformance.py can compare them with
the real package's resolution. `preflight` refuses a launch the linter is sure is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factbook.errors import LaunchRefused, Problem
from factbook.knowledge.limits import CONFIG_MAX_BYTES
from factbook.serving.sglang.flags import UNKNOWN, Finding, launch_argv, parse_flags, similar_flags
from factbook.serving.sglang.reference import resolve_with_sglang
from factbook.serving.sglang.rules import (
    DEEPSEEK_CAPTURE_ARCHS,
    EAGLE3_DRAFT_ARCHS,
    EAGLE_FAMILY,
    SGLANG_VERSION,
    Resolved,
    capture_layers,
    resolve,
)

PIT_TOPK1 = "pit.topk1-num-draft-tokens"
PIT_EAGLE3 = "pit.eagle-vs-eagle3-flag"
PIT_CAPTURE = "pit.hidden-state-capture-offset"
PIT_FC = "pit.fc-fusion-bypassed"


@dataclass
class LaunchReport:
    """What the linter saw: the parsed flags, sglang's resolution and the findings."""

    flags: dict[str, Any]
    resolved: Resolved
    findings: list[Finding] = field(default_factory=list)
    draft_config: dict[str, Any] | None = None
    target_config: dict[str, Any] | None = None

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]


MAX_LAYER_IDS = 256  # a draft captures a handful of layers


def read_local_config(path: Any) -> dict[str, Any] | None:
    """config.json of a local model folder, or None when not checkable here. The path comes
    from a runbook or a command line: a name too long for the filesystem, a NUL, `~nobody`,
    a config of gigabytes or nested past Python's recursion is None, never an exception."""
    if not isinstance(path, str):
        return None
    try:
        candidate = Path(path).expanduser()
        cfg = candidate / "config.json" if candidate.is_dir() else candidate
        if cfg.name != "config.json" or not cfg.is_file():
            return None
        with cfg.open("rb") as handle:
            raw = handle.read(CONFIG_MAX_BYTES + 1)
        data = json.loads(raw) if len(raw) <= CONFIG_MAX_BYTES else None
    except (OSError, ValueError, RuntimeError, RecursionError):  # RuntimeError: ~nobody
        return None
    return data if isinstance(data, dict) else None


def local_exists(path: Any) -> bool | None:
    """Whether a path exists here; None for a hub id or a value known only at run time (or
    a path no filesystem call can take: too long, a NUL, an unknown `~user`)."""
    if not isinstance(path, str):
        return None
    if not path.startswith(("/", "~", ".")):
        return None  # "org/name" is a hub repository id, not a local folder
    try:
        return Path(path).expanduser().exists()
    except (OSError, ValueError, RuntimeError):
        return None


def _archs(config: dict[str, Any] | None) -> list[str]:
    archs = (config or {}).get("architectures")
    return [str(a)[:200] for a in archs[:MAX_LAYER_IDS]] if isinstance(archs, list) else []


def _layer_ids(draft_config: dict[str, Any] | None) -> list[int] | None:
    """The draft's capture layer ids: a short list of whole numbers, else None (a config is
    someone's file: `["a"]` was a ValueError, 100,000 ids a 100,000-id message)."""
    eagle = (draft_config or {}).get("eagle_config") or {}
    ids = eagle.get("eagle_aux_hidden_state_layer_ids") if isinstance(eagle, dict) else None
    if ids is None:
        ids = (draft_config or {}).get("eagle_aux_hidden_state_layer_ids")
    if not isinstance(ids, list) or len(ids) > MAX_LAYER_IDS:
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) and abs(v) < 1 << 20 for v in ids):
        return None
    return ids


def _num_layers(target_config: dict[str, Any] | None) -> int | None:
    cfg = target_config or {}
    text = cfg.get("text_config")
    n = cfg.get("num_hidden_layers") or (
        text.get("num_hidden_layers") if isinstance(text, dict) else None
    )
    return n if isinstance(n, int) and not isinstance(n, bool) and 0 < n < 1 << 20 else None


def _name(index: int) -> str:
    return "embed" if index == 0 else f"layer {index - 1}"


def check_command(
    cmdline: str | Sequence[Any],
    *,
    read_config: Callable[[Any], dict[str, Any] | None] = read_local_config,
    exists: Callable[[Any], bool | None] = local_exists,
    convention: str = SGLANG_VERSION,
    sglang_python: str | None = None,
) -> LaunchReport | None:
    """Lint one command line; None when it does not launch SGLang.

    `read_config` and `exists` look at the box the server runs on: the defaults look here,
    which is right for local targets; a runbook lint of a remote target passes ones that
    know nothing (so only the flags are checked). `convention` picks the hidden-state
    capture rule (see capture_layers). `sglang_python`, an interpreter where sglang imports,
    makes sglang itself resolve the flags (reference.py) instead of factbook's rules.
    """
    argv = launch_argv(cmdline)
    if argv is None:
        return None
    parsed = parse_flags(argv)
    flags = parsed.values
    report = LaunchReport(flags, Resolved(), [])
    if parsed.error:
        report.resolved.error = parsed.error
        report.findings.append(
            Finding("error", f"sglang {SGLANG_VERSION} would refuse to start: {parsed.error}")
        )
        return report
    report.findings += _unknown_flag_findings(parsed.unknown)
    target_config = read_config(flags.get("model_path"))
    archs = _archs(target_config)
    target_arch = archs[0] if archs else None
    report.target_config = target_config
    report.resolved = resolved = resolve(flags, target_arch)
    if sglang_python is not None and UNKNOWN not in argv:
        _ask_sglang(sglang_python, argv, resolved)
    algo = resolved.speculative_algorithm
    if algo is not UNKNOWN and algo in EAGLE_FAMILY:
        if resolved.error:
            report.findings.append(
                Finding("error", f"sglang would refuse to start: {resolved.error}")
            )
        _check_topk1(flags, resolved, report.findings)
        _check_draft(flags, resolved, report, read_config, exists, target_arch, convention)
    resolved.error = parsed.refusal or resolved.error  # the parser stops sglang first
    return report


def _unknown_flag_findings(unknown: list[str]) -> list[Finding]:
    """sglang refuses flags it does not know; a speculative one the checks could not read."""
    findings = []
    for index, token in enumerate(unknown):
        if not token.startswith("-") and index and unknown[index - 1].startswith("-"):
            continue  # the unknown flag's value, named with it
        if not token.startswith("-"):
            message = f"{token!r} is not a flag's value: sglang {SGLANG_VERSION} refuses it"
        else:
            near = similar_flags(token)
            hint = f"; did you mean {' or '.join(near)}?" if near else ""
            checked = (
                "; the speculative checks did not read it"
                if token.startswith("--speculative-")
                else ""
            )
            message = (
                f"sglang {SGLANG_VERSION} has no flag {token.split('=', 1)[0]} and would refuse "
                f"to start (unrecognized arguments){checked}{hint}"
            )
        findings.append(Finding("warning", message))
    return findings


def _ask_sglang(python: str, argv: list[Any], resolved: Resolved) -> None:
    """Replace the predicted fields (and refusal) with what sglang itself resolves."""
    answer = resolve_with_sglang(python, [argv])["resolutions"][0]
    if "error" in answer:
        resolved.error = answer["error"]
        return
    resolved.error = None
    for key, value in answer["ok"].items():
        setattr(resolved, key, value)


def preflight(
    argv: str | Sequence[Any],
    *,
    read_config: Callable[[Any], dict[str, Any] | None] = read_local_config,
    exists: Callable[[Any], bool | None] = local_exists,
    sglang_python: str | None = None,
) -> LaunchReport | None:
    """Lint right before a launch: raise LaunchRefused on errors, print warnings.

    For the executor's (or a cell's) `server.start(...)`: the argv is the real one, with
    every value known, so this catches what the static runbook lint could not evaluate.
    `sglang_python` (see check_command) is for launches on this machine, where sglang reads
    the same folders the server will.
    """
    report = check_command(
        argv, read_config=read_config, exists=exists, sglang_python=sglang_python
    )
    if report is None:
        return None
    if report.errors:
        raise LaunchRefused(
            "sglang launch refused:\n" + "\n".join(f"  {f}" for f in report.findings)
        )
    for finding in report.findings:
        print(f"sglang launch {finding}", flush=True)
    return report


def _check_topk1(flags: dict[str, Any], resolved: Resolved, findings: list[Finding]) -> None:
    asked = flags.get("speculative_num_draft_tokens")
    got = resolved.speculative_num_draft_tokens
    if resolved.error or asked in (None, UNKNOWN) or got in (None, UNKNOWN) or asked == got:
        return
    findings.append(
        Finding(
            "warning",
            f"--speculative-eagle-topk 1 with --speculative-num-draft-tokens {asked}: "
            f"sglang {SGLANG_VERSION} silently changes num_draft_tokens to {got} "
            f"(num_steps + 1); for {asked} draft tokens pass --speculative-num-steps {asked - 1}",
            PIT_TOPK1,
        )
    )


def _check_draft(
    flags: dict[str, Any],
    resolved: Resolved,
    report: LaunchReport,
    read_config: Callable[[Any], dict[str, Any] | None],
    exists: Callable[[Any], bool | None],
    target_arch: str | None,
    convention: str,
) -> None:
    findings = report.findings
    path = resolved.speculative_draft_model_path
    algo = resolved.speculative_algorithm
    if path is None:
        findings.append(
            Finding(
                "error",
                f"--speculative-algorithm {algo} without --speculative-draft-model-path "
                f"(target architecture {target_arch or 'unknown'} ships no draft head)",
            )
        )
        return
    if path is UNKNOWN:
        return
    if exists(path) is False:
        findings.append(Finding("error", f"draft model path {path} does not exist"))
        return
    draft = read_config(path)
    report.draft_config = draft
    if draft is None:
        return
    is_eagle3_draft = any(a in EAGLE3_DRAFT_ARCHS or "Eagle3" in a for a in _archs(draft))
    if is_eagle3_draft and algo == "EAGLE":
        findings.append(
            Finding(
                "error",
                f"draft {path} is an EAGLE-3 model ({', '.join(_archs(draft))}) but "
                "--speculative-algorithm is EAGLE: is_eagle3() is false, no aux hidden states "
                f"are captured and the fc fusion is bypassed ({PIT_FC}); use EAGLE3",
                PIT_EAGLE3,
            )
        )
        return
    if algo != "EAGLE3":
        return
    _check_capture(report, draft, target_arch, path, convention)


def _check_capture(
    report: LaunchReport,
    draft: dict[str, Any],
    target_arch: str | None,
    path: str,
    convention: str,
) -> None:
    ids = _layer_ids(draft)
    num_layers = _num_layers(report.target_config)
    layers = capture_layers(ids, target_arch, num_layers, convention)
    if layers is None:
        return
    report.resolved.capture_layers = layers
    report.resolved.captured = [_name(k) for k in layers]
    findings = report.findings
    if ids is None:
        findings.append(
            Finding(
                "warning",
                f"draft config {path} has no eagle_aux_hidden_state_layer_ids: sglang captures "
                f"{', '.join(report.resolved.captured)} by default; the draft must have been "
                "trained on exactly these",
                PIT_CAPTURE,
            )
        )
        return
    if num_layers is not None:
        never = [v for v, k in zip(ids, layers, strict=True) if not 0 <= k < num_layers]
        if never:
            findings.append(
                Finding(
                    "error",
                    f"draft eagle_aux_hidden_state_layer_ids {ids}: id(s) {never} are never "
                    f"captured on a {num_layers}-layer target, so the fc receives "
                    f"{len(ids) - len(never)} hidden states instead of {len(ids)}",
                    PIT_CAPTURE,
                )
            )
            return
    meant = ["embed" if v == -1 else f"layer {v}" for v in ids]  # id = output of layer id
    if meant != report.resolved.captured:
        rule = (
            "adds 1 only when the first id is 1"
            if target_arch in DEEPSEEK_CAPTURE_ARCHS and convention == SGLANG_VERSION
            else "captures the input of layer id+1"
        )
        findings.append(
            Finding(
                "warning",
                f"draft eagle_aux_hidden_state_layer_ids {ids} read as outputs of "
                f"[{', '.join(meant)}], but sglang {convention} ({target_arch}: {rule}) "
                f"feeds the fc [{', '.join(report.resolved.captured)}]",
                PIT_CAPTURE,
            )
        )


def problems_for(report: LaunchReport, file: str, line: int) -> list[Problem]:
    """A report's findings as located problems (for callers outside runbooks)."""
    return [Problem(file, line, str(f)) for f in report.findings]
