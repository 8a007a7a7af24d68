"""factbook: a living, verifiable handbook of what a team learns on its GPU boxes.

The Python API (factbook.api; docs/api.md): `load`, `verify`, `status`, `lint`, and `plan` /
`run_plan` for a verify in two steps. Imported lazily, so `import factbook` stays cheap.
No subpackage shares a name with an API function, so `factbook.verify` is always the function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from factbook.store.stamps import FACTBOOK_VERSION as __version__

__all__ = ["__version__", "lint", "load", "plan", "run_plan", "status", "verify"]

if TYPE_CHECKING:
    from factbook.api import lint, load, plan, run_plan, status, verify


def __getattr__(name: str) -> Any:
    if name in __all__:
        from factbook import api

        return getattr(api, name)
    raise AttributeError(f"module 'factbook' has no attribute {name!r}")
