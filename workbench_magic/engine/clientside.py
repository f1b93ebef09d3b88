"""The client half of MCP: what servers ask of the workbench and what they tell it.

Servers ask for a model's answer (sampling), for the person's input (elicitation) and for the
client's roots; they tell it log messages. `ClientSide` answers on the loop thread, from the
handlers set on the workbench or, for elicitation without a handler, by asking the person on the
thread that made the call (through that call's channel and its `asker`).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from workbench_magic.engine.runtime import Channel, UpstreamClient
from workbench_magic.vocabulary.errors import WorkbenchError
from workbench_magic.vocabulary.masking import mask_value

logger = logging.getLogger("workbench_magic")

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""MCP's log levels (RFC 5424), lowest first."""

_PYTHON_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}

SamplingHandler = Callable[[list[Any], Any], Any] | str
"""`fn(messages, params)` -> str | dict | CreateMessageResult (or an awaitable of one), or `"ask"`."""
ASK_PERSON = "ask"
"""`sampling_handler = "ask"`: the person at the notebook writes the model's reply."""
ElicitationHandler = Callable[[str, dict[str, Any]], Any] | Mapping[str, Any]
"""`fn(message, schema)` -> dict (accept) | None (decline) | ElicitResult, or canned answers."""
AuthorizationHandler = Callable[[str], Any]
"""`fn(url)`: given the authorization link of an OAuth flow, gets the person (or a test, or a
headless browser) there; the redirect still comes back to the workbench's loopback catcher."""


class Asker(Protocol):
    """How to ask the person, on the thread that made the call (run through its channel).

    Each method returns an `ElicitResult`-like dict (`{"action": ..., "content": ...}`) or a
    `concurrent.futures.Future` of one (a widget answers later, on a click).
    """

    def form(self, server: str, message: str, schema: dict[str, Any]) -> Any: ...

    def sample(self, server: str, messages: list[dict[str, Any]], system_prompt: str | None) -> Any:
        """The reply text for a sampling request (None declines)."""

    def url(self, server: str, message: str, url: str) -> Any: ...


class AskingConnection(Protocol):
    """What the client side needs of the connection a server asked through (engine/connection.py's
    `Connection` is one): who it is, what it declared, and who waits on it now."""

    toolbox: str
    name: str
    config: Any
    secrets: frozenset[str]
    log_level: str | None
    sampling: bool

    def caller(self) -> Channel | None:
        """The channel of whoever waits on the server now (the call in flight)."""

    def waiting_on_the_person(self) -> AbstractAsyncContextManager[None]:
        """While the person answers, calls in flight on the server do not time out."""

    def note(self, line: str) -> None:
        """One line of the server's log."""


class RootsSource(Protocol):
    """Where servers' roots come from when no call is in flight, for a workbench that something in
    front of it serves (serve's stdio face: its one client). Set with `Workbench.set_roots_source`;
    a server's own roots (`"roots": [...]`, `wb.set_roots`) still win."""

    async def list_roots(self) -> Any:
        """A `ListRootsResult`, or None: the workbench's own roots (`wb.roots`)."""

    def gave(self, result: Any) -> None:
        """The client of a call in flight answered a server's `roots/list` with `result`."""


@dataclass(frozen=True)
class Request:
    """One request a server made of the client, for the history."""

    kind: str
    toolbox: str
    server: str
    asked: Any
    answered: Any
    started: float
    elapsed: float
    ok: bool = True


# ---- conversions ------------------------------------------------------------------------------
def sampling_result(answer: Any, *, model: str = "workbench-magic") -> Any:
    """A handler's answer as a `CreateMessageResult`: a str is the assistant's text; a dict is
    read as the result's fields (`text` allowed for the content)."""
    from mcp_types import CreateMessageResult, CreateMessageResultWithTools, TextContent

    if isinstance(answer, CreateMessageResult | CreateMessageResultWithTools):
        return answer
    if isinstance(answer, str):
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text=answer), model=model, stop_reason="endTurn"
        )
    if isinstance(answer, Mapping):
        data = dict(answer)
        if "text" in data and "content" not in data:
            data["content"] = {"type": "text", "text": str(data.pop("text"))}
        data.setdefault("role", "assistant")
        data.setdefault("model", model)
        data.setdefault("stopReason", data.pop("stop_reason", "endTurn"))
        return CreateMessageResult.model_validate(data)
    raise WorkbenchError(
        f"The sampling handler returned a {type(answer).__name__}; return a str, a dict or a CreateMessageResult"
    )


