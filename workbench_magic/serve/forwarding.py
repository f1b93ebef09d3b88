"""`serve` forwards what a downstream server asks and tells during a call to the upstream client.

`serve` runs on the workbench loop, with every downstream connection: nothing here crosses a
thread. A served call (`use_tool`, a dynamic- or flat-mode tool), `prompts/get` or `resources/read`
runs with an `UpstreamChannel`, a `LoopChannel` of that loop whose `upstream` is the client that
made the request (`Forwarder.forward`). `ClientSide`
hands that upstream the downstream server's sampling, elicitation (form and URL) and roots
requests and its log messages; the call's progress goes up as the upstream request's progress.

The upstream client's protocol generation decides how a request travels:

- 2025-11-25 (handshake era): a real JSON-RPC request to the upstream client, related to the
  `tools/call` being served, sent while the downstream call waits;
- 2026-07-28: servers may not send requests, so the `tools/call` answers an
  `InputRequiredResult` carrying the downstream's question; the downstream call keeps waiting
  (`PendingCall`), and the client's retry (its `request_state` names the pending call) delivers
  the answer and waits for the next question or the result. A 2026-07-28 downstream's question
  keeps its own `inputRequests` key, and an answer the client sent before it was asked (its first
  request's `inputResponses`) answers the question of that key without asking.

What the upstream client did not declare is not forwarded: sampling is then refused, elicitation
declined, and roots are the workbench's own; a 2026-07-28 client's call is then answered
`-32021` (missing required client capability, naming what the downstream asked for), as SEP-2575
asks of a server that needs a capability its client did not declare.

Outside a call, downstream servers that follow roots get them from `ClientRoots` on the stdio face
(its one client owns them; a 2026-07-28 client is asked for them in the first request that starts
servers, before they start); on the HTTP face (many clients) they are the workbench's own, none
unless set. A server's own `"roots"` config wins over both.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import mcp_types as types

from workbench_magic.engine.runtime import LoopChannel
from workbench_magic.engine.transports import handshake_era
from workbench_magic.vocabulary.errors import WorkbenchError

logger = logging.getLogger("workbench_magic.server")

PENDING_TTL = 600.0
"""Seconds a 2026-07-28 call waits for the client's retry before it is cancelled downstream."""
ROOTS_TIMEOUT = 60.0
"""Seconds a handshake-era client may take to answer a `roots/list` asked outside a call."""
ROOTS_KEY = "workbench/roots"
"""The key of serve's own `roots/list` in the `InputRequiredResult` that asks a 2026-07-28 client
for its roots before servers start (`ClientRoots.ask_before_start`)."""

_SETTLE_ROUNDS = 2
"""Loop iterations for the SDK's notification dispatch (read, route, callback) to catch up before
a call's result goes up. A notification read before the response has its handler task queued
ahead of the response's waiter, and reaches our callback within a turn or two (one more for a
channel post); the result takes five turns and more to come back up to `flush` (session,
connection, core, the call's task, its future). Two turns of margin."""

_Question = tuple[Any, type[Any], "asyncio.Future[Any]", str | None]
"""A downstream's question a 2026-07-28 client is to answer: the request, its result's type, the
future the answer settles, and the downstream's key for it (None: serve names it)."""


def _without_meta(params: Any) -> Any:
    """Downstream request params without the downstream's own `_meta` (its progress token)."""
    return params.model_copy(update={"meta": None}) if getattr(params, "meta", None) is not None else params


