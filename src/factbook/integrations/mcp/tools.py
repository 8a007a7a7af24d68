"""What the MCP tools do, as plain methods over one knowledge base (no MCP types here).

Every argument is hostile input: sizes are bounded, names are checked against the strict
patterns of knowledge/names.py before they reach a path, targets must be in targets.yaml (or
an inventory factbook.yaml names), and only checks already in the knowledge base run, with
factbook's own probes unless the server was started with --run-kb-probes (kb_probes.py). A
mistake the caller can fix raises a FactbookError whose message is one line; server.py turns
it into a tool error. Results are plain JSON-able dicts.

The knowledge base is read again when a file under facts/ (or targets.yaml, milestones.yaml)
changed, so an accepted proposal or a hand edit is seen by the next call; the search index is
rebuilt with it.
"""

from __future__ import annotations

import importlib
import json
import re
import threading
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from factbook.dumps.status.redact import redactor_for
from factbook.errors import ResultsUnreadable, UsageError
from factbook.integrations.mcp.search import SearchIndex, match_pitfalls, rank
from factbook.integrations.mcp.settings import (
    MAX_BUDGET,
    MAX_LIMIT,
    MAX_QUERY,
    MIN_BUDGET,
    McpSettings,
    load_settings,
)
from factbook.judging.sanitize import each_string
from factbook.knowledge.kb import KnowledgeBase, load_kb_with_problems
from factbook.knowledge.model import Fact, Milestone
from factbook.knowledge.names import name_problem
from factbook.knowledge.schema import CATEGORIES, STATUSES
from factbook.knowledge.walk import tree_glob
from factbook.store.results import load_latest
from factbook.store.stamps import now_iso

MAX_TEXT = 200_000  # characters of an error message / log excerpt for match_pitfalls
MAX_PATTERNS = 200
MAX_ARGV = 512
MAX_ARG = 4_096
MAX_VALUE = 20_000  # characters of a proposed value, as JSON
MAX_FIELD = 10_000  # characters of a proposed title, statement, note, ...
MAX_OBSERVED = 2_000  # characters of an observed value returned to the client
MAX_ID = 200  # characters of a fact id (the server's schema says the same)
MAX_TAGS = 50
DEFAULT_VERIFY_TIMEOUT = 60.0
STATEMENT_SNIPPET = 300
_GLOB = re.compile(r"[a-z0-9_.*?\[\]-]{1,200}")


class Redacted(str):
    """A status document already redacted as mcp.redact says, while it was rendered (so
    that a cell is escaped after its secret is hidden, and a budget holds for what is
    sent): `Toolbox.redacted` passes it through instead of walking its 120 kB again."""

    __slots__ = ()


def _bounded(text: Any, limit: int, what: str) -> str:
    if not isinstance(text, str):
        raise UsageError(f"{what} must be a string")
    if len(text) > limit:
        raise UsageError(f"{what} is {len(text):,} characters; at most {limit:,}")
    return text


def _limit(limit: Any, default: int) -> int:
    if limit is None:
        return default
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"limit must be between 1 and {MAX_LIMIT}")
    return limit


def _budget(budget: Any) -> None:
    """A status_brief budget: None (the whole document) or whole tokens within the bounds."""
    if budget is None:
        return
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise UsageError("budget must be a whole number of tokens")
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise UsageError(f"budget must be between {MIN_BUDGET:,} and {MAX_BUDGET:,} tokens")


def _fact_id(value: Any) -> str:
    """A fact id, bounded before it is matched or named in an error: a 1 MB id came back whole
    in `no fact with id '...'`, and propose_fact wrote one into facts/."""
    if isinstance(value, str) and len(value) > MAX_ID:
        raise UsageError(f"fact id is {len(value):,} characters; at most {MAX_ID}")
    problem = name_problem("fact id", value)
    if problem:
        raise UsageError(problem)
    return str(value)


