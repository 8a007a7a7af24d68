"""Lint SGLang launch command lines against the pitfalls that cost the team days.

`check_command("python -m sglang.launch_server ...")` parses the flags, resolves the speculative
ones the way sglang 0.5.23's argument hooks do (`_handle_eagle_family` in
sglang/srt/arg_groups/speculative_hook.py: NEXTN is EAGLE, auto-chosen steps/topk/draft tokens,
`num_draft_tokens = num_steps + 1` when topk is 1, 48 running requests), and reports:

- EAGLE with an EAGLE-3 draft (pit.eagle-vs-eagle3-flag): no aux hidden states are captured;
- topk=1 with num_draft_tokens != num_steps + 1 (pit.topk1-num-draft-tokens): silently changed;
- a missing or absent draft model path;
- the draft config's eagle_aux_hidden_state_layer_ids against SGLang's capture convention
  (pit.hidden-state-capture-offset).

The resolved values come back too, so tests/test_sglang_conformance.py can compare them with
the real package's resolution. `lint_runbook(kb, runbook)` is what `factbook lint` calls for
every runbook (factbook.runbooks.lint); it finds launch command lines in each step's source.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FactbookError, Problem

SGLANG_VERSION = "0.5.23"
CONVENTIONS = (SGLANG_VERSION, "plus-one")
PIT_TOPK1 = "pit.topk1-num-draft-tokens"
PIT_EAGLE3 = "pit.eagle-vs-eagle3-flag"
PIT_CAPTURE = "pit.hidden-state-capture-offset"
PIT_FC = "pit.fc-fusion-bypassed"


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
EAGLE_FAMILY = ("EAGLE", "EAGLE3", "STANDALONE")
# Targets whose checkpoint holds its own MTP head: a missing draft path means "use the target".
BUNDLED_DRAFT_ARCHS = {
    "DeepseekV32ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV4ForCausalLM",
    "Glm4MoeForCausalLM", "Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM",
    "BailingMoeForCausalLM", "BailingMoeV2ForCausalLM", "BailingMoeV2_5ForCausalLM",
    "MistralLarge3ForCausalLM", "PixtralForConditionalGeneration", "HYV3ForCausalLM",
    "HYV4ForCausalLM", "Qwen4ExpForConditionalGeneration",
}  # fmt: skip
AUTO_5_4_8 = {"LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM"}
# DeepSeek-V2/V3 (and Kimi-K2.5, which wraps DeepseekV3ForCausalLM) add 1 to the layer ids
# only when the first id is 1 in 0.5.23; other models always add 1.
DEEPSEEK_CAPTURE_ARCHS = {
    "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM",
    "KimiK25ForConditionalGeneration",
}  # fmt: skip
EAGLE3_DRAFT_ARCHS = ("LlamaForCausalLMEagle3", "KimiK25ForCausalLMEagle3")
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


@dataclass
class Resolved:
    """The speculative settings sglang would run with, or why it would refuse to start."""

    speculative_algorithm: str | None = None
    speculative_num_steps: Any = None
    speculative_eagle_topk: Any = None
    speculative_num_draft_tokens: Any = None
    speculative_draft_model_path: Any = None
    max_running_requests: Any = None
    error: str | None = None  # sglang raises: it would not start
    capture_layers: list[int] | None = None  # layers whose *input* SGLang captures
    captured: list[str] | None = None  # "embed" / "layer K" outputs the draft's fc receives

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


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


def read_local_config(path: Any) -> dict[str, Any] | None:
    """config.json of a local model folder, or None when not checkable here."""
    if not isinstance(path, str):
        return None
    candidate = Path(path).expanduser()
    cfg = candidate / "config.json" if candidate.is_dir() else candidate
    if cfg.name != "config.json" or not cfg.is_file():
        return None
    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def local_exists(path: Any) -> bool | None:
    """Whether a path exists here; None for a hub id or a value known only at run time."""
    if not isinstance(path, str):
        return None
    if not path.startswith(("/", "~", ".")):
        return None  # "org/name" is a hub repository id, not a local folder
    return Path(path).expanduser().exists()


def _archs(config: dict[str, Any] | None) -> list[str]:
    return [str(a) for a in (config or {}).get("architectures") or []]


def resolve(flags: dict[str, Any], target_arch: str | None = None) -> Resolved:
    """The speculative fields after sglang 0.5.23's hooks (eagle family only)."""
    out = Resolved(
        speculative_draft_model_path=flags.get("speculative_draft_model_path"),
        max_running_requests=flags.get("max_running_requests"),
        speculative_num_steps=flags.get("speculative_num_steps"),
        speculative_eagle_topk=flags.get("speculative_eagle_topk"),
        speculative_num_draft_tokens=flags.get("speculative_num_draft_tokens"),
    )
    algo = flags.get("speculative_algorithm")
    if algo is UNKNOWN:
        out.speculative_algorithm = UNKNOWN
        return out
    if algo is not None:
        algo = str(algo).upper()
        algo = "EAGLE" if algo == "NEXTN" else algo
    out.speculative_algorithm = algo
    if algo not in EAGLE_FAMILY:
        return out
    if out.max_running_requests is None:
        out.max_running_requests = 48
    if target_arch in BUNDLED_DRAFT_ARCHS and out.speculative_draft_model_path is None:
        out.speculative_draft_model_path = flags.get("model_path")
    steps, topk = out.speculative_num_steps, out.speculative_eagle_topk
    ndt = out.speculative_num_draft_tokens
    if UNKNOWN in (steps, topk, ndt):
        return out
    if not flags.get("speculative_adaptive") and steps is None:
        if topk is not None or ndt is not None:
            out.error = (
                "sglang asserts: --speculative-eagle-topk/--speculative-num-draft-tokens "
                "need --speculative-num-steps"
            )
            return out
        if algo == "STANDALONE":
            steps, topk, ndt = 3, 1, 4
        elif target_arch in AUTO_5_4_8:
            steps, topk, ndt = 5, 4, 8
        else:
            steps, topk, ndt = 3, 1, 4
    if topk is None:
        out.error = "sglang fails comparing topk None > 1: --speculative-eagle-topk is required"
        return out
    if topk == 1 and ndt != steps + 1:
        ndt = steps + 1
    if topk > 1 and (flags.get("page_size") or 1) > 1:
        backend = flags.get("attention_backend")
        if backend not in ("flashinfer", "fa3", "triton"):
            out.error = f"topk > 1 with page_size > 1 is not supported on backend {backend!r}"
    out.speculative_num_steps, out.speculative_eagle_topk = steps, topk
    out.speculative_num_draft_tokens = ndt
    return out


