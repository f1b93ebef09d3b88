"""Bring your servers: which other clients' MCP configs this machine has (`known_clients`).

`Workbench.import_toolbox` (api/workbench.py) and a config's `{"import": SOURCE}` toolbox read them
through config/imports.py; this module is the listing a notebook shows as a table.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench_magic.config.imports import KnownClient

__all__ = ["KnownClients", "known_clients"]


class KnownClients(tuple["KnownClient", ...]):
    """The clients whose MCP config exists here: `.name`, `.path`, `.servers` of each; a table in a notebook."""

    def __repr__(self) -> str:
        if not self:
            return "No other client's MCP config found (looked for: " + ", ".join(_clients()) + ")"
        width = max(len(c.name) for c in self)
        return "\n".join(f"{c.name:<{width}}  {c.servers:>3} servers  {c.path}" for c in self)

    def _repr_html_(self) -> str:
        if not self:
            return f"<p>{html.escape(repr(self))}</p>"
        rows = "".join(
            f"<tr><td>{html.escape(c.name)}</td><td>{c.servers}</td><td><code>{html.escape(str(c.path))}</code></td></tr>"
            for c in self
        )
        return f"<table><tr><th>client</th><th>servers</th><th>config</th></tr>{rows}</table>"


def _clients() -> tuple[str, ...]:
    from workbench_magic.config.imports import CLIENTS

    return tuple(CLIENTS)


def known_clients(*, home: Path | None = None, project: Path | None = None) -> KnownClients:
    """Which clients' MCP configs exist on this machine, and how many servers each has.

    The clients: Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Gemini CLI and Codex, at
    their documented places under the home folder and in the project folder.

    Args:
        home: the home folder (default: the user's).
        project: the project folder (default: the current directory).

    Returns:
        One item per client found, with `.name`, `.path` (its config file) and `.servers` (how many);
        shown as a table in a notebook. `wb.import_toolbox(item.name)` imports one.
    """
    from workbench_magic.config.imports import known_clients as found

    return KnownClients(found(home=home or Path.home(), project=project or Path.cwd()))
