"""What servers offer beyond tools, for `Workbench`: resources, prompts, completions, watches.

`ServerFeatures` is a collaborator the workbench holds (`wb.resources(...)` delegates to it): its
methods run on the workbench loop against the workbench's core, with its current settings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from workbench_magic.api.asking import waiting_channel
from workbench_magic.engine import server_features
from workbench_magic.engine.boundary import contained
from workbench_magic.engine.runtime import Channel, LoopChannel
from workbench_magic.vocabulary.errors import NotFoundError
from workbench_magic.vocabulary.listings import PromptInfo, ResourceInfo
from workbench_magic.vocabulary.results import PromptResult, ResourceResult

if TYPE_CHECKING:
    from workbench_magic.config.models import WorkbenchConfig
    from workbench_magic.engine.core import Core
    from workbench_magic.engine.runtime import LoopThread
    from workbench_magic.vocabulary.identifiers import ToolIdentifier


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


def toolbox_target(target: str) -> tuple[str, str | None]:
    """`toolbox` or `toolbox/server`, or NotFoundError."""
    toolbox, server = parse_target(target)
    if toolbox is None:
        raise NotFoundError("Name a toolbox or toolbox/server")
    return toolbox, server


def server_target(target: str) -> tuple[str, str]:
    """`toolbox/server`, or NotFoundError."""
    toolbox, server = parse_target(target)
    if toolbox is None or server is None:
        raise NotFoundError(f"Name the server: toolbox/server, not {target!r}")
    return toolbox, server


class ServerFeatures:
    """Resources, prompts, completions and watches of a workbench's servers.

    `settings()` is the workbench's current config, `timeout()` its default seconds per request.
    """

    def __init__(
        self,
        core: Core,
        loop: LoopThread,
        *,
        settings: Callable[[], WorkbenchConfig],
        timeout: Callable[[], float],
    ) -> None:
        self._core = core
        self._loop = loop
        self._settings = settings
        self._timeout = timeout

    # ---- resources, prompts, completions --------------------------------------------
    def resources(self, target: str | None = None) -> list[ResourceInfo]:
        """Resources and resource templates (every page) of open toolboxes, a toolbox, or a server."""
        toolbox, server = parse_target(target)

        async def gather() -> list[ResourceInfo]:
            return await server_features.list_resources(await self._core.connections(toolbox, server, self._settings()))

        return self._loop.run(contained(gather()))  # type: ignore[no-any-return]

    def read_resource(self, target: str, uri: str, *, timeout: float | None = None, **variables: Any) -> ResourceResult:
        """Read a resource from `toolbox/server`; a template URI is expanded with `variables`
        (`read_resource("t/s", "city://{country}/{city}", country="france", city="paris")`)."""
        toolbox, server = server_target(target)
        expanded = server_features.expand(uri, variables)
        limit = timeout if timeout is not None else self._timeout()

        async def read() -> ResourceResult:
            return await server_features.read(
                await self._core.connection_opening(toolbox, server, self._settings()), expanded, limit
            )

        return self._loop.run(contained(read()))  # type: ignore[no-any-return]

    def prompts(self, target: str | None = None) -> list[PromptInfo]:
        """Prompts of open toolboxes, a toolbox, or a server."""
        toolbox, server = parse_target(target)

        async def gather() -> list[PromptInfo]:
            return await server_features.list_prompts(await self._core.connections(toolbox, server, self._settings()))

        return self._loop.run(contained(gather()))  # type: ignore[no-any-return]

    def get_prompt(self, identifier: Any, arguments: Mapping[str, Any] | None = None) -> PromptResult:
        """Render a prompt: `get_prompt("dev/server/prompt_name", {"arg": "value"})`."""
        ident = parse_identifier(identifier)
        args = {k: v if isinstance(v, str) else str(v) for k, v in (arguments or {}).items()}
        limit = self._timeout()

        async def get() -> PromptResult:
            conn = await self._core.connection_opening(ident.toolbox, ident.server, self._settings())
            raw = await conn.get_prompt(ident.name, args or None, limit)
            return PromptResult(identifier=ident, raw=raw)

        return self._loop.run(contained(get()), waiting_channel())  # type: ignore[no-any-return]

    def complete(
        self, target: str, ref: str, argument: str, value: str = "", context: Mapping[str, str] | None = None
    ) -> list[str]:
        """Completion values a server offers for a prompt argument (`ref="prompt:NAME"`) or a
        resource template variable (`ref` = the template URI); `[]` when it offers none, or takes
        longer than half a second."""
        toolbox, server = server_target(target)

        async def complete() -> list[str]:
            conn = await self._core.connection_opening(toolbox, server, self._settings())
            return await server_features.complete(conn, ref, argument, value, context)

        return self._loop.run(contained(complete()))  # type: ignore[no-any-return]

    def watch(
        self, target: str, uri: str, callback: Callable[[ResourceResult], Any] | None = None
    ) -> server_features.ResourceWatch:
        """Subscribe to a resource: a live handle with `.value`, `.updates`, `.close()`.

        `callback(value)` runs on each update (in a kernel, on its event loop; else in a worker thread).
        """
        toolbox, server = server_target(target)
        channel = _caller_loop_channel()
        limit = self._timeout()

        async def start() -> server_features.ResourceWatch:
            conn = await self._core.connection_opening(toolbox, server, self._settings())
            return await server_features.ResourceWatch(self._loop, conn, uri, callback, channel, limit).start()

        return self._loop.run(contained(start()))  # type: ignore[no-any-return]


class ServerFeatureMethods:
    """`Workbench`'s resources, prompts, completions and watches: each delegates to its `ServerFeatures`."""

    _server: ServerFeatures

    def resources(self, target: str | None = None) -> list[ResourceInfo]:
        """Resources and resource templates (every page) of open toolboxes, a toolbox, or a server.

        Args:
            target: None (every open toolbox), a toolbox (opened if needed), or `toolbox/server`.

        Returns:
            One `ResourceInfo` per resource and per template (`.template` tells them apart).
        """
        return self._server.resources(target)

    def read_resource(self, target: str, uri: str, *, timeout: float | None = None, **variables: Any) -> ResourceResult:
        """Read a resource from `toolbox/server`; a template URI is expanded with `variables`.

        Args:
            target: the server, `toolbox/server` (its toolbox is opened if needed).
            uri: the resource's URI, or a resource template's.
            timeout: seconds the read may take (None: the workbench's `timeout`).
            **variables: the values of a template's variables.

        Returns:
            What the server sent: `.text`, `.contents`, `.data` (the text parsed as JSON), `.raw`.

        Raises:
            NotFoundError: `target` does not name a server.
            RequestError: the server failed the read (`CallTimeoutError` past `timeout`).

        Example:
            ```python
            wb.read_resource("demo/datasets", "dataset://index").data
            wb.read_resource("demo/datasets", "dataset://{name}", name="penguins").text
            ```
        """
        return self._server.read_resource(target, uri, timeout=timeout, **variables)

    def prompts(self, target: str | None = None) -> list[PromptInfo]:
        """Prompts of open toolboxes, a toolbox, or a server.

        Args:
            target: None (every open toolbox), a toolbox (opened if needed), or `toolbox/server`.

        Returns:
            One `PromptInfo` per prompt, with its arguments.
        """
        return self._server.prompts(target)

    def get_prompt(self, identifier: Any, arguments: Mapping[str, Any] | None = None) -> PromptResult:
        """Render a prompt: `get_prompt("dev/server/prompt_name", {"arg": "value"})`.

        Args:
            identifier: the prompt, named like a tool (`toolbox/server/prompt`).
            arguments: the prompt's arguments; values that are not strings are sent as `str(value)`.

        Returns:
            The rendered prompt: `.messages` as (role, text) pairs, `.text`, `.raw`.

        Raises:
            InvalidIdentifierError: `identifier` cannot be parsed.
            RequestError: the server failed the request.
        """
        return self._server.get_prompt(identifier, arguments)

    def complete(
        self, target: str, ref: str, argument: str, value: str = "", context: Mapping[str, str] | None = None
    ) -> list[str]:
        """Completions for a prompt argument (`ref="prompt:NAME"`) or a template variable (`ref=URI`).

        Args:
            target: the server, `toolbox/server`.
            ref: `"prompt:NAME"` for a prompt's argument, or a resource template's URI.
            argument: the argument's or the template variable's name.
            value: what has been typed so far.
            context: the values of the other arguments already chosen.

        Returns:
            The values the server offers; `[]` when it offers none, or takes longer than half a second.
        """
        return self._server.complete(target, ref, argument, value, context)

    def watch(
        self, target: str, uri: str, callback: Callable[[ResourceResult], Any] | None = None
    ) -> server_features.ResourceWatch:
        """Subscribe to a resource: a live handle with `.value`, `.updates`, `.close()`.

        `callback(value)` runs on each update (in a kernel, on its event loop; else in a worker thread).

        Args:
            target: the server, `toolbox/server`.
            uri: the resource's URI.
            callback: called with each new `ResourceResult`.

        Returns:
            The watch: `.value` (the latest read), `.updates` (how many updates arrived), `.close()`.

        Example:
            ```python
            watch = wb.watch("demo/notes", "notes://count", lambda value: print(value.text))
            watch.close()
            ```
        """
        return self._server.watch(target, uri, callback)
