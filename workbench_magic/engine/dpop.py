"""DPoP (RFC 9449, SEP-1932): access tokens bound to a key of this process.

`"auth": {"oauth": {..., "dpop": true}}` wraps the SDK's OAuth provider (an `httpx2.Auth`) in
`DPoPAuth`. One EC P-256 key pair per server URL (as the tokens are kept per server URL), held in
this process's memory only, signs a proof JWT (`typ: dpop+jwt`, the public key in its `jwk`
header, ES256) for every token request (any grant) and every request to the MCP server that
carries a token; the token endpoint then issues a token bound to the key (`token_type: DPoP`) and
the MCP server sees `Authorization: DPoP <token>` with a proof carrying the token's hash (`ath`).

A server that wants a nonce in the proofs says so with a `DPoP-Nonce` header and `use_dpop_nonce`
(a 400 from the token endpoint, a 401 `WWW-Authenticate: DPoP error="use_dpop_nonce"` from the MCP
server): the request is signed again with that nonce and sent once more. The latest nonce of each
origin is kept and used from then on.

The SDK's `OAuthToken` accepts only `token_type: Bearer`, so a DPoP token response reaches the SDK
rewritten as Bearer; the tokens that were issued as DPoP are remembered here, and only those are
presented with the DPoP scheme (a token issued as Bearer stays Bearer, RFC 9449 §7.1). A
reconnect in the same process reuses the key, the DPoP tokens and the nonces. The key is never
written anywhere: a token kept on disk from an earlier process is bound to a key that is gone, so
the server refuses it and the SDK authorizes again.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

ALGORITHM = "ES256"
NONCE_HEADER = "DPoP-Nonce"
_NONCE_ERROR = "use_dpop_nonce"
_SCHEME = re.compile(r"^\s*(\S+)\s+(\S+)\s*$")
_NONCE_CHALLENGE = re.compile(r'(?:^|[\s,])error\s*=\s*"?use_dpop_nonce"?', re.IGNORECASE)
_REBUILT_HEADERS = {"content-length", "content-encoding", "transfer-encoding"}
_KEPT_TOKENS = 16


@dataclass
class Binding:
    """What the proofs of one server URL share: the key, the tokens issued bound to it, and the
    latest nonce of each origin."""

    key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    tokens: dict[str, None] = field(default_factory=dict)
    """The access tokens issued as DPoP, oldest first (an ordered set: refreshes replace them)."""
    nonces: dict[str, str] = field(default_factory=dict)

    def add_token(self, token: str) -> None:
        self.tokens[token] = None
        while len(self.tokens) > _KEPT_TOKENS:  # connections sharing the URL may still hold older ones
            del self.tokens[next(iter(self.tokens))]

    @property
    def jwk(self) -> dict[str, Any]:
        """The public key as a JWK (no private part)."""
        return dict(ECAlgorithm.to_jwk(self.key.public_key(), as_dict=True))


_bindings: dict[str, Binding] = {}
_bindings_lock = threading.Lock()


def bound(auth: Any) -> DPoPAuth:
    """`auth` (an `httpx2.Auth`, the SDK's OAuth provider) with its tokens bound by DPoP proofs, with
    the key of its server URL (a new key when `auth` names none)."""
    server_url = getattr(getattr(auth, "context", None), "server_url", None)
    if not isinstance(server_url, str):
        return DPoPAuth(auth)
    with _bindings_lock:  # workbenches on other loops may open the same server at once
        binding = _bindings.setdefault(server_url, Binding())
    return DPoPAuth(auth, binding)


def token_hash(access_token: str) -> str:
    """The proof's `ath`: base64url (unpadded) of the SHA-256 of the access token."""
    return _b64url(hashlib.sha256(access_token.encode()).digest())


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _origin(url: httpx2.URL) -> str:
    return f"{url.scheme}://{url.netloc.decode('ascii')}"


def _is_token_request(request: httpx2.Request) -> bool:
    """A POST of a form with a `grant_type`: a token request of any grant (code, refresh, client
    credentials, jwt-bearer...)."""
    if request.method != "POST" or "application/x-www-form-urlencoded" not in request.headers.get("content-type", ""):
        return False
    try:
        body = request.content
    except httpx2.RequestNotRead:
        return False
    return "grant_type" in parse_qs(body.decode("latin-1"))


class DPoPAuth(httpx2.Auth):
    """An `httpx2.Auth` running `inner`'s flow with DPoP proofs added (see the module docstring)."""

    requires_response_body = True

    def __init__(self, inner: Any, binding: Binding | None = None) -> None:
        self.inner = inner
        self.binding = binding or Binding()
        self._jwk = self.binding.jwk

    def __repr__(self) -> str:
        return f"DPoPAuth({self.inner!r})"

    def proof(self, method: str, url: httpx2.URL | str, access_token: str | None = None) -> str:
        """A fresh proof JWT for one request: `htu` is the URL without query and fragment, `ath` the
        token's hash when one is presented, `nonce` the latest one the URL's origin gave."""
        target = httpx2.URL(url) if isinstance(url, str) else url
        claims: dict[str, Any] = {
            "jti": str(uuid.uuid4()),
            "htm": method.upper(),
            "htu": str(target.copy_with(query=None, fragment=None)),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = token_hash(access_token)
        nonce = self.binding.nonces.get(_origin(target))
        if nonce is not None:
            claims["nonce"] = nonce
        return jwt.encode(claims, self.binding.key, algorithm=ALGORITHM, headers={"typ": "dpop+jwt", "jwk": self._jwk})

    def sync_auth_flow(self, request: httpx2.Request) -> Any:
        raise RuntimeError("DPoPAuth works with an async httpx2 client only")

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = self.inner.async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                token_request = _is_token_request(outgoing)
                signed = self._sign(outgoing, token_request, resource=outgoing is request)
                response = yield outgoing
                self._remember_nonce(response)
                if signed is not None and await self._asks_for_nonce(response, token_request, signed):
                    self._sign(outgoing, token_request, resource=outgoing is request)
                    response = yield outgoing
                    self._remember_nonce(response)
                if token_request:
                    response = await self._as_bearer(response)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    def _sign(self, request: httpx2.Request, token_request: bool, resource: bool) -> str | None:
        """Put a proof on a token request, and on a resource request presenting a DPoP token (whose
        scheme becomes DPoP); the nonce the proof carries (`""` for none), or None when unsigned."""
        if token_request:
            request.headers["DPoP"] = self.proof(request.method, request.url)
        elif resource:
            presented = _SCHEME.match(request.headers.get("Authorization", ""))
            if presented is None or presented.group(2) not in self.binding.tokens:
                return None
            token = presented.group(2)
            request.headers["Authorization"] = f"DPoP {token}"
            request.headers["DPoP"] = self.proof(request.method, request.url, token)
        else:
            return None
        return self.binding.nonces.get(_origin(request.url), "")

    def _remember_nonce(self, response: httpx2.Response) -> None:
        nonce = response.headers.get(NONCE_HEADER)
        if nonce:
            self.binding.nonces[_origin(response.request.url)] = nonce

    async def _asks_for_nonce(self, response: httpx2.Response, token_request: bool, used: str) -> bool:
        """Whether the server refused the proof for want of a nonce it has now given (and the proof
        did not already carry that nonce: each request is retried once)."""
        given = response.headers.get(NONCE_HEADER)
        if not given or given == used:
            return False
        if token_request:
            if response.status_code != 400:
                return False
            body = await _json_object(response)
            return body is not None and body.get("error") == _NONCE_ERROR
        challenge = response.headers.get("WWW-Authenticate", "")
        return response.status_code == 401 and bool(_NONCE_CHALLENGE.search(challenge))

    async def _as_bearer(self, response: httpx2.Response) -> httpx2.Response:
        """A successful token response as the SDK accepts it: `token_type: DPoP` becomes Bearer, and
        the token is remembered as DPoP-bound."""
        if response.status_code not in (200, 201):
            return response
        body = await _json_object(response)
        if body is None or not isinstance(body.get("token_type"), str):
            return response
        if body["token_type"].lower() != "dpop":
            return response
        if isinstance(body.get("access_token"), str):
            self.binding.add_token(body["access_token"])
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _REBUILT_HEADERS]
        return httpx2.Response(
            response.status_code,
            headers=headers,
            content=json.dumps({**body, "token_type": "Bearer"}).encode(),
            request=response.request,
        )


async def _json_object(response: httpx2.Response) -> dict[str, Any] | None:
    """The response's body as a JSON object, or None when it is not one."""
    await response.aread()
    try:
        body = json.loads(response.content)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None
