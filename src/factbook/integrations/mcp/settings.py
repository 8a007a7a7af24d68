"""What a knowledge base allows an assistant to do over MCP: the `mcp:` key of factbook.yaml.

    # factbook.yaml, at the knowledge base's root (every key optional)
    mcp:
      write_facts: false        # true: propose_fact / propose_change write facts/ at once
                                # (still lint clean); false: proposals/ for review
      verify_timeout_s: 120     # the longest a verify_facts call may run
      inventories: [hosts.ini]  # Ansible inventories / ssh configs (inside the knowledge
                                # base) whose hosts verify_facts may also check
      max_message_bytes: 4194304  # the longest JSON-RPC message (one stdin line) read; a
                                # longer one is refused unread (64 KiB to 256 MiB)
      redact: secrets           # hidden from every answer: secrets (redact.yaml's, the
                                # environment's, token shapes); all: hosts, users, IPs
                                # too (as `status --redact`); none: nothing

The file belongs to the people who own the knowledge base, never to the assistant: no tool
writes it. Other top-level keys are left to whoever reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from factbook.errors import InputError, LintFailed
from factbook.knowledge.kbfiles import confined
from factbook.knowledge.names import inside
from factbook.knowledge.yamlsrc import load_located

SETTINGS_FILE = "factbook.yaml"
# bounds the tools' JSON schemas publish (server.py) and tools.py enforces; here, not in
# tools.py, so the server declares its tools without importing the knowledge base's loader
MAX_QUERY = 2_000  # characters of a search query
MAX_LIMIT = 50
DEFAULT_VERIFY_TIMEOUT = 120.0
MAX_VERIFY_TIMEOUT = 3600.0
# status_brief's budget, in tokens: below the minimum no dump fits its own header; the maximum
# is far beyond any model's context (a budget only ever trims the whole document)
MIN_BUDGET = 100
MAX_BUDGET = 1_000_000
# one message on stdin: a line of the SDK's transport was read whole, so a 900 MB line took
# gigabytes; the largest tool argument factbook accepts fits in well under 4 MiB of JSON
DEFAULT_MAX_MESSAGE = 4 << 20
MIN_MAX_MESSAGE = 64 << 10
MAX_MAX_MESSAGE = 256 << 20


@dataclass(frozen=True)
class McpSettings:
    """The knowledge base's choices for its MCP server (defaults: review everything)."""

    write_facts: bool = False
    verify_timeout_s: float = DEFAULT_VERIFY_TIMEOUT
    inventories: tuple[str, ...] = field(default_factory=tuple)
    max_message_bytes: int = DEFAULT_MAX_MESSAGE
    redact: str = "secrets"  # one of REDACT_MODES


# what the assistant is shown: every secret hidden (the default: an assistant is often a
# service elsewhere, and a status dump's passwords and tokens are no help to it), hosts,
# users and addresses hidden too ("all", as `status --redact`), or nothing hidden ("none")
REDACT_MODES = ("secrets", "all", "none")


def load_settings(root: Path) -> McpSettings:
    """factbook.yaml's `mcp:` settings, or the defaults when there is none.

    A wrong value stops the server with its file:line (LintFailed), rather than silently
    allowing or refusing writes.
    """
    path = Path(root) / SETTINGS_FILE
    if not path.exists():
        return McpSettings()
    with confined(root):  # a file of the knowledge base: a link out is refused, not read
        doc, problems = load_located(path, SETTINGS_FILE)
    if problems:
        raise LintFailed(problems)
    data = doc.data if isinstance(doc.data, dict) else {}
    section = data.get("mcp")
    if section is None:
        return McpSettings()
    if not isinstance(section, dict):
        raise LintFailed([doc.problem(("mcp",), "mcp: must be a mapping")])
    found = []
    known = {"write_facts", "verify_timeout_s", "inventories", "max_message_bytes", "redact"}
    for key in section:
        if key not in known:
            found.append(
                doc.problem(("mcp", key), f"unknown key mcp.{key} (known: {sorted(known)})")
            )
    write = section.get("write_facts", False)
    if not isinstance(write, bool):
        found.append(doc.problem(("mcp", "write_facts"), "mcp.write_facts: true or false"))
    timeout = section.get("verify_timeout_s", DEFAULT_VERIFY_TIMEOUT)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not (0 < timeout <= MAX_VERIFY_TIMEOUT)
    ):
        found.append(
            doc.problem(
                ("mcp", "verify_timeout_s"),
                f"mcp.verify_timeout_s: seconds, more than 0 and at most {MAX_VERIFY_TIMEOUT:g}",
            )
        )
        timeout = DEFAULT_VERIFY_TIMEOUT
    inventories = section.get("inventories", [])
    if not isinstance(inventories, list) or not all(isinstance(i, str) for i in inventories):
        found.append(doc.problem(("mcp", "inventories"), "mcp.inventories: a list of paths"))
        inventories = []
    for number, name in enumerate(inventories):
        try:
            inside(Path(root), name)
        except InputError as exc:
            found.append(doc.problem(("mcp", "inventories", number), str(exc)))
    limit = section.get("max_message_bytes", DEFAULT_MAX_MESSAGE)
    if (
        isinstance(limit, bool)
        or not isinstance(limit, int)
        or not MIN_MAX_MESSAGE <= limit <= MAX_MAX_MESSAGE
    ):
        found.append(
            doc.problem(
                ("mcp", "max_message_bytes"),
                f"mcp.max_message_bytes: a whole number of bytes from {MIN_MAX_MESSAGE} "
                f"to {MAX_MAX_MESSAGE}",
            )
        )
        limit = DEFAULT_MAX_MESSAGE
    redact = section.get("redact", "secrets")
    if redact not in REDACT_MODES:
        found.append(
            doc.problem(("mcp", "redact"), f"mcp.redact: one of {', '.join(REDACT_MODES)}")
        )
    if found:
        raise LintFailed(found)
    return McpSettings(bool(write), float(timeout), tuple(inventories), limit, str(redact))
