"""A pitfall written as prose → its symptom, its trigger or cause, and its fix, as the text says.

    MTP with num_speculative_tokens=2 crashes during CUDA graph capture with illegal memory
    access; capping --max-num-seqs 256 avoids it.

is symptom `crashes during CUDA graph capture with illegal memory access`, cause `MTP with
num_speculative_tokens=2`, fix `capping --max-num-seqs 256 avoids it`. The rules, first
that applies wins for each clause:

- labels say it (`Cause: …`, `Fix: …`, `Workaround: …`, sub-bullets so labelled), and arrows
  (`symptom ← cause → fix`, the compact status line);
- the text is cut into clauses at `;`, dashes, sentence ends and `but`; a clause that is a
  remedy (`… fixes it`, `avoids it`, `use … instead`, or starting with `pass`, `set`,
  `capping`, `rm` …) is the fix; one giving a reason (`because`, `due to`, `caused by`) the
  cause; the clause with the failure (`crashes`, `hangs`, `OOMs`, `silently drops` …) the
  symptom;
- inside the symptom clause, a subject that carries configuration (`MTP with x=2`,
  `building with --workers 8`) is the trigger, and so is what follows the failure after
  `when`, `if`, `after`, `without` or `with --flag`; the rest is the symptom.

What the text does not give stays missing: the import flags it instead of inventing it.
"""

from __future__ import annotations

import re

from factbook.dumps.capture.checks import FAILURE, FIX
from factbook.dumps.capture.quickre import starting_with

KEYS = ("symptom", "cause", "fix")
_LABELLED = starting_with(
    "cfrstw",
    r"(?:^|(?<=[\s;.(]))(?P<key>symptom|root cause|cause|trigger|why|fix|workaround|solution"
    r"|remedy)\s*:\s*",
    re.I,
)
_LABEL_KEY = {"root cause": "cause", "trigger": "cause", "why": "cause", "workaround": "fix"}
_CAUSE = starting_with(
    "abcdt", r"\b(?:because(?: of)?|due to|caused by|as a result of|the reason is)\b", re.I
)
_TRIGGER = re.compile(
    r"\s(?:because(?: of)?|due to|caused by|when|whenever|if|after|once|unless|without|until)\s"
    r"|\s(?:with|at|on|for|using)\s+(?=[`\"']*(?:--?[A-Za-z]|\w+=))",
    re.I,
)
_CONFIG = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*|\w=\w")
_CLAUSES = re.compile(r";\s+|(?<!\s)\s+[—–]\s+|(?<=[a-z0-9)\"'])\.\s+(?=[A-Z])|,?(?<!\s)\s+but\s+")


def split_pitfall(text: str) -> dict[str, str]:
    """symptom / cause / fix as the text states them (keys it does not state are absent)."""
    out: dict[str, str] = {}
    text = text.strip().rstrip(".")
    text = _arrows(text, out)
    labelled = list(_LABELLED.finditer(text))
    if labelled:
        lead = text[: labelled[0].start()].strip(" ;,.")
        for i, found in enumerate(labelled):
            end = labelled[i + 1].start() if i + 1 < len(labelled) else len(text)
            key = found.group("key").lower()
            key = _LABEL_KEY.get(key, key)
            value = text[found.end() : end].strip(" ;,.")
            if value and key not in out:
                out[key] = value
        text = lead
    rest: list[str] = []
    for clause in (c.strip(" ,.") for c in _CLAUSES.split(text) if c.strip(" ,.")):
        if "fix" not in out and FIX.search(clause) and not FAILURE.search(_no_fix(clause)):
            out["fix"] = clause
        elif "cause" not in out and _CAUSE.match(clause):
            out["cause"] = clause
        elif "symptom" not in out and FAILURE.search(clause):
            _symptom(clause, out)
        else:
            rest.append(clause)
    if rest and "symptom" not in out:
        out["symptom"] = rest.pop(0)
    if rest:  # what is left explains the failure
        out["cause"] = "; ".join(([out["cause"]] if "cause" in out else []) + rest)
    return {k: out[k] for k in KEYS if out.get(k)}


def _no_fix(clause: str) -> str:
    """The clause without its remedy words (`avoids it` is not a failure)."""
    return re.sub(r"\b(?:avoids?|prevents?|fix(?:es)?)\b.*$", "", clause, flags=re.I)


def _arrows(text: str, out: dict[str, str]) -> str:
    """`symptom ← cause → fix` (and ASCII `<-`, `->`, `=>`)."""
    fix = re.split(r"(?<!\s)\s+(?:→|->|=>)\s+", text, maxsplit=1)
    if len(fix) == 2:
        out["fix"] = fix[1].strip()
        text = fix[0]
    cause = re.split(r"(?<!\s)\s+(?:←|<-)\s+", text, maxsplit=1)
    if len(cause) == 2:
        out["cause"] = cause[1].strip()
        text = cause[0]
    return text.strip()


def _symptom(clause: str, out: dict[str, str]) -> None:
    """The failure clause: its configured subject or its condition is the trigger."""
    failure = FAILURE.search(clause)
    assert failure is not None
    subject = clause[: failure.start()].strip()
    if "cause" not in out and _CONFIG.search(subject) and len(subject.split()) >= 2:
        out["cause"] = subject.rstrip(" ,")
        out["symptom"] = clause[failure.start() :].strip()
        return
    condition = _CAUSE.search(clause, failure.end()) or _TRIGGER.search(clause, failure.end())
    if "cause" not in out and condition:
        out["cause"] = clause[condition.start() :].strip()
        out["symptom"] = clause[: condition.start()].strip(" ,")
        return
    out["symptom"] = clause
