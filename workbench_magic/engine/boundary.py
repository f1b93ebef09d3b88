"""The one boundary where SDK and transport failures become workbench errors.

Every request a connection sends (a tool call, a resource read, a prompt, a completion, a
listing) fails through `failure()`, one table for all of them:

- a `WorkbenchError` (ours, phrased already): itself;
- the request's time limit (`TimeoutError`): `CallTimeoutError`, `... timed out after N s`;
- JSON-RPC -32000 or a closed stream: `connection closed`, and the connection is lost (the
  next request reconnects);
- JSON-RPC -32042: `UrlElicitationRequired` with the links;
- an HTTP error status, which the SDK reports (but 404) as `Server returned an error response`
  without the status: the status the transport heard (`HttpStatus`), `HTTP 401 Unauthorized
  (check the server's token/headers)`;
- any other JSON-RPC error: its message, its code kept in `.code`;
- anything else from the SDK or the transport: a one-line reason, never a bare class name.

A connection that fails to connect says why with the same reasons (`reason()`).

A call's failure is a `ToolError`, any other request's a `RequestError`; the message starts with
the request's one text (`errors.REQUEST_TEXTS`). What is not a request of one connection (a
subscription, a log level set on many) goes through `contained()`: the same one-line reason.
"""

from __future__ import annotations

import asyncio
import http
from collections.abc import Coroutine
from typing import Any, TypeVar

from workbench_magic.vocabulary.errors import (
    CallTimeoutError,
    RequestError,
    ToolError,
    UrlElicitationRequired,
    WorkbenchError,
    describe_exception,
    leaf_exception,
    request_text,
)

CONNECTION_CLOSED = -32000
"""JSON-RPC code the SDK answers a request with when its transport closed (`mcp_types.CONNECTION_CLOSED`)."""
URL_ELICITATION_REQUIRED = -32042
"""MCP's "open these links first" error (`mcp_types.URL_ELICITATION_REQUIRED`)."""

INTERNAL_ERROR = -32603
"""JSON-RPC's internal error (`mcp_types.INTERNAL_ERROR`), which the SDK's stand-in for an HTTP error carries."""
SDK_HTTP_ERROR = "Server returned an error response"
"""What the SDK's streamable HTTP transport says for an HTTP error status (all but 404), status untold."""
CHECK_CREDENTIALS = frozenset({401, 403})
"""Statuses whose reason says what to check."""

T = TypeVar("T")


class HttpStatus:
    """The last HTTP error status a connection's server answered (its transport records it)."""

    __slots__ = ("status",)

    def __init__(self) -> None:
        self.status: int | None = None

    def heard(self, status: int) -> None:
        if status >= 400:
            self.status = status


def http_reason(status: int) -> str:
    """`HTTP 401 Unauthorized (check the server's token/headers)`: an HTTP error status as a reason."""
    try:
        phrase = f" {http.HTTPStatus(status).phrase}"
    except ValueError:
        phrase = ""
    hint = " (check the server's token/headers)" if status in CHECK_CREDENTIALS else ""
    return f"HTTP {status}{phrase}{hint}"


def reason(exc: BaseException, heard: HttpStatus | None = None) -> str:
    """The one-line reason for an SDK or transport failure (`exc`, a leaf): the HTTP status behind
    the SDK's `Server returned an error response` when the transport heard one, else its text."""
    if heard is not None and heard.status is not None and _code(exc) == INTERNAL_ERROR:
        if getattr(getattr(exc, "error", None), "message", None) == SDK_HTTP_ERROR:
            return http_reason(heard.status)
    return describe_exception(exc)


_CLOSED_STREAMS = frozenset({"ClosedResourceError", "BrokenResourceError", "EndOfStream"})
"""anyio's stream errors: the transport under the session is gone."""


def failure(
    exc: BaseException,
    *,
    kind: str,
    name: str,
    server: str,
    toolbox: str,
    limit: float | None = None,
    heard: HttpStatus | None = None,
) -> tuple[WorkbenchError, bool]:
    """The workbench error for a failed request, and whether the connection was lost.

    `kind` is one of `errors.REQUEST_TEXTS` (call, read, prompt, complete, list); `name` names
    what was asked (the tool, the URI, the prompt); `limit` is the request's time limit; `heard`,
    the HTTP statuses of the connection's transport.
    """
    leaf = leaf_exception(exc)
    if isinstance(leaf, WorkbenchError):
        return leaf, False
    prefix = request_text(kind, name, server, toolbox)
    if isinstance(leaf, TimeoutError):
        after = f" after {limit:g} s" if limit else ""
        cancelled = " (cancelled on the server)" if kind == "call" else ""
        return CallTimeoutError(f"{prefix}: timed out{after}{cancelled}"), False
    error_type = ToolError if kind == "call" else RequestError
    code = _code(leaf)
    if code == CONNECTION_CLOSED or type(leaf).__name__ in _CLOSED_STREAMS:
        return error_type(f"{prefix}: connection closed", code=code), True
    if code == URL_ELICITATION_REQUIRED:
        return url_elicitation_required(prefix, leaf), False
    return error_type(f"{prefix}: {reason(leaf, heard)}", code=code), False


def _code(exc: BaseException) -> int | None:
    """The JSON-RPC error code of an `MCPError` (the SDK is loaded whenever a request was sent)."""
    from mcp import MCPError

    return exc.code if isinstance(exc, MCPError) else None


def url_elicitation_required(prefix: str, exc: Any) -> UrlElicitationRequired:
    """MCP error -32042 as `UrlElicitationRequired`: the links to visit, in the message and `.urls`."""
    data = getattr(getattr(exc, "error", None), "data", None) or getattr(exc, "data", None) or {}
    items = data.get("elicitations", []) if isinstance(data, dict) else []
    urls = [str(item.get("url")) for item in items if isinstance(item, dict) and item.get("url")]
    notes = [str(item.get("message") or "") for item in items if isinstance(item, dict) and item.get("url")]
    shown = "; ".join(f"{url}" + (f" ({note})" if note else "") for url, note in zip(urls, notes, strict=True))
    return UrlElicitationRequired(
        f"{prefix}: the server needs you to open {'this link' if len(urls) == 1 else 'these links'} first, "
        f"then call again: {shown or describe_exception(exc)}",
        urls,
    )


async def contained(coro: Coroutine[Any, Any, T]) -> T:
    """`coro`'s value; an SDK or transport failure as a one-line `WorkbenchError` (ours pass as they are)."""
    try:
        return await coro
    except (WorkbenchError, asyncio.CancelledError):
        raise
    except Exception as exc:
        error = WorkbenchError(describe_exception(exc))
    raise error