def capture_layers(
    layer_ids: list[int] | None,
    target_arch: str | None,
    num_layers: int | None,
    convention: str = SGLANG_VERSION,
) -> list[int] | None:
    """Layers whose input SGLang captures for EAGLE-3 (`set_eagle3_layers_to_capture`).

    `convention` "0.5.23" is that release; "plus-one" is older sglang (the seeds' dev checkout
    3207427), which added 1 to every id on DeepSeek targets too.
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown capture convention {convention!r} ({', '.join(CONVENTIONS)})")
    if layer_ids is None:
        if num_layers is None:
            return None
        return [2, num_layers // 2, num_layers - 3]
    if (
        convention == SGLANG_VERSION
        and target_arch in DEEPSEEK_CAPTURE_ARCHS
        and not (layer_ids and layer_ids[0] == 1)
    ):
        return list(layer_ids)
    return [v + 1 for v in layer_ids]


def _layer_ids(draft_config: dict[str, Any] | None) -> list[int] | None:
    eagle = (draft_config or {}).get("eagle_config") or {}
    ids = eagle.get("eagle_aux_hidden_state_layer_ids") if isinstance(eagle, dict) else None
    if ids is None:
        ids = (draft_config or {}).get("eagle_aux_hidden_state_layer_ids")
    return [int(v) for v in ids] if isinstance(ids, list) else None


def _num_layers(target_config: dict[str, Any] | None) -> int | None:
    cfg = target_config or {}
    n = cfg.get("num_hidden_layers") or (cfg.get("text_config") or {}).get("num_hidden_layers")
    return int(n) if isinstance(n, int) else None


def _name(index: int) -> str:
    return "embed" if index == 0 else f"layer {index - 1}"


def check_command(
    cmdline: str | Sequence[Any],
    *,
    read_config: Callable[[Any], dict[str, Any] | None] = read_local_config,
    exists: Callable[[Any], bool | None] = local_exists,
    convention: str = SGLANG_VERSION,
) -> LaunchReport | None:
    """Lint one command line; None when it does not launch SGLang.

    `read_config` and `exists` look at the box the server runs on: the defaults look here,
    which is right for local targets; a runbook lint of a remote target passes ones that
    know nothing (so only the flags are checked). `convention` picks the hidden-state
    capture rule (see capture_layers).
    """
    argv = launch_argv(cmdline)
    if argv is None:
        return None
    flags, findings = parse_flags(argv)
    target_config = read_config(flags.get("model_path"))
    archs = _archs(target_config)
    target_arch = archs[0] if archs else None
    resolved = resolve(flags, target_arch)
    report = LaunchReport(flags, resolved, findings, target_config=target_config)
    algo = resolved.speculative_algorithm
    if algo is UNKNOWN or algo not in EAGLE_FAMILY:
        return report
    if resolved.error:
        findings.append(Finding("error", f"sglang would refuse to start: {resolved.error}"))
    _check_topk1(flags, resolved, findings)
    _check_draft(flags, resolved, report, read_config, exists, target_arch, convention)
    return report


class LaunchRefused(FactbookError):
    """A launch command has errors the linter is sure of; it is not started."""


def preflight(
    argv: str | Sequence[Any],
    *,
    read_config: Callable[[Any], dict[str, Any] | None] = read_local_config,
    exists: Callable[[Any], bool | None] = local_exists,
) -> LaunchReport | None:
    """Lint right before a launch: raise LaunchRefused on errors, print warnings.

    For the executor's (or a cell's) `server.start(...)`: the argv is the real one, with
    every value known, so this catches what the static runbook lint could not evaluate.
    """
    report = check_command(argv, read_config=read_config, exists=exists)
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


# ---- runbooks ---------------------------------------------------------------------------

_SHELL_LINE = re.compile(r"^\s*!(.*)$", re.MULTILINE)


class CellEvaluator:
    """Constant propagation over a runbook's cells, in order, without running anything.

    Names assigned from literals, `fact(ID).get(KEY)`, `fact(ID).value`, `flags_from(ID)`,
    `env_from(ID)`, `str(...)`, `+` and simple list comprehensions keep their values from one
    cell to the next (a setup cell builds `argv`, a later one launches it); everything else
    (box.python, computed ports) is UNKNOWN, and checks that need it are skipped.
    """

    def __init__(self, kb: Any = None):
        self.kb = kb
        self.names: dict[str, Any] = {}

    def _fact(self, node: ast.AST) -> Any:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "fact"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and self.kb is not None
        ):
            return self.kb.facts.get(node.args[0].value)
        return None

    def value(self, node: ast.AST, local: dict[str, Any] | None = None) -> Any:
        names = {**self.names, **(local or {})}
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return names.get(node.id, UNKNOWN)
        if isinstance(node, (ast.List, ast.Tuple)):
            items: list[Any] = []
            for elt in node.elts:
                if isinstance(elt, ast.Starred):
                    inner = self.value(elt.value, local)
                    items.extend(inner if isinstance(inner, list) else [UNKNOWN, UNKNOWN])
                else:
                    items.append(self.value(elt, local))
            return items
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left, local), self.value(node.right, local)
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            return UNKNOWN
        if isinstance(node, ast.IfExp):
            test = self.value(node.test, local)
            if test is UNKNOWN:
                return UNKNOWN
            return self.value(node.body if test else node.orelse, local)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = self.value(node.left, local), self.value(node.comparators[0], local)
            if UNKNOWN in (left, right) or not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
                return UNKNOWN
            return (left == right) == isinstance(node.ops[0], ast.Eq)
        if isinstance(node, ast.ListComp) and len(node.generators) == 1:
            gen = node.generators[0]
            seq = self.value(gen.iter, local)
            if not isinstance(seq, list) or not isinstance(gen.target, ast.Name) or gen.ifs:
                return UNKNOWN
            return [self.value(node.elt, {**(local or {}), gen.target.id: x}) for x in seq]
        if isinstance(node, ast.Attribute) and node.attr == "value":
            found = self._fact(node.value)
            return found.value if found is not None else UNKNOWN
        if isinstance(node, ast.Call):
            return self._call(node, local)
        return UNKNOWN

    def _call(self, node: ast.Call, local: dict[str, Any] | None) -> Any:
        func = node.func
        arg0 = node.args[0] if node.args else None
        if isinstance(func, ast.Name) and func.id == "str" and arg0 is not None:
            inner = self.value(arg0, local)
            return UNKNOWN if inner is UNKNOWN else str(inner)
        if isinstance(func, ast.Name) and func.id in ("flags_from", "env_from"):
            found = self._fact(ast.Call(ast.Name("fact"), node.args, []))
            if found is None:
                return UNKNOWN
            value = found.value
            if func.id == "env_from":
                env = value.get("env") if isinstance(value, dict) else None
                return dict(env) if isinstance(env, dict) else UNKNOWN
            flags = value.get("flags") if isinstance(value, dict) else value
            if isinstance(flags, str):
                return shlex.split(flags)
            if isinstance(flags, list):
                return [part for item in flags for part in shlex.split(str(item))]
            return UNKNOWN
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "get"
            and isinstance(arg0, ast.Constant)
        ):
            found = self._fact(func.value)
            if found is not None:
                key = arg0.value
                return getattr(found, key) if key in ("value", "unit") else found.get(key)
        return UNKNOWN

    def run_cell(self, source: str) -> list[tuple[int, list[Any] | str]]:
        """Evaluate a cell's assignments; (line, command) for each SGLang launch it spells."""
        found: list[tuple[int, list[Any] | str]] = []
        for m in _SHELL_LINE.finditer(source):
            if any(k in m.group(1) for k in LAUNCH_MARKERS):
                found.append((source.count("\n", 0, m.start()) + 1, m.group(1)))
        if source.lstrip().startswith("%%"):
            body = source.split("\n", 1)[1] if "\n" in source else ""
            if any(k in body for k in LAUNCH_MARKERS):
                found.append((2, body))
            return found
        try:
            tree = ast.parse(_SHELL_LINE.sub("", source))
        except SyntaxError:
            return found
        seen: set[int] = set()
        for stmt in tree.body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.List) and id(node) not in seen:
                    items = self.value(node)
                    if launch_argv(items) is not None:
                        found.append((node.lineno, items))
                        seen.update(id(n) for n in ast.walk(node))
                elif (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and id(node) not in seen
                    and any(k in node.value for k in LAUNCH_MARKERS)
                ):
                    found.append((node.lineno, node.value))
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name):
                    self.names[target.id] = self.value(stmt.value)
        return sorted(found, key=lambda item: item[0])


