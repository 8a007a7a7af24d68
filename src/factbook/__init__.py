"""factbook: a living, verifiable handbook of what a team learns on its GPU boxes.

The Python API (factbook.api; docs/api.md): `load`, `verify`, `status`, `lint`, and `plan` /
`run_plan` for a verify in two steps. Imported lazily, so `import factbook` stays cheap.
`factbook.verify` and `factbook.status` are also subpackages; calling them calls the API
function (factbook.callable_module says why).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["__version__", "lint", "load", "plan", "run_plan", "status", "verify"]

if TYPE_CHECKING:
    from .api import lint, load, plan, run_plan, status, verify


def __getattr__(name: str) -> Any:
    if name in ("verify", "status"):  # subpackages, callable as the API functions
        import importlib

        return importlib.import_module(f"factbook.{name}")
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'factbook' has no attribute {name!r}")
