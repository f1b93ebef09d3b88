"""What `workbench-magic serve` shows an MCP client, as plain data: built once, here.

The five meta-tools (`META_TOOLS`: names, descriptions, input schemas and the keyword arguments of
their annotations), the initialize `instructions`, the `open_toolbox` answer
(`open_toolbox_answer`, as JSON text by `answer_text`) and dynamic mode's registered tools
(`registered_name`, `registered_description`, `registered_meta`). serve/server.py turns them into
the SDK's types; `wb.context_cost` (api/models/context_cost.py) measures what a model reads of them.
No SDK import: the api layer below serve uses this too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench_magic.vocabulary.listings import PromptInfo, ResourceInfo, ServerStatus, ToolboxInfo, ToolInfo

__all__ = [
    "META_TOOLS",
    "MetaTool",
    "answer_text",
    "instructions",
    "open_toolbox_answer",
    "registered_description",
    "registered_meta",
    "registered_name",
]

_STRING = {"type": "string", "minLength": 1}
_TOOLBOX_ARG = {
    "type": "object",
    "properties": {"toolbox": {**_STRING, "description": "Toolbox name, from list_toolboxes"}},
    "required": ["toolbox"],
    "additionalProperties": False,
}
_IDENTIFIER = {
    "type": "object",
    "description": "Which tool: its toolbox, its server, and its name (as open_toolbox lists them)",
    "properties": {
        "toolbox": {**_STRING, "description": "Toolbox name"},
        "server": {**_STRING, "description": "Server name within the toolbox"},
        "name": {**_STRING, "description": "Tool name as the server defines it"},
    },
    "required": ["toolbox", "server", "name"],
    "additionalProperties": False,
}


def _notes(title: str, *, read_only: bool) -> dict[str, Any]:
    """Annotations of the toolbox meta-tools: idempotent, local, never destructive."""
    return {
        "title": title,
        "read_only_hint": read_only,
        "destructive_hint": None if read_only else False,
        "idempotent_hint": True,
        "open_world_hint": False,
    }


@dataclass(frozen=True)
class MetaTool:
    """One of serve's meta-tools.

    Attributes:
        name: its name.
        description: its description.
        input_schema: the JSON schema of its arguments.
        annotations: the keyword arguments of the SDK's `ToolAnnotations` (snake_case, as given:
            serve builds the annotations from them, so the same fields are set).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]


META_TOOLS: dict[str, MetaTool] = {
    t.name: t
    for t in (
        MetaTool(
            "list_toolboxes",
            "List the configured toolboxes: name, description, servers, and whether each is open.",
            {"type": "object", "properties": {}, "additionalProperties": False},
            _notes("List toolboxes", read_only=True),
        ),
        MetaTool(
            "open_toolbox",
            "Open a toolbox: start and connect every MCP server in it, and list their tools with input schemas. "
            "Opening an open toolbox returns the same answer.",
            _TOOLBOX_ARG,
            _notes("Open toolbox", read_only=False),
        ),
        MetaTool(
            "close_toolbox",
            "Close a toolbox: disconnect and stop its MCP servers.",
            _TOOLBOX_ARG,
            _notes("Close toolbox", read_only=False),
        ),
        MetaTool(
            "use_tool",
            "Call a tool of a toolbox. `tool` names it ({toolbox, server, name}); `arguments` are the tool's own "
            "arguments (see its inputSchema from open_toolbox). The tool's result is returned unchanged.",
            {
                "type": "object",
                "properties": {
                    "tool": _IDENTIFIER,
                    "arguments": {
                        "type": "object",
                        "description": "Arguments for the tool, matching its inputSchema",
                        "default": {},
                    },
                },
                "required": ["tool"],
                "additionalProperties": False,
            },
            {"title": "Use tool", "read_only_hint": False, "open_world_hint": True},
        ),
        MetaTool(
            "search_tools",
            "Search the tools of open toolboxes by words in their name, server, toolbox or description.",
            {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "Words to look for"}},
                "required": ["query"],
                "additionalProperties": False,
            },
            _notes("Search tools", read_only=True),
        ),
    )
}
"""serve's meta-tools by name, in the order `tools/list` lists them."""


