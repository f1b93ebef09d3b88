"""Optional extras: the one way a feature imports a framework the plain install lacks.

`import workbench_magic` imports none of them; a feature imports its framework on first use
through `require_extra`, which turns the missing package into a one-line `MissingExtraError`
naming the extra to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from workbench_magic.vocabulary.errors import missing_extra, raise_alone

__all__ = ["require_extra"]


def require_extra(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import `module`, or raise `MissingExtraError` naming the extra that installs it.

    Args:
        module: the framework's top-level module (`"pydantic_ai"`, `"langchain_core"`, `"agents"`).
        extra: the package's extra that installs it (`"pydantic-ai"`).
        feature: what needs it, as the message starts (`"wb.toolset"`).

    Returns:
        The imported module.

    Raises:
        MissingExtraError: `module` cannot be imported, e.g. ``wb.toolset needs the 'pydantic-ai' extra:
            pip install 'workbench-magic[pydantic-ai]'``.
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        pass
    # raised here, out of the `except`, to carry no context (one line for the user)
    raise_alone(missing_extra(feature, f"the {extra!r} extra", extra))
