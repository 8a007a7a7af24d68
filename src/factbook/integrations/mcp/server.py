"""`factbook mcp`: the knowledge base as an MCP server over stdio (the official `mcp` SDK).

Tools (schemas and descriptions written for a model), each a thin call into tools.Toolbox:
search_facts, show_fact, verify_facts, propose_fact, propose_change, status_brief,
check_launch, match_pitfalls. Resources: factbook://status (now), factbook://status/{as_of}
(each milestone) and factbook://fact/{id} (each fact), listed from the knowledge base as it
is at the time of the listing.

Any error is a tool error of one line: a FactbookError says what to fix; arguments that fail
the schema name the argument; anything else is reported as an internal error (its traceback
goes to stderr, the client's log), and the server keeps serving. A line on stdin that is no
message gets a JSON-RPC error, and one over mcp.max_message_bytes is refused unread (stdio.py).
verify_facts runs factbook's own probes only, a knowledge base's checks/*.py only when the
server was started with --run-kb-probes (integrations/kb_probes.py).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedResourceError,
)
from mcp.types import NotificationParams, ToolAnnotations
from pydantic import Field, ValidationError

from factbook.errors import FactbookError
from factbook.integrations.mcp.settings import (
    MAX_BUDGET,
    MAX_LIMIT,
    MAX_QUERY,
    MIN_BUDGET,
    McpSettings,
    load_settings,
)
from factbook.judging.sanitize import for_terminal, hidden_escaped
from factbook.store.stamps import FACTBOOK_VERSION

if TYPE_CHECKING:
    from factbook.integrations.mcp.tools import Toolbox

log = logging.getLogger("factbook.mcp")

INSTRUCTIONS = """\
factbook holds what this team learned while deploying models on its GPU servers: facts with
provenance, a status (verified / assumed / refuted / stale) and, often, a live check.
Ask before you act: search_facts("which token id ends a turn") or match_pitfalls(<error text>)
before guessing; check_launch(argv) before starting SGLang; verify_facts([...]) to re-check a
fact on its box now. Trust verified facts over your memory; a refuted fact says what was wrong.
When you learn something (a measured value, a root cause, a fix), record it with propose_fact
or propose_change: a person reviews it (factbook proposals) unless the knowledge base allows
direct writes. status_brief gives the project's status document for a hand-over."""

READ_ONLY = ToolAnnotations(readOnlyHint=True, openWorldHint=False)


def _one_line(text: str) -> str:
    """An error as one line with every control and bidi character shown escaped: a message
    quoting what a client or a fact file wrote (`unknown key '\u202e'`) reached the client
    raw."""
    return for_terminal(" ".join(str(text).split()))


def _validation_line(name: str, error: ValidationError) -> str:
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "arguments"
        parts.append(f"{where}: {item['msg']}")
    return f"{name}: invalid arguments: {'; '.join(parts)}"


class DeferredToolbox:
    """The Toolbox, imported and built on first use.

    tools.py brings the knowledge base's loader, search and results with it; the handshake
    needs none of them, so the server declares its tools and answers `initialize` first, and
    the Toolbox comes into being when the client says it is initialized (`warm`) or at the
    first call, whichever is first. Thread-safe: tools run in worker threads."""

    def __init__(
        self, root: Path, settings: McpSettings | None = None, run_kb_probes: bool = False
    ):
        self.root = root
        self.settings = settings
        self.run_kb_probes = run_kb_probes
        self._box: Toolbox | None = None
        self._lock = threading.Lock()
        self._warming = False

    def get(self) -> Toolbox:
        with self._lock:
            if self._box is None:
                from factbook.integrations.mcp.tools import Toolbox

                self._box = Toolbox(self.root, self.settings, run_kb_probes=self.run_kb_probes)
            return self._box

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)

    def warm(self) -> None:
        """Load the knowledge base in the background, so the first call finds it ready."""
        with self._lock:
            if self._warming:
                return
            self._warming = True
        threading.Thread(target=_warm, args=(self,), name="factbook-mcp-warm", daemon=True).start()


