"""Packages that are also the API function of their name: `factbook.verify(kb, ...)`.

`factbook.verify` and `factbook.status` are subpackages, and importing a subpackage sets it
as an attribute of `factbook`, replacing any function of that name. So the package itself is
made callable (a module's __class__ may be a ModuleType subclass) and a call goes to
factbook.api's function of the same name; attribute access to the package is unchanged.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class CallableModule(types.ModuleType):
    """A module whose call is `factbook.api.<its last name>(...)`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from . import api

        return getattr(api, self.__name__.rpartition(".")[2])(*args, **kwargs)


def make_callable(module_name: str) -> None:
    """Turn the already imported module `module_name` into a CallableModule."""
    sys.modules[module_name].__class__ = CallableModule