class Upstream:
    """The upstream client of one call being served, as the downstream's questions see it (made,
    asked and told on the workbench loop, where the upstream session lives too)."""

    def __init__(self, context: Any) -> None:
        self.context = context
        self.loop = asyncio.get_running_loop()
        self.capabilities: types.ClientCapabilities | None = context.client_capabilities
        version = context.protocol_version or ""
        self.modern = version >= "2026-07-28"
        self.quiet: bool = getattr(context, "quiet", False)
        """Nothing but the result reaches this client (lane.py): log messages and progress are dropped."""
        self.follows_progress = not self.quiet and _progress_token(context) is not None
        """Whether the request asked for progress (a `progressToken`): else the call's progress goes
        nowhere, and the call is made without asking for it (engine/relay.py needs none)."""
        self.questions: list[_Question] = []
        """What a 2026-07-28 downstream asked and the client has not been sent yet."""
        self._sent: list[asyncio.Task[None]] = []
        self._held: list[Callable[[], Coroutine[Any, Any, None]]] | None = None
        """What the downstream told while the client had no request open (a 2026-07-28 client
        between an `InputRequiredResult` and its retry): sent through the retry's request."""
        self._waiter: asyncio.Future[None] | None = None
        self.missing: set[str] = set()
        """What a downstream asked of this (2026-07-28) client that it did not declare."""
        first = self.modern and getattr(context, "request_state", None) is None
        self.given: dict[str, Any] = dict(getattr(context, "input_responses", None) or {}) if first else {}
        """What a 2026-07-28 client answered before it was asked (`inputResponses` on its first
        request): a downstream question under one of these keys takes that answer."""

    # ---- what the upstream client declared ------------------------------------------------
    def offers(self, kind: str, *, url: bool = False) -> bool:
        """Whether the upstream client declared `kind` (sampling, elicitation, roots)."""
        return self._declared(kind, url=url)

    def lacks(self, kind: str) -> None:
        """A downstream asked for `kind`, which the client did not declare: a 2026-07-28 client is
        then `missing` sampling or elicitation (its call is answered -32021); roots are the
        workbench's own."""
        if self.modern and kind in ("sampling", "elicitation"):
            self.missing.add(kind)

    def check_declared(self) -> None:
        """The call's answer to a 2026-07-28 client that lacked what a downstream asked for:
        `-32021` naming it (`MCPError`); else nothing."""
        if not self.missing:
            return
        from mcp import MCPError

        needed = types.ClientCapabilities.model_validate({kind: {} for kind in sorted(self.missing)})
        data = types.MissingRequiredClientCapabilityErrorData(required_capabilities=needed)
        raise MCPError(
            code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            message=f"The call needs the client's {' and '.join(sorted(self.missing))}, which it did not declare",
            data=data.model_dump(by_alias=True, mode="json", exclude_none=True),
        )

    def _declared(self, kind: str, *, url: bool = False) -> bool:
        caps = self.capabilities
        if caps is None:
            return False
        if kind == "elicitation":
            elicitation = caps.elicitation
            if elicitation is None:
                return False
            if url:
                return elicitation.url is not None
            return elicitation.form is not None or elicitation.url is None
        return getattr(caps, kind, None) is not None

    # ---- requests ----------------------------------------------------------------------------
    async def sample(self, messages: list[Any], params: Any, *, key: str | None = None) -> Any:
        """The upstream client's answer to a downstream `sampling/createMessage`."""
        request = types.CreateMessageRequest(params=_without_meta(params))
        wants_tools = bool(getattr(params, "tools", None))
        result_type = types.CreateMessageResultWithTools if wants_tools else types.CreateMessageResult
        return await self._request(request, result_type, key)

    async def elicit(self, params: Any, *, key: str | None = None) -> types.ElicitResult:
        """The upstream client's answer to a downstream `elicitation/create` (form or URL)."""
        params = _without_meta(params)
        if not self.modern and isinstance(params, types.ElicitRequestURLParams) and not params.elicitation_id:
            # 2026-07-28 servers send URL elicitations without an id; the handshake era requires one.
            params = params.model_copy(update={"elicitation_id": f"workbench-{secrets.token_hex(8)}"})
        return await self._request(types.ElicitRequest(params=params), types.ElicitResult, key)  # type: ignore[no-any-return]

    async def list_roots(self, *, key: str | None = None) -> types.ListRootsResult:
        """The upstream client's roots."""
        return await self._request(types.ListRootsRequest(), types.ListRootsResult, key)  # type: ignore[no-any-return]

    async def _request(self, request: Any, result_type: type[Any], key: str | None) -> Any:
        if not self.modern:
            return await self._send(request, result_type)
        if key is not None and key in self.given:
            return answer_of(self.given.pop(key), result_type)
        answer: asyncio.Future[Any] = self.loop.create_future()
        self.questions.append((request, result_type, answer, key))
        self._wake()
        return await answer

    def _wake(self, *_: Any) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def asked_or(self, done: asyncio.Future[Any]) -> None:
        """Return when the downstream has asked something or `done` is done (one future and a
        callback, where `asyncio.wait` on a queue's task costs a task a call)."""
        if self.questions or done.done():
            return
        self._waiter = asyncio.get_running_loop().create_future()
        done.add_done_callback(self._wake)
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def _send(self, request: Any, result_type: type[Any]) -> Any:
        from mcp.shared.message import ServerMessageMetadata

        session = self.context.request_context.session
        related = self.context.request_context.request_id
        return await session.send_request(
            request, result_type, metadata=ServerMessageMetadata(related_request_id=related)
        )

    # ---- notifications ---------------------------------------------------------------------
    @property
    def asks(self) -> bool:
        """Whether a downstream question can reach this client (one it declared, or a handshake-era
        client's request); else each is refused, declined or answered with the workbench's roots."""
        return not self.modern or any(self._declared(kind) for kind in ("sampling", "elicitation", "roots"))

    def log(self, params: Any, source: str) -> None:
        """A downstream log message, as the upstream request's log message, named by its server:
        its logger is `source` (`toolbox/server`), or `source/logger` when the server named one."""
        if self.quiet:
            return
        named = f"{source}/{params.logger}" if params.logger else source
        self._tell(lambda: self._log(params, named))

    def _tell(self, send: Callable[[], Coroutine[Any, Any, None]]) -> None:
        if self._held is not None:
            self._held.append(send)
        else:
            self._sent.append(self.loop.create_task(send()))

    def hold(self) -> None:
        """The request is answered and the call waits for the client's retry: what the downstream
        tells meanwhile waits for the retry's request (sent through the answered one, it would be
        dropped)."""
        if self._held is None:
            self._held = []

    def resume(self, context: Any) -> None:
        """The client retried: `context` is the request now, and what was held goes out through it."""
        self.context = context
        self.release()

    def release(self) -> None:
        """What was held goes out through the request (when it turned out not to be answered yet)."""
        held, self._held = self._held or [], None
        for send in held:
            self._tell(send)

    async def flush(self) -> None:
        """Wait until the downstream's notifications are out: they must precede the call's result
        (over HTTP the request's stream closes with it). The SDK may hand the workbench a
        notification after the response that followed it, so the loop first runs what it has
        queued. A quiet client is sent nothing: no wait."""
        if self.quiet:
            return
        for _ in range(_SETTLE_ROUNDS):
            await asyncio.sleep(0)
        sent, self._sent = self._sent, []
        if sent:
            await asyncio.gather(*sent, return_exceptions=True)

    async def _log(self, params: Any, named: str) -> None:
        context = self.context
        try:
            await handshake_era(  # a handshake-era client's log messages: no warning on serve's stderr
                context.request_context.session.send_log_message,
                level=params.level,
                data=params.data,
                logger=named,
                related_request_id=context.request_context.request_id,
            )
        except Exception as exc:
            logger.debug("a log message could not reach the upstream client: %s", exc)

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """The downstream call's progress, as the upstream request's."""
        if self.quiet:
            return
        self._tell(lambda: self._progress(progress, total, message))

    async def _progress(self, progress: float, total: float | None, message: str | None) -> None:
        try:
            await self.context.report_progress(progress, total, message)
        except Exception as exc:
            logger.debug("progress could not reach the upstream client: %s", exc)