class FactbookMCP(MCPServer):
    """MCPServer with errors on one line and resources listed from the live knowledge base."""

    def __init__(self, toolbox: Toolbox | DeferredToolbox, **kwargs: Any):
        super().__init__(**kwargs)
        self.toolbox = toolbox
        if isinstance(toolbox, DeferredToolbox):
            # the SDK calls this once the handshake is over (`notifications/initialized`); the
            # hook is the SDK's own server object, not public API: an SDK without it gets the
            # knowledge base loaded at once instead (a slower first answer, never a failure)
            lowlevel = getattr(self, "_lowlevel_server", None)
            adding = getattr(lowlevel, "add_notification_handler", None)
            if adding is None:
                toolbox.warm()
            else:
                adding("notifications/initialized", NotificationParams, self._initialized)

    async def _initialized(self, context: Any, params: Any) -> None:
        assert isinstance(self.toolbox, DeferredToolbox)
        self.toolbox.warm()

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(_validation_line(name, exc.__cause__)) from None
            text = _one_line(str(exc))
            sdk = f"Error executing tool {name}: "  # the SDK's prefix; ours names the tool
            text = text[len(sdk) :] if text.startswith(sdk + name + ":") else text
            raise ToolError(text) from exc.__cause__

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        """The SDK's read, its errors quoting the URI by its head: an unknown URI was echoed
        whole, twice (the message and `data.uri`), however long the client sent it (round 17);
        an error our own handlers raise is one line already (`_resource`)."""
        from mcp.shared.exceptions import MCPError
        from mcp.types import INTERNAL_ERROR, INVALID_PARAMS

        try:
            return await super().read_resource(uri, context)
        except ResourceError as exc:
            said = _uri_shown(str(uri))
            text = _one_line(str(exc).replace(str(uri), said))
            if isinstance(exc, UnexpectedResourceError):
                log.error("reading resource %s: %s", said, _one_line(repr(exc.__cause__))[:300])
            found = isinstance(exc, ResourceNotFoundError)
            code = INVALID_PARAMS if found else INTERNAL_ERROR
            raise MCPError(code=code, message=text, data={"uri": said}) from None

    async def list_resources(self) -> list[Any]:
        from mcp.types import Resource

        listed = await super().list_resources()
        try:
            milestones = self.toolbox.milestones()
            facts = self.toolbox.facts()
        except FactbookError as exc:
            log.warning("listing resources: %s", _one_line(str(exc)))
            return listed
        for milestone in milestones:
            listed.append(
                Resource(
                    uri=f"factbook://status/{milestone.id}",
                    name=f"status-{milestone.id}",
                    title=for_terminal(f"Status as of {milestone.id}: {milestone.title}"),
                    mime_type="text/markdown",
                )
            )
        for fact in facts:
            listed.append(
                Resource(
                    uri=f"factbook://fact/{fact.id}",
                    name=fact.id,
                    title=for_terminal(fact.title),
                    description=for_terminal(f"{fact.category}, {fact.status}"),
                    mime_type="application/json",
                )
            )
        return listed


URI_SHOWN = 200  # characters of a resource URI an error quotes


def _uri_shown(uri: str) -> str:
    """A URI as an error quotes it: escaped, and its head only when it is long."""
    text = _one_line(uri)
    return text if len(text) <= URI_SHOWN else f"{text[:URI_SHOWN]}... ({len(uri)} characters)"


def _guard(box: Any, name: str, call: Any) -> Any:
    """Run one tool call; every failure becomes a one-line ToolError. Its answer is redacted
    as mcp.redact says (Toolbox.redacted) and holds each string with control and bidi
    characters shown escaped, as `show` prints them: a fact file's title of `\u202e`
    (lint's error, yet loaded) reached the assistant raw."""
    try:
        return hidden_escaped(box.redacted(call()))
    except FactbookError as exc:
        raise ToolError(f"{name}: {_one_line(str(exc))}") from None
    except Exception as exc:  # a bug must not take the server down
        log.exception("tool %s failed", name)
        raise ToolError(
            f"{name}: internal error ({type(exc).__name__}: {_one_line(str(exc))[:300]}); "
            "the server log has the traceback"
        ) from None


