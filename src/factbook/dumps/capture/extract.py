"""Values in a dump's sentence, and the live check that fits them.

A status line says its value in words: `torch: 2.10.0+cu128`, `8x NVIDIA RTX PRO 6000`,
`82.5 tok/s`, `<think> = token 163606`, `hidden_size=7168, kv_lora_rank=512`,
`--speculative-num-steps 3`, `/data/eagle3/output_10k/4/`. Each kind becomes a value (and a
unit), and where a probe can see it live a proposed `check:` (a version → `pkg.version`, a
GPU count → `gpu.count`, a path → `file.exists`, a driver → `gpu.driver`), only where the text
fixes the probe and its arguments (checks.py decides, and says why not).

Each extraction also yields a *key*: what the value is the value *of* (the torch version,
the GPU count, the token id of `<|im_end|>`, a benchmark row's figure). Two facts with the same
key and different values are the same thing changed; matching relies on it (match.py).
"""

from __future__ import annotations

import re
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any

import yaml

from factbook.dumps.capture.checks import (
    gpu_count_check,
    lookup,
    norm_name,
    path_check,
    version_check,
    version_mentions,
)
from factbook.dumps.capture.checks import paths as path_tokens
from factbook.dumps.capture.quickre import starting_with
from factbook.knowledge.limits import WHOLE_NUMBER

PATH_CATEGORIES = ("inventory", "instructions", "hardware", "model", "software")
UNITS = {
    "tok/s": "tok/s",
    "ms": "ms",
    "min": "min",
    "s": "s",
    "seconds": "s",
    "gib": "GiB",
    "gb": "GB",
    "mib": "MiB",
    "mb": "MB",
    "tb": "TB",
    "w": "W",
    "%": "%",
    "x": "x",
}
_NUMBER_UNIT = starting_with(
    r"~\d",
    r"(?<![\w.])~?(?P<num>\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s?"
    r"(?P<unit>tok/s|ms|min|seconds|s|GiB|GB|MiB|MB|TB|W|%|x)(?![\w/])",
)
_GPU_COUNT = starting_with(
    r"\d",
    rf"(?<![\w.])(?P<n>{WHOLE_NUMBER})\s?(?:x\s?)?(?:NVIDIA\s+)?(?:[\w-]+\s+){{0,6}}?GPUs?\b"
    rf"|(?<![\w.])(?P<n2>{WHOLE_NUMBER})\s?[x×]\s?(?:NVIDIA|AMD|Intel)\b",
)
_TOKEN = starting_with(
    r"<\d",
    r"(?P<tok><[^<>\s`]{1,40}>)`?\s*(?:(?:=|is|:)\s*(?:token\s*)?(?:id\s*)?(?P<id>\d{1,7})\b"
    r"|(?:token\s*(?:id\s*)?)?(?P<id3>\d{4,18}(?!\d)))"
    r"|(?P<id2>\d{4,18}(?!\d))\s*(?:=|is)\s*(?:the\s+)?(?:REAL\s+)?(?P<tok2><[^<>\s`]{1,40}>)",
)
_PAIR = re.compile(
    r"(?<![\w-])(?P<key>[a-z][a-z0-9_]*[a-z0-9])=(?P<val>\[[^\]]*\]|\d{1,3}(?:,\d{3})+(?!\d)|[^\s,;()]+)"
)
_FLAG = re.compile(r"(?<![\w-])(?P<flag>--[a-z][\w-]*)(?:[ =](?P<arg>(?!-)[^\s,;()]+))?")
_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass
class Extracted:
    """What one item's text holds: value, unit, category keys, a proposed check, its key."""

    value: Any = None
    unit: str | None = None
    keys: dict[str, Any] = field(default_factory=dict)
    check: dict[str, Any] | None = None
    key: tuple[str, ...] | None = None
    kinds: list[str] = field(default_factory=list)  # what was found, for the report
    why: str = ""  # why there is no check, for the review


def slug(text: str, limit: int = 40) -> str:
    return _SLUG.sub("_", text.lower()).strip("_")[:limit].strip("_")


_FLOAT_DIGITS = 308  # a longer whole number is beyond what a float, and so every reader, holds


_WHOLE = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")
_DECIMAL = re.compile(r"\d+\.\d+")


def number(text: str) -> int | float | None:
    """`1,536` → 1536, `82.5` → 82.5, anything else → None."""
    text = text.strip().lstrip("~")
    if _WHOLE.fullmatch(text):
        digits = text.replace(",", "")
        return int(digits) if len(digits) <= _FLOAT_DIGITS else None
    if _DECIMAL.fullmatch(text):
        return float(text)
    return None


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: one call per item
_SCALAR_MAX = 4096  # characters of a cell read as YAML; a longer one is kept as text
_SCALAR_NESTING = 32


