"""Whether a dump's words fix a live check, and which: the probe, its arguments, the expectation.

A check is proposed only where the text leaves no choice, and a reviewer would accept it:

- a version of a **known** component: a Python distribution by its real PyPI name
  (DISTRIBUTIONS maps what dumps call it: `flashinfer` → `flashinfer-python`, `modelopt` →
  `nvidia-modelopt`; a name this knowledge base already checks with `pkg.version` counts too),
  or a system component and the probe that sees it (SYSTEM: the driver → `gpu.driver`, CUDA →
  `cuda.nvcc_version`, NCCL and RCCL → what torch itself reports, `torch.info`'s `nccl`). The
  version must parse (PEP 440 for distributions); `12.8` means any 12.8.x (`==12.8.*`);
- a GPU count, only for NVIDIA GPUs (the gpu probes read nvidia-smi);
- a path that is a path: absolute (or `~/`), written as one (not `</think>`, not `tok/s`),
  naming one thing (no glob, no `0-3` range, no `<placeholder>`), in an item that says it is
  there (not a plan to create it, not a file that was removed).

Anything else gets no check, and `why` says so for the review. The result is linted against
the probe catalog (kb.probes: name, required and allowed arguments) and the expectation
operators before it is proposed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from factbook.dumps.capture.quickre import starting_with
from factbook.judging.expectations import problems_in
from factbook.judging.versions import pep440_version
from factbook.knowledge.kb import KnowledgeBase

# What a dump calls a Python package → its distribution name on PyPI.
DISTRIBUTIONS = {
    **{
        name: name
        for name in [
            "torch",
            "vllm",
            "sglang",
            "sgl-kernel",
            "transformers",
            "triton",
            "speculators",
            "flash-attn",
            "xformers",
            "deepspeed",
            "accelerate",
            "safetensors",
            "tokenizers",
            "numpy",
            "ray",
            "peft",
            "trl",
            "bitsandbytes",
            "llama-cpp-python",
            "tensorrt",
            "tensorrt-llm",
            "nvidia-modelopt",
            "openai",
            "compressed-tensors",
            "huggingface-hub",
            "datasets",
            "torchvision",
            "torchaudio",
            "torchao",
            "xgrammar",
            "outlines",
            "lmcache",
            "flashinfer-python",
            "nvidia-nccl-cu12",
            "nvidia-nccl-cu13",
            "nvidia-cudnn-cu12",
            "nvidia-cudnn-cu13",
            "onnxruntime",
            "optimum",
            "auto-gptq",
            "autoawq",
            "gptqmodel",
            "llmcompressor",
            "liger-kernel",
            "unsloth",
            "megatron-core",
            "sentencepiece",
            "tiktoken",
            "mistral-common",
            "jax",
            "diffusers",
            "einops",
            "pydantic",
            "fastapi",
            "uvicorn",
            "aiohttp",
            "nvidia-ml-py",
            "pynvml",
            "cuda-python",
            "triton-kernels",
            "deep-gemm",
            "mooncake-transfer-engine",
            "nixl",
        ]
    },
    "pytorch": "torch",
    "flashinfer": "flashinfer-python",
    "flash-attention": "flash-attn",
    "flashattention": "flash-attn",
    "sgl-kernels": "sgl-kernel",
    "trt-llm": "tensorrt-llm",
    "tensorrt-llm-python": "tensorrt-llm",
    "modelopt": "nvidia-modelopt",
    "llama-cpp": "llama-cpp-python",
    "hf-hub": "huggingface-hub",
    "huggingface-hub-python": "huggingface-hub",
}
# Versions that are not Python distributions: (probe, path into its value) or None (no probe
# sees it; the review says so).
SYSTEM: dict[str, tuple[str, str | None] | None] = {
    "nvidia driver": ("gpu.driver", None),
    "nvidia-driver": ("gpu.driver", None),
    "gpu driver": ("gpu.driver", None),
    "driver": ("gpu.driver", None),
    "cuda": ("cuda.nvcc_version", None),
    "cuda toolkit": ("cuda.nvcc_version", None),
    "nvcc": ("cuda.nvcc_version", None),
    "nccl": ("torch.info", "nccl"),
    "rccl": ("torch.info", "nccl"),
    "python": ("python.version", None),
    "kernel": ("os.kernel", None),
    "linux kernel": ("os.kernel", None),
    "rocm": None,
    "hip": None,
    "cudnn": None,
    "cuda driver": None,
    "triton inference server": None,
    "tritonserver": None,
    "nvidia container toolkit": None,
    "docker": None,
    "ubuntu": None,
    "llama.cpp": None,
}
NVIDIA = starting_with(
    "abghlnqrtv",
    r"\bNVIDIA\b|\b(?:[GH]\d{3}|[AB]\d{2,3}|L40S?|L4|V100|T4|GB200|GH200|RTX|Quadro|Tesla)\b",
    re.I,
)
OTHER_GPUS = starting_with("agimrt", r"\b(?:AMD|Instinct|MI\d{3}X?|Radeon|Gaudi|TPU)\b", re.I)
_VERSION_TOKEN = re.compile(
    r"(?<![\w.+-])v?(?P<ver>\d+(?:\.\d+)+(?:\.?[a-z][\w.]*)?(?:\+[\w.]+)?(?:-[\w.-]+)?)(?![\w.]*\s*"
    r"(?:GB|TB|MiB|GiB|MB|W|x\b|%|tok|ms\b|s\b|min\b|B\b|M\b|K\b))"
)
_NAME_WORD = re.compile(r"[A-Za-z][\w.+-]*")
FAILURE = starting_with(
    "bcdefghiklnorstw",
    r"\b(?:crash(?:es|ed|ing)?|hangs?|hung|hanging|OOMs?|OOM-killed|out of memory|fails?|failed"
    r"|failing|errors?|segfaults?|deadlocks?|illegal memory access|NaNs?|garbage|silently"
    r"|stall(?:s|ed)?|freez(?:e|es)|frozen"
    r"|refuses?|breaks?|broken|stuck|times? out|killed|drops?|cut(?: off)?|truncat\w*"
    r"|does(?:n't| not) (?:work|build|load|start)|never (?:opens?|starts?|returns?)"
    r"|slower|wrong|corrupt\w*|leaks?)\b",
    re.I,
)
FIX = starting_with(
    "acdefiklprsuw",
    r"\b(?:fix(?:es|ed)?|avoids?|avoided|work(?:s|ed)? around|workaround|solv(?:e|es|ed)"
    r"|resolv(?:e|es|ed)|prevents?|cures?)\b|\binstead\b|^(?:pass|set|use|add|remove|disable"
    r"|enable|cap|capping|lower|raise|increase|decrease|reduce|kill|restart|rebuild|export"
    r"|install|upgrade|downgrade|pin|switch|apply|rm|delete|unset|limit|run|ulimit)\b",
    re.I,
)
NOT_THERE = starting_with(
    "acdgilmnprstw",
    r"\b(?:will|to be|should|todo|planned|later|not (?:yet )?(?:exist|there|created)|missing"
    r"|deleted|removed|no longer|gone)\b"
    r"|^(?:move|create|write|install|set up|add|copy|download|put)\b",
    re.I,
)
UNIT_SEGMENTS = frozenset(
    [
        "s",
        "sec",
        "second",
        "day",
        "h",
        "hr",
        "hour",
        "min",
        "token",
        "tok",
        "req",
        "gpu",
        "node",
        "step",
    ]
)


@dataclass
class Fit:
    """A proposed check, or why there is none (for the review)."""

    check: dict[str, Any] | None = None
    why: str = ""


@lru_cache(maxsize=8192)
def norm_name(name: str) -> str:
    """A component's name folded (`TensorRT_LLM` -> `tensorrt-llm`); remembered, as a dump
    names the same few components on thousands of lines."""
    return _NAME_SEPARATORS.sub("-", name.strip().lower())


_NAME_SEPARATORS = re.compile(r"[-_.\s]+")


def has_failure(text: str) -> bool:
    return bool(FAILURE.search(text))


def has_fix(text: str) -> bool:
    return any(FIX.search(part.strip()) for part in re.split(r"[;:—–]|\. |->|→", text))


def version_mentions(text: str, known: frozenset[str] = frozenset()) -> list[tuple[str, str, bool]]:
    """(name as written, version, whether the name is a known component) for every version
    in the text: the one to three words before it name it (`CUDA toolkit 12.6`,
    `torch: 2.10.0+cu128`, `| TensorRT-LLM | 0.17.0 |`)."""
    out: list[tuple[str, str, bool]] = []
    for words, version in _version_candidates(text):
        best: tuple[str, bool] | None = None
        for take in (3, 2, 1):
            if len(words) < take:
                continue
            name = " ".join(words[-take:])
            if lookup(name, known)[0] is not None:
                best = (name, True)
                break
        name, is_known = best or (words[-1], False)
        out.append((name, version, is_known))
    return out


@lru_cache(maxsize=1024)
def _version_candidates(text: str) -> tuple[tuple[tuple[str, ...], str], ...]:
    """Each plausible version in the text with the (up to three) words before it: what
    `version_mentions` reads, whatever components are known. Remembered: an item is asked
    for when it is placed, then again when its value is extracted."""
    out = []
    for found in _VERSION_TOKEN.finditer(text):
        version = found.group("ver").rstrip(".-")
        if _FACTOR.fullmatch(version) or not _plausible_version(version):
            continue  # `1.8x throughput`: a factor, not a version
        before = _NOT_NAME.sub(" ", text[max(0, found.start() - 80) : found.start()])
        words = tuple(_NAME_WORD.findall(before)[-3:])
        if words:
            out.append((words, version))
    return tuple(out)


_FACTOR = re.compile(r"[\d.]+x")
_NOT_NAME = re.compile(r"[|:=`*]+|\bversions?\b|\bv$")
_TWO_NUMBERS = re.compile(r"\d+\.\d+")


def _plausible_version(text: str) -> bool:
    return not _TWO_NUMBERS.fullmatch(text) or len(text.split(".")[0].lstrip("0")) <= 3


@lru_cache(maxsize=8192)
def lookup(name: str, known: frozenset[str] = frozenset()) -> tuple[str | None, str]:
    """('pkg'|'system'|None, the distribution or component) for a name as a dump writes it
    (remembered: version_mentions asks it of the words before every version on every line)."""
    key = name.strip().lower()
    if key.startswith("nvidia ") and key not in SYSTEM:
        key = key[len("nvidia ") :] if norm_name(key) not in DISTRIBUTIONS else key
    if key in SYSTEM:
        return "system", key
    dist = DISTRIBUTIONS.get(norm_name(key))
    if dist is not None:
        return "pkg", dist
    if norm_name(key) in known:
        return "pkg", norm_name(key)
    return None, key


def version_check(name: str, version: str, known: frozenset[str] = frozenset()) -> Fit:
    """`pkg.version`, or the system probe, pinned to what the dump says."""
    kind, what = lookup(name, known)
    if kind is None:
        return Fit(why=f"no check: {name!r} is not a component factbook knows (add one by hand)")
    if kind == "system":
        probe = SYSTEM[what]
        if probe is None:
            return Fit(why=f"no check: no probe reads the {name} version")
        spec = _spec(version, strict=probe[0] in ("python.version", "torch.info"))
        if spec is None:
            return Fit(why=f"no check: {version!r} does not parse as a version")
        expect: dict[str, Any] = {"version": spec}
        if probe[1]:
            expect = {"path": probe[1], **expect}
        return Fit({"probe": probe[0], "args": {}, "expect": expect})
    spec = _spec(version, strict=True)
    if spec is None:
        return Fit(why=f"no check: {version!r} is not a PEP 440 version of {what}")
    return Fit({"probe": "pkg.version", "args": {"name": what}, "expect": {"version": spec}})


def _spec(version: str, *, strict: bool) -> str | None:
    """`==X` for a full version, `==X.*` for a release named by two numbers (`12.8`)."""
    parsed = pep440_version(version)
    if parsed is None:
        if strict or not re.fullmatch(r"v?\d[\w.+~:-]*", version):
            return None
        return f"=={version}"
    plain = not (parsed.pre or parsed.post or parsed.dev or parsed.local)
    if plain and len(parsed.release) <= 2:
        return f"=={version}.*"
    return f"=={version}"


def gpu_count_check(count: int, text: str) -> Fit:
    if OTHER_GPUS.search(text) and not NVIDIA.search(text):
        return Fit(why="no check: the gpu probes read nvidia-smi, and these GPUs are not NVIDIA's")
    if not NVIDIA.search(text):
        return Fit(why="no check: the text does not say whose GPUs these are")
    return Fit({"probe": "gpu.count", "args": {}, "expect": {"eq": count}})


_PATH = re.compile(r"(?<![\w~.:/<\-])(?P<path>~?/(?:[\w.@+*?{}\[\]<>$-]+/?)+)(?!>)")


def paths(text: str) -> list[str]:
    """Every path-like token, as written (checked for being a path by path_check)."""
    out: list[str] = []
    if "/" not in text:  # every path holds one: no scan of the line
        return out
    for found in _PATH.finditer(text):
        path = found.group("path").rstrip(".,;:)")
        if found.start() > 0 and text[found.start() - 1] == "<":
            continue
        out.append(path)
    return out


def path_problem(path: str) -> str | None:
    """Why `path` is not one path a probe can look at (None when it is)."""
    if not re.fullmatch(r"(?:~)?/[\w.@+/-]*", path):
        return "it is a pattern or a placeholder, not one path"
    parts = [p for p in path.lstrip("~").split("/") if p]
    if not parts:
        return "it is the root"
    if len(parts) == 1 and (parts[0].lower() in UNIT_SEGMENTS or len(parts[0]) < 2):
        return "it is part of a unit or a tag, not a path"
    if any(re.fullmatch(r"\d+-\d+", p) for p in parts):
        return "it names a range of paths"
    if any(p in ("...", "..") or set(p) <= {"."} for p in parts):
        return "it is elided"
    return None


def path_check(text: str, category: str) -> Fit:
    """`file.exists` of the one path an item says is there."""
    found = paths(text)
    if not found:
        return Fit()
    if len(set(found)) > 1:
        return Fit(why="no check: the item names several paths")
    problem = path_problem(found[0])
    if problem:
        return Fit(why=f"no check: {found[0]!r}: {problem}")
    if category != "inventory" and NOT_THERE.search(text):
        return Fit(why="no check: the item does not say the path is there")
    return Fit({"probe": "file.exists", "args": {"path": found[0]}, "expect": {"eq": True}})


def lint_check(check: dict[str, Any], kb: KnowledgeBase) -> list[str]:
    """What `factbook lint` would say about this check (probe, arguments, expectation)."""
    spec = kb.probes.get(check["probe"])
    if spec is None:
        return [f"unknown probe {check['probe']}"]
    out = [f"needs argument {a}" for a in spec.required if a not in check["args"]]
    allowed = set(spec.required) | set(spec.optional)
    out += [f"takes no argument {a}" for a in check["args"] if a not in allowed]
    return out + problems_in(check["expect"])


def known_distributions(kb: KnowledgeBase) -> frozenset[str]:
    """Names this knowledge base already checks with pkg.version (a team's own packages)."""
    return frozenset(
        norm_name(str(f.check.args["name"]))
        for f in kb.facts.values()
        if f.check and f.check.probe == "pkg.version" and f.check.args.get("name")
    )
