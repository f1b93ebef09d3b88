"""serve's fast lane: plain `use_tool` calls over stdio, answered beside the SDK's server.

Profiling `serve` showed a forwarded call spending about as long in the SDK's server layers
(JSON-RPC dispatch, the era relay, the per-request runner, its middleware and span, two
validations of the request) as in reaching the downstream server. The lane reads each stdin line
before the SDK does and answers the calls it can answer exactly as the SDK would, with less:

- only `tools/call` of `use_tool` (and, in dynamic mode, of a registered tool) with no progress
  token; anything else, and any request the SDK's own checks would refuse, goes on to the SDK
  unchanged;
- **2026-07-28 clients**: once the connection's first request (served by the SDK) opened that era,
  whose requests each carry their own envelope (no session state to share with the SDK); a call
  whose `_meta` is the envelope and at most a log level, from a client that declared none of
  sampling, elicitation and roots (so no question travels back mid-call, and no retry follows: a
  retry's `requestState` is sealed by the SDK's middleware), and that would not be answered with a
  task (the tasks extension's interceptor, asked first). Log messages go out as the SDK's log
  gate allows for the request's level;
- **handshake-era clients**: once the SDK has served the handshake (the lane hears `initialized`
  and keeps the connection's session); a call without `_meta`. A question the downstream server
  asks mid-call, and its log messages, reach the client through that session, as they do for a
  call the SDK serves (forwarding.py's `Upstream`);
- the request is still checked against the SDK's per-version surface and the result shaped by
  the SDK's own serializer (2026-07-28: `resultType`, the `serverInfo` stamp), so the wire is the
  same;
- `notifications/cancelled` for a lane call cancels it and nothing is answered (as the SDK);
  when the connection ends, a call still running is cancelled and told `Connection closed`.

A 2026-07-28 client's downstream question is refused, declined or answered with the workbench's
roots, as for any client that did not declare them; without a log level its log messages are
dropped, as the SDK drops them for a request that did not opt in. The call runs in the lane's task
(server.py's `_forward`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
import mcp_types.methods as methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from workbench_magic.serve.forwarding import hear_notification

logger = logging.getLogger("workbench_magic.server")

_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
_INFO_KEY = "io.modelcontextprotocol/clientInfo"
_LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
_ENVELOPE = frozenset({_VERSION_KEY, _CAPABILITIES_KEY, _INFO_KEY, _LOG_LEVEL_KEY})
_PARAMS = frozenset({"name", "arguments", "_meta"})
_ASKABLE = frozenset({"sampling", "elicitation", "roots"})


class LaneRequest:
    """What the forwarder reads of a request being served (the names of the SDK's `Context`)."""

    request_state = None
    input_responses = None

    def __init__(
        self,
        request_id: int | str,
        version: str,
        capabilities: types.ClientCapabilities | None,
        params: dict[str, Any],
        session: Any = None,
        tell: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.request_id = request_id
        self.protocol_version = version
        self.client_capabilities = capabilities
        self.params = params
        self._session = session
        self._tell = tell
        self._log_levels: frozenset[str] = frozenset()
        if session is None and tell is not None:
            from mcp.server.connection import allowed_log_levels

            self._log_levels = allowed_log_levels(version, params.get("_meta"))
        self.quiet = session is None and not self._log_levels
        """A 2026-07-28 request without a log level: nothing but the result goes back, so the
        forwarder sends no log messages through it (forwarding.py). A handshake-era request's log
        messages and questions go through its connection's session."""

    @property
    def request_context(self) -> LaneRequest:
        return self

    @property
    def session(self) -> Any:
        return self._session if self._session is not None else self

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """No progress token: nothing to report (as the SDK's `Context`)."""

    async def send_log_message(
        self, level: Any, data: Any, logger: str | None = None, related_request_id: Any = None
    ) -> None:
        """A 2026-07-28 request's log message, sent when the SDK's log gate would send it (its level
        at or above the request's), as the SDK words it."""
        if level not in self._log_levels or self._tell is None:
            return
        params = types.LoggingMessageNotificationParams(level=level, data=data, logger=logger)
        self._tell(
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": params.model_dump(by_alias=True, mode="json", exclude_none=True),
            }
        )


class Lane:
    """Answers the calls of a `WorkbenchServer` it can take from stdin lines (on the workbench loop)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.lowlevel = server.lowlevel
        self.write: Callable[[bytes], None] = _nowhere
        self.drain: Callable[[], Awaitable[None]] = _nothing
        self.modern: bool | None = None
        """The connection's era, decided by its first request (which the SDK serves)."""
        self.handshake: tuple[Any, str] | None = None
        """A handshake-era connection's session and protocol version, once it is initialized."""
        self.served = 0
        self._calls: dict[int | str, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._names: Callable[[str], bool] = server.lane_takes
        self.open = self.lowlevel.cache_hints.get("tools/call") is None

    def attach(self, write: Callable[[bytes], None], drain: Callable[[], Awaitable[None]]) -> None:
        """`write` puts one encoded line on the wire (stdout); `drain` waits while it is full."""
        self.write = write
        self.drain = drain

    @property
    def running(self) -> int:
        """Lane calls not answered yet."""
        return len(self._calls)

    def install(self) -> None:
        """Hear the client's `initialized`: a handshake-era connection's session, for its calls the
        lane takes."""
        hear_notification(self.lowlevel, "notifications/initialized", self._initialized)

    def _initialized(self, ctx: Any) -> None:
        version = getattr(ctx, "protocol_version", None)
        if self.open and isinstance(version, str) and version not in MODERN_PROTOCOL_VERSIONS:
            self.modern = False  # also when serve answered the handshake early (early.py): the lane never saw it
            self.handshake = (ctx.session, version)

    def take(self, line: str) -> bool:
        """Whether the lane answers `line` (else it goes on to the SDK)."""
        if not self.modern:
            if self.modern is None:
                self._decide_era(line)
            if self.handshake is None:
                return False
        try:
            if '"tools/call"' in line:
                return self._call(line)
            if '"notifications/cancelled"' in line:
                return self._cancel(line)
        except Exception:  # the SDK serves what the lane stumbles on; the wire must go on
            logger.exception("the fast lane could not take a line; the SDK serves it")
        return False

    def _decide_era(self, line: str) -> None:
        message = _loads(line)
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            return
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        self.modern = message["method"] != "initialize" and isinstance(meta, dict) and _VERSION_KEY in meta
        self.modern = self.modern and self.open

    def _call(self, line: str) -> bool:
        message = _loads(line)
        handshake = self.handshake
        taken = _plain_call(message, self._names) if handshake is None else _handshake_call(message, self._names)
        if taken is None:
            return False
        request_id, params = taken
        if request_id in self._calls:
            return False  # a duplicate id in flight: the SDK's rules answer it
        session, version = handshake if handshake is not None else (None, params["_meta"][_VERSION_KEY])
        try:
            methods.validate_client_request("tools/call", version, params)
            capabilities = (
                session.client_capabilities
                if session is not None
                else types.ClientCapabilities.model_validate(params["_meta"][_CAPABILITIES_KEY])
            )
        except ValueError:  # pydantic's ValidationError is a ValueError: the SDK answers
            return False
        request = LaneRequest(request_id, version, capabilities, params, session, self._write)
        if session is None and self._as_task(params, request):
            return False  # the tasks extension answers it with a task (its interceptor, in the SDK)
        task = asyncio.get_running_loop().create_task(self._answer(request, params["name"], params.get("arguments")))
        self._calls[request_id] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self.served += 1
        return True

    async def _answer(self, request: LaneRequest, name: str, arguments: dict[str, Any] | None) -> None:
        request_id = request.request_id
        try:
            result = await self._run(request, name, arguments)
            reply = {"result": self._shape(request.protocol_version, result)}
        except asyncio.CancelledError:
            if self._calls.pop(request_id, None) is not None:  # not cancelled by the client: closing
                self._send(request_id, {"error": {"code": types.CONNECTION_CLOSED, "message": "Connection closed"}})
            raise
        except Exception as exc:
            reply = {"error": _error_data(exc, name)}
        if self._calls.pop(request_id, None) is not None:
            self._send(request_id, reply)
            try:
                await self.drain()  # a client that stops reading holds the lane back, not memory
            except (OSError, RuntimeError) as exc:
                logger.debug("the client stopped reading: %s", exc)

    async def _run(self, request: LaneRequest, name: str, arguments: dict[str, Any] | None) -> Any:
        """The tool's answer; an unexpected failure is an error result (as `MCPServer` answers it)."""
        from mcp.shared.exceptions import MCPError

        try:
            return await self.server.call_tool(name, arguments or {}, request)
        except MCPError:
            raise
        except Exception as exc:
            logger.exception("Tool %r raised an unexpected exception", name)
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(exc))], is_error=True)

    def _shape(self, version: str, result: Any) -> dict[str, Any]:
        """The result's wire form, by the SDK's own serializer and stamp."""
        from mcp.shared.exceptions import MCPError

        try:
            dumped = methods.serialize_server_result(
                "tools/call", version, result.model_dump(by_alias=True, mode="json", exclude_none=True)
            )
        except ValueError:
            logger.exception("handler for 'tools/call' returned an invalid result")
            raise MCPError(code=types.INTERNAL_ERROR, message="Handler returned an invalid result") from None
        if version not in MODERN_PROTOCOL_VERSIONS:
            return dumped  # handshake-era results carry neither `resultType` nor the stamp
        dumped.setdefault("resultType", "complete")
        meta = dumped.get("_meta")
        stamp = self.lowlevel.server_info_stamp
        if meta is None:
            dumped["_meta"] = {"io.modelcontextprotocol/serverInfo": stamp}
        elif isinstance(meta, dict) and meta.get("io.modelcontextprotocol/serverInfo") is None:
            dumped["_meta"] = {**meta, "io.modelcontextprotocol/serverInfo": stamp}
        return dumped

    def _as_task(self, params: dict[str, Any], request: LaneRequest) -> bool:
        """Whether the tasks extension answers this 2026-07-28 call with a task (it decides: a host
        that opted in, a task tool)."""
        arguments = dict(params.get("arguments") or {})
        return self.server.tasks.task_target(params["name"], arguments, request) is not None

    def _send(self, request_id: int | str, reply: dict[str, Any]) -> None:
        self._write({"jsonrpc": "2.0", "id": request_id, **reply})

    def _write(self, message: dict[str, Any]) -> None:
        try:
            self.write((json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8"))
        except (OSError, RuntimeError) as exc:  # the client has gone
            logger.debug("dropped %r: %s", message.get("id", message.get("method")), exc)

    def _cancel(self, line: str) -> bool:
        from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params

        message = _loads(line)
        if not isinstance(message, dict) or message.get("method") != "notifications/cancelled" or "id" in message:
            return False
        params = message.get("params")
        request_id = cancelled_request_id_from_params(params if isinstance(params, dict) else None)
        task = self._calls.pop(request_id, None) if request_id is not None else None
        if task is None:
            return False
        task.cancel()
        return True

    def close(self) -> None:
        """Cancel every lane call still running (each is told `Connection closed`)."""
        for task in list(self._calls.values()):
            task.cancel()

    async def settle(self) -> None:
        """Wait until every lane call has ended (and written what it had to)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def _nowhere(data: bytes) -> None:
    raise RuntimeError("the lane has no wire yet")


async def _nothing() -> None:
    return None


def _loads(line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _tool_call(message: Any, takes: Callable[[str], bool]) -> tuple[int | str, dict[str, Any]] | None:
    """(id, params) of a `tools/call` of a tool the lane takes, with nothing else in it, else None."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != "tools/call":
        return None
    if message.keys() - {"jsonrpc", "id", "method", "params"}:
        return None
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    params = message.get("params")
    if not isinstance(params, dict) or params.keys() - _PARAMS:
        return None
    name, arguments = params.get("name"), params.get("arguments")
    if not isinstance(name, str) or not takes(name) or not (arguments is None or isinstance(arguments, dict)):
        return None
    return request_id, params


def _handshake_call(message: Any, takes: Callable[[str], bool]) -> tuple[int | str, dict[str, Any]] | None:
    """(id, params) of a handshake-era `tools/call` the lane may answer (no `_meta`: no progress
    token, no task), else None."""
    taken = _tool_call(message, takes)
    return taken if taken is not None and "_meta" not in taken[1] else None


def _plain_call(message: Any, takes: Callable[[str], bool]) -> tuple[int | str, dict[str, Any]] | None:
    """(id, params) of a 2026-07-28 `tools/call` the lane may answer, else None."""
    taken = _tool_call(message, takes)
    if taken is None:
        return None
    meta = taken[1].get("_meta")
    if not isinstance(meta, dict) or meta.keys() - _ENVELOPE or not isinstance(meta.get(_CAPABILITIES_KEY), dict):
        return None
    if meta[_CAPABILITIES_KEY].keys() & _ASKABLE:  # a question could travel back: the SDK serves the retry
        return None
    if meta.get(_VERSION_KEY) not in MODERN_PROTOCOL_VERSIONS:
        return None
    return taken


def _error_data(exc: Exception, name: str) -> dict[str, Any]:
    """A handler's exception as the SDK's server answers it."""
    from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data

    error = handler_exception_to_error_data(exc)
    if error is None:
        logger.exception("handler for 'tools/call' (%s) raised", name)
        error = types.ErrorData(code=0, message=str(exc))
    return error.model_dump(by_alias=True, mode="json", exclude_none=True)
