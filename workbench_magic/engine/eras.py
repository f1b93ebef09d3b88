"""The protocol era of a connection, as its server's config asks (`"protocol"`).

`auto` is the SDK's own probe: `server/discover` (2026-07-28), else the `initialize` handshake.
`legacy` is the handshake only. `2026-07-28` must be the server's own answer: the SDK's version pin
sends nothing and invents a discover result, so after the pin the connection sends
`server/discover` itself and adopts what the server says (public session methods); a server that
cannot speak the era fails to connect with one line saying why, and nothing else is sent. A discover
that the SDK gives up on (its own 10 s) is no answer: the server is starting slowly, and is asked
again until the connection's deadline says it did not answer in time (connection.py).
"""

from __future__ import annotations

from typing import Any

MODERN = "2026-07-28"


class NotModern(Exception):
    """The server cannot speak 2026-07-28 (the message says why, in one line)."""


def client_mode(protocol: str) -> str:
    """The SDK `Client` mode for a server's `"protocol"`."""
    return protocol if protocol in ("legacy", MODERN) else "auto"


async def discover(client: Any) -> None:
    """Ask the server `server/discover` and adopt its answer; `NotModern` when it cannot. A timed-out
    discover is sent again: the caller bounds the whole (the connect deadline)."""
    import mcp_types as types
    from mcp import MCPError
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
    from pydantic import ValidationError

    session = client.session
    version = MODERN
    attempt = 0
    while attempt < 2:
        try:
            raw = await session.send_discover(version)
        except MCPError as exc:
            code, message = exc.code, exc.error.message
            if code == types.REQUEST_TIMEOUT:
                continue  # a slow start, not an answer: the connect deadline ends the wait
            if code == types.UNSUPPORTED_PROTOCOL_VERSION and attempt == 0:
                supported = _supported(exc)
                mutual = [v for v in MODERN_PROTOCOL_VERSIONS if v in supported]
                if mutual:
                    version = mutual[-1]
                    attempt += 1
                    continue
                raise NotModern(f"the server does not speak 2026-07-28 (it supports {', '.join(supported)})") from None
            if code == types.METHOD_NOT_FOUND:
                raise NotModern("the server does not speak 2026-07-28 (server/discover: method not found)") from None
            raise NotModern(f"the server does not speak 2026-07-28 (server/discover: {message})") from None
        try:
            session.adopt(types.DiscoverResult.model_validate(raw))
        except ValidationError:
            raise NotModern("the server does not speak 2026-07-28 (its server/discover answer is not one)") from None
        except RuntimeError as exc:  # no 2026-07-28 among its versions
            raise NotModern(f"the server does not speak 2026-07-28 ({exc})") from None
        return


def _supported(exc: Any) -> list[str]:
    import mcp_types as types
    from pydantic import ValidationError

    try:
        return list(types.UnsupportedProtocolVersionErrorData.model_validate(exc.error.data).supported)
    except ValidationError:
        return []


__all__ = ["MODERN", "NotModern", "client_mode", "discover"]
