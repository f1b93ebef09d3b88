"""The relay: plain `tools/call` requests to a handshake-era stdio server, written on its stdin and
answered from its stdout beside the SDK's session.

Profiling `serve` under load showed a forwarded call spending more in the SDK's client session (the
request model and its JSON, the dispatcher's tasks, a span, the response's validation into a
message union) than in the server it reaches. For a call that needs nothing of the session, the
relay writes the request line itself, under an id the SDK never uses (a string: the SDK counts in
integers), and the transport's reader, which parses every line once, hands it the response as a
plain JSON object, not validated into the SDK's message models (transports.py).
Both travel in the session's own order: the request through the transport's writer queue (after
what the session sent before it, a `logging/setLevel` say), the response through the read stream,
taken off it (`RelayedRead`) only when the session asks for the next message, so that what the
server sent before it (a log message of the call) has reached the session first. Everything else
on the pipe (the handshake, other requests, the server's questions, notifications) is the
session's, unchanged.

What the caller keeps (requesting.py takes the relay only then): the call's limit and interrupt (a
cancelled call tells the server `notifications/cancelled`, as the SDK does), the one boundary of
errors (a JSON-RPC error is the SDK's `MCPError`, a pipe that ends is its `Connection closed`), the
result's validation (`CallToolResult`, and the SDK's own check of structured content against the
tool's output schema). It is not taken for a call with progress (the session routes progress by
its tokens), a task, a 2026-07-28 server (each request carries the session's envelope), or while a
trace records this server (the wire tap sits on the session's streams).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from workbench_magic.engine.streams import ReadStreamWrapper

logger = logging.getLogger("workbench_magic")

RELAY_SWITCH = "WORKBENCH_RELAY"
"""`WORKBENCH_RELAY=off`: every call goes through the SDK's session (a server's processes started
from then on)."""

_PREFIX = "wb-"
"""The relay's request ids: `wb-1`, `wb-2`, ... (the SDK's are integers)."""


class RelayedAnswer:
    """A line of the server's stdout that answers a relayed call, parsed, on its way to the relay
    through the session's read stream."""

    __slots__ = ("message",)

    def __init__(self, message: dict[str, Any]) -> None:
        self.message = message


class Relay:
    """One stdio server's relay (one per process the connection starts; loop thread)."""

    def __init__(self) -> None:
        self._send: Callable[[bytes], Awaitable[None]] | None = None
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._next = 0
        self._cancels: set[asyncio.Task[None]] = set()
        self.closed = False
        self.sent = 0
        """Calls the relay has written (for tests and diagnostics)."""

    @property
    def ready(self) -> bool:
        """Whether a call can go out now (the transport is running)."""
        return self._send is not None and not self.closed

    @property
    def pending(self) -> int:
        """Relayed calls not answered yet."""
        return len(self._pending)

    def attach(self, send: Callable[[bytes], Awaitable[None]]) -> None:
        """`send(line)`: put one encoded line in the transport's writer queue, behind the session's."""
        self._send = send

    def answer_of(self, message: object) -> RelayedAnswer | None:
        """The answer to a relayed call that `message` (one line of the server's stdout, parsed) is, else None."""
        if not self._pending or not isinstance(message, dict) or "method" in message:
            return None
        request_id = message.get("id")
        if not isinstance(request_id, str) or request_id not in self._pending:
            return None
        return RelayedAnswer(message)

    def deliver(self, answer: RelayedAnswer) -> None:
        """Hand a relayed call its answer (when the session has taken in what came before it)."""
        waiting = self._pending.pop(answer.message["id"], None)
        if waiting is not None and not waiting.done():
            waiting.set_result(answer.message)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The server's `tools/call` result, as its JSON object.

        Raises:
            MCPError: the server answered with an error, or the connection closed (`CONNECTION_CLOSED`).
        """
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR

        self._next += 1
        request_id = f"{_PREFIX}{self._next}"
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = answer
        params = {"name": name, "arguments": arguments}
        request = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        written = False
        try:
            assert self._send is not None
            await self._send(_line(request))
            written = True
            self.sent += 1
            message = await answer
        except asyncio.CancelledError:
            if written and request_id in self._pending:  # not answered (its future is cancelled with the task)
                self._tell_cancelled(request_id)
            raise
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            raise MCPError(code=CONNECTION_CLOSED, message="Connection closed") from None
        finally:
            self._pending.pop(request_id, None)
        error, result = message.get("error"), message.get("result")
        if isinstance(error, dict) and isinstance(error.get("code"), int):
            raise MCPError(code=error["code"], message=str(error.get("message", "")), data=error.get("data"))
        if error is not None or not isinstance(result, dict):
            raise MCPError(code=INTERNAL_ERROR, message="The server's answer to tools/call is not a result or an error")
        return result

    def _tell_cancelled(self, request_id: str) -> None:
        """`notifications/cancelled` for a call given up on, sent by a task of its own (the call's
        task is being cancelled)."""
        params = {"requestId": request_id, "reason": "caller cancelled"}
        notice = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}

        async def send() -> None:
            try:
                assert self._send is not None
                await self._send(_line(notice))
            except Exception as exc:  # the server has gone: nothing left to cancel
                logger.debug("could not tell the server a relayed call was cancelled: %s", exc)

        task = asyncio.get_running_loop().create_task(send())
        self._cancels.add(task)
        task.add_done_callback(self._cancels.discard)

    def close(self) -> None:
        """The pipe has ended: every call still waiting fails with `Connection closed`."""
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED

        self.closed = True
        pending, self._pending = self._pending, {}
        for answer in pending.values():
            if not answer.done():
                answer.set_exception(MCPError(code=CONNECTION_CLOSED, message="Connection closed"))


class RelayedRead(ReadStreamWrapper):
    """The session's read stream, minus the relay's answers: each is handed to the relay when the
    session asks for the message after it (the SDK's own waiter would be woken at that point too)."""

    __slots__ = ("_relay",)

    def __init__(self, inner: Any, relay: Relay) -> None:
        super().__init__(inner)
        self._relay = relay

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if type(item) is not RelayedAnswer:
                return item
            self._relay.deliver(item)


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


__all__ = ["RELAY_SWITCH", "Relay", "RelayedAnswer", "RelayedRead"]
