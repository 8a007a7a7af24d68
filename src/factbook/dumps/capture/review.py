"""The proposals area: facts and changes proposed from outside (an assistant over MCP),
waiting in proposals/ for a person to accept or reject them.

    item = NewFact({...}) or FactChange("tok.im_end.id", set_fields={...}, source={...})
    outcome = submit(root, item, origin="mcp", reason="...", write=False)  # diff, lint clean
    pending(root); accept(root, pid); reject(root, pid, why)

A proposal is checked exactly as `factbook import` checks its own: applied with writeback's
comment-keeping edits to a scratch copy of the knowledge base and linted (propose.apply); one
that would add any lint problem is refused with the problems, so nothing waiting for review,
and nothing accepted, can break lint. Accepting applies it again to the facts as they are
then (they may have moved on), and writes with propose.write (atomic, refusing a file changed
meanwhile). Each proposal is one YAML file holding the item, who proposed it, why, and the
diff it made when proposed; decided ones move to proposals/accepted/ or proposals/rejected/
with when and why, so the review trail stays in the repository.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from factbook.dumps.capture.parse import Entry
from factbook.dumps.capture.propose import Applied, Proposal, apply, write
from factbook.errors import InputError, Problem, UsageError
from factbook.knowledge.kb import FACTS_DIR, load_kb_with_problems
from factbook.knowledge.kbfiles import confined, require_inside
from factbook.knowledge.limits import PROPOSAL_MAX_BYTES
from factbook.knowledge.names import inside
from factbook.knowledge.yamlsrc import read_text_bounded, refusal, unreadable_if_written
from factbook.store.atomic import exclusive_lock, write_text_atomic
from factbook.store.stamps import now_iso
from factbook.store.writeback import LOCK_DIR

PROPOSALS_DIR = "proposals"
DECIDED = ("accepted", "rejected")
MAX_PENDING = 1000  # a runaway client cannot fill the disk with proposals


@dataclass
class NewFact:
    """A fact to add, in the fact-file format."""

    fact: dict[str, Any]

    def describe(self) -> str:
        return f"new fact {self.fact.get('id')} ({self.fact.get('category')})"


@dataclass
class FactChange:
    """Fields to set on a known fact, and the source that says why."""

    fact_id: str
    set_fields: dict[str, Any] = field(default_factory=dict)
    source: dict[str, Any] | None = None

    def describe(self) -> str:
        return f"change {self.fact_id}: {', '.join(self.set_fields) or 'source'}"


Item = NewFact | FactChange


@dataclass
class Submitted:
    """What a submission did: its diff, and where it went (a proposal file, or facts/)."""

    pid: str
    summary: str
    diff: str
    proposal_file: Path | None = None
    written: list[Path] = field(default_factory=list)


def _proposal(item: Item, pid: str, kb: Any) -> Proposal:
    """The item as the importer's Proposal, so its scratch apply + lint runs unchanged."""
    text = item.describe()
    entry = Entry(line=0, kind="proposal", text=text, quote=text, headings=[])
    if isinstance(item, NewFact):
        category = str(item.fact.get("category", ""))
        return Proposal(pid, "new", entry, category, fact=dict(item.fact))
    fact = kb.get(item.fact_id)  # UsageError naming close ids when unknown
    proposal = Proposal(pid, "changed", entry, fact.category, old_id=fact.id)
    proposal.updates = dict(item.set_fields)
    proposal.source = item.source
    return proposal


def _undecodable_fact_file(problem: Problem) -> bool:
    """A load problem saying a fact file is not UTF-8 (as the loader words it)."""
    return problem.file.startswith(f"{FACTS_DIR}/") and problem.message.startswith("not UTF-8")


def plan(root: Path, item: Item, pid: str = "p1") -> tuple[Applied, str]:
    """Apply one item to a scratch copy; (the applied files and diff, the summary line).

    InputError, one line, when it cannot be applied or would add a lint problem.
    """
    kb, baseline = load_kb_with_problems(Path(root).resolve())
    unreadable = next((p for p in baseline if _undecodable_fact_file(p)), None)
    if unreadable is not None:  # the load read it already: a decision waits for the fix
        raise InputError(f"{unreadable}; fix it before deciding a proposal")
    if isinstance(item, NewFact) and item.fact.get("id") in kb.facts:
        raise InputError(f"fact '{item.fact['id']}' already exists; use propose_change")
    proposal = _proposal(item, pid, kb)
    applied = apply(kb.root, kb, [proposal], baseline)
    problems = proposal.problems + applied.general_problems
    if problems:
        raise InputError(f"{item.describe()} would not lint clean: {'; '.join(problems)}")
    if not applied.diff:
        raise InputError(f"{item.describe()}: nothing would change")
    return applied, item.describe()


