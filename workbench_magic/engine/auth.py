"""Authentication to remote (http/sse) servers: a static bearer token, or OAuth run by the SDK.

A server's `"auth"` setting is parsed by the config (`workbench_magic.config.auth`); here it is
used. `"auth": {"bearer": "${TOKEN}"}` sends `Authorization: Bearer <token>`. `"auth": "oauth"` (or
`{"oauth": {"client_id", "client_secret", "scopes", "redirect_port", "paste"}}`) hands the
connection to the SDK's `OAuthClientProvider`: discovery, dynamic client registration (unless a
`client_id` is given), PKCE, refresh. The authorize link is shown to whoever waits on the
connection (a clickable link in a notebook cell, a line on stderr elsewhere); the redirect comes
back to a loopback server on this machine, or, with `"paste": true` (a kernel on another machine),
the person pastes the URL the browser was sent to.

Tokens and the registered client are kept per server URL in a JSON file readable only by the user,
under `$WORKBENCH_TOKEN_DIR` or the user's config directory (`~/.config/workbench-magic/tokens`);
`forget(url)` (`wb.logout(target)`) deletes it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from workbench_magic.config.auth import AuthConfig, OAuthOptions
from workbench_magic.engine.runtime import current_channel, opening_channel
from workbench_magic.vocabulary.errors import WorkbenchError

logger = logging.getLogger("workbench_magic")

TOKEN_DIR_ENV = "WORKBENCH_TOKEN_DIR"
CALLBACK_PATH = "/callback"
AUTHORIZE_TIMEOUT = 300.0
"""Seconds to wait for the person to authorize in the browser."""


# ---- where tokens live --------------------------------------------------------------------------
def token_dir() -> Path:
    """`$WORKBENCH_TOKEN_DIR`, else `$XDG_CONFIG_HOME/workbench-magic/tokens` (`~/.config/...`)."""
    override = os.environ.get(TOKEN_DIR_ENV)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "workbench-magic" / "tokens"


def token_path(server_url: str) -> Path:
    """The token file of one server URL (named by its host and a hash of the URL)."""
    host = (urlparse(server_url).hostname or "server").replace(":", "_")
    digest = hashlib.sha256(server_url.encode()).hexdigest()[:16]
    return token_dir() / f"{host}-{digest}.json"


def forget(server_url: str) -> bool:
    """Delete the stored tokens and client of `server_url`; whether there were any."""
    try:
        token_path(server_url).unlink()
    except FileNotFoundError:
        return False
    return True


def _write_private(path: Path, data: dict[str, Any]) -> None:
    """Write `data` as JSON readable and writable by the user only (0600, directory 0700)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


class FileTokenStorage:
    """The SDK's `TokenStorage` in one private JSON file per server URL. Access tokens are kept
    with their absolute expiry, so a new process refreshes an expired one instead of re-authorizing."""

    def __init__(self, server_url: str) -> None:
        self.server_url = server_url
        self.path = token_path(server_url)

    def __repr__(self) -> str:
        return f"FileTokenStorage({self.server_url!r}, path={str(self.path)!r})"

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (FileNotFoundError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _update(self, **items: Any) -> None:
        data = self._read()
        data.update(items, server_url=self.server_url)
        _write_private(self.path, data)

    def load_tokens(self) -> tuple[Any, float | None]:
        """The stored tokens (an `OAuthToken`, or None) and their absolute expiry time."""
        from mcp.shared.auth import OAuthToken

        data = self._read()
        if not isinstance(data.get("tokens"), dict):
            return None, None
        tokens = OAuthToken.model_validate(data["tokens"])
        expires_at = data.get("expires_at")
        return tokens, float(expires_at) if isinstance(expires_at, int | float) else None

    async def get_tokens(self) -> Any:
        tokens, expires_at = self.load_tokens()
        if tokens is not None and expires_at is not None:
            tokens = tokens.model_copy(update={"expires_in": max(0, int(expires_at - time.time()))})
        return tokens

    async def set_tokens(self, tokens: Any) -> None:
        expires_at = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        self._update(tokens=tokens.model_dump(mode="json", exclude_none=True), expires_at=expires_at)

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        data = self._read().get("client_info")
        return OAuthClientInformationFull.model_validate(data) if isinstance(data, dict) else None

    async def set_client_info(self, client_info: Any) -> None:
        self._update(client_info=client_info.model_dump(mode="json", exclude_none=True))

    def secrets(self) -> frozenset[str]:
        """The stored access and refresh tokens and client secret (to mask)."""
        data = self._read()
        tokens, client = data.get("tokens"), data.get("client_info")
        tokens = tokens if isinstance(tokens, dict) else {}
        client = client if isinstance(client, dict) else {}
        values = (tokens.get("access_token"), tokens.get("refresh_token"), client.get("client_secret"))
        return frozenset(v for v in values if isinstance(v, str) and v)


# ---- the redirect back ----------------------------------------------------------------------------
@dataclass
class LoopbackCatcher:
    """A one-shot HTTP server on 127.0.0.1 that catches the authorization redirect."""

    port: int
    _server: asyncio.AbstractServer | None = None
    _result: asyncio.Future[dict[str, str]] | None = field(default=None, repr=False)

    async def start(self) -> None:
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = (await reader.readline()).decode("latin-1")
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
            parts = request_line.split()
            target = urlparse(parts[1]) if len(parts) >= 2 else urlparse("/")
            params = {k: v[0] for k, v in parse_qs(target.query).items()}
            caught = target.path == CALLBACK_PATH and ("code" in params or "error" in params)
            body = (
                b"<html><body><h3>Authorized: you can close this tab and return to the notebook.</h3></body></html>"
                if caught and "code" in params
                else b"<html><body><h3>Authorization did not complete.</h3></body></html>"
            )
            status = b"200 OK" if caught else b"404 Not Found"
            writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html\r\nConnection: close\r\n")
            writer.write(b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            await writer.drain()
            if caught and self._result is not None and not self._result.done():
                self._result.set_result(params)
        finally:
            writer.close()

    async def wait(self, timeout: float = AUTHORIZE_TIMEOUT) -> dict[str, str]:
        """The redirect's query parameters (`code`, `state`, `iss`, or `error`)."""
        assert self._result is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._result), timeout)
        finally:
            await self.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _redirect_port(storage: FileTokenStorage, options: OAuthOptions) -> int:
    """A fixed port, else the one the stored client was registered with, else a free one."""
    if options.redirect_port:
        return options.redirect_port
    client = storage._read().get("client_info") or {}
    for uri in client.get("redirect_uris") or ():
        port = urlparse(str(uri)).port
        if port:
            return port
    return _free_port()


