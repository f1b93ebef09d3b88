"""An MCP server that accepts only DPoP-bound tokens (RFC 9449), with its own authorization server.

Usage::

    python tests/servers/dpopserver.py --port N --as-port M [--ttl SECONDS] [--no-nonce] [--bearer]

Two origins in one process, as in a real deployment: the MCP server (streamable HTTP at ``/mcp``,
protected resource metadata at ``/.well-known/oauth-protected-resource/mcp``) on ``--port``, and
the authorization server on ``--as-port``: metadata (``dpop_signing_alg_values_supported``),
dynamic registration, ``/authorize`` (PKCE, approved at once: it redirects to the client's
``redirect_uri``) and ``/token`` (authorization code and refresh grants).

Every DPoP proof is checked with PyJWT: ``typ: dpop+jwt``, an ES256 signature by the public key in
its ``jwk`` header (no private part), ``htm`` and ``htu`` (no query or fragment) of the request,
``iat`` within a minute, a ``jti`` never seen before, and the nonce. Both servers demand a nonce
first (unless ``--no-nonce``): the token endpoint with a 400 ``use_dpop_nonce``, the MCP server
with a 401 ``WWW-Authenticate: DPoP error="use_dpop_nonce"``, each with its own ``DPoP-Nonce``.
Tokens are bound to the proof key's thumbprint (refresh tokens too); the MCP server wants
``Authorization: DPoP <token>`` with a proof whose ``ath`` is the token's hash and whose key is
the token's. ``--bearer`` makes the token endpoint ignore the proof and issue plain Bearer tokens,
which the MCP server then takes as Bearer. Access tokens live ``--ttl`` seconds (default 3600).

``GET /stats`` on the authorization server's origin answers what happened, as JSON:
``token_requests`` (by grant), ``as_challenges`` and ``rs_challenges`` (nonce challenges sent),
``mcp_requests`` (authenticated requests let through), ``schemes`` (the Authorization schemes
seen at ``/mcp``), ``keys`` (distinct proof key thumbprints), ``refused`` (each refusal's reason).

Tool: ``echo(text)``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import json
import secrets
import signal
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import jwt
import uvicorn
from mcp.server import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

ALGORITHMS = ["ES256"]


class Refused(Exception):
    """A proof or token that does not pass; the text is the reason."""


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638: SHA-256 of the required members, sorted, without spaces."""
    required = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}
    members = {name: jwk[name] for name in required[jwk["kty"]]}
    return b64url(hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode()).digest())


def bare(url: str) -> str:
    return url.rstrip("/")


class State:
    def __init__(self, rs_base: str, as_base: str, ttl: int, nonces: bool, bearer: bool) -> None:
        self.rs_base, self.as_base, self.ttl, self.bearer = rs_base, as_base, ttl, bearer
        self.as_nonce = f"as-{secrets.token_urlsafe(8)}" if nonces else None
        self.rs_nonce = f"rs-{secrets.token_urlsafe(8)}" if nonces else None
        self.jtis: set[str] = set()
        self.clients: dict[str, list[str]] = {}
        self.codes: dict[str, dict[str, str]] = {}
        self.access: dict[str, tuple[str | None, float]] = {}  # token -> (key thumbprint or None, expiry)
        self.refresh: dict[str, str | None] = {}
        self.token_requests: Counter[str] = Counter()
        self.as_challenges = 0
        self.rs_challenges = 0
        self.mcp_requests = 0
        self.schemes: list[str] = []
        self.keys: list[str] = []
        self.refused: list[str] = []

    def refuse(self, reason: str) -> None:
        self.refused.append(reason)

    def verify(self, proof: str | None, method: str, url: str) -> tuple[dict[str, Any], str]:
        """The proof's claims and its key's thumbprint, once the proof passes."""
        if not proof:
            raise Refused("no DPoP proof")
        try:
            header = jwt.get_unverified_header(proof)
        except jwt.PyJWTError as exc:
            raise Refused(f"malformed proof: {exc}") from None
        if header.get("typ") != "dpop+jwt":
            raise Refused(f"typ is {header.get('typ')!r}")
        if header.get("alg") not in ALGORITHMS:
            raise Refused(f"alg is {header.get('alg')!r}")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict) or "d" in jwk:
            raise Refused("no public jwk in the header")
        try:
            key = jwt.PyJWK(jwk, algorithm=header["alg"])
            claims = jwt.decode(
                proof, key.key, algorithms=ALGORITHMS, options={"require": ["jti", "htm", "htu", "iat"]}
            )
        except jwt.PyJWTError as exc:
            raise Refused(f"proof does not verify: {exc}") from None
        if claims["htm"] != method:
            raise Refused(f"htm {claims['htm']!r} for a {method}")
        htu = str(claims["htu"])
        if "?" in htu or "#" in htu:
            raise Refused(f"htu has a query or fragment: {htu}")
        if bare(htu) != bare(url):
            raise Refused(f"htu {htu} for {url}")
        if abs(time.time() - float(claims["iat"])) > 60:
            raise Refused("iat is not now")
        if claims["jti"] in self.jtis:
            raise Refused(f"replayed jti {claims['jti']}")
        self.jtis.add(claims["jti"])
        jkt = thumbprint(jwk)
        if jkt not in self.keys:
            self.keys.append(jkt)
        return claims, jkt

    def issue(self, jkt: str | None, scope: str | None) -> dict[str, Any]:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = (jkt, time.time() + self.ttl)
        self.refresh[refresh] = jkt
        body: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer" if jkt is None else "DPoP",
            "expires_in": self.ttl,
            "refresh_token": refresh,
        }
        return body | ({"scope": scope} if scope else {})

    def stats(self) -> dict[str, Any]:
        return {
            "token_requests": dict(self.token_requests),
            "as_challenges": self.as_challenges,
            "rs_challenges": self.rs_challenges,
            "mcp_requests": self.mcp_requests,
            "schemes": sorted(set(self.schemes)),
            "keys": list(self.keys),
            "refused": list(self.refused),
        }


