"""Ask the real sglang: its own `prepare_server_args` and resolution, in a Python that has it.

Where sglang imports (on the box, or a venv made by scripts/sglang-venv), its answer beats
any re-implementation: `resolve_with_sglang(python, argvs)` runs one subprocess of that
interpreter for a whole batch of command lines (importing sglang takes seconds, so callers
batch), parses each with `prepare_server_args` and runs `ServerArgs.resolve_once()` (what
`sglang.launch_server` does before it starts anything), then reports the speculative fields
or why sglang refused. The same harness answers the EAGLE-3 capture layers of sglang's
DeepSeek and Llama classes. tests/test_sglang_conformance.py holds factbook's own parser and
rules to these answers.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from factbook.errors import UsageError

FIELDS = (
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "speculative_draft_model_path",
    "max_running_requests",
)
_MARK = "@@RESULT@@"

# Runs inside the sglang interpreter: a job as JSON on stdin, the answers as JSON on stdout.
HARNESS = r"""
import argparse, contextlib, io, json, logging, sys, warnings
from types import SimpleNamespace as NS
warnings.simplefilter("ignore")
logging.disable(logging.CRITICAL)
import sglang
from sglang.srt.server_args import ServerArgs, prepare_server_args

job = json.load(sys.stdin)
out = {"version": sglang.__version__, "resolutions": [], "captures": []}
# the flags before sglang's hooks ran: one parser for the batch (building one walks every
# option of ServerArgs, about as long as a resolution; parsing leaves it unchanged)
parser = argparse.ArgumentParser(prog="sglang serve")
ServerArgs.add_cli_args(parser)
for argv in job["resolutions"]:
    try:
        with contextlib.redirect_stderr(io.StringIO()) as err:
            args = prepare_server_args(argv)
            args.resolve_once()
        d = args.resolved_dict()
        asked = vars(parser.parse_args(argv))
        out["resolutions"].append({"ok": {k: d[k] for k in job["fields"]},
                                   "asked": {k: asked[k] for k in job["fields"]}})
    except SystemExit as exc:  # argparse: ambiguous, unknown or bad flags
        lines = err.getvalue().strip().splitlines()
        out["resolutions"].append({"error": (lines[-1] if lines else f"exit {exc.code}")[:300]})
    except BaseException as exc:  # the hooks assert, raise ValueError or TypeError
        out["resolutions"].append({"error": f"{type(exc).__name__}: {exc}"[:300]})
if job.get("captures"):
    from sglang.srt.models.deepseek_v2 import DeepseekV2ForCausalLM, DeepseekV3ForCausalLM
    from sglang.srt.models.llama import LlamaForCausalLM
    classes = {c.__name__: c for c in (DeepseekV2ForCausalLM, DeepseekV3ForCausalLM,
                                       LlamaForCausalLM)}
    for arch, ids, n in job["captures"]:
        me = NS(pp_group=NS(is_last_rank=True), config=NS(num_hidden_layers=n), model=NS())
        classes[arch].set_eagle3_layers_to_capture(me, ids)
        out["captures"].append(list(me.model.layers_to_capture))
print("@@RESULT@@" + json.dumps(out))
"""


def local_sglang_python() -> str | None:
    """This interpreter when sglang is installed in it (no import: that costs seconds)."""
    return sys.executable if importlib.util.find_spec("sglang") is not None else None


def harness_argv(python: str) -> list[str]:
    """The harness's command line. `-c` puts the current folder first on sys.path, so run from
    a knowledge base holding `json.py` or `argparse.py` the harness imported and ran that file:
    linting a launch command must never run the knowledge base's code. `-I` (isolated) leaves
    out the current folder, the user's site-packages and every PYTHON* variable (hence `-W`
    instead of PYTHONWARNINGS); the caller also runs it from an empty temporary folder."""
    return [python, "-I", "-W", "ignore", "-c", HARNESS]


def resolve_with_sglang(
    python: str,
    argvs: Sequence[Sequence[str]],
    *,
    captures: Sequence[tuple[str, list[int] | None, int]] = (),
    timeout: float = 600,
) -> dict[str, Any]:
    """{"version", "resolutions": [{"ok": {field: value}, "asked": {field: flag value}} |
    {"error": msg}], "captures"}: "asked" is what the parser read, "ok" what sglang runs.

    One process for the whole batch; UsageError when that interpreter cannot run sglang.
    """
    job = {
        "resolutions": [[str(a) for a in argv] for argv in argvs],
        "fields": FIELDS,
        "captures": [list(c) for c in captures],
    }
    try:
        with tempfile.TemporaryDirectory(prefix="factbook-sglang-") as neutral:
            proc = subprocess.run(
                harness_argv(python),
                input=json.dumps(job),
                capture_output=True,
                text=True,
                timeout=timeout,
                cwd=neutral,
            )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"cannot ask sglang in {python}: {exc}") from None
    found = [line for line in proc.stdout.splitlines() if line.startswith(_MARK)]
    if proc.returncode != 0 or not found:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        raise UsageError(f"cannot ask sglang in {python} (exit {proc.returncode}): {tail}")
    return json.loads(found[-1][len(_MARK) :])