def commands_in_source(source: str, kb: Any = None) -> list[tuple[int, list[Any] | str]]:
    """(line in the cell, command) for every SGLang launch one cell spells out on its own."""
    return CellEvaluator(kb).run_cell(source)


def lint_runbook(kb: Any, runbook: Any) -> list[Problem]:
    """Problems of every SGLang launch in a runbook (called by factbook.runbooks.lint).

    Cells are evaluated in order (see CellEvaluator), so an argv built in a setup cell from
    facts is linted with the facts' values. Paths are checked on this machine only when the
    step's target is a local one; for a remote box the flags alone are linted (the executor
    can check again before the launch with `check_command(argv, ...)`).
    """
    problems: list[Problem] = []
    evaluator = CellEvaluator(kb)
    for step in runbook.steps:
        target_name = runbook.step_target(step)
        target = kb.targets.get(target_name) if target_name else None
        local = target is not None and target.transport == "local"
        for offset, command in evaluator.run_cell(step.source):
            report = check_command(
                command,
                read_config=read_local_config if local else (lambda _p: None),
                exists=local_exists if local else (lambda _p: None),
            )
            if report is None:
                continue
            line = _file_line(runbook, step, offset)
            for finding in report.findings:
                problems.append(
                    Problem(runbook.display, line, f"step '{step.name}': sglang launch {finding}")
                )
    return problems


def _file_line(runbook: Any, step: Any, offset: int) -> int:
    """The file line of the cell's `offset`-th source line (after the fence and metadata)."""
    try:
        lines = Path(runbook.path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return step.line
    first = step.source.splitlines()[0] if step.source.strip() else ""
    for number in range(step.line, len(lines)):
        if lines[number] == first:
            return number + offset
    return step.line


def problems_for(report: LaunchReport, file: str, line: int) -> list[Problem]:
    """A report's findings as located problems (for callers outside runbooks)."""
    return [Problem(file, line, str(f)) for f in report.findings]
