"""Bundled demo servers, the toolbox ``demo`` of the embedded default config
(`workbench_magic.config.defaults`).

The servers are small Python MCP servers written with ``mcp.server.MCPServer``; they run
offline with nothing but this package installed: in-process in the default config (no child
process, no second import of the SDK), and as ``python -m workbench_magic.demo.<name>`` over stdio.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any


def _fresh(name: str) -> Any:
    """A fresh copy of the module ``workbench_magic.demo.<name>``: each connection gets its own
    server and state (notes, subscriptions), as each stdio process does."""
    module_name = f"{__name__}.{name}"
    spec = importlib.util.find_spec(module_name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get(module_name)
    sys.modules[module_name] = module  # pydantic resolves the module's annotations through it
    try:
        spec.loader.exec_module(module)
    finally:
        if previous is not None:
            sys.modules[module_name] = previous
        else:
            del sys.modules[module_name]
    return module


def datasets_server() -> Any:
    """The datasets demo server (fresh state), its datasets loaded as it starts."""
    module = _fresh("datasets")
    for name in module.DESCRIPTIONS:
        module.load(name)
    return module.mcp


def notes_server() -> Any:
    """The notes demo server (fresh state)."""
    return _fresh("notes").mcp
