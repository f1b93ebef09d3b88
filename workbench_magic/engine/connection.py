"""One downstream MCP server: its owner task, tool list, notifications and stderr log.

This module holds its state and lifecycle; its parts are the requests it sends (requesting.py)
and what its server tells it unasked (listening.py).

Each `Connection` runs on the workbench's event-loop thread. A single long-lived owner task
enters `mcp.Client` and exits it in the same task (anyio cancel scopes demand it); requests
are sent from other tasks on the same loop through the entered client.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from workbench_magic.engine.boundary import HttpStatus, reason
from workbench_magic.engine.catalog import same_tools
from workbench_magic.engine.eras import MODERN, client_mode, discover
from workbench_magic.engine.extension_tasks import tasks_extension_offer
from workbench_magic.engine.extensions import apps_extension_offer, declared_extensions, skills_extension_offer
from workbench_magic.engine.lazy import LazyStart
from workbench_magic.engine.listening import Listening, ListKind
from workbench_magic.engine.relay import RELAY_SWITCH, Relay
from workbench_magic.engine.requesting import InFlight, Requesting
from workbench_magic.engine.runtime import Channel, current_channel, opening_channel
from workbench_magic.engine.sdk.session import build_session_hook, set_request_log_level
from workbench_magic.engine.serverlog import StderrLog, install_parse_filter
from workbench_magic.engine.subscriptions import ResourceSubscriptions
from workbench_magic.engine.tasks import ClientTasks
from workbench_magic.engine.transports import AT_ONCE, StopPolicy, handshake_era, make_transport
from workbench_magic.engine.wiretap import WireTap, tapped
from workbench_magic.vocabulary.errors import (
    ConnectError,
    connect_text,
    leaf_exception,
)
from workbench_magic.vocabulary.listings import IDLE, ServerStatus, ToolInfo
from workbench_magic.vocabulary.masking import mask

if TYPE_CHECKING:
    from mcp import Client

    from workbench_magic.config.settings import ServerConfig
    from workbench_magic.engine.clientside import ClientSide

logger = logging.getLogger("workbench_magic")

BACKOFF_FIRST = 0.5
BACKOFF_MAX = 30.0
STOP_WAIT = 10.0
"""Seconds a stop waits for the owner task to close its client (the transport's stop takes about
6 s at worst: stdin close, SIGTERM, SIGKILL) before cancelling it."""
STUCK_AFTER = 15.0
"""Seconds past its deadline (the handshake's; a stop's) after which an owner task that has not
settled is abandoned and reported stuck, not waited for: its waits are all bounded, so only a
defect (ours or a library's) runs this out, and a hung open or close would hide it."""


def _owner_context() -> contextvars.Context:
    """The owner task outlives the call that started it: the SDK serves server requests in its
    tasks, which must not find that call's channel (`caller()` then finds the call in flight).
    The opening call's channel stays reachable as `opening_channel` (for an authorize link)."""
    opener = current_channel.get()
    context = contextvars.copy_context()
    context.run(current_channel.set, None)
    context.run(opening_channel.set, opener)
    return context


class Connection(Requesting, Listening):
    """A connection to one server of one toolbox; lives on the workbench loop thread.

    Status goes `connecting` -> `connected` | `failed`; a connected server whose transport
    closed becomes `disconnected` and reconnects on the next request; `closed` is final. A lazy
    server opened from its cached catalog is `idle` (no process) until a request starts it, and
    goes back to `idle` when its idle timeout stops it (`lazy`, lazy.py).
    Every change of what `snapshot()` shows calls `on_change(self)` (on the loop thread); a
    fetched-again tool list calls `on_tools_changed(self)`, a changed resource or prompt list
    `on_list_changed(self, "resources" | "prompts")`.
    """

    def __init__(
        self,
        toolbox: str,
        name: str,
        config: ServerConfig,
        *,
        connect_timeout: float = 30.0,
        on_change: Callable[[Connection], None] | None = None,
        on_tools_changed: Callable[[Connection], None] | None = None,
        on_list_changed: Callable[[Connection, ListKind], None] | None = None,
        client_side: ClientSide | None = None,
        sampling: bool = False,
        log_level: str | None = None,
        server_object: Any = None,
        apps: bool = False,
        request_timeout: float | None = None,
        wire_tap: WireTap | None = None,
        lazy: LazyStart | None = None,
    ) -> None:
        self.toolbox = toolbox
        self.lazy = lazy
        """Its catalog cache and idle clock (lazy.py); None for servers added from the notebook."""
        self.wire_tap = wire_tap
        self.server_object = server_object  # a live server added from the notebook (`Workbench.add_server`)
        self.name = name
        self.config = config
        self.connect_timeout = connect_timeout
        self._init_server_state()
        self._init_server_output()
        self._init_owner_state()
        self._on_change = on_change
        self._on_tools_changed = on_tools_changed
        self._on_list_changed = on_list_changed
        self.client_side = client_side
        self.sampling = sampling
        self.log_level = log_level
        self.apps = apps
        self.replayed_last = False
        """Whether the latest tool call was answered from a cassette (cassette_deck.py's `ReplayConnection`)."""
        self.request_timeout = request_timeout
        """Seconds a listing may take (calls, reads and prompts are given theirs)."""
        self._init_session_parts()

    def _init_server_state(self) -> None:
        """What `snapshot()` shows of the server and its counters, before any connect."""
        self.status = "new"
        self.error: str | None = None
        self.protocol: str | None = None
        self.server_info: str | None = None
        self.instructions: str | None = None
        self.capabilities: Any = None
        self.extensions: tuple[str, ...] = ()
        """The ids of the extensions its server declares (extensions.py)."""
        self.tools: tuple[ToolInfo, ...] = ()
        self.all_tool_names: list[str] = []
        self.tool_list_changes = 0
        self.connects = 0
        self.failures = 0
        self._retry_at = 0.0

    def _init_server_output(self) -> None:
        """Where what the server says besides its answers goes: its stderr log, its stray stdout
        lines and its HTTP error statuses; and the secrets masked in all of them."""
        self.log = StderrLog(f"{self.toolbox}-{self.name}")
        self.stdout_junk: list[str] = []
        self.http_status = HttpStatus()
        """The HTTP error statuses its server answered (streamable HTTP; boundary.py words them)."""
        self.secrets: frozenset[str] = frozenset(getattr(self.config, "secrets", ()) or ())

    def _init_owner_state(self) -> None:
        """The owner task's bookkeeping (none runs yet): its client, generation and stop signals."""
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._generation = 0
        self._ending: set[asyncio.Task[None]] = set()
        self._stop: asyncio.Event | None = None
        self._refresh_wanted: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None

    def _init_session_parts(self) -> None:
        """What the current session and its process use: requests in flight, resource subscriptions,
        client-side tasks (replaced with each session), the stdio stop policy and relay (with each process)."""
        self._in_flight: list[InFlight] = []
        self.subscriptions = ResourceSubscriptions(self)
        self.client_tasks = ClientTasks(sampling=False)
        """The tasks this client runs for the server's requests (replaced with each session)."""
        self.stop_policy = StopPolicy()
        """How the current stdio transport stops its process (read when it stops, see `_abandon`, `hurry`)."""
        self.relay: Relay | None = None
        """The current stdio process's relay of plain calls (relay.py); None on other transports."""

    # ---- public state ---------------------------------------------------------------
    @property
    def transport(self) -> str:
        return self.config.transport or ("stdio" if self.config.command else "http")

    @property
    def busy(self) -> bool:
        """Whether a request to the server is in flight (a restart now would cut it off)."""
        return bool(self._in_flight)

    def snapshot(self) -> ServerStatus:
        return ServerStatus(
            toolbox=self.toolbox,
            name=self.name,
            status=self.status,
            transport=self.transport,
            protocol=self.protocol,
            server_info=self.server_info,
            error=self.error,
            tool_count=len(self.tools),
            tool_list_changes=self.tool_list_changes,
            extensions=self.extensions,
        )

    def failure_message(self, reason: str) -> str:
        return mask(f"{connect_text(self.name, self.toolbox)}: {reason}", self.secrets)

    def logs(self) -> str:
        """Everything the server wrote to stderr and sent as log messages, secrets masked."""
        return mask(self.log.read(), self.secrets)

    def note(self, line: str) -> None:
        """A log message of the server (`notifications/message`), as one line of its log."""
        self.log.note(line)

    def caller(self) -> Channel | None:
        """The channel of whoever waits on this server now: the request being served (its
        context) or, for requests the SDK serves in a task of its own, the latest call in flight."""
        channel = current_channel.get()
        if channel is None:
            channel = next((e.channel for e in reversed(self._in_flight) if e.channel is not None), None)
        return channel

    def _set(self, status: str, error: str | None = None) -> None:
        if self.status == "closed" and status != "closed":
            return  # final: a start that lost the race with close reports nothing more
        self.status = status
        self.error = error
        self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            try:
                self._on_change(self)
            except Exception:
                logger.exception("status listener failed")

    def _failed(self, message: str, *, backoff: float | None = None) -> None:
        """Record a failed attempt (its `Failed to connect ...` message) and its backoff
        (0.5 s, doubling, at most 30 s, unless given)."""
        self.failures += 1
        if backoff is None:
            backoff = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (self.failures - 1))
        self._retry_at = time.monotonic() + backoff
        self._set("failed", message)

    # ---- lifecycle ------------------------------------------------------------------
    async def begin(self, *, force: bool = True, lazy: bool | None = None) -> None:
        """Open: a lazy server (`lazy`, else its config) whose catalog is cached goes `idle`
        with the cached tools and starts no process; any other connects (`start`)."""
        keeper = self.lazy
        if keeper is not None and lazy is not None:
            keeper.lazy = lazy
        if keeper is not None and keeper.lazy and self.status in ("new", IDLE):
            catalog = await keeper.cached()
            if catalog is not None and self.status in ("new", IDLE):
                self._rest()
                return
        await self.start(force=force)

    def _rest(self) -> None:
        """Show the cached catalog, with no process: status `idle` until the next use starts it."""
        assert self.lazy is not None and self.lazy.catalog is not None
        catalog = self.lazy.catalog
        self.tools = catalog.tools_for(self.toolbox, self.name)
        self.all_tool_names = [t.name for t in self.tools]
        self.protocol, self.server_info, self.instructions = catalog.protocol, catalog.server_info, catalog.instructions
        self._set(IDLE)

    async def start(self, *, force: bool = True) -> None:
        """Connect (or reconnect). Raises `ConnectError`; the connection is then `failed`.

        After failed attempts, `force=False` (what calls use) fails fast until the backoff has
        passed; opening or reconnecting always tries. Cancelling (interrupt, timeout, close)
        takes a half-open connection down at once: the failure is recorded and the process
        ends in the background.
        """
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.status == "connected":
                return
            if self.status == "closed":
                raise ConnectError(self.failure_message("the connection is closed"))
            wait = self._retry_at - time.monotonic()
            if not force and self.status == "failed" and wait > 0:
                raise ConnectError(f"{self.error} (next attempt in {wait:.1f} s; %workbench reconnect tries now)")
            await self._stop_owner()
            self._set("connecting")
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[None] = loop.create_future()
            self._stop = asyncio.Event()
            self._refresh_wanted = asyncio.Event()
            self._generation += 1
            self._owner = loop.create_task(
                self._own(ready, self._stop, self._generation),
                name=f"mcp-owner-{self.toolbox}/{self.name}",
                context=_owner_context(),
            )
            # Whatever becomes of the owner (cancelled before its first step, failed, ended
            # early), `ready` is settled: nothing else is bound to settle what we wait on here.
            self._owner.add_done_callback(lambda owner: self._owner_ended(owner, ready))
            try:
                await asyncio.wait_for(asyncio.shield(ready), self.connect_timeout + STUCK_AFTER)
            except TimeoutError:
                self._report_stuck("connecting")
                self._abandon()
                await self.stop_policy.kill()
                message = self.failure_message(f"no answer to the handshake within {self.connect_timeout:g} s")
                self._failed(message)
                raise ConnectError(message) from None
            except asyncio.CancelledError:
                # An interrupt (or a call's own limit) is no failure of the server: no backoff,
                # no count towards one; the next call or open tries again at once.
                self._abandon()
                self._set("failed", self.failure_message("cancelled while connecting"))
                self._retry_at = 0.0
                raise
            except ConnectError as exc:
                self._failed(str(exc))
                raise
            self.failures = 0

    def _owner_ended(self, owner: asyncio.Task[None], ready: asyncio.Future[None]) -> None:
        """Settle `ready` if the owner ended without doing so (the owner settles it itself on
        every path it runs; a task cancelled before its first step runs none)."""
        if ready.done():
            return
        if owner.cancelled():
            why = "cancelled while connecting"
        elif (error := owner.exception()) is not None:
            why = reason(leaf_exception(error), self.http_status)
        else:
            why = "the connection ended before it was ready"
        ready.set_exception(ConnectError(self.failure_message(why)))
        ready.exception()  # mark retrieved: the waiter may be gone too

    def _abandon(self) -> None:
        """Cancel the owner task now and let it end (and its process exit) in the background."""
        owner, self._owner = self._owner, None
        self._generation += 1  # what the abandoned owner does from now on is not our state
        self._client = None
        self.stop_policy.hurry(*AT_ONCE)  # no handshake, nothing to end gracefully: its process goes now
        if owner is not None and not owner.done():
            owner.cancel()
            self._ending.add(owner)
            owner.add_done_callback(self._ending.discard)

    async def ensure_connected(self) -> None:
        """Connect if needed, honouring the backoff after failed attempts."""
        if self.status != "connected":
            await self.start(force=False)

    async def restart(self) -> None:
        """Disconnect (if connected) and connect again, now."""
        if self.status == "connected":
            await self._stop_owner()
            if self.status != "closed":
                self._set("disconnected")
        await self.start()

    def hurry(self, grace: float, kill_after: float) -> None:
        """Stop the server at most this slowly when it stops (stdio: `grace` seconds after its
        stdin closes, SIGTERM; `kill_after` more, SIGKILL), also a stop already under way."""
        self.stop_policy.hurry(grace, kill_after)

    async def close(self) -> None:
        """Stop the owner task (which closes the client and ends the process); final."""
        self._abandon() if self.status == "connecting" else await self._stop_owner()
        await self._wait_ended()
        self._set("closed", None)
        self.log.close()

    async def _wait_ended(self) -> None:
        """Wait for abandoned owners to finish their (bounded, shielded) shutdown."""
        if self._ending:
            await asyncio.wait(list(self._ending), timeout=STOP_WAIT)

    async def _stop_owner(self) -> None:
        owner, self._owner = self._owner, None
        await self._wait_ended()
        if owner is None:
            return
        if self._stop is not None:
            self._stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(owner), timeout=STOP_WAIT)
        except TimeoutError:
            owner.cancel()
            await asyncio.wait({owner}, timeout=STUCK_AFTER)
            if not owner.done():
                self._report_stuck("stopping", owner)
                await self.stop_policy.kill()
                self._ending.add(owner)
                owner.add_done_callback(self._ending.discard)
        except BaseException:
            pass

    def _report_stuck(self, doing: str, owner: asyncio.Task[None] | None = None) -> None:
        """Log where an owner task that ran past its deadline waits (its chain of awaits); the
        caller then goes on without it and kills its server's process."""
        owner = owner or self._owner
        if owner is None:
            return
        where = " <- ".join(
            f"{f.f_code.co_name} ({f.f_code.co_filename.rsplit('/', 1)[-1]}:{f.f_lineno})"
            for f in reversed(_await_chain(owner.get_coro()))
        )
        text = f"the connection's task was stuck {doing}, abandoned: {where or 'no frame'}"
        self.log.mark(text)
        logger.warning("server %s/%s: %s", self.toolbox, self.name, text)

    def _make_client(self) -> Client:
        from mcp import Client

        install_parse_filter()
        self.stop_policy = StopPolicy()  # each process is stopped gracefully unless told otherwise
        relayed = self.transport == "stdio" and self.server_object is None and os.environ.get(RELAY_SWITCH) != "off"
        self.relay = Relay() if relayed else None
        transport = make_transport(
            self.config,
            self.transport,
            self.log.file,
            self.connect_timeout,
            label=f"{self.toolbox}-{self.name}",
            server=self.server_object,
            stop=self.stop_policy,
            relay=self.relay,
            heard=self.http_status,
            authorize=self.client_side.authorize if self.client_side is not None else None,
        )
        if self.wire_tap is not None:
            transport = tapped(transport, self.wire_tap, self.toolbox, self.name, self.secrets)
        mode: Any = client_mode(self.config.protocol)
        client = Client(transport, message_handler=self._on_message, mode=mode, **self._client_options())
        if self.client_side is not None:
            self._offer_client_tasks(client)
        return client

    def _offer_client_tasks(self, client: Client) -> None:
        """Client-side tasks (tasks.py) for each session the client builds: the session's hooks
        are set before it starts."""
        tasks = ClientTasks(sampling=self.sampling)
        build_session_hook(client, tasks.install)
        self.client_tasks = tasks

    def _client_options(self) -> dict[str, Any]:
        """Who we are and which client features we offer this server (its capabilities follow)."""
        from mcp_types import Implementation

        from workbench_magic.vocabulary.version import __version__

        info: dict[str, Any] = {
            "client_info": Implementation(name="workbench-magic", version=__version__),
            "extensions": self._extension_offers(),
        }
        return info if self.client_side is None else {**info, **self.client_side.callbacks(self)}

    def _extension_offers(self) -> list[Any]:
        """The extensions offered this server (extensions.py). Tasks (extension_tasks.py) are
        declared on 2026-07-28 requests only: the SDK drops a claim-bearing extension elsewhere."""
        offers = [skills_extension_offer(), tasks_extension_offer()]
        if self.apps:
            offers.append(apps_extension_offer())
        return offers

    async def _own(self, ready: asyncio.Future[None], stop: asyncio.Event, generation: int) -> None:
        """The owner task: enter the client, publish it, wait for stop, exit the client.

        State is written only while this owner is the current one (`generation`): an abandoned
        owner that is still shutting down must not overwrite its successor's state.
        """
        label = "connect"
        late: asyncio.TimerHandle | None = None

        def current() -> bool:
            return generation == self._generation

        try:
            self.log.mark(f"connecting ({self.transport})")
            self.stdout_junk.clear()
            client = self._make_client()
            policy = self.stop_policy
            with anyio.CancelScope() as deadline:
                # A server that missed the handshake deadline has nothing to end gracefully: its
                # process is told to go at once, then the handshake is cancelled.
                late = asyncio.get_running_loop().call_later(self.connect_timeout, _missed, policy, deadline)
                async with client:
                    if self.config.protocol == MODERN:
                        await discover(client)  # the server's own answer, or one line why not
                    if not current():
                        return
                    await self._adopt_client(client)
                    late.cancel()
                    label = "session"
                    self._mark_connected(ready)
                    await self._run_session_tasks(stop)
            if deadline.cancelled_caught and not ready.done():
                raise TimeoutError(f"no answer to the handshake within {self.connect_timeout:g} s")
        except BaseException as exc:
            self._owner_failed(exc, ready)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            if late is not None:
                late.cancel()
            self._finish_owner(current(), label)

    async def _adopt_client(self, client: Client) -> None:
        """Publish the entered client and what its server said of itself, then fetch its tools
        and ask its log level (the rest of the handshake, within its deadline)."""
        self._client = client
        self.protocol = client.protocol_version
        info = client.server_info
        self.server_info = f"{info.name} {info.version}".strip() if info else None
        self.instructions = client.instructions
        self.capabilities = client.server_capabilities
        self.extensions = declared_extensions(self.capabilities)
        await self._refresh_tools()
        await self._request_log_level(client)

    def _mark_connected(self, ready: asyncio.Future[None]) -> None:
        """The handshake is done: count the connect, go `connected`, settle `ready`, and start
        the idle clock (a lazy server whose cached catalog was stale announces its new tools)."""
        self.connects += 1
        self._set("connected")
        ready.set_result(None)
        keeper = self.lazy
        if keeper is not None:
            keeper.used()  # the idle clock starts now
        if keeper is not None and keeper.catalog is not None:
            if not same_tools(keeper.catalog.tools, self.tools):  # the cache was stale
                self._announce_tools()

    async def _run_session_tasks(self, stop: asyncio.Event) -> None:
        """Run the session's background tasks (tool refresh, log trimming, catalog keeping, idle
        watch, listening, subscription renewal) until `stop` is set, then cancel them."""
        keeper = self.lazy
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._refresher)
            tg.start_soon(self._keep_log_small)
            if keeper is not None and keeper.keeps_catalog:
                tg.start_soon(self._keep_catalog)
            if keeper is not None and keeper.idle_timeout is not None:
                tg.start_soon(self._idle_watch, stop)
            if self.modern:
                tg.start_soon(self._listen)
            if self.subscriptions:
                tg.start_soon(self.subscriptions.renew)
            await stop.wait()
            tg.cancel_scope.cancel()

    def _owner_failed(self, exc: BaseException, ready: asyncio.Future[None]) -> None:
        """What ended the owner task: before `ready`, the connect's failure (with the server's
        stderr tail and stray stdout) settles it; after, it is logged (unless closed)."""
        leaf = leaf_exception(exc)
        if isinstance(leaf, asyncio.CancelledError) and not ready.done():
            why = "cancelled while connecting"
        else:
            why = reason(leaf, self.http_status)
        if not ready.done():
            tail = self.log.tail()
            if tail:
                why = f"{why} (stderr: {tail})"
            if self.stdout_junk:
                why = f"{why} (stdout, not JSON-RPC: {' | '.join(self.stdout_junk)})"
            ready.set_exception(ConnectError(self.failure_message(why)))
            ready.exception()  # mark retrieved
        elif self.status != "closed":
            logger.debug("server %s/%s ended: %s", self.toolbox, self.name, why)

    def _finish_owner(self, is_current: bool, label: str) -> None:
        """The owner task is ending: if it is still the current one, drop its session's state
        (a connected server goes `disconnected`); mark the end (`label`) in the log."""
        if is_current:
            self._client = None
            self.subscriptions.session_ended()
            self.client_tasks.close()
            if self.status == "connected":
                self._set("disconnected", "connection closed")
        self.log.mark(f"{label} ended")

    async def _request_log_level(self, client: Client) -> None:
        """Handshake-era servers that log are asked for `log_level` (2026-07-28 ones get it with
        every request); a server that does not know the method is left as it is."""
        if self.modern or not self.log_level or not getattr(self.capabilities, "logging", None):
            return
        try:
            await handshake_era(client.session.set_logging_level, self.log_level)  # type: ignore[arg-type]
        except Exception as exc:
            logger.debug("logging/setLevel on %s/%s: %s", self.toolbox, self.name, exc)

    def offer_sampling(self, offered: bool) -> None:
        """Whether the next connect advertises sampling (a live session keeps what it declared)."""
        self.sampling = offered

    async def roots_changed(self) -> None:
        """Tell a handshake-era server its roots changed (2026-07-28 servers ask per request)."""
        client = self._client
        if client is None or self.status != "connected" or self.modern or self.config.roots is False:
            return
        try:
            await handshake_era(client.session.send_roots_list_changed)
        except Exception as exc:
            logger.debug("roots/list_changed to %s/%s: %s", self.toolbox, self.name, exc)

    async def set_log_level(self, level: str) -> None:
        """Change the level asked of this server: a handshake-era server is asked now
        (`logging/setLevel`), a 2026-07-28 one's next requests carry it."""
        self.log_level = level
        if self._client is not None and self.status == "connected":
            if self.modern:
                set_request_log_level(self._client.session, level)
            else:
                await self._request_log_level(self._client)


def _await_chain(awaiting: Any) -> list[Any]:
    """The frames of a suspended coroutine and of what it awaits, outermost first (a task's
    `get_stack` shows only its outermost frame)."""
    frames = []
    while awaiting is not None:
        frame = getattr(awaiting, "cr_frame", None) or getattr(awaiting, "ag_frame", None)
        if frame is not None:
            frames.append(frame)
        awaiting = getattr(awaiting, "cr_await", None) or getattr(awaiting, "ag_await", None)
    return frames


def _missed(policy: StopPolicy, handshake: anyio.CancelScope) -> None:
    """The handshake deadline passed: end the server's process at once, and stop waiting."""
    policy.hurry(*AT_ONCE)
    handshake.cancel()
