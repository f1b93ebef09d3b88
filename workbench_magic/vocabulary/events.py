"""What `Workbench.subscribe` subscribers hear: changes of servers and toolboxes (delivered on the
workbench loop thread; all five are exported from `workbench_magic`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ToolsChanged:
    """A server's tool list changed and was fetched again.

    Attributes:
        toolbox: the server's toolbox.
        server: the server's name.
    """

    toolbox: str
    server: str


@dataclass(frozen=True)
class ResourcesChanged:
    """A server's resource list changed (`wb.resources` lists it afresh: lists are never cached).

    Attributes:
        toolbox: the server's toolbox.
        server: the server's name.
    """

    toolbox: str
    server: str


@dataclass(frozen=True)
class PromptsChanged:
    """A server's prompt list changed (`wb.prompts` lists it afresh: lists are never cached).

    Attributes:
        toolbox: the server's toolbox.
        server: the server's name.
    """

    toolbox: str
    server: str


@dataclass(frozen=True)
class StatusChanged:
    """A server of a toolbox changed status (connecting, connected, failed, ...).

    `wb.status()` or `OpenedToolbox.servers` says the new one.

    Attributes:
        toolbox: the server's toolbox.
        server: the server's name.
    """

    toolbox: str
    server: str


@dataclass(frozen=True)
class ToolboxClosed:
    """A toolbox was closed: its connections ended.

    Attributes:
        toolbox: the toolbox's name.
    """

    toolbox: str


Event = ToolsChanged | ResourcesChanged | PromptsChanged | StatusChanged | ToolboxClosed
Subscriber = Callable[[Event], None]
