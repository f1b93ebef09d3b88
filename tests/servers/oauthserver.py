"""An OAuth-protected MCP server over streamable HTTP, with its own in-memory authorization server.

Usage::

    python tests/servers/oauthserver.py --port N [--ttl SECONDS]

The SDK's server-side auth serves discovery (protected resource metadata at
``/.well-known/oauth-protected-resource/mcp``, authorization server metadata), dynamic client
registration (``/register``), ``/authorize`` (PKCE; approved at once: it redirects to the client's
``redirect_uri`` with a code) and ``/token`` (authorization code and refresh grants). Access tokens
live ``--ttl`` seconds (default 2) so clients must refresh; each refresh token works once.

Tools:

* ``whoami()``: the client id the access token was issued to
* ``stats()`` (and ``GET /stats``, without a token): ``{"registered", "authorized", "refreshed", "rejected"}``:
  clients registered, codes exchanged, refreshes done, and requests refused for an expired or unknown token
"""

from __future__ import annotations

import argparse
import math
import secrets
import time
from typing import Any

import uvicorn
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse


class MemoryProvider:
    """Clients, codes and tokens in dictionaries; authorization is approved without asking."""

    def __init__(self, ttl: int) -> None:
        self.ttl = ttl
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.counts = {"registered": 0, "authorized": 0, "refreshed": 0, "rejected": 0}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.counts["registered"] += 1

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[code.code]
        self.counts["authorized"] += 1
        return self._issue(code.client_id, code.scopes, code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refresh[refresh_token.token]
        self.counts["refreshed"] += 1
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            self.counts["rejected"] += 1
            return None
        return found

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        expires = math.ceil(time.time()) + self.ttl  # at least `ttl` seconds (int() cut it to ttl - 1 and a bit)
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.ttl,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )


def build(port: int, ttl: int) -> MCPServer:
    base = f"http://127.0.0.1:{port}"
    provider = MemoryProvider(ttl)
    server = MCPServer(
        name="oauthserver",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            validate_token_resource=False,
            client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["read", "write"]),
            required_scopes=[],
        ),
    )

    @server.tool()
    def whoami() -> str:
        """The client id the access token was issued to."""
        token = get_access_token()
        return token.client_id if token else "anonymous"

    @server.tool()
    def stats() -> dict[str, int]:
        """Clients registered, codes exchanged, refreshes, refused tokens."""
        return dict(provider.counts)

    @server.custom_route("/stats", methods=["GET"])
    async def stats_page(request: Request) -> JSONResponse:
        """`stats()` without a token: what a test reads without spending the client's token's lifetime."""
        return JSONResponse(dict(provider.counts))

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ttl", type=int, default=2)
    args = parser.parse_args()
    app = build(args.port, args.ttl).streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
