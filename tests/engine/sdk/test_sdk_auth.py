"""Contract tests of engine/sdk/auth.py: the private steps of the SDK's `OAuthClientProvider` that
the workbench's providers override or call, on real SDK providers.

A failure here means the MCP SDK changed one of them: re-check engine/sdk/auth.py (and
engine/auth.py, which builds its providers with it)."""

from __future__ import annotations

import inspect
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthMetadata

from workbench_magic.engine.sdk.auth import after_initialize, before_token_requests, token_request_provider

RECHECK = "the MCP SDK changed OAuthClientProvider.{}: re-check workbench_magic/engine/sdk/auth.py"

STEPS = {
    # the private step: (its parameters, async, how the SDK's flow calls it)
    "_initialize": (["self"], True, "await self._initialize()"),
    "_perform_authorization": (["self"], True, "await self._perform_authorization()"),
    "_refresh_token": (["self"], True, "await self._refresh_token()"),
    "_select_authorization_server": (["self", "advertised"], False, "self._select_authorization_server("),
    "_get_token_endpoint": (["self"], False, None),
}


class Storage:
    """A `TokenStorage` in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


def metadata() -> OAuthClientMetadata:
    return OAuthClientMetadata.model_validate({"redirect_uris": ["http://127.0.0.1:1/cb"], "grant_types": ["x"]})


@pytest.mark.parametrize("name", sorted(STEPS))
def test_the_private_steps_are_there_and_called_by_the_flow(name: str) -> None:
    parameters, is_async, called_as = STEPS[name]
    step = getattr(OAuthClientProvider, name, None)
    assert callable(step), RECHECK.format(name)
    assert list(inspect.signature(step).parameters) == parameters, RECHECK.format(name)
    assert inspect.iscoroutinefunction(step) is is_async, RECHECK.format(name)
    if called_as is not None:
        assert called_as in inspect.getsource(OAuthClientProvider), RECHECK.format(f"{name} (its caller)")


def test_the_flow_skips_initialize_once_initialized() -> None:
    """`token_request_provider` loads its client itself and sets `_initialized`, which the SDK's
    flow reads before it would load the stored client."""
    source = inspect.getsource(OAuthClientProvider)
    assert "if not self._initialized:" in source, RECHECK.format("_initialized")
    assert OAuthClientProvider("https://mcp.example", metadata(), Storage())._initialized is False


def test_the_hooks_run_around_the_sdks_steps() -> None:
    seen: list[str] = []
    provider_class = after_initialize(
        before_token_requests(OAuthClientProvider, lambda p: seen.append("before")), lambda p: seen.append("after")
    )
    storage = Storage()
    storage.client = OAuthClientInformationFull.model_validate(
        {"client_id": "c", "redirect_uris": ["http://127.0.0.1:1/cb"]}
    )
    provider = provider_class("https://mcp.example", metadata(), storage)
    assert isinstance(provider, OAuthClientProvider)

    async def main() -> None:
        await provider._initialize()
        assert provider.context.client_info == storage.client  # the SDK's own step ran first
        assert seen == ["after"]
        with pytest.raises(Exception):  # noqa: B017 - no tokens to refresh: the SDK's step refuses
            await provider._refresh_token()
        assert seen == ["after", "before"]

    anyio.run(main)


def test_a_token_request_provider_builds_its_own_token_requests() -> None:
    fixed = OAuthClientInformationFull.model_validate({"client_id": "workload", "redirect_uris": None})
    built: list[tuple[Any, str]] = []

    def token_request(context: Any, endpoint: str) -> httpx2.Request:
        built.append((context, endpoint))
        return httpx2.Request("POST", endpoint)

    provider_class = token_request_provider(fixed, lambda advertised: advertised[-1], token_request)
    provider = provider_class("https://mcp.example", metadata(), Storage(), None, None)

    async def main() -> None:
        await provider._initialize()
        assert provider.context.client_info is fixed and provider._initialized is True
        assert provider._select_authorization_server(["https://a", "https://b"]) == "https://b"
        provider.context.oauth_metadata = OAuthMetadata.model_validate(
            {
                "issuer": "https://as.example",
                "authorization_endpoint": "https://as.example/authorize",
                "token_endpoint": "https://as.example/token",
            }
        )
        request = await provider._perform_authorization()
        assert str(request.url) == "https://as.example/token", RECHECK.format("_get_token_endpoint")
        assert built == [(provider.context, "https://as.example/token")]

    anyio.run(main)