def scalar(text: str) -> Any:
    """A YAML-ish scalar as written in a dump (`7168`, `true`, `[2, 30, 58]`, `symmetric`)."""
    value = number(text)
    if value is not None:
        return value
    if len(text) > _SCALAR_MAX or text.count("[") > _SCALAR_NESTING:
        return text  # a paragraph, or brackets nested a thousand deep: text, as written
    loaded = _LOADED.get(text, _UNREAD)
    if loaded is _UNREAD:
        loaded = _loaded(text)
        if len(text) <= _LOADED_TEXT_MAX:
            if len(_LOADED) >= _LOADED_MAX:
                _LOADED.clear()
            _LOADED[text] = loaded
    return deepcopy(loaded) if type(loaded) is list else loaded  # each caller its own list


# a dump repeats the same cells (`sglang`, `—`, `none` in a table's every row): each text is
# read as YAML once (a tenth of the calls), the answer remembered
_LOADED: dict[str, Any] = {}
_LOADED_MAX = 4096
_LOADED_TEXT_MAX = 256  # characters: a cell, not a paragraph
_UNREAD: Any = object()


def _loaded(text: str) -> Any:
    """The YAML value of a short text, when it is a scalar or a list; else the text."""
    try:
        loaded = yaml.load(text, Loader=_LOADER)
    except (yaml.YAMLError, RecursionError, ValueError):  # ValueError: a 5000-digit number
        return text
    except (IndexError, KeyError, AttributeError, TypeError):  # `!!int` or `!!bool` of nothing
        return text
    return loaded if isinstance(loaded, (bool, int, float, str, list)) else text


_GPU_WORD = re.compile(r"GPU|NVIDIA|AMD|Instinct")
_BENCH_LABEL = re.compile(r"^([A-Za-z][\w /+().-]{0,50}?):\s")
_DIGIT_PATH = re.compile(r"/\d+(/\d+)*")


def extract(text: str, category: str, known: frozenset[str] = frozenset()) -> Extracted:
    """The value, unit, keys and check an item of `category` states in `text` (`known`:
    distribution names the knowledge base already checks)."""
    out = Extracted()
    if category == "tokenizer":
        found = _TOKEN.search(text)
        if found:
            token = found.group("tok") or found.group("tok2")
            token_id = int(found.group("id") or found.group("id2") or found.group("id3"))
            out.value, out.keys = token_id, {"token": token, "token_id": token_id}
            out.key, out.kinds = ("token", token), ["token id"]
            return out
    if category == "hardware":
        found = _GPU_COUNT.search(text)
        if found and _GPU_WORD.search(text):
            count = int(found.group("n") or found.group("n2"))
            out.value, out.key, out.kinds = count, ("probe", "gpu.count"), ["GPU count"]
            fit = gpu_count_check(count, text)
            out.check, out.why = fit.check, fit.why
            return out
    if category in ("software", "hardware"):
        mentions = version_mentions(text, known)
        if category == "software" and mentions:
            return _versions(out, mentions, known, text)
        known_ones = [m for m in mentions if m[2]]
        if len(known_ones) == 1:  # `NVIDIA driver 570.124.06` among the hardware
            return _versions(out, known_ones, known, text)
    # each regex steps through the whole line: only run where its literal part is there
    pairs = (
        [(m.group("key"), scalar(m.group("val"))) for m in _PAIR.finditer(text)]
        if ("=" in text)
        else []
    )
    figure = _NUMBER_UNIT.search(text)
    flags = (
        [(m.group("flag"), m.group("arg")) for m in _FLAG.finditer(text)] if ("--" in text) else []
    )
    if len(pairs) == 1:
        out.value, out.key, out.kinds = pairs[0][1], ("param", pairs[0][0]), ["config"]
    elif len(pairs) > 1:
        out.value, out.kinds = dict(pairs), ["config"]
    elif figure and category in ("benchmarks", "training", "hardware", "model", "software"):
        out.value = number(figure.group("num"))
        out.unit = UNITS.get(figure.group("unit").lower(), figure.group("unit"))
        out.kinds = ["number with unit"]
        label = _BENCH_LABEL.match(text)
        if category == "benchmarks" and label:  # `Single-stream: 82.5 tok/s`: the row's name
            out.key = ("bench", slug(label.group(1)))
    elif len(flags) > 1:
        out.value = {flag: (scalar(arg) if arg else None) for flag, arg in flags}
        out.kinds = ["flags"]
    paths = [p for p in path_tokens(text) if len(p) > 1 and not _DIGIT_PATH.fullmatch(p)]
    if category == "inventory" and paths:
        out.keys["path"] = paths[0]
        out.key = ("path", paths[0].rstrip("/") or "/")
    if category in PATH_CATEGORIES:
        fit = path_check(text, category)
        out.check, out.why = fit.check, fit.why
        if fit.check:
            out.kinds.append("path")
    return out