def show_authorize_link(where: str, url: str) -> None:
    """The link for the person, where they wait: a clickable link in the notebook cell that opened
    the server, and a log line (stderr) everywhere."""
    logger.warning("%s needs authorization: open %s", where, url)
    channel = current_channel.get() or opening_channel.get()
    if channel is not None:
        channel.post(lambda: _display_link(where, url))


def _display_link(where: str, url: str) -> None:
    """In a kernel (on the kernel thread): an HTML link in the current cell's output."""
    from html import escape

    from IPython import get_ipython
    from IPython.display import HTML, display

    if getattr(get_ipython(), "kernel", None) is None:
        return
    link = f'<a href="{escape(url)}" target="_blank" rel="noopener">authorize in the browser</a>'
    display(HTML(f"<b>{escape(where)}</b> needs authorization: {link}"))


def _parse_pasted(text: str) -> dict[str, str]:
    params = {k: v[0] for k, v in parse_qs(urlparse(text.strip()).query).items()}
    if "code" not in params and "error" not in params:
        raise WorkbenchError("The pasted URL has no 'code': paste the whole address the browser was sent to")
    return params


# ---- the SDK's provider ---------------------------------------------------------------------------
def oauth_provider(server_url: str, options: OAuthOptions, where: str) -> Any:
    """An `OAuthClientProvider` (an httpx auth) for `server_url`, with our storage and redirect catcher."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata

    storage = FileTokenStorage(server_url)
    port = _redirect_port(storage, options)
    redirect_uri = f"http://127.0.0.1:{port}{CALLBACK_PATH}"
    wanted = list(options.scopes)

    class Metadata(OAuthClientMetadata):
        """The SDK replaces the scope with what the server challenges; the configured scopes stay asked for."""

        def __setattr__(self, name: str, value: Any) -> None:
            if name == "scope" and wanted:
                value = " ".join(dict.fromkeys([*(value or "").split(), *wanted]))
            super().__setattr__(name, value)

    metadata = Metadata.model_validate(
        {
            "client_name": "workbench-magic",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "scope": " ".join(options.scopes) or None,
            "token_endpoint_auth_method": "client_secret_post" if options.client_secret else "none",
        }
    )
    if options.client_id and not storage._read().get("client_info"):
        info = OAuthClientInformationFull.model_validate(
            {**metadata.model_dump(mode="json", exclude_none=True), "client_id": options.client_id}
            | ({"client_secret": options.client_secret} if options.client_secret else {})
        )
        storage._update(client_info=info.model_dump(mode="json", exclude_none=True))
    catcher = LoopbackCatcher(port)

    async def redirect(url: str) -> None:
        if not options.paste:
            await catcher.start()
        show_authorize_link(where, url)

    async def callback() -> AuthorizationCodeResult:
        params = await (_ask_paste(where) if options.paste else catcher.wait())
        if "error" in params:
            raise WorkbenchError(
                f"Authorization of {where} failed: {params.get('error_description') or params['error']}"
            )
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    class Provider(OAuthClientProvider):
        async def _initialize(self) -> None:
            await super()._initialize()
            # Stored tokens carry their remaining lifetime: track it so an expired access token is
            # refreshed before use rather than sent and refused.
            if self.context.current_tokens is not None and self.context.current_tokens.expires_in is not None:
                self.context.update_token_expiry(self.context.current_tokens)

    return Provider(server_url, metadata, storage, redirect_handler=redirect, callback_handler=callback)


async def _ask_paste(where: str) -> dict[str, str]:
    channel = current_channel.get() or opening_channel.get()
    if channel is None:
        raise WorkbenchError(f"Authorization of {where} needs the redirected URL pasted, and nobody can paste here")
    prompt = f"{where}: after authorizing, paste the URL your browser was sent to: "
    text = await asyncio.wrap_future(channel.submit(lambda: input(prompt)))
    return _parse_pasted(str(text))


def http_auth(config: Any, where: str) -> tuple[dict[str, str], Any]:
    """Extra headers and the httpx auth for a server's `auth` (both empty without one)."""
    auth: AuthConfig | None = getattr(config, "auth", None)
    if auth is None:
        return {}, None
    if auth.bearer is not None:
        return {"Authorization": f"Bearer {auth.bearer}"}, None
    assert auth.oauth is not None and config.url is not None
    return {}, oauth_provider(config.url, auth.oauth, where)
