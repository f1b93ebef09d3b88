"""A workbench's toolboxes: open and close them, their state, their servers' logs, and the lookups.

`Toolboxes` is the collaborator behind `wb.open`, `wb.close`, `wb.tools`, `wb.tool`, `wb.search`,
`wb.status`, `wb.history`, ...: its reads (`status`, `toolboxes`, `tools`, `search`) use the core's
immutable snapshot; the rest runs on the loop, where the core's state lives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic

from workbench_magic.api.targets import parse_identifier, parse_target, server_target
from workbench_magic.api.toolboxes.handles import OpenedToolbox, W
from workbench_magic.engine.runtime import at_the_caller
from workbench_magic.vocabulary.errors import NotFoundError, server_not_found, toolbox_not_open
from workbench_magic.vocabulary.listings import History, ServerStatus, ToolboxInfo, ToolboxList, ToolInfo, ToolList

if TYPE_CHECKING:
    from workbench_magic.api.context import Context
    from workbench_magic.engine.core import BoxState
    from workbench_magic.vocabulary.doctor import DoctorReport

__all__ = ["Toolboxes"]


class Toolboxes(Generic[W]):
    """A workbench's toolboxes, their state and the lookups of their tools.

    Args:
        context: the workbench's shared context.
        face: what an `OpenedToolbox` view calls back into (the workbench).
    """

    def __init__(self, context: Context, face: W) -> None:
        self._context = context
        self._face = face

    def toolboxes(self) -> ToolboxList:
        """Configured toolboxes: name, description, servers, open?"""
        state = self._context.core.state
        return ToolboxList(
            ToolboxInfo(name, tb.description, tuple(tb.mcp_servers), name in state and state[name].open)
            for name, tb in self._context.settings.toolboxes.items()
        )

    @at_the_caller
    def open(self, name: str, *, lazy: bool | None = None) -> OpenedToolbox[W]:
        """Open a toolbox: every server connects, concurrently.

        Failed servers are in `.failed` of the returned view; `ConnectError` when none connected.
        A lazy server (`"start": "lazy"`, or `lazy_servers`) whose catalog is cached starts no
        process: it is `idle`, listed from the cache, and starts on first use.

        Args:
            name: the toolbox's name in the config.
            lazy: `True` or `False` overrides the config for this open; None follows it.

        Returns:
            The live view of the toolbox (`OpenedToolbox`).

        Raises:
            ToolboxNotFoundError: the config has no toolbox `name`.
            ConnectError: no server connected; the toolbox stays registered (its servers' reasons and
                logs visible) but is not open.

        Example:
            ```python
            box = wb.open("demo")
            box.failed  # {} when every server connected
            box.datasets.query(dataset="penguins", limit=5)
            ```
        """
        self._context.run(self._aopen(name, lazy))
        return OpenedToolbox(self._face, name)

    async def aopen(self, name: str, *, lazy: bool | None = None) -> OpenedToolbox[W]:
        """`open` from an event loop.

        Args:
            name: the toolbox's name in the config.
            lazy: `True` or `False` overrides the config for this open; None follows it.

        Returns:
            The live view of the toolbox (`OpenedToolbox`).

        Raises:
            ToolboxNotFoundError: the config has no toolbox `name`.
            ConnectError: no server connected.
        """
        await self._context.arun(self._aopen(name, lazy))
        return OpenedToolbox(self._face, name)

    async def _aopen(self, name: str, lazy: bool | None = None) -> BoxState:
        # Modules every call needs are imported now, not on the first call.
        import workbench_magic.vocabulary.identifiers  # noqa: F401

        return await self._context.core.open(name, self._context.settings, lazy=lazy)

    def is_open(self, name: str) -> bool:
        """Whether the toolbox `name` is open (False for one never opened, closed, or whose open failed)."""
        state = self._context.core.state.get(name)
        return state is not None and state.open

    @at_the_caller
    def toolbox_state(self, name: str) -> BoxState:
        """The current snapshot of a registered toolbox (open, or whose open failed).

        Args:
            name: the toolbox's name.

        Returns:
            Its state: description, open or not, servers and their tools.

        Raises:
            ToolboxNotFoundError: the config has no toolbox `name`.
            NotFoundError: the toolbox was never opened (`Toolbox 'x' is not open. Open it with %workbench open x`).
        """
        state = self._context.core.state.get(name)
        if state is None:
            self._context.settings.toolbox(name)  # raises "Toolbox 'x' not found. Available toolboxes: ..."
            raise toolbox_not_open(name)
        return state

    @at_the_caller
    def opened(self, name: str) -> OpenedToolbox[W]:
        """The view of an already opened toolbox.

        Args:
            name: the toolbox's name.

        Returns:
            The live view of the toolbox (`OpenedToolbox`).

        Raises:
            ToolboxNotFoundError: the config has no toolbox `name`.
            NotFoundError: the toolbox is not open.
        """
        if not self.is_open(name):
            self.toolbox_state(name)
            raise toolbox_not_open(name)
        return OpenedToolbox(self._face, name)

    @at_the_caller
    def close(self, name: str) -> None:
        """Close a toolbox: every connection ends, every child process exits.

        Args:
            name: the toolbox's name.
        """
        self._context.run(self._context.core.close([name], self._context.settings))

    def close_all(self) -> None:
        """Close every open toolbox."""
        if self._context.core.state and self._context.loop.alive:
            self._context.run(self._context.core.close_all())

    async def aclose_all(self, *, hurry: tuple[float, float] | None = None) -> None:
        """Close every open toolbox, from an event loop.

        Args:
            hurry: `(grace, kill_after)`: a stdio server gets `grace` seconds to exit once its stdin
                closes, then SIGTERM, then SIGKILL `kill_after` later (default: 2 s and 2 s, as the SDK).
        """
        await self._context.arun(self._context.core.close_all(hurry))

    async def aclose(self, name: str) -> None:
        """`close` from an event loop: every connection of the toolbox ends, every child process exits.

        Args:
            name: the toolbox's name.
        """
        await self._context.arun(self._context.core.close([name], self._context.settings))

    @at_the_caller
    def reconnect(self, target: str) -> OpenedToolbox[W]:
        """Reconnect every server of a toolbox, or one (`dev/server`).

        Args:
            target: a toolbox (`dev`) or one of its servers (`dev/server`).

        Returns:
            The live view of the toolbox (`OpenedToolbox`).

        Raises:
            NotFoundError: `target` names no toolbox (`Nothing to reconnect: name a toolbox or
                toolbox/server`), or a toolbox or server that does not exist.
        """
        toolbox, server = parse_target(target)
        if toolbox is None:
            raise NotFoundError("Nothing to reconnect: name a toolbox or toolbox/server")
        self._context.run(self._context.core.reconnect(toolbox, server, self._context.settings))
        return OpenedToolbox(self._face, toolbox)

    @at_the_caller
    def logs(self, target: str) -> str:
        """The stderr a stdio server wrote (all of it, across reconnects).

        Args:
            target: the server, `toolbox/server`.

        Returns:
            Its log text, secrets masked.

        Raises:
            NotFoundError: `target` does not name a server (`Name the server: toolbox/server, not 'dev'`),
                or its toolbox is not open.
        """
        toolbox, server = server_target(target)
        self.toolbox_state(toolbox)
        core = self._context.core
        return self._context.loop.run_sync(lambda: core.logs(toolbox, server))

    def doctor(self, target: str, *, timeout: float = 10.0) -> DoctorReport:
        """Which step of connecting to a server fails, and what to do: a connection doctor.

        The server is started (or connected to) on its own, outside its toolbox, and stopped again;
        an open toolbox is not touched. Steps, in order, each `ok`, `failed`, `skipped` or
        `warning` with a one-line `finding` and a `hint`: for stdio the config entry, the command
        (or the package runner it needs), the process staying up (its exit status and stderr tail),
        its stdout speaking JSON-RPC, the protocol era, capabilities and tools; for HTTP the URL,
        DNS and TCP, TLS, the HTTP answer (a 401 and what `WWW-Authenticate` asks; the OAuth
        metadata), the session, the era and tools.

        Args:
            target: the server, `toolbox/server`.
            timeout: seconds each step may take.

        Returns:
            The `DoctorReport`: `.ok`, `.steps`; a table in a notebook.

        Raises:
            NotFoundError: `target` names no configured server.

        Example:
            ```python
            report = wb.doctor("demo/datasets")
            report.ok
            ```
        """
        from workbench_magic.engine.doctor import diagnose

        toolbox, server = server_target(target)
        servers = self._context.settings.toolbox(toolbox).mcp_servers
        if server not in servers:
            raise server_not_found(server, toolbox)
        return self._context.run(diagnose(toolbox, server, servers[server], timeout=timeout))  # type: ignore[no-any-return]

    def status(self) -> dict[str, dict[str, ServerStatus]]:
        """Status of every server of every registered toolbox."""
        return {name: dict(box.servers) for name, box in self._context.core.state.items()}

    @property
    def history(self) -> History:
        """Every call of the session, oldest first (at most `history_limit`); a copy.

        The newest calls are whole within `history_bytes`; older ones are their summary line (no
        answer, long arguments shortened, `answer_dropped`)."""
        core = self._context.core
        return History(self._context.loop.run_sync(core.history) if self._context.loop.alive else core.history())

    @at_the_caller
    def tool(self, identifier: Any) -> ToolInfo:
        """The `ToolInfo` of a tool of an open toolbox (the core's one lookup, `Core.tool`).

        Args:
            identifier: any spelling of a tool identifier (`"dev/server/tool"`, `"dev__server__tool"`,
                a mapping, a `ToolIdentifier`, a `ToolInfo`).

        Returns:
            The tool's name, description, schemas, annotations and place.

        Raises:
            InvalidIdentifierError: `identifier` cannot be parsed.
            NotFoundError: the toolbox is not open, or has no such server or tool (`ToolboxNotFoundError`,
                `ServerNotFoundError`, `ToolNotFoundError`).
        """
        return self._context.core.tool(parse_identifier(identifier), self._context.settings)

    @at_the_caller
    def tools(self, target: str | None = None) -> ToolList:
        """Tools of every open toolbox, of one toolbox (`dev`) or of one server (`dev/server`).

        A toolbox named that is not open is opened first.

        Args:
            target: None (every open toolbox), a toolbox, or `toolbox/server`.

        Returns:
            The tools, a list that renders as a table.

        Raises:
            NotFoundError: no such toolbox or server.
            ConnectError: a toolbox opened here had no server connect.
        """
        toolbox, server = parse_target(target)
        if toolbox is not None and not self.is_open(toolbox):
            self.open(toolbox)
        states = self._context.core.state
        if toolbox is None:
            return ToolList(t for box in states.values() if box.open for t in box.all_tools())
        state = states.get(toolbox) or self.toolbox_state(toolbox)
        if server is None:
            return ToolList(state.all_tools())
        if server not in state.servers:
            raise server_not_found(server, toolbox)
        return ToolList(state.tools.get(server, ()))

    @at_the_caller
    def search(self, query: str, target: str | None = None) -> ToolList:
        """Tools whose name, description or location contains every word of `query`.

        Tools whose name contains every word come first; then by path. The search is case-insensitive.

        Args:
            query: words separated by blanks.
            target: where to search, as `tools` takes it: None (every open toolbox), a toolbox, or
                `toolbox/server`.

        Returns:
            The tools found, a list that renders as a table.

        Example:
            ```python
            wb.search("dataset describe", "demo")
            ```
        """
        words = query.lower().split()
        scored = []
        for tool in self.tools(target):
            name = tool.name.lower()
            hay = f"{tool.path} {tool.title or ''} {tool.description or ''}".lower()
            if all(w in hay for w in words):
                scored.append((0 if all(w in name for w in words) else 1, tool.path, tool))
        scored.sort(key=lambda s: (s[0], s[1]))
        return ToolList(s[2] for s in scored)