def submit(
    root: Path, item: Item, *, origin: str, reason: str = "", write_facts: bool = False
) -> Submitted:
    """Check an item; write it into facts/ (write_facts) or save it for review."""
    root = Path(root)
    pid = new_pid()
    applied, summary = plan(root, item, pid)
    if write_facts:
        return Submitted(pid, summary, applied.diff, written=write(applied))
    folder = root / PROPOSALS_DIR
    if len(list(folder.glob("*.yaml"))) >= MAX_PENDING:
        raise InputError(
            f"{PROPOSALS_DIR}/ already holds {MAX_PENDING} pending proposals; review some first"
        )
    record = {
        "id": pid,
        "created": now_iso(),
        "origin": origin,
        "summary": summary,
        "reason": reason,
        "item": _item_data(item),
        "diff": applied.diff,
    }
    path = _path(root, pid)
    path.parent.mkdir(parents=True, exist_ok=True)
    _save(path, record)
    return Submitted(pid, summary, applied.diff, proposal_file=path)


def new_pid() -> str:
    """A proposal id that sorts by time: 20261201-224512-3f9a0c."""
    stamp = now_iso().replace("-", "").replace(":", "").replace("T", "-")[:15]
    return f"{stamp}-{secrets.token_hex(3)}"


def _item_data(item: Item) -> dict[str, Any]:
    if isinstance(item, NewFact):
        return {"new": item.fact}
    return {"change": {"id": item.fact_id, "set": item.set_fields, "source": item.source}}


def _item_from(data: Any, where: str) -> Item:
    """The item a proposal file holds, its shape checked: anyone who can write the knowledge
    base can write a proposal, and a `set: [1, 2]` or an id that is a list was a traceback in
    `proposals show` and `accept`."""
    new = data.get("new") if isinstance(data, dict) else None
    if isinstance(new, dict):
        if not isinstance(new.get("id"), str):
            raise InputError(f"{where}: item: new: id must be a string")
        return NewFact(new)
    change = data.get("change") if isinstance(data, dict) else None
    if isinstance(change, dict) and isinstance(change.get("id"), str):
        fields, source = change.get("set") or {}, change.get("source")
        if not isinstance(fields, dict) or not all(isinstance(k, str) for k in fields):
            raise InputError(f"{where}: item: change: set must map field names to values")
        if source is not None and not isinstance(source, dict):
            raise InputError(f"{where}: item: change: source must be a mapping")
        return FactChange(change["id"], dict(fields), source)
    raise InputError(f"{where}: not a proposal (no 'item: new:' or 'item: change:')")


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str_block(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_block)


def _save(path: Path, record: dict[str, Any]) -> None:
    """Write a proposal, refused first when `_load` would refuse it (limits.py)."""
    text = _dump(record)
    problem = unreadable_if_written(text, str(path), limit=PROPOSAL_MAX_BYTES)
    if problem is not None:
        raise InputError(f"{problem}; the proposal is not saved")
    write_text_atomic(path, text)


