"""The client side of MCP as a `Workbench` offers it: the sampling and elicitation handlers and
the roots servers are told, server log levels, OAuth logout.

`ClientFeatures` is a collaborator the workbench holds (`wb.roots`, `wb.set_roots(...)` delegate
to it). It keeps the handlers; `on_change()` hands them to the loop (the workbench pushes its
options, where the engine's `ClientSide` reads them).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import warnings
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

from workbench_magic.api.targets import toolbox_target
from workbench_magic.engine.boundary import contained
from workbench_magic.engine.clientside import (
    ASK_PERSON,
    LOG_LEVELS,
    AuthorizationHandler,
    ElicitationHandler,
    RootsSource,
    SamplingHandler,
    root_uri,
)
from workbench_magic.vocabulary.errors import UsageError

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from workbench_magic.config.settings import WorkbenchConfig
    from workbench_magic.engine.connection import Connection
    from workbench_magic.engine.core import Core
    from workbench_magic.engine.runtime import LoopThread

logger = logging.getLogger("workbench_magic")


def root_uris(roots: list[str] | tuple[str, ...] | str) -> tuple[str, ...]:
    """Roots as `file://` URIs (a path, a URI, or a list of them)."""
    return tuple(root_uri(r) for r in ([roots] if isinstance(roots, str) else roots))


class ClientFeatures:
    """What a workbench answers servers with, and the per-server client settings.

    `settings()` is the workbench's current config; `on_change()` runs when a handler or the
    roots change; `model_sampler(model)` makes the handler of a model set as `sampling_handler`.
    `roots` None: none offered until set (servers keep their own).
    """

    def __init__(
        self,
        core: Core,
        loop: LoopThread,
        *,
        settings: Callable[[], WorkbenchConfig],
        on_change: Callable[[], None],
        model_sampler: Callable[[Model | str], SamplingHandler],
        roots: list[str] | tuple[str, ...] | str | None = None,
    ) -> None:
        self._model_sampler = model_sampler
        self._core = core
        self._loop = loop
        self._settings = settings
        self._on_change = on_change
        self._sampling_handler: SamplingHandler | None = None
        self._elicitation_handler: ElicitationHandler | None = None
        self._authorization_handler: AuthorizationHandler | None = None
        self._roots = root_uris(roots) if roots is not None else ()

    @property
    def handlers(self) -> dict[str, Any]:
        """The handlers and the roots, as the engine's `Options` fields."""
        return {
            "sampling_handler": self._sampling_handler,
            "elicitation_handler": self._elicitation_handler,
            "authorization_handler": self._authorization_handler,
            "roots": self._roots,
        }

    @property
    def sampling_handler(self) -> SamplingHandler | None:
        """What answers servers' sampling requests: a function, a model, or `"ask"` the person.

        A function `fn(messages, params)` returns a str, a dict or a `CreateMessageResult`. A
        pydantic-ai `Model` or a `"provider:model"` name (`"openai:gpt-4o"`) answers with that model
        (its messages, system prompt, `maxTokens`, temperature and stop sequences mapped; the hints
        recorded), recorded, replayed and traced as `resolve_model` does; reading the handler back
        then gives its `ModelSampler` (`.spec`, `.model`). With `"ask"` the person writes the reply,
        where the call was made. Sampling is advertised only while one is set; servers declare it at
        connect, so setting one (or None) reconnects the connected servers that declared otherwise,
        at once (a server with a call in flight keeps its session: a warning names it, and
        `wb.reconnect` reconnects it later). Setting anything else raises `UsageError`.

        Example:
            ```python
            wb.sampling_handler = "openai:gpt-4o"  # the open servers reconnect, declaring sampling
            wb.call("demo/datasets/describe_with_model", {"dataset": "penguins"}).data
            ```
        """
        return self._sampling_handler

    @sampling_handler.setter
    def sampling_handler(self, handler: SamplingHandler | Model | None) -> None:
        from workbench_magic.api.models.resolving import is_model

        if is_model(handler) or (isinstance(handler, str) and handler != ASK_PERSON):
            handler = self._model_sampler(cast("Model | str", handler))
        if handler is not None and not callable(handler) and handler != ASK_PERSON:
            raise UsageError(
                "sampling_handler must be a function (messages, params) -> str | dict | CreateMessageResult, "
                'a pydantic-ai Model, a "provider:model" name, or "ask"'
            )
        flips = (handler is None) != (self._sampling_handler is None)
        self._sampling_handler = cast("SamplingHandler | None", handler)
        self._on_change()
        if flips and not self._loop.in_loop():
            self._declare_sampling(handler is not None)

    def _declare_sampling(self, offered: bool) -> None:
        """Sampling is declared at connect: reconnect the connected servers whose session declared
        otherwise, now; one with a request in flight (or a started task) keeps its session, and a
        warning says how to reconnect it."""
        core = self._core
        if not any(box.open for box in core.state.values()):
            return  # nothing connected: each connect declares what is set then
        settings = self._settings()

        async def declare() -> list[str]:
            stale = [c for c in await core.connections(None, None, settings) if _declared_otherwise(c, offered)]
            running = {(j.identifier.toolbox, j.identifier.server) for j in core.jobs.listing() if not j.state.ended}
            busy = [c for c in stale if c.busy or (c.toolbox, c.name) in running]
            idle = [c for c in stale if c not in busy]
            await asyncio.gather(*(core.reconnect(c.toolbox, c.name, settings) for c in idle))
            return [f"{c.toolbox}/{c.name}" for c in busy]

        busy = self._loop.run(contained(declare()))
        if busy:
            warnings.warn(_reconnect_later(busy, offered), UserWarning, stacklevel=4)

    @property
    def elicitation_handler(self) -> ElicitationHandler | None:
        """None: ask the person; `fn(message, schema)`; or a dict of canned answers.

        A function returns a dict (accept), None (decline) or an `ElicitResult`; canned answers are
        always accepted. Setting anything else raises `UsageError`.
        """
        return self._elicitation_handler

    @elicitation_handler.setter
    def elicitation_handler(self, handler: ElicitationHandler | None) -> None:
        if handler is not None and not callable(handler) and not isinstance(handler, Mapping):
            raise UsageError("elicitation_handler must be None, a function (message, schema) or a dict of answers")
        self._elicitation_handler = MappingProxyType(dict(handler)) if isinstance(handler, Mapping) else handler
        self._on_change()

    @property
    def authorization_handler(self) -> AuthorizationHandler | None:
        """What gets the person to an OAuth flow's authorization link: None, or a function `fn(url)`.

        Unset, the link is shown where the toolbox is opened (a clickable link in the cell, a log
        line on stderr). A function (sync, run in a worker thread, or async) is called with the URL
        instead: a notebook can show its own button, a test or a headless run can follow it. Either
        way the redirect back comes to the workbench's loopback catcher (or is pasted, with
        `"paste": true`). It is read when a server connects. Setting anything else raises
        `UsageError`.

        Example:
            ```python
            import webbrowser

            wb.authorization_handler = webbrowser.open  # this machine's browser, no link to click
            ```
        """
        return self._authorization_handler

    @authorization_handler.setter
    def authorization_handler(self, handler: AuthorizationHandler | None) -> None:
        if handler is not None and not callable(handler):
            raise UsageError("authorization_handler must be None or a function (url)")
        self._authorization_handler = handler
        self._on_change()

    @property
    def roots(self) -> list[str]:
        """The roots servers are told (file:// URIs); `[]` until set: servers keep their own.

        The capability is declared either way; no roots are offered until set, so servers keep their
        configured directories. Set it to a path, a URI, or a list of them.
        """
        return list(self._roots)

    @roots.setter
    def roots(self, roots: list[str] | tuple[str, ...] | str) -> None:
        self._roots = root_uris(roots)
        self._on_change()

    def set_server_log_level(self, target: str, level: str) -> None:
        """The log level asked of one server (`toolbox/server`) or of every server of a toolbox.

        Handshake-era servers are asked at once (`logging/setLevel`); a 2026-07-28 server's next
        requests carry it.

        Args:
            target: a toolbox, or `toolbox/server`.
            level: one of MCP's levels: `debug`, `info`, `notice`, `warning`, `error`, `critical`,
                `alert`, `emergency`.

        Raises:
            UsageError: `level` is not one of them.
            NotFoundError: `target` names no toolbox, or a toolbox or server that does not exist.
        """
        self._loop.run(contained(self._set_server_log_level(target, level)))

    async def aset_server_log_level(self, target: str, level: str) -> None:
        """`set_server_log_level` for `await` (from the kernel's loop, or the workbench's own: `serve`)."""
        await self._loop.arun(contained(self._set_server_log_level(target, level)))

    async def _set_server_log_level(self, target: str, level: str) -> None:
        if level not in LOG_LEVELS:
            raise UsageError(f"Unknown log level {level!r}: one of {', '.join(LOG_LEVELS)}")
        toolbox, server = toolbox_target(target)
        for conn in await self._core.connections(toolbox, server, self._settings()):
            await conn.set_log_level(level)

    def set_roots(self, target: str, roots: list[str] | tuple[str, ...] | str | None) -> None:
        """The roots of one server or of every server of a toolbox; None: back to the config's.

        Handshake-era servers are told at once.

        Args:
            target: a toolbox, or `toolbox/server`.
            roots: a path, a URI, or a list of them; None goes back to the config's (or `wb.roots`).

        Raises:
            NotFoundError: `target` names no toolbox, or a toolbox or server that does not exist.
        """
        toolbox, server = toolbox_target(target)
        chosen = None if roots is None else root_uris(roots)

        async def apply() -> None:
            self._core.set_roots(await self._core.connections(toolbox, server, self._settings()), chosen)

        self._loop.run(contained(apply()))

    def set_roots_source(self, source: RootsSource | None) -> None:
        """Where servers that follow the client's roots get them between calls (None: `wb.roots`).

        For `serve`'s stdio face: its one client. A server's own roots (config, `set_roots`) still
        win, and a call's client is asked during its call.

        Args:
            source: what gives the roots, or None to go back to `wb.roots`.
        """
        core = self._core
        self._loop.run_sync(lambda: setattr(core.client_side, "roots_source", source))

    def roots_source_changed(self) -> None:
        """The source's roots changed (from any thread): the servers that follow them are told.

        Handshake-era servers get `roots/list_changed`; 2026-07-28 ones ask per request.
        """
        core, settings = self._core, self._settings()

        async def tell() -> None:
            followers = [c for c in await core.connections(None, None, settings) if core.client_side.follows_roots(c)]
            core.set_roots(followers, None)  # they have no roots of their own: this only tells them

        self._loop.spawn(tell()).add_done_callback(_log_failure)

    def logout(self, target: str) -> list[str]:
        """Forget the stored OAuth tokens of a server or of a toolbox's; the servers that had some.

        The registered client is forgotten too. A connection already open keeps its session until it
        is closed or reconnected; the next connect asks the person to authorize again.

        Args:
            target: one server (`toolbox/server`), or a toolbox (every OAuth server of it).

        Returns:
            The names of the servers that had stored tokens.
        """
        from workbench_magic.engine.auth import forget

        toolbox, server = toolbox_target(target)
        settings = self._settings()
        names = [server] if server is not None else list(settings.toolbox(toolbox).mcp_servers)
        configs = {name: settings.server(toolbox, name) for name in names}
        return [name for name, cfg in configs.items() if cfg.url and cfg.auth and cfg.auth.oauth and forget(cfg.url)]


def _declared_otherwise(conn: Connection, offered: bool) -> bool:
    """Whether `conn`'s live session declared sampling otherwise (a replayed server has no session)."""
    from workbench_magic.engine.cassette_deck import ReplayConnection

    return (
        conn.status == "connected" and not isinstance(conn, ReplayConnection) and conn.client_tasks.sampling != offered
    )


def _reconnect_later(servers: list[str], offered: bool) -> str:
    """The line for servers that kept a session declaring sampling otherwise (a call was in flight)."""
    now = "offered" if offered else "no longer offered"
    return (
        f"{', '.join(servers)} had a call in flight: sampling is {now} from their next reconnect "
        f"(wb.reconnect({servers[0]!r}) or %workbench reconnect {servers[0]})"
    )


def _log_failure(call: concurrent.futures.Future[None]) -> None:
    """Background work nobody waits for: its failure goes to the log, not to nowhere."""
    if not call.cancelled() and call.exception() is not None:
        logger.warning("servers could not be told the roots changed: %s", call.exception())
