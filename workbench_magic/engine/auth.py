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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs, urlparse

from workbench_magic.config.auth import AuthConfig, OAuthOptions
from workbench_magic.engine.runtime import current_channel, opening_channel
from workbench_magic.engine.sdk.auth import after_initialize, before_token_requests, token_request_provider
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


# ---- the SDK's providers ----------------------------------------------------------------------------
Authorize = Callable[[str, str], Awaitable[bool]]
"""`authorize(where, url)`: hands the authorization link to `authorization_handler` (False: none set)."""

_SECRET_METHODS = ("client_secret_basic", "client_secret_post")


def token_endpoint_auth_method(configured: str | None, supported: list[str] | None, has_secret: bool) -> str:
    """How a pre-registered client authenticates at the token endpoint: as configured, else the first
    the authorization server supports of basic, post (a client with a secret; RFC 8414's default when
    it names none is basic), else none."""
    if configured:
        return configured
    if not has_secret:
        return "none"
    if not supported:
        return "client_secret_basic"
    return next((m for m in _SECRET_METHODS if m in supported), "none" if "none" in supported else _SECRET_METHODS[0])


def secret_text(value: str) -> str:
    """A key or token given in the config: the text of the file it names (read at each use: platforms
    rotate workload tokens in place), else the value itself."""
    if "\n" in value or len(value) > 1024:
        return value
    path = Path(value).expanduser()
    try:
        named = path.is_file()
    except OSError:  # no file can have that name (a token's length): the value itself
        return value
    if not named:
        return value
    try:
        return path.read_text().strip()
    except OSError as exc:
        raise WorkbenchError(f"Cannot read {value}: {exc.strerror}") from None


def oauth_provider(server_url: str, options: OAuthOptions, where: str, authorize: Authorize | None = None) -> Any:
    """The SDK's OAuth provider (an httpx auth) for `server_url` and the configured `grant`, with our
    token storage (and, for the browser, our redirect catcher)."""
    storage = FileTokenStorage(server_url)
    if options.grant == "client_credentials":
        return _client_credentials(server_url, options, storage)
    if options.grant == "workload_identity":
        return _workload_identity(server_url, options, storage)
    if options.grant == "enterprise_managed":
        return _enterprise_managed(server_url, options, storage)
    return _authorization_code(server_url, options, where, storage, authorize)


def _chosen_method(provider_class: type[Any], options: OAuthOptions) -> type[Any]:
    """`provider_class` whose pre-registered client authenticates at the token endpoint the way
    `token_endpoint_auth_method` chooses, once the authorization server's metadata is known."""

    def settle(provider: Any) -> None:
        info = provider.context.client_info
        if info is None or info.client_id != options.client_id or info.token_endpoint_auth_method == "private_key_jwt":
            return
        metadata = provider.context.oauth_metadata
        supported = metadata.token_endpoint_auth_methods_supported if metadata is not None else None
        method = token_endpoint_auth_method(options.token_endpoint_auth_method, supported, bool(info.client_secret))
        if method != info.token_endpoint_auth_method:
            provider.context.client_info = info.model_copy(update={"token_endpoint_auth_method": method})

    return before_token_requests(provider_class, settle)


def _scope(options: OAuthOptions) -> str | None:
    return " ".join(options.scopes) or None


def _authorization_code(
    server_url: str, options: OAuthOptions, where: str, storage: FileTokenStorage, authorize: Authorize | None
) -> Any:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata

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
            "scope": _scope(options),
            "token_endpoint_auth_method": token_endpoint_auth_method(
                options.token_endpoint_auth_method, None, bool(options.client_secret)
            ),
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
        if authorize is None or not await authorize(where, url):
            show_authorize_link(where, url)

    async def callback() -> AuthorizationCodeResult:
        params = await (_ask_paste(where) if options.paste else catcher.wait())
        if "error" in params:
            raise WorkbenchError(
                f"Authorization of {where} failed: {params.get('error_description') or params['error']}"
            )
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    def track_expiry(provider: Any) -> None:
        # Stored tokens carry their remaining lifetime: track it so an expired access token is
        # refreshed before use rather than sent and refused.
        tokens = provider.context.current_tokens
        if tokens is not None and tokens.expires_in is not None:
            provider.context.update_token_expiry(tokens)

    Provider = after_initialize(_chosen_method(OAuthClientProvider, options), track_expiry)
    return Provider(
        server_url,
        metadata,
        storage,
        redirect_handler=redirect,
        callback_handler=callback,
        client_metadata_url=options.client_metadata_url,
    )


def _quietly(build: Callable[[], Any]) -> Any:
    """Build an SDK provider without its warning for an unnamed issuer: the one the server names is
    then used (documented), and the notebook is not the place to say the SDK will change."""
    import warnings

    from mcp.shared.exceptions import MCPDeprecationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return build()


def _client_credentials(server_url: str, options: OAuthOptions, storage: FileTokenStorage) -> Any:
    """The client itself signs in: with its secret, or with a private-key JWT (RFC 7523)."""
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    assert options.client_id is not None
    client_id = options.client_id
    if options.private_key is not None:
        key = options.private_key

        async def assertion(audience: str) -> str:
            signed = SignedJWTParameters(
                issuer=client_id,
                subject=client_id,
                signing_key=secret_text(key),
                signing_algorithm=options.signing_algorithm,
            )
            try:
                return await signed.create_assertion_provider()(audience)
            except (ValueError, TypeError) as exc:
                raise WorkbenchError(f"Cannot sign with the private_key of {server_url}: {exc}") from None

        return _quietly(
            lambda: PrivateKeyJWTOAuthProvider(
                server_url, storage, client_id, assertion, scope=_scope(options), issuer=options.issuer
            )
        )
    assert options.client_secret is not None
    secret = options.client_secret
    method = options.token_endpoint_auth_method if options.token_endpoint_auth_method in _SECRET_METHODS else None
    provider_class = _chosen_method(ClientCredentialsOAuthProvider, options)
    return _quietly(
        lambda: provider_class(
            server_url,
            storage,
            client_id,
            secret,
            token_endpoint_auth_method=method or "client_secret_basic",
            scope=_scope(options),
            issuer=options.issuer,
        )
    )


