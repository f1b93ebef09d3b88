"""The HTTP face of `workbench-magic serve`: a bearer token at the door, DNS-rebinding checks kept.

`serve --transport http --token T` (or `WORKBENCH_SERVE_TOKEN=T`) answers 401 to every request
without `Authorization: Bearer T`. Binding to anything but loopback without a token refuses to
start: the workbench runs commands on this machine for whoever can reach it.

Streams resume: a 2025-11-25 client whose SSE stream broke reconnects with `Last-Event-ID` and gets
what it missed (event_store.py); each stream opens with a priming event that says when to retry.
"""

from __future__ import annotations

import asyncio
import errno
import hmac
import json
import os
import socket
from typing import Any

from workbench_magic.vocabulary.errors import UsageError

TOKEN_ENV = "WORKBENCH_SERVE_TOKEN"
LOOPBACK = ("127.0.0.1", "localhost", "::1")

RETRY_MS = 1000
"""The `retry:` (milliseconds) of serve's priming events: how long a client whose SSE stream broke
waits before it reconnects with `Last-Event-ID`. A second resumes a stream a proxy or a flaky
network cut before a user notices, without a lost client hammering serve; what it missed waits in
the event store meanwhile (`MAX_EVENTS`)."""


def serve_token(given: str | None) -> str | None:
    """The token from `--token`, else `$WORKBENCH_SERVE_TOKEN` (an empty value means none)."""
    token = given if given is not None else os.environ.get(TOKEN_ENV)
    return token or None


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind without a token, in one line that says how to pass one."""
    if host not in LOOPBACK and not token:
        raise UsageError(
            f"Refusing to serve on {host} without a token: anyone who can reach it could run the workbench's "
            f"servers. Pass --token TOKEN or set {TOKEN_ENV}, or bind to 127.0.0.1."
        )


def bind(host: str, port: int) -> socket.socket:
    """The listening socket of `serve --transport http`, bound before anything starts (as uvicorn
    binds it): a port out of range or taken is one line, and serve ends with nothing running."""
    if not 1 <= port <= 65535:
        raise UsageError(f"{port} is not a port (1-65535)")
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"port {port} on {host} is in use") from None
        raise UsageError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    return sock


class BearerGate:
    """ASGI middleware: HTTP requests need `Authorization: Bearer <token>` (compared in constant time)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        given = next((v for k, v in scope.get("headers", ()) if k.lower() == b"authorization"), b"")
        if hmac.compare_digest(given, self._expected):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"error": "unauthorized", "error_description": "Authorization: Bearer <token> required"})
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="workbench-magic"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body.encode()})


def transport_security(host: str) -> Any:
    """Host/Origin checks (DNS-rebinding protection) for any bind: loopback names always, plus the
    bound address and this machine's names when serving beyond loopback."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = ["127.0.0.1", "localhost", "[::1]"]
    if host not in LOOPBACK:
        names = {socket.gethostname(), socket.getfqdn()}
        if host not in ("0.0.0.0", "::"):
            names.add(f"[{host}]" if ":" in host else host)
        hosts += sorted(n for n in names if n)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:*" for h in hosts],
        allowed_origins=[f"{scheme}://{h}:*" for h in hosts for scheme in ("http", "https")],
    )


async def serve_http(
    server: Any, host: str, sock: socket.socket, token: str | None, *, stop: asyncio.Event | None = None
) -> None:
    """Serve `server` (an `MCPServer`) over streamable HTTP at `/mcp` on `sock` (`bind(host, ...)`),
    behind the token if there is one (on the workbench's loop, see `serve`), its streams resumable
    (`MemoryEventStore`, `RETRY_MS`), until `stop` is set: uvicorn then closes its sockets and
    connections and ends (serve is going away: no wait for open requests and streams)."""
    import uvicorn

    from workbench_magic.serve.event_store import MemoryEventStore, SessionScope

    port = sock.getsockname()[1]
    app: Any = server.streamable_http_app(
        transport_security=transport_security(host),
        host=host,
        event_store=MemoryEventStore(),
        retry_interval=RETRY_MS,
    )
    app = SessionScope(app)
    if token:
        app = BearerGate(app, token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    web = uvicorn.Server(config)
    if stop is None:
        await web.serve(sockets=[sock])
        return

    async def stop_when_told() -> None:
        await stop.wait()
        web.should_exit = web.force_exit = True

    watcher = asyncio.ensure_future(stop_when_told())
    try:
        await web.serve(sockets=[sock])
    finally:
        watcher.cancel()