def oauth_error(status: int, error: str, description: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": error, "error_description": description}, status, headers=headers)


def authorization_server(state: State) -> Starlette:
    base = state.as_base

    async def metadata(request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token",
                "registration_endpoint": f"{base}/register",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "dpop_signing_alg_values_supported": ALGORITHMS,
            }
        )

    async def register(request: Request) -> Response:
        body = await request.json()
        client_id = f"client-{secrets.token_urlsafe(6)}"
        state.clients[client_id] = list(body.get("redirect_uris") or [])
        return JSONResponse({**body, "client_id": client_id, "token_endpoint_auth_method": "none"}, 201)

    async def authorize(request: Request) -> Response:
        query = request.query_params
        redirect_uri = query["redirect_uri"]
        if redirect_uri not in state.clients.get(query.get("client_id", ""), []):
            return oauth_error(400, "invalid_request", "unknown client or redirect_uri")
        code = secrets.token_urlsafe(16)
        state.codes[code] = {"challenge": query["code_challenge"], "redirect_uri": redirect_uri}
        back = {"code": code, "iss": base} | ({"state": query["state"]} if "state" in query else {})
        return RedirectResponse(f"{redirect_uri}?{urlencode(back)}", 302)

    async def token(request: Request) -> Response:
        form = await request.form()
        grant = str(form.get("grant_type"))
        state.token_requests[grant] += 1
        jkt: str | None = None
        if not state.bearer:
            try:
                claims, jkt = state.verify(request.headers.get("DPoP"), "POST", f"{base}/token")
            except Refused as exc:
                state.refuse(f"token endpoint: {exc}")
                return oauth_error(400, "invalid_dpop_proof", str(exc))
            if state.as_nonce is not None and claims.get("nonce") != state.as_nonce:
                state.as_challenges += 1
                headers = {"DPoP-Nonce": state.as_nonce}
                return oauth_error(400, "use_dpop_nonce", "the authorization server wants a nonce", headers)
        if grant == "authorization_code":
            code = state.codes.pop(str(form.get("code")), None)
            verifier = str(form.get("code_verifier"))
            if code is None or b64url(hashlib.sha256(verifier.encode()).digest()) != code["challenge"]:
                state.refuse("token endpoint: bad code or PKCE verifier")
                return oauth_error(400, "invalid_grant", "bad code or verifier")
        elif grant == "refresh_token":
            refresh = str(form.get("refresh_token"))
            if refresh not in state.refresh or state.refresh.pop(refresh) != jkt:
                state.refuse("token endpoint: refresh token unknown or bound to another key")
                return oauth_error(400, "invalid_grant", "bad refresh token")
        else:
            return oauth_error(400, "unsupported_grant_type", grant)
        scope = form.get("scope")
        return JSONResponse(state.issue(jkt, str(scope) if scope else None), headers={"Cache-Control": "no-store"})

    async def stats(request: Request) -> Response:
        return JSONResponse(state.stats())

    return Starlette(
        routes=[
            Route("/.well-known/oauth-authorization-server", metadata),
            Route("/register", register, methods=["POST"]),
            Route("/authorize", authorize),
            Route("/token", token, methods=["POST"]),
            Route("/stats", stats),
        ]
    )