def elicit_result(answer: Any) -> Any:
    """A handler's answer as an `ElicitResult`: a dict accepts with it as content, None declines."""
    from mcp_types import ElicitResult

    if isinstance(answer, ElicitResult):
        return answer
    if answer is None:
        return ElicitResult(action="decline")
    if (
        isinstance(answer, Mapping)
        and set(answer) <= {"action", "content"}
        and answer.get("action")
        in (
            "accept",
            "decline",
            "cancel",
        )
    ):
        return ElicitResult.model_validate(dict(answer))
    if isinstance(answer, Mapping):
        return ElicitResult(action="accept", content=dict(answer))
    raise WorkbenchError(
        f"The elicitation handler returned a {type(answer).__name__}; return a dict, None or an ElicitResult"
    )


def root_uri(value: str) -> str:
    """A root as a `file://` URI: URIs stay, paths are made absolute (`~` expanded)."""
    if "://" in value:
        return value
    return Path(os.path.expanduser(value)).resolve().as_uri()


def text_of_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Sampling messages as plain `{role, text}` dicts (for the history and simple handlers)."""
    out = []
    for message in messages:
        content = getattr(message, "content", None)
        blocks = content if isinstance(content, list) else [content]
        text = "\n".join(str(getattr(b, "text", "")) for b in blocks if getattr(b, "type", None) == "text")
        out.append({"role": getattr(message, "role", "user"), "text": text})
    return out


async def _call_handler(handler: Callable[..., Any], *args: Any) -> Any:
    """Async handlers run on the loop; sync ones in a worker thread (never blocking the loop)."""
    if inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(type(handler).__call__):
        return await handler(*args)
    result = await asyncio.to_thread(handler, *args)
    if inspect.isawaitable(result):
        result = await result
    return result


def _question_key(context: Any) -> str | None:
    """What a server named its question: on 2026-07-28 the SDK hands each `inputRequests` entry to
    the callbacks with its key as the request id (a handshake-era request's id is a number)."""
    key = getattr(context, "request_id", None)
    return key if isinstance(key, str) and key else None


def _upstream(channel: Channel | None, kind: str, *, url: bool = False) -> UpstreamClient | None:
    """The upstream client a served call forwards `kind` to (see forwarding.py), if it declared it;
    one that did not is told it `lacks` it (a 2026-07-28 client's call then says so)."""
    upstream = channel.upstream if channel is not None else None
    if upstream is None:
        return None
    if upstream.offers(kind, url=url):
        return upstream
    upstream.lacks(kind)
    return None


# ---- answering servers -----------------------------------------------------------------------------
class ClientSide:
    """Answers what servers ask of the client (loop thread). One per `Workbench` core.

    `handlers()` gives the current handlers (the workbench's immutable options), `remember`
    keeps each request in the history.
    """

    def __init__(self, handlers: Callable[[], Any], remember: Callable[[Request], None]) -> None:
        self._handlers = handlers
        self._remember = remember
        self.roots: dict[tuple[str, str], tuple[str, ...]] = {}
        self.roots_source: RootsSource | None = None
        """Where roots come from outside a call (serve's stdio client), if anywhere but `wb.roots`."""

    def callbacks(self, conn: AskingConnection) -> dict[str, Any]:
        """The SDK client's callbacks for `conn`: what it declares follows from which are set
        (sampling only while a handler is set, roots unless the server's config says false)."""

        async def elicit(context: Any, params: Any) -> Any:
            return await self.elicit(conn, params, conn.caller(), key=_question_key(context))

        async def log(params: Any) -> None:
            self.log_message(conn, params, conn.caller())

        async def sample(context: Any, params: Any) -> Any:
            return await self.sample(conn, params, conn.caller(), key=_question_key(context))

        async def roots(context: Any) -> Any:
            return await self.list_roots(conn, key=_question_key(context))

        options: dict[str, Any] = {"elicitation_callback": elicit, "logging_callback": log}
        if conn.log_level:
            options["log_level"] = conn.log_level
        if conn.sampling:
            options["sampling_callback"] = sample
        if getattr(conn.config, "roots", None) is not False:
            options["list_roots_callback"] = roots
        return options

    # -- authorization
    async def authorize(self, where: str, url: str) -> bool:
        """Hand an OAuth flow's authorization link to `authorization_handler`; False when none is
        set (the link is then shown to the person)."""
        handler = self._handlers().authorization_handler
        if handler is None:
            return False
        try:
            await _call_handler(handler, url)
        except Exception as exc:
            raise WorkbenchError(f"authorization_handler failed for {where}: {exc}") from None
        return True

    # -- sampling
    async def sample(
        self, conn: AskingConnection, params: Any, channel: Channel | None = None, *, key: str | None = None
    ) -> Any:
        from mcp_types import ErrorData

        handler = self._handlers().sampling_handler
        upstream = _upstream(channel, "sampling")
        if upstream is not None:
            handler = functools.partial(upstream.sample, key=key)
        elif handler == ASK_PERSON:
            handler = self._person_as_model(conn, channel)
        started, t0 = time.time(), time.perf_counter()
        asked = {"messages": text_of_messages(params.messages), "max_tokens": params.max_tokens}
        if params.system_prompt:
            asked["system_prompt"] = params.system_prompt
        if handler is None:
            return ErrorData(code=-32600, message="The workbench has no sampling handler")
        try:
            result = sampling_result(await _call_handler(handler, list(params.messages), params))
        except Exception as exc:
            self._log(conn, "sampling", asked, f"the handler failed: {exc}", started, t0, ok=False)
            return ErrorData(code=-32603, message=f"Sampling handler failed: {exc}")
        answer = getattr(result.content, "text", None) if not isinstance(result.content, list) else None
        self._log(conn, "sampling", asked, answer if answer is not None else result.model_dump(), started, t0)
        return result

    def _person_as_model(self, conn: AskingConnection, channel: Channel | None) -> Callable[..., Any]:
        """`sampling_handler = "ask"`: the person writes the model's reply, where the call was made."""

        async def ask(messages: list[Any], params: Any) -> Any:
            asker = getattr(channel, "asker", None) if channel is not None else None
            if channel is None or asker is None or not hasattr(asker, "sample"):
                raise WorkbenchError("nobody can answer a sampling request here")
            where = f"{conn.toolbox}/{conn.name}"
            async with conn.waiting_on_the_person():
                future = channel.submit(lambda: asker.sample(where, text_of_messages(messages), params.system_prompt))
                reply = await asyncio.wrap_future(future)
            if reply is None:
                raise WorkbenchError("the person declined to answer")
            return sampling_result(reply, model="person")

        return ask

    # -- elicitation
    async def elicit(
        self, conn: AskingConnection, params: Any, channel: Channel | None, *, key: str | None = None
    ) -> Any:
        from mcp_types import ElicitResult

        handler = self._handlers().elicitation_handler
        started, t0 = time.time(), time.perf_counter()
        url = getattr(params, "url", None)
        schema = dict(getattr(params, "requested_schema", None) or {})
        asked: dict[str, Any] = {"message": params.message, **({"url": url} if url else {"schema": schema})}
        upstream = _upstream(channel, "elicitation", url=bool(url))
        try:
            if upstream is not None:
                answer = await upstream.elicit(params, key=key)
            elif handler is None:
                answer = await self._ask_person(conn, params.message, schema, url, channel)
            elif isinstance(handler, Mapping):
                answer = {"action": "accept"} if url else dict(handler)
            else:
                answer = await _call_handler(handler, params.message, {"url": url} if url else schema)
            result = elicit_result(answer)
            if url and result.action == "accept":
                result = ElicitResult(action="accept")
        except asyncio.CancelledError:
            self._log(conn, "elicitation", asked, {"action": "cancel"}, started, t0, ok=False)
            raise
        except Exception as exc:
            self._log(conn, "elicitation", asked, f"failed: {exc}", started, t0, ok=False)
            return ElicitResult(action="cancel")
        self._log(conn, "elicitation", asked, result.model_dump(exclude_none=True), started, t0)
        return result

    async def _ask_person(
        self, conn: AskingConnection, message: str, schema: dict[str, Any], url: str | None, channel: Channel | None
    ) -> Any:
        asker = getattr(channel, "asker", None) if channel is not None else None
        if channel is None or asker is None:
            logger.warning(
                "%s/%s asked for input (%s) and there is no way to ask here: declined",
                conn.toolbox,
                conn.name,
                message,
            )
            conn.note(f"elicitation declined (no way to ask the person here): {message}")
            return None
        where = f"{conn.toolbox}/{conn.name}"
        async with conn.waiting_on_the_person():
            if url:
                future = channel.submit(lambda: asker.url(where, message, url))
            else:
                future = channel.submit(lambda: asker.form(where, message, schema))
            return await asyncio.wrap_future(future)

    # -- roots
    def own_roots(self, conn: AskingConnection) -> tuple[str, ...] | None:
        """The server's own roots (`wb.set_roots`, else its config's `"roots": [...]`), which win
        over every other; None when it follows the client's."""
        override = self.roots.get((conn.toolbox, conn.name))
        if override is not None:
            return override
        configured = getattr(conn.config, "roots", None)
        if isinstance(configured, list | tuple):
            return tuple(root_uri(r) for r in configured)
        return None

    def follows_roots(self, conn: AskingConnection) -> bool:
        """Whether the server is told the client's roots (neither `"roots": false` nor its own)."""
        return getattr(conn.config, "roots", None) is not False and self.own_roots(conn) is None

    def roots_of(self, conn: AskingConnection) -> tuple[str, ...]:
        own = self.own_roots(conn)
        return own if own is not None else self._handlers().roots

    async def list_roots(self, conn: AskingConnection, *, key: str | None = None) -> Any:
        """A server's own roots; else those of the client of the call in flight (serve), else the
        roots source's (serve's stdio client), else `wb.roots` (none until set)."""
        from mcp_types import ErrorData, ListRootsResult, Root

        started, t0 = time.time(), time.perf_counter()
        if self.own_roots(conn) is None:
            upstream = _upstream(conn.caller(), "roots")
            source = self.roots_source
            try:
                if upstream is not None:
                    given = await upstream.list_roots(key=key)
                    if source is not None:
                        source.gave(given)
                else:
                    given = await source.list_roots() if source is not None else None
            except Exception as exc:
                self._log(conn, "roots", {}, f"the client did not answer: {exc}", started, t0, ok=False)
                return ErrorData(code=-32603, message=f"The client's roots are not available: {exc}")
            if given is not None:
                self._log(conn, "roots", {}, [str(r.uri) for r in given.roots], started, t0)
                return given
        roots = self.roots_of(conn)
        result = ListRootsResult(
            roots=[
                Root.model_validate({"uri": uri, "name": Path(uri.split("://", 1)[-1]).name or uri}) for uri in roots
            ]
        )
        self._log(conn, "roots", {}, list(roots), started, t0)
        return result

    # -- log messages
    def log_message(self, conn: AskingConnection, params: Any, channel: Channel | None) -> None:
        level = str(params.level)
        data = params.data if isinstance(params.data, str) else json.dumps(params.data, default=str)
        line = f"[{level}] {params.logger + ': ' if params.logger else ''}{data}"
        conn.note(line)
        upstream = channel.upstream if channel is not None else None
        if upstream is not None:
            upstream.log(params, f"{conn.toolbox}/{conn.name}")
        python_logger = logging.getLogger(f"workbench_magic.server.{conn.toolbox}.{conn.name}")
        python_logger.log(_PYTHON_LEVELS.get(level, logging.INFO), "%s", mask_value(data, conn.secrets))
        notice = getattr(channel, "notice", None) if channel is not None else None
        if notice is not None and level in LOG_LEVELS and LOG_LEVELS.index(level) >= LOG_LEVELS.index("warning"):
            text = f"{conn.toolbox}/{conn.name} {level}: {mask_value(data, conn.secrets)}"
            assert channel is not None
            channel.post(lambda: notice(text))

    def _log(
        self,
        conn: AskingConnection,
        kind: str,
        asked: Any,
        answered: Any,
        started: float,
        t0: float,
        *,
        ok: bool = True,
    ) -> None:
        secrets = conn.secrets
        self._remember(
            Request(
                kind=kind,
                toolbox=conn.toolbox,
                server=conn.name,
                asked=mask_value(asked, secrets),
                answered=mask_value(answered, secrets),
                started=started,
                elapsed=time.perf_counter() - t0,
                ok=ok,
            )
        )


__all__ = [
    "LOG_LEVELS",
    "Asker",
    "ClientSide",
    "ElicitationHandler",
    "Request",
    "RootsSource",
    "SamplingHandler",
    "elicit_result",
    "root_uri",
    "sampling_result",
]