def _mapping(value: Any, what: str) -> dict[str, Any]:
    """An object argument (fields): a mapping with string keys, or None as {}."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise UsageError(f"{what} must be an object with string keys")
    return value


def _strings(value: Any, limit: int, what: str) -> list[str]:
    """A list-of-strings argument (tags): a string is not a list of its characters."""
    if not isinstance(value, list):
        raise UsageError(f"{what} must be a list of strings")
    if len(value) > limit:
        raise UsageError(f"{what} has {len(value):,} items; at most {limit}")
    return [_bounded(item, 100, f"each of {what}") for item in value]


def _short(value: Any, limit: int = MAX_OBSERVED) -> Any:
    """A value from a box, cut to `limit` characters of JSON when larger."""
    text = json.dumps(value, default=str)
    return value if len(text) <= limit else text[:limit] + "... (truncated)"


# the modules tools import when first called, imported once before any tool runs: tool calls
# run in threads, and two calls importing them for the first time at once met Python's
# import deadlock detection (`_DeadlockError` on factbook.dumps.capture.propose, in CI under
# load), these modules importing one another
_IMPORTED_BY_TOOLS = (
    "factbook.api",
    "factbook.dumps.capture.propose",
    "factbook.dumps.capture.review",
    "factbook.integrations.kb_probes",
    "factbook.knowledge.fleet.load",
    "factbook.serving.sglang.flags",
    "factbook.serving.sglang.launch",
    "factbook.verification.engine",
    "factbook.verification.run",
    "factbook.verification.targets",
)


class Toolbox:
    """The tools over the knowledge base at `root`; thread-safe (tools run in threads)."""

    def __init__(
        self, root: Path, settings: McpSettings | None = None, *, run_kb_probes: bool = False
    ):
        self.root = Path(root).resolve()
        self.settings = settings if settings is not None else load_settings(self.root)
        self.run_kb_probes = run_kb_probes  # the command line's choice, never factbook.yaml's
        self._lock = threading.Lock()
        # one write at a time: tool calls run in threads, and two proposals of one fact file
        # raced past each other's "changed while importing" guard (round 24: 32 of 40
        # pipelined writes refused, `run again`); other processes are still met by the guard
        self._writing = threading.RLock()
        self._signature: tuple[Any, ...] | None = None
        self._kb: KnowledgeBase | None = None
        self._index: SearchIndex | None = None
        self._latest: tuple[Any, dict[str, Any]] = (None, {})
        for module in _IMPORTED_BY_TOOLS:  # here, in one thread (see _IMPORTED_BY_TOOLS)
            importlib.import_module(module)

    # --- the knowledge base, read again when its files change ------------------------

    def _files_signature(self) -> tuple[Any, ...]:
        paths = tree_glob(self.root / "facts", "*.yaml", shown="facts")
        paths += [self.root / "milestones.yaml", self.root / "targets.yaml"]
        out = []
        for path in paths:
            try:
                st = path.stat()
            except OSError:
                continue
            out.append((str(path), st.st_mtime_ns, st.st_size))
        return tuple(out)

    def kb(self) -> tuple[KnowledgeBase, SearchIndex]:
        """The knowledge base and its search index, fresh."""
        signature = self._files_signature()
        with self._lock:
            if self._kb is None or self._index is None or signature != self._signature:
                kb, problems = load_kb_with_problems(self.root)
                kb.problems = problems
                self._kb, self._index = kb, SearchIndex.build(kb)
                self._signature = signature
            return self._kb, self._index

    def _latest_results(self) -> dict[str, Any]:
        """results/latest.json, read again when it changes; {} when missing or unreadable."""
        path = self.root / "results" / "latest.json"
        try:
            st = path.stat()
            key: Any = (st.st_mtime_ns, st.st_size)
        except OSError:
            return {}
        if self._latest[0] != key:
            try:
                self._latest = (key, load_latest(self.root))
            except ResultsUnreadable:
                self._latest = (key, {})
        return self._latest[1]

    def _milestone(self, kb: KnowledgeBase, as_of: str | None) -> Milestone | None:
        if as_of is not None:
            _bounded(as_of, 100, "as_of")
        return kb.milestone(as_of)

    # --- reading -------------------------------------------------------------------

    def _last_verified(self, fact: Fact, latest: dict[str, Any]) -> list[dict[str, Any]]:
        found = latest.get(fact.id, {})
        return [
            {"target": t, "outcome": r.get("outcome"), "time": r.get("time")}
            for t, r in sorted(found.items())
        ]

    def _summary(
        self,
        kb: KnowledgeBase,
        fact: Fact,
        as_of: Milestone | None,
        latest: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A result line: what an assistant needs to answer without show_fact."""
        latest = self._latest_results() if latest is None else latest
        statement = " ".join(fact.statement.split())
        if len(statement) > STATEMENT_SNIPPET:
            statement = statement[: STATEMENT_SNIPPET - 3] + "..."
        out: dict[str, Any] = {
            "id": fact.id,
            "title": fact.title,
            "category": fact.category,
            "value": fact.value,
            "unit": fact.unit,
            "status": kb.status_as_of(fact, as_of),
            "statement": statement,
            "last_verified": self._last_verified(fact, latest),
            "uri": f"factbook://fact/{fact.id}",
        }
        if fact.until:
            out["until"] = fact.until
        return {k: v for k, v in out.items() if v is not None}

    def search_facts(
        self,
        query: str,
        category: str | None = None,
        tag: str | None = None,
        status: str | None = None,
        as_of: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        _bounded(query, MAX_QUERY, "query")
        if not query.strip():
            raise UsageError("query is empty: say what you are looking for")
        count = _limit(limit, 10)
        if category is not None and _bounded(category, 100, "category") not in CATEGORIES:
            raise UsageError(f"unknown category '{category[:60]}' (known: {', '.join(CATEGORIES)})")
        if status is not None and _bounded(status, 100, "status") not in STATUSES:
            raise UsageError(f"unknown status '{status[:60]}' (known: {', '.join(STATUSES)})")
        if tag is not None:
            _bounded(tag, 100, "tag")
        kb, index = self.kb()
        milestone = self._milestone(kb, as_of)
        candidates = kb.select(
            categories=[category] if category else [],
            tags=[tag] if tag else [],
            statuses=[status] if status else [],
            as_of=milestone,
            include_past=milestone is None,  # now: superseded facts too, ranked lower
        )
        hits = rank(index, query, candidates, milestone, count)
        results = []
        latest = self._latest_results()
        for hit in hits:
            item = self._summary(kb, hit.fact, milestone, latest)
            item["score"] = round(hit.score, 3)
            if not hit.current:
                item["current"] = False
            results.append(item)
        return {
            "query": query,
            "as_of": milestone.id if milestone else None,
            "count": len(results),
            "results": results,
        }

    def show_fact(self, fact_id: str, as_of: str | None = None) -> dict[str, Any]:
        kb, _ = self.kb()
        fact = kb.get(_fact_id(fact_id))
        milestone = self._milestone(kb, as_of)
        data = asdict(fact)
        data.update(data.pop("extra"))
        data["location"] = data.pop("file") + f":{data.pop('line')}"
        data["status_as_of"] = kb.status_as_of(fact, milestone)
        data["known_as_of"] = kb.visible(fact, milestone)
        data["linked_from"] = [
            {"relation": rel, "id": other.id} for rel, other in kb.linked_from(fact.id)
        ]
        data["results"] = [
            {k: (_short(v) if k == "observed" else v) for k, v in record.items()}
            for _, record in sorted(self._latest_results().get(fact.id, {}).items())
        ]
        data["uri"] = f"factbook://fact/{fact.id}"
        return {k: v for k, v in data.items() if v not in (None, [], {})}

    def match_pitfalls(self, text: str, limit: int | None = None) -> dict[str, Any]:
        if not isinstance(text, str):
            raise UsageError("text must be a string")
        truncated = len(text) > MAX_TEXT
        text = text[-MAX_TEXT:] if truncated else text  # a log's end holds the failure
        if not text.strip():
            raise UsageError("text is empty: paste the error message, log excerpt or command")
        count = _limit(limit, 5)
        kb, index = self.kb()
        # as search_facts does now: a pitfall that no longer holds (`until`) still matches a
        # symptom seen again, ranked lower and marked with its `until`
        pitfalls = kb.select(categories=["pitfalls"], include_past=True)
        hits = match_pitfalls(index, text, pitfalls, None, count)
        results = []
        for hit in hits:
            item = self._summary(kb, hit.fact, None)
            item.update(
                {k: hit.fact.get(k) for k in ("symptom", "cause", "fix") if hit.fact.get(k)}
            )
            item["score"] = round(hit.score, 3)
            results.append(item)
        out: dict[str, Any] = {"count": len(results), "results": results}
        if truncated:
            out["note"] = f"text cut to its last {MAX_TEXT:,} characters"
        return out

    def status_brief(self, budget: int | None = None, as_of: str | None = None) -> dict[str, Any]:
        """The status document, fitted to `budget` tokens when one is given (the dense dump)."""
        from factbook import api

        _budget(budget)
        kb, _ = self.kb()
        milestone = self._milestone(kb, as_of)
        as_of_id = milestone.id if milestone else None
        out: dict[str, Any] = {"as_of": as_of_id}
        mode = self.settings.redact  # here too, so that the budget holds for what is sent
        out["document"] = Redacted(
            api.status(
                kb,
                as_of=as_of_id,
                budget=budget,
                redact=mode == "all",
                hide_secrets=mode == "secrets",
            )
        )
        if budget is not None:
            out["budget"] = budget
        return out

    def check_launch(self, argv: list[str] | str) -> dict[str, Any]:
        """The SGLang launch linter on a command line; paths in it are never read."""
        from factbook.serving.sglang.flags import UNKNOWN
        from factbook.serving.sglang.launch import check_command

        if isinstance(argv, str):
            command: list[str] | str = _bounded(argv, MAX_ARG * 4, "argv")
        elif isinstance(argv, list):
            if len(argv) > MAX_ARGV:
                raise UsageError(f"argv has {len(argv)} items; at most {MAX_ARGV}")
            command = [_bounded(a, MAX_ARG, "each argv item") for a in argv]
        else:
            raise UsageError("argv must be a list of strings or one command string")
        if not command:
            raise UsageError("argv is empty: give the launch command")
        try:
            report = check_command(command, read_config=lambda path: None, exists=lambda path: None)
        except ValueError as exc:  # shlex: an unclosed quote
            raise UsageError(f"cannot split the command: {exc}") from None
        if report is None:
            raise UsageError("not an SGLang launch (python -m sglang.launch_server / sglang serve)")
        kb, _ = self.kb()
        resolved = {
            k: v for k, v in report.resolved.as_dict().items() if v is not UNKNOWN and v is not None
        }
        findings = []
        for finding in report.findings:
            item: dict[str, Any] = {"severity": finding.severity, "message": finding.message}
            if finding.pitfall:
                item["pitfall"] = finding.pitfall
                known = kb.facts.get(finding.pitfall)
                if known is not None:
                    item["pitfall_title"] = known.title
            findings.append(item)
        return {
            "resolved": resolved,
            "findings": findings,
            "errors": len(report.errors),
            "note": "model and draft folders are not read here; run `factbook launch-lint` on "
            "the box for the draft-config checks",
        }

    # --- verifying -----------------------------------------------------------------

    def _targets(self, kb: KnowledgeBase, target: str | None) -> list[str]:
        if target is None:
            return []
        _bounded(target, 100, "target")
        name = target[1:] if target.startswith("@") else target
        if name in kb.targets or name in kb.groups or target == "all":
            return [target]
        known = ", ".join(sorted(kb.targets)) or "none"
        raise UsageError(f"unknown target '{target[:60]}' (known: {known}; or all)")

    def verify_facts(
        self, facts: list[str], target: str | None = None, timeout_s: float | None = None
    ) -> dict[str, Any]:
        """Run the named facts' own checks; every check's timeout is capped at timeout_s.
        Checks that need the knowledge base's own probes come back as errors naming
        --run-kb-probes unless the server was started with it."""
        from factbook import api
        from factbook.integrations.kb_probes import run_guarded
        from factbook.knowledge.fleet.load import add_inventories
        from factbook.verification.engine import VerifyOptions
        from factbook.verification.run import VerifyRun, VerifySettings
        from factbook.verification.targets import Plan

        if not isinstance(facts, list) or not facts:
            raise UsageError("facts: give at least one fact id or glob (hw.gpu.*)")
        if len(facts) > MAX_PATTERNS:
            raise UsageError(f"facts has {len(facts)} items; at most {MAX_PATTERNS}")
        for pattern in facts:
            if not isinstance(pattern, str) or not _GLOB.fullmatch(pattern):
                raise UsageError(f"not a fact id or glob: {str(pattern)[:60]!r}")
        ceiling = self.settings.verify_timeout_s
        timeout = min(DEFAULT_VERIFY_TIMEOUT, ceiling) if timeout_s is None else timeout_s
        if not 0 < timeout <= ceiling:
            raise UsageError(
                f"timeout_s must be more than 0 and at most {ceiling:g} (mcp.verify_timeout_s)"
            )
        kb, _ = self.kb()
        kb = replace(kb)  # inventories are added to a copy: the cached one stays as loaded
        if self.settings.inventories:
            paths = [str(self.root / p) for p in self.settings.inventories]
            # named by the knowledge base (factbook.yaml): read, with their includes, inside it
            kb.targets, kb.groups = add_inventories(kb.targets, kb.groups, paths, root=self.root)
        targets = self._targets(kb, target)
        planned = api.plan(kb, targets, *facts)
        if not planned.checks:
            return {"ran": 0, "note": api.nothing_selected(kb, targets).replace("\n", "; ")}
        for check in planned.checks:
            own = check.fact.check
            assert own is not None
            capped = min(own.timeout or timeout, timeout)
            check.fact = replace(check.fact, check=replace(own, timeout=capped))
        options = VerifyOptions(timeout=timeout, stall_grace=min(30.0, timeout))
        argv = ["mcp", "verify_facts", *facts, *(["--target", target] if target else [])]

        def run_plan(plan: Plan, settings: VerifySettings) -> VerifyRun:
            planned.plan = plan
            return api.run_plan(kb, planned, settings)

        run = run_guarded(
            kb,
            planned.plan,
            VerifySettings(options=options, save=True, argv=argv),
            run_plan,
            allow=self.run_kb_probes,
            identities=True,
        )
        records = []
        for record in run.records:
            fact = kb.facts.get(record.fact)
            expect = fact.check.expect if fact is not None and fact.check else None
            records.append(
                {
                    "fact": record.fact,
                    "target": record.target,
                    "outcome": record.outcome,
                    "expected": expect,
                    "observed": _short(record.observed),
                    "reason": record.reason,
                    "duration_s": record.duration_s,
                }
            )
        saved = run.saved.relative_to(self.root).as_posix() if run.saved else None
        return {
            "run": run.id,
            "saved": saved,
            "elapsed_s": round(run.elapsed, 3),
            "summary": {k: v for k, v in run.header.get("summary", {}).items() if v},
            "results": records,
        }

    # --- proposing -----------------------------------------------------------------

    def _source(self, reason: str) -> dict[str, Any]:
        return {"note": f"proposed by an assistant over MCP: {reason}", "date": now_iso()[:10]}

    def _submit(self, item: Any, reason: str) -> dict[str, Any]:
        from factbook.dumps.capture.review import submit

        with self._writing:
            done = submit(
                self.root, item, origin="mcp", reason=reason, write_facts=self.settings.write_facts
            )
        out: dict[str, Any] = {"summary": done.summary, "diff": done.diff}
        if done.written:
            out["written"] = [p.relative_to(self.root).as_posix() for p in done.written]
            out["state"] = "written to facts/ (factbook.yaml: mcp.write_facts is true)"
        else:
            out["proposal"] = done.pid
            out["state"] = "waiting for review"
            out["review"] = (
                f"factbook proposals show {done.pid}; factbook proposals accept {done.pid}"
            )
        return out

    def propose_fact(
        self,
        id: str,
        category: str,
        title: str,
        statement: str,
        reason: str,
        value: Any = None,
        unit: str | None = None,
        status: str = "assumed",
        tags: list[str] | None = None,
        target: str | None = None,
        since: str | None = None,
        fields: dict[str, Any] | None = None,
        check: dict[str, Any] | None = None,
        links: dict[str, list[str]] | None = None,
    ) -> dict[str, Any]:
        from factbook.dumps.capture.review import NewFact

        fact: dict[str, Any] = {"id": _fact_id(id), "category": _bounded(category, 100, "category")}
        for key, text in (("title", title), ("statement", statement), ("reason", reason)):
            _bounded(text, MAX_FIELD, key)
            if not text.strip():
                raise UsageError(f"{key} is empty")
        fact.update(title=title, statement=statement)
        if value is not None:
            fact["value"] = self._value(value)
        if unit is not None:
            fact["unit"] = _bounded(unit, 100, "unit")
        for key, extra in _mapping(fields, "fields").items():
            if key in ("id", "category", "title", "statement", "status", "sources", "history"):
                raise UsageError(f"fields: '{str(key)[:40]}' has its own argument")
            fact[str(key)[:100]] = self._value(extra)
        fact["status"] = _bounded(status, 100, "status")
        if target is not None:
            fact["target"] = _bounded(target, 100, "target")
        if tags is not None and (listed := _strings(tags, MAX_TAGS, "tags")):
            fact["tags"] = listed
        if since is not None:
            fact["since"] = _bounded(since, 100, "since")
        fact["sources"] = [self._source(reason)]
        if check is not None:
            fact["check"] = self._value(check)  # names a probe: lint refuses unknown ones
        if links:
            fact["links"] = self._value(links)
        return self._submit(NewFact(fact), reason)

    def propose_change(
        self,
        id: str,
        reason: str,
        value: Any = None,
        unit: str | None = None,
        status: str | None = None,
        fields: dict[str, Any] | None = None,
        milestone: str | None = None,
    ) -> dict[str, Any]:
        with self._writing:  # the fact as read is the fact changed
            return self._change(id, reason, value, unit, status, fields, milestone)

    def _change(
        self,
        id: str,
        reason: str,
        value: Any,
        unit: str | None,
        status: str | None,
        fields: dict[str, Any] | None,
        milestone: str | None,
    ) -> dict[str, Any]:
        from factbook.dumps.capture.propose import history_with
        from factbook.dumps.capture.review import FactChange

        kb, _ = self.kb()
        fact = kb.get(_fact_id(id))
        _bounded(reason, MAX_FIELD, "reason")
        if not reason.strip():
            raise UsageError("reason is empty: say what was observed or learned")
        changes: dict[str, Any] = {}
        if value is not None:
            changes["value"] = self._value(value)
        if unit is not None:
            changes["unit"] = _bounded(unit, 100, "unit")
        for key, extra in _mapping(fields, "fields").items():
            if key in ("id", "category", "title", "statement", "status", "history", "sources"):
                raise UsageError(f"fields: '{str(key)[:40]}' cannot be changed this way")
            changes[str(key)[:100]] = self._value(extra)
        if status is not None:
            if _bounded(status, 100, "status") not in STATUSES:
                raise UsageError(f"unknown status '{status[:40]}' (known: {', '.join(STATUSES)})")
            changes["status"] = status
            at = self._milestone(kb, milestone) if milestone else kb.latest_milestone()
            if at is not None and status != fact.status:
                changes["history"] = history_with(fact, at, kb, status, reason[:300])
        elif milestone is not None:
            raise UsageError("milestone only applies to a status change")
        if not changes:
            raise UsageError("nothing to change: give value, unit, status or fields")
        return self._submit(FactChange(fact.id, changes, self._source(reason)), reason)

    def _value(self, value: Any) -> Any:
        """A JSON value from the client, bounded in size."""
        try:
            text = json.dumps(value)
        except (TypeError, ValueError):
            raise UsageError("value is not JSON") from None
        except RecursionError:  # nested past what json.dumps walks; lint allows 40 levels
            raise UsageError("a value is nested too deeply") from None
        if len(text) > MAX_VALUE:
            raise UsageError(f"a value is {len(text):,} characters of JSON; at most {MAX_VALUE:,}")
        return value

    def redacted(self, answer: Any) -> Any:
        """`answer` with every string in it (keys too) redacted as mcp.redact says, one
        redactor for the whole answer (a secret is `secret-1` throughout). Every tool answer
        and resource passes here: a fact's statement, a verify result, a status dump held
        redact.yaml's secrets, `-pPASSWORD` and `hf_…` tokens, sent to the assistant.
        A string met twice in an answer (keys, categories, statuses) is redacted once: the
        redaction pattern costs ~30 us a string, 10 ms a search answer before."""
        mode = self.settings.redact
        if mode == "none":
            return answer
        kb, _ = self.kb()
        redactor = redactor_for(kb, secrets_only=mode == "secrets")
        if mode != "secrets":  # names it learns hide in strings met before: no memo

            def each(text: str) -> str:
                return text if isinstance(text, Redacted) else redactor(text)

            return each_string(answer, each, keys=True)
        done: dict[str, str] = {}

        def once(text: str) -> str:
            if isinstance(text, Redacted):
                return text
            out = done.get(text)
            if out is None:
                out = done[text] = redactor(text)
            return out

        return each_string(answer, once, keys=True)

    # --- resources -----------------------------------------------------------------

    def status_document(self, as_of: str | None = None) -> str:
        document: Redacted = self.status_brief(None, as_of)["document"]
        return document

    def milestones(self) -> list[Milestone]:
        kb, _ = self.kb()
        return list(kb.milestones.values())

    def facts(self) -> list[Fact]:
        kb, _ = self.kb()
        return list(kb.facts.values())