def _resource(box: Any, call: Any) -> str:
    """A resource's text, redacted as a tool's answer is (Toolbox.redacted)."""
    try:
        text = call()  # a status document comes already redacted (tools.Redacted)
        return str(box.redacted(text if isinstance(text, str) else str(text)))
    except FactbookError as exc:
        raise ResourceError(_one_line(str(exc))) from None


def build_server(
    root: Path,
    toolbox: Toolbox | DeferredToolbox | None = None,
    *,
    settings: McpSettings | None = None,
    run_kb_probes: bool = False,
) -> FactbookMCP:
    """The server for the knowledge base at `root`, its tools and resources registered
    (without a toolbox, one built on first use: DeferredToolbox)."""
    box = toolbox or DeferredToolbox(root, settings, run_kb_probes)
    server = FactbookMCP(
        box,
        name="factbook",
        title="factbook",
        description="Facts, live checks and pitfalls of a model deployment",
        instructions=INSTRUCTIONS,
        version=FACTBOOK_VERSION,
        log_level="WARNING",
    )
    _one_line_logs()  # after the SDK's own logging set-up, which the server's creation runs
    _register_reading(server, box)
    _register_acting(server, box)
    _register_resources(server, box)
    return server


class _OneLine(logging.Formatter):
    """A log record as one line on stderr (the client's log): an exception by its type and
    message. The SDK logs a request its handler refused (an unknown prompt, say) with its
    traceback, which a client's bad request is not worth; its text, which the client
    chose, is shown escaped."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"factbook mcp: {record.levelname.lower()}: {record.getMessage()}"
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            text += f": {type(error).__name__}: {error}"
        return for_terminal(text)


def _one_line_logs() -> None:
    """The SDK's rich handler on the root logger (it renders tracebacks itself) replaced by
    one writing _OneLine to stderr; any other handler (a test's capture) is left alone."""
    root = logging.getLogger()
    rich = [h for h in root.handlers if type(h).__name__ == "RichHandler"]
    for handler in rich:
        root.removeHandler(handler)
    if rich:
        plain = logging.StreamHandler(sys.stderr)
        plain.setFormatter(_OneLine())
        root.addHandler(plain)


Query = Annotated[
    str,
    Field(
        description="what you want to know, in your own words, an error message, an id, a "
        "value or a flag (e.g. 'which token id ends a turn', '<|im_end|>', 'topk=1')",
        max_length=MAX_QUERY,
    ),
]
AsOf = Annotated[
    str | None,
    Field(description="a milestone id: what was known then (default: now)", max_length=100),
]
Limit = Annotated[
    int | None, Field(description="results to return (default 10)", ge=1, le=MAX_LIMIT)
]


def _register_reading(server: FactbookMCP, box: Any) -> None:
    @server.tool(annotations=READ_ONLY)
    def search_facts(
        query: Query,
        category: Annotated[
            str | None, Field(description="only this category (hardware, pitfalls, ...)")
        ] = None,
        tag: Annotated[str | None, Field(description="only facts with this tag")] = None,
        status: Annotated[
            str | None, Field(description="only this status: verified, assumed, refuted, stale")
        ] = None,
        as_of: AsOf = None,
        limit: Limit = None,
    ) -> dict[str, Any]:
        """Search the team's facts, best match first.

        Matches ids, titles, statements, values, tags and pitfall symptoms/causes/fixes.
        Each result has id, title, value (+unit), status, a statement snippet and where
        and when it was last verified. Refuted or superseded facts rank lower but still
        show (they say what was wrong). Use show_fact(id) for provenance and history.
        """
        return _guard(
            box,
            "search_facts",
            lambda: box.search_facts(query, category, tag, status, as_of, limit),
        )

    @server.tool(annotations=READ_ONLY)
    def show_fact(
        id: Annotated[str, Field(description="a fact id, e.g. tok.im_end.id", max_length=200)],
        as_of: AsOf = None,
    ) -> dict[str, Any]:
        """One fact in full: statement, value, status (and as of a milestone), sources with
        quotes, history, its check (probe, arguments, expectation), links both ways, where it
        is defined, and its latest result on every target it was checked on."""
        return _guard(box, "show_fact", lambda: box.show_fact(id, as_of))

    @server.tool(annotations=READ_ONLY)
    def match_pitfalls(
        text: Annotated[
            str,
            Field(
                description="an error message, a log excerpt or a command line (the end of "
                "a long log is kept)"
            ),
        ],
        limit: Annotated[
            int | None, Field(description="results (default 5)", ge=1, le=MAX_LIMIT)
        ] = None,
    ) -> dict[str, Any]:
        """The known pitfalls this text looks like, best first, each with symptom, cause and
        fix. Use it on an error or a surprising result before debugging from scratch."""
        return _guard(box, "match_pitfalls", lambda: box.match_pitfalls(text, limit))

    @server.tool(annotations=READ_ONLY)
    def status_brief(
        budget: Annotated[
            int | None,
            Field(
                description="size budget of the document, where this factbook supports a "
                "budgeted dump; omitted: the whole document",
                ge=MIN_BUDGET,
                le=MAX_BUDGET,
            ),
        ] = None,
        as_of: AsOf = None,
    ) -> dict[str, Any]:
        """The project's status document (goal, instructions, discoveries, pitfalls,
        benchmarks, progress, files), each line marked verified / assumed / refuted: read it
        at the start of a session or after your context was compacted."""
        return _guard(box, "status_brief", lambda: box.status_brief(budget, as_of))

    @server.tool(annotations=READ_ONLY)
    def check_launch(
        argv: Annotated[
            list[str] | str,
            Field(
                description="the SGLang launch command: a list of arguments or one string, "
                "e.g. 'python -m sglang.launch_server --model-path ... "
                "--speculative-algorithm EAGLE3 ...'"
            ),
        ],
    ) -> dict[str, Any]:
        """Lint an SGLang launch command line before running it: the speculative flags as
        SGLang will actually resolve them (silent overrides included) and every finding
        (errors, warnings) with the pitfall fact it comes from."""
        return _guard(box, "check_launch", lambda: box.check_launch(argv))


def _register_acting(server: FactbookMCP, box: Any) -> None:
    @server.tool(annotations=ToolAnnotations(readOnlyHint=False, openWorldHint=True))
    def verify_facts(
        facts: Annotated[
            list[str],
            Field(
                description="fact ids or globs (hw.gpu.*); only their own checks run, with "
                "factbook's built-in probes unless the server allows the knowledge base's"
            ),
        ],
        target: Annotated[
            str | None,
            Field(description="a target or group from targets.yaml (default: each fact's own)"),
        ] = None,
        timeout_s: Annotated[
            float | None,
            Field(description="the longest any check may run (default 60 s)", gt=0),
        ] = None,
    ) -> dict[str, Any]:
        """Check facts live on their boxes now, with the checks stored in the knowledge base,
        and return each outcome (pass / drift / error / skipped) with expected vs observed.
        A check whose probe comes from the knowledge base's checks/ is an error unless the
        server was started with --run-kb-probes. The run is saved under results/ like
        `verify-facts`."""
        return _guard(box, "verify_facts", lambda: box.verify_facts(facts, target, timeout_s))

    @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False))
    def propose_fact(
        id: Annotated[
            str, Field(description="a new dotted id, e.g. hw.gpu.ecc_mode", max_length=200)
        ],
        category: Annotated[
            str,
            Field(
                description="hardware, software, model, tokenizer, "
                "pitfalls, benchmarks, decisions, ..."
            ),
        ],
        title: Annotated[str, Field(description="a short title")],
        statement: Annotated[str, Field(description="the fact as one or two sentences")],
        reason: Annotated[
            str,
            Field(description="how you know: what you ran or read, recorded as the fact's source"),
        ],
        value: Annotated[
            Any, Field(description="the value (number, string, list, mapping)")
        ] = None,
        unit: Annotated[str | None, Field(description="its unit (GB, tok/s, ...)")] = None,
        status: Annotated[str, Field(description="assumed (default) unless checked")] = "assumed",
        tags: Annotated[list[str] | None, Field(description="tags")] = None,
        target: Annotated[str | None, Field(description="the box it is about")] = None,
        since: Annotated[str | None, Field(description="the milestone it holds from")] = None,
        fields: Annotated[
            dict[str, Any] | None,
            Field(
                description="the category's own keys: pitfalls need symptom, cause, fix; "
                "decisions need rationale"
            ),
        ] = None,
        check: Annotated[
            dict[str, Any] | None,
            Field(
                description="a live check: {probe, args, expect}, with a probe factbook "
                "knows (e.g. {probe: cpu.threads, expect: {ge: 1}})"
            ),
        ] = None,
        links: Annotated[
            dict[str, list[str]] | None,
            Field(description="links to other facts: {see_also: [...], replaces: [...]}"),
        ] = None,
    ) -> dict[str, Any]:
        """Record something you learned as a new fact. It is checked like any fact (it
        must lint clean) and returned as a diff; it waits in proposals/ for a person to
        accept, unless the knowledge base allows direct writes (factbook.yaml)."""
        return _guard(box,
            "propose_fact",
            lambda: box.propose_fact(
                id, category, title, statement, reason, value, unit, status, tags, target,
                since, fields, check, links,
            ),
        )  # fmt: skip

    @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False))
    def propose_change(
        id: Annotated[str, Field(description="the fact to change", max_length=200)],
        reason: Annotated[
            str,
            Field(description="what you observed or learned; recorded as a new source of the fact"),
        ],
        value: Annotated[Any, Field(description="the corrected value")] = None,
        unit: Annotated[str | None, Field(description="the corrected unit")] = None,
        status: Annotated[
            str | None, Field(description="a new status: verified, refuted, stale, assumed")
        ] = None,
        fields: Annotated[
            dict[str, Any] | None, Field(description="other keys to set (fix, symptom, ...)")
        ] = None,
        milestone: Annotated[
            str | None,
            Field(description="the milestone the status changed at (default: the latest)"),
        ] = None,
    ) -> dict[str, Any]:
        """Propose a change to a known fact (a corrected value, a refutation, a new fix),
        as a reviewable diff that lints clean; the reason becomes a source of the fact."""
        return _guard(
            box,
            "propose_change",
            lambda: box.propose_change(id, reason, value, unit, status, fields, milestone),
        )


