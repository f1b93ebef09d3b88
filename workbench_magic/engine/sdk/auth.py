"""The SDK's OAuth provider where we reach past its public names (checked with mcp 2.3;
tests/engine/sdk/test_sdk_auth.py fails when one of them changes). `OAuthClientProvider` has no
hooks, so each function here returns a subclass overriding its private steps:

- `_perform_authorization()` and `_refresh_token()`: build the token request of a new grant and
  of a refresh (`before_token_requests`, `token_request_provider`);
- `_initialize()`: loads the stored tokens and client once, and sets `_initialized`
  (`after_initialize`, `token_request_provider`);
- `_select_authorization_server(advertised)`: picks one of the resource's authorization servers;
- `_get_token_endpoint()`: the token endpoint of the authorization server's metadata.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def before_token_requests(provider_class: type[Any], before: Callable[[Any], None]) -> type[Any]:
    """`provider_class` (an `OAuthClientProvider`) calling `before(provider)` ahead of building each
    token request: a new grant's and a refresh's (its context then holds the server's metadata)."""

    class BeforeTokenRequests(provider_class):  # type: ignore[misc, valid-type]
        async def _perform_authorization(self) -> Any:
            before(self)
            return await super()._perform_authorization()

        async def _refresh_token(self) -> Any:
            before(self)
            return await super()._refresh_token()

    return BeforeTokenRequests


def after_initialize(provider_class: type[Any], after: Callable[[Any], None]) -> type[Any]:
    """`provider_class` (an `OAuthClientProvider`) calling `after(provider)` once it has loaded its
    stored tokens and client."""

    class AfterInitialize(provider_class):  # type: ignore[misc, valid-type]
        async def _initialize(self) -> None:
            await super()._initialize()
            after(self)

    return AfterInitialize


def token_request_provider(
    client_info: Any,
    choose: Callable[[list[str]], str],
    token_request: Callable[[Any, str], Any],
) -> type[Any]:
    """An `OAuthClientProvider` for a grant the SDK does not know: its client is `client_info`
    (never registered), `choose(advertised)` picks the authorization server, and
    `token_request(context, token_endpoint)` builds the `httpx2.Request` of each new token (the
    provider's `OAuthContext`, and the token endpoint the SDK found)."""
    from mcp.client.auth import OAuthClientProvider

    class TokenRequestProvider(OAuthClientProvider):
        async def _initialize(self) -> None:
            self.context.current_tokens = await self.context.storage.get_tokens()
            self.context.client_info = client_info
            self._initialized = True

        def _select_authorization_server(self, advertised: list[str]) -> str:
            return choose(advertised)

        async def _perform_authorization(self) -> Any:
            return token_request(self.context, self._get_token_endpoint())

    return TokenRequestProvider


__all__ = ["after_initialize", "before_token_requests", "token_request_provider"]
