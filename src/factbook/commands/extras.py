"""Which optional extra provides which module, so a missing one is named, not a traceback.

The core install (facts, lint, verify local and over SSH, discover, status) needs pyyaml,
jinja2, packaging and paramiko; everything else comes from an extra declared in
pyproject.toml. A command that reaches a module of a missing extra ends with one line saying
what to install (MissingDependency, exit 2) instead of an ImportError: from where this copy
came (install_source.py), since `pip install factbook` only works where an index has it.
"""

from __future__ import annotations

from factbook.errors import MissingDependency

# top-level import name -> the extra in pyproject.toml that installs it
MODULE_EXTRAS: dict[str, str] = {
    "mkdocs": "handbook",
    "material": "handbook",
    "nbclient": "runbooks",
    "nbformat": "runbooks",
    "jupytext": "runbooks",
    "ipykernel": "runbooks",
    "jupyter_client": "runbooks",
    "torch": "ml",
    "safetensors": "ml",
    "tokenizers": "ml",
    "numpy": "ml",
    "transformers": "ml",
    "mcp": "mcp",
    "mcp_types": "mcp",
}


def extra_for(module: str | None) -> str | None:
    """The extra that installs `module` (a dotted name is looked up by its top package)."""
    if not module:
        return None
    return MODULE_EXTRAS.get(module.split(".", 1)[0])


def missing(exc: ModuleNotFoundError, what: str) -> MissingDependency | None:
    """The error to raise for a module of an extra, or None if no extra provides it."""
    extra = extra_for(exc.name)
    if extra is None:
        return None
    # importlib.metadata (~30 ms) only when an extra is missing, not on every run of the CLI
    from factbook.knowledge.install_source import hint

    return MissingDependency(
        f"{what} needs the '{extra}' extra (module {exc.name} is not installed): {hint(extra)}"
    )