def answer_of(response: Any, result_type: type[Any]) -> Any:
    """A 2026-07-28 client's `inputResponses` entry as the answer the downstream's question expects."""
    return result_type.model_validate(response.model_dump(by_alias=True, exclude_none=True))


def hear_notification(lowlevel: Any, method: str, hear: Callable[[Any], None]) -> None:
    """Call `hear(ctx)` on each client notification `method` the SDK's low-level server receives,
    before the handler already set (which still runs)."""
    previous = lowlevel.get_notification_handler(method)

    async def handler(ctx: Any, params: Any) -> None:
        hear(ctx)
        if previous is not None:
            await previous.handler(ctx, params)

    params_type = previous.params_type if previous is not None else types.NotificationParams
    lowlevel.add_notification_handler(method, params_type, handler)


def _progress_token(context: Any) -> Any:
    """The request's `progressToken`, read as the SDK reads it (None: none, or no request)."""
    from mcp.shared.jsonrpc_dispatcher import progress_token_from_params

    params = getattr(getattr(context, "request_context", None), "params", None)
    return progress_token_from_params(params) if isinstance(params, dict) else None


def _uris(result: Any) -> list[str]:
    return [str(root.uri) for root in result.roots]


class ClientRoots:
    """serve's one stdio client as the roots of the downstream servers that follow roots when no
    call is in flight (a `clientside.RootsSource`; the HTTP face has many clients and sets none).

    A handshake-era client that declared roots owns them: each downstream `roots/list` is asked of
    it on the connection's own channel, and its `notifications/roots/list_changed` goes on to every
    open server that follows roots, which then asks again. A 2026-07-28 client cannot be asked
    outside a request: its roots are the ones it last gave during a request. It is asked for them
    in the first request that starts servers, before they start (`ask_before_start`): a server
    that asks as it connects (server-filesystem at once, server-everything 350 ms later) and keeps
    the answer would otherwise keep none. When what it gives changes, the servers that follow roots
    are told, as for a notification.
    """

    def __init__(self, workbench: Any) -> None:
        self.workbench = workbench
        self._session: Any = None
        """The handshake-era client's session (its standalone channel), once it declared roots."""
        self._last: types.ListRootsResult | None = None

    def install(self, lowlevel: Any) -> None:
        """Hear the client's `initialized` and `roots/list_changed` (after any handler already set, which
        still runs), and become the workbench's roots source."""
        hear_notification(lowlevel, "notifications/initialized", self._initialized)
        hear_notification(lowlevel, "notifications/roots/list_changed", self._list_changed)
        self.workbench.set_roots_source(self)

    def _initialized(self, ctx: Any) -> None:
        session = ctx.session
        caps = session.client_capabilities
        if session.protocol_version < "2026-07-28" and caps is not None and caps.roots is not None:
            self._session = session

    def _list_changed(self, ctx: Any) -> None:
        if self._session is not None:
            self.workbench.roots_source_changed()

    def gave(self, result: Any) -> None:
        """The client answered a downstream `roots/list` during a call. A 2026-07-28 client's roots
        are then these; when they differ from the last, the servers that follow roots are told."""
        before = self._last
        self._last = result
        if self._session is None and (before is None or _uris(before) != _uris(result)):
            self.workbench.roots_source_changed()

    def ask_before_start(self, context: Any, starts_servers: Callable[[], bool]) -> types.InputRequiredResult | None:
        """Before a request of a 2026-07-28 client that declared roots starts servers: ask it for its
        roots (the `InputRequiredResult` to answer), unless it gave them already. The client's retry
        carries them: they are taken, and the request goes on (None), as it does for every other
        request. `starts_servers()` is asked last, only when the client's roots are still unknown."""
        if self._session is not None or context is None:
            return None
        caps = getattr(context, "client_capabilities", None)
        if (getattr(context, "protocol_version", None) or "") < "2026-07-28" or caps is None or caps.roots is None:
            return None
        responses = getattr(context, "input_responses", None) or {}
        answer = responses.get(ROOTS_KEY)
        if answer is not None:
            try:
                self.gave(answer_of(answer, types.ListRootsResult))
            except ValueError as exc:  # pydantic's ValidationError: the servers keep what they had
                logger.warning("the client's answer to serve's roots/list is not a roots list: %s", exc)
            return None
        if self._last is not None or responses or not starts_servers():
            return None  # a retry that answers something else (a pending call's) asks nothing more
        return types.InputRequiredResult(input_requests={ROOTS_KEY: types.ListRootsRequest()})

    async def list_roots(self) -> types.ListRootsResult | None:
        """The handshake-era client's answer; else what the client last gave (None: none yet)."""
        if self._session is None:
            return self._last
        return await self._session.send_request(  # type: ignore[no-any-return]
            types.ListRootsRequest(), types.ListRootsResult, request_read_timeout_seconds=ROOTS_TIMEOUT
        )