# The label a line's first version follows (`speculators: 0.3.0 ...`). Written as
# `\s*[:=]?\s*` the pattern tried every split of a run of spaces between its two `\s*`, for
# every length of the label: a line of spaces took minutes. The same matches: the label is
# compared with a name of at most 80 characters (version_mentions), so it is sought no
# further, and the spaces after it are one run, never given back.
_LABEL = re.compile(r"^\W*([A-Za-z][\w .+-]{0,80}?)\s*+(?:[:=]\s*+)?v?\d")


def _versions(
    out: Extracted, mentions: list[tuple[str, str, bool]], known: frozenset[str], text: str = ""
) -> Extracted:
    named = [m for m in mentions if m[2]] or mentions
    lead = _LABEL.match(text)
    if lead and len(named) > 1 and named[0][0].lower() == lead.group(1).strip().lower():
        named = named[:1]  # `speculators: 0.3.0 (with 9 patches for vLLM 0.16)`: the label's
    if len(named) > 1:
        out.value = {name: version for name, version, _ in named}
        out.kinds = ["versions"]
        out.why = "no check: several versions on one line (one fact each would check each)"
        return out
    name, version, _ = named[0]
    out.value, out.kinds = version, ["version"]
    fit = version_check(name, version, known)
    out.check, out.why = fit.check, fit.why
    kind, what = lookup(name, known)
    if fit.check and fit.check["probe"] != "pkg.version":
        out.key = ("probe", fit.check["probe"])
    else:
        out.key = ("pkg", what if kind == "pkg" else norm_name(name))
    return out


def table_row(header: list[str], cells: list[str], category: str) -> Extracted:
    """A benchmark or training table row: the first figure, its unit from the header."""
    out = Extracted()
    if header and header[-1] == "Mark":  # factbook status's verification column
        header, cells = header[:-1], cells[:-1]
    if category == "training" or (header and header[0].lower().startswith("epoch")):
        epoch = number(cells[0])
        values = {slug(h, 30): scalar(c) for h, c in zip(header[1:], cells[1:], strict=False)}
        out.value, out.keys = values, {"epoch": epoch, "metric": "validation"}
        out.key, out.kinds = ("train", "validation", str(epoch)), ["table row"]
        return out
    for column, cell in zip(header[1:], cells[1:], strict=False):
        value = number(cell.split()[0] if cell.split() else "")
        if value is None:
            continue
        unit_match = re.search(r"tok/s|ms|%|GB|s\b", column + " " + cell)
        out.value = value
        out.unit = (
            unit_match.group(0)
            if unit_match
            else ("tok/s" if "throughput" in column.lower() else None)
        )
        metric = slug(column, 30)
        out.keys = {"metric": metric}
        out.key, out.kinds = ("bench", slug(cells[0])), ["table row"]
        break
    for column, cell in zip(header, cells, strict=False):
        if "accept len" in column.lower() and number(cell) is not None:
            out.keys["accept_len"] = number(cell)
    return out


def fact_key(fact: Any) -> tuple[str, ...] | None:
    """The same key for a loaded fact, from what it records (check, token, path, metric)."""
    check = fact.check
    if check is not None:
        if check.probe == "pkg.version" and check.args.get("name"):
            return ("pkg", str(check.args["name"]).lower())
        if check.probe in (
            "gpu.count",
            "gpu.driver",
            "cuda.nvcc_version",
            "python.version",
            "os.kernel",
        ):
            return ("probe", check.probe)
    if fact.category == "tokenizer" and fact.get("token"):
        return ("token", str(fact.get("token")))
    if fact.category == "inventory" and fact.get("path"):
        return ("path", str(fact.get("path")).rstrip("/") or "/")
    if fact.category == "benchmarks":
        return ("bench", slug(fact.title))
    if fact.category == "training" and fact.get("epoch") is not None:
        return ("train", str(fact.get("metric") or ""), str(fact.get("epoch")))
    return None
