"""The SDK's servers where we reach past their public names (checked with mcp 2.3;
tests/engine/sdk/test_sdk_server.py fails when one of them changes).

- `MCPServer._lowlevel_server`: the low-level `Server` an `MCPServer` runs, where handlers the
  `MCPServer` has no decorator for are registered (`lowlevel_server`).
- `ServerSession._connection`: the client connection behind a request's session, which outlives
  the request and unwinds its `exit_stack` when it closes (`session_connection`).
- `Server.create_initialization_options`: replaced on the instance so that the handshake era's
  `tools.listChanged` is advertised (`advertise_tools_changed`).
"""

from __future__ import annotations

from typing import Any


def lowlevel_server(mcp_server: Any) -> Any:
    """The SDK's low-level `Server` that `mcp_server` (an `MCPServer`) runs: the SDK has no public
    name for it."""
    return mcp_server._lowlevel_server


def session_connection(session: Any) -> Any | None:
    """The client connection behind `session` (the `ServerSession` the SDK hands one request), with
    its `exit_stack`; None where this SDK has none. The SDK has no public accessor for it yet."""
    return getattr(session, "_connection", None)


def advertise_list_changed(
    lowlevel: Any, *, tools: bool = True, prompts: bool = False, resources: bool = False
) -> None:
    """Make `lowlevel` (a low-level `Server`) advertise `listChanged` for `tools` (and `prompts`,
    `resources`) in its handshake-era capabilities whenever it is asked for its initialization
    options without notification options: handshake-era clients only act on list_changed when it
    is advertised, and `MCPServer` does not advertise it by itself."""
    from mcp.server import NotificationOptions

    original = lowlevel.create_initialization_options
    changes = NotificationOptions(tools_changed=tools, prompts_changed=prompts, resources_changed=resources)

    def with_list_changed(notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
        return original(notification_options or changes, *args, **kwargs)

    lowlevel.create_initialization_options = with_list_changed


def advertise_tools_changed(lowlevel: Any) -> None:
    """`advertise_list_changed` for tools only."""
    advertise_list_changed(lowlevel)


__all__ = ["advertise_list_changed", "advertise_tools_changed", "lowlevel_server", "session_connection"]