class ResourceGuard:
    """In front of the MCP app: protected resource metadata, and the DPoP checks on `/mcp`."""

    def __init__(self, app: ASGIApp, state: State) -> None:
        self.app, self.state = app, state
        self.metadata = f"{state.rs_base}/.well-known/oauth-protected-resource/mcp"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path.startswith("/.well-known/oauth-protected-resource"):
            body = {"resource": f"{self.state.rs_base}/mcp", "authorization_servers": [self.state.as_base]}
            await JSONResponse(body)(scope, receive, send)
            return
        refusal = self.check(Request(scope), path)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        self.state.mcp_requests += 1
        await self.app(scope, receive, send)

    def challenge(self, error: str | None = None, nonce: str | None = None) -> Response:
        params = [f'error="{error}"'] if error else []
        params += [f'algs="{" ".join(ALGORITHMS)}"', f'resource_metadata="{self.metadata}"']
        headers = {"WWW-Authenticate": "DPoP " + ", ".join(params)} | ({"DPoP-Nonce": nonce} if nonce else {})
        return JSONResponse({"error": error or "unauthorized"}, 401, headers=headers)

    def check(self, request: Request, path: str) -> Response | None:
        state = self.state
        presented = request.headers.get("Authorization")
        if not presented:
            return self.challenge()
        scheme, _, token = presented.partition(" ")
        state.schemes.append(scheme)
        bound, expires = state.access.get(token, (None, 0.0))
        if token not in state.access or expires < time.time():
            return self.challenge("invalid_token")
        if bound is None:  # issued as Bearer (--bearer)
            return None if scheme == "Bearer" else self.challenge("invalid_token")
        if scheme != "DPoP":
            state.refuse(f"/mcp: a DPoP-bound token presented with the {scheme} scheme")
            return self.challenge("invalid_token")
        try:
            claims, jkt = state.verify(request.headers.get("DPoP"), request.method, f"{state.rs_base}{path}")
            if claims.get("ath") != b64url(hashlib.sha256(token.encode()).digest()):
                raise Refused("ath is not the token's hash")
            if jkt != bound:
                raise Refused("the proof key is not the token's")
        except Refused as exc:
            state.refuse(f"/mcp: {exc}")
            return self.challenge("invalid_dpop_proof")
        if state.rs_nonce is not None and claims.get("nonce") != state.rs_nonce:
            state.rs_challenges += 1
            return self.challenge("use_dpop_nonce", state.rs_nonce)
        return None


def build(port: int, as_port: int, ttl: int, nonces: bool, bearer: bool) -> tuple[ASGIApp, ASGIApp]:
    state = State(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{as_port}", ttl, nonces, bearer)
    server = MCPServer(name="dpopserver")

    @server.tool()
    def echo(text: str) -> str:
        """The text back."""
        return text

    return ResourceGuard(server.streamable_http_app(host="127.0.0.1"), state), authorization_server(state)


class Server(uvicorn.Server):
    """A uvicorn server that leaves the signals to `serve` (each of two would take them from the other)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve(port: int, as_port: int, ttl: int, nonces: bool, bearer: bool) -> None:
    resource, authorization = build(port, as_port, ttl, nonces, bearer)
    servers = [
        Server(uvicorn.Config(app, host="127.0.0.1", port=p, log_level="warning"))
        for app, p in ((authorization, as_port), (resource, port))
    ]

    def stop() -> None:
        for server in servers:
            server.should_exit = True

    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop)
    await asyncio.gather(*(s.serve() for s in servers))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--as-port", type=int, required=True)
    parser.add_argument("--ttl", type=int, default=3600)
    parser.add_argument("--no-nonce", action="store_true")
    parser.add_argument("--bearer", action="store_true")
    args = parser.parse_args()
    asyncio.run(serve(args.port, args.as_port, args.ttl, not args.no_nonce, args.bearer))


if __name__ == "__main__":
    main()
