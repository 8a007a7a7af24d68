"""Parse an SGLang launch command line into the fields the speculative checks read.

`launch_argv` finds the flags after `-m sglang.launch_server` / `sglang serve`; `parse_flags`
maps them to sglang's field names. A value a runbook only knows at run time is UNKNOWN.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class _Unknown:
    """A flag value a runbook computes at run time: checks that need it are skipped."""

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN: Any = _Unknown()

# sglang flag (and its aliases) -> (field, type). Only what the speculative checks read.
FLAGS: dict[str, tuple[str, type]] = {
    "--model-path": ("model_path", str),
    "--model": ("model_path", str),
    "--speculative-algorithm": ("speculative_algorithm", str),
    "--speculative-draft-model-path": ("speculative_draft_model_path", str),
    "--speculative-draft-model": ("speculative_draft_model_path", str),
    "--speculative-num-steps": ("speculative_num_steps", int),
    "--speculative-eagle-topk": ("speculative_eagle_topk", int),
    "--speculative-num-draft-tokens": ("speculative_num_draft_tokens", int),
    "--max-running-requests": ("max_running_requests", int),
    "--attention-backend": ("attention_backend", str),
    "--page-size": ("page_size", int),
    "--speculative-adaptive": ("speculative_adaptive", bool),
}

LAUNCH_MARKERS = ("sglang.launch_server", "sglang serve")


@dataclass
class Finding:
    """One thing wrong (or worth knowing) about a launch command."""

    severity: str  # "error" | "warning"
    message: str
    pitfall: str | None = None

    def __str__(self) -> str:
        see = f" (see {self.pitfall})" if self.pitfall else ""
        return f"{self.severity}: {self.message}{see}"


def launch_argv(cmdline: str | Sequence[str]) -> list[str] | None:
    """The flags after `-m sglang.launch_server` / `sglang serve`; None if not a launch."""
    if isinstance(cmdline, str):
        try:
            tokens = shlex.split(cmdline.replace("\\\n", " "), comments=True)
        except ValueError:
            return None
    else:
        tokens = list(cmdline)
    for i, tok in enumerate(tokens):
        if tok is UNKNOWN:
            continue
        if tok in ("sglang.launch_server", "sglang.launch_server.py") or tok.endswith(
            "/sglang/launch_server.py"
        ):
            return tokens[i + 1 :]
        if Path(str(tok)).name == "sglang" and i + 1 < len(tokens) and tokens[i + 1] == "serve":
            return tokens[i + 2 :]
    return None


def parse_flags(argv: Sequence[Any]) -> tuple[dict[str, Any], list[Finding]]:
    """Known flags to field values (last one wins, as in argparse); bad values are findings."""
    values: dict[str, Any] = {}
    findings: list[Finding] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        i += 1
        if tok is UNKNOWN or not str(tok).startswith("--"):
            continue
        name, eq, inline = str(tok).partition("=")
        spec = FLAGS.get(name)
        if spec is None:
            continue
        key, kind = spec
        if kind is bool:
            values[key] = True
            continue
        if eq:
            raw: Any = inline
        elif i < len(argv) and (argv[i] is UNKNOWN or not str(argv[i]).startswith("--")):
            raw = argv[i]
            i += 1
        else:
            findings.append(Finding("error", f"{name} expects a value"))
            continue
        if raw is UNKNOWN or kind is str:
            values[key] = raw
            continue
        try:
            values[key] = int(raw)
        except ValueError:
            findings.append(Finding("error", f"{name} expects an integer, got {raw!r}"))
    return values, findings
