"""DPoP (RFC 9449, SEP-1932): `"auth": {"oauth": {"dpop": true}}` binds the OAuth tokens to a key.

End to end against tests/servers/dpopserver.py: an MCP server and its authorization server on two
origins, both checking every proof with PyJWT (signature by the `jwk` header's key, `typ`, `htm`,
`htu`, `iat`, `jti` never reused, `ath`, the key the token is bound to) and both demanding a nonce
first. The workbench is configured the documented way; its `authorization_handler` plays the
browser. The proof itself is checked here too, with PyJWT, as a server would.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from conftest import free_port, server_command, toolbox

from workbench_magic import ConnectError, Workbench
from workbench_magic.engine.auth import TOKEN_DIR_ENV
from workbench_magic.engine.dpop import DPoPAuth, bound, token_hash

TTL = 2


class DPoPServer:
    """tests/servers/dpopserver.py in a subprocess: the MCP server's URL and the stats."""

    def __init__(self, *extra: str) -> None:
        self.port, self.as_port = free_port(), free_port()
        self.proc = subprocess.Popen(
            server_command("dpopserver.py", "--port", str(self.port), "--as-port", str(self.as_port), *extra),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60  # a loaded machine starts a Python server slowly
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{self.as_port}/stats", timeout=2)
                httpx.get(f"http://127.0.0.1:{self.port}/.well-known/oauth-protected-resource", timeout=2)
                return
            except httpx.TransportError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError("dpopserver did not start listening") from None
                time.sleep(0.1)  # polling a port that is not bound yet: no event to wait on

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stats(self) -> dict[str, Any]:
        return httpx.get(f"http://127.0.0.1:{self.as_port}/stats", timeout=10).json()  # type: ignore[no-any-return]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def dpop_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., DPoPServer]]:
    monkeypatch.setenv(TOKEN_DIR_ENV, str(tmp_path / "tokens"))
    started: list[DPoPServer] = []

    def start(*extra: str) -> DPoPServer:
        server = DPoPServer(*extra)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


class Person:
    """The `authorization_handler`: opens the link as a browser would and goes where it redirects
    (the workbench's loopback catcher)."""

    def __init__(self) -> None:
        self.links: list[str] = []

    def __call__(self, url: str) -> None:
        self.links.append(url)
        redirect = httpx.get(url, follow_redirects=False, timeout=30)
        httpx.get(redirect.headers["location"], timeout=30)


def dpop_workbench(url: str, person: Person, **oauth: Any) -> Workbench:
    server = {"url": url, "auth": {"oauth": {"dpop": True, **oauth}}}
    return Workbench(
        config={"toolboxes": {"d": toolbox({"srv": server})}}, authorization_handler=person, connect_timeout=90
    )


# ---- end to end -----------------------------------------------------------------------------------
def test_dpop_bound_tokens_with_nonces_from_both_servers(dpop_server: Callable[..., DPoPServer]) -> None:
    server = dpop_server("--ttl", str(TTL))
    person = Person()
    wb = dpop_workbench(server.url, person)
    try:
        box = wb.open("d")
        assert box.servers["srv"].connected, box.servers["srv"].error
        assert wb.call("d/srv/echo", {"text": "one"}).text == "one"
        assert wb.call("d/srv/echo", {"text": "two"}).text == "two"
        stats = server.stats()
        assert stats["refused"] == [] and len(person.links) == 1
        assert stats["schemes"] == ["DPoP"]  # every token presented as DPoP, never as Bearer
        # each server challenged once; its nonce was kept and sent in every proof after that
        assert stats["as_challenges"] == 1 and stats["rs_challenges"] == 1
        # the challenged token request was sent again with the nonce
        assert stats["token_requests"]["authorization_code"] == 2
        assert len(stats["keys"]) == 1  # one key for this connection
        served = stats["mcp_requests"]
        assert served >= 3

        time.sleep(TTL + 1)  # the access token expires: the refresh is a token request with a proof too
        assert wb.call("d/srv/echo", {"text": "three"}).text == "three"
        after = server.stats()
        assert after["refused"] == [] and after["token_requests"].get("refresh_token", 0) >= 1
        assert after["as_challenges"] == 1 and after["rs_challenges"] == 1
        assert after["keys"] == stats["keys"] and after["mcp_requests"] > served and len(person.links) == 1
    finally:
        wb.close_all()


def test_a_reconnect_in_the_same_process_keeps_the_key_and_the_tokens(dpop_server: Callable[..., DPoPServer]) -> None:
    """The tokens are kept per server URL, so is the key they are bound to: opening the server again
    (here from another workbench) presents the stored token with a proof of the same key, and
    nobody is asked to authorize again."""
    server = dpop_server()
    person = Person()
    first = dpop_workbench(server.url, person)
    try:
        assert first.call("d/srv/echo", {"text": "one"}).text == "one"
    finally:
        first.close_all()
    again = dpop_workbench(server.url, person)
    try:
        assert again.call("d/srv/echo", {"text": "two"}).text == "two"
    finally:
        again.close_all()
    stats = server.stats()
    assert stats["refused"] == [] and stats["schemes"] == ["DPoP"] and len(stats["keys"]) == 1
    # one authorization: its token request challenged once, then sent again with the nonce
    assert stats["token_requests"] == {"authorization_code": 2} and len(person.links) == 1


def test_dpop_without_nonces(dpop_server: Callable[..., DPoPServer]) -> None:
    server = dpop_server("--no-nonce")
    wb = dpop_workbench(server.url, Person())
    try:
        assert wb.call("d/srv/echo", {"text": "hi"}).text == "hi"
        stats = server.stats()
        assert stats["refused"] == [] and stats["schemes"] == ["DPoP"]
        assert stats["as_challenges"] == 0 and stats["rs_challenges"] == 0
        assert stats["token_requests"] == {"authorization_code": 1}
    finally:
        wb.close_all()


def test_a_token_issued_as_bearer_is_presented_as_bearer(dpop_server: Callable[..., DPoPServer]) -> None:
    """An authorization server that does not bind the token answers `token_type: Bearer`: the
    token is then a bearer token (RFC 9449 §7.1)."""
    server = dpop_server("--bearer")
    wb = dpop_workbench(server.url, Person())
    try:
        assert wb.call("d/srv/echo", {"text": "hi"}).text == "hi"
        stats = server.stats()
        assert stats["refused"] == [] and stats["schemes"] == ["Bearer"]
    finally:
        wb.close_all()


def test_without_dpop_the_server_refuses_the_bearer_token(dpop_server: Callable[..., DPoPServer]) -> None:
    """The server really checks: the same config without `dpop` does not get through."""
    server = dpop_server("--no-nonce")
    config = {"toolboxes": {"d": toolbox({"srv": {"url": server.url, "auth": "oauth"}})}}
    wb = Workbench(config=config, authorization_handler=Person(), connect_timeout=90)
    try:
        with pytest.raises(ConnectError, match="srv"):
            wb.open("d")
    finally:
        wb.close_all()
    assert any(reason.startswith("token endpoint: no DPoP proof") for reason in server.stats()["refused"])


# ---- the proof ------------------------------------------------------------------------------------
def verify(proof: str) -> tuple[dict[str, Any], dict[str, Any]]:
    header = jwt.get_unverified_header(proof)
    key = jwt.PyJWK(header["jwk"], algorithm=header["alg"])
    return header, jwt.decode(proof, key.key, algorithms=["ES256"])


def test_a_proof_is_signed_by_the_key_in_its_header() -> None:
    auth = bound(object())
    assert isinstance(auth, DPoPAuth)
    header, claims = verify(auth.proof("post", "https://as.example/token?x=1#frag"))
    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256"
    assert set(header["jwk"]) == {"kty", "crv", "x", "y"}  # the public key only
    assert claims["htm"] == "POST" and claims["htu"] == "https://as.example/token"
    assert abs(claims["iat"] - time.time()) < 60 and "ath" not in claims and "nonce" not in claims

    _, again = verify(auth.proof("POST", "https://as.example/token"))
    assert again["jti"] != claims["jti"]
    other = bound(object())  # names no server URL: a key of its own
    assert verify(other.proof("GET", "https://rs.example/mcp"))[0]["jwk"] != header["jwk"]


def test_ath_is_the_hash_of_the_token() -> None:
    token = "an-access-token"
    expected = base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()
    assert token_hash(token) == expected
    _, claims = verify(bound(object()).proof("GET", "https://rs.example/mcp", token))
    assert claims["ath"] == expected
