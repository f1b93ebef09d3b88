"""Attribute access to opened toolboxes: `box.server.tool(arg=...)`, tab-completable.

`OpenedToolbox` is a live view: every property reads the workbench's current snapshot.
Only the public `Workbench` API is used here, named by `ToolboxHost` (`Workbench` is one).
"""

from __future__ import annotations

import inspect
import keyword
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from workbench_magic.engine.runtime import at_the_caller
from workbench_magic.vocabulary.errors import NotFoundError, server_not_found
from workbench_magic.vocabulary.listings import (
    IDLE,
    ServerStatus,
    ToolInfo,
    ToolList,
    status_table_html,
    tools_table_html,
)
from workbench_magic.vocabulary.results import ToolResult

if TYPE_CHECKING:
    from workbench_magic.config.settings import WorkbenchConfig
    from workbench_magic.engine.core import BoxState
    from workbench_magic.engine.requesting import ProgressCallback


class ToolboxHost(Protocol):
    """What the views of a toolbox need of their workbench."""

    @property
    def display_limit(self) -> int: ...

    @property
    def settings(self) -> WorkbenchConfig: ...

    def is_open(self, name: str) -> bool: ...

    def open(self, name: str, *, lazy: bool | None = None) -> Any: ...

    def toolbox_state(self, name: str) -> BoxState: ...

    def tools(self, target: str | None = None) -> ToolList: ...

    def tool(self, identifier: Any) -> ToolInfo: ...

    def call(
        self,
        identifier: Any,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        server_log: Callable[[str], None] | None = None,
    ) -> ToolResult: ...

    def close(self, name: str) -> None: ...


W = TypeVar("W", bound=ToolboxHost)


class OpenedToolbox(Generic[W]):
    """A live view of an opened toolbox (of a `Workbench`: `OpenedToolbox[Workbench]`).

    `.servers` (status, protocol, error per server), `.tools`, `.failed` (server -> reason),
    and attribute access to tools: `box.datasets.query(dataset="penguins")`. Every property reads the
    workbench's current snapshot. `box["name"]` reaches a server whose name is not a Python identifier
    (`ServerNotFoundError` when there is none); `wb.open`, `wb.opened` and `wb.reconnect` return views.
    Once the toolbox is closed, reaching a server or a tool through the view opens it again, as
    `wb.call` does.

    Args:
        workbench: the workbench that opened the toolbox.
        name: the toolbox's name.

    Attributes:
        name: the toolbox's name.

    Example:
        ```python
        box = wb.open("demo")
        box.connected  # the servers that connected
        box.datasets.query(dataset="penguins", limit=5)  # a tool as a method: keyword arguments, `timeout=`
        box.call("notes/add_note", {"title": "first", "body": "hello"})
        box.close()
        ```
    """

    def __init__(self, workbench: W, name: str) -> None:
        self._wb = workbench
        self.name = name

    @property
    def workbench(self) -> W:
        """The workbench the toolbox belongs to."""
        return self._wb

    @property
    def description(self) -> str:
        """The toolbox's description, from its config."""
        return self._wb.toolbox_state(self.name).description

    @property
    def servers(self) -> dict[str, ServerStatus]:
        """`{server name: ServerStatus}`: status, transport, protocol and error of each server (a copy)."""
        return dict(self._wb.toolbox_state(self.name).servers)

    @property
    def connected(self) -> list[str]:
        """The names of the servers that are connected."""
        return [s for s, st in self.servers.items() if st.connected]

    @property
    def failed(self) -> dict[str, str]:
        """Servers that could not connect, with the `Failed to connect to server ...` reason."""
        return {s: st.error or st.status for s, st in self.servers.items() if st.status == "failed"}

    @property
    def tools(self) -> ToolList:
        """The tools of the toolbox's servers, a list that renders as a table."""
        return self._wb.tools(self.name)

    @at_the_caller
    def call(self, identifier: str, arguments: Mapping[str, Any] | None = None, **kwargs: Any) -> ToolResult:
        """Call `server/tool` of this toolbox.

        Args:
            identifier: `server/tool`, a tool of this toolbox.
            arguments: the tool's arguments.
            **kwargs: the keywords of `Workbench.call`: `timeout`, `progress`, `server_log`.

        Returns:
            The tool's answer (a tool error is in `.is_error`, not raised).

        Raises:
            WorkbenchError: as `Workbench.call` raises them.
        """
        return self._wb.call(f"{self.name}/{identifier}", arguments, **kwargs)

    def close(self) -> None:
        """Close the toolbox: every connection ends, every child process exits."""
        self._wb.close(self.name)

    @at_the_caller
    def __getattr__(self, server: str) -> ServerProxy:
        if server.startswith("_"):
            raise AttributeError(server)
        try:
            known = server in self._server_names()  # not a server: nothing is opened to say so
        except NotFoundError as exc:  # a toolbox the config no longer has
            raise AttributeError(str(exc)) from None
        if not known:
            raise AttributeError(str(server_not_found(server, self.name)))
        return self[server]

    @at_the_caller
    def __getitem__(self, server: str) -> ServerProxy:
        reopen(self._wb, self.name)
        if server not in self._wb.toolbox_state(self.name).servers:
            raise server_not_found(server, self.name)
        return ServerProxy(self._wb, self.name, server)

    def _server_names(self) -> Iterable[str]:
        """The toolbox's servers: from its snapshot while it is registered, else from the config."""
        try:
            return self._wb.toolbox_state(self.name).servers
        except NotFoundError:  # closed: its config still names them
            return self._wb.settings.toolbox(self.name).mcp_servers

    def __dir__(self) -> Iterable[str]:
        try:
            servers = list(self._server_names())
        except NotFoundError:
            servers = []
        names = [s for s in servers if s.isidentifier() and not keyword.iskeyword(s)]
        return [*super().__dir__(), *names]

    def _closed(self) -> str | None:
        """The line of a toolbox closed since (None while it is registered)."""
        try:
            self._wb.toolbox_state(self.name)
        except NotFoundError:
            return f"Toolbox '{self.name}': closed (it opens again on use)"
        return None

    def _summary(self) -> str:
        servers = self.servers
        ok = sum(1 for s in servers.values() if s.connected)
        idle = sum(1 for s in servers.values() if s.status == IDLE)
        tools = sum(s.tool_count for s in servers.values() if s.available)
        resting = f" ({idle} idle: not started, listed from their cached catalogs)" if idle else ""
        return f"Toolbox '{self.name}': {ok}/{len(servers)} servers connected{resting}, {tools} tools"

    def __repr__(self) -> str:
        if (closed := self._closed()) is not None:
            return closed
        lines = [self._summary()]
        lines += [f"  {st!r}" for st in self.servers.values()]
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))

    def _repr_html_(self) -> str:
        import html

        if (closed := self._closed()) is not None:
            return f"<div><b>{html.escape(closed)}</b></div>"
        limit = self._wb.display_limit
        return (
            f"<div><b>{html.escape(self._summary())}</b><br/><i>{html.escape(self.description)}</i>"
            f"{status_table_html(self.servers.values())}{tools_table_html(self.tools, limit)}</div>"
        )


