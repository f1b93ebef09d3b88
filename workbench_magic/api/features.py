"""What `Workbench` offers beyond tools: resources, prompts, completions, watches, and the
client side of MCP (sampling and elicitation handlers, roots, log levels, OAuth logout).

A mixin of `Workbench` (manager.py): its methods run on the workbench loop through the same
`_run` and `_core` as the rest of the face.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from workbench_magic.engine import browse
from workbench_magic.engine.clientside import (
    ASK_PERSON,
    LOG_LEVELS,
    ElicitationHandler,
    RootsSource,
    SamplingHandler,
    root_uri,
)
from workbench_magic.engine.core import short_errors
from workbench_magic.engine.runtime import Channel, LoopChannel
from workbench_magic.vocabulary.errors import NotFoundError, UsageError
from workbench_magic.vocabulary.results import PromptInfo, PromptResult, ResourceInfo, ResourceResult

if TYPE_CHECKING:
    from workbench_magic.config.models import WorkbenchConfig
    from workbench_magic.engine.core import Core
    from workbench_magic.engine.runtime import LoopThread, QueueChannel
    from workbench_magic.vocabulary.identifiers import ToolIdentifier


def root_uris(roots: list[str] | tuple[str, ...] | str) -> tuple[str, ...]:
    """Roots as `file://` URIs (a path, a URI, or a list of them)."""
    return tuple(root_uri(r) for r in ([roots] if isinstance(roots, str) else roots))


def _caller_loop_channel() -> Channel | None:
    """The caller's event loop as a channel (a kernel's), if one runs in this thread."""
    try:
        return LoopChannel(asyncio.get_running_loop())
    except RuntimeError:
        return None


# identifiers loads pydantic (~0.15 s): imported on first use, so `%load_ext` stays fast.
def parse_identifier(value: Any) -> ToolIdentifier:
    from workbench_magic.vocabulary.identifiers import parse_identifier as parse

    return parse(value)


def parse_target(value: str | None) -> tuple[str | None, str | None]:
    from workbench_magic.vocabulary.identifiers import parse_target as parse

    return parse(value)


class ServerFeatures:
    """Resources, prompts, completions, watches and the client side, for `Workbench`."""

    # Provided by `Workbench`.
    _core: Core
    _loop: LoopThread
    _handlers: dict[str, Any]
    timeout: float

    @property
    def settings(self) -> WorkbenchConfig:
        raise NotImplementedError

    def _run(self, coro: Coroutine[Any, Any, Any], channel: QueueChannel | None = None) -> Any:
        raise NotImplementedError

    @staticmethod
    def _channel(server_log: Callable[[str], None] | None = None) -> QueueChannel:
        raise NotImplementedError

    def _push_options(self) -> None:
        raise NotImplementedError

    # ---- resources, prompts, completions --------------------------------------------
    def resources(self, target: str | None = None) -> list[ResourceInfo]:
        """Resources and resource templates (every page) of open toolboxes, a toolbox, or a server."""
        toolbox, server = parse_target(target)

        async def gather() -> list[ResourceInfo]:
            return await browse.list_resources(await self._core.connections(toolbox, server, self.settings))

        return self._run(short_errors(gather()))  # type: ignore[no-any-return]

    def read_resource(self, target: str, uri: str, *, timeout: float | None = None, **variables: Any) -> ResourceResult:
        """Read a resource from `toolbox/server`; a template URI is expanded with `variables`
        (`read_resource("t/s", "city://{country}/{city}", country="france", city="paris")`)."""
        toolbox, server = self._server_target(target)
        expanded = browse.expand(uri, variables)
        limit = timeout if timeout is not None else self.timeout

        async def read() -> ResourceResult:
            return await browse.read(
                await self._core.connection_opening(toolbox, server, self.settings), expanded, limit
            )

        return self._run(short_errors(read()))  # type: ignore[no-any-return]

    def prompts(self, target: str | None = None) -> list[PromptInfo]:
        """Prompts of open toolboxes, a toolbox, or a server."""
        toolbox, server = parse_target(target)

        async def gather() -> list[PromptInfo]:
            return await browse.list_prompts(await self._core.connections(toolbox, server, self.settings))

        return self._run(short_errors(gather()))  # type: ignore[no-any-return]

    def get_prompt(self, identifier: Any, arguments: Mapping[str, Any] | None = None) -> PromptResult:
        """Render a prompt: `get_prompt("dev/server/prompt_name", {"arg": "value"})`."""
        ident = parse_identifier(identifier)
        args = {k: v if isinstance(v, str) else str(v) for k, v in (arguments or {}).items()}
        limit = self.timeout

        async def get() -> PromptResult:
            conn = await self._core.connection_opening(ident.toolbox, ident.server, self.settings)
            raw = await conn.get_prompt(ident.name, args or None, limit)
            return PromptResult(identifier=ident, raw=raw)

        return self._run(short_errors(get()), self._channel())  # type: ignore[no-any-return]

    def complete(
        self, target: str, ref: str, argument: str, value: str = "", context: Mapping[str, str] | None = None
    ) -> list[str]:
        """Completion values a server offers for a prompt argument (`ref="prompt:NAME"`) or a
        resource template variable (`ref` = the template URI); `[]` when it offers none, or takes
        longer than half a second."""
        toolbox, server = self._server_target(target)

        async def complete() -> list[str]:
            conn = await self._core.connection_opening(toolbox, server, self.settings)
            return await browse.complete(conn, ref, argument, value, context)

        return self._run(short_errors(complete()))  # type: ignore[no-any-return]

    def watch(
        self, target: str, uri: str, callback: Callable[[ResourceResult], Any] | None = None
    ) -> browse.ResourceWatch:
        """Subscribe to a resource: a live handle with `.value`, `.updates`, `.close()`.

        `callback(value)` runs on each update (in a kernel, on its event loop; else in a worker thread).
        """
        toolbox, server = self._server_target(target)
        channel = _caller_loop_channel()
        limit = self.timeout

        async def start() -> browse.ResourceWatch:
            conn = await self._core.connection_opening(toolbox, server, self.settings)
            return await browse.ResourceWatch(self._loop, conn, uri, callback, channel, limit).start()

        return self._run(short_errors(start()))  # type: ignore[no-any-return]

    def _server_target(self, target: str) -> tuple[str, str]:
        toolbox, server = parse_target(target)
        if toolbox is None or server is None:
            raise NotFoundError(f"Name the server: toolbox/server, not {target!r}")
        return toolbox, server

    # ---- the client side of MCP ----------------------------------------------------------
    @property
    def sampling_handler(self) -> SamplingHandler | None:
        """`fn(messages, params)` answering servers' sampling requests (str, dict or
        `CreateMessageResult`), or `"ask"` (the person writes the reply, where the call was made);
        sampling is advertised only while one is set (connections made
        before get it at their next reconnect)."""
        return self._handlers["sampling_handler"]

    @sampling_handler.setter
    def sampling_handler(self, handler: SamplingHandler | None) -> None:
        if handler is not None and not callable(handler) and handler != ASK_PERSON:
            raise UsageError(
                'sampling_handler must be a function (messages, params) -> str | dict | CreateMessageResult, or "ask"'
            )
        self._handlers["sampling_handler"] = handler
        self._push_options()

    @property
    def elicitation_handler(self) -> ElicitationHandler | None:
        """None: ask the person; `fn(message, schema)` -> dict (accept), None (decline) or an
        `ElicitResult`; or a dict of canned answers (always accepted)."""
        return self._handlers["elicitation_handler"]

    @elicitation_handler.setter
    def elicitation_handler(self, handler: ElicitationHandler | None) -> None:
        if handler is not None and not callable(handler) and not isinstance(handler, Mapping):
            raise UsageError("elicitation_handler must be None, a function (message, schema) or a dict of answers")
        self._handlers["elicitation_handler"] = (
            MappingProxyType(dict(handler)) if isinstance(handler, Mapping) else handler
        )
        self._push_options()

    @property
    def roots(self) -> list[str]:
        """The roots servers are told (file:// URIs); default `[]`: the capability is declared and no
        roots are offered until set, so servers keep their configured directories."""
        return list(self._handlers["roots"])

    @roots.setter
    def roots(self, roots: list[str] | tuple[str, ...] | str) -> None:
        self._handlers["roots"] = root_uris(roots)
        self._push_options()

    def set_server_log_level(self, target: str, level: str) -> None:
        """The log level asked of one server (`toolbox/server`) or of every server of a toolbox:
        at once on handshake-era connections, at their next connect on 2026-07-28 ones."""
        if level not in LOG_LEVELS:
            raise UsageError(f"Unknown log level {level!r}: one of {', '.join(LOG_LEVELS)}")
        toolbox, server = parse_target(target)
        if toolbox is None:
            raise NotFoundError("Name a toolbox or toolbox/server")

        async def apply() -> None:
            for conn in await self._core.connections(toolbox, server, self.settings):
                await conn.set_log_level(level)

        self._run(short_errors(apply()))

    def set_roots(self, target: str, roots: list[str] | tuple[str, ...] | str | None) -> None:
        """The roots of one server (`toolbox/server`) or of every server of a toolbox; None goes
        back to the config's (or `wb.roots`). Handshake-era servers are told at once."""
        toolbox, server = parse_target(target)
        if toolbox is None:
            raise NotFoundError("Name a toolbox or toolbox/server")
        chosen = None if roots is None else root_uris(roots)

        async def apply() -> None:
            self._core.set_roots(await self._core.connections(toolbox, server, self.settings), chosen)

        self._run(short_errors(apply()))

    def set_roots_source(self, source: RootsSource | None) -> None:
        """Where the servers that follow the client's roots get them when no call is in flight
        (serve's stdio face: its one client); None goes back to `wb.roots`. A server's own roots
        (config, `set_roots`) still win, and a call's client is asked during its call."""
        core = self._core
        self._loop.ask(lambda: setattr(core.client_side, "roots_source", source))

    def roots_source_changed(self) -> None:
        """The source's roots changed (from any thread): every open server that follows them is
        told (`roots/list_changed` to handshake-era servers; 2026-07-28 ones ask per request)."""
        core, settings = self._core, self.settings

        async def tell() -> None:
            followers = [c for c in await core.connections(None, None, settings) if core.client_side.follows_roots(c)]
            core.set_roots(followers, None)  # they have no roots of their own: this only tells them

        asyncio.run_coroutine_threadsafe(tell(), self._loop.loop)

    def logout(self, target: str) -> list[str]:
        """Forget the stored OAuth tokens (and registered client) of one server (`toolbox/server`)
        or of every OAuth server of a toolbox; the names of the servers that had some. A connection
        already open keeps its session until it is closed or reconnected; the next connect asks
        the person to authorize again."""
        from workbench_magic.engine.auth import forget

        toolbox, server = parse_target(target)
        if toolbox is None:
            raise NotFoundError("Name a toolbox or toolbox/server")
        names = [server] if server is not None else list(self.settings.toolbox(toolbox).mcp_servers)
        configs = {name: self.settings.server(toolbox, name) for name in names}
        return [name for name, cfg in configs.items() if cfg.url and cfg.auth and cfg.auth.oauth and forget(cfg.url)]