def instructions(toolboxes: Sequence[ToolboxInfo]) -> str:
    """serve's initialize instructions: the toolboxes and a `use_tool` call the schema accepts.

    Args:
        toolboxes: the configured toolboxes (`Workbench.toolboxes()`).

    Returns:
        The text.
    """
    lines = [
        "MCP Workbench: MCP servers grouped into toolboxes.",
        "Call open_toolbox to start a toolbox's servers and see their tools, then use_tool to call one.",
        "",
        "Toolboxes:",
    ]
    for tb in toolboxes:
        count = len(tb.servers)
        lines.append(f"- {tb.name} ({count} server{'s' if count != 1 else ''}): {tb.description or 'no description'}")
    if not toolboxes:
        lines.append("- (none configured)")
    toolbox = toolboxes[0].name if toolboxes else "my_toolbox"
    server = toolboxes[0].servers[0] if toolboxes and toolboxes[0].servers else "my_server"
    example = {"tool": {"toolbox": toolbox, "server": server, "name": "TOOL_NAME_FROM_OPEN_TOOLBOX"}, "arguments": {}}
    lines += ["", "Example use_tool arguments:", json.dumps(example, indent=2)]
    return "\n".join(lines)


def open_toolbox_answer(
    toolbox: str,
    description: str,
    servers: Mapping[str, ServerStatus],
    tools: Iterable[ToolInfo],
    failed: Mapping[str, str],
) -> dict[str, Any]:
    """What `open_toolbox` answers for an opened toolbox (as structured content; `answer_text` is its text).

    Args:
        toolbox: the toolbox's name.
        description: its description.
        servers: its servers' statuses (an idle server counts as connected: it starts on first use).
        tools: its tools (those only an app may call are left out).
        failed: the servers that could not connect, with the reason (listed when there are some).

    Returns:
        `toolbox`, `description`, `servers_connected`, `tools` (`ToolInfo.to_dict` each), and
        `servers_failed` when a server failed.
    """
    answer: dict[str, Any] = {
        "toolbox": toolbox,
        "description": description,
        "servers_connected": sum(1 for s in servers.values() if s.available),
        "tools": [t.to_dict() for t in tools if t.for_model],
    }
    if failed:
        answer["servers_failed"] = failed
    return answer


def answer_text(data: Any) -> str:
    """The text of a meta-tool's answer (the same data is its structured content): indented JSON."""
    return json.dumps(data, indent=2, ensure_ascii=False)


def registered_name(tool: ToolInfo | PromptInfo) -> str:
    """Dynamic mode's name of a tool (or a prompt): `{toolbox}__{server}__{tool}` (toolbox and server
    names never contain `__`); flat mode's name of one whose own name two servers share."""
    return f"{tool.toolbox}__{tool.server}__{tool.name}"


def shared_uri(uri: str, first: ResourceInfo, second: ResourceInfo) -> str:
    """The one warning line of a URI two servers list: served from the first."""
    return (
        f"{uri} is listed by {first.toolbox}/{first.server} and {second.toolbox}/{second.server}: "
        f"served from {first.toolbox}/{first.server}"
    )


def flat_instructions(toolboxes: Sequence[ToolboxInfo]) -> str:
    """The initialize instructions of flat mode: whose tools, prompts and resources these are."""
    if not toolboxes:
        return "No toolboxes are configured."
    listed = "; ".join(f"{tb.name} ({', '.join(tb.servers) or 'no servers'})" for tb in toolboxes)
    return (
        f"The tools, prompts and resources of these MCP Workbench toolboxes, under their own names: {listed}. "
        "A name two servers share is toolbox__server__name."
    )


def registered_description(tool: ToolInfo) -> str:
    """Dynamic mode's description of a tool: `[toolbox/server] description`."""
    return f"[{tool.toolbox}/{tool.server}] {tool.description or ''}".rstrip()


def registered_meta(tool: ToolInfo) -> dict[str, str]:
    """Dynamic mode's `_meta` of a tool: where it lives and its own name."""
    return {"toolbox": tool.toolbox, "server": tool.server, "original_name": tool.name}