class ServerProxy:
    """`box.server`: tools of one server as methods (`box.server.tool(arg=...)`)."""

    def __init__(self, workbench: ToolboxHost, toolbox: str, server: str) -> None:
        self._wb = workbench
        self._toolbox = toolbox
        self._server = server

    @property
    def status(self) -> ServerStatus:
        servers = self._wb.toolbox_state(self._toolbox).servers
        if self._server not in servers:
            raise server_not_found(self._server, self._toolbox)
        return servers[self._server]

    @property
    def tools(self) -> ToolList:
        return self._wb.tools(f"{self._toolbox}/{self._server}")

    def _tool(self, name: str) -> ToolInfo:
        reopen(self._wb, self._toolbox)
        return self._wb.tool(f"{self._toolbox}/{self._server}/{name}")

    @at_the_caller
    def __getattr__(self, name: str) -> ToolCallable:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return ToolCallable(self._wb, self._tool(name))
        except NotFoundError as exc:  # no such tool (a toolbox that cannot open says why)
            raise AttributeError(str(exc)) from None

    @at_the_caller
    def __getitem__(self, name: str) -> ToolCallable:
        return ToolCallable(self._wb, self._tool(name))

    def __dir__(self) -> Iterable[str]:
        if not self._wb.is_open(self._toolbox):  # Tab starts no server
            return list(super().__dir__())
        names = [t.name for t in self.tools if t.name.isidentifier() and not keyword.iskeyword(t.name)]
        return [*super().__dir__(), *names]

    def __repr__(self) -> str:
        return f"{self.status!r}\n{self.tools!r}"


def reopen(workbench: ToolboxHost, toolbox: str) -> None:
    """Open `toolbox` again if it was closed, as a call to one of its tools does."""
    if not workbench.is_open(toolbox):
        workbench.open(toolbox)


_JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}


class ToolCallable:
    """One tool as a Python callable whose signature comes from its input schema."""

    def __init__(self, workbench: ToolboxHost, tool: ToolInfo) -> None:
        self._wb = workbench
        self.tool = tool
        self.__name__ = tool.name
        self.__doc__ = tool.description or ""
        self.__signature__ = _signature(tool)

    @at_the_caller
    def __call__(self, *args: Any, timeout: float | None = None, **kwargs: Any) -> ToolResult:
        params = list(self.tool.parameters)
        if len(args) > len(params):
            raise TypeError(f"{self.tool.name}() takes at most {len(params)} positional arguments")
        kwargs.update(zip(params, args, strict=False))
        return self._wb.call(self.tool.identifier, kwargs, timeout=timeout)

    def __repr__(self) -> str:
        return f"<tool {self.tool.path}{self.__signature__}>"


def _signature(tool: ToolInfo) -> inspect.Signature:
    required = set(tool.required)
    params: list[inspect.Parameter] = []
    optional: list[inspect.Parameter] = []
    for name, spec in tool.parameters.items():
        if not name.isidentifier() or keyword.iskeyword(name):
            continue
        spec = spec if isinstance(spec, dict) else {}
        annotation = _JSON_TYPES.get(spec.get("type", ""), inspect.Parameter.empty)
        if name in required:
            params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation))
        else:
            default = spec.get("default", None)
            optional.append(
                inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
            )
    timeout = inspect.Parameter("timeout", inspect.Parameter.KEYWORD_ONLY, default=None)
    return inspect.Signature([*params, *optional, timeout])