def _workload_identity(server_url: str, options: OAuthOptions, storage: FileTokenStorage) -> Any:
    """A workload signs in with the JWT its platform issued, as an RFC 7523 jwt-bearer grant (no client
    secret, no registration, no browser). A refused grant is an error: never retried as another grant."""
    import httpx2
    from mcp.client.auth.utils import issuers_match
    from mcp.shared.auth import JWT_BEARER_GRANT_TYPE, OAuthClientInformationFull, OAuthClientMetadata

    assert options.workload_token is not None
    token_source = options.workload_token
    grant = {"redirect_uris": None, "grant_types": [JWT_BEARER_GRANT_TYPE], "token_endpoint_auth_method": "none"}
    metadata = OAuthClientMetadata.model_validate({**grant, "scope": _scope(options)})
    fixed = OAuthClientInformationFull.model_validate(
        {**grant, "scope": _scope(options), "client_id": options.client_id or "workbench-magic"}
    )

    def choose(advertised: list[str]) -> str:
        named = [a for a in advertised if options.issuer and issuers_match(a, options.issuer)]
        return (named or advertised)[0]

    def token_request(context: Any, token_endpoint: str) -> httpx2.Request:
        data = {"grant_type": JWT_BEARER_GRANT_TYPE, "assertion": secret_text(token_source)}
        if options.client_id:
            data["client_id"] = options.client_id
        if context.should_include_resource_param(context.protocol_version):
            data["resource"] = context.get_resource_url()
        if context.client_metadata.scope:
            data["scope"] = context.client_metadata.scope
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        return httpx2.Request("POST", token_endpoint, data=data, headers=headers)

    WorkloadIdentityProvider = token_request_provider(fixed, choose, token_request)
    return WorkloadIdentityProvider(server_url, metadata, storage, None, None)


_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
_ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
_ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


def _enterprise_managed(server_url: str, options: OAuthOptions, storage: FileTokenStorage) -> Any:
    """Enterprise-managed authorization (SEP-990): the person's ID token is exchanged at the identity
    provider for an identity assertion grant (ID-JAG, RFC 8693), which the MCP server's authorization
    server (`issuer`) takes as a jwt-bearer grant, through the SDK's `IdentityAssertionOAuthProvider`."""
    import httpx2
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    idp = options.identity_provider
    assert idp is not None and options.client_id and options.client_secret
    if not options.issuer:
        raise WorkbenchError(
            f"{server_url}: the enterprise_managed grant needs the authorization server's 'issuer' in its oauth options"
        )

    async def id_jag(audience: str, resource: str) -> str:
        data = {
            "grant_type": _TOKEN_EXCHANGE,
            "subject_token": secret_text(idp.id_token),
            "subject_token_type": _ID_TOKEN,
            "requested_token_type": _ID_JAG,
            "audience": audience,
            "resource": resource,
        }
        if options.scopes:
            data["scope"] = " ".join(options.scopes)
        extra: dict[str, Any] = {}
        if idp.client_id and idp.client_secret:
            extra["auth"] = httpx2.BasicAuth(idp.client_id, idp.client_secret)
        elif idp.client_id:
            data["client_id"] = idp.client_id
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.post(idp.token_endpoint, data=data, **extra)
        body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
        if response.status_code != 200 or not isinstance(body.get("access_token"), str):
            reason = body.get("error_description") or body.get("error") or f"HTTP {response.status_code}"
            raise WorkbenchError(f"The identity provider refused the token exchange for {server_url}: {reason}")
        return str(body["access_token"])

    method = options.token_endpoint_auth_method if options.token_endpoint_auth_method in _SECRET_METHODS else None
    return IdentityAssertionOAuthProvider(
        server_url,
        storage,
        options.client_id,
        options.client_secret,
        options.issuer,
        id_jag,
        scope=_scope(options),
        token_endpoint_auth_method=cast(Any, method or "client_secret_basic"),
    )


async def _ask_paste(where: str) -> dict[str, str]:
    channel = current_channel.get() or opening_channel.get()
    if channel is None:
        raise WorkbenchError(f"Authorization of {where} needs the redirected URL pasted, and nobody can paste here")
    prompt = f"{where}: after authorizing, paste the URL your browser was sent to: "
    text = await asyncio.wrap_future(channel.submit(lambda: input(prompt)))
    return _parse_pasted(str(text))


def http_auth(config: Any, where: str, authorize: Authorize | None = None) -> tuple[dict[str, str], Any]:
    """Extra headers and the httpx auth for a server's `auth` (both empty without one)."""
    auth: AuthConfig | None = getattr(config, "auth", None)
    if auth is None:
        return {}, None
    if auth.bearer is not None:
        return {"Authorization": f"Bearer {auth.bearer}"}, None
    assert auth.oauth is not None and config.url is not None
    provider = oauth_provider(config.url, auth.oauth, where, authorize)
    if auth.oauth.dpop:
        from workbench_magic.engine.dpop import bound

        provider = bound(provider)
    return {}, provider