class UpstreamChannel(LoopChannel):
    """The channel of a call being served: the workbench loop, and the upstream client to forward to."""

    upstream: Upstream

    def __init__(self, upstream: Upstream) -> None:
        super().__init__(upstream.loop)
        self.upstream = upstream


T = TypeVar("T")


class PendingCall:
    """A downstream request waiting on a 2026-07-28 client's answers, between its retries: its
    task runs on across them."""

    def __init__(self, upstream: Upstream, call: asyncio.Task[Any]) -> None:
        self.upstream = upstream
        self.call = call
        self.asked: dict[str, _Question] = {}
        self.expiry: asyncio.TimerHandle | None = None


class Forwarder:
    """Runs calls for `serve` with forwarding (one per server)."""

    def __init__(self) -> None:
        self._pending: dict[str, PendingCall] = {}

    @property
    def pending(self) -> int:
        """2026-07-28 calls waiting for their client's retry."""
        return len(self._pending)

    async def forward(
        self, context: Any, run: Callable[[UpstreamChannel], Coroutine[Any, Any, T]]
    ) -> T | types.InputRequiredResult:
        """`run(channel)`'s result (a tool call, a prompt, a resource read), what the downstream asks
        and tells meanwhile going to the client of `context` (the request being served).

        A handshake-era client is asked on its connection, during the request: `run` runs in this
        task. A 2026-07-28 client that declared something askable is answered an
        `InputRequiredResult` when the downstream asks: `run` then runs in a task of its own, and
        the client's retry (its `request_state`) resumes it with the answers.
        """
        upstream = None
        if getattr(context, "request_state", None) is None:
            upstream = Upstream(context)
            if not upstream.modern or not upstream.asks:  # never answered with a question
                try:
                    result = await run(UpstreamChannel(upstream))
                except WorkbenchError:
                    upstream.check_declared()  # the failure came of what the client lacks: say so
                    raise
                await upstream.flush()
                upstream.check_declared()
                return result
        pending = self._resume(context)
        if pending is None:
            upstream = upstream or Upstream(context)
            task = asyncio.ensure_future(run(UpstreamChannel(upstream)))
            task.add_done_callback(_retrieved)
            pending = PendingCall(upstream, task)
        return await self._wait(pending)  # type: ignore[no-any-return]

    def _resume(self, context: Any) -> PendingCall | None:
        state = getattr(context, "request_state", None)
        pending = self._pending.pop(state, None) if state else None
        if pending is None:
            return None
        if pending.expiry is not None:
            pending.expiry.cancel()
        pending.upstream.resume(context)
        responses = context.input_responses or {}
        for key, (_, result_type, answer, _) in pending.asked.items():
            if answer.done():
                continue
            response = responses.get(key)
            if response is None:
                answer.set_exception(RuntimeError(f"the client's retry did not answer {key!r}"))
                continue
            try:
                answer.set_result(answer_of(response, result_type))
            except Exception as exc:
                answer.set_exception(exc)
        pending.asked.clear()
        return pending

    async def _wait(self, pending: PendingCall) -> Any:
        done = pending.call
        upstream = pending.upstream
        try:
            await upstream.asked_or(done)
            if not done.done() or upstream.questions:
                upstream.hold()  # from here until the retry: the answered request can carry nothing
                await upstream.flush()  # what was told before goes out ahead of the answer
        except asyncio.CancelledError:
            pending.call.cancel()  # the client gave up before its call was pending: nobody retries
            raise
        # A question the downstream asked while the call ran is asked even when the call's answer
        # came in with it (the server waits on it, and will not ask again): the retry takes the answer.
        if done.done() and not upstream.questions:  # also when it ended during that flush
            upstream.release()
            await upstream.flush()
            upstream.check_declared()
            return done.result()
        questions, upstream.questions = upstream.questions, []
        for question in questions:
            # the downstream's own key where it has one (the client may know it), unless taken
            key = question[3]
            if key is None or key in pending.asked or key == ROOTS_KEY:
                key = f"q{secrets.token_hex(4)}"
            pending.asked[key] = question
        state = secrets.token_urlsafe(16)
        self._pending[state] = pending
        pending.expiry = asyncio.get_running_loop().call_later(PENDING_TTL, self._expire, state)
        requests = {key: request for key, (request, _, _, _) in pending.asked.items()}
        return types.InputRequiredResult(input_requests=requests, request_state=state)

    def _expire(self, state: str) -> None:
        pending = self._pending.pop(state, None)
        if pending is not None:
            logger.info("a client did not retry a call waiting on its answer: cancelled downstream")
            pending.call.cancel()

    def close(self) -> None:
        """Cancel every call still waiting for its client."""
        for state in list(self._pending):
            pending = self._pending.pop(state)
            if pending.expiry is not None:
                pending.expiry.cancel()
            pending.call.cancel()


def _retrieved(task: asyncio.Task[Any]) -> None:
    """A pending request's outcome counts as seen: a client that never retries leaves its
    failure unread (asyncio would log it as never retrieved)."""
    if not task.cancelled():
        task.exception()


def declare_sampling_as_upstream(workbench: Any, context: Any, fallback: Callable[..., Any]) -> None:
    """Sampling is advertised downstream only when the upstream client opening a toolbox declared it
    (`fallback` answers the sampling requests no upstream can take)."""
    caps = getattr(context, "client_capabilities", None) if context is not None else None
    wanted = caps is not None and caps.sampling is not None
    if wanted != (workbench.sampling_handler is not None):
        workbench.sampling_handler = fallback if wanted else None


def no_upstream_sampling(messages: list[Any], params: Any) -> Any:
    """Sampling outside a forwarded call (no upstream client to ask)."""
    from workbench_magic.vocabulary.errors import WorkbenchError

    raise WorkbenchError("no upstream client that can sample is waiting on this call")