def _register_resources(server: FactbookMCP, box: Any) -> None:
    @server.resource("factbook://status", name="status", mime_type="text/markdown")
    def status_now() -> str:
        """The status document, now."""
        return _resource(box, lambda: box.status_document(None))

    @server.resource("factbook://status/{as_of}", name="status-as-of", mime_type="text/markdown")
    def status_as_of(as_of: str) -> str:
        """The status document as of a milestone."""
        return _resource(box, lambda: box.status_document(as_of))

    @server.resource("factbook://fact/{fact_id}", name="fact", mime_type="application/json")
    def fact(fact_id: str) -> str:
        """One fact in full (as show_fact returns it), as JSON."""
        return _resource(box, lambda: json.dumps(box.show_fact(fact_id), indent=1, default=str))


def serve(root: Path, *, settings: McpSettings | None = None, run_kb_probes: bool = False) -> None:
    """Serve the knowledge base at `root` over stdio until the client closes it.

    The handshake waits for nothing of ours: the tools are declared from their signatures,
    and the knowledge base (with the modules that read it) is loaded in the background once
    the client has its `initialize` answer, so the first call usually finds it ready.
    Messages are read by our own bounded transport (stdio.py), not the SDK's.
    """
    import anyio

    from factbook.integrations.mcp.stdio import serve_stdio

    settings = settings if settings is not None else load_settings(root)
    server = build_server(root, settings=settings, run_kb_probes=run_kb_probes)
    anyio.run(serve_stdio, server, settings.max_message_bytes)


def _warm(box: DeferredToolbox) -> None:
    try:
        box.kb()
    except Exception as exc:  # reported again, as a tool error, by the first call
        log.warning("loading the knowledge base: %s", _one_line(str(exc)))
