"""The SDK's client and client session where we reach past their public names (checked with
mcp 2.3; tests/engine/sdk/test_sdk_session.py fails when one of them changes).

- `Client._build_session(exit_stack)`: builds the un-entered `ClientSession`; wrapped so a hook
  sees each session before it starts (`build_session_hook`).
- `ClientSession._build_capabilities(version)`: the capability ad of each era; replaced on the
  instance before the session starts (`set_capabilities_builder`).
- `ClientSession._on_request(context, method, params)`: answers a server's request; read when
  the session is entered, so replaced before that (`set_request_handler`).
- `ClientSession._stamp(data, options)` and `ClientSession._dispatcher.send_raw_request(method,
  params, options)`: how `send_request` sends, used for a request the SDK has no method for or
  whose result it would refuse (`raw_sender`).
- `ClientSession._tool_output_validators`: its cache of output-schema validators by tool name
  (`output_validator_cache`).
- `ClientSession._stamp` again: on 2026-07-28 it puts the log level the `Client` was made with in
  each request's `_meta` (SEP-2577), fixed when the session connects; wrapped so a new level goes
  with the next request (`set_request_log_level`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

CapabilitiesBuilder = Callable[[str], Any]
"""`build(version)`: the `ClientCapabilities` a session declares on a wire speaking `version`."""
RequestHandler = Callable[[Any, str, Mapping[str, Any] | None], Awaitable[dict[str, Any]]]
"""`answer(context, method, params)`: a session's raw answer to a server's request."""


class RawSend(Protocol):
    """Sends one request as the session's `send_request` does, and returns its raw result."""

    def __call__(self, data: dict[str, Any], *, name: str | None = None) -> Awaitable[dict[str, Any]]: ...


def build_session_hook(client: Any, hook: Callable[[Any], None]) -> None:
    """Have `hook(session)` see each session `client` (an un-entered `mcp.Client`) builds, before
    the session is entered (so before its handshake)."""
    build = client._build_session

    async def build_with_hook(stack: Any) -> Any:
        session = await build(stack)
        hook(session)
        return session

    client._build_session = build_with_hook


def capabilities_builder(session: Any) -> CapabilitiesBuilder | None:
    """The session's capability builder (None: this SDK has none to wrap)."""
    return getattr(session, "_build_capabilities", None)


def set_capabilities_builder(session: Any, build: CapabilitiesBuilder) -> None:
    """Make `build(version)` the capability ad of this un-entered session (every era's handshake
    and per-request stamp asks it)."""
    session._build_capabilities = build


def request_handler(session: Any) -> RequestHandler | None:
    """The session's handler of a server's requests (None: this SDK has none to wrap)."""
    return getattr(session, "_on_request", None)


def set_request_handler(session: Any, answer: RequestHandler) -> None:
    """Make `answer(context, method, params)` the handler of the server's requests to this session;
    set before the session is entered (it is read then)."""
    session._on_request = answer


def raw_sender(session: Any) -> RawSend:
    """A function that sends `data` (a request's `{"method", "params"}` as JSON) the way the
    session's `send_request` sends: stamped with the era's per-request fields (protocol version,
    capabilities, log level on 2026-07-28), `name` as its `Mcp-Name` header; it returns the raw
    result, unchecked (an error answer raises `MCPError`). Raises `AttributeError` (or
    `ImportError`) here, before anything is sent, where this SDK lacks what it needs."""
    from mcp.shared.inbound import MCP_NAME_HEADER, encode_header_value

    # Read now, so a missing member fails before anything is sent; the stamp is read per call,
    # as the session replaces it when it connects.
    _ = session._stamp
    dispatcher = session._dispatcher

    async def send(data: dict[str, Any], *, name: str | None = None) -> dict[str, Any]:
        options: dict[str, Any] = {}
        session._stamp(data, options)
        if name is not None:
            options.setdefault("headers", {}).setdefault(MCP_NAME_HEADER, encode_header_value(name))
        result: dict[str, Any] = await dispatcher.send_raw_request(data["method"], data.get("params"), options)
        return result

    return send


def set_request_log_level(session: Any, level: str) -> None:
    """From the next request on, a connected 2026-07-28 session's requests opt in to log messages
    at `level` (`io.modelcontextprotocol/logLevel` in their `_meta`); a request whose own `_meta`
    names a level keeps it. Raises `AttributeError` where this SDK has no stamp."""
    from mcp_types import LOG_LEVEL_META_KEY

    base = getattr(session, "_workbench_base_stamp", None) or session._stamp

    def stamp(data: dict[str, Any], opts: Any) -> None:
        params = data.get("params")
        if params is None:
            params = data["params"] = {}
        params.setdefault("_meta", {}).setdefault(LOG_LEVEL_META_KEY, level)  # before the SDK's own default
        base(data, opts)

    session._workbench_base_stamp = base
    session._stamp = stamp


def output_validator_cache(session: Any) -> dict[str, Any] | None:
    """The session's output-schema validators by tool name, to fill ahead of first results (None:
    this SDK keeps no such cache). An entry needs the validator's `iter_errors(instance)`; the SDK
    evicts it when the tool's schema changes."""
    cache = getattr(session, "_tool_output_validators", None)
    return cache if isinstance(cache, dict) else None


__all__ = [
    "CapabilitiesBuilder",
    "RawSend",
    "RequestHandler",
    "build_session_hook",
    "capabilities_builder",
    "output_validator_cache",
    "raw_sender",
    "request_handler",
    "set_capabilities_builder",
    "set_request_handler",
    "set_request_log_level",
]
