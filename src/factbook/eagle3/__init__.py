"""EAGLE-3 draft-model checks: the traps that cost the seeds' team days, made executable.

Modules, one job each:

- `safetensors_files`: find a checkpoint's files (single or sharded) and read headers (stdlib).
- `keys`: speculators' `layers.0.*` vs SGLang's `midlayer.*`; the renaming fix.
- `vocab`: build and validate `d2t` (offsets) / `t2d` (mask) from token frequencies.
- `capture`: SGLang's capture convention (`layer_id + 1`) against what training recorded.
- `align`: recompute hidden states with transformers and compare them to a training dump.
- `params`: the draft model's parameter counts from its config alone.

Everything that needs torch imports it inside the function, so `factbook --help` stays fast
and the config-only checks (capture, summary) run without the ml extra.
"""

from __future__ import annotations

from typing import Any

from ..errors import UsageError


class MissingDependency(UsageError):
    """An optional module (torch, safetensors, transformers) is not installed."""


def require(module: str) -> Any:
    """Import `module` or raise a message that names the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(
            f"this command needs {module.split('.')[0]} ({exc}); "
            "install the ml extra: pip install -e '.[ml]'"
        ) from None