def _dump(record: dict[str, Any]) -> str:
    return yaml.dump(record, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def _path(root: Path, pid: str, folder: str = "") -> Path:
    """proposals/[folder/]PID.yaml, refused when the id would leave proposals/."""
    if not pid or not all(ch.isalnum() or ch == "-" for ch in pid):
        raise UsageError(f"bad proposal id {pid[:60]!r} (see `factbook proposals list`)")
    parts = [folder, f"{pid}.yaml"] if folder else [f"{pid}.yaml"]
    where = "/".join([PROPOSALS_DIR, *parts[:-1]])
    require_inside(Path(root).joinpath(where), where, root)  # a linked proposals/ folder
    return inside(Path(root) / PROPOSALS_DIR, *parts)


@dataclass
class Pending:
    """A proposal file as read back."""

    pid: str
    path: Path
    data: dict[str, Any]

    @property
    def summary(self) -> str:
        return str(self.data.get("summary", ""))

    @property
    def item(self) -> Item:
        return _item_from(self.data.get("item"), str(self.path))


def read(root: Path, pid: str) -> Pending:
    """One pending proposal; UsageError naming the pending ones when it is not there."""
    path = _path(root, pid)
    if not path.is_file() and not path.is_symlink():  # a link out is refused by _load
        known = ", ".join(p.pid for p in pending(root, [])[:10]) or "none"
        raise UsageError(f"no pending proposal '{pid}' (pending: {known})")
    return _load(path, root)


def _load(path: Path, root: Path) -> Pending:
    """A proposal file, read as every YAML file of the knowledge base is: bounded in size and
    depth, no aliases, never a FIFO, inside the root (yamlsrc): a proposal linked to a file
    elsewhere is refused with its path, never shown."""
    with confined(root):
        text, problem = read_text_bounded(path, str(path), limit=PROPOSAL_MAX_BYTES)
    if problem is None:
        problem = refusal(text, str(path))
    if problem is not None:
        raise InputError(f"{problem} (an unreadable proposal)")
    try:
        data = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise InputError(f"{path}: unreadable proposal: {first}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: not a proposal")
    if _holds_untextable_number(data):
        raise InputError(
            f"{path}: a number of more than 4,000 digits; not a proposal factbook reads"
        )
    return Pending(path.stem, path, data)


_TEXT_INT_BITS = 14_000  # ~4,214 digits: past Python's 4,300, an int has no repr to show


def _holds_untextable_number(data: Any) -> bool:
    """Whether a proposal holds an integer Python cannot write as text (`0x` + 5000 hex
    digits reads, then planning met a ValueError measuring its repr, from the CLI, MCP and
    the API alike). A walk with its own stack: the depth is bounded by refusal()."""
    stack: list[Any] = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack += [*value.keys(), *value.values()]
        elif isinstance(value, list):
            stack += value
        elif isinstance(value, int) and value.bit_length() > _TEXT_INT_BITS:
            return True
    return False


def pending(root: Path, unreadable: list[str] | None = None) -> list[Pending]:
    """Proposals waiting for review, oldest first. A file that cannot be read is passed over
    with its one-line reason added to `unreadable` when one is given (one bad file must not
    hide every other proposal); without it, the first one raises InputError."""
    folder = Path(root) / PROPOSALS_DIR
    if not folder.is_dir():
        return []
    require_inside(folder, PROPOSALS_DIR, root)
    found = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            found.append(_load(path, root))
        except InputError as exc:
            if unreadable is None:
                raise
            unreadable.append(str(exc))
    return found


def accept(root: Path, pid: str) -> tuple[Pending, list[Path], str]:
    """Apply a pending proposal to the facts as they are now, write it, file it as accepted.

    Returns (the proposal, the fact files written, the diff applied).
    """
    with _deciding(root):
        found = read(root, pid)
        filed = _filing_place(root, pid, "accepted")  # refused before any fact is written
        applied, _ = plan(Path(root), found.item, pid)
        written = write(applied)
        _decide(found, filed, "accepted", "")
    return found, written, applied.diff


def reject(root: Path, pid: str, why: str = "") -> Pending:
    """File a pending proposal as rejected, with why; facts/ is not touched."""
    with _deciding(root):
        found = read(root, pid)
        _decide(found, _filing_place(root, pid, "rejected"), "rejected", why)
    return found


DECISION_LOCK = f"{LOCK_DIR}/proposals.lock"


@contextlib.contextmanager
def _deciding(root: Path) -> Iterator[None]:
    """One decision at a time: from reading the proposal to filing it. Two `accept`s of one
    proposal at once could both read it before either filed it, and both write its facts
    (the second then stopped at the file already moved); now the second finds it decided."""
    with exclusive_lock(Path(root) / DECISION_LOCK, Path(root), DECISION_LOCK):
        yield


def _filing_place(root: Path, pid: str, verdict: str) -> Path:
    """Where a decided proposal is filed (proposals/VERDICT/PID.yaml), its folder made now:
    refused (InputError) before the decision writes anything when it cannot be filed there.
    accept wrote the proposal's facts and only then met proposals/accepted linked out of
    the knowledge base, a file where the folder goes or a folder where the proposal goes,
    and the proposal stayed pending with its facts applied (the CLI, MCP and the API alike)."""
    target = _path(root, pid, verdict)  # a folder linked out is refused here
    shown = f"{PROPOSALS_DIR}/{verdict}"
    if target.parent.exists() and not target.parent.is_dir():
        raise InputError(f"{shown}: not a folder; the proposal could not be filed there")
    if target.exists() and not target.is_file():
        raise InputError(f"{shown}/{pid}.yaml: not a regular file; the proposal could not be filed")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{shown}: cannot create it ({exc.strerror or exc})") from None
    return target


def _decide(found: Pending, target: Path, verdict: str, why: str) -> None:
    data = dict(found.data)
    data.update({verdict: now_iso(), **({"why": why} if why else {})})
    _save(target, data)
    found.path.unlink(missing_ok=True)  # removed by hand meanwhile: it is filed all the same
